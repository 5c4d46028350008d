/* SPDX-License-Identifier: MIT */
/*
 * MT-safety (docs/CONTRACT.md §5): eight controller threads calling everything at once,
 * on one agent and on agents of their own, while the target changes and
 * while the shared agent is deleted under them.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>

#include <tdstat/thread_db_stats.h>

#include "fake_target.h"

#define CONTROLLERS 8
#define ROUNDS 400

static struct ps_prochandle target;
static td_thragent_t *shared_agent;
static atomic_int failures;

static void setup(void)
{
	fake_target_init(&target, 256, 200);
	for (uint32_t i = 0; i < 200; i++) {
		fake_copy(&target, i)->state = 1 + i % 2;
		fake_copy(&target, i)->since_ns = fake_monotonic_ns();
	}
	cr_assert_eq(td_ta_new(&target, &shared_agent), TD_OK);
}

static void teardown(void)
{
	td_ta_delete(shared_agent);
	fake_target_destroy(&target);
}

TestSuite(agent_threads, .init = setup, .fini = teardown, .timeout = 60);

static void check(bool ok)
{
	if (!ok)
		atomic_fetch_add(&failures, 1);
}

static bool sane(const td_ta_stats_t *s)
{
	return s->nlwps_den > 0 && s->a_concurrency_num <= s->nrunnable_num && s->nrunnable_num <= s->nlwps_num &&
	       s->nidle_num == s->nlwps_num - s->nrunnable_num;
}

static int count_thread(const td_thr_stats_ns_t *thread, void *data)
{
	if (thread->state != TDSTAT_STATE_FREE)
		++*(int *)data;
	return 0;
}

/* Every entry point once; `deleted_ok` when the agent may vanish. */
static void call_everything(td_thragent_t *ta, int round, bool deleted_ok)
{
	struct ps_prochandle *ph;
	td_ta_stats_t s;
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	td_err_e results[8];
	int n = 0, live = 0;

	results[0] = td_ta_get_stats(ta, &s);
	if (results[0] == TD_OK)
		check(sane(&s) && s.nthreads == 200);
	results[1] = td_ta_get_stats_ns(ta, &ns);
	if (results[1] == TD_OK)
		check(ns.runnable_ns <= ns.lwps_ns && ns.running_ns <= ns.runnable_ns);
	results[2] = td_ta_get_nthreads(ta, &n);
	if (results[2] == TD_OK)
		check(n == 200);
	results[3] = td_ta_get_ph(ta, &ph);
	if (results[3] == TD_OK)
		check(ph == &target);
	results[4] = round % 7 == 0 ? td_ta_enable_stats(ta, round % 2) : TD_OK;
	results[5] = round % 5 == 0 ? td_ta_reset_stats(ta) : TD_OK;
	results[6] = td_ta_setconcurrency(ta, round % 4);
	results[7] = td_ta_thr_stats_iter(ta, count_thread, &live, NULL);
	if (results[7] == TD_OK)
		check(live == 200);
	for (int i = 0; i < 8; i++)
		check(results[i] == TD_OK || (deleted_ok && results[i] == TD_BADTA));
}

static void *shared_caller(void *unused)
{
	for (int round = 0; round < ROUNDS; round++)
		call_everything(shared_agent, round, false);
	return NULL;
}

static void *own_agent_caller(void *unused)
{
	for (int round = 0; round < ROUNDS / 4; round++) {
		td_thragent_t *ta = NULL;

		check(td_ta_new(&target, &ta) == TD_OK);
		call_everything(ta, round, false);
		call_everything(shared_agent, round, false);
		check(td_ta_delete(ta) == TD_OK);
		check(td_ta_delete(ta) == TD_BADTA);
	}
	return NULL;
}

static void *racing_caller(void *unused)
{
	for (int round = 0; round < ROUNDS; round++)
		call_everything(shared_agent, round, true);
	return NULL;
}

static void run(void *(*routine)(void *))
{
	pthread_t threads[CONTROLLERS];

	for (int i = 0; i < CONTROLLERS; i++)
		cr_assert_eq(pthread_create(&threads[i], NULL, routine, NULL), 0);
	for (int i = 0; i < CONTROLLERS; i++)
		pthread_join(threads[i], NULL);
}

Test(agent_threads, eight_controllers_one_agent)
{
	run(shared_caller);
	cr_assert_eq(atomic_load(&failures), 0);
}

Test(agent_threads, eight_controllers_own_agents)
{
	run(own_agent_caller);
	cr_assert_eq(atomic_load(&failures), 0);
}

/* The agent is deleted while eight threads use it: each call either
 * completes or says TD_BADTA; nothing is used after it is freed (run this
 * suite under ASan to see that). */
Test(agent_threads, delete_under_callers)
{
	pthread_t threads[CONTROLLERS];
	struct timespec pause = { 0, 5 * 1000 * 1000 };

	for (int i = 0; i < CONTROLLERS; i++)
		cr_assert_eq(pthread_create(&threads[i], NULL, racing_caller, NULL), 0);
	nanosleep(&pause, NULL);
	cr_assert_eq(td_ta_delete(shared_agent), TD_OK);
	for (int i = 0; i < CONTROLLERS; i++)
		pthread_join(threads[i], NULL);
	cr_assert_eq(td_ta_delete(shared_agent), TD_BADTA);
	cr_assert_eq(atomic_load(&failures), 0);
}
