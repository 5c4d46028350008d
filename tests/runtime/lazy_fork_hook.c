/* SPDX-License-Identifier: MIT */
/*
 * Linked into rt_lazy_fork (not preloaded): its constructor, which runs
 * before the preloaded shim's, starts a thread through libc's own
 * pthread_create whose first wrapped call (usleep) starts the shim
 * lazily, and forks while that start-up is under way in that thread.
 * The child's first wrapped call must return, and leave the child its
 * own region; it spun for ever waiting for a start-up that no thread of
 * the child runs (helper-62, session 21).  Its findings, for the
 * fixture's main: lazy_fork_landed (the fork came inside the start-up)
 * and lazy_fork_child (0 the child returned with its own pid in a
 * started region, 3 it returned without, -1 it hung and was killed).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tdstat/region.h>

int lazy_fork_landed, lazy_fork_child;

static void *starter(void *unused)
{
	usleep(1);
	return unused;
}

__attribute__((constructor)) static void fork_inside_a_lazy_start_up(void)
{
	volatile struct tdstat_region *region = dlsym(RTLD_DEFAULT, "tdstat_region");
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
		(int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(RTLD_NEXT,
											  "pthread_create");
	pthread_t thread;
	int status;

	if (!getenv("TDTEST_LAZY_FORK") || !region || !create || region->header.magic == TDSTAT_REGION_MAGIC)
		return;
	if (create(&thread, NULL, starter, NULL) != 0)
		return;
	for (long spins = 0; region->header.status.pid == 0 && spins < 2000000000L; spins++)
		;
	if (region->header.status.pid != 0 && region->header.magic != TDSTAT_REGION_MAGIC) {
		pid_t child = fork();

		if (child == 0) {
			alarm(10);
			usleep(1);
			_exit(region->header.status.pid == getpid() && region->header.magic == TDSTAT_REGION_MAGIC ? 0
														     : 3);
		}
		lazy_fork_landed = 1;
		if (child > 0 && waitpid(child, &status, 0) == child)
			lazy_fork_child = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	}
	pthread_join(thread, NULL);
}
