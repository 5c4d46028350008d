/* SPDX-License-Identifier: MIT */
/*
 * A hostile target: corrupted headers, absurd counts and offsets, random
 * bytes.  libc_db must answer with an error or with numbers that keep the
 * invariants, never crash, hang or make a huge allocation.  The address
 * space is limited so that a huge allocation fails, and TD_MALLOC is then
 * the tell.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <tdstat/thread_db_stats.h>

#include "fake_target.h"

static struct ps_prochandle target;

static void limit_address_space(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	/* Sanitizers reserve terabytes of shadow memory up front. */
	return;
#else
	struct rlimit limit;
	char line[256];
	unsigned long size_kb = 0;
	FILE *status = fopen("/proc/self/status", "r");

	while (status && fgets(line, sizeof(line), status))
		if (sscanf(line, "VmSize: %lu kB", &size_kb) == 1)
			break;
	if (status)
		fclose(status);
	/* Room for ordinary work, not for a region-sized buffer. */
	limit.rlim_cur = limit.rlim_max = (size_kb + 192 * 1024) * 1024;
	cr_assert_eq(setrlimit(RLIMIT_AS, &limit), 0);
#endif
}

static void setup(void)
{
	fake_target_init(&target, 64, 64);
	for (uint32_t i = 0; i < 64; i++)
		fake_copy(&target, i)->state = i % 3;
	limit_address_space();
}

static void teardown(void)
{
	fake_target_destroy(&target);
}

TestSuite(agent_hostile, .init = setup, .fini = teardown, .timeout = 30);

static void expect_sane(const td_ta_stats_t *s)
{
	cr_assert_gt(s->nlwps_den, 0);
	cr_assert_leq(s->a_concurrency_num, s->nrunnable_num);
	cr_assert_leq(s->nrunnable_num, s->nlwps_num);
	cr_assert_eq(s->nidle_num, s->nlwps_num - s->nrunnable_num);
	cr_assert_geq(s->a_concurrency_num, 0);
}

/* What td_ta_thr_stats_iter handed out, added up. */
struct thread_sums {
	uint64_t count, lwps, runnable, by_kind[TDSTAT_WAIT_KIND_COUNT];
};

/* Each record keeps the invariants on its own, whatever the region says. */
static int add_thread(const td_thr_stats_ns_t *t, void *data)
{
	struct thread_sums *sums = data;
	uint64_t kinds = 0;

	cr_assert_leq(t->runnable_ns, t->lwps_ns);
	cr_assert_eq(t->idle_ns, t->lwps_ns - t->runnable_ns);
	cr_assert_leq(t->state, TDSTAT_STATE_BLOCKED);
	cr_assert(t->state == TDSTAT_STATE_BLOCKED ? t->kind < TDSTAT_WAIT_KIND_COUNT
						   : t->kind == TDSTAT_WAIT_KIND_COUNT && t->object == 0);
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++) {
		kinds += t->idle_by_kind_ns[k];
		sums->by_kind[k] += t->idle_by_kind_ns[k];
	}
	cr_assert_eq(kinds, t->idle_ns);
	sums->count++;
	sums->lwps += t->lwps_ns;
	sums->runnable += t->runnable_ns;
	return 0;
}

/* The thread iteration: per-record invariants, and records that add up
 * to the process figures of the same call. */
static void exercise_iteration(td_thragent_t *ta)
{
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	struct thread_sums sums = { 0 };
	td_err_e err = td_ta_thr_stats_iter(ta, add_thread, &sums, &ns);

	cr_assert_neq(err, TD_MALLOC);
	if (err != TD_OK)
		return;
	cr_assert_leq(sums.count, 64);
	cr_assert_eq(sums.lwps, ns.lwps_ns);
	cr_assert_eq(sums.runnable, ns.runnable_ns);
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		cr_assert_eq(sums.by_kind[k], ns.idle_by_kind_ns[k]);
}

/* Every call on an agent for the current image: errors are fine,
 * TD_MALLOC (a huge allocation was tried) and crashes are not. */
static void exercise(td_thragent_t *ta)
{
	td_ta_stats_t s;
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	td_err_e err;
	int n;

	exercise_iteration(ta);

	err = td_ta_get_stats(ta, &s);
	cr_assert_neq(err, TD_MALLOC);
	if (err == TD_OK)
		expect_sane(&s);
	err = td_ta_get_stats_ns(ta, &ns);
	cr_assert_neq(err, TD_MALLOC);
	if (err == TD_OK) {
		cr_assert_leq(ns.runnable_ns, ns.lwps_ns);
		cr_assert_leq(ns.running_ns, ns.runnable_ns);
		cr_assert_eq(ns.idle_ns, ns.lwps_ns - ns.runnable_ns);
	}
	cr_assert_neq(td_ta_get_nthreads(ta, &n), TD_MALLOC);
	cr_assert_neq(td_ta_reset_stats(ta), TD_MALLOC);
	cr_assert_neq(td_ta_enable_stats(ta, 1), TD_MALLOC);
}

/* td_ta_new on the corrupted image, and the calls if it was accepted. */
static td_err_e try_image(void)
{
	td_thragent_t *ta = NULL;
	td_err_e err = td_ta_new(&target, &ta);

	cr_assert_neq(err, TD_MALLOC);
	if (err == TD_OK) {
		exercise(ta);
		cr_assert_eq(td_ta_delete(ta), TD_OK);
	}
	return err;
}

Test(agent_hostile, absurd_header_fields)
{
	struct tdstat_region_header *h = fake_header(&target);
	struct tdstat_region_header good = *h;

	h->record_capacity = UINT32_MAX;
	cr_assert_eq(try_image(), TD_DBERR);
	*h = good;
	h->record_capacity = 1u << 22; /* allowed, but far beyond the image */
	h->region_size = UINT64_MAX;
	h->status.high_water = UINT32_MAX;
	try_image();
	*h = good;
	h->record_size = 4096;
	h->record_capacity = 1u << 22;
	h->region_size = UINT64_MAX;
	h->status.high_water = 1u << 22;
	try_image();
	*h = good;
	h->record_size = UINT32_MAX;
	cr_assert_eq(try_image(), TD_DBERR);
	*h = good;
	h->header_size = UINT32_MAX;
	cr_assert_eq(try_image(), TD_DBERR);
	*h = good;
	h->records_offset = 0;
	cr_assert_eq(try_image(), TD_DBERR);
	*h = good;
	h->records_offset = UINT32_MAX;
	h->region_size = UINT64_MAX;
	try_image();
	*h = good;
	h->region_size = 256;
	cr_assert_eq(try_image(), TD_DBERR);
	*h = good;
	h->layout.control_offset = UINT16_MAX;
	cr_assert_eq(try_image(), TD_DBERR);
	*h = good;
	/* A record field outside its copy: a layout this reader cannot read
	 * safely (docs/CONTRACT.md §4). */
	h->layout.acc_runnable_ns = 60;
	cr_assert_eq(try_image(), TD_VERSION);
	*h = good;
	h->record_size = 8;
	cr_assert_eq(try_image(), TD_VERSION);
}

Test(agent_hostile, absurd_times_and_accumulators)
{
	struct tdstat_region_header *h = fake_header(&target);
	uint64_t values[] = { 0, 1, UINT64_MAX, UINT64_MAX - 1, INT64_MAX, fake_monotonic_ns() };
	size_t count = sizeof(values) / sizeof(values[0]);

	for (size_t a = 0; a < count; a++) {
		for (size_t b = 0; b < count; b++) {
			h->control.window_start_ns = values[a];
			h->control.window_end_ns = values[b];
			h->control.cpu_start_ns = values[b];
			h->control.cpu_end_ns = values[a];
			h->status.exit_ns = values[(a + b) % count];
			for (uint32_t i = 0; i < 64; i++) {
				struct tdstat_record_copy *r = fake_copy(&target, i);

				r->epoch_ns = i % 2 ? values[a] : values[b];
				r->since_ns = values[(a + i) % count];
				r->acc_tracked_ns = values[(b + i) % count];
				r->acc_runnable_ns = values[(a + b + i) % count];
			}
			cr_assert_eq(try_image(), TD_OK);
		}
	}
}

Test(agent_hostile, random_header_bytes)
{
	unsigned char good[sizeof(struct tdstat_region_header)];
	unsigned int seed = 2024;

	memcpy(good, target.image, sizeof(good));
	for (int round = 0; round < 2000; round++) {
		int flips = 1 + rand_r(&seed) % 4;

		memcpy(target.image, good, sizeof(good));
		for (int f = 0; f < flips; f++) {
			/* Keep the magic and ABI more often than not, so the
			 * checks behind them are reached. */
			size_t at = 8 + (size_t)rand_r(&seed) % (sizeof(good) - 8);

			target.image[at] = (unsigned char)rand_r(&seed);
		}
		try_image();
	}
}

Test(agent_hostile, random_record_bytes)
{
	unsigned int seed = 77;
	size_t records = 64 * sizeof(struct tdstat_record);
	unsigned char *first = (unsigned char *)fake_record(&target, 0);

	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < records; i++)
			first[i] = (unsigned char)rand_r(&seed);
		/* Even seqs, so the reader looks at the rest. */
		for (uint32_t i = 0; i < 64; i++)
			fake_record(&target, i)->seq &= ~1u;
		try_image();
	}
}

/* Details (kinds, objects, per-kind accumulators) that say anything. */
Test(agent_hostile, random_detail_bytes)
{
	struct tdstat_region_header *h = fake_header(&target);
	unsigned char *details = target.image + h->details_offset;
	unsigned int seed = 99;

	h->control.window_start_ns = fake_monotonic_ns() - 1000000000u;
	h->control.window_end_ns = TDSTAT_WINDOW_OPEN;
	for (uint32_t i = 0; i < 64; i++) {
		fake_copy(&target, i)->epoch_ns = h->control.window_start_ns;
		fake_copy(&target, i)->kind = i % TDSTAT_WAIT_KIND_COUNT;
		fake_copy(&target, i)->acc_tracked_ns = 100000000u + i;
		fake_copy(&target, i)->acc_runnable_ns = i * 1000u;
	}
	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < 64 * sizeof(struct tdstat_detail); i++)
			details[i] = (unsigned char)rand_r(&seed);
		cr_assert_eq(try_image(), TD_OK);
	}
}

/* Every read answers noise, from td_ta_new on. */
Test(agent_hostile, every_read_random)
{
	target.random_reads = true;
	for (int round = 0; round < 500; round++)
		try_image();
}

/* A valid header, then noise. */
Test(agent_hostile, random_after_new)
{
	td_thragent_t *ta = NULL;

	cr_assert_eq(td_ta_new(&target, &ta), TD_OK);
	target.random_reads = true;
	for (int round = 0; round < 200; round++)
		exercise(ta);
	cr_assert_eq(td_ta_delete(ta), TD_OK);
}
