/* SPDX-License-Identifier: MIT */
/*
 * Targets of known shape, for the reader, accuracy and alternatives
 * benchmarks (bench/bench.py, bench/agentbench.c).
 *
 *   bench-workload MODE THREADS [SECONDS]
 *
 * MODE is one of
 *   spin     THREADS threads spin on the CPU
 *   duty     THREADS threads spin 2 ms then sleep 2 ms (50% duty cycle)
 *   queue    THREADS threads queue on one mutex, each holding it 200 us
 *   sleep    THREADS threads in nanosleep
 *   condvar  THREADS threads in pthread_cond_wait
 *   work     THREADS threads spin on arithmetic and count it: at the end
 *            prints "work <units per second>"
 *   server   THREADS threads: one per CPU as in `work` (and its "work"
 *            line), the others in pthread_cond_wait: a large process
 *            that keeps the machine busy without a thousand runnable
 *            threads"
 * It prints "ready" once every thread is running, then lets the main
 * thread wait in nanosleep or pause (interposed waits: BLOCKED) until
 * SECONDS have passed (0 or none: until killed).  In `work` and `server`
 * a SIGUSR1 marks the start of what the "work" line covers (by default,
 * from "ready" on): a benchmark lets a sampler warm up first.  Threads get 64 KiB stacks, so 10,000
 * of them fit.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_long started;
static atomic_int stopping;
static atomic_long work_done;
/* What the "work" line covers: from this moment, this much work on. */
static _Atomic double mark_s;
static atomic_long mark_work;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond = PTHREAD_COND_INITIALIZER;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void spin_for(double seconds)
{
	double end = now_s() + seconds;

	while (now_s() < end)
		;
}

static void *spin_thread(void *unused)
{
	atomic_fetch_add(&started, 1);
	while (!atomic_load_explicit(&stopping, memory_order_relaxed))
		;
	return unused;
}

static void *duty_thread(void *unused)
{
	const struct timespec half = { 0, 2000000 };

	atomic_fetch_add(&started, 1);
	while (!atomic_load_explicit(&stopping, memory_order_relaxed)) {
		spin_for(0.002);
		nanosleep(&half, NULL);
	}
	return unused;
}

static void *queue_thread(void *unused)
{
	atomic_fetch_add(&started, 1);
	while (!atomic_load_explicit(&stopping, memory_order_relaxed)) {
		pthread_mutex_lock(&queue_lock);
		spin_for(0.0002);
		pthread_mutex_unlock(&queue_lock);
	}
	return unused;
}

static void *sleep_thread(void *unused)
{
	const struct timespec second = { 1, 0 };

	atomic_fetch_add(&started, 1);
	for (;;)
		nanosleep(&second, NULL);
	return unused;
}

static void *condvar_thread(void *unused)
{
	pthread_mutex_lock(&idle_lock);
	atomic_fetch_add(&started, 1);
	for (;;)
		pthread_cond_wait(&idle_cond, &idle_lock);
	return unused;
}

/* Arithmetic that the compiler cannot fold, counted in batches so the
 * shared counter costs nothing. */
static void *work_thread(void *unused)
{
	unsigned long x = 88172645463325252UL;

	atomic_fetch_add(&started, 1);
	while (!atomic_load_explicit(&stopping, memory_order_relaxed)) {
		for (int i = 0; i < 10000; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		atomic_fetch_add_explicit(&work_done, 1, memory_order_relaxed);
	}
	return (void *)(x & 1);
}

static void on_mark(int signo)
{
	struct timespec ts;

	(void)signo;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	atomic_store(&mark_work, atomic_load(&work_done));
	atomic_store(&mark_s, ts.tv_sec + ts.tv_nsec * 1e-9);
}

static const struct {
	const char *name;
	void *(*run)(void *);
} modes[] = {
	{ "spin", spin_thread },       { "duty", duty_thread },
	{ "queue", queue_thread },     { "sleep", sleep_thread },
	{ "condvar", condvar_thread }, { "work", work_thread },
	{ "server", work_thread },
};

int main(int argc, char **argv)
{
	void *(*run)(void *) = NULL;
	pthread_attr_t attr;
	long threads;
	double seconds, start;

	if (argc < 3) {
		fprintf(stderr, "usage: bench-workload MODE THREADS [SECONDS]\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strcmp(argv[1], modes[i].name) == 0)
			run = modes[i].run;
	threads = atol(argv[2]);
	seconds = argc > 3 ? atof(argv[3]) : 0;
	if (!run || threads < 0) {
		fprintf(stderr, "bench-workload: unknown mode %s\n", argv[1]);
		return 2;
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	bool server = strcmp(argv[1], "server") == 0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	for (long i = 0; i < threads; i++) {
		pthread_t id;
		int error = pthread_create(&id, &attr, server && i >= cpus ? condvar_thread : run, NULL);
		if (error) {
			fprintf(stderr, "bench-workload: thread %ld: %s\n", i, strerror(error));
			return 1;
		}
	}
	while (atomic_load(&started) < threads)
		usleep(1000);
	start = now_s();
	atomic_store(&mark_s, start);
	if (run == work_thread) {
		struct sigaction action = { .sa_handler = on_mark, .sa_flags = SA_RESTART };

		sigemptyset(&action.sa_mask);
		sigaction(SIGUSR1, &action, NULL);
	}
	printf("ready\n");
	fflush(stdout);
	if (seconds <= 0) {
		for (;;)
			pause();
	}
	struct timespec left = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };
	while (nanosleep(&left, &left) != 0)
		;
	atomic_store(&stopping, 1);
	if (run == work_thread)
		printf("work %.1f\n", (atomic_load(&work_done) - atomic_load(&mark_work)) / (now_s() - atomic_load(&mark_s)));
	fflush(stdout);
	_exit(0);
}
