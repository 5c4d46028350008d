/* SPDX-License-Identifier: MIT */
/*
 * async_unwind_target: the target of async_unwind_test.py, run under gdb
 * with the shim preloaded.  One thread at a time goes through the wrapped
 * calls of unwind_rounds.h (each returns at once: the thread spends its time in the
 * shim's wrappers) a few times, then calls fodder_done() and ends.  gdb
 * stops it at an instruction of a wrapper and delivers SIGUSR2, whose
 * handler calls pthread_exit: a forced unwinding from that instruction,
 * as asynchronous cancellation does.  The thread must end and be joined;
 * the process must not fault.  main starts the next thread until gdb sets
 * `finished`, then prints "done THREADS" and exits 0.
 */
#include "unwind_rounds.h"

static void on_usr2(int number, siginfo_t *info, void *context)
{
	(void)number;
	(void)info;
	(void)context;
	pthread_exit(NULL);
}

int main(void)
{
	unwind_rounds_setup("async_unwind_target", on_usr2);
	printf("done %d\n", unwind_rounds_run("async_unwind_target", NULL));
	return 0;
}
