/* SPDX-License-Identifier: MIT */
/*
 * A target for tdstat -s (sync_test.py).  Commands on stdin, one a line;
 * each is acknowledged with a line on stdout once done:
 *   round N    two threads lock counted_lock N times each; then the main
 *              thread takes table_lock for reading 3 times and for
 *              writing 2 times, then once each with a deadline (timed),
 *              posts and waits slots 5 times, then once more with a
 *              timed wait, signals
 *              ready_cond 4 times and broadcasts it once, and waits on
 *              it once with a deadline in the past (a timeout): "done"
 *   tries N M  N tries of each kind, M of which fail: try_lock (a mutex)
 *              and try_table (an rwlock, read and write tries) N - M
 *              times free, then M times while another thread holds
 *              them; try_slots (a semaphore at 0) M times empty, then
 *              N - M times after a post: "tried"
 *   fill K     locks and unlocks K mutexes of a new array once each (more
 *              than the tracking table holds): "filled ADDRESS SIZE",
 *              the array's address and its size in bytes
 *   load       two threads lock and unlock counted_lock, then post and
 *              take load_slots (never empty when taken: each thread
 *              posts first), until `stop`, counting their rounds:
 *              "loading"
 *   stop       stops them: "stopped TOTAL", the rounds they made
 *   exit
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

pthread_mutex_t counted_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
pthread_cond_t ready_cond = PTHREAD_COND_INITIALIZER;
pthread_mutex_t ready_lock = PTHREAD_MUTEX_INITIALIZER;
sem_t slots;
pthread_mutex_t try_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t try_table = PTHREAD_RWLOCK_INITIALIZER;
sem_t try_slots;
sem_t load_slots;

static long rounds;
static volatile int stopping;
static long loaded[2];

static void *locker(void *unused)
{
	for (long i = 0; i < rounds; i++) {
		pthread_mutex_lock(&counted_lock);
		pthread_mutex_unlock(&counted_lock);
	}
	return unused;
}

static void *loader(void *slot)
{
	long *count = slot;

	while (!__atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&counted_lock);
		++*count;
		pthread_mutex_unlock(&counted_lock);
		sem_post(&load_slots);
		sem_wait(&load_slots);
	}
	return NULL;
}

/* Holds try_lock and write-locks try_table between the two barriers. */
static pthread_barrier_t held, tried;

static void *holder(void *unused)
{
	pthread_mutex_lock(&try_lock);
	pthread_rwlock_wrlock(&try_table);
	pthread_barrier_wait(&held);
	pthread_barrier_wait(&tried);
	pthread_rwlock_unlock(&try_table);
	pthread_mutex_unlock(&try_lock);
	return unused;
}

/* Exits on a try that answers otherwise than expected: the test sees no
 * "tried" then. */
static void expect(int got, int want, const char *what)
{
	if (got != want) {
		printf("%s answered %d, not %d\n", what, got, want);
		exit(1);
	}
}

static void tries_of(long n, long m)
{
	pthread_t other;

	for (long i = 0; i < n - m; i++) {
		expect(pthread_mutex_trylock(&try_lock), 0, "trylock");
		pthread_mutex_unlock(&try_lock);
		expect(pthread_rwlock_tryrdlock(&try_table), 0, "tryrdlock");
		pthread_rwlock_unlock(&try_table);
		expect(pthread_rwlock_trywrlock(&try_table), 0, "trywrlock");
		pthread_rwlock_unlock(&try_table);
	}
	pthread_barrier_init(&held, NULL, 2);
	pthread_barrier_init(&tried, NULL, 2);
	pthread_create(&other, NULL, holder, NULL);
	pthread_barrier_wait(&held);
	for (long i = 0; i < m; i++) {
		expect(pthread_mutex_trylock(&try_lock), EBUSY, "trylock (held)");
		expect(pthread_rwlock_tryrdlock(&try_table), EBUSY, "tryrdlock (held)");
		expect(pthread_rwlock_trywrlock(&try_table), EBUSY, "trywrlock (held)");
		expect(sem_trywait(&try_slots), -1, "sem_trywait (empty)");
	}
	pthread_barrier_wait(&tried);
	pthread_join(other, NULL);
	pthread_barrier_destroy(&held);
	pthread_barrier_destroy(&tried);
	for (long i = 0; i < n - m; i++) {
		sem_post(&try_slots);
		expect(sem_trywait(&try_slots), 0, "sem_trywait");
	}
}

static void round_of(long n)
{
	pthread_t a, b;
	struct timespec past = { 1, 0 }, future;

	clock_gettime(CLOCK_REALTIME, &future);
	future.tv_sec += 60;

	rounds = n;
	pthread_create(&a, NULL, locker, NULL);
	pthread_create(&b, NULL, locker, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	for (int i = 0; i < 3; i++) {
		pthread_rwlock_rdlock(&table_lock);
		pthread_rwlock_unlock(&table_lock);
	}
	for (int i = 0; i < 2; i++) {
		pthread_rwlock_wrlock(&table_lock);
		pthread_rwlock_unlock(&table_lock);
	}
	pthread_rwlock_timedrdlock(&table_lock, &future);
	pthread_rwlock_unlock(&table_lock);
	pthread_rwlock_timedwrlock(&table_lock, &future);
	pthread_rwlock_unlock(&table_lock);
	for (int i = 0; i < 5; i++) {
		sem_post(&slots);
		sem_wait(&slots);
	}
	sem_post(&slots);
	sem_timedwait(&slots, &future);
	for (int i = 0; i < 4; i++)
		pthread_cond_signal(&ready_cond);
	pthread_cond_broadcast(&ready_cond);
	pthread_mutex_lock(&ready_lock);
	pthread_cond_timedwait(&ready_cond, &ready_lock, &past);
	pthread_mutex_unlock(&ready_lock);
}

int main(void)
{
	char line[64];
	pthread_t loaders[2];

	sem_init(&slots, 0, 1);
	sem_init(&try_slots, 0, 0);
	sem_init(&load_slots, 0, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "round ", 6)) {
			round_of(atol(line + 6));
			printf("done\n");
		} else if (!strncmp(line, "tries ", 6)) {
			char *rest;
			long n = strtol(line + 6, &rest, 10);

			tries_of(n, strtol(rest, NULL, 10));
			printf("tried\n");
		} else if (!strncmp(line, "fill ", 5)) {
			long k = atol(line + 5);
			pthread_mutex_t *many = calloc((size_t)k, sizeof(*many));

			if (!many)
				break;
			for (long i = 0; i < k; i++) {
				pthread_mutex_lock(&many[i]);
				pthread_mutex_unlock(&many[i]);
			}
			printf("filled %p %zu\n", (void *)many, (size_t)k * sizeof(*many));
		} else if (!strcmp(line, "load\n")) {
			stopping = 0;
			loaded[0] = loaded[1] = 0;
			for (int i = 0; i < 2; i++)
				pthread_create(&loaders[i], NULL, loader, &loaded[i]);
			printf("loading\n");
		} else if (!strcmp(line, "stop\n")) {
			__atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
			for (int i = 0; i < 2; i++)
				pthread_join(loaders[i], NULL);
			printf("stopped %ld\n", loaded[0] + loaded[1]);
		} else {
			break;
		}
	}
	return 0;
}
