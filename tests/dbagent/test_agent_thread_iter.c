/* SPDX-License-Identifier: MIT */
/*
 * td_ta_thr_stats_iter (docs/CONTRACT.md §5): every record in use, decoded, with its
 * integrals in the window, checked exactly against hand-made regions; the
 * per-thread figures add up to the process's from the same call.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <tdstat/thread_db_stats.h>

#include "fake_target.h"

#define SECOND 1000000000ull

static struct ps_prochandle target;
static td_thragent_t *agent;

static void setup(void)
{
	fake_target_init(&target, 64, 0);
	cr_assert_eq(td_ta_new(&target, &agent), TD_OK);
}

static void teardown(void)
{
	td_ta_delete(agent);
	fake_target_destroy(&target);
}

TestSuite(agent_thread_iter, .init = setup, .fini = teardown, .timeout = 10);

static struct tdstat_detail_copy *detail_copy(uint32_t index)
{
	struct tdstat_region_header *header = fake_header(&target);
	struct tdstat_detail *detail =
		(struct tdstat_detail *)(target.image + header->details_offset) + index;

	return &detail->copy[fake_record(&target, index)->seq & 1];
}

struct record_values {
	uint32_t state, kind;
	int32_t tid;
	uint32_t generation;
	uint64_t since, tracked, runnable;
	uint64_t object, site;
	uint64_t idle[TDSTAT_WAIT_KIND_COUNT];
};

static void set_record(uint32_t index, uint64_t epoch, const struct record_values *v)
{
	struct tdstat_record_copy *copy;
	struct tdstat_detail_copy *detail;

	fake_record(&target, index)->seq += 2;
	fake_record(&target, index)->pending_ns = v->since;
	copy = fake_copy(&target, index);
	copy->state = v->state;
	copy->kind = v->kind;
	copy->tid = v->tid;
	copy->generation = v->generation;
	copy->epoch_ns = epoch;
	copy->since_ns = v->since;
	copy->acc_tracked_ns = v->tracked;
	copy->acc_runnable_ns = v->runnable;
	detail = detail_copy(index);
	detail->object = v->object;
	detail->site = v->site;
	memcpy(detail->acc_idle_ns, v->idle, sizeof(v->idle));
	if (index >= fake_header(&target)->status.high_water)
		fake_header(&target)->status.high_water = index + 1;
}

#define MAX_SEEN 64
struct seen {
	int count;
	int stop_after; /* 0: never */
	td_thr_stats_ns_t threads[MAX_SEEN];
};

static int remember(const td_thr_stats_ns_t *thread, void *data)
{
	struct seen *seen = data;

	cr_assert_lt(seen->count, MAX_SEEN);
	seen->threads[seen->count++] = *thread;
	return seen->stop_after && seen->count == seen->stop_after;
}

static const td_thr_stats_ns_t *by_record(const struct seen *seen, uint32_t record)
{
	for (int i = 0; i < seen->count; i++)
		if (seen->threads[i].record == record)
			return &seen->threads[i];
	cr_assert_fail("record %u not handed out", record);
	return NULL;
}

/* A closed 10 s window: a thread blocked on a mutex now (its earlier
 * waits were on a condvar), a runnable one, a record whose thread ended
 * after 3 s, one whose figures belong to an older window, and a free
 * record that never took part. */
static uint64_t closed_window(void)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	uint64_t ws = fake_monotonic_ns() - 15 * SECOND, we = ws + 10 * SECOND;

	control->window_start_ns = ws;
	control->window_end_ns = we;
	control->cpu_start_ns = 1 * SECOND;
	control->cpu_end_ns = 3 * SECOND;
	set_record(0, ws, &(struct record_values){
		.state = TDSTAT_STATE_BLOCKED, .kind = TDSTAT_WAIT_MUTEX, .tid = 101, .generation = 1,
		.since = ws + 6 * SECOND, .tracked = 6 * SECOND, .runnable = 2 * SECOND,
		.object = 0x601040, .site = 0x401234, .idle[TDSTAT_WAIT_COND] = 4 * SECOND });
	set_record(1, ws, &(struct record_values){
		.state = TDSTAT_STATE_RUNNABLE, .kind = TDSTAT_WAIT_SLEEP, .tid = 102, .generation = 3,
		.since = ws + 9 * SECOND, .tracked = 9 * SECOND, .runnable = 8 * SECOND,
		.object = 0xdead, .site = 0xbeef, .idle[TDSTAT_WAIT_SLEEP] = 1 * SECOND });
	set_record(2, ws, &(struct record_values){
		.state = TDSTAT_STATE_FREE, .tid = 103, .generation = 2,
		.since = ws + 3 * SECOND, .tracked = 3 * SECOND, .runnable = 1 * SECOND,
		.idle[TDSTAT_WAIT_IO] = 2 * SECOND });
	set_record(3, ws - 1, &(struct record_values){
		.state = TDSTAT_STATE_BLOCKED, .kind = TDSTAT_WAIT_JOIN, .tid = 104, .generation = 1,
		.since = ws - 1, .tracked = 5 * SECOND, .runnable = 5 * SECOND, .object = 0x7000,
		.site = 0x7001, .idle[TDSTAT_WAIT_MUTEX] = 7 * SECOND });
	set_record(4, ws - 1, &(struct record_values){ .state = TDSTAT_STATE_FREE, .since = ws - 1 });
	return ws;
}

Test(agent_thread_iter, closed_window_is_exact)
{
	td_ta_stats_ns_t stats = { .size = sizeof(stats) };
	struct seen seen = { 0 };
	const td_thr_stats_ns_t *t;

	closed_window();
	cr_assert_eq(td_ta_thr_stats_iter(agent, remember, &seen, &stats), TD_OK);
	/* The free record that never took part is left out. */
	cr_assert_eq(seen.count, 4);

	t = by_record(&seen, 0);
	cr_assert_eq(t->size, sizeof(td_thr_stats_ns_t));
	cr_assert_eq(t->state, TDSTAT_STATE_BLOCKED);
	cr_assert_eq(t->tid, 101);
	cr_assert_eq(t->kind, TDSTAT_WAIT_MUTEX);
	cr_assert_eq(t->generation, 1);
	cr_assert_eq(t->object, 0x601040);
	cr_assert_eq(t->site, 0x401234);
	cr_assert_eq(t->lwps_ns, 10 * SECOND);
	cr_assert_eq(t->runnable_ns, 2 * SECOND);
	cr_assert_eq(t->idle_ns, 8 * SECOND);
	cr_assert_eq(t->kinds, TDSTAT_WAIT_KIND_COUNT);
	cr_assert_eq(t->idle_by_kind_ns[TDSTAT_WAIT_COND], 4 * SECOND);
	/* The open wait, up to the window's end, in its own kind. */
	cr_assert_eq(t->idle_by_kind_ns[TDSTAT_WAIT_MUTEX], 4 * SECOND);

	/* Runnable now: no current wait, whatever the detail remembers. */
	t = by_record(&seen, 1);
	cr_assert_eq(t->state, TDSTAT_STATE_RUNNABLE);
	cr_assert_eq(t->tid, 102);
	cr_assert_eq(t->kind, TDSTAT_WAIT_KIND_COUNT);
	cr_assert_eq(t->object, 0);
	cr_assert_eq(t->site, 0);
	cr_assert_eq(t->lwps_ns, 10 * SECOND);
	cr_assert_eq(t->runnable_ns, 9 * SECOND);
	cr_assert_eq(t->idle_by_kind_ns[TDSTAT_WAIT_SLEEP], 1 * SECOND);

	/* Ended: its time stays, with no tid. */
	t = by_record(&seen, 2);
	cr_assert_eq(t->state, TDSTAT_STATE_FREE);
	cr_assert_eq(t->tid, 0);
	cr_assert_eq(t->lwps_ns, 3 * SECOND);
	cr_assert_eq(t->runnable_ns, 1 * SECOND);
	cr_assert_eq(t->idle_by_kind_ns[TDSTAT_WAIT_IO], 2 * SECOND);

	/* Accumulators of an older window count as zero; its open wait
	 * fills the whole window. */
	t = by_record(&seen, 3);
	cr_assert_eq(t->lwps_ns, 10 * SECOND);
	cr_assert_eq(t->runnable_ns, 0);
	cr_assert_eq(t->idle_by_kind_ns[TDSTAT_WAIT_MUTEX], 0);
	cr_assert_eq(t->idle_by_kind_ns[TDSTAT_WAIT_JOIN], 10 * SECOND);

	/* The process figures of the same call. */
	cr_assert_eq(stats.size, sizeof(stats));
	cr_assert_eq(stats.nthreads, 3);
	cr_assert_eq(stats.window_ns, 10 * SECOND);
	cr_assert_eq(stats.lwps_ns, 33 * SECOND);
	cr_assert_eq(stats.runnable_ns, 12 * SECOND);
	cr_assert_eq(stats.cpu_ns, 2 * SECOND);
	cr_assert_eq(stats.kinds, TDSTAT_WAIT_KIND_COUNT);
}

/* Per-thread figures add up to the process's, field by field, and to
 * what td_ta_get_stats_ns says of the same (frozen) window. */
Test(agent_thread_iter, threads_add_up_to_the_process)
{
	td_ta_stats_ns_t stats = { .size = sizeof(stats) }, alone = { .size = sizeof(alone) };
	struct seen seen = { 0 };
	uint64_t lwps = 0, runnable = 0, idle = 0, by_kind[TDSTAT_WAIT_KIND_COUNT] = { 0 };

	closed_window();
	cr_assert_eq(td_ta_thr_stats_iter(agent, remember, &seen, &stats), TD_OK);
	for (int i = 0; i < seen.count; i++) {
		uint64_t kinds = 0;

		lwps += seen.threads[i].lwps_ns;
		runnable += seen.threads[i].runnable_ns;
		idle += seen.threads[i].idle_ns;
		for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++) {
			by_kind[k] += seen.threads[i].idle_by_kind_ns[k];
			kinds += seen.threads[i].idle_by_kind_ns[k];
		}
		cr_assert_eq(kinds, seen.threads[i].idle_ns);
	}
	cr_assert_eq(lwps, stats.lwps_ns);
	cr_assert_eq(runnable, stats.runnable_ns);
	cr_assert_eq(idle, stats.idle_ns);
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		cr_assert_eq(by_kind[k], stats.idle_by_kind_ns[k], "kind %d", k);

	cr_assert_eq(td_ta_get_stats_ns(agent, &alone), TD_OK);
	cr_assert_eq(alone.lwps_ns, stats.lwps_ns);
	cr_assert_eq(alone.runnable_ns, stats.runnable_ns);
	cr_assert_eq(memcmp(alone.idle_by_kind_ns, stats.idle_by_kind_ns, sizeof(stats.idle_by_kind_ns)), 0);
}

/* An open window: a thread blocked since before it began counts the
 * whole window (less the commit lag) as idle in its kind. */
Test(agent_thread_iter, open_window_counts_the_current_wait)
{
	struct tdstat_control *control = &fake_header(&target)->control;
	td_ta_stats_ns_t stats = { .size = sizeof(stats) };
	struct seen seen = { 0 };
	uint64_t ws = fake_monotonic_ns() - 2 * SECOND;

	control->window_start_ns = ws;
	control->window_end_ns = TDSTAT_WINDOW_OPEN;
	set_record(0, ws, &(struct record_values){
		.state = TDSTAT_STATE_BLOCKED, .kind = TDSTAT_WAIT_COND, .tid = 7, .since = ws - SECOND,
		.object = 0x1000, .site = 0x2000 });
	cr_assert_eq(td_ta_thr_stats_iter(agent, remember, &seen, &stats), TD_OK);
	cr_assert_eq(seen.count, 1);
	cr_assert_eq(stats.enabled, 1);
	cr_assert_eq(seen.threads[0].runnable_ns, 0);
	cr_assert_eq(seen.threads[0].idle_by_kind_ns[TDSTAT_WAIT_COND], seen.threads[0].lwps_ns);
	cr_assert_gt(seen.threads[0].lwps_ns, SECOND);
	cr_assert_leq(seen.threads[0].lwps_ns, stats.window_ns);
	cr_assert_eq(seen.threads[0].lwps_ns, stats.lwps_ns);
}

Test(agent_thread_iter, a_callback_stops_the_calls_not_the_sums)
{
	td_ta_stats_ns_t stats = { .size = sizeof(stats) };
	struct seen seen = { .stop_after = 2 };

	closed_window();
	cr_assert_eq(td_ta_thr_stats_iter(agent, remember, &seen, &stats), TD_OK);
	cr_assert_eq(seen.count, 2);
	cr_assert_eq(stats.lwps_ns, 33 * SECOND);
}

Test(agent_thread_iter, stats_are_optional)
{
	struct seen seen = { 0 };

	closed_window();
	cr_assert_eq(td_ta_thr_stats_iter(agent, remember, &seen, NULL), TD_OK);
	cr_assert_eq(seen.count, 4);
}

/* A first-version td_ta_stats_ns_t (no kinds) is filled as far as it goes. */
Test(agent_thread_iter, smaller_stats_get_their_size)
{
	struct {
		td_ta_stats_ns_t stats;
		uint64_t guard;
	} small;
	size_t first = offsetof(td_ta_stats_ns_t, snapshot_ns) + sizeof(uint64_t);
	struct seen seen = { 0 };

	closed_window();
	memset(&small, 0xa5, sizeof(small));
	small.stats.size = (uint32_t)first;
	cr_assert_eq(td_ta_thr_stats_iter(agent, remember, &seen, &small.stats), TD_OK);
	cr_assert_eq(small.stats.size, first);
	cr_assert_eq(small.stats.lwps_ns, 33 * SECOND);
	cr_assert_eq(small.stats.kinds, 0xa5a5a5a5u);
	cr_assert_eq(small.guard, 0xa5a5a5a5a5a5a5a5ull);
}

Test(agent_thread_iter, errors)
{
	td_ta_stats_ns_t stats = { .size = 8 };
	struct seen seen = { 0 };
	td_thragent_t *other;

	cr_assert_eq(td_ta_thr_stats_iter(NULL, remember, &seen, NULL), TD_BADTA);
	cr_assert_eq(td_ta_thr_stats_iter(agent, NULL, &seen, NULL), TD_ERR);
	cr_assert_eq(td_ta_thr_stats_iter(agent, remember, &seen, &stats), TD_ERR);
	cr_assert_eq(seen.count, 0);

	cr_assert_eq(td_ta_new(&target, &other), TD_OK);
	cr_assert_eq(td_ta_delete(other), TD_OK);
	cr_assert_eq(td_ta_thr_stats_iter(other, remember, &seen, NULL), TD_BADTA);

	closed_window();
	target.fail_reads = true;
	cr_assert_eq(td_ta_thr_stats_iter(agent, remember, &seen, NULL), TD_DBERR);
	target.fail_reads = false;

	/* A state no shim writes, or a wait kind past the last. */
	set_record(5, 0, &(struct record_values){ .state = 9 });
	cr_assert_eq(td_ta_thr_stats_iter(agent, remember, &seen, NULL), TD_DBERR);
	set_record(5, 0, &(struct record_values){ .state = TDSTAT_STATE_BLOCKED, .kind = TDSTAT_WAIT_KIND_COUNT });
	cr_assert_eq(td_ta_thr_stats_iter(agent, remember, &seen, NULL), TD_DBERR);
}
