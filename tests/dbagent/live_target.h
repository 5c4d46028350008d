/* SPDX-License-Identifier: MIT */
/*
 * A workload child (workload.c) for the cross-process tests, and the
 * kernel's own accounting of it to compare libc_db's numbers with.
 */
#ifndef TDSTAT_TESTS_LIVE_TARGET_H
#define TDSTAT_TESTS_LIVE_TARGET_H

#include <stdbool.h>
#include <stdint.h>

#include "tdtest.h"

struct live_target {
	struct tdtest_child child;
	pid_t pid;
};

struct live_options {
	const char *preload;     /* the shim by default; "" for none */
	bool enable;             /* TDSTAT_ENABLE=1 */
	const char *max_threads; /* TDSTAT_MAX_THREADS, or NULL */
};

/* Starts `workload MODE THREADS PARAM` and waits for its "ready".
 * Returns false (with a message on stderr) on failure. */
bool live_start(struct live_target *target, const char *mode, int threads, long param,
		const struct live_options *options);

/* Sends one command line and returns its one-line answer in reply. */
bool live_command(struct live_target *target, const char *command, char *reply, size_t size);

/* Closes the child's stdin (it exits) and reaps it; returns the status. */
int live_stop(struct live_target *target);

/* The kernel's view: the sum over the child's tasks of schedstat's first
 * two fields (time on a CPU + time waiting for one), and its CPU clock. */
uint64_t kernel_runnable_ns(pid_t pid);
uint64_t kernel_cpu_ns(pid_t pid);
int kernel_task_count(pid_t pid);


#endif /* TDSTAT_TESTS_LIVE_TARGET_H */
