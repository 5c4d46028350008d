/* SPDX-License-Identifier: MIT */
/*
 * The accuracy shapes in C, with pthreads and POSIX semaphores (README.md
 * in this folder describes the shapes every runtime implements):
 *
 *   accuracy-shapes-c SHAPE [THREADS]
 *
 * Prints "ready" once its threads are started, then runs until killed.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

enum {
	WORKERS = 4,
	CONTENTION_INSIDE_US = 10,
	CONTENTION_OUTSIDE_US = 30,
	POOL_BATCH = 8,
	POOL_PAUSE_US = 500,
	PINGPONG_TURN_US = 20,
	OVERSUBSCRIBED_RUN_US = 2000,
	OVERSUBSCRIBED_WAIT_US = 100,
	EVENTLOOP_TURN_US = 40,
};

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Work on the CPU for a while: wall-clock time, the same in every runtime. */
static void spin_us(long us)
{
	uint64_t end = monotonic_ns() + (uint64_t)us * 1000;

	while (monotonic_ns() < end)
		;
}

static void check(int error, const char *what)
{
	if (error) {
		fprintf(stderr, "accuracy-shapes-c: %s: %s\n", what, strerror(error));
		exit(1);
	}
}

static pthread_t start(void *(*run)(void *), void *arg)
{
	pthread_t thread;

	check(pthread_create(&thread, NULL, run, arg), "pthread_create");
	return thread;
}

static void ready(void)
{
	printf("ready\n");
	fflush(stdout);
}

/* Every shape ends with the main thread in pthread_join, forever. */
static void join_all(const pthread_t *threads, int count)
{
	for (int i = 0; i < count; i++)
		pthread_join(threads[i], NULL);
}

/* ---- idle: two threads in pthread_cond_wait, two in sem_wait ---- */

static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond = PTHREAD_COND_INITIALIZER;
static sem_t idle_sem;

static void *idle_cond_thread(void *unused)
{
	pthread_mutex_lock(&idle_lock);
	for (;;)
		pthread_cond_wait(&idle_cond, &idle_lock);
	return unused;
}

static void *idle_sem_thread(void *unused)
{
	for (;;)
		sem_wait(&idle_sem);
	return unused;
}

static void shape_idle(int threads)
{
	pthread_t ids[WORKERS];

	(void)threads;
	sem_init(&idle_sem, 0, 0);
	ids[0] = start(idle_cond_thread, NULL);
	ids[1] = start(idle_cond_thread, NULL);
	ids[2] = start(idle_sem_thread, NULL);
	ids[3] = start(idle_sem_thread, NULL);
	ready();
	join_all(ids, WORKERS);
}

/* ---- contention: short critical sections on one mutex ---- */

static pthread_mutex_t contended = PTHREAD_MUTEX_INITIALIZER;

static void *contention_thread(void *unused)
{
	for (;;) {
		pthread_mutex_lock(&contended);
		spin_us(CONTENTION_INSIDE_US);
		pthread_mutex_unlock(&contended);
		spin_us(CONTENTION_OUTSIDE_US);
	}
	return unused;
}

static void shape_contention(int threads)
{
	pthread_t ids[WORKERS];

	(void)threads;
	for (int i = 0; i < WORKERS; i++)
		ids[i] = start(contention_thread, NULL);
	ready();
	join_all(ids, WORKERS);
}

/* ---- pool: main feeds batches of short tasks through a queue ---- */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t pool_done = PTHREAD_COND_INITIALIZER;
static long pool_queue[POOL_BATCH];
static int pool_queued, pool_pending;

static void *pool_thread(void *unused)
{
	for (;;) {
		pthread_mutex_lock(&pool_lock);
		while (pool_queued == 0)
			pthread_cond_wait(&pool_work, &pool_lock);
		long task_us = pool_queue[--pool_queued];
		pthread_mutex_unlock(&pool_lock);

		spin_us(task_us);

		pthread_mutex_lock(&pool_lock);
		if (--pool_pending == 0)
			pthread_cond_signal(&pool_done);
		pthread_mutex_unlock(&pool_lock);
	}
	return unused;
}

static void shape_pool(int threads)
{
	const struct timespec pause = { 0, POOL_PAUSE_US * 1000L };

	(void)threads;
	for (int i = 0; i < WORKERS; i++)
		start(pool_thread, NULL);
	ready();
	for (;;) {
		pthread_mutex_lock(&pool_lock);
		for (int i = 0; i < POOL_BATCH; i++)
			pool_queue[pool_queued++] = 50 + 50 * (i % 4); /* 50..200 us */
		pool_pending = POOL_BATCH;
		pthread_cond_broadcast(&pool_work);
		while (pool_pending > 0)
			pthread_cond_wait(&pool_done, &pool_lock);
		pthread_mutex_unlock(&pool_lock);
		nanosleep(&pause, NULL);
	}
}

/* ---- pingpong: a token handed back and forth through two semaphores ---- */

static sem_t pingpong_turn[2];

static void *pingpong_thread(void *arg)
{
	int me = (int)(long)arg;

	for (;;) {
		sem_wait(&pingpong_turn[me]);
		spin_us(PINGPONG_TURN_US);
		sem_post(&pingpong_turn[1 - me]);
	}
	return NULL;
}

static void shape_pingpong(int threads)
{
	pthread_t ids[2];

	(void)threads;
	sem_init(&pingpong_turn[0], 0, 1);
	sem_init(&pingpong_turn[1], 0, 0);
	ids[0] = start(pingpong_thread, (void *)0L);
	ids[1] = start(pingpong_thread, (void *)1L);
	ready();
	join_all(ids, 2);
}

/* ---- oversubscribed: more busy threads than CPUs, short timed waits ----
 * Half the threads pause in nanosleep, half in pthread_cond_timedwait on a
 * condvar that runs on CLOCK_MONOTONIC, as HotSpot's and CPython's do (its
 * deadline is then not on CLOCK_REALTIME). */

static pthread_mutex_t pause_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pause_cond;

static void pause_in_condvar(void)
{
	struct timespec deadline;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_nsec += OVERSUBSCRIBED_WAIT_US * 1000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&pause_lock);
	while (pthread_cond_timedwait(&pause_cond, &pause_lock, &deadline) == 0)
		;
	pthread_mutex_unlock(&pause_lock);
}

static void *oversubscribed_thread(void *arg)
{
	const struct timespec wait = { 0, OVERSUBSCRIBED_WAIT_US * 1000L };
	bool condvar = arg != NULL;

	for (;;) {
		spin_us(OVERSUBSCRIBED_RUN_US);
		if (condvar)
			pause_in_condvar();
		else
			nanosleep(&wait, NULL);
	}
	return NULL;
}

static void shape_oversubscribed(int threads)
{
	pthread_t *ids = calloc((size_t)threads, sizeof(*ids));
	pthread_condattr_t attributes;

	if (!ids)
		exit(1);
	pthread_condattr_init(&attributes);
	pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
	pthread_cond_init(&pause_cond, &attributes);
	for (int i = 0; i < threads; i++)
		ids[i] = start(oversubscribed_thread, i % 2 ? &pause_cond : NULL);
	ready();
	join_all(ids, threads);
}

/* ---- eventloop: 2 x CPUs event loops, each asleep in epoll_wait on its
 * own eventfd, passing CPUs + 1 tokens round a ring with eventfd_write:
 * more tokens than CPUs, so a woken loop often waits for a CPU ---- */

static int *loop_eventfd, *loop_epoll, loop_count;

static void *eventloop_thread(void *arg)
{
	int me = (int)(long)arg;
	struct epoll_event event;

	for (;;) {
		eventfd_t tokens = 0;

		if (epoll_wait(loop_epoll[me], &event, 1, -1) != 1 || eventfd_read(loop_eventfd[me], &tokens) != 0)
			continue;
		for (eventfd_t i = 0; i < tokens; i++) {
			spin_us(EVENTLOOP_TURN_US);
			eventfd_write(loop_eventfd[(me + 1) % loop_count], 1);
		}
	}
	return NULL;
}

static void shape_eventloop(int threads)
{
	pthread_t *ids = calloc((size_t)threads, sizeof(*ids));

	loop_eventfd = calloc((size_t)threads, sizeof(int));
	loop_epoll = calloc((size_t)threads, sizeof(int));
	if (!ids || !loop_eventfd || !loop_epoll)
		exit(1);
	loop_count = threads;
	for (int i = 0; i < threads; i++) {
		struct epoll_event event = { .events = EPOLLIN };

		loop_eventfd[i] = eventfd(0, 0);
		loop_epoll[i] = epoll_create1(0);
		if (loop_eventfd[i] < 0 || loop_epoll[i] < 0 ||
		    epoll_ctl(loop_epoll[i], EPOLL_CTL_ADD, loop_eventfd[i], &event) != 0) {
			perror("accuracy-shapes-c: eventloop");
			exit(1);
		}
	}
	for (int i = 0; i < threads; i++)
		ids[i] = start(eventloop_thread, (void *)(long)i);
	for (int i = 0; i < threads / 2 + 1; i++)
		eventfd_write(loop_eventfd[(2 * i) % threads], 1);
	ready();
	join_all(ids, threads);
}

static const struct {
	const char *name;
	void (*run)(int threads);
} shapes[] = {
	{ "idle", shape_idle },
	{ "contention", shape_contention },
	{ "pool", shape_pool },
	{ "pingpong", shape_pingpong },
	{ "oversubscribed", shape_oversubscribed },
	{ "eventloop", shape_eventloop },
};

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 2 * (int)sysconf(_SC_NPROCESSORS_ONLN);

	for (size_t i = 0; argc > 1 && i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		if (strcmp(argv[1], shapes[i].name) == 0) {
			shapes[i].run(threads > 0 ? threads : 1);
			return 0;
		}
	}
	fprintf(stderr, "usage: accuracy-shapes-c idle|contention|pool|pingpong|oversubscribed|eventloop [THREADS]\n");
	return 2;
}
