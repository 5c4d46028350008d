/* SPDX-License-Identifier: MIT */
/*
 * break4 probe: the dates of a thread's own changes against its own
 * CLOCK_MONOTONIC, read from its record in tdstat_region right after each
 * change (a 1 ns nanosleep, wrapped).  Every change is dated no earlier
 * than the clock before the call less 50 us and no later than the clock
 * after it plus 50 us.
 *
 *   signals   a timer every 150 us whose handler (SA_NODEFER: nested)
 *             sleeps too, renewing the anchor from inside handlers that
 *             interrupt renewals and sequences
 *   migrate   the thread moves to the other CPU before every change
 *   idle      bursts of changes between idle gaps of 5 ms .. 2.5 s
 *
 * Usage: stamps_probe MODE [seconds] (PROBE_SLACK_NS, PROBE_SLEEP_NS: the
 * slack, 50000, and the sleep, 1 ns; 0 makes the bracket ~1 us wide).  With TDSHIM set and not preloaded,
 * it runs itself as a child with LD_PRELOAD=$TDSHIM and TDSTAT_ENABLE=1.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tdstat/region.h"

static uint64_t slack_ns = 50000;
#define SLACK_NS slack_ns

static struct tdstat_record *own;

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long sleep_ns = 1;

static void tiny_sleep(void)
{
	struct timespec ts = { 0, sleep_ns };

	nanosleep(&ts, NULL);
}

/* Nested at most 3 deep: deeper, a fast timer outruns the handlers
 * and the stack overflows (with or without the shim). */
static volatile sig_atomic_t depth, handled;

static void on_timer(int signo)
{
	(void)signo;
	if (depth < 3) {
		depth++;
		handled++;
		tiny_sleep();
		depth--;
	}
}

static struct tdstat_record *find_own(struct tdstat_region *region)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	uint32_t used = __atomic_load_n(&region->header.status.high_water, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < used && i < TDSTAT_RECORD_CAPACITY; i++) {
		struct tdstat_record *record = &region->records[i];
		struct tdstat_record_copy *copy = &record->copy[__atomic_load_n(&record->seq, __ATOMIC_ACQUIRE) & 1];

		if (copy->tid == tid && copy->state != TDSTAT_STATE_FREE)
			return record;
	}
	return NULL;
}

static long changes, early, late;
static uint64_t worst_early, worst_late;

static void one_change(void)
{
	uint64_t before = monotonic_ns();

	tiny_sleep();
	sig_atomic_t handled_before = handled;
	uint64_t after = monotonic_ns();
	uint64_t since = own->copy[__atomic_load_n(&own->seq, __ATOMIC_ACQUIRE) & 1].since_ns;
	uint64_t pending = __atomic_load_n(&own->pending_ns, __ATOMIC_RELAXED);
	uint64_t latest = since > pending ? since : pending;

	/* A handler's change after `after`: not this call's. */
	if (handled != handled_before)
		return;
	changes++;
	if (since + SLACK_NS < before) {
		if (before - since > worst_early)
			worst_early = before - since;
		if (early++ < 5)
			printf("change dated %llu ns before the call\n", (unsigned long long)(before - since));
	}
	if (latest > after + SLACK_NS) {
		if (latest - after > worst_late)
			worst_late = latest - after;
		if (late++ < 5)
			printf("change dated %llu ns after the call returned\n", (unsigned long long)(latest - after));
	}
}

static int probe(struct tdstat_region *region, const char *mode, double seconds)
{
	uint64_t end;
	int cpu = 0;

	tiny_sleep();
	own = find_own(region);
	if (!own) {
		printf("no record of its own\n");
		return 2;
	}
	if (!strcmp(mode, "signals")) {
		struct sigaction action;
		struct itimerval every = { { 0, 150 }, { 0, 150 } };

		memset(&action, 0, sizeof action);
		action.sa_handler = on_timer;
		action.sa_flags = SA_RESTART | SA_NODEFER;
		sigaction(SIGALRM, &action, NULL);
		setitimer(ITIMER_REAL, &every, NULL);
	}
	end = monotonic_ns() + (uint64_t)(seconds * 1e9);
	while (monotonic_ns() < end) {
		if (!strcmp(mode, "migrate")) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			cpu = (cpu + 1) % 2;
			sched_setaffinity(0, sizeof set, &set);
		}
		if (!strcmp(mode, "idle")) {
			static const long gaps_us[] = { 5000, 1900, 2100, 2500000, 40000, 1000000 };
			static unsigned int gap;
			struct timespec idle = { 0, 0 };
			long us = gaps_us[gap++ % 6];

			idle.tv_sec = us / 1000000;
			idle.tv_nsec = us % 1000000 * 1000;
			while (nanosleep(&idle, &idle) != 0)
				;
			for (int i = 0; i < 20; i++)
				one_change();
			continue;
		}
		one_change();
	}
	printf("%s: %ld changes, dated early %ld (most %llu ns), late %ld (most %llu ns)\n", mode, changes, early,
	       (unsigned long long)worst_early, late, (unsigned long long)worst_late);
	return early || late ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct tdstat_region *region = dlsym(RTLD_DEFAULT, "tdstat_region");
	const char *shim = getenv("TDSHIM");
	const char *mode = argc > 1 ? argv[1] : "signals";
	double seconds = argc > 2 ? atof(argv[2]) : 3;

	if (getenv("PROBE_SLACK_NS"))
		slack_ns = strtoull(getenv("PROBE_SLACK_NS"), NULL, 10);
	if (getenv("PROBE_SLEEP_NS"))
		sleep_ns = atol(getenv("PROBE_SLEEP_NS"));
	if (region)
		return probe(region, mode, seconds);
	if (!shim) {
		fprintf(stderr, "TDSHIM (the path of libtdshim.so) is not set\n");
		return 2;
	}
	pid_t pid = fork();
	int status = 0;

	if (pid == 0) {
		setenv("LD_PRELOAD", shim, 1);
		setenv("TDSTAT_ENABLE", "1", 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 2;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
