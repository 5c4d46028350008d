/* SPDX-License-Identifier: MIT */
/*
 * break4 finding 1: a fork child in a new time namespace dates its first
 * changes by the parent's counter-clock anchor (runtime/announce.c), i.e.
 * by the parent's CLOCK_MONOTONIC, not its own.
 *
 * The parent unshares CLONE_NEWTIME and gives the namespace a monotonic
 * offset of -1000 s (its children join it; it stays where it is), keeps
 * its anchor fresh with 1 us sleeps, and forks.  The child sleeps 1 us
 * once (a change, announced with T) and compares its own record's
 * since_ns and pending_ns (tdstat_region, found by tid) with its own
 * CLOCK_MONOTONIC: a change dated more than 1 ms after the clock that
 * dates it is a lie every reader of the child sees (1000 s of time that
 * has not happened yet).  The shim before 9dfe06d..40ab80d read the
 * clock in the child, and passes.
 *
 * With the argument "setns" the process itself moves: single-threaded,
 * it setns()es into the namespace (/proc/self/ns/time_for_children)
 * right after a change, and checks its own next change the same way.
 * That fails before 9dfe06d too (T = since + 1 carries the old clock
 * forward), so CTest runs only the fork case; see tests/break4/README.md.
 *
 * Run without LD_PRELOAD (as CTest does): it runs itself as a child with
 * LD_PRELOAD=$TDSHIM and TDSTAT_ENABLE=1 in that child's environment only.
 * Exit 0: held; 1: lie seen; 77: skipped (no time namespaces, not root).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tdstat/region.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define OFFSET_S 1000

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_1us(void)
{
	struct timespec ts = { 0, 1000 };

	nanosleep(&ts, NULL);
}

/* In the child: its own record's latest dates against its own clock. */
static int child_check(struct tdstat_region *region)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);

	sleep_1us();
	uint64_t now = monotonic_ns();
	uint32_t used = __atomic_load_n(&region->header.status.high_water, __ATOMIC_ACQUIRE);

	if (used > TDSTAT_RECORD_CAPACITY)
		used = TDSTAT_RECORD_CAPACITY;
	for (uint32_t i = 0; i < used; i++) {
		struct tdstat_record *record = &region->records[i];
		uint32_t seq = __atomic_load_n(&record->seq, __ATOMIC_ACQUIRE);
		struct tdstat_record_copy *copy = &record->copy[seq & 1];

		if (copy->tid != tid || copy->state == TDSTAT_STATE_FREE)
			continue;
		uint64_t since = copy->since_ns, pending = record->pending_ns;
		uint64_t latest = since > pending ? since : pending;

		if (latest > now + 1000000) {
			printf("child %d: change dated %.3f s after its clock (since_ns %llu, pending_ns %llu, now %llu)\n",
			       (int)tid, (double)(latest - now) / 1e9, (unsigned long long)since,
			       (unsigned long long)pending, (unsigned long long)now);
			return 1;
		}
		return 0;
	}
	printf("child %d: no record of its own\n", (int)tid);
	return 2;
}

static int preloaded(struct tdstat_region *region, bool move_self)
{
	char offsets[64];
	int fd;

	if (unshare(CLONE_NEWTIME) != 0) {
		printf("unshare(CLONE_NEWTIME): %s: skipped\n", strerror(errno));
		return 77;
	}
	fd = open("/proc/self/timens_offsets", O_WRONLY);
	snprintf(offsets, sizeof offsets, "monotonic -%d 0\n", OFFSET_S);
	if (fd < 0 || write(fd, offsets, strlen(offsets)) != (ssize_t)strlen(offsets)) {
		printf("timens_offsets: %s: skipped\n", strerror(errno));
		return 77;
	}
	close(fd);
	int lies = 0, runs = 20;

	for (int run = 0; run < runs; run++) {
		for (int i = 0; i < 50; i++)
			sleep_1us();
		if (move_self) {
			int ns = open("/proc/self/ns/time_for_children", O_RDONLY);

			if (ns < 0 || setns(ns, CLONE_NEWTIME) != 0) {
				printf("setns(time_for_children): %s: skipped\n", strerror(errno));
				return 77;
			}
			close(ns);
			return child_check(region);
		}
		pid_t pid = fork();

		if (pid == 0)
			_exit(child_check(region));
		int status = 0;

		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) > 1) {
			printf("child failed (status %#x)\n", status);
			return 1;
		}
		lies += WEXITSTATUS(status);
	}
	printf("%d of %d fork children in a time namespace (monotonic -%d s) dated a change in their future\n", lies,
	       runs, OFFSET_S);
	return lies ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct tdstat_region *region = dlsym(RTLD_DEFAULT, "tdstat_region");
	const char *shim = getenv("TDSHIM");

	if (region)
		return preloaded(region, argc > 1 && !strcmp(argv[1], "setns"));
	if (!shim) {
		fprintf(stderr, "TDSHIM (the path of libtdshim.so) is not set\n");
		return 2;
	}
	pid_t pid = fork();

	if (pid == 0) {
		setenv("LD_PRELOAD", shim, 1);
		setenv("TDSTAT_ENABLE", "1", 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	int status = 0;

	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 2;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
