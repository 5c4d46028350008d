/* SPDX-License-Identifier: MIT */
/*
 * The target's CPU time across a disable (docs/CONTRACT.md §4,
 * "Monotonic"): a controller's disable landing at any point among a
 * snapshot's reads, the last one included, after which the agent reads
 * the target's CPU clock unless it read it before its reads.  The
 * disable freezes cpu_end_ns at the controller's reading; a snapshot
 * that saw the window open must report no more CPU time than the frozen
 * window does.  The target spins, so its CPU clock runs all through the
 * disable (which waits out about 11 ms before it returns).  Against a
 * live child through the test's own proc_service (own_proc_service.c),
 * whose after_read hook lands the disable, and which counts the reads
 * the CPU time costs a snapshot.  Also the disable followed, before the
 * snapshot returns, by a second agent's snapshot of the frozen window
 * and a new window: the first snapshot reports no more than the second.
 */
#include <criterion/criterion.h>
#include <proc_service.h>
#include <stdio.h>
#include <string.h>
#include <thread_db.h>

#include <tdstat/thread_db_stats.h>

#include "live_target.h"
#include "own_proc_service.h"

TestSuite(disable_cpu, .timeout = 30);

/* The disable the hook lands after read number `at` (0: none). */
static struct {
	td_thragent_t *ta;
	unsigned long at;
	bool fired;
	td_err_e err;
} landing;

static void disable_after_read(struct ps_prochandle *ph)
{
	if (landing.at == 0 || ph->reads != landing.at)
		return;
	/* First: the disable's own reads do not land another. */
	landing.at = 0;
	landing.err = td_ta_enable_stats(landing.ta, 0);
	landing.fired = true;
}

typedef td_err_e snapshot_fn(td_thragent_t *ta, td_ta_stats_ns_t *stats);

static td_err_e process_snapshot(td_thragent_t *ta, td_ta_stats_ns_t *stats)
{
	return td_ta_get_stats_ns(ta, stats);
}

static int count_thread(const td_thr_stats_ns_t *thread, void *data)
{
	(void)thread;
	++*(int *)data;
	return 0;
}

/* The process figures of a walk (td_ta_thr_stats_iter): the records are
 * handed out first, the figures made after the walk. */
static td_err_e walk_snapshot(td_thragent_t *ta, td_ta_stats_ns_t *stats)
{
	int threads = 0;
	td_err_e err = td_ta_thr_stats_iter(ta, count_thread, &threads, stats);

	if (err == TD_OK && threads == 0)
		err = TD_ERR;
	return err;
}

/*
 * For n = 1, 2, ...: a new window, then one snapshot with a disable
 * landed after its n-th read, then one of the frozen window; until a
 * snapshot makes fewer than n reads.  `off_before`: the agent's snapshot
 * before the window began found gathering off, so it has no reason to
 * expect to need the CPU clock (it reads it after its reads, then checks
 * the control block again); else its last snapshot read the clock of a
 * busy target, and this one reads it before its reads.
 */
static void disable_at_every_read(snapshot_fn *snapshot, bool off_before)
{
	struct live_target target;
	struct ps_prochandle ph = { 0 };
	td_thragent_t *ta = NULL;
	int landed_open = 0;
	unsigned long n;

	cr_assert(live_start(&target, "spin", 1, 0, NULL));
	ph.pid = target.pid;
	ph.after_read = disable_after_read;
	cr_assert_eq(td_init(), TD_OK);
	cr_assert_eq(td_ta_new(&ph, &ta), TD_OK);
	landing.ta = ta;
	for (n = 1; n < 64; n++) {
		td_ta_stats_ns_t during = { .size = sizeof(during) }, after = { .size = sizeof(after) };
		td_ta_stats_ns_t warm = { .size = sizeof(warm) };

		if (off_before) {
			cr_assert_eq(td_ta_enable_stats(ta, 0), TD_OK);
			cr_assert_eq(snapshot(ta, &warm), TD_OK);
			cr_assert_eq(warm.enabled, 0);
		}
		cr_assert_eq(td_ta_enable_stats(ta, 1), TD_OK);
		tdtest_sleep_ms(2);
		if (!off_before) {
			cr_assert_eq(snapshot(ta, &warm), TD_OK);
			cr_assert_eq(warm.enabled, 1);
		}
		landing.fired = false;
		landing.err = TD_OK;
		landing.at = ph.reads + n;
		cr_assert_eq(snapshot(ta, &during), TD_OK);
		landing.at = 0;
		if (!landing.fired)
			break;
		cr_assert_eq(landing.err, TD_OK);
		cr_assert_eq(snapshot(ta, &after), TD_OK);
		cr_assert_eq(after.enabled, 0);
		cr_assert_eq(after.window_start_ns, during.window_start_ns);
		landed_open += during.enabled;
		cr_assert_geq(after.cpu_ns, during.cpu_ns, "disable after read %lu (window %s): cpu %llu then %llu frozen", n,
			      during.enabled ? "open" : "closed", (unsigned long long)during.cpu_ns,
			      (unsigned long long)after.cpu_ns);
		cr_assert_geq(after.running_ns, during.running_ns,
			      "disable after read %lu (window %s): running %llu then %llu frozen", n,
			      during.enabled ? "open" : "closed", (unsigned long long)during.running_ns,
			      (unsigned long long)after.running_ns);
		cr_assert_geq(after.runnable_ns, during.runnable_ns, "disable after read %lu", n);
	}
	cr_assert_gt(n, 1, "no snapshot read anything");
	/* The last read of at least one snapshot came before the disable. */
	cr_assert_gt(landed_open, 0, "every disable landed before a snapshot's last check");
	cr_assert_eq(td_ta_delete(ta), TD_OK);
	cr_assert_eq(live_stop(&target), 0);
}

Test(disable_cpu, cpu_of_a_snapshot_during_a_disable_is_at_most_the_frozen)
{
	disable_at_every_read(process_snapshot, false);
}

Test(disable_cpu, cpu_of_a_walk_during_a_disable_is_at_most_the_frozen)
{
	disable_at_every_read(walk_snapshot, false);
}

Test(disable_cpu, cpu_of_a_first_snapshot_after_gathering_was_off_is_at_most_the_frozen)
{
	disable_at_every_read(process_snapshot, true);
}

Test(disable_cpu, cpu_of_a_first_walk_after_gathering_was_off_is_at_most_the_frozen)
{
	disable_at_every_read(walk_snapshot, true);
}

static unsigned long stats_reads(struct ps_prochandle *ph, td_thragent_t *ta)
{
	unsigned long before = ph->reads;
	td_ta_stats_t stats;

	cr_assert_eq(td_ta_get_stats(ta, &stats), TD_OK);
	return ph->reads - before;
}

/* The same snapshot without the CPU time. */
static unsigned long nthreads_reads(struct ps_prochandle *ph, td_thragent_t *ta)
{
	unsigned long before = ph->reads;
	int n;

	cr_assert_eq(td_ta_get_nthreads(ta, &n), TD_OK);
	return ph->reads - before;
}

/*
 * What the CPU time costs in reads of the target: nothing for a busy
 * target, whose clock the agent reads before the snapshot's reads, nor
 * for a sleeping one, whose last reading still holds; one copy of the
 * header for the snapshot that did not expect to need the clock (the
 * first after gathering was off).  A snapshot without the CPU time
 * (td_ta_get_nthreads) is the measure.
 */
static void reads_of_the_cpu_time(const char *mode)
{
	struct live_target target;
	struct ps_prochandle ph = { 0 };
	td_thragent_t *ta = NULL;
	bool busy = strcmp(mode, "spin") == 0;
	unsigned long plain;

	cr_assert(live_start(&target, mode, 1, 0, NULL));
	ph.pid = target.pid;
	cr_assert_eq(td_init(), TD_OK);
	cr_assert_eq(td_ta_new(&ph, &ta), TD_OK);
	/* Every record blocked longer than the commit lag: the reading holds. */
	tdtest_sleep_ms(30);
	for (int i = 0; i < 3; i++)
		stats_reads(&ph, ta);
	plain = nthreads_reads(&ph, ta);
	cr_assert_eq(stats_reads(&ph, ta), plain, "%s: a snapshot with the CPU time reads more", mode);
	cr_assert_eq(stats_reads(&ph, ta), plain, "%s: a snapshot with the CPU time reads more", mode);
	if (busy) {
		cr_assert_eq(td_ta_enable_stats(ta, 0), TD_OK);
		stats_reads(&ph, ta);
		cr_assert_eq(td_ta_enable_stats(ta, 1), TD_OK);
		tdtest_sleep_ms(2);
		cr_assert_eq(stats_reads(&ph, ta), plain + 1, "the first snapshot after gathering was off");
		cr_assert_eq(stats_reads(&ph, ta), plain, "the second snapshot after gathering was off");
	}
	cr_assert_eq(td_ta_delete(ta), TD_OK);
	cr_assert_eq(live_stop(&target), 0);
}

Test(disable_cpu, a_busy_target_s_cpu_time_costs_no_read)
{
	reads_of_the_cpu_time("spin");
}

Test(disable_cpu, a_sleeping_target_s_cpu_time_costs_no_read)
{
	reads_of_the_cpu_time("condvar");
}

/*
 * A disable landing after read number `at`, a snapshot of the frozen
 * window by a second agent (another reader of the target: tdstat beside
 * a debugger), then a new window begun by an enable (or a reset; or an
 * enable, a disable and an enable: `then`), all before the snapshot
 * under test returns (0: none).
 */
enum then { THEN_ENABLE, THEN_RESET, THEN_ANOTHER_WINDOW };

static struct {
	td_thragent_t *ta, *other;
	unsigned long at;
	bool fired;
	enum then then;
	td_ta_stats_ns_t frozen;
	td_err_e err;
} cycle;

static void disable_read_enable_after_read(struct ps_prochandle *ph)
{
	td_err_e err;

	if (cycle.at == 0 || ph->reads != cycle.at)
		return;
	cycle.at = 0;
	cycle.fired = true;
	err = td_ta_enable_stats(cycle.ta, 0);
	if (err == TD_OK)
		err = td_ta_get_stats_ns(cycle.other, &cycle.frozen);
	if (err == TD_OK)
		err = cycle.then == THEN_RESET ? td_ta_reset_stats(cycle.ta) : td_ta_enable_stats(cycle.ta, 1);
	if (err == TD_OK && cycle.then == THEN_ANOTHER_WINDOW)
		err = td_ta_enable_stats(cycle.ta, 0);
	if (err == TD_OK && cycle.then == THEN_ANOTHER_WINDOW)
		err = td_ta_enable_stats(cycle.ta, 1);
	cycle.err = err;
}

/*
 * Within the window, the snapshot under test, which found it open, and
 * the one of the frozen window, taken after the disable while the first
 * was under way: the first reports no more CPU time than the second
 * (docs/CONTRACT.md §4, "Monotonic"; a controller beginning a new window
 * right after takes nothing away from that).  For n = 1, 2, ...: the
 * cycle lands after the snapshot's n-th read, its agent having found
 * gathering off in its last snapshot (`off_before`: it reads the CPU
 * clock after its reads) or a busy target (before them).
 */
static void cycle_at_every_read(snapshot_fn *snapshot, bool off_before, enum then then)
{
	struct live_target target;
	struct ps_prochandle ph = { 0 }, other_ph = { 0 };
	td_thragent_t *ta = NULL, *other = NULL;
	int landed_open = 0;
	unsigned long n;

	cr_assert(live_start(&target, "spin", 1, 0, NULL));
	ph.pid = other_ph.pid = target.pid;
	ph.after_read = disable_read_enable_after_read;
	cr_assert_eq(td_init(), TD_OK);
	cr_assert_eq(td_ta_new(&ph, &ta), TD_OK);
	cr_assert_eq(td_ta_new(&other_ph, &other), TD_OK);
	cycle.ta = ta;
	cycle.other = other;
	cycle.then = then;
	for (n = 1; n < 64; n++) {
		td_ta_stats_ns_t during = { .size = sizeof(during) }, warm = { .size = sizeof(warm) };

		if (off_before) {
			cr_assert_eq(td_ta_enable_stats(ta, 0), TD_OK);
			cr_assert_eq(snapshot(ta, &warm), TD_OK);
		}
		cr_assert_eq(td_ta_enable_stats(ta, 1), TD_OK);
		tdtest_sleep_ms(2);
		if (!off_before)
			cr_assert_eq(snapshot(ta, &warm), TD_OK);
		cycle.fired = false;
		cycle.err = TD_OK;
		cycle.frozen = (td_ta_stats_ns_t){ .size = sizeof(cycle.frozen) };
		cycle.at = ph.reads + n;
		cr_assert_eq(snapshot(ta, &during), TD_OK);
		cycle.at = 0;
		if (!cycle.fired)
			break;
		cr_assert_eq(cycle.err, TD_OK);
		cr_assert_eq(cycle.frozen.enabled, 0);
		if (during.window_start_ns != cycle.frozen.window_start_ns)
			continue;
		landed_open += during.enabled;
		cr_assert_geq(cycle.frozen.cpu_ns, during.cpu_ns,
			      "cycle after read %lu (window %s): cpu %llu, the frozen window's %llu", n,
			      during.enabled ? "open" : "closed", (unsigned long long)during.cpu_ns,
			      (unsigned long long)cycle.frozen.cpu_ns);
		cr_assert_geq(cycle.frozen.running_ns, during.running_ns, "cycle after read %lu: running", n);
		cr_assert_geq(cycle.frozen.runnable_ns, during.runnable_ns, "cycle after read %lu: runnable", n);
	}
	cr_assert_gt(n, 1, "no snapshot read anything");
	cr_assert_gt(landed_open, 0, "every cycle landed before a snapshot's last check");
	cr_assert_eq(td_ta_delete(other), TD_OK);
	cr_assert_eq(td_ta_delete(ta), TD_OK);
	cr_assert_eq(live_stop(&target), 0);
}

Test(disable_cpu, a_snapshot_s_cpu_is_at_most_the_frozen_read_meanwhile_before_an_enable)
{
	cycle_at_every_read(process_snapshot, true, THEN_ENABLE);
}

Test(disable_cpu, a_walk_s_cpu_is_at_most_the_frozen_read_meanwhile_before_an_enable)
{
	cycle_at_every_read(walk_snapshot, true, THEN_ENABLE);
}

Test(disable_cpu, a_snapshot_s_cpu_is_at_most_the_frozen_read_meanwhile_before_a_reset)
{
	cycle_at_every_read(process_snapshot, true, THEN_RESET);
}

Test(disable_cpu, a_walk_s_cpu_is_at_most_the_frozen_read_meanwhile_before_a_reset)
{
	cycle_at_every_read(walk_snapshot, true, THEN_RESET);
}

/* Two disables: the first one's cpu_end_ns is gone by the time the
 * snapshot looks (a walk, which cannot read again, is not held to it:
 * docs/READER.md, "What is left"). */
Test(disable_cpu, a_snapshot_s_cpu_is_at_most_the_frozen_read_meanwhile_before_another_window)
{
	cycle_at_every_read(process_snapshot, true, THEN_ANOTHER_WINDOW);
}

Test(disable_cpu, a_busy_target_s_snapshot_s_cpu_is_at_most_the_frozen_read_meanwhile)
{
	cycle_at_every_read(process_snapshot, false, THEN_ENABLE);
}

Test(disable_cpu, a_busy_target_s_walk_s_cpu_is_at_most_the_frozen_read_meanwhile)
{
	cycle_at_every_read(walk_snapshot, false, THEN_ANOTHER_WINDOW);
}
