/* SPDX-License-Identifier: MIT */
/*
 * Change marks (ABI 2.3, region.h) against writers that race the agent's
 * reads.  Writers of a fake target follow region.h's protocol (mark odd,
 * announce, write the unpublished copies, publish, mark even) one step at
 * a time, inside the agent's reads: before a read, or between the two
 * halves of one, and some abandon a change half way (siglongjmp,
 * asynchronous cancellation), leaving an announcement without a publish
 * or a mark odd.  One agent keeps records and marks across all of it;
 * whenever the writers rest:
 *
 * - in a closed window, its figures (the walk, record by record, and the
 *   process's) are exactly those of an agent that never saw the target:
 *   a kept record served past a change its mark should have shown, or a
 *   mark kept with bytes older than it, differs;
 * - in an open window, no record's integral and no process integral of
 *   its snapshots ever decreases, and none exceeds what a fresh agent
 *   reads just after: a chunk counted up to a clock taken after the
 *   marks that vouched for it (READER.md, "Change marks") counts the old
 *   state past an announcement made in between, and the publish then
 *   takes it back.
 *
 * Seeds are fixed.  The open-window runs sleep inside a few reads so
 * that the clocks of one snapshot are milliseconds apart (the margin of
 * reader_clock is 1 ms); chunks_vouched_for_by_marks_count_to_their_clock
 * places such a pause where the clock rule of the marks matters.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tdstat/thread_db_stats.h>

#include "fake_target.h"

#define SECOND 1000000000ull

/* One writer's change in progress (region.h's latch, and the marks). */
enum step { AT_REST, MARKED, ANNOUNCED, WRITTEN, PUBLISHED };

struct writer {
	enum step step;
	bool clocked;
	uint64_t moment;
};

static struct race {
	struct ps_prochandle target;
	unsigned rng;
	uint32_t capacity, active;
	struct writer *writers;
	bool open;               /* the writers date changes by the clock */
	bool racing;             /* writers step inside reads */
	unsigned step_percent;   /* reads with writer steps before them */
	unsigned cut_percent;    /* reads cut in two by writer steps */
	unsigned pause_percent;  /* reads that take 2.5 ms */
	/* The caching agent's last figures, per record and the process's,
	 * in the window that started at `start`. */
	uint64_t start;
	uint64_t *lwps, *runnable;
	uint64_t process_lwps, process_runnable;
	td_thr_stats_ns_t *kept, *fresh;
} race;

static unsigned pick(unsigned n)
{
	return (unsigned)rand_r(&race.rng) % n;
}

static struct tdstat_detail *detail_of(uint32_t index)
{
	struct tdstat_region_header *header = fake_header(&race.target);

	return (struct tdstat_detail *)(race.target.image + header->details_offset) + index;
}

/* One step of record `index`'s writer, as runtime/region.c makes them. */
static void writer_step(uint32_t index)
{
	struct tdstat_record *record = fake_record(&race.target, index);
	struct tdstat_control *control = &fake_header(&race.target)->control;
	uint32_t *mark = fake_mark(&race.target, index);
	struct writer *w = &race.writers[index];
	uint32_t seq = record->seq;
	const struct tdstat_record_copy *old = &record->copy[seq & 1];
	struct tdstat_record_copy *next = &record->copy[(seq + 1) & 1];
	struct tdstat_detail *detail = detail_of(index);
	struct tdstat_detail_copy *next_detail = &detail->copy[(seq + 1) & 1];

	if (index >= fake_header(&race.target)->status.high_water)
		fake_header(&race.target)->status.high_water = index + 1;
	switch (w->step) {
	case AT_REST:
		*mark = 2 * seq + 1;
		w->step = MARKED;
		break;
	case MARKED:
		if (pick(10) == 0) { /* abandoned: the mark stays odd */
			w->step = AT_REST;
			break;
		}
		w->clocked = control->window_end_ns == TDSTAT_WINDOW_OPEN ||
			     (control->window_start_ns < control->window_end_ns && old->since_ns < control->window_end_ns);
		w->moment = race.open ? fake_monotonic_ns() : old->since_ns + 1 + pick(300) * 1000000ull;
		if (w->moment <= old->since_ns)
			w->moment = old->since_ns + 1;
		if (w->clocked)
			record->pending_ns = w->moment;
		w->step = ANNOUNCED;
		break;
	case ANNOUNCED:
		if (pick(10) == 0) { /* abandoned after the announcement */
			w->step = AT_REST;
			break;
		}
		*next = *old;
		*next_detail = detail->copy[seq & 1];
		if (pick(8) == 0) { /* a new owner */
			next->tid = 1000 + (int)pick(1000);
			next->generation++;
		} else {
			uint64_t start = control->window_start_ns, end = control->window_end_ns;
			uint64_t from = old->epoch_ns == start && old->since_ns > start ? old->since_ns : start;
			uint64_t to = w->moment < end ? w->moment : end;
			uint64_t span = to > from ? to - from : 0;
			unsigned state = pick(3);

			if (w->clocked) {
				if (old->epoch_ns != start) {
					next->acc_tracked_ns = next->acc_runnable_ns = 0;
					memset(next_detail->acc_idle_ns, 0, sizeof(next_detail->acc_idle_ns));
				}
				if (old->state != TDSTAT_STATE_FREE) {
					next->acc_tracked_ns += span;
					if (old->state == TDSTAT_STATE_RUNNABLE)
						next->acc_runnable_ns += span;
					else
						next_detail->acc_idle_ns[old->kind] += span;
				}
				next->epoch_ns = start;
				next->since_ns = w->moment;
			}
			next->state = state;
			next->kind = state == TDSTAT_STATE_BLOCKED ? pick(TDSTAT_WAIT_KIND_COUNT) : 0;
			next_detail->object = pick(1000);
			next_detail->woken_ns = w->moment;
		}
		w->step = WRITTEN;
		break;
	case WRITTEN:
		if (pick(12) == 0) { /* abandoned before the publish */
			w->step = AT_REST;
			break;
		}
		record->seq = seq + 1;
		w->step = PUBLISHED;
		break;
	case PUBLISHED:
		if (pick(12) != 0) /* else abandoned: the mark stays odd */
			*mark = 2 * seq;
		w->step = AT_REST;
		break;
	}
}

/* A few steps, mostly of neighbouring records (threads queuing on one
 * lock), sometimes of any; sometimes a new thread. */
static void writers_run(void)
{
	unsigned steps = 1 + pick(pick(4) == 0 ? 64 : 4);
	uint32_t around = pick(race.active);

	for (unsigned k = 0; k < steps; k++)
		writer_step(pick(3) ? (around + pick(40)) % race.active : pick(race.active));
	if (pick(50) == 0 && race.active < race.capacity) {
		uint32_t more = race.active + 1 + pick(20);

		race.active = more < race.capacity ? more : race.capacity;
	}
}

static size_t on_read(struct ps_prochandle *ph, size_t size, bool mid)
{
	(void)ph;
	if (!race.racing)
		return 0;
	if (mid) {
		writers_run();
		return 0;
	}
	if (pick(100) < race.step_percent)
		writers_run();
	if (pick(100) < race.pause_percent)
		nanosleep(&(struct timespec){ 0, 2500000 }, NULL);
	return size > 16 && pick(100) < race.cut_percent ? (1 + pick((unsigned)(size / 8 - 1))) * 8 : 0;
}

static void race_start(unsigned seed, uint32_t capacity, bool open)
{
	uint64_t start = fake_monotonic_ns() - 100 * SECOND;

	memset(&race, 0, sizeof(race));
	race.rng = seed;
	race.capacity = capacity;
	race.active = 1 + pick(capacity);
	race.open = open;
	race.step_percent = 5 + pick(60);
	race.cut_percent = pick(40);
	race.pause_percent = open ? 3 : 0;
	race.writers = calloc(capacity, sizeof(*race.writers));
	race.lwps = calloc(capacity, sizeof(*race.lwps));
	race.runnable = calloc(capacity, sizeof(*race.runnable));
	race.kept = calloc(capacity, sizeof(*race.kept));
	race.fresh = calloc(capacity, sizeof(*race.fresh));
	cr_assert(race.writers && race.lwps && race.runnable && race.kept && race.fresh);
	fake_target_init(&race.target, capacity, race.active);
	fake_target_add_marks(&race.target);
	race.target.on_read = on_read;
	fake_header(&race.target)->control.window_start_ns = start;
	fake_header(&race.target)->control.window_end_ns = open ? TDSTAT_WINDOW_OPEN : start + 50 * SECOND;
	for (uint32_t i = 0; i < capacity; i++) {
		struct tdstat_record *record = fake_record(&race.target, i);

		record->copy[0].state = TDSTAT_STATE_RUNNABLE;
		record->copy[0].epoch_ns = start;
		record->copy[0].since_ns = start - SECOND;
	}
}

static void race_end(void)
{
	fake_target_destroy(&race.target);
	free(race.writers);
	free(race.lwps);
	free(race.runnable);
	free(race.kept);
	free(race.fresh);
}

/* A new window (or a frozen one): the integrals start again. */
static void figures_follow_window(void)
{
	uint64_t start = fake_header(&race.target)->control.window_start_ns;

	if (start == race.start)
		return;
	race.start = start;
	memset(race.lwps, 0, race.capacity * sizeof(*race.lwps));
	memset(race.runnable, 0, race.capacity * sizeof(*race.runnable));
	race.process_lwps = race.process_runnable = 0;
}

static void never_decreases(const td_thr_stats_ns_t *thread)
{
	uint32_t i = thread->record;

	cr_assert_lt(i, race.capacity);
	if (!race.open)
		return;
	cr_assert_geq(thread->lwps_ns, race.lwps[i], "record %u: lwps %" PRIu64 " after %" PRIu64, i, thread->lwps_ns,
		      race.lwps[i]);
	cr_assert_geq(thread->runnable_ns, race.runnable[i], "record %u: runnable %" PRIu64 " after %" PRIu64, i,
		      thread->runnable_ns, race.runnable[i]);
	race.lwps[i] = thread->lwps_ns;
	race.runnable[i] = thread->runnable_ns;
}

static void process_never_decreases(const td_ta_stats_ns_t *ns)
{
	if (!race.open)
		return;
	cr_assert_geq(ns->lwps_ns, race.process_lwps, "lwps %" PRIu64 " after %" PRIu64, ns->lwps_ns, race.process_lwps);
	cr_assert_geq(ns->runnable_ns, race.process_runnable, "runnable %" PRIu64 " after %" PRIu64, ns->runnable_ns,
		      race.process_runnable);
	race.process_lwps = ns->lwps_ns;
	race.process_runnable = ns->runnable_ns;
}

static int keep_kept(const td_thr_stats_ns_t *thread, void *data)
{
	(void)data;
	never_decreases(thread);
	race.kept[thread->record] = *thread;
	return 0;
}

static int keep_fresh(const td_thr_stats_ns_t *thread, void *data)
{
	(void)data;
	cr_assert_lt(thread->record, race.capacity);
	race.fresh[thread->record] = *thread;
	return 0;
}

/* One of the calls that keep records, with the writers racing it. */
static void racing_call(td_thragent_t *agent)
{
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	td_ta_stats_t stats;
	td_err_e err;

	race.racing = true;
	switch (pick(4)) {
	case 0:
		err = td_ta_get_stats_ns(agent, &ns);
		break;
	case 1: /* without the kinds */
		ns.size = offsetof(td_ta_stats_ns_t, kinds);
		err = td_ta_get_stats_ns(agent, &ns);
		break;
	case 2:
		err = td_ta_thr_stats_iter(agent, keep_kept, NULL, &ns);
		break;
	default:
		ns.size = 0;
		err = td_ta_get_stats(agent, &stats);
		break;
	}
	race.racing = false;
	cr_assert_eq(err, TD_OK);
	if (ns.size)
		process_never_decreases(&ns);
}

static void expect_same(const td_ta_stats_ns_t *kept, const td_ta_stats_ns_t *fresh, const char *what, int round)
{
	cr_assert_eq(kept->nthreads, fresh->nthreads, "round %d %s", round, what);
	cr_assert_eq(kept->lwps_ns, fresh->lwps_ns, "round %d %s: lwps %" PRIu64 " against %" PRIu64, round, what,
		     kept->lwps_ns, fresh->lwps_ns);
	cr_assert_eq(kept->runnable_ns, fresh->runnable_ns, "round %d %s: runnable %" PRIu64 " against %" PRIu64, round,
		     what, kept->runnable_ns, fresh->runnable_ns);
	cr_assert_eq(kept->idle_ns, fresh->idle_ns, "round %d %s", round, what);
	cr_assert_eq(kept->counted_ns, fresh->counted_ns, "round %d %s", round, what);
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		cr_assert_eq(kept->idle_by_kind_ns[k], fresh->idle_by_kind_ns[k], "round %d %s: kind %d", round, what, k);
}

/* The writers at rest: the caching agent against one that never saw the
 * target. */
static void expect_as_fresh(td_thragent_t *agent, int round)
{
	td_ta_stats_ns_t process = { .size = sizeof(process) }, kept = { .size = sizeof(kept) };
	td_ta_stats_ns_t fresh = { .size = sizeof(fresh) };
	struct tdstat_control *control = &fake_header(&race.target)->control;
	bool process_first = pick(2);
	td_thragent_t *other;

	memset(race.kept, 0, race.capacity * sizeof(*race.kept));
	memset(race.fresh, 0, race.capacity * sizeof(*race.fresh));
	if (process_first) {
		cr_assert_eq(td_ta_get_stats_ns(agent, &process), TD_OK);
		process_never_decreases(&process);
	}
	cr_assert_eq(td_ta_thr_stats_iter(agent, keep_kept, NULL, &kept), TD_OK);
	process_never_decreases(&kept);
	cr_assert_eq(td_ta_new(&race.target, &other), TD_OK);
	cr_assert_eq(td_ta_thr_stats_iter(other, keep_fresh, NULL, &fresh), TD_OK);
	td_ta_delete(other);
	/* Open (or frozen just now): the fresh agent read later, and has
	 * all that the caching one had. */
	if (control->window_end_ns == TDSTAT_WINDOW_OPEN || control->window_end_ns + SECOND / 50 > fake_monotonic_ns()) {
		for (uint32_t i = 0; i < race.capacity; i++) {
			cr_assert_leq(race.kept[i].lwps_ns, race.fresh[i].lwps_ns, "round %d record %u", round, i);
			cr_assert_eq(race.kept[i].since_ns, race.fresh[i].since_ns, "round %d record %u", round, i);
			cr_assert_eq(race.kept[i].state, race.fresh[i].state, "round %d record %u", round, i);
		}
		return;
	}
	expect_same(&kept, &fresh, "the walk", round);
	if (process_first)
		expect_same(&process, &fresh, "the process", round);
	for (uint32_t i = 0; i < race.capacity; i++)
		cr_assert(memcmp(&race.kept[i], &race.fresh[i], sizeof(race.fresh[i])) == 0,
			  "round %d record %u: lwps %" PRIu64 " against %" PRIu64 ", since %" PRIu64 " against %" PRIu64,
			  round, i, race.kept[i].lwps_ns, race.fresh[i].lwps_ns, race.kept[i].since_ns,
			  race.fresh[i].since_ns);
}

/* A controller between snapshots: reset, enable, disable.  A change the
 * writers computed in the old window is abandoned (the shim's own change
 * that straddles a controller's write is region.c's documented case, not
 * the marks'). */
static void controller_step(td_thragent_t *agent)
{
	switch (pick(3)) {
	case 0:
		cr_assert_eq(td_ta_reset_stats(agent), TD_OK);
		break;
	case 1:
		cr_assert_eq(td_ta_enable_stats(agent, 1), TD_OK);
		break;
	default:
		cr_assert_eq(td_ta_enable_stats(agent, 0), TD_OK);
		/* A disable ends the window commit_lag_ns before the
		 * controller's clock, before where a snapshot just before it
		 * counted a RUNNABLE record: the integrals of that window
		 * start again here (a controller's matter, not the marks'). */
		race.start = 0;
		break;
	}
	for (uint32_t i = 0; i < race.capacity; i++)
		if (race.writers[i].step != AT_REST && race.writers[i].step != PUBLISHED)
			race.writers[i].step = AT_REST;
	race.open = fake_header(&race.target)->control.window_end_ns == TDSTAT_WINDOW_OPEN;
}

static void race_run(unsigned seed, uint32_t capacity, bool open, bool controller, int rounds)
{
	td_thragent_t *agent;

	race_start(seed, capacity, open);
	cr_assert_eq(td_ta_new(&race.target, &agent), TD_OK);
	for (int round = 0; round < rounds; round++) {
		if (controller && pick(6) == 0)
			controller_step(agent);
		figures_follow_window();
		for (int calls = 1 + (int)pick(4); calls > 0; calls--)
			racing_call(agent);
		for (unsigned k = pick(3); k > 0; k--)
			writers_run();
		expect_as_fresh(agent, round);
	}
	td_ta_delete(agent);
	race_end();
}

TestSuite(agent_marks_race, .timeout = 60);

/* A whole change of record `index` (region.h's latch and its marks):
 * `state` from `moment` on, the time since the last change closed. */
static void change_at(uint32_t index, uint32_t state, uint64_t moment)
{
	struct tdstat_record *record = fake_record(&race.target, index);
	uint64_t start = fake_header(&race.target)->control.window_start_ns;
	const struct tdstat_record_copy *old = &record->copy[record->seq & 1];
	struct tdstat_record_copy *next = &record->copy[(record->seq + 1) & 1];
	uint64_t from = old->since_ns > start ? old->since_ns : start;

	*fake_mark(&race.target, index) = 2 * record->seq + 1;
	record->pending_ns = moment;
	*next = *old;
	next->acc_tracked_ns += moment - from;
	if (old->state == TDSTAT_STATE_RUNNABLE)
		next->acc_runnable_ns += moment - from;
	next->state = state;
	next->kind = TDSTAT_WAIT_MUTEX;
	next->since_ns = moment;
	record->seq++;
	*fake_mark(&race.target, index) = 2 * record->seq;
}

/* The record whose announcement lands in the middle of a snapshot. */
#define ANNOUNCED_RECORD 300u
static uint64_t announced_at;

/* At the first read of one record (the span of the first chunk, read
 * after the marks of every chunk), record 300 of the second chunk
 * announces a change, and the snapshot goes on 3 ms later. */
static size_t announce_in_first_chunk(struct ps_prochandle *ph, size_t size, bool mid)
{
	struct tdstat_record *record = fake_record(ph, ANNOUNCED_RECORD);

	if (mid || announced_at || size != sizeof(struct tdstat_record))
		return 0;
	*fake_mark(ph, ANNOUNCED_RECORD) = 2 * record->seq + 1;
	announced_at = fake_monotonic_ns();
	record->pending_ns = announced_at;
	nanosleep(&(struct timespec){ 0, 3000000 }, NULL);
	return 0;
}

static int keep_record(const td_thr_stats_ns_t *thread, void *data)
{
	if (thread->record == ANNOUNCED_RECORD)
		*(td_thr_stats_ns_t *)data = *thread;
	return 0;
}

/*
 * The marks of a snapshot vouch for the records they cover as of when
 * they were read: every chunk served by them is counted up to the clock
 * taken before that read (READER.md, "Change marks").  Here the first
 * chunk has a record to read after the marks, and while it is read a
 * record of the second chunk announces a change; the second chunk, as
 * kept by its marks, must not count that record RUNNABLE past the
 * announcement, or the publish (BLOCKED from then on) takes it back.
 */
Test(agent_marks_race, chunks_vouched_for_by_marks_count_to_their_clock)
{
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	td_thr_stats_ns_t before = { 0 }, after = { 0 };
	td_thragent_t *agent;

	race_start(1, 700, true);
	fake_header(&race.target)->status.high_water = 700;
	cr_assert_eq(td_ta_new(&race.target, &agent), TD_OK);
	cr_assert_eq(td_ta_thr_stats_iter(agent, keep_record, &before, &ns), TD_OK);
	/* Record 5 moves on: the first chunk's span, read after the marks. */
	change_at(5, TDSTAT_STATE_BLOCKED, fake_monotonic_ns());
	announced_at = 0;
	race.target.on_read = announce_in_first_chunk;
	cr_assert_eq(td_ta_thr_stats_iter(agent, keep_record, &before, &ns), TD_OK);
	race.target.on_read = NULL;
	cr_assert_neq(announced_at, 0, "no single record was read");
	/* The change lands: BLOCKED since its announcement. */
	{
		struct tdstat_record *record = fake_record(&race.target, ANNOUNCED_RECORD);
		uint32_t seq = record->seq;

		change_at(ANNOUNCED_RECORD, TDSTAT_STATE_BLOCKED, announced_at);
		cr_assert_eq(record->seq, seq + 1);
	}
	cr_assert_eq(td_ta_thr_stats_iter(agent, keep_record, &after, &ns), TD_OK);
	cr_assert_geq(after.runnable_ns, before.runnable_ns,
		      "runnable %" PRIu64 " after %" PRIu64 ": counted %" PRIu64 " ns past the announcement",
		      after.runnable_ns, before.runnable_ns, before.runnable_ns - after.runnable_ns);
	cr_assert_geq(after.lwps_ns, before.lwps_ns);
	td_ta_delete(agent);
	race_end();
}

/* 300 and 700 records: one chunk, and a last chunk partly used; 9,000: a
 * second read of marks (8,192 at a time) in the middle of a snapshot. */
Test(agent_marks_race, a_closed_window_reads_as_fresh)
{
	for (unsigned seed = 1; seed <= 12; seed++)
		race_run(seed, seed % 3 ? 300 + 400 * (seed % 2) : 1024, false, false, 40);
	race_run(13, 9000, false, false, 6);
}

Test(agent_marks_race, an_open_window_never_decreases)
{
	for (unsigned seed = 21; seed <= 28; seed++)
		race_run(seed, seed % 2 ? 700 : 300, true, false, 30);
	race_run(29, 9000, true, false, 5);
}

Test(agent_marks_race, controllers_between_snapshots)
{
	for (unsigned seed = 41; seed <= 48; seed++)
		race_run(seed, seed % 2 ? 700 : 300, seed % 3 == 0, true, 40);
}
