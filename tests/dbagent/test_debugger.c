/* SPDX-License-Identifier: MIT */
/*
 * A debugger of its own: built on the system <thread_db.h> and
 * <proc_service.h> only, linked with -lc_db, supplying its own ps_*
 * routines the way gdb does (own_proc_service.c).  One variant fails
 * every read: libc_db must say TD_DBERR.
 */
#include <criterion/criterion.h>
#include <proc_service.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <thread_db.h>
#include <unistd.h>

#include "live_target.h"
#include "own_proc_service.h"

TestSuite(debugger, .timeout = 30);

Test(debugger, own_proc_service_drives_libc_db)
{
	struct live_target target;
	struct ps_prochandle ph = { 0 };
	td_thragent_t *ta = NULL;
	td_ta_stats_t stats;
	int n = 0;

	cr_assert(live_start(&target, "condvar", 3, 0, NULL));
	ph.pid = target.pid;
	cr_assert_eq(td_init(), TD_OK);
	cr_assert_eq(td_ta_new(&ph, &ta), TD_OK);
	cr_assert_eq(ph.lookups, 1);
	cr_assert_eq(td_ta_get_nthreads(ta, &n), TD_OK);
	cr_assert_eq(n, 4);
	cr_assert_eq(td_ta_enable_stats(ta, 1), TD_OK);
	cr_assert_eq(td_ta_setconcurrency(ta, 2), TD_OK);
	tdtest_sleep_ms(20);
	cr_assert_eq(td_ta_get_stats(ta, &stats), TD_OK);
	cr_assert_eq(stats.nthreads, 4);
	cr_assert_eq(stats.r_concurrency, 2);
	/* Four threads, short only by the snapshot's edge (tdtest.h). */
	cr_assert_leq(stats.nlwps_num, 4 * stats.nlwps_den);
	/* (the denominator is the window in microseconds) */
	cr_assert_geq((long long)stats.nlwps_num,
		      4 * ((long long)stats.nlwps_den - (long long)(TDTEST_SNAPSHOT_EDGE_NS / 1000)));

	ph.fail_reads = true;
	cr_assert_eq(td_ta_get_stats(ta, &stats), TD_DBERR);
	cr_assert_eq(td_ta_get_nthreads(ta, &n), TD_DBERR);
	cr_assert_eq(td_ta_reset_stats(ta), TD_DBERR);
	ph.fail_reads = false;
	cr_assert_eq(td_ta_get_nthreads(ta, &n), TD_OK);
	cr_assert_eq(td_ta_delete(ta), TD_OK);
	cr_assert_eq(live_stop(&target), 0);
}

Test(debugger, failing_reads_from_the_start)
{
	struct live_target target;
	struct ps_prochandle ph = { .fail_reads = true };
	td_thragent_t *ta = NULL;

	cr_assert(live_start(&target, "condvar", 1, 0, NULL));
	ph.pid = target.pid;
	cr_assert_eq(td_ta_new(&ph, &ta), TD_DBERR);
	cr_assert_null(ta);
	cr_assert_eq(live_stop(&target), 0);
}

Test(debugger, no_shim_no_libthread)
{
	struct live_target target;
	struct live_options options = { .preload = "" };
	struct ps_prochandle ph = { 0 };
	td_thragent_t *ta = NULL;

	cr_assert(live_start(&target, "condvar", 1, 0, &options));
	ph.pid = target.pid;
	cr_assert_eq(td_ta_new(&ph, &ta), TD_NOLIBTHREAD);
	cr_assert_eq(live_stop(&target), 0);
}
