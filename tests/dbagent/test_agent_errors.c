/* SPDX-License-Identifier: MIT */
/*
 * libc_db's error contract (docs/CONTRACT.md §5) against a fake target.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <tdstat/thread_db_stats.h>

#include "fake_target.h"

static struct ps_prochandle target;

static void setup(void)
{
	fake_target_init(&target, 16, 2);
	fake_copy(&target, 0)->state = TDSTAT_STATE_BLOCKED;
	fake_copy(&target, 1)->state = TDSTAT_STATE_RUNNABLE;
}

static void teardown(void)
{
	fake_target_destroy(&target);
}

TestSuite(agent_errors, .init = setup, .fini = teardown, .timeout = 10);

Test(agent_errors, init_log_symbol_list)
{
	const char **symbols = td_symbol_list();

	cr_assert_eq(td_init(), TD_OK);
	cr_assert_eq(td_log(), TD_OK);
	cr_assert_not_null(symbols);
	cr_assert_str_eq(symbols[0], TDSTAT_REGION_SYMBOL);
	cr_assert_null(symbols[1]);
}

Test(agent_errors, new_checks_its_arguments)
{
	td_thragent_t *ta = NULL;

	cr_assert_eq(td_ta_new(NULL, &ta), TD_BADPH);
	cr_assert_eq(td_ta_new(&target, NULL), TD_ERR);
	cr_assert_null(ta);
}

Test(agent_errors, new_passes_the_shim_as_hint)
{
	td_thragent_t *ta = NULL;

	cr_assert_eq(td_ta_new(&target, &ta), TD_OK);
	cr_assert_str_eq(target.last_object, TDSTAT_SHIM_SONAME);
	cr_assert_eq(td_ta_delete(ta), TD_OK);
}

Test(agent_errors, no_symbol_is_no_libthread)
{
	td_thragent_t *ta = NULL;

	target.lookup_result = PS_NOSYM;
	cr_assert_eq(td_ta_new(&target, &ta), TD_NOLIBTHREAD);
	target.lookup_result = PS_ERR;
	cr_assert_eq(td_ta_new(&target, &ta), TD_DBERR);
	target.lookup_result = PS_BADADDR;
	cr_assert_eq(td_ta_new(&target, &ta), TD_DBERR);
	cr_assert_null(ta);
}

Test(agent_errors, failed_read_is_dberr)
{
	td_thragent_t *ta = NULL;

	target.fail_reads = true;
	cr_assert_eq(td_ta_new(&target, &ta), TD_DBERR);
	cr_assert_null(ta);
}

Test(agent_errors, other_abi_is_version)
{
	td_thragent_t *ta = NULL;

	fake_header(&target)->abi_major = TDSTAT_ABI_MAJOR + 1;
	cr_assert_eq(td_ta_new(&target, &ta), TD_VERSION);
	fake_header(&target)->abi_major = TDSTAT_ABI_MAJOR;
	fake_header(&target)->magic ^= 1;
	cr_assert_eq(td_ta_new(&target, &ta), TD_VERSION);
	fake_header(&target)->magic ^= 1;
	fake_header(&target)->layout_size = 8;
	cr_assert_eq(td_ta_new(&target, &ta), TD_VERSION);
	cr_assert_null(ta);
}

Test(agent_errors, newer_minor_is_read)
{
	td_thragent_t *ta = NULL;
	td_ta_stats_ns_t stats = { .size = sizeof(stats) };

	fake_header(&target)->abi_minor = TDSTAT_ABI_MINOR + 3;
	cr_assert_eq(td_ta_new(&target, &ta), TD_OK);
	cr_assert_eq(td_ta_get_stats_ns(ta, &stats), TD_OK);
	cr_assert_eq(stats.abi_minor, TDSTAT_ABI_MINOR + 3);
	cr_assert_eq(td_ta_delete(ta), TD_OK);
}

static void expect_every_call(const td_thragent_t *ta, td_err_e expected)
{
	struct ps_prochandle *ph;
	td_ta_stats_t stats;
	td_ta_stats_ns_t stats_ns = { .size = sizeof(stats_ns) };
	int n;

	cr_assert_eq(td_ta_get_ph(ta, &ph), expected);
	cr_assert_eq(td_ta_get_nthreads(ta, &n), expected);
	cr_assert_eq(td_ta_setconcurrency(ta, 2), expected);
	cr_assert_eq(td_ta_enable_stats(ta, 1), expected);
	cr_assert_eq(td_ta_enable_stats(ta, 0), expected);
	cr_assert_eq(td_ta_reset_stats(ta), expected);
	cr_assert_eq(td_ta_get_stats(ta, &stats), expected);
	cr_assert_eq(td_ta_get_stats_ns(ta, &stats_ns), expected);
}

Test(agent_errors, null_deleted_unknown_agent_is_badta)
{
	td_thragent_t *ta = NULL;
	uint64_t not_an_agent[64] = { 0 };

	expect_every_call(NULL, TD_BADTA);
	expect_every_call((td_thragent_t *)not_an_agent, TD_BADTA);
	cr_assert_eq(td_ta_delete(NULL), TD_BADTA);
	cr_assert_eq(td_ta_delete((td_thragent_t *)not_an_agent), TD_BADTA);

	cr_assert_eq(td_ta_new(&target, &ta), TD_OK);
	expect_every_call(ta, TD_OK);
	cr_assert_eq(td_ta_delete(ta), TD_OK);
	expect_every_call(ta, TD_BADTA);
	cr_assert_eq(td_ta_delete(ta), TD_BADTA);
}

Test(agent_errors, null_results_are_err)
{
	td_thragent_t *ta = NULL;
	td_ta_stats_ns_t small = { .size = offsetof(td_ta_stats_ns_t, snapshot_ns) };

	cr_assert_eq(td_ta_new(&target, &ta), TD_OK);
	cr_assert_eq(td_ta_get_ph(ta, NULL), TD_ERR);
	cr_assert_eq(td_ta_get_nthreads(ta, NULL), TD_ERR);
	cr_assert_eq(td_ta_get_stats(ta, NULL), TD_ERR);
	cr_assert_eq(td_ta_get_stats_ns(ta, NULL), TD_ERR);
	cr_assert_eq(td_ta_get_stats_ns(ta, &small), TD_ERR);
	cr_assert_eq(td_ta_setconcurrency(ta, -1), TD_ERR);
	cr_assert_eq(td_ta_delete(ta), TD_OK);
}

Test(agent_errors, get_ph_gives_the_handle)
{
	td_thragent_t *ta = NULL;
	struct ps_prochandle *ph = NULL;

	cr_assert_eq(td_ta_new(&target, &ta), TD_OK);
	cr_assert_eq(td_ta_get_ph(ta, &ph), TD_OK);
	cr_assert_eq(ph, &target);
	cr_assert_eq(td_ta_delete(ta), TD_OK);
}

Test(agent_errors, failing_reads_later_are_dberr)
{
	td_thragent_t *ta = NULL;
	td_ta_stats_t stats;
	td_ta_stats_ns_t stats_ns = { .size = sizeof(stats_ns) };
	int n;

	cr_assert_eq(td_ta_new(&target, &ta), TD_OK);
	target.fail_reads = true;
	cr_assert_eq(td_ta_get_nthreads(ta, &n), TD_DBERR);
	cr_assert_eq(td_ta_get_stats(ta, &stats), TD_DBERR);
	cr_assert_eq(td_ta_get_stats_ns(ta, &stats_ns), TD_DBERR);
	cr_assert_eq(td_ta_enable_stats(ta, 1), TD_DBERR);
	cr_assert_eq(td_ta_reset_stats(ta), TD_DBERR);
	target.fail_reads = false;
	cr_assert_eq(td_ta_get_nthreads(ta, &n), TD_OK);
	cr_assert_eq(n, 2);
	cr_assert_eq(td_ta_delete(ta), TD_OK);
}

/* Every prefix of a control write fails: the control block must come out
 * exactly as it went in. */
Test(agent_errors, failing_write_leaves_nothing_half_done)
{
	td_thragent_t *ta = NULL;
	struct tdstat_control before;
	int fail_after;

	cr_assert_eq(td_ta_new(&target, &ta), TD_OK);
	for (fail_after = 0; fail_after < 4; fail_after++) {
		before = fake_header(&target)->control;
		target.writes_before_failure = fail_after;
		cr_assert_eq(td_ta_enable_stats(ta, 1), TD_DBERR, "enable, failing after %d writes", fail_after);
		target.writes_before_failure = -1;
		cr_assert_eq(memcmp(&before, &fake_header(&target)->control, sizeof(before)), 0);
	}
	cr_assert_eq(td_ta_enable_stats(ta, 1), TD_OK);
	for (fail_after = 0; fail_after < 3; fail_after++) {
		before = fake_header(&target)->control;
		target.writes_before_failure = fail_after;
		cr_assert_eq(td_ta_reset_stats(ta), TD_DBERR);
		cr_assert_eq(memcmp(&before, &fake_header(&target)->control, sizeof(before)), 0);
		target.writes_before_failure = fail_after;
		cr_assert_eq(td_ta_enable_stats(ta, 0), TD_DBERR);
		target.writes_before_failure = -1;
		cr_assert_eq(memcmp(&before, &fake_header(&target)->control, sizeof(before)), 0);
	}
	target.writes_before_failure = 0;
	cr_assert_eq(td_ta_setconcurrency(ta, 4), TD_DBERR);
	target.writes_before_failure = -1;
	cr_assert_eq(fake_header(&target)->control.r_concurrency, 0);
	cr_assert_eq(td_ta_delete(ta), TD_OK);
}

/* A region rewritten under an agent (an exec, say) is not trusted. */
Test(agent_errors, changed_header_is_dberr)
{
	td_thragent_t *ta = NULL;
	td_ta_stats_t stats;

	cr_assert_eq(td_ta_new(&target, &ta), TD_OK);
	fake_header(&target)->record_capacity = 1u << 21;
	cr_assert_eq(td_ta_get_stats(ta, &stats), TD_DBERR);
	cr_assert_eq(td_ta_delete(ta), TD_OK);
}

/* ABI 2.3's change marks where the region says, or nowhere: marks past
 * the region's end, inside the header or unaligned are a corrupted
 * region (TD_DBERR), not a read out of bounds; none at all (0) is an
 * older writer's way and reads as before. */
Test(agent_errors, change_marks_outside_the_region_are_dberr)
{
	static const uint32_t bad[] = { 16, 0, 2 };
	td_thragent_t *ta = NULL;
	td_ta_stats_t stats;

	fake_target_add_marks(&target);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint32_t good = fake_header(&target)->changes_offset;

		/* 16: inside the header; 0 (with the region cut short): past
		 * the end; 2: unaligned, past the end too. */
		fake_header(&target)->changes_offset = bad[i] ? bad[i] : good;
		if (!bad[i])
			fake_header(&target)->region_size = good + 4;
		if (bad[i] == 2)
			fake_header(&target)->changes_offset = good + 2;
		cr_assert_eq(td_ta_new(&target, &ta), TD_DBERR, "case %zu", i);
		fake_header(&target)->changes_offset = good;
		fake_header(&target)->region_size = target.image_size;
	}
	fake_header(&target)->changes_offset = 0;
	cr_assert_eq(td_ta_new(&target, &ta), TD_OK);
	cr_assert_eq(td_ta_get_stats(ta, &stats), TD_OK);
	cr_assert_eq(td_ta_delete(ta), TD_OK);
}
