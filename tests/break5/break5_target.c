/* SPDX-License-Identifier: MIT */
/*
 * Targets for the break5 review of the wake stamps (4988b37, 0ced581:
 * stamps written before the wake, wakes from another CPU dated by the CPU
 * of a sleep).  Run under the shim (`tdstat run --json -- break5_target
 * MODE`); each mode prints the kernel's figures for all its threads at the
 * end: "cpu SECONDS wait SECONDS" (schedstat: time on a CPU, time waiting
 * for one), the truth the shim's runnable time is measured against.
 *
 *   barrier-preempt  a barrier waiter of higher priority on its partner's
 *                  CPU, released every 20 ms: it runs inside the last
 *                  arrival's wake and waits again before the last
 *                  arrival's after-the-return stamp is written (the
 *                  preempting-wakee shape, with a barrier); SCHED_FIFO
 *   barrier-cfs    the same, both threads SCHED_OTHER (nice 0) on CPU 0:
 *                  the scheduler's wake-up preemption decides
 *   eperm-stamp    (held) an error-checking mutex's unlock by a thread that
 *                  does not own it (EPERM, wakes nobody) stamps the mutex;
 *                  its sleeping waiter is woken 20 ms later by glibc's own
 *                  unlock inside pthread_cond_timedwait, which the shim
 *                  stamps too; 50 rounds
 *   other-waiter   (held) two waiters, one woken by a stamped unlock, the
 *                  other 20 ms later by the unlock inside
 *                  pthread_cond_timedwait; 50 rounds
 *   mid-queue      every 200 us (a sleep) a thread on CPU 0 wakes a spinner (25 us)
 *                  and then a waiter that both live on CPU 1 (the
 *                  spinner of higher priority): the waiter waits for its
 *                  CPU ~25 us, under TDSHIM_REMOTE_WAKE_NS, and is dated
 *                  from its return less the credit; 2 s (or argv[2]);
 *                  SCHED_FIFO
 *   mid-queue-cfs  the same with no real-time priority: the driver and
 *                  the spinner at nice -20, the waiter at nice 19 (root)
 *   remote-idle    20 us ping-pong between CPU 0 and CPU 1 (the shape of
 *                  rel_review remote-idle), 1 s; SCHED_FIFO
 *   remote-idle-nocpuclock  the same, in a seccomp sandbox that refuses
 *                  clock_gettime(CLOCK_THREAD_CPUTIME_ID) (EPERM): the
 *                  credit never gets a figure
 *   cond-timeout   (held) a pthread_cond_timedwait whose timeout expires
 *                  while another thread holds the mutex for 30 ms: it
 *                  sleeps on the mutex after the deadline; 50 rounds
 *   eperm-robust   a robust mutex's unlock by a thread that does not own
 *                  it (EPERM, wakes nobody) stamps the mutex; its owner
 *                  dies holding it 25 ms later and the kernel wakes the
 *                  sleeping waiter (EOWNERDEAD, no stamp): the waiter
 *                  counts runnable from the failed unlock (up to the
 *                  commit lag, 10 ms); 50 rounds
 *   wake-nobody    a FUTEX_WAKE_BITSET for another class of waiter wakes
 *                  nobody but stamps the word; the waiter sleeping on it
 *                  (syscall(), FUTEX_WAIT_BITSET) is ended by a signal
 *                  20 ms later (EINTR, no stamp) and counts runnable from
 *                  the stamp; 50 rounds
 *   ring TOKENS    6 threads pass TOKENS tokens round a ring (15 us of
 *                  work a turn), no placement: a comparison shape
 *   cond-preempted a pthread_cond_wait whose release of the mutex wakes
 *                  a waiter of higher priority on the same CPU: queued
 *                  2 ms inside the call, it returns to a signal sent
 *                  meanwhile without sleeping (runnable all along, for
 *                  the kernel and now for the shim: the thread's count of
 *                  voluntary switches did not move); 100 rounds;
 *                  SCHED_FIFO
 * Modes that need SCHED_FIFO or 2 CPUs exit 77 without them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic unsigned long long total_run, total_wait;

/* Adds the calling thread's schedstat to the totals (call last thing). */
static void account_self(void)
{
	unsigned long long run = 0, wait = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (f) {
		if (fscanf(f, "%llu %llu", &run, &wait) != 2)
			run = wait = 0;
		fclose(f);
	}
	total_run += run;
	total_wait += wait;
}

static void report(void)
{
	account_self();
	printf("cpu %.6f wait %.6f\n", total_run / 1e9, total_wait / 1e9);
	fflush(stdout);
}

static void pause_ns(long ns)
{
	struct timespec t = { ns / 1000000000, ns % 1000000000 };
	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

static long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void spin_ns(long ns)
{
	long start = now_ns();
	while (now_ns() - start < ns)
		;
}

/* CPU `cpu` and SCHED_OTHER at nice `nice` (negative: root). */
static bool place_nice(int cpu, int nice)
{
	cpu_set_t cpus;

	CPU_ZERO(&cpus);
	CPU_SET(cpu, &cpus);
	return pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus) == 0 &&
	       setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice) == 0;
}

static bool mq_cfs;

static bool place(int cpu, int priority)
{
	cpu_set_t cpus;
	struct sched_param param = { .sched_priority = priority };

	CPU_ZERO(&cpus);
	CPU_SET(cpu, &cpus);
	return pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus) == 0 &&
	       pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0;
}

/* ---- barrier-preempt ---- */
static pthread_barrier_t bp_barrier;
static volatile int bp_stop;

static bool bp_cfs;

static void *bp_waiter(void *arg)
{
	(void)arg;
	if (bp_cfs)
		place_nice(0, 0);
	else
		place(0, 2);
	while (!bp_stop)
		pthread_barrier_wait(&bp_barrier);
	account_self();
	return NULL;
}

static int barrier_preempt(void)
{
	pthread_t t;

	if (!(bp_cfs ? place_nice(0, 0) : place(0, 1)))
		return 77;
	pthread_barrier_init(&bp_barrier, NULL, 2);
	pthread_create(&t, NULL, bp_waiter, NULL);
	pause_ns(5000000);
	for (int i = 0; i < 50; i++) {
		if (i == 49)
			bp_stop = 1;
		pthread_barrier_wait(&bp_barrier);
		pause_ns(20000000);
	}
	pthread_join(t, NULL);
	report();
	return 0;
}

/* ---- eperm-stamp, other-waiter ---- */
static pthread_mutex_t es_mutex;
static pthread_cond_t es_cond = PTHREAD_COND_INITIALIZER;

static void *es_waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&es_mutex);
	pthread_mutex_unlock(&es_mutex);
	account_self();
	return NULL;
}

static void *es_stranger(void *arg)
{
	(void)arg;
	int error = pthread_mutex_unlock(&es_mutex);
	if (error != EPERM)
		fprintf(stderr, "unlock by a stranger: %d, expected EPERM\n", error);
	account_self();
	return NULL;
}

/* The state of the mutex's word: 2 once a waiter sleeps. */
static void wait_for_sleeper(void)
{
	while (__atomic_load_n(&es_mutex.__data.__lock, __ATOMIC_SEQ_CST) != 2)
		pause_ns(100000);
	pause_ns(2000000);
}

static void cond_unlock_after(long ns)
{
	pause_ns(ns);
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_nsec += 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	/* glibc releases the mutex inside, waking the waiter: no stamp. */
	pthread_cond_timedwait(&es_cond, &es_mutex, &deadline);
}

/* other-waiter: woken first by the stamped unlock, it holds the mutex
 * 300 ms and releases it inside pthread_cond_timedwait. */
static void *es_holder(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&es_mutex);
	cond_unlock_after(20000000);
	pthread_mutex_unlock(&es_mutex);
	account_self();
	return NULL;
}

static int eperm_stamp(bool failing)
{
	pthread_mutexattr_t attr;

	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, failing ? PTHREAD_MUTEX_ERRORCHECK : PTHREAD_MUTEX_NORMAL);
	pthread_mutex_init(&es_mutex, &attr);
	for (int round = 0; round < 50; round++) {
		pthread_t waiter, other;
		pthread_mutex_lock(&es_mutex);
		if (failing) {
			pthread_create(&waiter, NULL, es_waiter, NULL);
			wait_for_sleeper();
			pthread_create(&other, NULL, es_stranger, NULL);
			pthread_join(other, NULL);
			cond_unlock_after(20000000);
			pthread_mutex_unlock(&es_mutex);
		} else {
			/* The holder sleeps first, so the unlock wakes it. */
			pthread_create(&other, NULL, es_holder, NULL);
			wait_for_sleeper();
			pthread_create(&waiter, NULL, es_waiter, NULL);
			pause_ns(20000000);
			pthread_mutex_unlock(&es_mutex); /* stamps, wakes the holder */
			pthread_join(other, NULL);
		}
		pthread_join(waiter, NULL);
	}
	report();
	return 0;
}

/* ---- eperm-robust ---- */
static pthread_mutex_t er_mutex;
static sem_t er_locked, er_release;

static void *er_owner(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&er_mutex);
	sem_post(&er_locked);
	sem_wait(&er_release); /* after the stranger's unlock */
	pause_ns(25000000);
	account_self();
	return NULL; /* dies holding it: the kernel wakes the waiter */
}

static void *er_waiter(void *arg)
{
	(void)arg;
	int error = pthread_mutex_lock(&er_mutex);
	if (error == EOWNERDEAD)
		pthread_mutex_consistent(&er_mutex);
	else
		fprintf(stderr, "robust lock: %d, expected EOWNERDEAD\n", error);
	pthread_mutex_unlock(&er_mutex);
	account_self();
	return NULL;
}

static int eperm_robust(void)
{
	pthread_mutexattr_t attr;

	pthread_mutexattr_init(&attr);
	pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&er_mutex, &attr);
	sem_init(&er_locked, 0, 0);
	sem_init(&er_release, 0, 0);
	for (int round = 0; round < 50; round++) {
		pthread_t owner, waiter;
		pthread_create(&owner, NULL, er_owner, NULL);
		sem_wait(&er_locked);
		pthread_create(&waiter, NULL, er_waiter, NULL);
		while (!(__atomic_load_n(&er_mutex.__data.__lock, __ATOMIC_SEQ_CST) & FUTEX_WAITERS))
			pause_ns(100000);
		pause_ns(2000000);
		int error = pthread_mutex_unlock(&er_mutex); /* not ours */
		if (error != EPERM)
			fprintf(stderr, "unlock of another's robust mutex: %d, expected EPERM\n", error);
		sem_post(&er_release);
		pthread_join(owner, NULL);
		pthread_join(waiter, NULL);
	}
	report();
	return 0;
}

/* ---- wake-nobody ---- */
static int wn_word;
static volatile int wn_waiting;

static void wn_handler(int signal)
{
	(void)signal;
}

static void *wn_waiter(void *arg)
{
	(void)arg;
	wn_waiting = 1;
	long result = syscall(SYS_futex, &wn_word, FUTEX_WAIT_BITSET_PRIVATE, 0, NULL, NULL, 1);
	if (result != -1 || errno != EINTR)
		fprintf(stderr, "futex wait: %ld errno %d, expected EINTR\n", result, errno);
	account_self();
	return NULL;
}

static int wake_nobody(void)
{
	struct sigaction action = { .sa_handler = wn_handler };

	sigaction(SIGUSR1, &action, NULL);
	for (int round = 0; round < 50; round++) {
		pthread_t waiter;
		wn_waiting = 0;
		pthread_create(&waiter, NULL, wn_waiter, NULL);
		while (!wn_waiting)
			pause_ns(100000);
		pause_ns(5000000);
		/* Another class of waiter (bitset 2): nobody is woken. */
		long woken = syscall(SYS_futex, &wn_word, FUTEX_WAKE_BITSET_PRIVATE, 1, NULL, NULL, 2);
		if (woken != 0)
			fprintf(stderr, "futex wake: %ld, expected 0\n", woken);
		pause_ns(20000000);
		pthread_kill(waiter, SIGUSR1); /* EINTR: the kernel's wake */
		pthread_join(waiter, NULL);
	}
	report();
	return 0;
}

/* ---- mid-queue ---- */
static sem_t mq_spin, mq_wait;
static volatile int mq_stop;

static void *mq_spinner(void *arg)
{
	(void)arg;
	if (mq_cfs)
		place_nice(1, -20);
	else
		place(1, 3);
	for (;;) {
		sem_wait(&mq_spin);
		if (mq_stop)
			break;
		spin_ns(25000);
	}
	account_self();
	return NULL;
}

static void *mq_waiter(void *arg)
{
	(void)arg;
	if (mq_cfs)
		place_nice(1, 19);
	else
		place(1, 2);
	for (;;) {
		sem_wait(&mq_wait);
		if (mq_stop)
			break;
	}
	account_self();
	return NULL;
}

static int mid_queue(long seconds)
{
	pthread_t spinner, waiter;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || !(mq_cfs ? place_nice(0, -20) : place(0, 4)))
		return 77;
	sem_init(&mq_spin, 0, 0);
	sem_init(&mq_wait, 0, 0);
	pthread_create(&spinner, NULL, mq_spinner, NULL);
	pthread_create(&waiter, NULL, mq_waiter, NULL);
	pause_ns(5000000);
	long end = now_ns() + seconds * 1000000000L;
	while (now_ns() < end) {
		sem_post(&mq_spin);
		sem_post(&mq_wait);
		pause_ns(200000);
	}
	mq_stop = 1;
	sem_post(&mq_spin);
	sem_post(&mq_wait);
	pthread_join(spinner, NULL);
	pthread_join(waiter, NULL);
	report();
	return 0;
}

/* ---- ring ---- */
#define RING_THREADS 6
static sem_t ring_turn[RING_THREADS];
static volatile int ring_stop;
static long ring_work_ns = 15000;

static void *ring_player(void *arg)
{
	int me = (int)(long)arg;

	while (!ring_stop) {
		sem_wait(&ring_turn[me]);
		spin_ns(ring_work_ns);
		sem_post(&ring_turn[(me + 1) % RING_THREADS]);
	}
	for (int i = 0; i < RING_THREADS; i++)
		sem_post(&ring_turn[i]);
	account_self();
	return NULL;
}

/* RING_THREADS threads pass `tokens` tokens round a ring, each turn
 * 15 us of work; no placement, no priorities (CFS on every CPU). */
static int ring(int tokens)
{
	pthread_t players[RING_THREADS];

	for (int i = 0; i < RING_THREADS; i++)
		sem_init(&ring_turn[i], 0, i < tokens ? 1 : 0);
	for (long i = 0; i < RING_THREADS; i++)
		pthread_create(&players[i], NULL, ring_player, (void *)i);
	pause_ns(1000000000);
	ring_stop = 1;
	for (int i = 0; i < RING_THREADS; i++)
		pthread_join(players[i], NULL);
	report();
	return 0;
}

/* ---- remote-idle, remote-idle-nocpuclock ---- */
static sem_t ri_turn[2];
static volatile int ri_stop;

static void *ri_player(void *arg)
{
	int me = (int)(long)arg;

	place(me, 2);
	while (!ri_stop) {
		sem_wait(&ri_turn[me]);
		spin_ns(20000);
		sem_post(&ri_turn[1 - me]);
	}
	sem_post(&ri_turn[1 - me]);
	account_self();
	return NULL;
}

/* clock_gettime(CLOCK_THREAD_CPUTIME_ID, ...) fails with EPERM; every
 * other call is allowed (a sandbox that limits the clocks it allows). */
static bool refuse_thread_cpu_clock(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clock_gettime, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CLOCK_THREAD_CPUTIME_ID, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog program = { .len = sizeof(code) / sizeof(code[0]), .filter = code };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program) != 0)
		return false;
	struct timespec t;
	return clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0 && errno == EPERM;
}

static int remote_idle(bool sandboxed)
{
	pthread_t players[2];

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || !place(0, 1))
		return 77;
	if (sandboxed && !refuse_thread_cpu_clock()) {
		fprintf(stderr, "no seccomp filter\n");
		return 77;
	}
	sem_init(&ri_turn[0], 0, 1);
	sem_init(&ri_turn[1], 0, 0);
	for (long i = 0; i < 2; i++)
		pthread_create(&players[i], NULL, ri_player, (void *)i);
	pause_ns(1000000000);
	ri_stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(players[i], NULL);
	report();
	return 0;
}

/* ---- cond-timeout ---- */
static pthread_mutex_t ct_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ct_cond = PTHREAD_COND_INITIALIZER;
static sem_t ct_waiting;

static void *ct_waiter(void *arg)
{
	(void)arg;
	struct timespec deadline;

	pthread_mutex_lock(&ct_mutex);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_nsec += 10000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	sem_post(&ct_waiting);
	int error = pthread_cond_timedwait(&ct_cond, &ct_mutex, &deadline);
	if (error != ETIMEDOUT)
		fprintf(stderr, "cond_timedwait: %d, expected ETIMEDOUT\n", error);
	pthread_mutex_unlock(&ct_mutex);
	account_self();
	return NULL;
}

static int cond_timeout(void)
{
	sem_init(&ct_waiting, 0, 0);
	for (int round = 0; round < 50; round++) {
		pthread_t t;
		pthread_create(&t, NULL, ct_waiter, NULL);
		sem_wait(&ct_waiting);
		pthread_mutex_lock(&ct_mutex); /* after the waiter's release */
		pause_ns(30000000);           /* its deadline passes meanwhile */
		pthread_mutex_unlock(&ct_mutex);
		pthread_join(t, NULL);
	}
	report();
	return 0;
}

/* ---- cond-preempted ---- */
static pthread_mutex_t cp_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cp_cond = PTHREAD_COND_INITIALIZER;
static sem_t cp_go;
static volatile int cp_stop;

/* Of higher priority on the waiter's CPU: woken by the release of the
 * mutex inside the waiter's pthread_cond_wait, it runs at once and keeps
 * the CPU 2 ms before it signals and waits for the next round. */
static void *cp_worker(void *arg)
{
	(void)arg;
	place(0, 2);
	for (;;) {
		sem_wait(&cp_go);
		if (cp_stop)
			break;
		pthread_mutex_lock(&cp_mutex); /* asleep on it: the waiter holds it */
		spin_ns(2000000);
		pthread_cond_signal(&cp_cond);
		pthread_mutex_unlock(&cp_mutex);
	}
	account_self();
	return NULL;
}

static int cond_preempted(void)
{
	pthread_t t;

	if (!place(0, 1))
		return 77;
	sem_init(&cp_go, 0, 0);
	pthread_create(&t, NULL, cp_worker, NULL);
	pause_ns(5000000);
	for (int round = 0; round < 100; round++) {
		pthread_mutex_lock(&cp_mutex);
		sem_post(&cp_go); /* the worker runs, and sleeps on the mutex */
		/* Preempted inside, queued 2 ms, back to a signal sent: the
		 * wait never sleeps. */
		pthread_cond_wait(&cp_cond, &cp_mutex);
		pthread_mutex_unlock(&cp_mutex);
		pause_ns(1000000);
	}
	cp_stop = 1;
	sem_post(&cp_go);
	pthread_join(t, NULL);
	report();
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "barrier-preempt"))
		return barrier_preempt();
	if (!strcmp(mode, "barrier-cfs")) {
		bp_cfs = true;
		return barrier_preempt();
	}
	if (!strcmp(mode, "eperm-stamp"))
		return eperm_stamp(true);
	if (!strcmp(mode, "other-waiter"))
		return eperm_stamp(false);
	if (!strcmp(mode, "eperm-robust"))
		return eperm_robust();
	if (!strcmp(mode, "wake-nobody"))
		return wake_nobody();
	if (!strcmp(mode, "ring"))
		return ring(argc > 2 ? atoi(argv[2]) : 1);
	if (!strcmp(mode, "mid-queue"))
		return mid_queue(argc > 2 ? atol(argv[2]) : 2);
	if (!strcmp(mode, "mid-queue-cfs")) {
		mq_cfs = true;
		return mid_queue(argc > 2 ? atol(argv[2]) : 2);
	}
	if (!strcmp(mode, "remote-idle"))
		return remote_idle(false);
	if (!strcmp(mode, "remote-idle-nocpuclock"))
		return remote_idle(true);
	if (!strcmp(mode, "cond-timeout"))
		return cond_timeout();
	if (!strcmp(mode, "cond-preempted"))
		return cond_preempted();
	fprintf(stderr, "usage: break5_target barrier-preempt|eperm-stamp|other-waiter|mid-queue|remote-idle|"
			"remote-idle-nocpuclock|cond-timeout|cond-preempted\n");
	return 2;
}
