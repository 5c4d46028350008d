/* SPDX-License-Identifier: MIT */
/*
 * The region's ABI: every field at the offset region.h documents (numbers
 * written out here, not recomputed), and the shim's exported symbol large
 * enough and filled in to match.
 */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <tdstat/region.h>

#include "rt_test.h"

#define AT(type, field, offset)                                                           \
	cr_expect_eq(offsetof(type, field), (size_t)(offset), #type "." #field ": at %zu, documented %d", \
		     offsetof(type, field), (offset))

/* The documented offsets of the fields of region.h's lists, written out:
 * a field added to a list without its offset here, or one that moved,
 * fails. */
struct pinned {
	const char *name;
	size_t offset;
};

static const struct pinned record_copy_offsets[] = {
	{ "state", 0 },           { "kind", 4 },      { "tid", 8 },
	{ "generation", 12 },     { "epoch_ns", 16 }, { "since_ns", 24 },
	{ "acc_tracked_ns", 32 }, { "acc_runnable_ns", 40 },
};

static const struct pinned detail_copy_offsets[] = {
	{ "object", 0 }, { "site", 8 }, { "woken_ns", 16 }, { "acc_idle_ns", 24 },
};

/* The offsets the lists give, in the same form. */
#define ACTUAL_RECORD(type, name, dims) { #name, offsetof(struct tdstat_record_copy, name) },
static const struct pinned record_copy_actual[] = { TDSTAT_RECORD_COPY_FIELDS(ACTUAL_RECORD) };
#undef ACTUAL_RECORD
#define ACTUAL_DETAIL(type, name, dims) { #name, offsetof(struct tdstat_detail_copy, name) },
static const struct pinned detail_copy_actual[] = { TDSTAT_DETAIL_COPY_FIELDS(ACTUAL_DETAIL) };
#undef ACTUAL_DETAIL

#define COUNT(table) (sizeof(table) / sizeof((table)[0]))

/* Every field of a list at its documented offset, and no documented
 * field missing from the list. */
static void expect_pinned(const char *what, const struct pinned *documented, size_t documented_count,
			  const struct pinned *actual, size_t actual_count)
{
	for (size_t a = 0; a < actual_count; a++) {
		size_t d = 0;

		while (d < documented_count && strcmp(documented[d].name, actual[a].name) != 0)
			d++;
		if (d == documented_count)
			cr_expect_fail("%s.%s (at %zu): no documented offset in tests/runtime/test_layout.c", what,
				       actual[a].name, actual[a].offset);
		else
			cr_expect_eq(actual[a].offset, documented[d].offset, "%s.%s: at %zu, documented %zu", what,
				     actual[a].name, actual[a].offset, documented[d].offset);
	}
	cr_expect_eq(actual_count, documented_count, "%s: %zu fields in the list, %zu documented", what,
		     actual_count, documented_count);
}

Test(layout, record)
{
	cr_expect_eq(sizeof(struct tdstat_record_copy), 48);
	expect_pinned("struct tdstat_record_copy", record_copy_offsets, COUNT(record_copy_offsets),
		      record_copy_actual, COUNT(record_copy_actual));
	cr_expect_eq(sizeof(struct tdstat_record), 128);
	AT(struct tdstat_record, seq, 0);
	AT(struct tdstat_record, pending_ns, 8);
	AT(struct tdstat_record, copy, 16);
	AT(struct tdstat_record, reserved, 112);
}

Test(layout, detail)
{
	cr_expect_eq(sizeof(struct tdstat_detail_copy), 128);
	expect_pinned("struct tdstat_detail_copy", detail_copy_offsets, COUNT(detail_copy_offsets),
		      detail_copy_actual, COUNT(detail_copy_actual));
	cr_expect_eq(TDSTAT_WAIT_KIND_COUNT, 11);
	AT(struct tdstat_detail_copy, reserved, 112);
	cr_expect_eq(sizeof(struct tdstat_detail), 256);
}

Test(layout, control)
{
	cr_expect_eq(sizeof(struct tdstat_control), 64);
	AT(struct tdstat_control, window_start_ns, 0);
	AT(struct tdstat_control, window_end_ns, 8);
	AT(struct tdstat_control, cpu_start_ns, 16);
	AT(struct tdstat_control, cpu_end_ns, 24);
	AT(struct tdstat_control, generation, 32);
	AT(struct tdstat_control, r_concurrency, 40);
	AT(struct tdstat_control, rewriting, 48);
	AT(struct tdstat_control, realtime_offset_ns, 56);
}

Test(layout, status)
{
	cr_expect_eq(sizeof(struct tdstat_status), 64);
	AT(struct tdstat_status, high_water, 0);
	AT(struct tdstat_status, capacity, 4);
	AT(struct tdstat_status, overflow_live, 8);
	AT(struct tdstat_status, overflow_total, 16);
	AT(struct tdstat_status, start_ns, 24);
	AT(struct tdstat_status, exit_ns, 32);
	AT(struct tdstat_status, pid, 40);
	AT(struct tdstat_status, reserved, 48);
}

Test(layout, header_and_region)
{
	cr_expect_eq(sizeof(struct tdstat_layout), 48);
	AT(struct tdstat_layout, control_offset, 0);
	AT(struct tdstat_layout, state, 16);
	AT(struct tdstat_layout, object, 32);
	AT(struct tdstat_layout, kind_count, 40);
	cr_expect_eq(sizeof(struct tdstat_region_header), 320);
	AT(struct tdstat_region_header, magic, 0);
	AT(struct tdstat_region_header, abi_major, 8);
	AT(struct tdstat_region_header, abi_minor, 10);
	AT(struct tdstat_region_header, header_size, 12);
	AT(struct tdstat_region_header, region_size, 16);
	AT(struct tdstat_region_header, records_offset, 24);
	AT(struct tdstat_region_header, record_size, 28);
	AT(struct tdstat_region_header, record_capacity, 32);
	AT(struct tdstat_region_header, layout_size, 36);
	AT(struct tdstat_region_header, details_offset, 40);
	AT(struct tdstat_region_header, detail_size, 44);
	AT(struct tdstat_region_header, commit_lag_ns, 48);
	AT(struct tdstat_region_header, layout, 56);
	AT(struct tdstat_region_header, control, 192);
	AT(struct tdstat_region_header, status, 256);
	AT(struct tdstat_region, records, 320);
	AT(struct tdstat_region, details, 320 + 128 * 32768);
	/* 2.2: the tracking block after the details, found from the header. */
	AT(struct tdstat_region_header, sync_offset, 120);
	AT(struct tdstat_region_header, sync_size, 124);
	AT(struct tdstat_region, sync, 320 + (128 + 256) * (size_t)32768);
	/* 2.3: the change marks after it, found from the header too. */
	AT(struct tdstat_region_header, changes_offset, 128);
	AT(struct tdstat_region, changes, 320 + (128 + 256) * (size_t)32768 + 192 + 128 * (size_t)TDSTAT_SYNC_CAPACITY);
	cr_expect_eq(sizeof(struct tdstat_region),
		     320 + (128 + 256) * (size_t)32768 + 192 + 128 * (size_t)TDSTAT_SYNC_CAPACITY + 4 * (size_t)32768);
	/* The marks' order: each record's own word in its block of 256, the
	 * next record's on another cache line (16 words). */
	bool seen[TDSTAT_CHANGES_BLOCK] = { false };
	for (uint32_t r = 0; r < TDSTAT_CHANGES_BLOCK; r++) {
		uint32_t slot = tdstat_change_slot(512 + r);

		cr_assert(slot >= 512 && slot < 512 + TDSTAT_CHANGES_BLOCK, "record %u's mark outside its block", r);
		cr_expect(!seen[slot - 512], "two records share a mark");
		seen[slot - 512] = true;
		if (r > 0)
			cr_expect_neq(slot / 16, tdstat_change_slot(512 + r - 1) / 16, "records %u and %u on one line", r - 1, r);
	}
	AT(struct tdstat_sync_header, gate_mutex, 0);
	AT(struct tdstat_sync_header, gate_rwlock, 4);
	AT(struct tdstat_sync_header, gate_sem_wait, 8);
	AT(struct tdstat_sync_header, gate_sem_post, 12);
	AT(struct tdstat_sync_header, control, 16);
	AT(struct tdstat_sync_header, entries_offset, 64);
	AT(struct tdstat_sync_header, entry_size, 68);
	AT(struct tdstat_sync_header, capacity, 72);
	AT(struct tdstat_sync_header, probes, 76);
	AT(struct tdstat_sync_header, hold_sample, 80);
	AT(struct tdstat_sync_header, counts, 84);
	AT(struct tdstat_sync_header, used, 128);
	AT(struct tdstat_sync_header, overflow, 136);
	AT(union tdstat_sync_gate, half.shim, 0);
	AT(union tdstat_sync_gate, half.tracking, 2);
	AT(struct tdstat_sync_entry, key, 0);
	AT(struct tdstat_sync_entry, hold_start_ns, 8);
	AT(struct tdstat_sync_entry, hold_epoch, 16);
	AT(struct tdstat_sync_entry, hold_samples, 24);
	AT(struct tdstat_sync_entry, hold_sampled_ns, 32);
	AT(struct tdstat_sync_entry, count, 40);
	cr_expect_eq(TDSTAT_REGION_MAGIC, 0x0152746174736474ull);
	cr_expect_eq(memcmp(&(uint64_t){ TDSTAT_REGION_MAGIC }, "tdstatR\x01", 8), 0,
		     "magic reads \"tdstatR\\x01\" in memory");
}

Test(layout, shim_exports_matching_region)
{
	struct rt_output out = rt_run("rt_layout", NULL, NULL);

	rt_expect_string(&out, "symbol_name", TDSTAT_REGION_SYMBOL);
	rt_expect_int(&out, "symbol_is_start", 1);
	rt_expect_int(&out, "symbol_size_ok", 1);
	rt_expect_int(&out, "symbol_object", 1);
	rt_expect_int(&out, "symbol_global", 1);
	cr_expect(strstr(rt_string(&out, "object"), TDSTAT_SHIM_SONAME) != NULL,
		  "the region should come from the shim");
	rt_expect_int(&out, "magic_ok", 1);
	rt_expect_int(&out, "abi_major", TDSTAT_ABI_MAJOR);
	rt_expect_int(&out, "abi_minor", TDSTAT_ABI_MINOR);
	rt_expect_int(&out, "header_size", 320);
	rt_expect_int(&out, "records_offset", 320);
	rt_expect_int(&out, "record_size", 128);
	rt_expect_int(&out, "record_capacity", TDSTAT_RECORD_CAPACITY);
	rt_expect_int(&out, "layout_size", 48);
	rt_expect_int(&out, "layout_ok", 1);
	rt_expect_int(&out, "details_ok", 1);
	rt_expect_int(&out, "commit_lag_ns", TDSTAT_COMMIT_LAG_NS);
	rt_expect_int(&out, "region_size_ok", 1);
	rt_expect_int(&out, "changes_ok", 1);
	rt_expect_int(&out, "status_capacity", TDSTAT_RECORD_CAPACITY);
	rt_expect_int(&out, "status_pid_ok", 1);
	rt_expect_int(&out, "status_start_set", 1);
	rt_expect_int(&out, "status_exit_ns", 0);
	rt_expect_int(&out, "main_record", 1);
	rt_free(&out);
}
