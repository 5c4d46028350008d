/* SPDX-License-Identifier: MIT */
/*
 * Linked into rt_lazy_fork (not preloaded): its constructor, which runs
 * before the preloaded shim's, starts a thread through libc's own
 * pthread_create whose first wrapped call (usleep) starts the shim
 * lazily, and the main thread forks while that start-up is under way.
 * TDTEST_LAZY_FORK says when and how:
 *   fork    a fork once the start-up wrote the header's pid (timed); the
 *           child's first wrapped call spun for ever waiting for a
 *           start-up no thread of the child runs (helper-62);
 *   atfork  a fork once the start-up registered its atfork handler: the
 *           thread stops at its read of the process CPU clock (start_window,
 *           through this library's clock_gettime) until the fork is made;
 *           the child's handler then left it a region that never started
 *           (helper-63);
 *   vfork   a vfork in the same window as `fork`, whose child makes one
 *           wrapped call and exits: it must wait, not take over the start-up
 *           running in the memory it shares (it wrote its own pid into its
 *           parent's header: helper-63).
 * Findings for the fixture's main: lazy_fork_landed, and lazy_fork_child:
 * 0 the region (the child's, or after a vfork the parent's) is its own
 * process's, started and gathering; 3 it is not; -1 the child hung.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tdstat/region.h>

int lazy_fork_landed, lazy_fork_child = -2;
static volatile int at_point, forked;
static volatile pthread_t starter_thread;

static void *starter(void *unused)
{
	starter_thread = pthread_self();
	usleep(1);
	return unused;
}

/* The shim's own reads of the clock come here first. */
int clock_gettime(clockid_t clock, struct timespec *now)
{
	static int (*real)(clockid_t, struct timespec *);
	const char *mode = getenv("TDTEST_LAZY_FORK");

	if (!real)
		real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
	if (clock == CLOCK_PROCESS_CPUTIME_ID && mode && !strcmp(mode, "atfork") && !forked && starter_thread &&
	    pthread_equal(pthread_self(), starter_thread)) {
		at_point = 1;
		while (!forked)
			;
	}
	return real(clock, now);
}

static int region_own(volatile struct tdstat_region *region)
{
	return region->header.status.pid == getpid() && region->header.magic == TDSTAT_REGION_MAGIC &&
	       region->header.control.window_end_ns == TDSTAT_WINDOW_OPEN;
}

__attribute__((constructor)) static void fork_inside_a_lazy_start_up(void)
{
	volatile struct tdstat_region *region = dlsym(RTLD_DEFAULT, "tdstat_region");
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
		(int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(RTLD_NEXT,
											  "pthread_create");
	const char *mode = getenv("TDTEST_LAZY_FORK");
	pthread_t thread;
	int status;

	if (!mode || !region || !create || region->header.magic == TDSTAT_REGION_MAGIC)
		return;
	if (create(&thread, NULL, starter, NULL) != 0)
		return;
	if (!strcmp(mode, "atfork")) {
		while (!at_point)
			;
	} else {
		for (long spins = 0; region->header.status.pid == 0 && spins < 2000000000L; spins++)
			;
	}
	if (region->header.status.pid != 0 && region->header.magic != TDSTAT_REGION_MAGIC) {
		bool by_vfork = !strcmp(mode, "vfork");
		pid_t child = by_vfork ? vfork() : fork();

		if (child == 0) {
			if (!by_vfork)
				alarm(10);
			usleep(1);
			_exit(by_vfork || region_own(region) ? 0 : 3);
		}
		forked = 1;
		lazy_fork_landed = 1;
		if (child > 0 && waitpid(child, &status, 0) == child)
			lazy_fork_child = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	}
	forked = 1;
	pthread_join(thread, NULL);
	/* After a vfork, the parent's region must be the parent's. */
	if (lazy_fork_landed && !strcmp(mode, "vfork") && lazy_fork_child == 0 && !region_own(region))
		lazy_fork_child = 3;
}
