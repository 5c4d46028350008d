/* SPDX-License-Identifier: MIT */
/*
 * MT-safety against a live target whose threads change state as fast as
 * they can (a mutex queue with no hold time): eight controller threads
 * call everything at once, on one shared agent and on agents of their own.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>

#include <tdstat/ps_live.h>
#include <tdstat/thread_db_stats.h>

#include "live_target.h"

#define CONTROLLERS 8
#define ROUNDS 60
#define WORKERS 4

static struct live_target target;
static struct ps_prochandle *shared_ph;
static td_thragent_t *shared_agent;
static atomic_int failures;

static void setup(void)
{
	cr_assert(live_start(&target, "mutex", WORKERS, 0, NULL));
	cr_assert_eq(tdps_open(target.pid, &shared_ph), TDPS_OK);
	cr_assert_eq(td_ta_new(shared_ph, &shared_agent), TD_OK);
}

static void teardown(void)
{
	td_ta_delete(shared_agent);
	tdps_close(shared_ph);
	live_stop(&target);
}

TestSuite(live_threads, .init = setup, .fini = teardown, .timeout = 60);

static void check(bool ok, const char *what, int err)
{
	if (!ok) {
		fprintf(stderr, "live_threads: %s (%d)\n", what, err);
		atomic_fetch_add(&failures, 1);
	}
}

static void call_everything(td_thragent_t *ta, int round)
{
	td_ta_stats_t s;
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	td_err_e err;
	int n = 0;

	err = td_ta_get_stats(ta, &s);
	check(err == TD_OK, "get_stats", err);
	if (err == TD_OK)
		check(s.nthreads == WORKERS + 1 && s.nlwps_den > 0 && s.a_concurrency_num <= s.nrunnable_num &&
			      s.nrunnable_num <= s.nlwps_num && s.nidle_num == s.nlwps_num - s.nrunnable_num,
		      "stats invariants", s.nthreads);
	err = td_ta_get_stats_ns(ta, &ns);
	check(err == TD_OK, "get_stats_ns", err);
	if (err == TD_OK)
		check(ns.running_ns <= ns.runnable_ns && ns.runnable_ns <= ns.lwps_ns &&
			      ns.lwps_ns <= (WORKERS + 1) * ns.window_ns,
		      "ns invariants", 0);
	err = td_ta_get_nthreads(ta, &n);
	check(err == TD_OK && n == WORKERS + 1, "nthreads", n);
	err = td_ta_setconcurrency(ta, round % 5);
	check(err == TD_OK, "setconcurrency", err);
	if (round % 10 == 3) {
		err = td_ta_reset_stats(ta);
		check(err == TD_OK, "reset", err);
	}
	if (round % 10 == 7) {
		err = td_ta_enable_stats(ta, 1);
		check(err == TD_OK, "enable", err);
	}
}

static void *shared_caller(void *unused)
{
	for (int round = 0; round < ROUNDS; round++)
		call_everything(shared_agent, round);
	return NULL;
}

static void *own_caller(void *unused)
{
	struct ps_prochandle *ph;
	td_thragent_t *ta;

	check(tdps_open(target.pid, &ph) == TDPS_OK, "tdps_open", 0);
	check(td_ta_new(ph, &ta) == TD_OK, "td_ta_new", 0);
	for (int round = 0; round < ROUNDS; round++) {
		call_everything(ta, round);
		call_everything(shared_agent, round);
	}
	check(td_ta_delete(ta) == TD_OK, "td_ta_delete", 0);
	tdps_close(ph);
	return NULL;
}

static void run(void *(*routine)(void *))
{
	pthread_t threads[CONTROLLERS];

	for (int i = 0; i < CONTROLLERS; i++)
		cr_assert_eq(pthread_create(&threads[i], NULL, routine, NULL), 0);
	for (int i = 0; i < CONTROLLERS; i++)
		pthread_join(threads[i], NULL);
	cr_assert_eq(atomic_load(&failures), 0);
}

Test(live_threads, eight_controllers_one_agent)
{
	run(shared_caller);
}

Test(live_threads, eight_controllers_own_agents)
{
	run(own_caller);
}
