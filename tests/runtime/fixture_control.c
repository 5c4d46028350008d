/* SPDX-License-Identifier: MIT */
/*
 * rt_control SCENARIO: gathering switched on, off and reset through the
 * control block, the way a controller writes it, and integrals computed
 * as a reader does.
 *
 *   start:  prints the control block as the shim left it at start
 *           (run with and without TDSTAT_ENABLE=1).
 *   cycle:  two tracked threads for the whole run: main (RUNNABLE: it
 *           only spins, never waits in an interposed call) and a helper
 *           (BLOCKED in sem_wait, except when told to run).  Snapshots:
 *             off0    before any enable: empty
 *             on1     after enable + spin
 *             on2     later
 *             off1    after disable
 *             off2    later, after the helper ran and blocked again
 *             reset0  after a reset while off: empty
 *             on3     after enable + spin
 *             reset1  after a reset while on + spin
 *             on4     after the helper ran for a while inside the window
 *           With both threads alive before every window start, exact
 *           equalities hold: tracked = 2|W|, and while the helper stays
 *           blocked runnable = idle = |W|.
 *   race N: four threads ping-pong through semaphores (state changes all
 *           the time) while main enables, snapshots, disables and
 *           snapshots N times.  Every thread lives through every window,
 *           so each snapshot must have tracked = 5|W| exactly; prints
 *           how many did not (a state change racing a control write
 *           that loses or adds time).
 */
#define _GNU_SOURCE
#include "fixture.h"

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPIN_NS (30 * 1000000ull)

static sem_t wake, ran;
static pid_t helper_tid;

static void *helper_body(void *arg)
{
	(void)arg;
	__atomic_store_n(&helper_tid, fx_gettid(), __ATOMIC_SEQ_CST);
	for (;;) {
		sem_wait(&wake);
		fx_spin_ns(SPIN_NS); /* RUNNABLE for a while */
		sem_post(&ran);
	}
	return NULL;
}

/* Lets the helper run once and waits (spinning, so main stays RUNNABLE)
 * until it is BLOCKED again. */
static void run_helper_once(void)
{
	uint64_t deadline = fx_now_ns() + FX_TIMEOUT_MS * 1000000ull;

	sem_post(&wake);
	while (sem_trywait(&ran)) {
		if (fx_now_ns() > deadline)
			fx_die("helper did not run");
		sched_yield();
	}
	if (!fx_wait_state(helper_tid, TDSTAT_STATE_BLOCKED))
		fx_die("helper did not block again");
}

static void take(const char *name)
{
	struct fx_snapshot snapshot = fx_snapshot();

	fx_print_snapshot(name, &snapshot);
}

static void print_control(void)
{
	struct tdstat_region *region = fx_region();
	const struct tdstat_control *control = &region->header.control;

	printf("enabled=%d\n", control->window_end_ns == TDSTAT_WINDOW_OPEN);
	printf("window_empty=%d\n", control->window_start_ns == control->window_end_ns);
	printf("window_start_after_shim_start=%d\n",
	       control->window_start_ns >= region->header.status.start_ns);
	printf("window_start_before_now=%d\n", control->window_start_ns <= fx_now_ns());
	printf("r_concurrency=%d\n", control->r_concurrency);
}

static int start(void)
{
	print_control();
	fx_spin_ns(SPIN_NS);
	take("start");
	return 0;
}

static int cycle(void)
{
	pthread_t helper;

	sem_init(&wake, 0, 0);
	sem_init(&ran, 0, 0);
	pthread_create(&helper, NULL, helper_body, NULL);
	while (!__atomic_load_n(&helper_tid, __ATOMIC_SEQ_CST))
		sched_yield();
	if (!fx_wait_state(helper_tid, TDSTAT_STATE_BLOCKED))
		fx_die("helper never blocked");

	fx_spin_ns(SPIN_NS);
	take("off0");
	fx_enable();
	fx_spin_ns(SPIN_NS);
	take("on1");
	fx_spin_ns(SPIN_NS);
	take("on2");
	fx_disable();
	take("off1");
	fx_spin_ns(SPIN_NS);
	run_helper_once();
	fx_spin_ns(SPIN_NS);
	take("off2");
	fx_reset();
	fx_spin_ns(SPIN_NS);
	take("reset0");
	fx_enable();
	fx_spin_ns(SPIN_NS);
	take("on3");
	fx_reset();
	fx_spin_ns(SPIN_NS);
	take("reset1");
	run_helper_once();
	take("on4");
	return 0;
}

#define PINGERS 4

static sem_t pings[PINGERS];
static int stop;

static void *pinger(void *arg)
{
	int self = (int)(intptr_t)arg;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		sem_post(&pings[(self + 1) % PINGERS]);
		sem_wait(&pings[self]);
	}
	sem_post(&pings[(self + 1) % PINGERS]);
	return NULL;
}

static int lost[2], extra[2], impossible;

/* when: 0 while on, 1 after a disable */
static void check(const struct fx_snapshot *s, int when)
{
	uint64_t expected = (1 + PINGERS) * s->window_ns;

	if (s->tracked_ns < expected)
		lost[when]++;
	if (s->tracked_ns > expected || s->runnable_ns > s->tracked_ns)
		extra[when]++;
	if ((s->tracked_ns != expected || s->runnable_ns > s->tracked_ns) &&
	    lost[0] + lost[1] + extra[0] + extra[1] <= 3)
		printf("example.%s.%d=|W| %llu tracked %llu (expected %llu) runnable %llu\n",
		       when ? "off" : "on", lost[0] + lost[1] + extra[0] + extra[1],
		       (unsigned long long)s->window_ns, (unsigned long long)s->tracked_ns,
		       (unsigned long long)expected, (unsigned long long)s->runnable_ns);
	impossible += s->impossible;
}

static int race(unsigned rounds)
{
	pthread_t threads[PINGERS];
	for (int i = 0; i < PINGERS; i++)
		sem_init(&pings[i], 0, 0);
	for (int i = 0; i < PINGERS; i++)
		pthread_create(&threads[i], NULL, pinger, (void *)(intptr_t)i);
	fx_spin_ns(SPIN_NS);
	for (unsigned i = 0; i < rounds; i++) {
		struct fx_snapshot snapshot;

		fx_enable();
		fx_spin_ns(20000);
		snapshot = fx_snapshot();
		check(&snapshot, 0);
		fx_disable();
		fx_spin_ns(20000);
		snapshot = fx_snapshot();
		check(&snapshot, 1);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < PINGERS; i++)
		pthread_join(threads[i], NULL);
	printf("rounds=%u\n", rounds);
	printf("lost_on=%d\n", lost[0]);
	printf("lost_off=%d\n", lost[1]);
	printf("extra_on=%d\n", extra[0]);
	printf("extra_off=%d\n", extra[1]);
	printf("impossible=%d\n", impossible);
	return 0;
}

int main(int argc, char **argv)
{
	fx_region();
	if (argc == 3 && !strcmp(argv[1], "race"))
		return race((unsigned)strtoul(argv[2], NULL, 10));
	if (argc == 2 && !strcmp(argv[1], "start"))
		return start();
	if (argc == 2 && !strcmp(argv[1], "cycle"))
		return cycle();
	fx_die("usage: rt_control start|cycle|race N");
}
