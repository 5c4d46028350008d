/* SPDX-License-Identifier: MIT */
/*
 * Micro-benchmarks of the calls the shim wraps, run bare and preloaded by
 * bench/bench.py.  Prints "<name> <ns per operation>".
 *   microbench mutex|rwlock|sem|trylock|tryrdlock|trywrlock|trywrbusy|trywait|overflowed|condvar|sempingpong|handoff|create|pipe|syscall|syscallpair [ITERATIONS]
 *   microbench scale [ITERATIONS] [THREADS]
 * A second thread is always alive, so glibc takes its multi-threaded
 * paths (a single-threaded process skips the atomic instructions).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Loops are timed on CPU clocks, not the wall clock: time a thread spent
 * preempted by other work on a shared machine is not its cost.  Single-
 * thread loops use the thread's clock; loops of several threads the
 * process clock, the CPU time of all of them (for the ping-pongs pinned
 * to one CPU, one of the two always runs, so on a quiet machine it equals
 * the wall time). */
static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double process_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
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

/* The tries, uncontended: each succeeds, then the object is released. */
static double bench_trylock(long n)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	double start = cpu_ns();

	for (long i = 0; i < n; i++) {
		if (pthread_mutex_trylock(&lock) == 0)
			pthread_mutex_unlock(&lock);
	}
	return (cpu_ns() - start) / n;
}

static double bench_tryrdlock(long n)
{
	pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
	double start = cpu_ns();

	for (long i = 0; i < n; i++) {
		if (pthread_rwlock_tryrdlock(&lock) == 0)
			pthread_rwlock_unlock(&lock);
	}
	return (cpu_ns() - start) / n;
}

static double bench_trywrlock(long n)
{
	pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
	double start = cpu_ns();

	for (long i = 0; i < n; i++) {
		if (pthread_rwlock_trywrlock(&lock) == 0)
			pthread_rwlock_unlock(&lock);
	}
	return (cpu_ns() - start) / n;
}

/* The write try alone: it fails on a read-held lock, so no write unlock
 * follows (the shim's write unlock is what trywrlock's row measures). */
static double bench_trywrbusy(long n)
{
	pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
	double start;

	pthread_rwlock_rdlock(&lock);
	start = cpu_ns();
	for (long i = 0; i < n; i++)
		if (pthread_rwlock_trywrlock(&lock) == 0)
			return -1;
	start = (cpu_ns() - start) / n;
	pthread_rwlock_unlock(&lock);
	return start;
}

static double bench_trywait(long n)
{
	sem_t sem;
	double start;

	sem_init(&sem, 0, 0);
	start = cpu_ns();
	for (long i = 0; i < n; i++) {
		sem_post(&sem);
		sem_trywait(&sem);
	}
	return (cpu_ns() - start) / n;
}

/* An uncontended mutex pair on an object the tracking table has no room
 * for (with TDSTAT_SYNC_TRACKING=1): 6,000 mutexes locked once first, more
 * than its 4,096 entries; the timed one is the last of them. */
static double bench_overflowed(long n)
{
	enum { MANY = 6000 };
	pthread_mutex_t *many = calloc(MANY, sizeof(*many));
	double start;

	if (!many)
		return -1;
	for (int i = 0; i < MANY; i++) {
		pthread_mutex_lock(&many[i]);
		pthread_mutex_unlock(&many[i]);
	}
	start = cpu_ns();
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&many[MANY - 1]);
		pthread_mutex_unlock(&many[MANY - 1]);
	}
	start = (cpu_ns() - start) / n;
	free(many);
	return start;
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
	start = process_cpu_ns();
	pthread_mutex_lock(&pp_lock);
	for (long i = 0; i < n; i++) {
		pp_turn++;
		pthread_cond_signal(&pp_cond);
		while (pp_turn % 2 == 1)
			pthread_cond_wait(&pp_cond, &pp_lock);
	}
	pthread_mutex_unlock(&pp_lock);
	pthread_join(peer, NULL);
	return (process_cpu_ns() - start) / n;
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
	start = process_cpu_ns();
	for (long i = 0; i < n; i++) {
		sem_post(&ping);
		sem_wait(&pong);
	}
	pthread_join(peer, NULL);
	return (process_cpu_ns() - start) / n;
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

/* Each worker gets a CPU of its own (the first two the process may use),
 * so the two contend in parallel in every run, instead of sometimes
 * sharing one CPU and hardly contending at all. */
static void pin_to_nth_cpu(pthread_t thread, int nth)
{
	cpu_set_t allowed, one;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || CPU_COUNT(&allowed) < 2)
		return;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed) || nth-- > 0)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pthread_setaffinity_np(thread, sizeof(one), &one);
		return;
	}
}

static double bench_handoff(long n)
{
	pthread_t a, b;
	double start = process_cpu_ns();

	pthread_create(&a, NULL, handoff_worker, (void *)n);
	pin_to_nth_cpu(a, 0);
	pthread_create(&b, NULL, handoff_worker, (void *)n);
	pin_to_nth_cpu(b, 1);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return (process_cpu_ns() - start) / (2.0 * n);
}

static void *nothing(void *arg)
{
	return arg;
}

static double bench_create(long n)
{
	double start = process_cpu_ns();

	for (long i = 0; i < n; i++) {
		pthread_t t;
		pthread_create(&t, NULL, nothing, NULL);
		pthread_join(t, NULL);
	}
	return (process_cpu_ns() - start) / n;
}

/* A read that finds data: write a byte into a pipe, read it back. */
static double bench_pipe(long n)
{
	int fds[2];
	char byte = 'x';
	double start;

	if (pipe(fds) != 0)
		return -1;
	start = cpu_ns();
	for (long i = 0; i < n; i++) {
		if (write(fds[1], &byte, 1) != 1 || read(fds[0], &byte, 1) != 1)
			return -1;
	}
	return (cpu_ns() - start) / n;
}

/* libc's syscall() with a call that never waits: what the interposed
 * syscall() costs every other system call made through it. */
static double bench_syscall(long n)
{
	double start = cpu_ns();

	for (long i = 0; i < n; i++)
		syscall(SYS_getpid);
	return (cpu_ns() - start) / n;
}

/*
 * The wrapper's own cost, measured inside one process: getpid through
 * syscall() (the program's PLT, so the shim's syscall() when it is
 * preloaded) and through libc's syscall() found in libc itself (never
 * the shim's), in alternating blocks, each timed on the thread's CPU
 * clock.  Both are one indirect branch from a call that is not inlined.
 * Without the shim both reach the same function, so the ratio is the
 * method's own error; with it, the ratio is what the interposition
 * adds, free of what differs between two processes (where the loader
 * put things, what else the preload brings).  Prints the two costs.
 */
typedef long (*syscall_fn)(long, ...);
static syscall_fn volatile libc_syscall;

__attribute__((noinline)) static void getpid_block_interposed(long n)
{
	for (long i = 0; i < n; i++)
		syscall(SYS_getpid);
}

__attribute__((noinline)) static void getpid_block_libc(long n)
{
	for (long i = 0; i < n; i++)
		libc_syscall(SYS_getpid);
}

static double syscallpair_direct_ns;

static double bench_syscallpair(long n)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	const long block = 10000;
	double interposed = 0, direct = 0;
	long each = 0;

	libc_syscall = libc ? (syscall_fn)dlsym(libc, "syscall") : NULL;
	if (!libc_syscall)
		return -1;
	/* A B B A: which goes first alternates too. */
	for (long done = 0; done < n; done += 4 * block, each += 2 * block) {
		double t0 = cpu_ns();
		getpid_block_interposed(block);
		double t1 = cpu_ns();
		getpid_block_libc(block);
		double t2 = cpu_ns();
		getpid_block_libc(block);
		double t3 = cpu_ns();
		getpid_block_interposed(block);
		double t4 = cpu_ns();

		interposed += (t1 - t0) + (t4 - t3);
		direct += (t2 - t1) + (t3 - t2);
	}
	syscallpair_direct_ns = direct / each;
	return interposed / each;
}

/*
 * The same lock-heavy work split among `scale_threads` threads: each
 * iteration locks and unlocks a mutex, read-locks and unlocks a rwlock,
 * and posts and takes a semaphore, all the thread's own.  The program
 * shares nothing and nothing blocks, so its cost per operation is the
 * same at any thread count and does not depend on how the threads happen
 * to be scheduled on a busy machine: what could grow with the thread
 * count is only what the wrappers share between threads.  (Waiting, and
 * the cost of its transitions, is measured by the hand-off and ping-pong
 * benchmarks.)  The total work is fixed; one operation is one iteration.
 */
static long scale_threads = 1;

static void *scale_worker(void *arg)
{
	long n = (long)arg;
	pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
	pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
	sem_t sem;

	sem_init(&sem, 0, 0);
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&mutex);
		pthread_mutex_unlock(&mutex);
		pthread_rwlock_rdlock(&rwlock);
		pthread_rwlock_unlock(&rwlock);
		sem_post(&sem);
		sem_wait(&sem);
	}
	sem_destroy(&sem);
	return NULL;
}

static double bench_scale(long n)
{
	long threads = scale_threads > 0 ? scale_threads : 1;
	long each = n / threads;
	pthread_t *ids = calloc(threads, sizeof(*ids));
	pthread_attr_t attr;
	double start;

	if (!ids || each == 0)
		return -1;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	start = process_cpu_ns();
	for (long t = 0; t < threads; t++)
		pthread_create(&ids[t], &attr, scale_worker, (void *)each);
	for (long t = 0; t < threads; t++)
		pthread_join(ids[t], NULL);
	pthread_attr_destroy(&attr);
	free(ids);
	return (process_cpu_ns() - start) / (double)(each * threads);
}

static const struct {
	const char *name;
	double (*run)(long);
	long iterations;
} benches[] = {
	{ "mutex", bench_mutex, 20000000 },
	{ "rwlock", bench_rwlock, 20000000 },
	{ "sem", bench_sem, 20000000 },
	{ "trylock", bench_trylock, 20000000 },
	{ "tryrdlock", bench_tryrdlock, 20000000 },
	{ "trywrlock", bench_trywrlock, 20000000 },
	{ "trywrbusy", bench_trywrbusy, 20000000 },
	{ "trywait", bench_trywait, 20000000 },
	{ "overflowed", bench_overflowed, 5000000 },
	{ "condvar", bench_condvar, 200000 },
	{ "sempingpong", bench_sempingpong, 200000 },
	{ "handoff", bench_handoff, 2000000 },
	{ "create", bench_create, 20000 },
	{ "pipe", bench_pipe, 1000000 },
	{ "syscall", bench_syscall, 5000000 },
	{ "syscallpair", bench_syscallpair, 5000000 },
	{ "scale", bench_scale, 2000000 },
};

int main(int argc, char **argv)
{
	pthread_t idle;

	if (argc < 2) {
		fprintf(stderr, "usage: microbench NAME [ITERATIONS] [THREADS]\n");
		return 2;
	}
	pthread_create(&idle, NULL, idle_thread, NULL);
	for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++) {
		if (strcmp(argv[1], benches[i].name) != 0)
			continue;
		long n = argc > 2 ? atol(argv[2]) : benches[i].iterations;
		if (argc > 3)
			scale_threads = atol(argv[3]);
		double result = benches[i].run(n);

		if (benches[i].run == bench_syscallpair)
			printf("%s %.3f %.3f\n", benches[i].name, result, syscallpair_direct_ns);
		else
			printf("%s %.3f\n", benches[i].name, result);
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
