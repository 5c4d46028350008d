/* SPDX-License-Identifier: MIT */
/*
 * Growth (docs/CONTRACT.md §4, "Versions"): the agent reads every region of its ABI major.  The
 * same threads, hand-built as regions of three minors of major 2 and
 * served by the fake target, must give the same numbers:
 *   - minor 0, the first, has no wall-clock anchor (its word is reserved:
 *     whatever it holds, the anchor is reported absent);
 *   - minor 1, this reader's own;
 *   - a newer minor, with a larger header, record and detail (an extra
 *     field appended to every copy moves copy[1], as the layout table
 *     says), garbage in everything this reader does not know: ignored.
 * An agent that refuses an older minor, reads a 2.0 region's reserved
 * word as an anchor, writes it, or reads a newer region with its own
 * struct offsets instead of the layout table's fails here.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <tdstat/thread_db_stats.h>

#include "fake_target.h"

#define SECOND 1000000000ull
#define CAPACITY 16u
/* An anchor no clock gives: found only if the agent reported the word. */
#define ANCHOR INT64_C(1700000000123456789)

static struct ps_prochandle target;

TestSuite(agent_minor, .timeout = 10);

/* How a hand-built region of some minor differs from this reader's. */
struct shape {
	uint16_t minor;
	uint32_t header_extra;      /* bytes past minor 0's header */
	uint16_t copy_extra;        /* bytes appended to each record copy */
	uint16_t detail_copy_extra; /* bytes appended to each detail copy */
	uint32_t changes_word;      /* the header's word at 128: 2.3's changes_offset, padding before */
};

static uint32_t align16(uint32_t n)
{
	return (n + 15u) & ~15u;
}

/*
 * A region shaped like `shape`, as its shim would write it: header,
 * records and details where its header says, the layout table's offsets
 * (fields never move inside a copy; copies move when they grow), and
 * 0xA5 in every byte this reader must not use.
 */
static void build(struct ps_prochandle *ph, const struct shape *shape)
{
	struct tdstat_region_header header;
	uint32_t header_size = TDSTAT_ABI_2_0_HEADER_SIZE + shape->header_extra;
	uint32_t copy_size = sizeof(struct tdstat_record_copy) + shape->copy_extra;
	uint32_t detail_copy_size = sizeof(struct tdstat_detail_copy) + shape->detail_copy_extra;
	uint32_t record_size = align16(16 + 2 * copy_size + 16), detail_size = 2 * detail_copy_size;

	fake_target_init(ph, CAPACITY, 0);
	memcpy(&header, fake_header(ph), sizeof(header));
	free(ph->image);
	ph->image_size = header_size + (size_t)CAPACITY * (record_size + detail_size);
	ph->image = malloc(ph->image_size);
	memset(ph->image, 0xA5, ph->image_size);

	header.abi_minor = shape->minor;
	header.header_size = header_size;
	header.records_offset = header_size;
	header.record_size = record_size;
	header.details_offset = header_size + CAPACITY * record_size;
	header.detail_size = detail_size;
	header.region_size = ph->image_size;
	header.layout.record_copy_size = (uint16_t)copy_size;
	header.layout.detail_copy_size = (uint16_t)detail_copy_size;
	/* A 2.0 shim's reserved word: the anchor's place in 2.1. */
	header.control.realtime_offset_ns = ANCHOR;
	header.changes_offset = shape->changes_word;
	memcpy(ph->image, &header, sizeof(header));
	/* The records: all FREE (seq 0, copy 0 published), their other
	 * bytes left as they are. */
	for (uint32_t i = 0; i < CAPACITY; i++) {
		unsigned char *record = ph->image + header.records_offset + (size_t)i * record_size;
		unsigned char *copy = record + header.layout.record_copies;
		unsigned char *detail = ph->image + header.details_offset + (size_t)i * detail_size;

		memset(record, 0, 16);
		memset(copy, 0, sizeof(struct tdstat_record_copy));
		memset(detail, 0, sizeof(struct tdstat_detail_copy));
	}
}

static struct tdstat_region_header *header_of(struct ps_prochandle *ph)
{
	return (struct tdstat_region_header *)ph->image;
}

/* Writes the published copy of record `index` through the layout table,
 * as the region's own shim would. */
static void set_thread(struct ps_prochandle *ph, uint32_t index, uint32_t state, uint32_t kind, uint64_t epoch,
		       uint64_t since, uint64_t tracked, uint64_t runnable, int idle_kind, uint64_t idle)
{
	struct tdstat_region_header *h = header_of(ph);
	const struct tdstat_layout *l = &h->layout;
	unsigned char *record = ph->image + h->records_offset + (size_t)index * h->record_size;
	unsigned char *copy = record + l->record_copies;
	unsigned char *detail = ph->image + h->details_offset + (size_t)index * h->detail_size + l->detail_copies;
	uint64_t kinds[TDSTAT_WAIT_KIND_COUNT] = { 0 };

	memcpy(record + l->record_pending, &since, 8);
	memcpy(copy + l->state, &state, 4);
	memcpy(copy + l->kind, &kind, 4);
	memcpy(copy + l->epoch_ns, &epoch, 8);
	memcpy(copy + l->since_ns, &since, 8);
	memcpy(copy + l->acc_tracked_ns, &tracked, 8);
	memcpy(copy + l->acc_runnable_ns, &runnable, 8);
	if (idle_kind >= 0)
		kinds[idle_kind] = idle;
	memcpy(detail + l->acc_idle_ns, kinds, sizeof(kinds));
	if (index >= h->status.high_water)
		h->status.high_water = index + 1;
}

/* One closed 10 s window: a thread runnable throughout, one blocked on a
 * condvar for its last 8 s after 1 s of mutex wait, one that ran 3 s
 * and exited.  lwps 23 s, runnable 14 s, idle 1 s mutex + 8 s cond. */
static uint64_t populate(struct ps_prochandle *ph)
{
	struct tdstat_control *control = &header_of(ph)->control;
	uint64_t ws = fake_monotonic_ns() - 15 * SECOND;

	control->window_start_ns = ws;
	control->window_end_ns = ws + 10 * SECOND;
	control->cpu_start_ns = 1 * SECOND;
	control->cpu_end_ns = 5 * SECOND;
	set_thread(ph, 0, TDSTAT_STATE_RUNNABLE, 0, ws - 1, ws - 5 * SECOND, 0, 0, -1, 0);
	set_thread(ph, 1, TDSTAT_STATE_BLOCKED, TDSTAT_WAIT_COND, ws, ws + 2 * SECOND, 2 * SECOND, 1 * SECOND,
		   TDSTAT_WAIT_MUTEX, 1 * SECOND);
	set_thread(ph, 2, TDSTAT_STATE_FREE, 0, ws, ws + 3 * SECOND, 3 * SECOND, 3 * SECOND, -1, 0);
	return ws;
}

static void expect_numbers(const struct shape *shape, uint64_t anchor_expected_if_any)
{
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	td_ta_stats_t s;
	td_thragent_t *ta;
	uint64_t ws;

	build(&target, shape);
	ws = populate(&target);
	cr_assert_eq(td_ta_new(&target, &ta), TD_OK, "minor %u refused", shape->minor);
	cr_assert_eq(td_ta_get_stats_ns(ta, &ns), TD_OK, "minor %u unreadable", shape->minor);
	cr_assert_eq(ns.abi_minor, shape->minor);
	cr_assert_eq(ns.nthreads, 2);
	cr_assert_eq(ns.window_ns, 10 * SECOND);
	cr_assert_eq(ns.lwps_ns, 23 * SECOND);
	cr_assert_eq(ns.runnable_ns, 14 * SECOND);
	cr_assert_eq(ns.idle_ns, 9 * SECOND);
	cr_assert_eq(ns.cpu_ns, 4 * SECOND);
	cr_assert_eq(ns.running_ns, 4 * SECOND);
	cr_assert_eq(ns.kinds, TDSTAT_WAIT_KIND_COUNT);
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		cr_assert_eq(ns.idle_by_kind_ns[k],
			     k == TDSTAT_WAIT_MUTEX ? 1 * SECOND : k == TDSTAT_WAIT_COND ? 8 * SECOND : 0,
			     "minor %u, kind %d", shape->minor, k);
	if (anchor_expected_if_any)
		cr_assert_eq(ns.window_start_realtime_ns, ws + (uint64_t)ANCHOR);
	else
		cr_assert_eq(ns.window_start_realtime_ns, 0, "minor %u: a reserved word read as the anchor",
			     shape->minor);
	cr_assert_eq(td_ta_get_stats(ta, &s), TD_OK);
	cr_assert_eq(s.nlwps_num, 23 * 10000000 / 10);
	cr_assert_eq(s.nlwps_den, 10000000);
	cr_assert_eq(s.nrunnable_num, 14 * 1000000);
	cr_assert_eq(s.a_concurrency_num, 4 * 1000000);
	td_ta_delete(ta);
	fake_target_destroy(&target);
}

Test(agent_minor, minor_0_reads_without_anchor)
{
	expect_numbers(&(struct shape){ .minor = 0 }, 0);
}

Test(agent_minor, minor_1_reports_anchor)
{
	expect_numbers(&(struct shape){ .minor = 1 }, 1);
}

/* The minor before the change marks (2.3): the word where 2.3 keeps
 * changes_offset was padding, and whatever it holds is not read as
 * marks (an agent that did would refuse the region or read garbage as
 * marks). */
Test(agent_minor, minor_2_padding_is_not_change_marks)
{
	expect_numbers(&(struct shape){ .minor = 2, .changes_word = 0xA5A5A5A5u }, 1);
	expect_numbers(&(struct shape){ .minor = 2, .changes_word = TDSTAT_ABI_2_0_HEADER_SIZE }, 1);
}

Test(agent_minor, newer_minor_extra_fields_ignored)
{
	expect_numbers(&(struct shape){ .minor = 7, .header_extra = 128, .copy_extra = 24, .detail_copy_extra = 40 },
		       1);
}

/* The caller of the second version of the struct (no room for the
 * anchor) still gets the kinds, and nothing past its size. */
Test(agent_minor, second_version_caller_gets_kinds)
{
	size_t second = offsetof(td_ta_stats_ns_t, window_start_realtime_ns);
	unsigned char buffer[sizeof(td_ta_stats_ns_t) + 16];
	td_ta_stats_ns_t ns;
	td_thragent_t *ta;

	build(&target, &(struct shape){ .minor = 1 });
	populate(&target);
	cr_assert_eq(td_ta_new(&target, &ta), TD_OK);
	memset(buffer, 0xEE, sizeof(buffer));
	((td_ta_stats_ns_t *)buffer)->size = (uint32_t)second;
	cr_assert_eq(td_ta_get_stats_ns(ta, (td_ta_stats_ns_t *)buffer), TD_OK);
	memcpy(&ns, buffer, second);
	cr_assert_eq(ns.size, second);
	cr_assert_eq(ns.kinds, TDSTAT_WAIT_KIND_COUNT);
	cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_COND], 8 * SECOND);
	for (size_t i = second; i < sizeof(buffer); i++)
		cr_assert_eq(buffer[i], 0xEE, "byte %zu past the caller's size written", i);
	td_ta_delete(ta);
	fake_target_destroy(&target);
}

/* Starting a window writes the anchor into a 2.1 region (CLOCK_REALTIME -
 * CLOCK_MONOTONIC of this machine, within a second), and nothing into
 * 2.0's reserved word (the agent writes only the fields meant for it). */
Test(agent_minor, enable_writes_anchor_only_from_minor_1)
{
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	struct timespec wall, mono;
	td_thragent_t *ta;

	build(&target, &(struct shape){ .minor = 0 });
	cr_assert_eq(td_ta_new(&target, &ta), TD_OK);
	cr_assert_eq(td_ta_enable_stats(ta, 1), TD_OK);
	cr_assert_eq(header_of(&target)->control.realtime_offset_ns, ANCHOR, "2.0's reserved word written");
	cr_assert_eq(td_ta_reset_stats(ta), TD_OK);
	cr_assert_eq(header_of(&target)->control.realtime_offset_ns, ANCHOR, "2.0's reserved word written");
	td_ta_delete(ta);
	fake_target_destroy(&target);

	build(&target, &(struct shape){ .minor = 1 });
	header_of(&target)->control.realtime_offset_ns = 0;
	cr_assert_eq(td_ta_new(&target, &ta), TD_OK);
	cr_assert_eq(td_ta_enable_stats(ta, 1), TD_OK);
	cr_assert_eq(td_ta_get_stats_ns(ta, &ns), TD_OK);
	clock_gettime(CLOCK_REALTIME, &wall);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	int64_t offset = (wall.tv_sec - mono.tv_sec) * (int64_t)SECOND + (wall.tv_nsec - mono.tv_nsec);
	int64_t written = header_of(&target)->control.realtime_offset_ns;
	cr_assert(written > offset - (int64_t)SECOND && written < offset + (int64_t)SECOND,
		  "anchor %lld, this machine's offset %lld", (long long)written, (long long)offset);
	cr_assert_eq(ns.window_start_realtime_ns, ns.window_start_ns + (uint64_t)written);
	td_ta_delete(ta);
	fake_target_destroy(&target);
}

/* TD_VERSION only for another major or a layout that cannot be read. */
Test(agent_minor, version_only_for_another_major_or_smaller_than_2_0)
{
	td_thragent_t *ta;

	build(&target, &(struct shape){ .minor = 0 });
	header_of(&target)->abi_major = TDSTAT_ABI_MAJOR + 1;
	cr_assert_eq(td_ta_new(&target, &ta), TD_VERSION);
	header_of(&target)->abi_major = TDSTAT_ABI_MAJOR;
	header_of(&target)->header_size = TDSTAT_ABI_2_0_HEADER_SIZE - 8;
	cr_assert_eq(td_ta_new(&target, &ta), TD_VERSION);
	header_of(&target)->header_size = TDSTAT_ABI_2_0_HEADER_SIZE;
	header_of(&target)->abi_minor = UINT16_MAX;
	cr_assert_eq(td_ta_new(&target, &ta), TD_OK);
	td_ta_delete(ta);
	fake_target_destroy(&target);
}

/* A newer minor may add a wait kind: a thread blocked in it is blocked
 * time (and the kinds still share out all of it), not a corrupted
 * region; a kind past the region's own list still is. */
Test(agent_minor, newer_minor_kind_is_blocked_time)
{
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	td_thragent_t *ta;
	uint64_t ws, sum = 0;

	build(&target, &(struct shape){ .minor = 7, .detail_copy_extra = 8 });
	header_of(&target)->layout.kind_count = TDSTAT_WAIT_KIND_COUNT + 1;
	ws = populate(&target);
	/* Thread 1 waits in the new kind instead, from 2 s on: 8 s. */
	set_thread(&target, 1, TDSTAT_STATE_BLOCKED, TDSTAT_WAIT_KIND_COUNT, ws, ws + 2 * SECOND, 2 * SECOND,
		   1 * SECOND, TDSTAT_WAIT_MUTEX, 1 * SECOND);
	cr_assert_eq(td_ta_new(&target, &ta), TD_OK);
	cr_assert_eq(td_ta_get_stats_ns(ta, &ns), TD_OK, "a newer kind blinds the reader");
	cr_assert_eq(ns.lwps_ns, 23 * SECOND);
	cr_assert_eq(ns.idle_ns, 9 * SECOND);
	cr_assert_eq(ns.idle_by_kind_ns[TDSTAT_WAIT_COND], 0);
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		sum += ns.idle_by_kind_ns[k];
	cr_assert_eq(sum, ns.idle_ns, "the kinds share out the blocked time");

	set_thread(&target, 1, TDSTAT_STATE_BLOCKED, TDSTAT_WAIT_KIND_COUNT + 1, ws, ws + 2 * SECOND, 2 * SECOND,
		   1 * SECOND, TDSTAT_WAIT_MUTEX, 1 * SECOND);
	cr_assert_eq(td_ta_get_stats_ns(ta, &ns), TD_DBERR, "a kind past the region's list is corrupted");
	td_ta_delete(ta);
	fake_target_destroy(&target);
}

struct newer_kind_walk {
	int handed, blocked_in_newer, without_kinds;
	bool kinds_add_up;
};

static int check_newer_kind_thread(const td_thr_stats_ns_t *thread, void *data)
{
	struct newer_kind_walk *walk = data;
	uint64_t sum = 0;

	walk->handed++;
	if (thread->state == TDSTAT_STATE_BLOCKED && thread->kind == TDSTAT_WAIT_KIND_COUNT)
		walk->blocked_in_newer++;
	cr_assert_leq(thread->kind, TDSTAT_WAIT_KIND_COUNT, "kind %u of record %u names no kind of this library",
		      thread->kind, thread->record);
	for (unsigned int k = 0; k < thread->kinds; k++)
		sum += thread->idle_by_kind_ns[k];
	if (thread->kinds && sum != thread->idle_ns)
		walk->kinds_add_up = false;
	if (!thread->kinds)
		walk->without_kinds++;
	return 0;
}

/* The walk hands a thread blocked in a newer minor's kind out as blocked
 * in no kind this library names (TDSTAT_WAIT_KIND_COUNT), whatever number
 * the region gives that kind, with its blocked time shared out among the
 * kinds as the process figures share it (the fuzzer's crash-2831568b: a
 * region listing 49 kinds, a thread blocked in kind 48, handed out as
 * kind 48). */
Test(agent_minor, newer_minor_kind_walks_as_no_named_kind)
{
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	td_thragent_t *ta;
	uint64_t ws;

	for (uint32_t extra = 1; extra <= 40; extra += 39) {
		struct newer_kind_walk walk = { .kinds_add_up = true };

		build(&target, &(struct shape){ .minor = 7, .detail_copy_extra = 8 });
		header_of(&target)->layout.kind_count = TDSTAT_WAIT_KIND_COUNT + extra;
		ws = populate(&target);
		set_thread(&target, 1, TDSTAT_STATE_BLOCKED, TDSTAT_WAIT_KIND_COUNT + extra - 1, ws, ws + 2 * SECOND,
			   2 * SECOND, 1 * SECOND, TDSTAT_WAIT_MUTEX, 1 * SECOND);
		cr_assert_eq(td_ta_new(&target, &ta), TD_OK);
		cr_assert_eq(td_ta_thr_stats_iter(ta, check_newer_kind_thread, &walk, &ns), TD_OK);
		cr_assert_gt(walk.handed, 1);
		cr_assert_eq(walk.blocked_in_newer, 1, "the thread in kind %u", TDSTAT_WAIT_KIND_COUNT + extra - 1);
		cr_assert(walk.kinds_add_up, "a thread's kinds add up to its idle time");
		cr_assert_eq(walk.without_kinds, 1, "only the thread with time in the newer kind lacks a breakdown");
		td_ta_delete(ta);
		fake_target_destroy(&target);
	}
}
