/* SPDX-License-Identifier: MIT */
/*
 * A target of known shape for the cross-process tests:
 *
 *   workload MODE THREADS [PARAM]
 *
 *   spin     THREADS threads that never wait
 *   duty     spin PARAM ms, sleep PARAM ms, in turn
 *   mutex    queue on one mutex, holding it PARAM ms (spinning) each time
 *   sleep    nanosleep in a loop (PARAM ms each)
 *   condvar  wait on a condvar that is never signalled
 *   setconc  THREADS condvar waiters; main calls pthread_setconcurrency(PARAM)
 *
 * The main thread waits in poll() on stdin (an interposed call, so it is
 * BLOCKED) and obeys one command per line:
 *   spawn K   start K more condvar waiters, answer "spawned"
 *   getconc   answer pthread_getconcurrency()
 *   late      answer "COUNT NS": the poll mode's late timeouts so far
 *   untracked MS  start a thread the shim never sees (a raw clone, not
 *             pthread_create): it sleeps 100 ms, spins MS ms of CPU, then waits
 *             for ever, all through raw system calls; answer "untracked"
 *             (once per process, x86-64 only; else "unsupported")
 * It prints "ready" once every thread of MODE runs, and exits at EOF.
 */
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "raw_syscall.h"
#include "tdtest.h"
#include <linux/futex.h>
#include <sys/syscall.h>

static atomic_int started;
static long parameter_ms = 10;
static pthread_mutex_t queue = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t never_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static volatile unsigned long sink;

static uint64_t now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* Burns CPU for `ms` of wall time without calling anything interposed. */
static void spin_for(long ms)
{
	uint64_t until = now_ns() + (uint64_t)ms * 1000000u;

	while (now_ns() < until)
		for (int i = 0; i < 1000; i++)
			sink += (unsigned long)i;
}

static void sleep_for(long ms)
{
	struct timespec pause = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&pause, NULL);
}

static void *spinner(void *unused)
{
	atomic_fetch_add(&started, 1);
	for (;;)
		spin_for(1000);
	return NULL;
}

static void *duty_cycler(void *unused)
{
	atomic_fetch_add(&started, 1);
	for (;;) {
		spin_for(parameter_ms);
		sleep_for(parameter_ms);
	}
	return NULL;
}

static void *queuer(void *unused)
{
	atomic_fetch_add(&started, 1);
	for (;;) {
		pthread_mutex_lock(&queue);
		spin_for(parameter_ms);
		pthread_mutex_unlock(&queue);
	}
	return NULL;
}

static void *sleeper(void *unused)
{
	atomic_fetch_add(&started, 1);
	for (;;)
		sleep_for(parameter_ms);
	return NULL;
}

/*
 * The poll mode's timeouts that returned TDTEST_LATE_TIMER_NS or more past
 * the timer's expiry as the kernel sets it (the timeout plus poll's slack,
 * 0.1% of it, at least the 50 us timer slack): their count and their
 * lateness summed.  The host running a halted virtual CPU late makes them
 * (no steal: the CPU did not want to run); the kernel counts that time
 * asleep, the shim, which cannot tell, runnable from the expiry on.
 */
static atomic_uint_fast64_t late_polls, late_poll_ns;

/* Polls nothing: each call times out after the parameter. */
static void *poller(void *unused)
{
	uint64_t timeout = (uint64_t)parameter_ms * 1000000u;
	uint64_t expiry = timeout + (timeout / 1000 > 50000 ? timeout / 1000 : 50000);

	atomic_fetch_add(&started, 1);
	for (;;) {
		uint64_t before = now_ns();

		poll(NULL, 0, (int)parameter_ms);
		uint64_t took = now_ns() - before;
		if (took >= expiry + TDTEST_LATE_TIMER_NS) {
			atomic_fetch_add(&late_poll_ns, took - expiry);
			atomic_fetch_add(&late_polls, 1);
		}
	}
	return NULL;
}

static void *waiter(void *unused)
{
	pthread_mutex_lock(&never_lock);
	atomic_fetch_add(&started, 1);
	for (;;)
		pthread_cond_wait(&never, &never_lock);
	return NULL;
}

static void start_threads(void *(*routine)(void *), int count)
{
	int goal = atomic_load(&started) + count;

	for (int i = 0; i < count; i++) {
		pthread_t thread;
		pthread_attr_t attr;

		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		if (pthread_create(&thread, &attr, routine, NULL) != 0) {
			perror("pthread_create");
			exit(2);
		}
		pthread_attr_destroy(&attr);
		pthread_detach(thread);
	}
	while (atomic_load(&started) < goal)
		sleep_for(1);
	/* Waiters count themselves just before they wait: give the last
	 * ones time to get there. */
	sleep_for(20);
}

#if defined(__x86_64__)
static int untracked_thread(void *argument)
{
	static int forever;
	struct timespec pause = { 0, 100 * 1000000L };
	long ms = (long)(intptr_t)argument;

	tdtest_raw_syscall4(SYS_nanosleep, (long)&pause, 0, 0, 0);
	/* MS of CPU, however long a loaded machine makes that take. */
	for (;;) {
		struct timespec used;

		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &used);
		if (used.tv_sec * 1000 + used.tv_nsec / 1000000 >= ms)
			break;
		for (int i = 0; i < 1000; i++)
			sink += (unsigned long)i;
	}
	for (;;)
		tdtest_raw_syscall4(SYS_futex, (long)&forever, FUTEX_WAIT_PRIVATE, 0, 0);
	return 0;
}

/* One such thread per process: it never ends, and its stack is a static
 * (a leak checker sees it reachable). */
static char untracked_stack[64 * 1024] __attribute__((aligned(64)));
static atomic_bool untracked_started;

static bool start_untracked(long ms)
{
	if (atomic_exchange(&untracked_started, true))
		return false;
	return clone(untracked_thread, untracked_stack + sizeof(untracked_stack),
		     CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM,
		     (void *)(intptr_t)ms) > 0;
}
#else
static bool start_untracked(long ms)
{
	(void)ms;
	return false;
}
#endif

static void serve_commands(void)
{
	char line[128];
	size_t length = 0;

	for (;;) {
		struct pollfd input = { .fd = 0, .events = POLLIN };
		ssize_t got;
		char *newline;

		if (poll(&input, 1, -1) < 0)
			continue;
		got = read(0, line + length, sizeof(line) - 1 - length);
		if (got <= 0)
			return;
		length += (size_t)got;
		line[length] = '\0';
		while ((newline = strchr(line, '\n'))) {
			int k;

			*newline = '\0';
			if (sscanf(line, "spawn %d", &k) == 1) {
				start_threads(waiter, k);
				printf("spawned\n");
			} else if (strcmp(line, "late") == 0) {
				printf("%llu %llu\n", (unsigned long long)atomic_load(&late_polls),
				       (unsigned long long)atomic_load(&late_poll_ns));
			} else if (strcmp(line, "getconc") == 0) {
				printf("%d\n", pthread_getconcurrency());
			} else if (sscanf(line, "untracked %d", &k) == 1) {
				printf("%s\n", start_untracked(k) ? "untracked" : "unsupported");
			}
			fflush(stdout);
			length -= (size_t)(newline + 1 - line);
			memmove(line, newline + 1, length + 1);
		}
		if (length == sizeof(line) - 1)
			length = 0;
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "condvar";
	int threads = argc > 2 ? atoi(argv[2]) : 0;
	void *(*routine)(void *) = waiter;

	if (argc > 3)
		parameter_ms = atol(argv[3]);
	if (strcmp(mode, "spin") == 0)
		routine = spinner;
	else if (strcmp(mode, "duty") == 0)
		routine = duty_cycler;
	else if (strcmp(mode, "mutex") == 0)
		routine = queuer;
	else if (strcmp(mode, "sleep") == 0)
		routine = sleeper;
	else if (strcmp(mode, "poll") == 0)
		routine = poller;
	else if (strcmp(mode, "setconc") == 0)
		pthread_setconcurrency((int)parameter_ms);
	else if (strcmp(mode, "condvar") != 0)
		return 2;
	start_threads(routine, threads);
	printf("ready\n");
	fflush(stdout);
	serve_commands();
	return 0;
}
