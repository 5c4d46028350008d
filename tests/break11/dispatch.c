/* SPDX-License-Identifier: MIT */
/*
 * A program that lets only libc make system calls (syscall user dispatch,
 * PR_SET_SYSCALL_USER_DISPATCH, with libc's executable text as the
 * allowed region), then calls syscall(SYS_getpid): libc's syscall() makes
 * the call from libc, so the kernel lets it through.  Prints what
 * happened; transparency_test.py compares it bare and under the shim.
 */
#define _GNU_SOURCE
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#define PR_SYS_DISPATCH_ON 1
#define SYSCALL_DISPATCH_FILTER_ALLOW 0
#define SYSCALL_DISPATCH_FILTER_BLOCK 1
#endif

static volatile char selector = SYSCALL_DISPATCH_FILTER_ALLOW;
static volatile sig_atomic_t trapped;
static uintptr_t libc_start, libc_end;

static void on_sigsys(int signal, siginfo_t *info, void *context)
{
	ucontext_t *uc = context;

	(void)signal;
	(void)info;
	selector = SYSCALL_DISPATCH_FILTER_ALLOW;
	trapped = 1;
	uc->uc_mcontext.gregs[REG_RAX] = -38; /* -ENOSYS */
}

static int find_libc(struct dl_phdr_info *object, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (!strstr(object->dlpi_name, "/libc.so.6"))
		return 0;
	for (int i = 0; i < object->dlpi_phnum; i++) {
		const ElfW(Phdr) *header = &object->dlpi_phdr[i];

		if (header->p_type == PT_LOAD && (header->p_flags & PF_X)) {
			libc_start = object->dlpi_addr + header->p_vaddr;
			libc_end = libc_start + header->p_memsz;
			return 1;
		}
	}
	return 0;
}

int main(void)
{
	struct sigaction action = { .sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO };
	long pid;

	dl_iterate_phdr(find_libc, NULL);
	if (!libc_start || sigaction(SIGSYS, &action, NULL) != 0)
		return 2;
	if (prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, libc_start, libc_end - libc_start,
		  &selector) != 0) {
		printf("unsupported\n");
		return 0;
	}
	selector = SYSCALL_DISPATCH_FILTER_BLOCK;
	pid = syscall(SYS_getpid);
	selector = SYSCALL_DISPATCH_FILTER_ALLOW;
	printf("getpid %s, %s\n", pid == getpid() ? "right" : "wrong", trapped ? "trapped" : "not trapped");
	return 0;
}
