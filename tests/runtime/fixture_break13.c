/* SPDX-License-Identifier: MIT */
/*
 * rt_break13 HOW: forced unwindings that start in the shim's own
 * instructions, without a debugger.
 *
 * HOW = exit_after_return: each thread's start routine sets the trap flag
 * just before it returns, so the trampoline's instructions after the
 * start routine's return run one at a time, each followed by a SIGTRAP.
 * Thread k's handler calls pthread_exit at the k-th of those
 * instructions (the ones within 256 bytes past the return address, in
 * the shim's text: the trampoline's own, not the functions it calls): a
 * forced unwinding from an interrupted trampoline frame, whose cleanup
 * the unwinding skips (runtime/personality.c, and no landing pad covers
 * those instructions anyway).  The thread's tracking must end all the
 * same.  Threads run until one returns without being stopped (every such
 * instruction was tried).
 *
 * Prints tried (the instructions the handler stopped a thread at),
 * leaked (threads whose record was still live once joined) and
 * first_leak_offset (the first such instruction's offset past the
 * return address, -1 when none).
 *
 * HOW = exit_in_wait: each thread sets the trap flag around usleep(1), so
 * every instruction traps, and one inside a restartable sequence lands at
 * its abort handler (the kernel restarts the sequence on the signal).
 * Thread k's handler calls pthread_exit at the k-th such landing (an
 * instruction preceded by glibc's RSEQ_SIG), for the first 8, or until a
 * thread gets through unstopped (no sequence: tried=0).  The thread holds an
 * object with a cleanup (a program's C++ destructor, as the cleanup
 * attribute makes one in C), which the unwinding must run whatever the
 * instruction: the program's own frames are the program's.  A signal
 * inside one of the shim's restartable sequences (the announcement of a
 * record change) lands at its abort handler; that handler had no unwind
 * information (a section of its own), the unwinding stopped there, and
 * glibc ended the thread by its longjmp, past every cleanup of the
 * program's.  Prints tried, skipped (threads whose cleanup did not run)
 * and first_skip_offset (the offset in the shim of the first such
 * instruction, -1 when none).
 */
#define _GNU_SOURCE
#include "fixture.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#if defined(__x86_64__)
#define TRAP_FLAG 0x100
#define WINDOW 256
#define THREADS_MAX 200
/* exit_in_wait: the first abort landings of a wait (each announcement
 * makes a few under single-stepping). */
#define ABORTS_TRIED 8

static uintptr_t shim_text_start, shim_text_end;
/* The thread's: which instruction to stop at, and where it returns to. */
static __thread int stop_at, steps;
static __thread uintptr_t return_address;
static __thread bool stepping_done, in_trampoline_seen;
static volatile int stopped;
static volatile long stopped_offset;

static int find_shim_text(struct dl_phdr_info *info, size_t size, void *argument)
{
	uintptr_t inside = (uintptr_t)argument;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + segment->p_vaddr;

		if (segment->p_type != PT_LOAD || !(segment->p_flags & PF_X))
			continue;
		/* The executable segment of the object that holds the
		 * region's code: the one whose load base is the region's. */
		if (info->dlpi_addr == inside) {
			shim_text_start = start;
			shim_text_end = start + segment->p_memsz;
			return 1;
		}
	}
	return 0;
}

/* Each instruction of the thread's after body's trap flag. */
static void on_trap(int number, siginfo_t *info, void *context)
{
	ucontext_t *state = context;
	uintptr_t at = (uintptr_t)state->uc_mcontext.gregs[REG_RIP];
	bool in_shim = at >= shim_text_start && at < shim_text_end;

	(void)number;
	(void)info;
	if (stepping_done)
		return;
	if (!in_shim) {
		/* Body's own return, then, once in the shim, any code
		 * outside it (libc, the vDSO: the end of tracking, or
		 * start_thread, which blocks signals): stepping ends. */
		if (in_trampoline_seen) {
			state->uc_mcontext.gregs[REG_EFL] &= ~TRAP_FLAG;
			stepping_done = true;
		}
		return;
	}
	in_trampoline_seen = true;
	if (at < return_address || at >= return_address + WINDOW)
		return; /* a function the trampoline calls: step on */
	if (steps++ != stop_at)
		return;
	stepping_done = true;
	stopped = 1;
	stopped_offset = (long)(at - return_address);
	pthread_exit(NULL);
}

static void *body(void *argument)
{
	stop_at = (int)(intptr_t)argument;
	return_address = (uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0));
	/* From the next instruction on, one SIGTRAP each. */
	__asm__ __volatile__("pushfq\n\torq %0, (%%rsp)\n\tpopfq" : : "i"(TRAP_FLAG) : "memory", "cc");
	return NULL;
}

static void exit_after_return(void)
{
	struct sigaction action = { .sa_sigaction = on_trap, .sa_flags = SA_SIGINFO };
	Dl_info shim;
	int tried = 0, leaked = 0;
	long first_leak = -1;

	if (!dladdr(fx_region(), &shim))
		fx_die("no object holds the region");
	dl_iterate_phdr(find_shim_text, shim.dli_fbase);
	if (!shim_text_end)
		fx_die("no text segment found for %s", shim.dli_fname);
	sigemptyset(&action.sa_mask);
	if (sigaction(SIGTRAP, &action, NULL) != 0)
		fx_die("sigaction");

	int base = fx_live_records();
	for (int k = 0; k < THREADS_MAX; k++) {
		pthread_t thread;

		stopped = 0;
		if (pthread_create(&thread, NULL, body, (void *)(intptr_t)k) != 0 || pthread_join(thread, NULL) != 0)
			fx_die("thread %d", k);
		if (!stopped)
			break;
		tried++;
		/* The record goes at the thread's end, before the join returns. */
		if (fx_live_records() != base) {
			if (first_leak < 0)
				first_leak = stopped_offset;
			leaked++;
			base = fx_live_records();
		}
	}
	printf("tried=%d\nleaked=%d\nfirst_leak_offset=%ld\n", tried, leaked, first_leak);
}
/* exit_in_wait: glibc's RSEQ_SIG on x86, which the kernel checks just
 * before an abort handler. */
#define RSEQ_SIGNATURE 0x53053053u
/* The thread's cleanup ran (the object went out of scope). */
static volatile int cleanups;
static __thread bool stepping;

static void on_trap_in_wait(int number, siginfo_t *info, void *context)
{
	ucontext_t *state = context;
	uintptr_t at = (uintptr_t)state->uc_mcontext.gregs[REG_RIP];

	(void)number;
	(void)info;
	uint32_t before;

	if (!stepping || at < shim_text_start + 4 || at >= shim_text_end)
		return;
	/* An abort handler: the kernel moved the thread there from inside
	 * the sequence, which glibc's signature precedes. */
	memcpy(&before, (const void *)(at - 4), sizeof(before));
	if (before != RSEQ_SIGNATURE || steps++ != stop_at)
		return;
	stepping = false;
	stopped = 1;
	stopped_offset = (long)(at - shim_text_start);
	pthread_exit(NULL);
}

static void count_cleanup(int *unused)
{
	(void)unused;
	__atomic_add_fetch(&cleanups, 1, __ATOMIC_SEQ_CST);
}

static void *waits_stepped(void *argument)
{
	int held __attribute__((cleanup(count_cleanup))) = 0;

	(void)held;
	stop_at = (int)(intptr_t)argument;
	stepping = true;
	__asm__ __volatile__("pushfq\n\torq %0, (%%rsp)\n\tpopfq" : : "i"(TRAP_FLAG) : "memory", "cc");
	usleep(1);
	__asm__ __volatile__("pushfq\n\tandq %0, (%%rsp)\n\tpopfq" : : "i"(~TRAP_FLAG) : "memory", "cc");
	stepping = false;
	return NULL;
}

static void exit_in_wait(void)
{
	struct sigaction action = { .sa_sigaction = on_trap_in_wait, .sa_flags = SA_SIGINFO };
	Dl_info shim;
	int tried = 0, skipped = 0;
	long first_skip = -1;

	if (!dladdr(fx_region(), &shim))
		fx_die("no object holds the region");
	dl_iterate_phdr(find_shim_text, shim.dli_fbase);
	if (!shim_text_end)
		fx_die("no text segment found for %s", shim.dli_fname);
	/* Offsets from the object's base, as addr2line reads them. */
	uintptr_t base_address = (uintptr_t)shim.dli_fbase;
	sigemptyset(&action.sa_mask);
	if (sigaction(SIGTRAP, &action, NULL) != 0)
		fx_die("sigaction");
	for (int k = 0; k < ABORTS_TRIED; k++) {
		pthread_t thread;
		int before = cleanups;

		stopped = 0;
		if (pthread_create(&thread, NULL, waits_stepped, (void *)(intptr_t)k) != 0 ||
		    pthread_join(thread, NULL) != 0)
			fx_die("thread %d", k);
		if (!stopped)
			break;
		tried++;
		if (cleanups == before) {
			if (first_skip < 0)
				first_skip = stopped_offset + (long)(shim_text_start - base_address);
			skipped++;
		}
	}
	printf("tried=%d\nskipped=%d\nfirst_skip_offset=%ld\n", tried, skipped, first_skip);
}
#else
/* The trap flag and the register names are x86-64's. */
static void exit_after_return(void)
{
	printf("tried=-1\nleaked=0\nfirst_leak_offset=-1\n");
}

static void exit_in_wait(void)
{
	printf("tried=-1\nskipped=0\nfirst_skip_offset=-1\n");
}
#endif

int main(int argc, char **argv)
{
	if (argc != 2)
		fx_die("usage: rt_break13 exit_after_return|exit_in_wait");
	if (!strcmp(argv[1], "exit_after_return"))
		exit_after_return();
	else if (!strcmp(argv[1], "exit_in_wait"))
		exit_in_wait();
	else
		fx_die("unknown mode: %s", argv[1]);
	return 0;
}
