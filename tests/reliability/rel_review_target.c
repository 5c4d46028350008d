/* SPDX-License-Identifier: MIT */
/*
 * Targets for rel_review: the adversarial review's reproducers
 * (tests/reliability/break on branch `break`), shortened and made
 * machine-readable.  usage: rel_review_target MODE [ARG...]
 *   bad-pointers   every call given an unreadable timeout / duration
 *                  pointer, each in a forked child: one line per call,
 *                  "NAME ret R errno E" or "NAME killed by SIG"
 *   tiny-wait      two threads, a contended mutex and short sleeps
 *   signal-start   a handler that waits, run at each new thread's start
 *   requeue        a futex waiter requeued, woken 8 ms later on word 2
 *   fast-fail SECONDS N  N threads in futex waits that fail at once; prints
 *                  their CPU time ("cpu SECONDS")
 *   sys-exit       a thread ended by syscall(SYS_exit)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BAD ((void *)16) /* unmapped */

static void pause_ns(long ns)
{
	struct timespec t = { ns / 1000000000, ns % 1000000000 };
	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

/* ---- bad-pointers ---- */
static int word;
static long call_futex(int op) { return syscall(SYS_futex, &word, op, 0, BAD, NULL, FUTEX_BITSET_MATCH_ANY); }
static long f_futex_wait(void) { return call_futex(FUTEX_WAIT); }
static long f_futex_wait_private(void) { return call_futex(FUTEX_WAIT_PRIVATE); }
static long f_futex_wait_bitset(void) { return call_futex(FUTEX_WAIT_BITSET); }
static long f_futex_wait_bitset_rt(void) { return call_futex(FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME); }
static long f_futex_lock_pi(void) { return call_futex(FUTEX_LOCK_PI); }
static long f_futex_wait1(void) { return syscall(SYS_futex, &word, FUTEX_WAIT, 0, (void *)1, NULL, 0); }
static long f_epoll_pwait2(void)
{
	int e = epoll_create1(0);
	struct epoll_event ev;
	return epoll_pwait2(e, &ev, 1, BAD, NULL);
}
static long f_nanosleep(void) { return nanosleep(BAD, NULL); }
static long f_clock_nanosleep(void) { return clock_nanosleep(CLOCK_MONOTONIC, 0, BAD, NULL); }
static long f_clock_nanosleep_abs(void) { return clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, BAD, NULL); }
static long f_sigtimedwait(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	return sigtimedwait(&s, NULL, BAD);
}

static void run(const char *name, long (*f)(void))
{
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		errno = 0;
		long r = f();
		printf("%s ret %ld errno %d\n", name, r, errno);
		fflush(stdout);
		_exit(0);
	}
	int st;
	if (p < 0 || waitpid(p, &st, 0) != p) {
		printf("%s fork/wait failed\n", name);
		return;
	}
	if (WIFSIGNALED(st))
		printf("%s killed by %d\n", name, WTERMSIG(st));
	else if (WEXITSTATUS(st) != 0)
		printf("%s exit %d\n", name, WEXITSTATUS(st));
	fflush(stdout);
}

static int bad_pointers(void)
{
	run("futex_wait", f_futex_wait);
	run("futex_wait_private", f_futex_wait_private);
	run("futex_wait_bitset", f_futex_wait_bitset);
	run("futex_wait_bitset_realtime", f_futex_wait_bitset_rt);
	run("futex_lock_pi", f_futex_lock_pi);
	run("futex_wait_ptr1", f_futex_wait1);
	run("epoll_pwait2", f_epoll_pwait2);
	run("nanosleep", f_nanosleep);
	run("clock_nanosleep", f_clock_nanosleep);
	run("clock_nanosleep_abs", f_clock_nanosleep_abs);
	run("sigtimedwait", f_sigtimedwait);
	return 0;
}

/* ---- tiny-wait ---- */
static pthread_mutex_t tiny_mutex = PTHREAD_MUTEX_INITIALIZER;
static void *tiny_worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20; i++) {
		pthread_mutex_lock(&tiny_mutex);
		usleep(1000);
		pthread_mutex_unlock(&tiny_mutex);
	}
	return NULL;
}
static int tiny_wait(void)
{
	pthread_t t;
	pthread_create(&t, NULL, tiny_worker, NULL);
	tiny_worker(NULL);
	pthread_join(t, NULL);
	puts("done");
	return 0;
}

/* ---- signal-start ---- */
static volatile int handled;
static void waiting_handler(int sig)
{
	(void)sig;
	struct timespec d = { 0, 1 };
	nanosleep(&d, NULL);
	handled++;
}
static void *nothing(void *a) { (void)a; return NULL; }
static int signal_start(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = waiting_handler;
	sigaction(SIGUSR1, &sa, NULL);
	sigset_t block, open;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigemptyset(&open);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setsigmask_np(&attr, &open);
	for (int i = 0; i < 100; i++) {
		kill(getpid(), SIGUSR1); /* pending for the process */
		pthread_t t;
		pthread_create(&t, &attr, nothing, NULL);
		pthread_join(t, NULL);
	}
	pause_ns(1000000000);
	printf("handled %d in new threads\n", handled);
	return 0;
}

/* ---- requeue ---- */
static atomic_int rq_a, rq_b, rq_go;
static volatile int rq_stop;
static void *rq_waiter(void *arg)
{
	(void)arg;
	while (!rq_stop) {
		atomic_store(&rq_go, 1);
		syscall(SYS_futex, &rq_a, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	}
	return NULL;
}
static int requeue(void)
{
	pthread_t t;
	pthread_create(&t, NULL, rq_waiter, NULL);
	for (int i = 0; i < 60; i++) {
		while (!atomic_load(&rq_go))
			pause_ns(100000);
		pause_ns(1000000); /* the waiter is asleep on a */
		atomic_store(&rq_go, 0);
		syscall(SYS_futex, &rq_a, FUTEX_CMP_REQUEUE_PRIVATE, 0, (void *)1L, &rq_b, 0);
		pause_ns(8000000);
		if (i == 59)
			rq_stop = 1;
		syscall(SYS_futex, &rq_b, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	pthread_join(t, NULL);
	return 0;
}

/* ---- fast-fail ---- */
static double ff_secs, ff_cpu[64], ff_wait[64];
static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}
static void *ff_spin(void *a)
{
	(void)a;
	int w = 1;
	double end = now_s() + ff_secs;
	long n = 0;
	while (now_s() < end) {
		syscall(SYS_futex, &w, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		n++;
	}
	/* The kernel's figures: time on a CPU, time waiting for one. */
	unsigned long long run = 0, wait = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	if (f) {
		if (fscanf(f, "%llu %llu", &run, &wait) != 2)
			run = wait = 0;
		fclose(f);
	}
	ff_cpu[(int)(long)a] = run / 1e9;
	ff_wait[(int)(long)a] = wait / 1e9;
	return (void *)n;
}
static int fast_fail(double secs, int n)
{
	pthread_t t[64];
	ff_secs = secs;
	if (n < 1 || n > 64)
		return 2;
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, ff_spin, (void *)(long)i);
	long total = 0;
	for (int i = 0; i < n; i++) {
		void *r;
		pthread_join(t[i], &r);
		total += (long)r;
	}
	double cpu = 0, wait = 0;
	for (int i = 0; i < n; i++) {
		cpu += ff_cpu[i];
		wait += ff_wait[i];
	}
	printf("%.2f M waits/s, cpu %.6f wait %.6f\n", total / secs / 1e6, cpu, wait);
	return 0;
}

/* ---- sys-exit ---- */
static void *sys_exit_worker(void *arg)
{
	(void)arg;
	syscall(SYS_exit, 0);
	return NULL;
}
static int sys_exit(void)
{
	pthread_t t;
	pthread_create(&t, NULL, sys_exit_worker, NULL);
	pause_ns(1000000000);
	puts("slept");
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "bad-pointers"))
		return bad_pointers();
	if (!strcmp(mode, "tiny-wait"))
		return tiny_wait();
	if (!strcmp(mode, "signal-start"))
		return signal_start();
	if (!strcmp(mode, "requeue"))
		return requeue();
	if (!strcmp(mode, "fast-fail"))
		return fast_fail(argc > 2 ? atof(argv[2]) : 2, argc > 3 ? atoi(argv[3]) : 2);
	if (!strcmp(mode, "sys-exit"))
		return sys_exit();
	fprintf(stderr, "usage: rel_review_target bad-pointers|tiny-wait|signal-start|requeue|fast-fail SECONDS N|sys-exit\n");
	return 2;
}
