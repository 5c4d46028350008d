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
 *   preempting-wakee  a semaphore waiter of higher priority on the
 *                  poster's CPU, posted every 20 ms: it runs inside the
 *                  post and waits again before the post returns
 *   remote-busy    every 20 ms a thread on CPU 0 wakes a spinner (5 ms,
 *                  SCHED_FIFO 3) and then a waiter (SCHED_FIFO 2) that
 *                  both live on CPU 1: the waiter waits for the CPU 5 ms
 *                  (exits 77 when SCHED_FIFO is not allowed)
 *   remote-idle    1 s of semaphore ping-pong with 20 us turns between
 *                  CPU 0 and CPU 1, each thread alone on its CPU
 *                  (SCHED_FIFO 2); prints the two threads' kernel
 *                  figures ("cpu SECONDS wait SECONDS")
 *   futex-queue    mutex-queue's shape on a lock of Rust's kind: a
 *                  futex word, waits and wakes through libc's syscall()
 *   futex-waitv-mix  a futex_waitv waiter and a FUTEX_WAIT waiter of one
 *                  word, woken one at a time every 5 ms, for 1 s
 *   futex-ring-collide  24 workers parked each on a futex word of its
 *                  own, all in one of the shim's claim rings, woken in
 *                  bursts every 5 ms (300 us of CPU each), 0.75 s
 *   timer-idle     1 s of a thread on CPU 1 (SCHED_OTHER) that spins
 *                  100 us and sleeps 400 us in nanosleep, main asleep
 *                  on CPU 0; prints the thread's kernel figures
 *   timer-idle-realtime-KIND  timer-idle spinning 30 us and sleeping to a
 *                  CLOCK_REALTIME deadline 100 us ahead: in pthread_cond_timedwait on a
 *                  default condvar (cond), sem_timedwait (sem) or
 *                  clock_nanosleep TIMER_ABSTIME (clock)
 *   wake-ring-eventfd, wake-ring-pipe, wake-ring-socket  four event
 *                  loops on CPU 1 passing two tokens round a ring through
 *                  their wake descriptors (eventfd in epoll, pipe in poll,
 *                  socket pair in select), 40 us of work a token; prints
 *                  the loops' kernel figures
 *   timer-queued   four threads on CPU 1, each 40 us of work and a 100 us
 *                  nanosleep, for 1 s; prints their kernel figures, summed
 *   timer-herd     four threads on CPU 1 asleep to one deadline every 1 ms,
 *                  no work, for 2 s; their kernel figures, summed
 *   timer-slack    timer-idle for 2 s with the thread's timer slack 1 ms, set
 *                  by itself through prctl()
 *   timer-slack-inherited  the same with main's slack set to 1 ms
 *                  through syscall(SYS_prctl) before it creates the thread
 *   timer-realtime  timer-idle for 2 s with the thread SCHED_FIFO 1 by
 *                  its own pthread_setschedparam, after a slack of 1 ms
 *                  and before one of 5 ms (ignored): its timers get none
 *   timer-realtime-other  the same, made SCHED_FIFO by main as soon as
 *                  it is created
 *   timer-realtime-left  main's slack 2 ms; the thread sets 50 us, main
 *                  makes it SCHED_FIFO and SCHED_OTHER again: its slack
 *                  is its default, 2 ms; it spins 300 us and sleeps 400
 *   timer-realtime-syscall  the same round trip made by the thread itself
 *                  through syscall(SYS_sched_setattr) and
 *                  syscall(SYS_sched_setscheduler)
 *   timer-realtime-keep-params, -vfork, -reuse, -reset: a SCHED_OTHER
 *                  thread with its own 2 ms slack (spinning 300 us) that
 *                  the shim must not take for real time: after a
 *                  sched_setattr with SCHED_FLAG_KEEP_PARAMS (policy
 *                  kept); beside a vfork child that goes real time;
 *                  created in the record of a thread that ended its
 *                  tracking, then made SCHED_FIFO in its key destructor;
 *                  created by a main started SCHED_FIFO with
 *                  SCHED_RESET_ON_FORK (re-executed so, as by chrt -R)
 *   timer-realtime-round-trips  the thread (own 2 ms slack, spinning 20 us) asleep on a
 *                  semaphore while main takes it into real time and out
 *                  32 times: its slack is its default, 50 us
 *   timer-realtime-vfork-parent  the thread's vfork child calls
 *                  pthread_setschedparam(pthread_self(), SCHED_FIFO),
 *                  which makes the thread itself real time: no slack
 *   timer-realtime-adopted  started SCHED_FIFO (re-executed so), main
 *                  leaves real time, and a SIGEV_THREAD timer's thread
 *                  (glibc's own, adopted) sets 2 ms and sleeps
 *   handler-in-wait-KIND  a thread on CPU 1 in a wait of KIND (sem,
 *                  cond, futex through syscall(), sleep, pause; nested:
 *                  sem, with a handler asleep 300 us of its 500) that
 *                  main, on CPU 0, signals every millisecond for 1 s: its
 *                  handler spins 300 us; prints the two threads' kernel
 *                  figures
 *   timer-busy     every 20 ms a thread on CPU 0 wakes a spinner (5 ms,
 *                  SCHED_FIFO 3) on CPU 1, where another thread
 *                  (SCHED_FIFO 2) sleeps 1 ms at a time in nanosleep:
 *                  its timer fires behind the spinner, which it waits for
 *   mutex-queue    1 s of four threads taking one default mutex for
 *                  10 us, then spinning 30 us; prints their kernel
 *                  figures
 *   mutex-queue-c11  four threads taking one default mutex for 200 us,
 *                  then sleeping 100 us, three of them locking with
 *                  C11's mtx_lock
 *   queued-posts   on CPU 0: a poster (SCHED_FIFO 3) posts a semaphore,
 *                  spins 4 ms, posts again, spins 4 ms and sleeps 2 ms,
 *                  60 times; two waiters (SCHED_FIFO 1) asleep on it are
 *                  woken by one post each and wait for the CPU 8 and
 *                  4 ms; prints the three threads' kernel figures
 *   sampled-elsewhere  for SECONDS: a "sleeper" thread (timer slack
 *                  200 us, set by an inline system call) spins 20 us and
 *                  sleeps 2 ms in nanosleep; an "inflater" thread
 *                  sleeps 100 us in
 *                  nanosleep (a timer wake the shim dates by the CPU a
 *                  sleep costs, which asks for a sample), waits 50 us in
 *                  sigwaitinfo, then sleeps in another nanosleep that a
 *                  timer signal cuts short after 100 us, whose handler
 *                  spins 150 us: a sleep of 150 us of CPU (helper-64)
 *   racing-posts   on CPU 0: a poster (SCHED_FIFO 3) posts a semaphore,
 *                  which wakes a waiter (SCHED_FIFO 1) that then waits
 *                  for the CPU 4 ms, and meanwhile posts and takes back
 *                  3 times while a thread on CPU 1 (SCHED_FIFO 2) does
 *                  the same: posts that wake nobody, racing; 60 rounds;
 *                  prints the three threads' kernel figures
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include "raw_syscall.h"

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
/* The kernel's figures for the calling thread: seconds on a CPU and
 * waiting for one (0 when schedstat cannot be read). */
static void own_schedstat(double *cpu, double *wait)
{
	unsigned long long run = 0, waited = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (f) {
		if (fscanf(f, "%llu %llu", &run, &waited) != 2)
			run = waited = 0;
		fclose(f);
	}
	*cpu = run / 1e9;
	*wait = waited / 1e9;
}

/* Pins the calling thread to `cpu` at SCHED_FIFO `priority`: false when
 * either is not allowed (not root). */
static bool place_thread(int cpu, int priority)
{
	cpu_set_t cpus;
	struct sched_param param = { .sched_priority = priority };

	CPU_ZERO(&cpus);
	CPU_SET(cpu, &cpus);
	return pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus) == 0 &&
	       pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0;
}

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
	own_schedstat(&ff_cpu[(int)(long)a], &ff_wait[(int)(long)a]);
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

/* ---- preempting-wakee ---- */
static sem_t pw_sem;
static volatile int pw_stop;

/* CPU 0 and SCHED_FIFO when allowed (root); otherwise the scheduler's
 * wake-up preemption does the same most of the time. */
static void *pw_waiter(void *arg)
{
	(void)arg;
	place_thread(0, 2);
	while (!pw_stop)
		sem_wait(&pw_sem);
	return NULL;
}

static int preempting_wakee(void)
{
	pthread_t t;

	place_thread(0, 1);
	sem_init(&pw_sem, 0, 0);
	pthread_create(&t, NULL, pw_waiter, NULL);
	pause_ns(5000000);
	for (int i = 0; i < 50; i++) {
		sem_post(&pw_sem);
		pause_ns(20000000);
	}
	pw_stop = 1;
	sem_post(&pw_sem);
	pthread_join(t, NULL);
	return 0;
}

/* ---- remote-busy ---- */
static sem_t rb_spin, rb_wait;
static volatile int rb_stop;

static void *rb_spinner(void *arg)
{
	(void)arg;
	place_thread(1, 3);
	while (!rb_stop) {
		sem_wait(&rb_spin);
		struct timespec start, now;
		clock_gettime(CLOCK_MONOTONIC, &start);
		do
			clock_gettime(CLOCK_MONOTONIC, &now);
		while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 5000000);
	}
	return NULL;
}

static void *rb_waiter(void *arg)
{
	(void)arg;
	place_thread(1, 2);
	while (!rb_stop)
		sem_wait(&rb_wait);
	return NULL;
}

static int remote_busy(void)
{
	pthread_t spinner, waiter;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || !place_thread(0, 4))
		return 77;
	sem_init(&rb_spin, 0, 0);
	sem_init(&rb_wait, 0, 0);
	pthread_create(&spinner, NULL, rb_spinner, NULL);
	pthread_create(&waiter, NULL, rb_waiter, NULL);
	pause_ns(5000000);
	for (int i = 0; i < 50; i++) {
		sem_post(&rb_spin);
		sem_post(&rb_wait);
		pause_ns(20000000);
	}
	rb_stop = 1;
	sem_post(&rb_spin);
	sem_post(&rb_wait);
	pthread_join(spinner, NULL);
	pthread_join(waiter, NULL);
	return 0;
}

/* ---- remote-idle ---- */
static sem_t ri_turn[2];
static volatile int ri_stop;
static double ri_cpu[2], ri_wait[2];

static void *ri_player(void *arg)
{
	int me = (int)(long)arg;

	place_thread(me, 2);
	while (!ri_stop) {
		sem_wait(&ri_turn[me]);
		struct timespec start, now;
		clock_gettime(CLOCK_MONOTONIC, &start);
		do
			clock_gettime(CLOCK_MONOTONIC, &now);
		while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 20000);
		sem_post(&ri_turn[1 - me]);
	}
	sem_post(&ri_turn[1 - me]);
	own_schedstat(&ri_cpu[me], &ri_wait[me]);
	return NULL;
}

static int remote_idle(void)
{
	pthread_t players[2];

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || !place_thread(0, 1))
		return 77;
	sem_init(&ri_turn[0], 0, 1);
	sem_init(&ri_turn[1], 0, 0);
	for (long i = 0; i < 2; i++)
		pthread_create(&players[i], NULL, ri_player, (void *)i);
	pause_ns(1000000000);
	ri_stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(players[i], NULL);
	printf("cpu %.6f wait %.6f\n", ri_cpu[0] + ri_cpu[1], ri_wait[0] + ri_wait[1]);
	return 0;
}

/* ---- queued-posts ---- */
static sem_t qp_sem;
static volatile int qp_stop;
static double qp_cpu[3], qp_wait[3];

static void spin_ns(long ns)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do
		clock_gettime(CLOCK_MONOTONIC, &now);
	while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < ns);
}

static void *qp_waiter(void *arg)
{
	int me = (int)(long)arg;

	place_thread(0, 1);
	while (!qp_stop)
		sem_wait(&qp_sem);
	own_schedstat(&qp_cpu[me], &qp_wait[me]);
	return NULL;
}

static int queued_posts(void)
{
	pthread_t waiters[2];

	if (!place_thread(0, 3))
		return 77;
	sem_init(&qp_sem, 0, 0);
	for (long i = 0; i < 2; i++)
		pthread_create(&waiters[i], NULL, qp_waiter, (void *)i);
	pause_ns(5000000);
	/* Run-queue waits under the commit lag (TDSTAT_COMMIT_LAG_NS, 10 ms):
	 * a longer one is re-dated only that far back. */
	for (int round = 0; round < 60; round++) {
		sem_post(&qp_sem);
		spin_ns(4000000);
		sem_post(&qp_sem);
		spin_ns(4000000);
		pause_ns(2000000);
	}
	qp_stop = 1;
	sem_post(&qp_sem);
	sem_post(&qp_sem);
	for (int i = 0; i < 2; i++)
		pthread_join(waiters[i], NULL);
	own_schedstat(&qp_cpu[2], &qp_wait[2]);
	printf("cpu %.6f wait %.6f\n", qp_cpu[0] + qp_cpu[1] + qp_cpu[2], qp_wait[0] + qp_wait[1] + qp_wait[2]);
	return 0;
}

/* ---- racing-posts ---- */
static sem_t rp_sem;
static volatile int rp_stop;
static atomic_int rp_round, rp_ready, rp_go;
static double rp_cpu[3], rp_wait[3];

/* Posts that find the waiter registered but not asleep (it waits for
 * the CPU): each is stamped, wakes nobody and is withdrawn. */
static void rp_post_and_take(void)
{
	for (int i = 0; i < 3; i++) {
		sem_post(&rp_sem);
		sem_trywait(&rp_sem);
	}
}

static void *rp_waiter(void *arg)
{
	(void)arg;
	place_thread(0, 1);
	while (!rp_stop)
		sem_wait(&rp_sem);
	own_schedstat(&rp_cpu[0], &rp_wait[0]);
	return NULL;
}

static void *rp_racer(void *arg)
{
	(void)arg;
	place_thread(1, 2);
	for (int round = 1;; round++) {
		while (atomic_load(&rp_round) < round)
			syscall(SYS_futex, &rp_round, FUTEX_WAIT_PRIVATE, round - 1, NULL, NULL, 0);
		if (rp_stop)
			break;
		atomic_store(&rp_ready, round);
		while (atomic_load(&rp_go) < round)
			;
		rp_post_and_take();
	}
	own_schedstat(&rp_cpu[1], &rp_wait[1]);
	return NULL;
}

static int racing_posts(void)
{
	pthread_t waiter, racer;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || !place_thread(0, 3))
		return 77;
	sem_init(&rp_sem, 0, 0);
	pthread_create(&waiter, NULL, rp_waiter, NULL);
	pthread_create(&racer, NULL, rp_racer, NULL);
	pause_ns(5000000);
	for (int round = 1; round <= 60; round++) {
		/* The waiter is asleep: this post wakes it, and it waits for
		 * CPU 0 until the pause below. */
		sem_post(&rp_sem);
		atomic_store(&rp_round, round);
		syscall(SYS_futex, &rp_round, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		while (atomic_load(&rp_ready) < round)
			;
		atomic_store(&rp_go, round);
		rp_post_and_take();
		spin_ns(4000000);
		pause_ns(2000000);
	}
	rp_stop = 1;
	atomic_store(&rp_round, 61);
	syscall(SYS_futex, &rp_round, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	sem_post(&rp_sem);
	pthread_join(waiter, NULL);
	pthread_join(racer, NULL);
	own_schedstat(&rp_cpu[2], &rp_wait[2]);
	printf("cpu %.6f wait %.6f\n", rp_cpu[0] + rp_cpu[1] + rp_cpu[2], rp_wait[0] + rp_wait[1] + rp_wait[2]);
	return 0;
}

/* ---- timer-idle, timer-slack, timer-slack-inherited ---- */
static volatile int ti_stop;
static double ti_cpu, ti_wait;
/* The sleeper's timer slack (1 ms), set by itself through prctl(); 0:
 * left as it is. */
static unsigned long ti_own_slack;

/* How the sleeper sleeps: nanosleep, or to a deadline on CLOCK_REALTIME
 * 100 us ahead, after 30 us of work (timer-idle-realtime-KIND: the way
 * out of the wait is a larger part of it). */
static enum { TI_NANOSLEEP, TI_REALTIME_COND, TI_REALTIME_SEM, TI_REALTIME_CLOCK } ti_how;
static pthread_mutex_t ti_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ti_never = PTHREAD_COND_INITIALIZER;
static sem_t ti_unposted;

static void ti_sleep(const struct timespec *pause)
{
	struct timespec deadline;

	if (ti_how == TI_NANOSLEEP) {
		nanosleep(pause, NULL);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_nsec += pause->tv_nsec;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	if (ti_how == TI_REALTIME_COND) {
		pthread_mutex_lock(&ti_lock);
		pthread_cond_timedwait(&ti_never, &ti_lock, &deadline);
		pthread_mutex_unlock(&ti_lock);
	} else if (ti_how == TI_REALTIME_SEM) {
		sem_timedwait(&ti_unposted, &deadline);
	} else {
		clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &deadline, NULL);
	}
}

static void *ti_sleeper(void *arg)
{
	const struct timespec pause = { 0, ti_how == TI_NANOSLEEP ? 400000 : 100000 };
	cpu_set_t cpus;

	(void)arg;
	if (ti_own_slack)
		prctl(PR_SET_TIMERSLACK, ti_own_slack, 0, 0, 0);
	CPU_ZERO(&cpus);
	CPU_SET(1, &cpus);
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	while (!ti_stop) {
		spin_ns(ti_how == TI_NANOSLEEP ? 100000 : 30000);
		ti_sleep(&pause);
	}
	own_schedstat(&ti_cpu, &ti_wait);
	return NULL;
}

/* `slack`: the sleeper's own (prctl in it), or with `inherited` main's
 * before it creates the sleeper (through syscall()). */
static int timer_idle(unsigned long slack, bool inherited)
{
	pthread_t sleeper;
	cpu_set_t cpus;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return 77;
	if (inherited)
		syscall(SYS_prctl, PR_SET_TIMERSLACK, slack, 0, 0, 0);
	else
		ti_own_slack = slack;
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	pthread_create(&sleeper, NULL, ti_sleeper, NULL);
	/* Long enough for 0.1 s of CPU at the slack's longer sleeps. */
	pause_ns(slack ? 2000000000L : 1000000000L);
	ti_stop = 1;
	pthread_join(sleeper, NULL);
	printf("cpu %.6f wait %.6f\n", ti_cpu, ti_wait);
	return 0;
}

/* ---- timer-queued, timer-herd: four threads on CPU 1 (main on CPU 0),
 * each running `step` until stopped; their kernel figures, summed ---- */
static volatile int four_stop;
static double four_cpu, four_wait;
static pthread_mutex_t four_lock = PTHREAD_MUTEX_INITIALIZER;
static struct timespec four_start;

static void *four_sleeper(void *step)
{
	void (*each)(struct timespec *deadline) = (void (*)(struct timespec *))step;
	struct timespec deadline = four_start;
	cpu_set_t cpus;
	double cpu, wait;

	CPU_ZERO(&cpus);
	CPU_SET(1, &cpus);
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	while (!four_stop)
		each(&deadline);
	own_schedstat(&cpu, &wait);
	pthread_mutex_lock(&four_lock);
	four_cpu += cpu;
	four_wait += wait;
	pthread_mutex_unlock(&four_lock);
	return NULL;
}

static int four_on_one_cpu(void (*step)(struct timespec *deadline), long ns)
{
	pthread_t sleepers[4];
	cpu_set_t cpus;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return 77;
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	clock_gettime(CLOCK_MONOTONIC, &four_start);
	for (int i = 0; i < 4; i++)
		pthread_create(&sleepers[i], NULL, four_sleeper, (void *)step);
	pause_ns(ns);
	four_stop = 1;
	for (int i = 0; i < 4; i++)
		pthread_join(sleepers[i], NULL);
	printf("cpu %.6f wait %.6f\n", four_cpu, four_wait);
	return 0;
}

/* timer-queued: 40 us of work and a 100 us nanosleep: a timer's wake-up
 * waits for the CPU behind the others, 50-250 us. */
static void queued_step(struct timespec *unused)
{
	const struct timespec pause = { 0, 100000 };

	(void)unused;
	spin_ns(40000);
	nanosleep(&pause, NULL);
}

/* timer-herd: asleep to the same deadline every millisecond, with no
 * work: a halted CPU fires the four timers late at once. */
static void herd_step(struct timespec *deadline)
{
	deadline->tv_nsec += 1000000;
	if (deadline->tv_nsec >= 1000000000L) {
		deadline->tv_sec++;
		deadline->tv_nsec -= 1000000000L;
	}
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline, NULL);
}

static int timer_queued(void)
{
	return four_on_one_cpu(queued_step, 1000000000L);
}

/* Two seconds: the kernel's figures are a tenth of a second a second. */
static int timer_herd(void)
{
	return four_on_one_cpu(herd_step, 2000000000L);
}

/* ---- wake-ring-eventfd, wake-ring-pipe, wake-ring-socket: four event
 * loops on CPU 1 pass two tokens round a ring, each loop asleep in a
 * readiness wait on its own wake descriptor (an eventfd in an epoll
 * instance, written with eventfd_write; a pipe's read end in poll,
 * written with write; a socket pair's end in select, written with send),
 * 40 us of work a token: a woken loop waits for the CPU behind the other
 * token's.  Main, on CPU 0, hands out the tokens and stops the ring.
 * Prints the four loops' kernel figures, summed ---- */
enum ring_how { RING_EVENTFD, RING_PIPE, RING_SOCKET };
static enum ring_how ring_how;
static int ring_read_fd[4], ring_write_fd[4], ring_epoll[4];
static volatile int ring_stop;
static double ring_cpu, ring_wait;
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;

static void ring_pass(int to)
{
	char byte = 1;

	if (ring_how == RING_EVENTFD)
		(void)eventfd_write(ring_write_fd[to], 1);
	else if (ring_how == RING_PIPE)
		(void)!write(ring_write_fd[to], &byte, 1);
	else
		(void)!send(ring_write_fd[to], &byte, 1, 0);
}

/* Waits for a token; the tokens taken (an eventfd's count). */
static long ring_take(int me)
{
	int fd = ring_read_fd[me];

	if (ring_how == RING_EVENTFD) {
		struct epoll_event event;
		eventfd_t count = 0;

		while (epoll_wait(ring_epoll[me], &event, 1, -1) != 1)
			;
		(void)eventfd_read(fd, &count);
		return (long)count;
	}
	if (ring_how == RING_PIPE) {
		struct pollfd wanted = { .fd = fd, .events = POLLIN };

		while (poll(&wanted, 1, -1) != 1)
			;
	} else {
		fd_set readable;

		do {
			FD_ZERO(&readable);
			FD_SET(fd, &readable);
		} while (select(fd + 1, &readable, NULL, NULL, NULL) != 1);
	}
	char bytes[8];
	ssize_t got = recv(fd, bytes, sizeof(bytes), MSG_DONTWAIT);
	if (got < 0)
		got = read(fd, bytes, sizeof(bytes));
	return got > 0 ? (long)got : 0;
}

static void *ring_loop(void *arg)
{
	int me = (int)(long)arg;
	cpu_set_t cpus;
	double cpu, wait;

	CPU_ZERO(&cpus);
	CPU_SET(1, &cpus);
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	while (!ring_stop) {
		long tokens = ring_take(me);

		for (long i = 0; i < tokens && !ring_stop; i++) {
			spin_ns(40000);
			ring_pass((me + 1) % 4);
		}
	}
	own_schedstat(&cpu, &wait);
	pthread_mutex_lock(&ring_lock);
	ring_cpu += cpu;
	ring_wait += wait;
	pthread_mutex_unlock(&ring_lock);
	return NULL;
}

static int wake_ring(enum ring_how how)
{
	pthread_t loops[4];
	cpu_set_t cpus;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return 77;
	ring_how = how;
	for (int i = 0; i < 4; i++) {
		int fds[2];

		if (how == RING_EVENTFD) {
			struct epoll_event event = { .events = EPOLLIN };

			fds[0] = fds[1] = eventfd(0, 0);
			ring_epoll[i] = epoll_create1(0);
			event.data.fd = fds[0];
			if (fds[0] < 0 || ring_epoll[i] < 0 || epoll_ctl(ring_epoll[i], EPOLL_CTL_ADD, fds[0], &event) != 0)
				return 1;
		} else if (how == RING_PIPE ? pipe(fds) != 0 : socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
			return 1;
		}
		ring_read_fd[i] = fds[0];
		ring_write_fd[i] = fds[1];
	}
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	for (int i = 0; i < 4; i++)
		pthread_create(&loops[i], NULL, ring_loop, (void *)(long)i);
	ring_pass(0);
	ring_pass(2);
	pause_ns(getenv("RING_SECONDS") ? (long)(atof(getenv("RING_SECONDS")) * 1e9) : 1000000000L);
	ring_stop = 1;
	for (int i = 0; i < 4; i++)
		ring_pass(i);
	for (int i = 0; i < 4; i++)
		pthread_join(loops[i], NULL);
	printf("cpu %.6f wait %.6f\n", ring_cpu, ring_wait);
	return 0;
}

/* ---- wake-decoy-oneshot, wake-decoy-epoll-reused, wake-decoy-fclose:
 * a loop woken only by a 5 ms timerfd (2 ms of work a tick) in an epoll
 * instance, while another thread writes every 1 ms to a wake descriptor
 * whose writes do not wake the loop: registered EPOLLONESHOT and fired
 * once; registered in an instance that was closed and whose number the
 * loop's took; read end closed by fclose and its number the timerfd's
 * (helper-77: the loop dated its wakes from those writes, 0.50 runnable
 * against the kernel's 0.003).  Prints the two threads' kernel figures ---- */
static volatile int decoy_stop;
static int decoy_epoll, decoy_timerfd, decoy_write_fd;
static double decoy_cpu, decoy_wait;
static pthread_mutex_t decoy_lock = PTHREAD_MUTEX_INITIALIZER;

static void decoy_account(void)
{
	double cpu, wait;

	own_schedstat(&cpu, &wait);
	pthread_mutex_lock(&decoy_lock);
	decoy_cpu += cpu;
	decoy_wait += wait;
	pthread_mutex_unlock(&decoy_lock);
}

static void *decoy_loop(void *unused)
{
	struct epoll_event events[4];

	(void)unused;
	while (!decoy_stop) {
		int n = epoll_wait(decoy_epoll, events, 4, 100);
		for (int i = 0; i < n; i++) {
			uint64_t ticks;

			if (events[i].data.fd == decoy_timerfd && read(decoy_timerfd, &ticks, sizeof(ticks)) == sizeof(ticks))
				spin_ns(2000000);
		}
	}
	decoy_account();
	return NULL;
}

static void *decoy_writer(void *unused)
{
	const struct timespec every = { 0, 1000000 };

	(void)unused;
	while (!decoy_stop) {
		(void)!write(decoy_write_fd, "x", 1);
		nanosleep(&every, NULL);
	}
	decoy_account();
	return NULL;
}

static int wake_decoy(const char *how)
{
	struct epoll_event event = { .events = EPOLLIN };
	struct itimerspec tick = { { 0, 5000000 }, { 0, 5000000 } };
	pthread_t loop, writer;
	int fds[2];

	if (!strcmp(how, "oneshot")) {
		decoy_epoll = epoll_create1(0);
		if (pipe2(fds, O_NONBLOCK) != 0)
			return 1;
		event.events = EPOLLIN | EPOLLONESHOT;
		event.data.fd = fds[0];
		epoll_ctl(decoy_epoll, EPOLL_CTL_ADD, fds[0], &event);
		(void)!write(fds[1], "x", 1);
		epoll_wait(decoy_epoll, &event, 1, 0); /* fires, and is disarmed */
	} else if (!strcmp(how, "epoll-reused")) {
		int first = epoll_create1(0);

		if (pipe2(fds, O_NONBLOCK) != 0)
			return 1;
		event.data.fd = fds[0];
		epoll_ctl(first, EPOLL_CTL_ADD, fds[0], &event);
		close(first);
		decoy_epoll = epoll_create1(0);
		if (decoy_epoll != first)
			return 1;
		/* A wake descriptor of its own, never written. */
		int own = eventfd(0, EFD_NONBLOCK);
		event.data.fd = own;
		epoll_ctl(decoy_epoll, EPOLL_CTL_ADD, own, &event);
	} else {
		decoy_epoll = epoll_create1(0);
		if (pipe2(fds, O_NONBLOCK) != 0)
			return 1;
		int kept = dup(fds[0]);
		FILE *stream = fdopen(fds[0], "r");

		(void)kept;
		fclose(stream);
	}
	decoy_write_fd = fds[1];
	decoy_timerfd = timerfd_create(CLOCK_MONOTONIC, 0);
	if (!strcmp(how, "fclose") && decoy_timerfd != fds[0])
		return 1;
	timerfd_settime(decoy_timerfd, 0, &tick, NULL);
	event.events = EPOLLIN;
	event.data.fd = decoy_timerfd;
	epoll_ctl(decoy_epoll, EPOLL_CTL_ADD, decoy_timerfd, &event);
	pthread_create(&loop, NULL, decoy_loop, NULL);
	pthread_create(&writer, NULL, decoy_writer, NULL);
	pause_ns(1000000000L);
	decoy_stop = 1;
	pthread_join(loop, NULL);
	pthread_join(writer, NULL);
	printf("cpu %.6f wait %.6f\n", decoy_cpu, decoy_wait);
	return 0;
}

/* ---- timer-realtime, timer-realtime-other, timer-realtime-left,
 * timer-realtime-syscall: a real-time thread's timers get no slack, and
 * leaving real time gives a thread its default slack back ---- */
enum realtime_how {
	RT_SELF, RT_OTHER, RT_LEFT, RT_SYSCALL, RT_KEEP_PARAMS, RT_VFORK, RT_REUSE, RT_RESET, RT_ROUND_TRIPS, RT_VFORK_PARENT,
	RT_ADOPTED
};
static enum realtime_how tr_how;
static volatile int tr_stop;
static double tr_cpu, tr_wait;
static long tr_spin_ns;
static sem_t tr_ready, tr_go;

/* struct sched_attr's first fields (linux/sched/types.h). */
struct tr_sched_attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
};

static bool tr_set(pthread_t thread, int policy)
{
	struct sched_param param = { .sched_priority = policy == SCHED_FIFO ? 1 : 0 };

	return pthread_setschedparam(thread, policy, &param) == 0;
}

static void *tr_sleeper(void *arg)
{
	const struct timespec pause = { 0, 400000 };
	cpu_set_t cpus;
	bool placed = true;

	(void)arg;
	CPU_ZERO(&cpus);
	CPU_SET(1, &cpus);
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	switch (tr_how) {
	case RT_SELF:
		/* Its own 1 ms, then real time, then 5 ms, which the kernel
		 * ignores in real time: no slack. */
		prctl(PR_SET_TIMERSLACK, 1000000, 0, 0, 0);
		placed = tr_set(pthread_self(), SCHED_FIFO);
		prctl(PR_SET_TIMERSLACK, 5000000, 0, 0, 0);
		break;
	case RT_OTHER:
		/* Real time by main, maybe before this ran: no slack. */
		prctl(PR_SET_TIMERSLACK, 1000000, 0, 0, 0);
		break;
	case RT_LEFT:
		/* Its own 50 us; then main takes it into real time and out:
		 * the default again, main's 2 ms at its creation. */
		prctl(PR_SET_TIMERSLACK, 50000, 0, 0, 0);
		sem_post(&tr_ready);
		sem_wait(&tr_go);
		break;
	case RT_KEEP_PARAMS: {
		/* Its own 2 ms, then a sched_setattr that keeps the
		 * parameters: the kernel leaves the policy, SCHED_OTHER. */
		struct tr_sched_attr attr = { .size = sizeof(attr), .policy = SCHED_FIFO, .priority = 1, .flags = 0x10 };

		prctl(PR_SET_TIMERSLACK, 2000000, 0, 0, 0);
		placed = syscall(SYS_sched_setattr, 0, &attr, 0) == 0;
		break;
	}
	case RT_VFORK: {
		/* Its own 2 ms; a vfork child goes real time and ends: this
		 * thread stays SCHED_OTHER. */
		prctl(PR_SET_TIMERSLACK, 2000000, 0, 0, 0);
		pid_t child = vfork();
		if (child == 0) {
			struct sched_param fifo = { .sched_priority = 1 };
			_exit(sched_setscheduler(0, SCHED_FIFO, &fifo) == 0 ? 0 : 1);
		}
		int status = 0;
		placed = child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
		break;
	}
	case RT_ROUND_TRIPS:
		/* Its own 2 ms; then, asleep on a semaphore (no timer to date,
		 * so the shim does not look), main takes it into real time and
		 * out 32 times: its default again, 50 us. */
		prctl(PR_SET_TIMERSLACK, 2000000, 0, 0, 0);
		sem_post(&tr_ready);
		sem_wait(&tr_go);
		break;
	case RT_VFORK_PARENT: {
		/* Its own 2 ms; a vfork child's pthread_setschedparam of
		 * pthread_self() names this thread (glibc's descriptor is
		 * shared): this thread goes real time, no slack. */
		struct sched_param fifo = { .sched_priority = 1 };

		prctl(PR_SET_TIMERSLACK, 2000000, 0, 0, 0);
		pid_t child = vfork();
		if (child == 0)
			_exit(pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) == 0 ? 0 : 1);
		int status = 0;
		placed = child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
			 sched_getscheduler(0) == SCHED_FIFO;
		break;
	}
	case RT_ADOPTED:
	case RT_REUSE:
	case RT_RESET:
		/* Its own 2 ms, and SCHED_OTHER (see timer_realtime). */
		prctl(PR_SET_TIMERSLACK, 2000000, 0, 0, 0);
		break;
	case RT_SYSCALL: {
		/* The same round trip by itself, through syscall(). */
		struct tr_sched_attr attr = { .size = sizeof(attr), .policy = SCHED_FIFO, .priority = 1 };
		struct sched_param normal = { 0 };

		prctl(PR_SET_TIMERSLACK, 50000, 0, 0, 0);
		placed = syscall(SYS_sched_setattr, 0, &attr, 0) == 0 &&
			 syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, &normal) == 0;
		break;
	}
	}
	if (!placed) {
		fprintf(stderr, "rel_review_target: no SCHED_FIFO: %s\n", strerror(errno));
		exit(77);
	}
	while (!tr_stop) {
		spin_ns(tr_spin_ns);
		nanosleep(&pause, NULL);
	}
	own_schedstat(&tr_cpu, &tr_wait);
	return NULL;
}

/* timer-realtime-reuse: a thread that ended its tracking (its record
 * free for the next thread) but still runs its key destructors. */
static sem_t tr_in_destructor, tr_release;
static pthread_key_t tr_key;

static void tr_destructor(void *value)
{
	(void)value;
	sem_post(&tr_in_destructor);
	sem_wait(&tr_release);
}

static void *tr_ending(void *arg)
{
	pthread_setspecific(tr_key, (void *)1);
	return arg;
}

static sem_t tr_done;

static void tr_timer_thread(union sigval value)
{
	(void)value;
	tr_sleeper(NULL);
	sem_post(&tr_done);
}

static int timer_realtime(enum realtime_how how, const char *self_path)
{
	pthread_t sleeper, ending;
	cpu_set_t cpus;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return 77;
	/* timer-realtime-reset: this program again, started real time with
	 * SCHED_RESET_ON_FORK (as by chrt -R), its main thread never calling
	 * a scheduling function itself. */
	if (how == RT_RESET && sched_getscheduler(0) == SCHED_OTHER) {
		struct sched_param fifo = { .sched_priority = 1 };

		if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &fifo) != 0)
			return 77;
		execl(self_path, self_path, "timer-realtime-reset", (char *)NULL);
		return 77;
	}
	/* timer-realtime-adopted: likewise started SCHED_FIFO, main leaves
	 * real time, and the sleeper is a SIGEV_THREAD timer's thread, which
	 * glibc starts itself (the shim adopts it), setting its slack before
	 * its first wait. */
	if (how == RT_ADOPTED && sched_getscheduler(0) == SCHED_OTHER) {
		struct sched_param fifo = { .sched_priority = 1 };

		if (sched_setscheduler(0, SCHED_FIFO, &fifo) != 0)
			return 77;
		execl(self_path, self_path, "timer-realtime-adopted", (char *)NULL);
		return 77;
	}
	tr_how = how;
	/* Sleeps that the 2 ms slack stretches get more CPU each, so that
	 * 2 s hold well over 0.1 s of it. */
	tr_spin_ns = how == RT_SELF || how == RT_OTHER ? 50000 : how == RT_ROUND_TRIPS || how == RT_VFORK_PARENT ? 20000 : 300000;
	sem_init(&tr_ready, 0, 0);
	sem_init(&tr_go, 0, 0);
	sem_init(&tr_done, 0, 0);
	if (how == RT_LEFT || how == RT_SYSCALL)
		prctl(PR_SET_TIMERSLACK, 2000000, 0, 0, 0);
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	if (how == RT_REUSE) {
		/* A thread ends its tracking and waits in its destructor; the
		 * sleeper takes its record; then the ended one is made real
		 * time, which must not reach the sleeper. */
		sem_init(&tr_in_destructor, 0, 0);
		sem_init(&tr_release, 0, 0);
		pthread_key_create(&tr_key, tr_destructor);
		pthread_create(&ending, NULL, tr_ending, NULL);
		sem_wait(&tr_in_destructor);
	}
	if (how == RT_ADOPTED) {
		struct sched_param normal = { 0 };
		struct sigevent event = { .sigev_notify = SIGEV_THREAD, .sigev_notify_function = tr_timer_thread };
		struct itimerspec once = { .it_value = { 0, 1000000 } };
		timer_t timer;

		if (sched_setscheduler(0, SCHED_OTHER, &normal) != 0 || timer_create(CLOCK_MONOTONIC, &event, &timer) != 0 ||
		    timer_settime(timer, 0, &once, NULL) != 0)
			return 77;
		pause_ns(2000000000L);
		tr_stop = 1;
		sem_wait(&tr_done);
		printf("cpu %.6f wait %.6f\n", tr_cpu, tr_wait);
		return 0;
	}
	pthread_create(&sleeper, NULL, tr_sleeper, NULL);
	if (how == RT_ROUND_TRIPS) {
		sem_wait(&tr_ready);
		for (int i = 0; i < 32; i++)
			if (!tr_set(sleeper, SCHED_FIFO) || !tr_set(sleeper, SCHED_OTHER))
				return 77;
		sem_post(&tr_go);
	}
	if (how == RT_REUSE) {
		pause_ns(20000000L);
		bool set = tr_set(ending, SCHED_FIFO);
		sem_post(&tr_release);
		pthread_join(ending, NULL);
		if (!set)
			return 77;
	}
	if (how == RT_OTHER && !tr_set(sleeper, SCHED_FIFO))
		return 77;
	if (how == RT_LEFT) {
		sem_wait(&tr_ready);
		if (!tr_set(sleeper, SCHED_FIFO) || !tr_set(sleeper, SCHED_OTHER))
			return 77;
		sem_post(&tr_go);
	}
	pause_ns(2000000000L);
	tr_stop = 1;
	pthread_join(sleeper, NULL);
	printf("cpu %.6f wait %.6f\n", tr_cpu, tr_wait);
	return 0;
}

/* ---- timer-busy ---- */
static sem_t tb_spin;
static volatile int tb_stop;

static void *tb_spinner(void *arg)
{
	(void)arg;
	place_thread(1, 3);
	while (!tb_stop) {
		sem_wait(&tb_spin);
		spin_ns(5000000);
	}
	return NULL;
}

static void *tb_sleeper(void *arg)
{
	const struct timespec pause = { 0, 1000000 };

	(void)arg;
	place_thread(1, 2);
	while (!tb_stop)
		nanosleep(&pause, NULL);
	return NULL;
}

static int timer_busy(void)
{
	pthread_t spinner, sleeper;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || !place_thread(0, 4))
		return 77;
	sem_init(&tb_spin, 0, 0);
	pthread_create(&spinner, NULL, tb_spinner, NULL);
	pthread_create(&sleeper, NULL, tb_sleeper, NULL);
	pause_ns(5000000);
	for (int i = 0; i < 50; i++) {
		sem_post(&tb_spin);
		pause_ns(20000000);
	}
	tb_stop = 1;
	sem_post(&tb_spin);
	pthread_join(spinner, NULL);
	pthread_join(sleeper, NULL);
	return 0;
}

/* ---- mutex-queue ---- */
static pthread_mutex_t mq_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int mq_stop;
static bool mq_c11; /* threads 1-3 lock with C11's mtx_lock */
static double mq_cpu[4], mq_wait[4];
static int fq_word;
static bool fq_futex; /* the lock is futex_lock's (futex-queue) */
static void futex_lock(int *futex_word);
static void futex_unlock(int *futex_word);

static void *mq_thread(void *arg)
{
	int me = (int)(long)arg;

	while (!mq_stop) {
		if (fq_futex)
			futex_lock(&fq_word);
		else if (mq_c11 && me > 0)
			mtx_lock((mtx_t *)&mq_lock);
		else
			pthread_mutex_lock(&mq_lock);
		spin_ns(mq_c11 ? 200000 : 10000);
		if (fq_futex)
			futex_unlock(&fq_word);
		else
			pthread_mutex_unlock(&mq_lock);
		if (mq_c11)
			pause_ns(100000);
		else
			spin_ns(30000);
	}
	own_schedstat(&mq_cpu[me], &mq_wait[me]);
	return NULL;
}

/* Rust std's Mutex, as its futex lock does it: 0 free, 1 held, 2 held
 * with waiters; a contended release wakes one through libc's syscall(). */

static void futex_lock(int *futex_word)
{
	int seen = __sync_val_compare_and_swap(futex_word, 0, 1);

	if (seen == 0)
		return;
	if (seen != 2)
		seen = __sync_lock_test_and_set(futex_word, 2);
	while (seen != 0) {
		syscall(SYS_futex, futex_word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
		seen = __sync_lock_test_and_set(futex_word, 2);
	}
}

static void futex_unlock(int *futex_word)
{
	if (__sync_lock_test_and_set(futex_word, 0) == 2)
		syscall(SYS_futex, futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static int mutex_queue(bool c11)
{
	pthread_t threads[4];
	double cpu = 0, wait = 0;

	mq_c11 = c11;
	for (long i = 0; i < 4; i++)
		pthread_create(&threads[i], NULL, mq_thread, (void *)i);
	pause_ns(1000000000);
	mq_stop = 1;
	for (int i = 0; i < 4; i++) {
		pthread_join(threads[i], NULL);
		cpu += mq_cpu[i];
		wait += mq_wait[i];
	}
	printf("cpu %.6f wait %.6f\n", cpu, wait);
	return 0;
}

/* ---- futex-waitv-mix, futex-ring-collide (helper-60) ---- */
#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
struct waitv_entry {
	uint64_t val, uaddr;
	uint32_t flags, reserved;
};
static unsigned int wm_word;

static void *wm_waitv_waiter(void *arg)
{
	(void)arg;
	for (;;) {
		struct waitv_entry entry = { __atomic_load_n(&wm_word, __ATOMIC_SEQ_CST), (uint64_t)(uintptr_t)&wm_word,
					     2 | 128 /* FUTEX2_SIZE_U32 | FUTEX2_PRIVATE */, 0 };
		if (syscall(SYS_futex_waitv, &entry, 1, 0, NULL, CLOCK_MONOTONIC) == -1 && errno == ENOSYS)
			return NULL;
	}
	return NULL;
}

static void *wm_plain_waiter(void *arg)
{
	(void)arg;
	for (;;)
		syscall(SYS_futex, &wm_word, FUTEX_WAIT_PRIVATE, __atomic_load_n(&wm_word, __ATOMIC_SEQ_CST), NULL, NULL, 0);
	return NULL;
}

/* A futex_waitv waiter and a plain FUTEX_WAIT waiter of one word, woken
 * one at a time every 5 ms (the kernel wakes them in turn), for 1 s. */
static int futex_waitv_mix(void)
{
	pthread_t a, b;

	pthread_create(&a, NULL, wm_waitv_waiter, NULL);
	pause_ns(1000000);
	pthread_create(&b, NULL, wm_plain_waiter, NULL);
	pause_ns(1000000);
	for (int i = 0; i < 200; i++) {
		pause_ns(5000000);
		__atomic_fetch_add(&wm_word, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &wm_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	return 0;
}

#define RC_WORKERS 24
static unsigned int rc_pool[1 << 20];
static unsigned int *rc_words[RC_WORKERS];
static volatile int rc_stop;
static double rc_cpu[RC_WORKERS + 1], rc_wait[RC_WORKERS + 1];

/* The shim's hash of an address (runtime/wake.c), to pick words that
 * share one of its 512 claim rings, with distinct slots and tags. */
static uint64_t shim_mix(const void *object)
{
	uint64_t x = (uint64_t)(uintptr_t)object;

	x ^= x >> 29;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 32;
	return x;
}

static void *rc_worker(void *arg)
{
	int me = (int)(long)arg;
	unsigned int *mine = rc_words[me];

	while (!rc_stop) {
		while (!rc_stop && __atomic_load_n(mine, __ATOMIC_ACQUIRE) == 0)
			syscall(SYS_futex, mine, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		struct timespec start, now;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
		do
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
		while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 300000);
		__atomic_store_n(mine, 0, __ATOMIC_RELEASE);
	}
	own_schedstat(&rc_cpu[me], &rc_wait[me]);
	return NULL;
}

/* Rust's park/unpark in a pool: 24 workers each parked on a word of its
 * own, all 24 words in one claim ring, woken in bursts every 5 ms. */
static int futex_ring_collide(void)
{
	pthread_t workers[RC_WORKERS];
	uint64_t tags = 0;
	static unsigned char slot_used[4096];
	unsigned int ring = (unsigned int)((shim_mix(&rc_pool[0]) >> 32) % 512);
	int found = 0;
	double cpu = 0, wait = 0;

	for (size_t i = 0; i < sizeof(rc_pool) / sizeof(rc_pool[0]) && found < RC_WORKERS; i += 16) {
		uint64_t hash = shim_mix(&rc_pool[i]);

		if ((hash >> 32) % 512 != ring || (tags >> (hash >> 58) & 1) || slot_used[hash % 4096])
			continue;
		tags |= UINT64_C(1) << (hash >> 58);
		slot_used[hash % 4096] = 1;
		rc_words[found++] = &rc_pool[i];
	}
	if (found < RC_WORKERS)
		return 77;
	for (long i = 0; i < RC_WORKERS; i++)
		pthread_create(&workers[i], NULL, rc_worker, (void *)i);
	for (int round = 0; round < 150; round++) {
		for (int i = 0; i < RC_WORKERS; i++) {
			__atomic_store_n(rc_words[i], 1, __ATOMIC_RELEASE);
			syscall(SYS_futex, rc_words[i], FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		}
		pause_ns(5000000);
	}
	rc_stop = 1;
	for (int i = 0; i < RC_WORKERS; i++) {
		__atomic_store_n(rc_words[i], 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, rc_words[i], FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	for (int i = 0; i < RC_WORKERS; i++) {
		pthread_join(workers[i], NULL);
		cpu += rc_cpu[i];
		wait += rc_wait[i];
	}
	own_schedstat(&rc_cpu[RC_WORKERS], &rc_wait[RC_WORKERS]);
	printf("cpu %.6f wait %.6f\n", cpu + rc_cpu[RC_WORKERS], wait + rc_wait[RC_WORKERS]);
	return 0;
}

/* ---- sampled-elsewhere ---- */
static volatile int se_stop;

static void se_handler(int signal)
{
	(void)signal;
	spin_ns(150000);
}

static void *se_sleeper(void *unused)
{
	const struct timespec pause = { 0, 2000000 };

	/* A slack the shim does not see (an inline system call): its timers
	 * return ~150 us past the expiry it assumes, within the bound that
	 * dates them back by the CPU a sleep costs, so that figure decides
	 * what they count. */
#if defined(__x86_64__)
	tdtest_raw_syscall4(SYS_prctl, PR_SET_TIMERSLACK, 200000, 0, 0);
#endif
	while (!se_stop) {
		spin_ns(20000);
		nanosleep(&pause, NULL);
	}
	return unused;
}

static void *se_inflater(void *unused)
{
	struct sigevent cut = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR1 };
	struct sigevent decoy = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR2 };
	const struct itimerspec cut_at = { .it_value = { 0, 100000 } }, decoy_at = { .it_value = { 0, 50000 } };
	const struct timespec short_sleep = { 0, 100000 }, long_sleep = { 0, 10000000 };
	timer_t cut_timer, decoy_timer;
	sigset_t decoys;

	cut._sigev_un._tid = decoy._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	sigemptyset(&decoys);
	sigaddset(&decoys, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &decoys, NULL);
	if (timer_create(CLOCK_MONOTONIC, &cut, &cut_timer) != 0 ||
	    timer_create(CLOCK_MONOTONIC, &decoy, &decoy_timer) != 0)
		return unused;
	while (!se_stop) {
		nanosleep(&short_sleep, NULL);
		timer_settime(decoy_timer, 0, &decoy_at, NULL);
		sigwaitinfo(&decoys, NULL);
		timer_settime(cut_timer, 0, &cut_at, NULL);
		nanosleep(&long_sleep, NULL);
	}
	return unused;
}

static int sampled_elsewhere(double seconds)
{
	struct sigaction action = { .sa_handler = se_handler };
	pthread_t sleeper, inflater;

	sigaction(SIGUSR1, &action, NULL);
	pthread_create(&sleeper, NULL, se_sleeper, NULL);
	pthread_setname_np(sleeper, "sleeper");
	pthread_create(&inflater, NULL, se_inflater, NULL);
	pthread_setname_np(inflater, "inflater");
	printf("ready\n");
	fflush(stdout);
	pause_ns((long)(seconds * 1e9));
	se_stop = 1;
	pthread_join(sleeper, NULL);
	pthread_join(inflater, NULL);
	return 0;
}

/* ---- handler-in-wait KIND: a handler that runs inside a wait runs ---- */
static volatile int hw_stop;
static const char *hw_kind;
static sem_t hw_semaphore;
static pthread_mutex_t hw_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hw_condition = PTHREAD_COND_INITIALIZER;
static int hw_word;
static double hw_cpu, hw_wait;

static void hw_handler(int signal_number)
{
	(void)signal_number;
	if (!strcmp(hw_kind, "nested")) {
		/* Half its time on a CPU, half asleep in a wait of its own. */
		spin_ns(100000);
		pause_ns(300000);
		spin_ns(100000);
		return;
	}
	spin_ns(300000);
}

static void *hw_waiter(void *argument)
{
	cpu_set_t cpus;

	(void)argument;
	CPU_ZERO(&cpus);
	CPU_SET(1, &cpus);
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	while (!hw_stop) {
		if (!strcmp(hw_kind, "sem") || !strcmp(hw_kind, "nested")) {
			sem_wait(&hw_semaphore);
		} else if (!strcmp(hw_kind, "cond")) {
			pthread_mutex_lock(&hw_mutex);
			if (!hw_stop)
				pthread_cond_wait(&hw_condition, &hw_mutex);
			pthread_mutex_unlock(&hw_mutex);
		} else if (!strcmp(hw_kind, "futex")) {
			syscall(SYS_futex, &hw_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		} else if (!strcmp(hw_kind, "sleep")) {
			struct timespec long_sleep = { 5, 0 };

			nanosleep(&long_sleep, NULL);
		} else {
			pause();
		}
	}
	own_schedstat(&hw_cpu, &hw_wait);
	return NULL;
}

/* The waiter on CPU 1 in a wait of KIND (sem, cond, futex through
 * syscall(), sleep, pause; nested: sem, its handler asleep half the
 * time); main on CPU 0 signals it every millisecond for 1 s, its handler
 * spins 300 us.  Prints the two threads' kernel figures. */
static int handler_in_wait(const char *kind)
{
	struct sigaction action = { .sa_handler = hw_handler, .sa_flags = SA_RESTART };
	pthread_t waiter;
	cpu_set_t cpus;
	double cpu, wait;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return 77;
	hw_kind = kind;
	sem_init(&hw_semaphore, 0, 0);
	sigemptyset(&action.sa_mask);
	sigaction(SIGUSR1, &action, NULL);
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	pthread_create(&waiter, NULL, hw_waiter, NULL);
	pause_ns(20000000);
	for (int i = 0; i < 1000; i++) {
		pause_ns(1000000);
		pthread_kill(waiter, SIGUSR1);
	}
	hw_stop = 1;
	sem_post(&hw_semaphore);
	pthread_mutex_lock(&hw_mutex);
	pthread_cond_signal(&hw_condition);
	pthread_mutex_unlock(&hw_mutex);
	__atomic_store_n(&hw_word, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &hw_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	pthread_kill(waiter, SIGUSR1);
	pthread_join(waiter, NULL);
	own_schedstat(&cpu, &wait);
	printf("cpu %.6f wait %.6f\n", cpu + hw_cpu, wait + hw_wait);
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
	if (!strcmp(mode, "preempting-wakee"))
		return preempting_wakee();
	if (!strcmp(mode, "remote-busy"))
		return remote_busy();
	if (!strcmp(mode, "remote-idle"))
		return remote_idle();
	if (!strcmp(mode, "futex-waitv-mix"))
		return futex_waitv_mix();
	if (!strcmp(mode, "futex-ring-collide"))
		return futex_ring_collide();
	if (!strcmp(mode, "futex-queue")) {
		fq_futex = true;
		return mutex_queue(false);
	}
	if (!strcmp(mode, "queued-posts"))
		return queued_posts();
	if (!strcmp(mode, "racing-posts"))
		return racing_posts();
	if (!strcmp(mode, "timer-idle"))
		return timer_idle(0, false);
	if (!strcmp(mode, "timer-queued"))
		return timer_queued();
	if (!strcmp(mode, "timer-herd"))
		return timer_herd();
	if (!strncmp(mode, "wake-decoy-", strlen("wake-decoy-")))
		return wake_decoy(mode + strlen("wake-decoy-"));
	if (!strcmp(mode, "wake-ring-eventfd"))
		return wake_ring(RING_EVENTFD);
	if (!strcmp(mode, "wake-ring-pipe"))
		return wake_ring(RING_PIPE);
	if (!strcmp(mode, "wake-ring-socket"))
		return wake_ring(RING_SOCKET);
	if (!strncmp(mode, "timer-idle-realtime-", strlen("timer-idle-realtime-"))) {
		const char *kind = mode + strlen("timer-idle-realtime-");

		ti_how = !strcmp(kind, "cond") ? TI_REALTIME_COND : !strcmp(kind, "sem") ? TI_REALTIME_SEM : TI_REALTIME_CLOCK;
		sem_init(&ti_unposted, 0, 0);
		return timer_idle(0, false);
	}
	if (!strncmp(mode, "handler-in-wait-", strlen("handler-in-wait-")))
		return handler_in_wait(mode + strlen("handler-in-wait-"));
	if (!strcmp(mode, "timer-slack"))
		return timer_idle(1000000, false);
	if (!strcmp(mode, "timer-slack-inherited"))
		return timer_idle(1000000, true);
	if (!strcmp(mode, "sampled-elsewhere"))
		return sampled_elsewhere(argc > 2 ? atof(argv[2]) : 5);
	if (!strcmp(mode, "timer-realtime"))
		return timer_realtime(RT_SELF, argv[0]);
	if (!strcmp(mode, "timer-realtime-other"))
		return timer_realtime(RT_OTHER, argv[0]);
	if (!strcmp(mode, "timer-realtime-left"))
		return timer_realtime(RT_LEFT, argv[0]);
	if (!strcmp(mode, "timer-realtime-syscall"))
		return timer_realtime(RT_SYSCALL, argv[0]);
	if (!strcmp(mode, "timer-realtime-keep-params"))
		return timer_realtime(RT_KEEP_PARAMS, argv[0]);
	if (!strcmp(mode, "timer-realtime-vfork"))
		return timer_realtime(RT_VFORK, argv[0]);
	if (!strcmp(mode, "timer-realtime-reuse"))
		return timer_realtime(RT_REUSE, argv[0]);
	if (!strcmp(mode, "timer-realtime-reset"))
		return timer_realtime(RT_RESET, argv[0]);
	if (!strcmp(mode, "timer-realtime-round-trips"))
		return timer_realtime(RT_ROUND_TRIPS, argv[0]);
	if (!strcmp(mode, "timer-realtime-vfork-parent"))
		return timer_realtime(RT_VFORK_PARENT, argv[0]);
	if (!strcmp(mode, "timer-realtime-adopted"))
		return timer_realtime(RT_ADOPTED, argv[0]);
	if (!strcmp(mode, "timer-busy"))
		return timer_busy();
	if (!strcmp(mode, "mutex-queue"))
		return mutex_queue(false);
	if (!strcmp(mode, "mutex-queue-c11"))
		return mutex_queue(true);
	fprintf(stderr, "usage: rel_review_target bad-pointers|tiny-wait|signal-start|requeue|fast-fail SECONDS N|sys-exit|preempting-wakee|remote-busy|remote-idle|futex-queue|futex-waitv-mix|futex-ring-collide|queued-posts|racing-posts|timer-idle|timer-idle-realtime-KIND|timer-queued|timer-herd|wake-ring-eventfd|wake-ring-pipe|wake-ring-socket|wake-decoy-oneshot|wake-decoy-epoll-reused|wake-decoy-fclose|timer-busy|mutex-queue|mutex-queue-c11|sampled-elsewhere [SECONDS]|timer-slack|timer-slack-inherited|timer-realtime|timer-realtime-other|timer-realtime-left|timer-realtime-syscall|timer-realtime-keep-params|timer-realtime-vfork|timer-realtime-reuse|timer-realtime-reset|timer-realtime-round-trips|timer-realtime-vfork-parent|timer-realtime-adopted|handler-in-wait-KIND\n");
	return 2;
}
