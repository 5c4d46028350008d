/* SPDX-License-Identifier: MIT */
/*
 * stress: the full 32,768 records (when this machine can hold that many
 * threads) and heavy thread churn under a reader.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include <tdstat/region.h>

#include "rt_test.h"

static long read_number(const char *path)
{
	FILE *file = fopen(path, "r");
	long value = -1;

	if (file) {
		if (fscanf(file, "%ld", &value) != 1)
			value = -1;
		fclose(file);
	}
	return value;
}

/* Threads this machine lets one more process start, roughly. */
static long thread_room(void)
{
	long pid_max = read_number("/proc/sys/kernel/pid_max");
	long threads_max = read_number("/proc/sys/kernel/threads-max");
	long room = pid_max < threads_max ? pid_max : threads_max;
	long pids_max = read_number("/sys/fs/cgroup/pids.max"); /* "max" reads as -1 */

	if (pids_max > 0 && pids_max < room)
		room = pids_max;
	return room - 2048; /* what else runs on the machine */
}

Test(stress, full_capacity_then_overflow, .timeout = 300)
{
	char count[32];
	const char *args[] = { count, NULL };
	unsigned threads = TDSTAT_RECORD_CAPACITY; /* + main: one past capacity */
	struct rt_output out;

	if (thread_room() < (long)threads + 1)
		cr_skip_test("needs %u threads; pid_max/threads-max/pids.max allow about %ld",
			     threads + 1, thread_room());
	snprintf(count, sizeof(count), "%u", threads);
	out = rt_run("rt_overflow", args, NULL);
	rt_expect_int(&out, "created", threads);
	rt_expect_int(&out, "checksum_ok", 1);
	rt_expect_int(&out, "alive.live", TDSTAT_RECORD_CAPACITY);
	rt_expect_int(&out, "alive.overflow_live", 1);
	rt_expect_int(&out, "joined.live", 1);
	rt_expect_int(&out, "joined.overflow_live", 0);
	rt_free(&out);
}

Test(stress, churn_under_reader, .timeout = 120)
{
	const char *args[] = { getenv("CI") ? "4000" : "40000", NULL };
	struct rt_output out = rt_run("rt_churn", args, NULL);

	cr_expect_gt(rt_int(&out, "snapshots"), 0);
	cr_expect_leq(rt_int(&out, "most_live"), 9, "more records live than threads can exist");
	rt_expect_int(&out, "impossible", 0);
	rt_expect_int(&out, "live_end", 1);
	rt_expect_int(&out, "overflow_total", 0);
	cr_expect_leq(rt_int(&out, "high_water"), 256, "freed records are hardly reused");
	rt_free(&out);
}

/*
 * Enable/disable written while four threads change state all the time:
 * every thread lives through every window, so each snapshot must hold
 * tracked = 5|W| exactly, and no record may hold more than |W|.
 */
Test(stress, control_writes_racing_state_changes, .timeout = 120)
{
	const char *args[] = { "race", getenv("CI") ? "5000" : "20000", NULL };
	struct rt_output out = rt_run("rt_control", args, NULL);

	cr_expect_eq(rt_int(&out, "lost_on"), 0,
		     "snapshots while on that lost tracked time: %lld of %s (output:\n%s)",
		     rt_int(&out, "lost_on"), args[1], out.text);
	cr_expect_eq(rt_int(&out, "lost_off"), 0, "snapshots after disable that lost tracked time");
	cr_expect_eq(rt_int(&out, "extra_on"), 0, "snapshots while on with time past |W|");
	cr_expect_eq(rt_int(&out, "extra_off"), 0,
		     "snapshots after disable with tracked > 5|W| (time past the disable)");
	rt_expect_int(&out, "impossible", 0);
	rt_free(&out);
}
