/* SPDX-License-Identifier: MIT */
/*
 * rt_fork_in_init (TDTEST_FORK_IN_INIT=1 or 2, fork_in_init_hook.c): the child
 * of a fork made in the middle of the shim's start-up ends its main
 * thread with pthread_exit while another thread lives.  The shim must
 * know that thread for the process's main thread and free its record
 * (it took the parent's pid for its own, kept the record live and
 * counted it runnable for good), and the region's header must carry the
 * child's pid.  Prints forked=0 when the fork did not
 * land inside the start-up (the test then has nothing to check).
 */
#include "fixture.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

extern int fork_in_init_child, fork_in_init_forked;

static void *outlives_main(void *arg)
{
	pid_t main_tid = (pid_t)(intptr_t)arg;

	printf("main_record_freed=%d\n", fx_wait_live(1) && fx_find_record(main_tid) < 0);
	printf("header_pid_own=%d\n", fx_region()->header.status.pid == getpid());
	fflush(stdout);
	exit(0);
}

int main(void)
{
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	pthread_t thread;
	int status = 0;

	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_IGN);
	fx_region();
	if (fork_in_init_child) {
		pthread_create(&thread, NULL, outlives_main, (void *)(intptr_t)getpid());
		pthread_exit(NULL);
	}
	printf("forked=%d\n", fork_in_init_forked);
	fflush(stdout);
	if (!fork_in_init_forked)
		return 0;
	while (wait(&status) < 0)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
