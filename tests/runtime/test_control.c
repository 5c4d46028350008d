/* SPDX-License-Identifier: MIT */
/*
 * Enable, disable and reset written into the control block as a
 * controller does, and the integrals a reader computes from the records.
 * In `cycle` two threads live through every window: main RUNNABLE, the
 * helper BLOCKED except where the fixture lets it run, so the integrals
 * have exact values.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "rt_test.h"

struct snapshot {
	long long enabled, window, tracked, runnable, idle, live, impossible;
};

static struct snapshot get(const struct rt_output *out, const char *name)
{
	struct snapshot s;
	char key[64];

#define FIELD(member, suffix)                                      \
	snprintf(key, sizeof(key), "%s.%s", name, suffix);          \
	s.member = rt_int(out, key)
	FIELD(enabled, "enabled");
	FIELD(window, "window_ns");
	FIELD(tracked, "tracked_ns");
	FIELD(runnable, "runnable_ns");
	FIELD(idle, "idle_ns");
	FIELD(live, "live");
	FIELD(impossible, "impossible");
#undef FIELD
	cr_expect_eq(s.impossible, 0, "%s: %lld records hold values region.h rules out", name,
		     s.impossible);
	return s;
}

static void expect_empty(const char *name, struct snapshot s)
{
	cr_expect_eq(s.enabled, 0, "%s: gathering should be off", name);
	cr_expect_eq(s.window, 0, "%s: window should be empty, is %lld ns", name, s.window);
	cr_expect_eq(s.tracked, 0, "%s: tracked integral should be 0, is %lld", name, s.tracked);
	cr_expect_eq(s.runnable, 0, "%s: runnable integral should be 0, is %lld", name, s.runnable);
}

/* Both threads tracked through all of W; the helper BLOCKED through it. */
static void expect_exact(const char *name, struct snapshot s)
{
	cr_expect_gt(s.window, 0, "%s: window should not be empty", name);
	cr_expect_eq(s.live, 2, "%s: live records: expected 2, observed %lld", name, s.live);
	cr_expect_eq(s.tracked, 2 * s.window,
		     "%s: two threads tracked through W: expected tracked %lld, observed %lld",
		     name, 2 * s.window, s.tracked);
	cr_expect_eq(s.runnable, s.window,
		     "%s: main alone RUNNABLE through W: expected runnable %lld, observed %lld",
		     name, s.window, s.runnable);
	cr_expect_eq(s.idle, s.window,
		     "%s: helper BLOCKED through W: expected idle %lld, observed %lld", name,
		     s.window, s.idle);
}

Test(control, off_at_start_without_environment)
{
	const char *args[] = { "start", NULL };
	struct rt_output out = rt_run("rt_control", args, NULL);

	rt_expect_int(&out, "enabled", 0);
	rt_expect_int(&out, "window_empty", 1);
	rt_expect_int(&out, "r_concurrency", 0);
	expect_empty("start", get(&out, "start"));
	rt_free(&out);
}

Test(control, on_at_start_with_TDSTAT_ENABLE)
{
	const char *args[] = { "start", NULL };
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	struct rt_output out = rt_run("rt_control", args, env);
	struct snapshot s;

	rt_expect_int(&out, "enabled", 1);
	rt_expect_int(&out, "window_empty", 0);
	rt_expect_int(&out, "window_start_before_now", 1);
	s = get(&out, "start");
	cr_expect_eq(s.enabled, 1);
	cr_expect_eq(s.live, 1, "only main lives: observed %lld records", s.live);
	cr_expect_gt(s.tracked, 0, "main is tracked while gathering is on");
	cr_expect_leq(s.tracked, s.window, "one thread: tracked %lld > |W| %lld", s.tracked,
		      s.window);
	cr_expect_eq(s.runnable, s.tracked, "main never waited: runnable %lld != tracked %lld",
		     s.runnable, s.tracked);
	rt_free(&out);
}

Test(control, enable_disable_reset_cycle)
{
	const char *args[] = { "cycle", NULL };
	struct rt_output out = rt_run("rt_control", args, NULL);
	struct snapshot off0 = get(&out, "off0"), on1 = get(&out, "on1"), on2 = get(&out, "on2");
	struct snapshot off1 = get(&out, "off1"), off2 = get(&out, "off2");
	struct snapshot reset0 = get(&out, "reset0"), on3 = get(&out, "on3");
	struct snapshot reset1 = get(&out, "reset1"), on4 = get(&out, "on4");

	expect_empty("off0 (never enabled)", off0);

	cr_expect_eq(on1.enabled, 1);
	expect_exact("on1", on1);
	expect_exact("on2", on2);
	cr_expect_gt(on2.tracked, on1.tracked, "integrals grow while on");
	cr_expect_gt(on2.runnable, on1.runnable, "integrals grow while on");
	cr_expect_gt(on2.idle, on1.idle, "integrals grow while on");

	cr_expect_eq(off1.enabled, 0);
	expect_exact("off1", off1);
	cr_expect_eq(off2.window, off1.window, "disabled: window frozen, %lld -> %lld", off1.window,
		     off2.window);
	cr_expect_eq(off2.tracked, off1.tracked,
		     "disabled, helper ran and blocked again: tracked frozen, %lld -> %lld",
		     off1.tracked, off2.tracked);
	cr_expect_eq(off2.runnable, off1.runnable,
		     "disabled, helper ran and blocked again: runnable frozen, %lld -> %lld",
		     off1.runnable, off2.runnable);

	expect_empty("reset0 (reset while off)", reset0);

	cr_expect_eq(on3.enabled, 1);
	expect_exact("on3 (enabled after activity while off)", on3);
	expect_exact("reset1 (reset while on)", reset1);

	/* the helper ran inside the window started by the reset */
	cr_expect_eq(on4.live, 2);
	cr_expect_eq(on4.tracked, 2 * on4.window,
		     "on4: two threads tracked through W: expected %lld, observed %lld",
		     2 * on4.window, on4.tracked);
	cr_expect_gt(on4.runnable, on4.window,
		     "on4: main and, for a while, the helper RUNNABLE: runnable %lld <= |W| %lld",
		     on4.runnable, on4.window);
	cr_expect_lt(on4.idle, on4.window, "on4: helper not BLOCKED all through W: idle %lld",
		     on4.idle);
	rt_free(&out);
}
