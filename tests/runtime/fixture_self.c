/* SPDX-License-Identifier: MIT */
/*
 * rt_self: a program with a pthread_self of its own, exported (linked
 * with --export-dynamic, as programs that symbolise their backtraces
 * are), which hands out thread numbers as a test double or a green-thread
 * layer might: not glibc's thread descriptor.  The shim's calls bind to
 * it too.  main and a thread it creates each find their own record under
 * their tid (gettid, not through the shim), and the program runs to its
 * end.
 * rt_self_plain: the same program without it, run with a library that
 * defines one (fixture_self_module.c) preloaded after the shim.
 */
#define _GNU_SOURCE
#include "fixture.h"

#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#ifdef RT_SELF_OWN
#include "fixture_self_module.c"
#endif

static int own_record(void)
{
	pid_t tid = fx_gettid();
	struct fx_record record = fx_record_of(tid);

	return record.tid == tid && record.state == TDSTAT_STATE_RUNNABLE;
}

static void *thread_body(void *arg)
{
	*(int *)arg = own_record();
	return NULL;
}

int main(void)
{
	pthread_t thread;
	int thread_own = 0;

	printf("main.own_record=%d\n", own_record());
	if (pthread_create(&thread, NULL, thread_body, &thread_own) != 0)
		fx_die("pthread_create");
	pthread_join(thread, NULL);
	printf("thread.own_record=%d\n", thread_own);
	printf("self_is_ours=%d\n", pthread_self() == (pthread_t)1);
	return 0;
}
