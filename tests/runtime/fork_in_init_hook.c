/* SPDX-License-Identifier: MIT */
/*
 * Linked into rt_fork_in_init (not preloaded): with TDTEST_FORK_IN_INIT=1
 * its constructor arms a 20 us interval timer whose SIGALRM handler calls
 * _Fork() once, as soon as the shim's start-up has written the region
 * header's pid but not yet its magic: a fork in the middle of the shim's
 * start-up, which the child then finishes (helper-55, session 16).  With
 * TDTEST_FORK_IN_INIT=2, only once the start-up has also adopted the main
 * thread into a record, under the parent's tid (CI, session 21).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

#include <tdstat/region.h>

pid_t _Fork(void);
int fork_in_init_child;  /* 1 in the child */
int fork_in_init_forked; /* the fork landed inside the start-up */
static volatile struct tdstat_region *region;
static int after_adoption;

static void on_alarm(int signal_number)
{
	(void)signal_number;
	if (fork_in_init_child || fork_in_init_forked)
		return;
	if (region->header.status.pid != 0 && region->header.magic != TDSTAT_REGION_MAGIC &&
	    (!after_adoption || region->header.status.high_water > 0)) {
		struct itimerval off = { { 0, 0 }, { 0, 0 } };

		setitimer(ITIMER_REAL, &off, NULL);
		fork_in_init_forked = 1;
		if (_Fork() == 0)
			fork_in_init_child = 1;
	}
}

__attribute__((constructor)) static void arm(void)
{
	const char *wanted = getenv("TDTEST_FORK_IN_INIT");
	struct itimerval every = { { 0, 20 }, { 0, 20 } };

	if (!wanted || (*wanted != '1' && *wanted != '2'))
		return;
	after_adoption = *wanted == '2';
	region = dlsym(RTLD_DEFAULT, "tdstat_region");
	if (!region || region->header.magic == TDSTAT_REGION_MAGIC)
		return;
	signal(SIGALRM, on_alarm);
	setitimer(ITIMER_REAL, &every, NULL);
}
