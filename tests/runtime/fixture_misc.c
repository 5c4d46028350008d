/* SPDX-License-Identifier: MIT */
/*
 * rt_misc SCENARIO:
 *   concurrency   pthread_setconcurrency/getconcurrency and the region's
 *                 r_concurrency, both ways.
 *   signal_post   a SIGUSR1 handler calls sem_post while the thread waits
 *                 in sem_wait; the wait returns.
 *   signal_nested the handler also waits (poll with a timeout) itself:
 *                 an interposed wait nested in one.
 *   mutex_counter the shim handles default mutexes itself: four threads
 *                 increment a counter under one mutex (lock, trylock,
 *                 timedlock) and hand a token around with a condvar.
 *   adopt         a thread made by thrd_create (not through the
 *                 interposed pthread_create) waits in sem_wait: it gets
 *                 a record then, BLOCKED, and loses it when it ends.
 *   main_exit     main calls pthread_exit while another thread lives:
 *                 main's record is freed, the process goes on.
 *   threads       three threads wait in sem_wait (run with two copies of
 *                 the shim preloaded): one record each, and main's, in a
 *                 region with its magic.
 */
#define _GNU_SOURCE
#include "fixture.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

static int concurrency(void)
{
	struct tdstat_control *control = &fx_region()->header.control;

	printf("initial_get=%d\n", pthread_getconcurrency());
	printf("initial_region=%d\n", control->r_concurrency);
	printf("set4=%d\n", pthread_setconcurrency(4));
	printf("after_set_get=%d\n", pthread_getconcurrency());
	printf("after_set_region=%d\n", control->r_concurrency);
	printf("set_negative=%s\n", pthread_setconcurrency(-1) == EINVAL ? "EINVAL" : "accepted");
	printf("after_negative_get=%d\n", pthread_getconcurrency());
	/* a controller's td_ta_setconcurrency */
	__atomic_store_n(&control->r_concurrency, 7, __ATOMIC_SEQ_CST);
	printf("after_controller_get=%d\n", pthread_getconcurrency());
	printf("set0=%d\n", pthread_setconcurrency(0));
	printf("after_set0_get=%d\n", pthread_getconcurrency());
	printf("after_set0_region=%d\n", control->r_concurrency);
	return 0;
}

static sem_t sem;
static bool nested;
static volatile sig_atomic_t handled;
static pid_t waiter_tid;
static int waiter_done;

static void on_sigusr1(int signal)
{
	int saved = errno;

	(void)signal;
	if (nested)
		poll(NULL, 0, 5);
	sem_post(&sem);
	handled = 1;
	errno = saved;
}

static void *waiter(void *arg)
{
	struct fx_record after;
	int result, interrupted = 0;

	(void)arg;
	__atomic_store_n(&waiter_tid, fx_gettid(), __ATOMIC_SEQ_CST);
	while ((result = sem_wait(&sem)) == -1 && errno == EINTR)
		interrupted++;
	__atomic_store_n(&waiter_done, 1, __ATOMIC_SEQ_CST);
	after = fx_record_of(fx_gettid());
	printf("wait_result=%d\n", result);
	printf("handled=%d\n", handled);
	printf("state_after=%s\n", fx_state_name(after.state));
	printf("settled=%d\n", after.settled);
	return NULL;
}

static int signal_post(void)
{
	struct sigaction action = { .sa_handler = on_sigusr1 };
	uint64_t deadline = fx_now_ns() + FX_TIMEOUT_MS * 1000000ull;
	pthread_t thread;
	int value = -1;

	sigaction(SIGUSR1, &action, NULL);
	sem_init(&sem, 0, 0);
	pthread_create(&thread, NULL, waiter, NULL);
	while (!__atomic_load_n(&waiter_tid, __ATOMIC_SEQ_CST))
		sched_yield();
	printf("observed=%s\n",
	       fx_wait_state(waiter_tid, TDSTAT_STATE_BLOCKED) ? "BLOCKED" : "never-BLOCKED");
	fflush(stdout);
	pthread_kill(thread, SIGUSR1);
	while (!__atomic_load_n(&waiter_done, __ATOMIC_SEQ_CST)) {
		if (fx_now_ns() > deadline)
			fx_die("sem_wait did not return after the handler's sem_post");
		sched_yield();
	}
	pthread_join(thread, NULL);
	sem_getvalue(&sem, &value);
	printf("sem_value=%d\n", value);
	return 0;
}

#define COUNTER_THREADS 4
#define COUNTER_ROUNDS 100000

static pthread_mutex_t counter_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t token_cond = PTHREAD_COND_INITIALIZER;
static long counter;
static int token, token_passes;

static void *increment(void *arg)
{
	int self = (int)(intptr_t)arg;

	for (int i = 0; i < COUNTER_ROUNDS; i++) {
		struct timespec at;

		switch (i % 3) {
		case 0:
			pthread_mutex_lock(&counter_mutex);
			break;
		case 1:
			while (pthread_mutex_trylock(&counter_mutex))
				sched_yield();
			break;
		default:
			clock_gettime(CLOCK_REALTIME, &at);
			at.tv_sec += 60;
			if (pthread_mutex_timedlock(&counter_mutex, &at))
				fx_die("timedlock failed");
		}
		counter++;
		pthread_mutex_unlock(&counter_mutex);
	}
	/* pass a token round the threads 100 times through one condvar */
	pthread_mutex_lock(&counter_mutex);
	for (int round = 0; round < 100; round++) {
		while (token != self)
			pthread_cond_wait(&token_cond, &counter_mutex);
		token = (token + 1) % COUNTER_THREADS;
		token_passes++;
		pthread_cond_broadcast(&token_cond);
	}
	pthread_mutex_unlock(&counter_mutex);
	return NULL;
}

static int mutex_counter(void)
{
	pthread_t threads[COUNTER_THREADS];

	for (int i = 0; i < COUNTER_THREADS; i++)
		pthread_create(&threads[i], NULL, increment, (void *)(intptr_t)i);
	for (int i = 0; i < COUNTER_THREADS; i++)
		pthread_join(threads[i], NULL);
	printf("counter_ok=%d\n", counter == (long)COUNTER_THREADS * COUNTER_ROUNDS);
	printf("token_passes_ok=%d\n", token_passes == COUNTER_THREADS * 100);
	printf("mutex_free=%d\n", pthread_mutex_trylock(&counter_mutex) == 0);
	printf("live_end=%d\n", fx_live_records());
	return 0;
}

static sem_t adopt_gate;
static pid_t adopted_tid;

static int adopted_body(void *arg)
{
	(void)arg;
	__atomic_store_n(&adopted_tid, fx_gettid(), __ATOMIC_SEQ_CST);
	sem_wait(&adopt_gate);
	return 5;
}

static int adopt(void)
{
	thrd_t thread;
	int result = 0;

	sem_init(&adopt_gate, 0, 0);
	if (thrd_create(&thread, adopted_body, NULL) != thrd_success)
		fx_die("thrd_create");
	while (!__atomic_load_n(&adopted_tid, __ATOMIC_SEQ_CST))
		sched_yield();
	printf("observed=%s\n",
	       fx_wait_state(adopted_tid, TDSTAT_STATE_BLOCKED) ? "BLOCKED" : "never-BLOCKED");
	printf("live_while_waiting=%d\n", fx_live_records());
	sem_post(&adopt_gate);
	thrd_join(thread, &result);
	printf("result=%d\n", result);
	printf("record_gone=%d\n", fx_find_record(adopted_tid) < 0);
	printf("live_end=%d\n", fx_live_records());
	return 0;
}

static void *outlives_main(void *arg)
{
	pid_t main_tid = (pid_t)(intptr_t)arg;

	printf("main_record_freed=%d\n", fx_wait_live(1) && fx_find_record(main_tid) < 0);
	printf("own_record=%d\n", fx_record_of(fx_gettid()).state == TDSTAT_STATE_RUNNABLE);
	fflush(stdout);
	exit(0);
}

static int main_exit(void)
{
	pthread_t thread;

	printf("live_before=%d\n", fx_live_records());
	fflush(stdout);
	pthread_create(&thread, NULL, outlives_main, (void *)(intptr_t)getpid());
	pthread_exit(NULL);
}

#define WAITING_THREADS 3

static sem_t threads_gate;
static pid_t thread_tids[WAITING_THREADS];

static void *waits_at_gate(void *arg)
{
	__atomic_store_n(&thread_tids[(intptr_t)arg], fx_gettid(), __ATOMIC_SEQ_CST);
	sem_wait(&threads_gate);
	return NULL;
}

/* Whether every record used so far has its change mark (ABI 2.3) at
 * rest: even, and twice its seq (region.h).  Only the records of threads
 * at rest: the caller's own (RUNNABLE, not changing) and sleepers'. */
static int marks_at_rest(const struct tdstat_region *region)
{
	uint32_t used = __atomic_load_n(&region->header.status.high_water, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < used; i++) {
		uint32_t seq = __atomic_load_n(&region->records[i].seq, __ATOMIC_ACQUIRE);
		uint32_t mark = __atomic_load_n(&region->changes[tdstat_change_slot(i)], __ATOMIC_ACQUIRE);

		if (mark != 2 * seq) {
			printf("mark_of_%u=%u (seq %u)\n", i, mark, seq);
			return 0;
		}
	}
	return used > 0;
}

static int threads(void)
{
	struct tdstat_region *region = fx_region();
	pthread_t thread[WAITING_THREADS];
	struct fx_snapshot snapshot;
	int blocked = 0;

	printf("magic_ok=%d\n", region->header.magic == TDSTAT_REGION_MAGIC);
	sem_init(&threads_gate, 0, 0);
	for (intptr_t i = 0; i < WAITING_THREADS; i++)
		pthread_create(&thread[i], NULL, waits_at_gate, (void *)i);
	for (int i = 0; i < WAITING_THREADS; i++) {
		while (!__atomic_load_n(&thread_tids[i], __ATOMIC_SEQ_CST))
			sched_yield();
		blocked += fx_wait_state(thread_tids[i], TDSTAT_STATE_BLOCKED);
	}
	printf("blocked=%d\n", blocked);
	printf("marks_blocked=%d\n", marks_at_rest(region));
	printf("live=%d\n", fx_live_records());
	printf("high_water=%u\n", region->header.status.high_water);
	fx_spin_ns(5 * 1000000ull);
	snapshot = fx_snapshot();
	printf("impossible=%d\n", snapshot.impossible);
	for (int i = 0; i < WAITING_THREADS; i++)
		sem_post(&threads_gate);
	for (int i = 0; i < WAITING_THREADS; i++)
		pthread_join(thread[i], NULL);
	printf("live_end=%d\n", fx_live_records());
	printf("marks_end=%d\n", marks_at_rest(region));
	return 0;
}

int main(int argc, char **argv)
{
	fx_region();
	if (argc == 2 && !strcmp(argv[1], "threads"))
		return threads();
	if (argc == 2 && !strcmp(argv[1], "mutex_counter"))
		return mutex_counter();
	if (argc == 2 && !strcmp(argv[1], "adopt"))
		return adopt();
	if (argc == 2 && !strcmp(argv[1], "main_exit"))
		return main_exit();
	if (argc == 2 && !strcmp(argv[1], "concurrency"))
		return concurrency();
	nested = argc == 2 && !strcmp(argv[1], "signal_nested");
	if (argc == 2 && (nested || !strcmp(argv[1], "signal_post")))
		return signal_post();
	fx_die("usage: rt_misc concurrency|signal_post|signal_nested|mutex_counter|adopt|main_exit|threads");
}
