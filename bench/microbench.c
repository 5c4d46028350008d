/* SPDX-License-Identifier: MIT */
/*
 * Micro-benchmarks of the calls the shim wraps, run bare and preloaded by
 * bench/run-overhead.sh.  Prints "<name> <ns per operation>".
 *   microbench mutex|rwlock|sem|condvar|sempingpong|handoff|create [iterations]
 * A second thread is always alive, so glibc takes its multi-threaded
 * paths (a single-threaded process skips the atomic instructions).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Single-thread loops are timed on the thread's CPU clock: time the
 * thread spent preempted by other work on a shared machine is not its
 * cost. */
static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond = PTHREAD_COND_INITIALIZER;
static int idle_done;

static void *idle_thread(void *unused)
{
	pthread_mutex_lock(&idle_lock);
	while (!idle_done)
		pthread_cond_wait(&idle_cond, &idle_lock);
	pthread_mutex_unlock(&idle_lock);
	return unused;
}

static double bench_mutex(long n)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	double start = cpu_ns();

	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&lock);
		pthread_mutex_unlock(&lock);
	}
	return (cpu_ns() - start) / n;
}

static double bench_rwlock(long n)
{
	pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
	double start = cpu_ns();

	for (long i = 0; i < n; i++) {
		pthread_rwlock_rdlock(&lock);
		pthread_rwlock_unlock(&lock);
	}
	return (cpu_ns() - start) / n;
}

static double bench_sem(long n)
{
	sem_t sem;
	double start;

	sem_init(&sem, 0, 0);
	start = cpu_ns();
	for (long i = 0; i < n; i++) {
		sem_post(&sem);
		sem_wait(&sem);
	}
	return (cpu_ns() - start) / n;
}

/* Two threads take turns through a condvar: one round trip per op. */
static pthread_mutex_t pp_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pp_cond = PTHREAD_COND_INITIALIZER;
static long pp_turn, pp_rounds;

static void *pingpong_peer(void *unused)
{
	pthread_mutex_lock(&pp_lock);
	for (long i = 0; i < pp_rounds; i++) {
		while (pp_turn % 2 == 0)
			pthread_cond_wait(&pp_cond, &pp_lock);
		pp_turn++;
		pthread_cond_signal(&pp_cond);
	}
	pthread_mutex_unlock(&pp_lock);
	return unused;
}

static double bench_condvar(long n)
{
	pthread_t peer;
	double start;

	pp_rounds = n;
	pp_turn = 0;
	pthread_create(&peer, NULL, pingpong_peer, NULL);
	start = now_ns();
	pthread_mutex_lock(&pp_lock);
	for (long i = 0; i < n; i++) {
		pp_turn++;
		pthread_cond_signal(&pp_cond);
		while (pp_turn % 2 == 1)
			pthread_cond_wait(&pp_cond, &pp_lock);
	}
	pthread_mutex_unlock(&pp_lock);
	pthread_join(peer, NULL);
	return (now_ns() - start) / n;
}

static sem_t ping, pong;

static void *sem_peer(void *arg)
{
	long n = (long)arg;

	for (long i = 0; i < n; i++) {
		sem_wait(&ping);
		sem_post(&pong);
	}
	return NULL;
}

static double bench_sempingpong(long n)
{
	pthread_t peer;
	double start;

	sem_init(&ping, 0, 0);
	sem_init(&pong, 0, 0);
	pthread_create(&peer, NULL, sem_peer, (void *)n);
	start = now_ns();
	for (long i = 0; i < n; i++) {
		sem_post(&ping);
		sem_wait(&pong);
	}
	pthread_join(peer, NULL);
	return (now_ns() - start) / n;
}

/* Two threads hammer one mutex: the contended lock and hand-off. */
static pthread_mutex_t handoff_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile long handoff_counter;

static void *handoff_worker(void *arg)
{
	long n = (long)arg;

	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&handoff_lock);
		handoff_counter++;
		pthread_mutex_unlock(&handoff_lock);
	}
	return NULL;
}

static double bench_handoff(long n)
{
	pthread_t a, b;
	double start = now_ns();

	pthread_create(&a, NULL, handoff_worker, (void *)n);
	pthread_create(&b, NULL, handoff_worker, (void *)n);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return (now_ns() - start) / (2.0 * n);
}

static void *nothing(void *arg)
{
	return arg;
}

static double bench_create(long n)
{
	double start = now_ns();

	for (long i = 0; i < n; i++) {
		pthread_t t;
		pthread_create(&t, NULL, nothing, NULL);
		pthread_join(t, NULL);
	}
	return (now_ns() - start) / n;
}

static const struct {
	const char *name;
	double (*run)(long);
	long iterations;
} benches[] = {
	{ "mutex", bench_mutex, 20000000 },
	{ "rwlock", bench_rwlock, 20000000 },
	{ "sem", bench_sem, 20000000 },
	{ "condvar", bench_condvar, 200000 },
	{ "sempingpong", bench_sempingpong, 200000 },
	{ "handoff", bench_handoff, 2000000 },
	{ "create", bench_create, 20000 },
};

int main(int argc, char **argv)
{
	pthread_t idle;

	if (argc < 2) {
		fprintf(stderr, "usage: microbench NAME [iterations]\n");
		return 2;
	}
	pthread_create(&idle, NULL, idle_thread, NULL);
	for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++) {
		if (strcmp(argv[1], benches[i].name) != 0)
			continue;
		long n = argc > 2 ? atol(argv[2]) : benches[i].iterations;
		printf("%s %.3f\n", benches[i].name, benches[i].run(n));
		pthread_mutex_lock(&idle_lock);
		idle_done = 1;
		pthread_cond_signal(&idle_cond);
		pthread_mutex_unlock(&idle_lock);
		pthread_join(idle, NULL);
		return 0;
	}
	fprintf(stderr, "microbench: unknown benchmark %s\n", argv[1]);
	return 2;
}
