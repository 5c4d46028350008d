/* SPDX-License-Identifier: MIT */
/*
 * The numbers libc_db derives from a region (docs/READER.md and CONTRACT.md §2),
 * checked exactly against hand-made regions in a fake target.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <tdstat/thread_db_stats.h>

#include "fake_target.h"

#define SECOND 1000000000ull

static struct ps_prochandle target;
static td_thragent_t *agent;

static void setup(void)
{
	fake_target_init(&target, 1024, 0);
	cr_assert_eq(td_ta_new(&target, &agent), TD_OK);
}

static void teardown(void)
{
	td_ta_delete(agent);
	fake_target_destroy(&target);
}

TestSuite(agent_numbers, .init = setup, .fini = teardown, .timeout = 10);

/* The same target with change marks (ABI 2.3, region.h): the tests that
 * keep records between snapshots run again there (BOTH), where a record
 * whose mark held still is not read at all. */
static void setup_marked(void)
{
	fake_target_init(&target, 1024, 0);
	fake_target_add_marks(&target);
	cr_assert_eq(td_ta_new(&target, &agent), TD_OK);
}

TestSuite(agent_numbers_marked, .init = setup_marked, .fini = teardown, .timeout = 10);

#define BOTH(name)                                      \
	static void name##_body(void);                  \
	Test(agent_numbers, name) { name##_body(); }    \
	Test(agent_numbers_marked, name) { name##_body(); } \
	static void name##_body(void)

/* A writer at rest after a change: the record's mark twice its seq. */
static void mark_rest(uint32_t index)
{
	uint32_t *mark = fake_mark(&target, index);

	if (mark)
		*mark = 2 * fake_record(&target, index)->seq;
}

static void set_record(uint32_t index, uint32_t state, uint64_t epoch, uint64_t since, uint64_t tracked,
		       uint64_t runnable)
{
	struct tdstat_record *record = fake_record(&target, index);

	record->seq += 2;
	record->pending_ns = since;
	record = (struct tdstat_record *)fake_copy(&target, index);
	((struct tdstat_record_copy *)record)->state = state;
	((struct tdstat_record_copy *)record)->epoch_ns = epoch;
	((struct tdstat_record_copy *)record)->since_ns = since;
	((struct tdstat_record_copy *)record)->acc_tracked_ns = tracked;
	((struct tdstat_record_copy *)record)->acc_runnable_ns = runnable;
	if (index >= fake_header(&target)->status.high_water)
		fake_header(&target)->status.high_water = index + 1;
	mark_rest(index);
}

static void expect_invariants(const td_ta_stats_t *s)
{
	cr_assert_gt(s->nlwps_den, 0);
	cr_assert_eq(s->nrunnable_den, s->nlwps_den);
	cr_assert_eq(s->a_concurrency_den, s->nlwps_den);
	cr_assert_eq(s->nidle_den, s->nlwps_den);
	cr_assert_geq(s->a_concurrency_num, 0);
	cr_assert_leq(s->a_concurrency_num, s->nrunnable_num);
	cr_assert_leq(s->nrunnable_num, s->nlwps_num);
	cr_assert_eq(s->nidle_num, s->nlwps_num - s->nrunnable_num);
}

/* A closed 10 s window: one thread runnable throughout, one that blocked
 * for 8 s of its 10, one that exited after 3 s of running, one whose
 * accumulators belong to an older window. */
BOTH(closed_window_is_exact)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	uint64_t ws = fake_monotonic_ns() - 15 * SECOND, we = ws + 10 * SECOND;
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	td_ta_stats_t s;

	control->window_start_ns = ws;
	control->window_end_ns = we;
	control->cpu_start_ns = 1 * SECOND;
	control->cpu_end_ns = 6 * SECOND;
	control->r_concurrency = 3;
	set_record(0, TDSTAT_STATE_RUNNABLE, ws - 5, ws - 5 * SECOND, 0, 0);
	set_record(1, TDSTAT_STATE_BLOCKED, ws, ws + 2 * SECOND, 2 * SECOND, 1 * SECOND);
	set_record(2, TDSTAT_STATE_FREE, ws, ws + 3 * SECOND, 3 * SECOND, 3 * SECOND);
	set_record(3, TDSTAT_STATE_FREE, ws - 1, ws - 1, 5 * SECOND, 5 * SECOND);
	/* Its last change came after the disable: only its closed intervals count. */
	set_record(4, TDSTAT_STATE_BLOCKED, ws, we + SECOND, 10 * SECOND, 4 * SECOND);
	fake_header(&target)->status.overflow_live = 2;

	cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
	cr_assert_eq(ns.size, sizeof(ns));
	cr_assert_eq(ns.enabled, 0);
	cr_assert_eq(ns.nthreads, 5);
	cr_assert_eq(ns.overflow_threads, 2);
	cr_assert_eq(ns.r_concurrency, 3);
	cr_assert_eq(ns.window_start_ns, ws);
	cr_assert_eq(ns.window_ns, 10 * SECOND);
	cr_assert_eq(ns.lwps_ns, 33 * SECOND);
	cr_assert_eq(ns.runnable_ns, 18 * SECOND);
	cr_assert_eq(ns.idle_ns, 15 * SECOND);
	cr_assert_eq(ns.cpu_ns, 5 * SECOND);
	cr_assert_eq(ns.running_ns, 5 * SECOND);

	cr_assert_eq(td_ta_get_stats(agent, &s), TD_OK);
	expect_invariants(&s);
	cr_assert_eq(s.nthreads, 5);
	cr_assert_eq(s.r_concurrency, 3);
	cr_assert_eq(s.nlwps_den, 10000000);
	cr_assert_eq(s.nlwps_num, 33000000);
	cr_assert_eq(s.nrunnable_num, 18000000);
	cr_assert_eq(s.a_concurrency_num, 5000000);
	cr_assert_eq(s.nidle_num, 15000000);
}

Test(agent_numbers, empty_window_is_zero_over_one)
{
	td_ta_stats_t s;

	set_record(0, TDSTAT_STATE_RUNNABLE, 0, 0, 0, 0);
	cr_assert_eq(td_ta_get_stats(agent, &s), TD_OK);
	cr_assert_eq(s.nthreads, 1);
	cr_assert_eq(s.nlwps_num, 0);
	cr_assert_eq(s.nrunnable_num, 0);
	cr_assert_eq(s.a_concurrency_num, 0);
	cr_assert_eq(s.nidle_num, 0);
	cr_assert_eq(s.nlwps_den, 1);
	expect_invariants(&s);
}

/* A long window with many threads: D must be halved until every
 * numerator (and D) fits in an int, and the averages must survive. */
Test(agent_numbers, large_numerators_halve_the_denominator)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	uint64_t we = fake_monotonic_ns();
	td_ta_stats_t s;
	double lwps;

	control->window_start_ns = 1;
	control->window_end_ns = we;
	for (uint32_t i = 0; i < 1000; i++)
		set_record(i, i % 2 ? TDSTAT_STATE_RUNNABLE : TDSTAT_STATE_BLOCKED, 1, 0, 0, 0);
	cr_assert_eq(td_ta_get_stats(agent, &s), TD_OK);
	expect_invariants(&s);
	lwps = (double)s.nlwps_num / s.nlwps_den;
	cr_assert(lwps > 999.99 && lwps <= 1000.0, "nlwps %d/%d", s.nlwps_num, s.nlwps_den);
	cr_assert_lt((uint64_t)s.nlwps_den, (we - 1) / 1000, "D was halved");
	cr_assert_eq(s.nidle_num, s.nlwps_num - s.nrunnable_num);
}

static uint64_t process_cpu_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
	return (uint64_t)now.tv_sec * SECOND + (uint64_t)now.tv_nsec;
}

Test(agent_numbers, enable_disable_reset_write_the_documented_fields)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	struct tdstat_control before = *control;
	uint64_t cpu_before = process_cpu_ns();
	td_ta_stats_ns_t first = { .size = sizeof(first) }, second = { .size = sizeof(second) };

	cr_assert_eq(td_ta_enable_stats(agent, 1), TD_OK);
	cr_assert_eq(control->window_end_ns, TDSTAT_WINDOW_OPEN);
	cr_assert_gt(control->window_start_ns, before.window_start_ns);
	cr_assert_geq(control->cpu_start_ns, cpu_before);
	cr_assert_leq(control->cpu_start_ns, process_cpu_ns());
	cr_assert_eq(control->generation, before.generation + 1);

	/* Enabling while on starts a new window too. */
	before = *control;
	cr_assert_eq(td_ta_enable_stats(agent, 1), TD_OK);
	cr_assert_gt(control->window_start_ns, before.window_start_ns);
	cr_assert_eq(control->generation, before.generation + 1);

	before = *control;
	cr_assert_eq(td_ta_reset_stats(agent), TD_OK);
	cr_assert_gt(control->window_start_ns, before.window_start_ns);
	cr_assert_eq(control->window_end_ns, TDSTAT_WINDOW_OPEN);

	before = *control;
	uint64_t asked = fake_monotonic_ns();
	cr_assert_eq(td_ta_enable_stats(agent, 0), TD_OK);
	uint64_t returned = fake_monotonic_ns();
	cr_assert_eq(control->window_start_ns, before.window_start_ns);
	cr_assert_geq(control->window_end_ns, before.window_start_ns);
	cr_assert_neq(control->window_end_ns, TDSTAT_WINDOW_OPEN);
	cr_assert_geq(control->cpu_end_ns, control->cpu_start_ns);
	/* The window ends at the controller's clock during the call (not
	 * the lag before it), and the call returns once a wait's last lag
	 * before that end is final (docs/READER.md, "Control writes"). */
	cr_assert_geq(control->window_end_ns, asked);
	cr_assert_geq(returned, control->window_end_ns + TDSTAT_COMMIT_LAG_NS);

	/* Disabled: later reads give the same window; disabling again is a
	 * no-op. */
	before = *control;
	cr_assert_eq(td_ta_enable_stats(agent, 0), TD_OK);
	cr_assert_eq(memcmp(&before, control, sizeof(before)), 0);
	cr_assert_eq(td_ta_get_stats_ns(agent, &first), TD_OK);
	cr_assert_eq(td_ta_get_stats_ns(agent, &second), TD_OK);
	cr_assert_eq(first.window_ns, second.window_ns);
	cr_assert_eq(first.cpu_ns, second.cpu_ns);

	/* Reset while off: an empty window that stays empty. */
	cr_assert_eq(td_ta_reset_stats(agent), TD_OK);
	cr_assert_eq(control->window_start_ns, control->window_end_ns);
	cr_assert_eq(td_ta_get_stats_ns(agent, &first), TD_OK);
	cr_assert_eq(first.window_ns, 0);
	cr_assert_eq(first.enabled, 0);

	cr_assert_eq(td_ta_setconcurrency(agent, 7), TD_OK);
	cr_assert_eq(control->r_concurrency, 7);
	cr_assert_eq(td_ta_get_stats_ns(agent, &first), TD_OK);
	cr_assert_eq(first.r_concurrency, 7);
}

/*
 * A reset while gathering is off writes a new, empty window and leaves
 * the CPU clock's start and end as the disable froze them
 * (docs/READER.md, "Control writes"): the window holds no time, so no
 * CPU time either (docs/CONTRACT.md §2: the CPU time of the process
 * during W).  The fake target's CPU clock is this process's own.
 */
Test(agent_numbers, an_empty_window_after_a_reset_while_off_holds_no_cpu_time)
{
	td_ta_stats_ns_t frozen = { .size = sizeof(frozen) }, empty = { .size = sizeof(empty) };
	uint64_t until;

	cr_assert_eq(td_ta_enable_stats(agent, 1), TD_OK);
	until = process_cpu_ns() + 5 * 1000 * 1000;
	while (process_cpu_ns() < until)
		;
	cr_assert_eq(td_ta_enable_stats(agent, 0), TD_OK);
	cr_assert_eq(td_ta_get_stats_ns(agent, &frozen), TD_OK);
	cr_assert_geq(frozen.cpu_ns, 5 * 1000 * 1000, "the disabled window's CPU time: %" PRIu64, frozen.cpu_ns);

	cr_assert_eq(td_ta_reset_stats(agent), TD_OK);
	cr_assert_eq(td_ta_get_stats_ns(agent, &empty), TD_OK);
	cr_assert_eq(empty.enabled, 0);
	cr_assert_eq(empty.window_ns, 0);
	cr_assert_eq(empty.runnable_ns, 0);
	cr_assert_eq(empty.cpu_ns, 0, "an empty window reports %" PRIu64 " ns of CPU time", empty.cpu_ns);
	cr_assert_eq(empty.running_ns, 0);
}

/* Averages frozen by a disable stay frozen; nthreads follows the target. */
Test(agent_numbers, disable_freezes_averages_not_nthreads)
{
	td_ta_stats_t first, second;
	struct timespec pause = { 0, 20 * 1000 * 1000 };

	set_record(0, TDSTAT_STATE_RUNNABLE, 0, fake_monotonic_ns(), 0, 0);
	cr_assert_eq(td_ta_enable_stats(agent, 1), TD_OK);
	nanosleep(&pause, NULL);
	cr_assert_eq(td_ta_enable_stats(agent, 0), TD_OK);
	cr_assert_eq(td_ta_get_stats(agent, &first), TD_OK);
	nanosleep(&pause, NULL);
	/* A thread created after the disable: the shim's claim reads the
	 * clock (its slot's interval began before the window's end) and so
	 * moves the record onto the current window. */
	set_record(1, TDSTAT_STATE_BLOCKED, fake_header(&target)->control.window_start_ns, fake_monotonic_ns(), 0, 0);
	cr_assert_eq(td_ta_get_stats(agent, &second), TD_OK);
	cr_assert_eq(first.nthreads, 1);
	cr_assert_eq(second.nthreads, 2);
	second.nthreads = first.nthreads;
	cr_assert_eq(memcmp(&first, &second, sizeof(first)), 0);
	cr_assert_eq(first.nlwps_num, first.nlwps_den, "one thread tracked throughout: %d/%d", first.nlwps_num,
		     first.nlwps_den);
}

/*
 * Every figure read just before a disable is there after it (CONTRACT.md
 * §4, "Monotonic"): the process's integrals, each kind's, counted_ns and
 * each thread's; and the frozen window reads the same from the disable's
 * return on (§3).  A window that ended at the controller's clock less the
 * commit lag took back what readers had counted in that lag: 9 ms of the
 * running thread (readers count it up to their clock less 1 ms), the
 * interval the third thread closed in it, and all of a window younger
 * than the lag (region_write.c, disable_settle).
 */
#define DISABLE_RECORDS 3u

struct figures {
	td_ta_stats_ns_t process;
	td_thr_stats_ns_t threads[DISABLE_RECORDS];
	bool walked;
};

static int keep_thread(const td_thr_stats_ns_t *thread, void *context)
{
	struct figures *figures = context;

	if (thread->record < DISABLE_RECORDS)
		figures->threads[thread->record] = *thread;
	return 0;
}

/* The process's figures from its kept sums (td_ta_get_stats_ns, once the
 * records are kept), or record by record with each thread's (walk). */
static void read_figures(td_thragent_t *reader, bool walk, struct figures *figures)
{
	memset(figures, 0, sizeof(*figures));
	figures->process.size = sizeof(figures->process);
	figures->walked = walk;
	if (walk)
		cr_assert_eq(td_ta_thr_stats_iter(reader, keep_thread, figures, &figures->process), TD_OK);
	else
		cr_assert_eq(td_ta_get_stats_ns(reader, &figures->process), TD_OK);
}

#define EXPECT_NOT_LOWER(field, a, b, what)                                                         \
	cr_assert_geq((b)->field, (a)->field, "%s: " #field " went down, %" PRIu64 \
		      " -> %" PRIu64 " ns", what, (uint64_t)(a)->field, (uint64_t)(b)->field)

static void expect_not_lower(const struct figures *before, const struct figures *after, const char *what)
{
	const td_ta_stats_ns_t *a = &before->process, *b = &after->process;

	cr_assert_eq(b->window_start_ns, a->window_start_ns, "%s: one window", what);
	EXPECT_NOT_LOWER(lwps_ns, a, b, what);
	EXPECT_NOT_LOWER(runnable_ns, a, b, what);
	EXPECT_NOT_LOWER(idle_ns, a, b, what);
	EXPECT_NOT_LOWER(running_ns, a, b, what);
	EXPECT_NOT_LOWER(counted_ns, a, b, what);
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		EXPECT_NOT_LOWER(idle_by_kind_ns[k], a, b, what);
	for (uint32_t i = 0; before->walked && after->walked && i < DISABLE_RECORDS; i++) {
		const td_thr_stats_ns_t *t = &before->threads[i], *u = &after->threads[i];

		EXPECT_NOT_LOWER(lwps_ns, t, u, what);
		EXPECT_NOT_LOWER(runnable_ns, t, u, what);
		EXPECT_NOT_LOWER(idle_ns, t, u, what);
		for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
			EXPECT_NOT_LOWER(idle_by_kind_ns[k], t, u, what);
	}
}

static void expect_same_integrals(const td_ta_stats_ns_t *a, const td_ta_stats_ns_t *b, const char *what)
{
	cr_assert_eq(a->window_ns, b->window_ns, "%s: frozen", what);
	cr_assert_eq(a->counted_ns, b->counted_ns, "%s: frozen", what);
	cr_assert_eq(a->lwps_ns, b->lwps_ns, "%s: frozen", what);
	cr_assert_eq(a->runnable_ns, b->runnable_ns, "%s: frozen", what);
	cr_assert_eq(memcmp(a->idle_by_kind_ns, b->idle_by_kind_ns, sizeof(a->idle_by_kind_ns)), 0, "%s: frozen",
		     what);
}

/* An enable `ago_ns` before now (the window's start moved back, so no
 * test waits), with a thread running and one waiting since before it,
 * and one that ran until a fifth of it ago (an interval closed inside
 * the commit lag of the disable) and waits on a condvar since. */
static uint64_t window_enabled_ago(uint64_t ago_ns)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	uint64_t long_ago = fake_monotonic_ns() - SECOND, ws;

	cr_assert_eq(td_ta_enable_stats(agent, 1), TD_OK);
	ws = control->window_start_ns - ago_ns;
	control->window_start_ns = ws;
	set_record(0, TDSTAT_STATE_RUNNABLE, 0, long_ago, 0, 0);
	set_record(1, TDSTAT_STATE_BLOCKED, 0, long_ago, 0, 0);
	set_record(2, TDSTAT_STATE_BLOCKED, ws, ws + ago_ns - ago_ns / 5, ago_ns - ago_ns / 5, ago_ns - ago_ns / 5);
	fake_copy(&target, 1)->kind = TDSTAT_WAIT_MUTEX;
	fake_copy(&target, 2)->kind = TDSTAT_WAIT_COND;
	return ws;
}

static void disabling_keeps_the_figures(uint64_t ago_ns, const char *what)
{
	struct figures before, after, again;

	for (int walk = 0; walk < 2; walk++) {
		window_enabled_ago(ago_ns);
		/* Kept first, so the figures come from the kept sums. */
		read_figures(agent, walk, &before);
		read_figures(agent, walk, &before);
		cr_assert_eq(before.process.enabled, 1);
		cr_assert_eq(td_ta_enable_stats(agent, 0), TD_OK);
		read_figures(agent, walk, &after);
		cr_assert_eq(after.process.enabled, 0);
		expect_not_lower(&before, &after, what);
		read_figures(agent, walk, &again);
		expect_same_integrals(&after.process, &again.process, what);
	}
}

BOTH(disabling_keeps_a_long_window_s_figures)
{
	disabling_keeps_the_figures(30 * 1000 * 1000, "enabled 30 ms before");
}

/* Younger than the commit lag: its 4 ms once fell to nothing. */
BOTH(disabling_keeps_a_short_window_s_figures)
{
	disabling_keeps_the_figures(5 * 1000 * 1000, "enabled 5 ms before");
}

/*
 * A disable of a window another controller has just closed (its disable
 * still waiting out the commit lag) changes nothing, but it returns too:
 * from then on the caller may read, and §3 says later reads give the
 * same values.  It must wait for that window's figures to be final as
 * the first disable does.  The other controller is the test writing the
 * fields as region_write.c does (an agent of another process, say).
 */
BOTH(a_second_disable_returns_once_the_window_is_final)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	struct figures first, again;

	window_enabled_ago(30 * 1000 * 1000);
	read_figures(agent, false, &first);
	control->cpu_end_ns = control->cpu_start_ns;
	control->window_end_ns = fake_monotonic_ns();
	control->generation++;
	cr_assert_eq(td_ta_enable_stats(agent, 0), TD_OK);
	read_figures(agent, false, &first);
	cr_assert_eq(first.process.enabled, 0);
	nanosleep(&(struct timespec){ 0, (long)(3 * TDSTAT_COMMIT_LAG_NS) }, NULL);
	read_figures(agent, false, &again);
	expect_same_integrals(&first.process, &again.process, "after a second disable");
}

/*
 * A controller held up between deciding to disable and its first write
 * (preempted on a loaded machine): a reader that read the open window in
 * between counted up to its own clock, later than the controller's when
 * it decided.  The disable reads its clocks (the window's end, the CPU
 * clock) only once `rewriting` is written (region_write.c), after every
 * such reader read the open window, so nothing they counted is taken
 * back.
 */
static struct {
	td_thragent_t *reader;
	struct figures figures;
	bool read;
} held;

static void read_while_the_disable_is_held_up(struct ps_prochandle *ph, psaddr_t address, const void *buffer,
					      size_t size)
{
	(void)ph, (void)address, (void)buffer, (void)size;
	if (held.read)
		return;
	held.read = true;
	nanosleep(&(struct timespec){ 0, (long)(TDSTAT_COMMIT_LAG_NS + 2 * 1000 * 1000) }, NULL);
	read_figures(held.reader, true, &held.figures);
}

BOTH(a_disable_held_up_before_its_writes_keeps_what_was_read_meanwhile)
{
	struct figures after;

	cr_assert_eq(td_ta_new(&target, &held.reader), TD_OK);
	window_enabled_ago(30 * 1000 * 1000);
	held.read = false;
	target.before_write = read_while_the_disable_is_held_up;
	cr_assert_eq(td_ta_enable_stats(agent, 0), TD_OK);
	target.before_write = NULL;
	cr_assert(held.read);
	cr_assert_eq(held.figures.process.enabled, 1, "read before the first write");
	read_figures(held.reader, true, &after);
	expect_not_lower(&held.figures, &after, "held-up disable");
	td_ta_delete(held.reader);
}

/*
 * A reset held up between its first two control writes (its thread
 * preempted on a loaded machine, or the controller killed there): the
 * block then holds the new window's CPU start beside the old window's
 * start, `rewriting` still 1.  A reader that stops waiting for
 * `rewriting` (32 tries) took the old window's CPU time from the new
 * start: 45 ms -> 0 within one window in CI
 * (reliability.regression.review.resets-monotonic).
 */
static struct {
	td_thragent_t *reader;
	struct figures before, during;
	int state; /* 1: armed, 2: read */
} held_reset;

static void read_while_the_reset_is_held_up(struct ps_prochandle *ph, psaddr_t address, const void *buffer,
					    size_t size)
{
	uintptr_t window_start = FAKE_REGION_ADDRESS + offsetof(struct tdstat_region_header, control) +
				 offsetof(struct tdstat_control, window_start_ns);

	(void)ph, (void)buffer, (void)size;
	/* The write of the new start comes after the CPU start's. */
	if (held_reset.state != 1 || (uintptr_t)address != window_start)
		return;
	held_reset.state = 2;
	read_figures(held_reset.reader, false, &held_reset.during);
}

BOTH(a_reset_held_up_between_its_writes_keeps_the_old_window_s_cpu_time)
{
	const td_ta_stats_ns_t *before = &held_reset.before.process, *during = &held_reset.during.process;
	uint64_t until;

	cr_assert_eq(td_ta_new(&target, &held_reset.reader), TD_OK);
	window_enabled_ago(30 * 1000 * 1000);
	until = process_cpu_ns() + 5 * 1000 * 1000;
	while (process_cpu_ns() < until)
		;
	read_figures(held_reset.reader, false, &held_reset.before);
	cr_assert_geq(before->cpu_ns, 5 * 1000 * 1000);
	held_reset.state = 1;
	target.before_write = read_while_the_reset_is_held_up;
	cr_assert_eq(td_ta_reset_stats(agent), TD_OK);
	target.before_write = NULL;
	cr_assert_eq(held_reset.state, 2, "the reset wrote no window start");
	cr_assert_eq(during->window_start_ns, before->window_start_ns, "read before the new start landed");
	cr_assert_geq(during->cpu_ns, before->cpu_ns, "the old window's CPU time went down: %" PRIu64 " -> %" PRIu64
		      " ns", before->cpu_ns, during->cpu_ns);
	td_ta_delete(held_reset.reader);
}

/*
 * A walk (td_ta_thr_stats_iter) counts each chunk of records up to a
 * clock taken just before its reads, after the header's copies, and hands
 * each thread out as it goes: it cannot read again.  A disable that lands
 * while the first chunk is read ends the window at its clock, before the
 * next chunk's: every thread there was handed out with time past the
 * window's end, which the next walk, of the frozen window, takes back.
 * Three chunks of 256 records (64 KiB of details each); the first walk of
 * an agent reads them one by one.
 */
#define WALK_RECORDS 600u

static bool walk_disable_armed;

static size_t disable_during_the_first_chunk(struct ps_prochandle *ph, size_t size, bool mid)
{
	if (mid || !walk_disable_armed || size != 256u * sizeof(struct tdstat_record))
		return 0;
	walk_disable_armed = false;
	/* The controller of another thread, landing inside this read (the
	 * target's lock is the test's, not the agent's). */
	pthread_mutex_unlock(&ph->lock);
	cr_assert_eq(td_ta_enable_stats(held.reader, 0), TD_OK);
	pthread_mutex_lock(&ph->lock);
	return 0;
}

static td_thr_stats_ns_t walked[WALK_RECORDS];

static int keep_walked(const td_thr_stats_ns_t *thread, void *context)
{
	(void)context;
	if (thread->record < WALK_RECORDS)
		walked[thread->record] = *thread;
	return 0;
}

/*
 * A window begun 30 ms ago: records [0, ended) are threads that came and
 * went (closed figures, which do not grow with the clock), records
 * [ended, count) threads running since 10 ms into it.  Returns its start.
 */
static uint64_t ended_then_running(uint32_t ended, uint32_t count)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	uint64_t ws = control->window_start_ns - 30 * 1000 * 1000;

	control->window_start_ns = ws;
	for (uint32_t i = 0; i < ended; i++)
		set_record(i, TDSTAT_STATE_FREE, ws, ws + 1000, 1000, 1000);
	for (uint32_t i = ended; i < count; i++)
		set_record(i, TDSTAT_STATE_RUNNABLE, 0, ws + 10 * 1000 * 1000, 0, 0);
	return ws;
}

Test(agent_numbers, a_disable_during_a_walk_takes_nothing_back)
{
	static td_thr_stats_ns_t during[WALK_RECORDS];
	td_ta_stats_ns_t process = { .size = sizeof(process) }, after = { .size = sizeof(after) };
	cr_assert_eq(td_ta_new(&target, &held.reader), TD_OK);
	cr_assert_eq(td_ta_enable_stats(held.reader, 1), TD_OK);
	/* The running ones in the second and third chunks. */
	ended_then_running(256u, WALK_RECORDS);
	walk_disable_armed = true;
	target.on_read = disable_during_the_first_chunk;
	cr_assert_eq(td_ta_thr_stats_iter(agent, keep_walked, NULL, &process), TD_OK);
	target.on_read = NULL;
	cr_assert(!walk_disable_armed, "the first chunk was not read alone");
	memcpy(during, walked, sizeof(during));
	cr_assert_eq(td_ta_thr_stats_iter(agent, keep_walked, NULL, &after), TD_OK);
	cr_assert_eq(after.enabled, 0);
	cr_assert_eq(process.window_start_ns, after.window_start_ns, "one window");
	for (uint32_t i = 256u; i < WALK_RECORDS; i++)
		cr_assert_geq(walked[i].lwps_ns, during[i].lwps_ns,
			      "thread %u: lwps_ns went down across the disable: %" PRIu64 " -> %" PRIu64, i,
			      (uint64_t)during[i].lwps_ns, (uint64_t)walked[i].lwps_ns);
	cr_assert_geq(after.lwps_ns, process.lwps_ns, "lwps_ns went down across the disable: %" PRIu64 " -> %" PRIu64,
		      (uint64_t)process.lwps_ns, (uint64_t)after.lwps_ns);
	cr_assert_geq(after.runnable_ns, process.runnable_ns, "runnable_ns went down across the disable");
	td_ta_delete(held.reader);
}

/*
 * The process begins to exit (status.exit_ns, the shim's clock) while a
 * snapshot reads its first chunk, and the reader is then held up (a
 * loaded machine): the later chunks are counted up to a clock past
 * exit_ns, though the next snapshot ends every thread there.  Only the
 * control block was checked after the records, not exit_ns.
 */
static bool exit_armed;

static size_t exit_during_the_first_chunk(struct ps_prochandle *ph, size_t size, bool mid)
{
	if (mid || !exit_armed || size != 256u * sizeof(struct tdstat_record))
		return 0;
	exit_armed = false;
	fake_header(ph)->status.exit_ns = fake_monotonic_ns();
	nanosleep(&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
	return 0;
}

Test(agent_numbers, an_exit_during_a_snapshot_takes_nothing_back)
{
	td_ta_stats_ns_t during = { .size = sizeof(during) }, after = { .size = sizeof(after) };

	cr_assert_eq(td_ta_enable_stats(agent, 1), TD_OK);
	ended_then_running(256u, WALK_RECORDS);
	exit_armed = true;
	target.on_read = exit_during_the_first_chunk;
	cr_assert_eq(td_ta_get_stats_ns(agent, &during), TD_OK);
	target.on_read = NULL;
	cr_assert(!exit_armed, "the first chunk was not read alone");
	cr_assert_eq(td_ta_get_stats_ns(agent, &after), TD_OK);
	cr_assert_eq(during.window_start_ns, after.window_start_ns, "one window");
	cr_assert_geq(after.lwps_ns, during.lwps_ns, "lwps_ns went down across the exit: %" PRIu64 " -> %" PRIu64,
		      (uint64_t)during.lwps_ns, (uint64_t)after.lwps_ns);
	cr_assert_geq(after.runnable_ns, during.runnable_ns, "runnable_ns went down across the exit");
	cr_assert_geq(after.counted_ns, during.counted_ns, "counted_ns went down across the exit");
}

/* A reader meeting writers inside their critical sections retries. */
BOTH(torn_records_are_reread)
{
	int n;

	for (uint32_t i = 0; i < 8; i++)
		set_record(i, TDSTAT_STATE_RUNNABLE, 0, 0, 0, 0);
	target.torn_reads = 5;
	cr_assert_eq(td_ta_get_nthreads(agent, &n), TD_OK);
	cr_assert_eq(n, 8);
}

/* A writer stopped in the middle of a change (region.h's latch): the copy
 * it was writing is garbage, the published one is whole and is read. */
BOTH(writer_stopped_mid_change_reads_published_copy)
{
	struct tdstat_record *record;
	int n;

	set_record(0, TDSTAT_STATE_RUNNABLE, 0, 0, 0, 0);
	record = fake_record(&target, 0);
	record->copy[1] = record->copy[0];
	memset(&record->copy[0], 0xff, sizeof(record->copy[0]));
	record->seq = 1;
	cr_assert_eq(td_ta_get_nthreads(agent, &n), TD_OK);
	cr_assert_eq(n, 1);
}

Test(agent_numbers, bad_state_is_dberr)
{
	int n;

	set_record(0, 3, 0, 0, 0, 0);
	cr_assert_eq(td_ta_get_nthreads(agent, &n), TD_DBERR);
}

/* A caller with a larger struct (a later version) gets what we know. */
Test(agent_numbers, larger_stats_ns_gets_our_size)
{
	struct {
		td_ta_stats_ns_t known;
		uint64_t future[4];
	} big;

	memset(&big, 0xa5, sizeof(big));
	big.known.size = sizeof(big);
	cr_assert_eq(td_ta_get_stats_ns(agent, &big.known), TD_OK);
	cr_assert_eq(big.known.size, sizeof(td_ta_stats_ns_t));
	cr_assert_eq(big.future[0], 0xa5a5a5a5a5a5a5a5ull);
}

/* The published detail copy of record `index`. */
static struct tdstat_detail_copy *published_detail(uint32_t index)
{
	struct tdstat_region_header *h = fake_header(&target);
	struct tdstat_detail *detail = (struct tdstat_detail *)(target.image + h->details_offset) + index;

	return &detail->copy[fake_record(&target, index)->seq & 1];
}

/* A writer's change by the latch: the other copies, then seq + 1. */
static void publish_blocked(uint32_t index, uint64_t ws, uint64_t since, uint32_t kind, int idle_kind,
			    uint64_t idle_ns)
{
	struct tdstat_record *record = fake_record(&target, index);
	struct tdstat_record_copy *next = &record->copy[(record->seq + 1) & 1];
	struct tdstat_detail *detail = (struct tdstat_detail *)(target.image + fake_header(&target)->details_offset) + index;
	struct tdstat_detail_copy *next_detail = &detail->copy[(record->seq + 1) & 1];

	*next = record->copy[record->seq & 1];
	*next_detail = detail->copy[record->seq & 1];
	next->state = TDSTAT_STATE_BLOCKED;
	next->kind = kind;
	next->epoch_ns = ws;
	next->since_ns = since;
	next->acc_tracked_ns = idle_ns;
	next->acc_runnable_ns = 0;
	memset(next_detail->acc_idle_ns, 0, sizeof(next_detail->acc_idle_ns));
	next_detail->acc_idle_ns[idle_kind] = idle_ns;
	record->pending_ns = since;
	record->seq++;
	if (index >= fake_header(&target)->status.high_water)
		fake_header(&target)->status.high_water = index + 1;
	mark_rest(index);
}

/*
 * The agent keeps the records (and details) a snapshot found consistent,
 * and reads a record once when it is still its kept image.  Every change
 * the writer publishes must show in the next snapshot, and a detail kept
 * from before a change must not be served after a snapshot without the
 * details saw the record move on.
 */
BOTH(kept_records_never_hide_a_change)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	uint64_t ws = fake_monotonic_ns() - 15 * SECOND;
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	td_ta_stats_t s;

	control->window_start_ns = ws;
	control->window_end_ns = ws + 10 * SECOND;
	for (uint32_t i = 0; i < 600; i++) /* more than one 64 KiB chunk */
		publish_blocked(i, ws, ws + 9 * SECOND, TDSTAT_WAIT_COND, TDSTAT_WAIT_MUTEX, 1 * SECOND);
	cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
	cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_MUTEX], 600 * SECOND);
	cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_COND], 600 * SECOND);
	cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK, "all kept");
	cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_COND], 600 * SECOND);

	/* Record 599 (second chunk) moves on: 2 s of mutex, blocked from 8 s. */
	publish_blocked(599, ws, ws + 8 * SECOND, TDSTAT_WAIT_COND, TDSTAT_WAIT_MUTEX, 2 * SECOND);
	cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
	cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_MUTEX], 601 * SECOND);
	cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_COND], 601 * SECOND);

	/* A change seen only by a snapshot without the details ... */
	publish_blocked(0, ws, ws + 7 * SECOND, TDSTAT_WAIT_SLEEP, TDSTAT_WAIT_SIGNAL, 3 * SECOND);
	cr_assert_eq(td_ta_get_stats(agent, &s), TD_OK);
	cr_assert_eq(published_detail(0)->acc_idle_ns[TDSTAT_WAIT_SIGNAL], 3 * SECOND);
	/* ... then one with: record 0's detail is read, not the kept one
	 * (whose copy of the new parity has no signal time). */
	cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
	cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_SIGNAL], 3 * SECOND);
	cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_MUTEX], 600 * SECOND);
	cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_SLEEP], 3 * SECOND);
	cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_COND], 600 * SECOND);
	cr_assert_eq(ns.lwps_ns, (6 + 4 + 598 * 2) * SECOND);
}

static int count_thread(const td_thr_stats_ns_t *thread, void *data)
{
	(void)thread;
	++*(int *)data;
	return 0;
}

/*
 * A snapshot reads the header with the records the last one found in use
 * (region_read.c, header_and_records): records taken into use since then
 * must be read too, by the walk and by the process sums.
 */
BOTH(records_taken_since_the_last_snapshot_are_read)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	uint64_t ws = fake_monotonic_ns() - 15 * SECOND;
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	int handed = 0;

	control->window_start_ns = ws;
	control->window_end_ns = ws + 10 * SECOND;
	for (uint32_t i = 0; i < 10; i++)
		publish_blocked(i, ws, ws + 9 * SECOND, TDSTAT_WAIT_COND, TDSTAT_WAIT_MUTEX, 1 * SECOND);
	cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
	cr_assert_eq(ns.nthreads, 10);
	for (uint32_t i = 10; i < 300; i++) /* past the first 64 KiB chunk of details */
		publish_blocked(i, ws, ws + 9 * SECOND, TDSTAT_WAIT_COND, TDSTAT_WAIT_MUTEX, 1 * SECOND);
	cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
	cr_assert_eq(ns.nthreads, 300);
	cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_MUTEX], 300 * SECOND);
	publish_blocked(300, ws, ws + 9 * SECOND, TDSTAT_WAIT_COND, TDSTAT_WAIT_MUTEX, 1 * SECOND);
	cr_assert_eq(td_ta_thr_stats_iter(agent, count_thread, &handed, &ns), TD_OK);
	cr_assert_eq(handed, 301);
	cr_assert_eq(ns.nthreads, 301);
	cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_COND], 301 * SECOND);
}

/*
 * What a snapshot of an unchanged target costs in reads of its memory
 * (each one a system call on a live target, the fixed part of the cost):
 * the header with the records, the header again.  The walk needs nothing
 * more; the process figures need nothing more either, the second header
 * having been read after every record.
 */
Test(agent_numbers, an_unchanged_target_costs_two_reads)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	uint64_t ws = fake_monotonic_ns() - 15 * SECOND;
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	unsigned long before;
	int handed = 0;

	control->window_start_ns = ws;
	control->window_end_ns = ws + 10 * SECOND;
	for (uint32_t i = 0; i < 100; i++)
		publish_blocked(i, ws, ws + 9 * SECOND, TDSTAT_WAIT_COND, TDSTAT_WAIT_MUTEX, 1 * SECOND);
	cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
	before = target.reads;
	cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
	cr_assert_eq(target.reads - before, 2);
	cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_COND], 100 * SECOND);
	before = target.reads;
	cr_assert_eq(td_ta_thr_stats_iter(agent, count_thread, &handed, &ns), TD_OK);
	cr_assert_eq(target.reads - before, 2);
	cr_assert_eq(handed, 100);
	/* A record that changed costs its chunk's reads again, and the
	 * header after them. */
	publish_blocked(5, ws, ws + 8 * SECOND, TDSTAT_WAIT_COND, TDSTAT_WAIT_MUTEX, 2 * SECOND);
	before = target.reads;
	cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
	cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_MUTEX], 101 * SECOND);
	cr_assert_gt(target.reads - before, 2);
}

/*
 * A chunk of records as kept is added up from its kept per-kind sums
 * (region_read.c, struct tddb_chunk_kinds): those sums hold only in the
 * window and at the window's end they were made in.  A record whose
 * closed time the window's end cut (a hostile record, or a window closed
 * before its last commit) must be cut again at the next snapshot, and a
 * window that ends, or starts again, sums its records afresh.
 */
BOTH(kept_kind_sums_follow_the_window)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	uint64_t ws = fake_monotonic_ns() - 15 * SECOND;
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };

	control->window_start_ns = ws;
	control->window_end_ns = TDSTAT_WINDOW_OPEN;
	/* Closed: 4 s of mutex (even records) or of cond (odd ones); blocked
	 * (cond) since 12 s. */
	for (uint32_t i = 0; i < 300; i++) /* two chunks */
		publish_blocked(i, ws, ws + 12 * SECOND, TDSTAT_WAIT_COND, i % 2 ? TDSTAT_WAIT_COND : TDSTAT_WAIT_MUTEX,
				4 * SECOND);
	/* Sums taken, then used. */
	for (int round = 0; round < 3; round++) {
		cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
		cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_MUTEX], 150 * 4 * SECOND, "round %d", round);
		cr_assert_geq(ns.idle_by_kind_ns[TDSTAT_WAIT_COND], 150 * 4 * SECOND + 300 * 2 * SECOND, "round %d",
			      round);
		cr_assert_eq(ns.idle_ns, ns.idle_by_kind_ns[TDSTAT_WAIT_MUTEX] + ns.idle_by_kind_ns[TDSTAT_WAIT_COND]);
	}
	/* The window closed at 3 s: each record's closed 4 s are cut to 3,
	 * in its own kind (the process's 1,200 s cut to 900 in kind order
	 * would give mutex 600, cond 300), none of the open wait is in it. */
	control->window_end_ns = ws + 3 * SECOND;
	control->generation++;
	for (int round = 0; round < 2; round++) {
		cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
		cr_assert_eq(ns.window_ns, 3 * SECOND);
		cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_MUTEX], 150 * 3 * SECOND, "round %d", round);
		cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_COND], 150 * 3 * SECOND, "round %d", round);
	}
	/* A new window, the records unchanged: they belong to the old one,
	 * so only their open waits count, from the new start on. */
	control->window_start_ns = ws + 13 * SECOND;
	control->window_end_ns = ws + 14 * SECOND;
	control->generation++;
	for (int round = 0; round < 2; round++) {
		cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
		cr_assert_eq(ns.window_ns, 1 * SECOND);
		cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_MUTEX], 0, "round %d", round);
		cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_COND], 300 * SECOND, "round %d", round);
	}
}

/* A record published whole by the latch, any state. */
static void publish_any(uint32_t index, uint32_t state, uint32_t kind, uint64_t epoch, uint64_t since,
			uint64_t tracked, uint64_t runnable, int idle_kind, uint64_t pending)
{
	struct tdstat_record *record = fake_record(&target, index);
	struct tdstat_record_copy *next = &record->copy[(record->seq + 1) & 1];
	struct tdstat_detail *detail = (struct tdstat_detail *)(target.image + fake_header(&target)->details_offset) + index;
	struct tdstat_detail_copy *next_detail = &detail->copy[(record->seq + 1) & 1];

	*next = (struct tdstat_record_copy){ .state = state, .kind = kind, .tid = (int32_t)index + 100,
					     .generation = 1, .epoch_ns = epoch, .since_ns = since,
					     .acc_tracked_ns = tracked, .acc_runnable_ns = runnable };
	memset(next_detail, 0, sizeof(*next_detail));
	next_detail->acc_idle_ns[idle_kind] = tracked - runnable;
	record->pending_ns = pending;
	record->seq++;
	if (index >= fake_header(&target)->status.high_water)
		fake_header(&target)->status.high_water = index + 1;
	mark_rest(index);
}

struct handed_sums {
	uint64_t lwps, runnable, idle_by[TDSTAT_WAIT_KIND_COUNT];
	int live;
};

static int add_handed(const td_thr_stats_ns_t *thread, void *data)
{
	struct handed_sums *sums = data;

	sums->lwps += thread->lwps_ns;
	sums->runnable += thread->runnable_ns;
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		sums->idle_by[k] += thread->idle_by_kind_ns[k];
	sums->live += thread->state != TDSTAT_STATE_FREE;
	return 0;
}

static void expect_same_stats(const td_ta_stats_ns_t *a, const td_ta_stats_ns_t *b, const char *what)
{
	cr_assert_eq(a->nthreads, b->nthreads, "%s", what);
	cr_assert_eq(a->window_ns, b->window_ns, "%s", what);
	cr_assert_eq(a->lwps_ns, b->lwps_ns, "%s: lwps %" PRIu64 " against %" PRIu64, what, a->lwps_ns, b->lwps_ns);
	cr_assert_eq(a->runnable_ns, b->runnable_ns, "%s: runnable %" PRIu64 " against %" PRIu64, what,
		     a->runnable_ns, b->runnable_ns);
	cr_assert_eq(a->idle_ns, b->idle_ns, "%s", what);
	cr_assert_eq(a->counted_ns, b->counted_ns, "%s", what);
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		cr_assert_eq(a->idle_by_kind_ns[k], b->idle_by_kind_ns[k], "%s: kind %d", what, k);
}

/*
 * A snapshot of the process's figures adds a chunk that is as kept from
 * its kept sums, without decoding its records (region_read.c,
 * chunk_whole_add): the open intervals summed per state and kind.  It
 * must give exactly what the records one by one give (the walk, which
 * never takes the sums), with records of every shape in the first chunk,
 * a change under way in the second and a record cut to the window in the
 * third (those two chunks are summed record by record), and again after
 * a record of the first chunk changed, and in a new window.
 */
BOTH(kept_chunk_sums_equal_the_records_one_by_one)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	uint64_t ws = fake_monotonic_ns() - 15 * SECOND;
	td_ta_stats_ns_t walk = { .size = sizeof(walk) }, ns = { .size = sizeof(ns) };

	control->window_start_ns = ws;
	control->window_end_ns = ws + 10 * SECOND;
	for (uint32_t i = 0; i < 700; i++) { /* three chunks */
		uint64_t since = ws + (i % 5) * SECOND;

		switch (i % 7) {
		case 0: /* runnable since 2 s, 2 s closed, 1 of them runnable */
			publish_any(i, TDSTAT_STATE_RUNNABLE, 0, ws, ws + 2 * SECOND, 2 * SECOND, SECOND,
				    TDSTAT_WAIT_SLEEP, 0);
			break;
		case 1: /* exited after 3 s */
			publish_any(i, TDSTAT_STATE_FREE, 0, ws, ws + 3 * SECOND, 3 * SECOND, SECOND, TDSTAT_WAIT_IO, 0);
			break;
		case 2: /* blocked since before the window */
			publish_any(i, TDSTAT_STATE_BLOCKED, TDSTAT_WAIT_MUTEX, ws - 1, ws - 2 * SECOND, 5 * SECOND, 0,
				    TDSTAT_WAIT_MUTEX, 0);
			break;
		default:
			publish_any(i, TDSTAT_STATE_BLOCKED, i % TDSTAT_WAIT_KIND_COUNT, ws, since,
				    since - ws, (since - ws) / 4, (i + 1) % TDSTAT_WAIT_KIND_COUNT, 0);
		}
	}
	/* A change under way at 9 s (pending after since), and a record
	 * claiming more closed time than the window has. */
	publish_any(300, TDSTAT_STATE_BLOCKED, TDSTAT_WAIT_COND, ws, ws + 4 * SECOND, 4 * SECOND, 0, TDSTAT_WAIT_JOIN,
		    ws + 9 * SECOND);
	publish_any(600, TDSTAT_STATE_RUNNABLE, 0, ws, ws + 4 * SECOND, 20 * SECOND, 0, TDSTAT_WAIT_JOIN, 0);

	for (int step = 0; step < 3; step++) {
		struct handed_sums handed = { 0 };
		td_ta_stats_ns_t taken[4];

		/* Without the kinds first after a change (a kept sum of a
		 * chunk that changed must not serve), then with them, and
		 * again (the sums taken, then used). */
		for (int round = 0; round < 4; round++) {
			memset(&taken[round], 0, sizeof(taken[round]));
			taken[round].size = round % 2 ? sizeof(ns) : offsetof(td_ta_stats_ns_t, kinds);
			cr_assert_eq(td_ta_get_stats_ns(agent, &taken[round]), TD_OK);
		}
		cr_assert_eq(td_ta_thr_stats_iter(agent, add_handed, &handed, &walk), TD_OK);
		cr_assert_eq(handed.live, walk.nthreads);
		cr_assert_eq(handed.lwps, walk.lwps_ns);
		cr_assert_eq(handed.runnable, walk.runnable_ns);
		for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
			cr_assert_eq(handed.idle_by[k], walk.idle_by_kind_ns[k], "step %d kind %d", step, k);
		for (int round = 0; round < 4; round++) {
			char what[64];

			snprintf(what, sizeof(what), "step %d round %d", step, round);
			if (round % 2 == 0) {
				memcpy(taken[round].idle_by_kind_ns, walk.idle_by_kind_ns, sizeof(walk.idle_by_kind_ns));
				taken[round].counted_ns = walk.counted_ns;
			}
			expect_same_stats(&taken[round], &walk, what);
		}
		cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
		expect_same_stats(&ns, &walk, "after the walk");
		if (step == 0) {
			/* One record of the first chunk moves on: blocked in a
			 * semaphore since 8 s. */
			publish_any(10, TDSTAT_STATE_BLOCKED, TDSTAT_WAIT_SEM, ws, ws + 8 * SECOND, 8 * SECOND, SECOND,
				    TDSTAT_WAIT_SEM, 0);
		} else if (step == 1) {
			/* A new window (a reset while off): every record on the
			 * old one counts its open interval only. */
			control->window_start_ns = ws + 5 * SECOND;
			control->window_end_ns = ws + 9 * SECOND;
			control->generation++;
		}
	}
}

struct handed_records {
	td_thr_stats_ns_t by_record[1024];
	int count;
};

static int keep_handed(const td_thr_stats_ns_t *thread, void *data)
{
	struct handed_records *kept = data;

	cr_assert_lt(thread->record, 1024);
	kept->by_record[thread->record] = *thread;
	kept->count++;
	return 0;
}

/* What an agent that never saw the target (nothing kept) makes of it,
 * against what `agent` makes of it now: the process's figures (with
 * `walk_first`, from the walk) and the walk record by record.  Returns
 * the bytes `agent`'s first call read. */
static unsigned long expect_as_fresh(const char *what, bool walk_first)
{
	static struct handed_records fresh, kept;
	td_ta_stats_ns_t fresh_ns = { .size = sizeof(fresh_ns) }, kept_ns = { .size = sizeof(kept_ns) };
	td_ta_stats_ns_t process = { .size = sizeof(process) };
	td_thragent_t *other;

	memset(&fresh, 0, sizeof(fresh));
	memset(&kept, 0, sizeof(kept));
	unsigned long bytes = target.read_bytes;
	if (!walk_first)
		cr_assert_eq(td_ta_get_stats_ns(agent, &process), TD_OK);
	else
		cr_assert_eq(td_ta_thr_stats_iter(agent, keep_handed, &kept, &kept_ns), TD_OK);
	bytes = target.read_bytes - bytes;
	if (!walk_first)
		cr_assert_eq(td_ta_thr_stats_iter(agent, keep_handed, &kept, &kept_ns), TD_OK);
	cr_assert_eq(td_ta_new(&target, &other), TD_OK);
	cr_assert_eq(td_ta_thr_stats_iter(other, keep_handed, &fresh, &fresh_ns), TD_OK);
	td_ta_delete(other);
	expect_same_stats(&kept_ns, &fresh_ns, what);
	if (!walk_first)
		expect_same_stats(&process, &fresh_ns, what);
	cr_assert_eq(kept.count, fresh.count, "%s", what);
	for (int i = 0; i < 1024; i++)
		cr_assert(memcmp(&kept.by_record[i], &fresh.by_record[i], sizeof(fresh.by_record[i])) == 0,
			  "%s: record %d", what, i);
	return bytes;
}

/*
 * Threads that queue on a lock change state in turn: between two
 * snapshots at 100 Hz a band of a few dozen records moves while the rest
 * sleep (region_read.c, chunk_changes).  Only the band's details and
 * second copy are read again, the rest served as kept; the figures must
 * be exactly those of an agent that read everything, after the process
 * figures or the walk read the band first, with records that moved at
 * both ends of the band.
 */
BOTH(a_band_of_changed_records_reads_only_the_band)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	uint64_t ws = fake_monotonic_ns() - 15 * SECOND;
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	unsigned long bytes;

	control->window_start_ns = ws;
	control->window_end_ns = ws + 10 * SECOND;
	for (uint32_t i = 0; i < 700; i++) /* three chunks of details */
		publish_blocked(i, ws, ws + 9 * SECOND, TDSTAT_WAIT_COND, TDSTAT_WAIT_MUTEX, 1 * SECOND);
	cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
	expect_as_fresh("all kept", false);

	/* Records 40 to 64 of the first chunk move on, some to a mutex,
	 * some runnable: the band ends with the first record of a group of
	 * kept sums (SUM_GROUP_RECORDS). */
	for (uint32_t i = 40; i < 65; i++) {
		if (i % 3)
			publish_blocked(i, ws, ws + 8 * SECOND, TDSTAT_WAIT_MUTEX, TDSTAT_WAIT_COND, 2 * SECOND);
		else
			publish_any(i, TDSTAT_STATE_RUNNABLE, 0, ws, ws + 7 * SECOND, 7 * SECOND, 3 * SECOND,
				    TDSTAT_WAIT_SLEEP, 0);
	}
	bytes = expect_as_fresh("a band moved", false);
	/* The header with every record and the header again, the band's
	 * details and records, the header once more (reads after the
	 * first header's): far less than the first chunk's details
	 * (64 KiB) alone. */
	cr_assert_lt(bytes, 3 * fake_header(&target)->records_offset + 700 * sizeof(struct tdstat_record) +
				    25 * (sizeof(struct tdstat_detail) + sizeof(struct tdstat_record)) + 1,
		     "read %lu bytes", bytes);
	for (uint32_t i = 41; i < 60; i += 3)
		publish_blocked(i, ws, ws + 9 * SECOND, TDSTAT_WAIT_FUTEX, TDSTAT_WAIT_FUTEX, 1 * SECOND);
	expect_as_fresh("a band moved again, the walk first", true);

	/* Again: both ends of the band, one record that ended inside it
	 * and one with a change under way. */
	for (uint32_t i = 40; i < 60; i += 19)
		publish_blocked(i, ws, ws + 9 * SECOND, TDSTAT_WAIT_SLEEP, TDSTAT_WAIT_SIGNAL, 1 * SECOND);
	publish_any(47, TDSTAT_STATE_FREE, 0, ws, ws + 3 * SECOND, 3 * SECOND, SECOND, TDSTAT_WAIT_IO, 0);
	publish_any(52, TDSTAT_STATE_RUNNABLE, 0, ws, ws + 4 * SECOND, 4 * SECOND, 0, TDSTAT_WAIT_JOIN,
		    ws + 9 * SECOND);
	expect_as_fresh("the band's ends moved", true);
	/* And a band in the last, partly filled chunk. */
	for (uint32_t i = 610; i < 690; i += 7)
		publish_blocked(i, ws, ws + 6 * SECOND, TDSTAT_WAIT_IO, TDSTAT_WAIT_IO, 3 * SECOND);
	expect_as_fresh("a band of the last chunk", true);
}

/*
 * With change marks (ABI 2.3) a snapshot of a target where nothing moved
 * reads the header and the marks, 4 bytes a record, and no record; a
 * record whose mark moved is read and counted exactly as a fresh agent
 * counts it.
 */
Test(agent_numbers_marked, an_unchanged_target_reads_marks_not_records)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	uint64_t ws = fake_monotonic_ns() - 15 * SECOND;
	uint32_t header = fake_header(&target)->records_offset;
	unsigned long bytes;

	control->window_start_ns = ws;
	control->window_end_ns = ws + 10 * SECOND;
	for (uint32_t i = 0; i < 700; i++) /* three chunks */
		publish_blocked(i, ws, ws + 9 * SECOND, TDSTAT_WAIT_COND, TDSTAT_WAIT_MUTEX, 1 * SECOND);
	expect_as_fresh("first", false);
	bytes = expect_as_fresh("nothing moved", false);
	/* The header, a few times, and 1 KiB of marks a chunk: no 128-byte
	 * record (700 of them would be 89,600 bytes). */
	cr_assert_leq(bytes, 4 * header + 3 * TDSTAT_CHANGES_BLOCK * sizeof(uint32_t), "read %lu bytes", bytes);
	bytes = expect_as_fresh("nothing moved, the walk", true);
	cr_assert_leq(bytes, 4 * header + 3 * TDSTAT_CHANGES_BLOCK * sizeof(uint32_t), "read %lu bytes", bytes);

	/* Two records of the second chunk move on: read (their span), and
	 * counted as a fresh agent counts them. */
	publish_blocked(300, ws, ws + 8 * SECOND, TDSTAT_WAIT_MUTEX, TDSTAT_WAIT_COND, 2 * SECOND);
	publish_any(310, TDSTAT_STATE_RUNNABLE, 0, ws, ws + 7 * SECOND, 7 * SECOND, 3 * SECOND, TDSTAT_WAIT_SLEEP, 0);
	bytes = expect_as_fresh("two moved", false);
	cr_assert_lt(bytes, 4 * header + 3 * TDSTAT_CHANGES_BLOCK * sizeof(uint32_t) +
				    11 * sizeof(struct tdstat_record) + 2 * (sizeof(struct tdstat_record) + sizeof(struct tdstat_detail)) * 2,
		     "read %lu bytes", bytes);
}

/*
 * A snapshot whose records are all as kept on the word of their marks
 * reads the header and the marks: two reads.  The header takes one copy
 * when its control block is byte for byte the one the agent last read
 * whole (region_read.c, tddb_read_header), and no copy after the marks
 * (the records did not change since the header's copy, so they and the
 * control block are of one moment).  One whose records moved still
 * checks the header after them; a control block that changed takes two
 * copies again, and its new window is the one reported.
 */
Test(agent_numbers_marked, an_unchanged_target_is_two_reads)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	uint64_t ws = fake_monotonic_ns() - 15 * SECOND;
	unsigned long reads;

	control->window_start_ns = ws;
	control->window_end_ns = TDSTAT_WINDOW_OPEN;
	for (uint32_t i = 0; i < 700; i++)
		publish_blocked(i, ws, ws + 9 * SECOND, TDSTAT_WAIT_COND, TDSTAT_WAIT_MUTEX, 1 * SECOND);
	cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
	cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
	reads = target.reads;
	cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
	cr_assert_eq(target.reads - reads, 2, "%lu reads", target.reads - reads);
	publish_blocked(300, ws, ws + 10 * SECOND, TDSTAT_WAIT_MUTEX, TDSTAT_WAIT_COND, 2 * SECOND);
	reads = target.reads;
	cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
	cr_assert_gt(target.reads - reads, 3, "%lu reads", target.reads - reads);
	/* A controller's reset, done behind the agent's back: the one copy
	 * is not the kept block, the snapshot is of the new window. */
	control->window_start_ns = ws + 12 * SECOND;
	control->generation++;
	reads = target.reads;
	cr_assert_eq(td_ta_get_stats_ns(agent, &ns), TD_OK);
	cr_assert_gt(target.reads - reads, 2, "%lu reads", target.reads - reads);
	cr_assert_eq(ns.window_start_ns, ws + 12 * SECOND, "window start %" PRIu64, ns.window_start_ns);
}

/* A new window begun while the marks are read, after the header's
 * copies: the snapshot is of the old window as it stood (the records did
 * not move), or of the new one as a fresh agent reads it; never the old
 * records counted in the new window. */
static uint64_t reset_to;

static size_t reset_during_marks(struct ps_prochandle *ph, size_t size, bool mid)
{
	struct tdstat_control *control = &fake_header(ph)->control;

	/* The marks of 700 records, in blocks of TDSTAT_CHANGES_BLOCK. */
	if (mid || !reset_to || size != 3 * TDSTAT_CHANGES_BLOCK * sizeof(uint32_t))
		return 0;
	control->window_start_ns = reset_to;
	control->window_end_ns = TDSTAT_WINDOW_OPEN;
	control->generation++;
	reset_to = 0;
	return 0;
}

Test(agent_numbers_marked, a_new_window_during_the_marks_read_is_not_mixed_in)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	td_ta_stats_ns_t before = { .size = sizeof(before) }, during = { .size = sizeof(during) };
	td_ta_stats_ns_t fresh = { .size = sizeof(fresh) };
	uint64_t ws = fake_monotonic_ns() - 15 * SECOND;
	td_thragent_t *other;

	control->window_start_ns = ws;
	control->window_end_ns = ws + 10 * SECOND;
	for (uint32_t i = 0; i < 700; i++)
		publish_blocked(i, ws, ws + 9 * SECOND, TDSTAT_WAIT_COND, TDSTAT_WAIT_MUTEX, 1 * SECOND);
	cr_assert_eq(td_ta_get_stats_ns(agent, &before), TD_OK);
	cr_assert_eq(td_ta_get_stats_ns(agent, &before), TD_OK);
	reset_to = fake_monotonic_ns() - SECOND;
	target.on_read = reset_during_marks;
	cr_assert_eq(td_ta_get_stats_ns(agent, &during), TD_OK);
	target.on_read = NULL;
	cr_assert_eq(reset_to, 0, "the marks were not read");
	if (during.window_start_ns == ws) {
		cr_assert_eq(during.lwps_ns, before.lwps_ns);
		cr_assert_eq(during.runnable_ns, before.runnable_ns);
		cr_assert_eq(during.window_ns, before.window_ns);
		return;
	}
	cr_assert_eq(td_ta_new(&target, &other), TD_OK);
	cr_assert_eq(td_ta_get_stats_ns(other, &fresh), TD_OK);
	td_ta_delete(other);
	cr_assert_eq(during.window_start_ns, fresh.window_start_ns);
	cr_assert_leq(during.lwps_ns, fresh.lwps_ns);
	cr_assert_leq(during.runnable_ns, fresh.runnable_ns);
}

/*
 * A snapshot of more than MARKS_AHEAD (8192) records reads their marks in
 * two reads, and counts the records of the second from a clock taken
 * just before it, after the header's copies.  A disable that lands
 * between the two (here while the first marks are read) ends the window
 * at its clock, before that one: every record of the second read was
 * counted past the window's end, and after the disable its figures fall.
 * All served as kept on the word of their marks, the records held still,
 * but the clock did not: only the header read after that clock shows the
 * window closed before it (region_read.c, threads_visit's end).
 */
#define MANY_MARKED (8192u + 512u)

static bool disable_armed;

static size_t disable_during_the_first_marks(struct ps_prochandle *ph, size_t size, bool mid)
{
	if (mid || !disable_armed || size != 8192u * sizeof(uint32_t))
		return 0;
	disable_armed = false;
	/* The controller of another thread, landing inside this read (the
	 * target's lock is the test's, not the agent's). */
	pthread_mutex_unlock(&ph->lock);
	cr_assert_eq(td_ta_enable_stats(agent, 0), TD_OK);
	pthread_mutex_lock(&ph->lock);
	return 0;
}

Test(agent_numbers_marked, a_disable_between_two_marks_reads_takes_nothing_back)
{
	td_ta_stats_ns_t kept = { .size = sizeof(kept) }, during = { .size = sizeof(during) };
	td_ta_stats_ns_t after = { .size = sizeof(after) };

	td_ta_delete(agent);
	fake_target_destroy(&target);
	fake_target_init(&target, MANY_MARKED, 0);
	fake_target_add_marks(&target);
	cr_assert_eq(td_ta_new(&target, &agent), TD_OK);
	cr_assert_eq(td_ta_enable_stats(agent, 1), TD_OK);
	/* 512 running, all of them counted from the second marks read. */
	ended_then_running(8192u, MANY_MARKED);
	cr_assert_eq(td_ta_get_stats_ns(agent, &kept), TD_OK);
	cr_assert_eq(td_ta_get_stats_ns(agent, &kept), TD_OK);
	disable_armed = true;
	target.on_read = disable_during_the_first_marks;
	cr_assert_eq(td_ta_get_stats_ns(agent, &during), TD_OK);
	target.on_read = NULL;
	cr_assert(!disable_armed, "the marks were not read in two");
	cr_assert_eq(td_ta_get_stats_ns(agent, &after), TD_OK);
	cr_assert_eq(after.enabled, 0);
	cr_assert_eq(during.window_start_ns, after.window_start_ns, "one window");
	cr_assert_geq(after.lwps_ns, during.lwps_ns, "lwps_ns went down across the disable: %" PRIu64 " -> %" PRIu64,
		      (uint64_t)during.lwps_ns, (uint64_t)after.lwps_ns);
	cr_assert_geq(after.runnable_ns, during.runnable_ns,
		      "runnable_ns went down across the disable: %" PRIu64 " -> %" PRIu64,
		      (uint64_t)during.runnable_ns, (uint64_t)after.runnable_ns);
	cr_assert_geq(after.counted_ns, during.counted_ns, "counted_ns went down across the disable");
}

/*
 * A mark left odd is a change under way (or a writer stopped half way):
 * the record itself says how far it got (pending_ns), so it is read at
 * every snapshot until the mark is even again.  Here the first snapshot
 * after the odd mark reads the record before its announcement landed; the
 * next, after it landed, must see it (an agent that served the kept
 * bytes would extend the old state past the announcement, as a fresh
 * agent does not).
 */
Test(agent_numbers_marked, an_odd_mark_reads_the_record_every_time)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	uint64_t ws = fake_monotonic_ns() - 15 * SECOND;
	struct tdstat_record *record;

	/* Closed, so that a fresh agent's figures are the same at any
	 * moment; the open intervals run to its end, or to an
	 * announcement. */
	control->window_start_ns = ws;
	control->window_end_ns = ws + 10 * SECOND;
	for (uint32_t i = 0; i < 300; i++)
		publish_any(i, TDSTAT_STATE_RUNNABLE, 0, ws, ws + 1 * SECOND, 1 * SECOND, 1 * SECOND, TDSTAT_WAIT_SLEEP,
			    0);
	expect_as_fresh("first", true);
	record = fake_record(&target, 7);
	*fake_mark(&target, 7) = 2 * record->seq + 1; /* the change begins */
	expect_as_fresh("marked, not announced", true);
	record->pending_ns = ws + 2 * SECOND; /* announced, never published */
	expect_as_fresh("announced", false);
	expect_as_fresh("still announced", true);
	publish_any(7, TDSTAT_STATE_BLOCKED, TDSTAT_WAIT_SEM, ws, ws + 2 * SECOND, 2 * SECOND, 2 * SECOND,
		    TDSTAT_WAIT_SLEEP, 0);
	expect_as_fresh("published", true);
}
