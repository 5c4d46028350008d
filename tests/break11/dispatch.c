/* SPDX-License-Identifier: MIT */
/*
 * A program that lets only libc make system calls (syscall user dispatch,
 * PR_SET_SYSCALL_USER_DISPATCH, with libc's executable text as the
 * allowed region), then calls syscall(SYS_getpid): libc's syscall() makes
 * the call from libc, so the kernel lets it through.  Prints what
 * happened; transparency_test.py compares it bare and under the shim.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "libc_text.h"

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

int main(void)
{
	struct sigaction action = { .sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO };
	long pid;

	struct libc_text text = libc_text_find();
	libc_start = text.start;
	libc_end = text.end;
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
