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
 *   adopt         a thread made by libc's own pthread_create (not
 *                 through the interposed one) has no record until it
 *                 waits in sem_wait: it gets one then, BLOCKED, and loses
 *                 it when it ends.
 *   c11           a thread made by C11's thrd_create (glibc's calls its
 *                 own pthread_create: the shim interposes it too) has its
 *                 record from its creation, before any wait, loses it
 *                 when it ends, and its int result reaches thrd_join.
 *   main_exit     main calls pthread_exit while another thread lives:
 *                 main's record is freed, the process goes on.
 *   no_getpid     under a seccomp filter that kills the process at a
 *                 getpid system call (a sandbox whose program never asks),
 *                 four threads each register a thread_local destructor,
 *                 as C++ and Rust programs do in every thread, and end:
 *                 the shim, which registers its own exit hook there,
 *                 must not ask either (it did, once per thread: 1 us
 *                 each where system calls cost that).
 *   errno_kept    errno set to a sentinel before each call: every call
 *                 that succeeds leaves it so, also when the shim slept
 *                 and woke for it through its own futex calls and one of
 *                 those failed.  A thread asleep in a contended
 *                 pthread_mutex_lock is interrupted by a signal (no
 *                 SA_RESTART: the futex call fails with EINTR, the lock
 *                 sleeps again) before the holder unlocks, ten times;
 *                 then two threads hand two semaphores and the mutex back
 *                 and forth (EAGAIN when a word changes before a sleep).
 *   sandbox_prctl, sandbox_syscall_prctl, sandbox_syscall, sandbox_inherited
 *                 under a seccomp filter that kills the process at a
 *                 getrusage, process_vm_readv or thread CPU clock system
 *                 call (none of which the program makes), installed
 *                 through prctl(), syscall(SYS_prctl), syscall(SYS_seccomp),
 *                 or before an exec of this program (sandbox_child runs
 *                 the waits): twenty timed condvar waits, each entered
 *                 while a thread sleeps on the mutex, and sleeps (the
 *                 shim's look at the thread's switches, its copy of the
 *                 timeout and its measure of a sleep's CPU after a timer
 *                 are system calls of its own); prints sandbox_waits=20.
 *   slack_reset_unseen  under a seccomp filter put in by an inline system
 *                 call (unseen by the shim) that kills the process at
 *                 prctl(PR_GET_TIMERSLACK), which the program never makes:
 *                 sets its timer slack to 200 us and back to its default
 *                 (0) through prctl() and syscall(SYS_prctl), sleeping
 *                 after each; prints slack_resets=2.
 *   sched_calls   the scheduling calls the shim watches, with arguments
 *                 the kernel refuses and with changes any user may make
 *                 (SCHED_BATCH and back): prints each result, its errno
 *                 and the policy the kernel then reports.
 *   sched_after_fork  a thread made SCHED_FIFO by main, then ended; the
 *                 process forks; in the child, a thread in the same
 *                 record slot sets a timer slack of 2 ms and sleeps
 *                 400 us 100 times: prints same_slot=1, its runnable
 *                 time and its kernel CPU + run-queue time (us), or
 *                 skipped=1 without SCHED_FIFO.
 *   sched_fork_round_trip  main sets a timer slack of 2 ms and forks; the
 *                 child goes SCHED_FIFO and back (its slack is then its
 *                 default, the parent's 2 ms at the fork) and sleeps
 *                 400 us 100 times: prints its runnable and kernel time
 *                 (us), or skipped=1.
 *   setattr_faked_seen, setattr_faked_unseen  a seccomp filter (put in
 *                 through syscall(), or an inline system call) answers
 *                 sched_setattr with 0 without the kernel reading its
 *                 attr; the program passes a pointer that is none:
 *                 prints setattr=0 (the shim must not read it).
 *   own_getrusage the same waits, no filter, in a program that defines
 *                 its own getrusage (rt_misc_own_getrusage, built with
 *                 RT_OWN_GETRUSAGE; exported, it overrides libc's): the
 *                 shim must not call it; prints own_getrusage_calls=0.
 *   threads       three threads wait in sem_wait (run with two copies of
 *                 the shim preloaded): one record each, and main's, in a
 *                 region with its magic.
 */
#define _GNU_SOURCE
#include "fixture.h"
#include "raw_syscall.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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
static int may_wait;

/* Runs without waiting until main has looked at the records. */
static void start_unwaiting(void)
{
	__atomic_store_n(&adopted_tid, fx_gettid(), __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&may_wait, __ATOMIC_SEQ_CST))
		sched_yield();
}

static void *adopted_body(void *arg)
{
	(void)arg;
	start_unwaiting();
	sem_wait(&adopt_gate);
	return (void *)5;
}

static pid_t wait_for_adopted_tid(void)
{
	pid_t tid;

	while (!(tid = __atomic_load_n(&adopted_tid, __ATOMIC_SEQ_CST)))
		sched_yield();
	return tid;
}

static int adopt(void)
{
	/* libc's own, past the shim's: from libc's handle. */
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
		libc ? dlsym(libc, "pthread_create") : NULL;
	pthread_t thread;
	void *result = NULL;

	if (!create)
		fx_die("no pthread_create in libc.so.6");
	sem_init(&adopt_gate, 0, 0);
	if (create(&thread, NULL, adopted_body, NULL) != 0)
		fx_die("libc's pthread_create");
	pid_t tid = wait_for_adopted_tid();
	printf("live_before_waiting=%d\n", fx_live_records());
	__atomic_store_n(&may_wait, 1, __ATOMIC_SEQ_CST);
	printf("observed=%s\n", fx_wait_state(tid, TDSTAT_STATE_BLOCKED) ? "BLOCKED" : "never-BLOCKED");
	printf("live_while_waiting=%d\n", fx_live_records());
	sem_post(&adopt_gate);
	pthread_join(thread, &result);
	printf("result=%d\n", (int)(intptr_t)result);
	printf("record_gone=%d\n", fx_find_record(tid) < 0);
	printf("live_end=%d\n", fx_live_records());
	return 0;
}

static int c11_body(void *arg)
{
	(void)arg;
	start_unwaiting();
	return -7;
}

static int c11(void)
{
	thrd_t thread;
	int result = 0;

	if (thrd_create(&thread, c11_body, NULL) != thrd_success)
		fx_die("thrd_create");
	pid_t tid = wait_for_adopted_tid();
	printf("live_before_waiting=%d\n", fx_live_records());
	__atomic_store_n(&may_wait, 1, __ATOMIC_SEQ_CST);
	thrd_join(thread, &result);
	printf("result=%d\n", result);
	printf("record_gone=%d\n", fx_find_record(tid) < 0);
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

#define ERRNO_SENTINEL 4242
#define ERRNO_ROUNDS 20000
static sem_t errno_ping, errno_pong;
static pthread_mutex_t errno_lock = PTHREAD_MUTEX_INITIALIZER;

static volatile sig_atomic_t errno_interrupts;

static void on_errno_signal(int signal_number)
{
	(void)signal_number;
	errno_interrupts++;
}

static pid_t errno_locker_tid;
static volatile int errno_locker_result = -1, errno_locker_errno;

static void *errno_locker(void *unused)
{
	(void)unused;
	__atomic_store_n(&errno_locker_tid, fx_gettid(), __ATOMIC_SEQ_CST);
	errno = ERRNO_SENTINEL;
	int result = pthread_mutex_lock(&errno_lock);
	errno_locker_errno = errno;
	errno_locker_result = result;
	pthread_mutex_unlock(&errno_lock);
	return NULL;
}

/* Whether thread `tid` is asleep (state S in /proc: in the futex). */
static bool errno_thread_asleep(pid_t tid)
{
	char path[64], line[512];
	bool asleep = false;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	FILE *stat = fopen(path, "r");
	if (stat && fgets(line, sizeof(line), stat)) {
		const char *end = strrchr(line, ')');
		asleep = end && end[1] == ' ' && end[2] == 'S';
	}
	if (stat)
		fclose(stat);
	return asleep;
}

static void errno_wait_asleep(pid_t tid)
{
	uint64_t deadline = fx_now_ns() + FX_TIMEOUT_MS * 1000000ull;

	while (!errno_thread_asleep(tid)) {
		if (fx_now_ns() > deadline)
			fx_die("the locker never slept");
		sched_yield();
	}
}

/* A contended lock interrupted while asleep: 1 when it succeeded and
 * left errno as it was. */
static int errno_interrupted_lock(void)
{
	pthread_t thread;

	errno_locker_tid = 0;
	errno_locker_result = -1;
	pthread_mutex_lock(&errno_lock);
	if (pthread_create(&thread, NULL, errno_locker, NULL) != 0)
		fx_die("pthread_create");
	while (!__atomic_load_n(&errno_locker_tid, __ATOMIC_SEQ_CST))
		sched_yield();
	errno_wait_asleep(errno_locker_tid);
	sig_atomic_t before = errno_interrupts;
	pthread_kill(thread, SIGUSR2);
	while (errno_interrupts == before)
		sched_yield();
	/* Asleep again (the lock went back to sleep): then the unlock. */
	errno_wait_asleep(errno_locker_tid);
	pthread_mutex_unlock(&errno_lock);
	pthread_join(thread, NULL);
	return errno_locker_result == 0 && errno_locker_errno == ERRNO_SENTINEL;
}

/* Calls that succeeded and left errno changed, in one side's hand-off. */
static long errno_hand_off(sem_t *take, sem_t *give)
{
	long changed = 0;

	for (int i = 0; i < ERRNO_ROUNDS; i++) {
		/* The post under the mutex: the thread it wakes finds the
		 * mutex held as often as not. */
		errno = ERRNO_SENTINEL;
		changed += sem_wait(take) == 0 && errno != ERRNO_SENTINEL;
		errno = ERRNO_SENTINEL;
		changed += pthread_mutex_lock(&errno_lock) == 0 && errno != ERRNO_SENTINEL;
		errno = ERRNO_SENTINEL;
		changed += sem_post(give) == 0 && errno != ERRNO_SENTINEL;
		errno = ERRNO_SENTINEL;
		changed += pthread_mutex_unlock(&errno_lock) == 0 && errno != ERRNO_SENTINEL;
	}
	return changed;
}

static void *errno_peer(void *unused)
{
	(void)unused;
	return (void *)errno_hand_off(&errno_ping, &errno_pong);
}

static int errno_kept(void)
{
	pthread_t peer;
	void *peer_changed;

	struct sigaction action = { .sa_handler = on_errno_signal }; /* no SA_RESTART */
	int interrupted_kept = 0;

	sigaction(SIGUSR2, &action, NULL);
	for (int i = 0; i < 10; i++)
		interrupted_kept += errno_interrupted_lock();
	printf("interrupted_locks_kept=%d\n", interrupted_kept);
	sem_init(&errno_ping, 0, 0);
	sem_init(&errno_pong, 0, 1);
	if (pthread_create(&peer, NULL, errno_peer, NULL) != 0)
		fx_die("pthread_create");
	long changed = errno_hand_off(&errno_pong, &errno_ping);
	pthread_join(peer, &peer_changed);
	printf("rounds=%d\n", ERRNO_ROUNDS);
	printf("errno_changed=%ld\n", changed + (long)peer_changed);
	return 0;
}

int __cxa_thread_atexit_impl(void (*destructor)(void *), void *object, void *dso_handle);
extern void *__dso_handle;
static int destructors_ran;

static void count_destructor(void *unused)
{
	(void)unused;
	__atomic_add_fetch(&destructors_ran, 1, __ATOMIC_SEQ_CST);
}

static void *register_destructor(void *unused)
{
	if (__cxa_thread_atexit_impl(count_destructor, NULL, &__dso_handle) != 0)
		fx_die("__cxa_thread_atexit_impl");
	return unused;
}

/* sandbox_* and own_getrusage */
static pthread_mutex_t sandbox_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sandbox_cond = PTHREAD_COND_INITIALIZER;
static int own_getrusage_calls;

#ifdef RT_OWN_GETRUSAGE
/* (rt_misc_own_getrusage only: in rt_misc a shim calling getrusage()
 * would call this one, and no filter would see it.) */
int getrusage(int who, struct rusage *usage)
{
	(void)who;
	__atomic_add_fetch(&own_getrusage_calls, 1, __ATOMIC_SEQ_CST);
	memset(usage, 0, sizeof(*usage));
	return 0;
}
#endif

static void *sandbox_locker(void *unused)
{
	pthread_mutex_lock(&sandbox_mutex); /* asleep: main holds it */
	pthread_mutex_unlock(&sandbox_mutex);
	return unused;
}

/* Timed condvar waits whose release of the mutex wakes a sleeper. */
static int sandbox_waits(void)
{
	int waits = 0;

	for (int round = 0; round < 20; round++) {
		pthread_t locker;
		struct timespec deadline;

		pthread_mutex_lock(&sandbox_mutex);
		if (pthread_create(&locker, NULL, sandbox_locker, NULL) != 0)
			fx_die("pthread_create");
		while (__atomic_load_n(&sandbox_mutex.__data.__lock, __ATOMIC_SEQ_CST) != 2)
			usleep(100);
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_nsec += 1000000;
		if (deadline.tv_nsec >= 1000000000) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000;
		}
		int error = pthread_cond_timedwait(&sandbox_cond, &sandbox_mutex, &deadline);
		if (error == 0 || error == ETIMEDOUT)
			waits++;
		pthread_mutex_unlock(&sandbox_mutex);
		pthread_join(locker, NULL);
		usleep(300); /* past the shim's spacing of its looks */
	}
	printf("sandbox_waits=%d\n", waits);
	printf("own_getrusage_calls=%d\n", __atomic_load_n(&own_getrusage_calls, __ATOMIC_SEQ_CST));
	return 0;
}

/* how: 'p' prctl, 'q' syscall(SYS_prctl), 's' syscall(SYS_seccomp), 'e'
 * then exec sandbox_child.  The filter kills on getrusage,
 * process_vm_readv and the thread CPU clock (a system call: the vDSO
 * serves the wall clocks only, which the program uses). */
static int sandbox(char how, char **argv)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getrusage, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clock_gettime, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CLOCK_THREAD_CPUTIME_ID, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog program = { .len = sizeof(code) / sizeof(code[0]), .filter = code };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		fx_die("no_new_privs");
	if (how == 's'	 ? syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0
	    : how == 'q' ? syscall(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0
			 : prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0)
		fx_die("seccomp");
	if (how == 'e') {
		char *child[] = { argv[0], (char *)"sandbox_child", NULL };
		execv("/proc/self/exe", child);
		fx_die("execv");
	}
	return sandbox_waits();
}

/* The calling thread's kernel CPU + run-queue time so far (schedstat). */
static uint64_t kernel_ns(void)
{
	unsigned long long run = 0, waited = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (!f || fscanf(f, "%llu %llu", &run, &waited) != 2)
		fx_die("schedstat");
	fclose(f);
	return run + waited;
}

/* ---- sched_fork_round_trip ---- */
static int sched_fork_round_trip(void)
{
	const struct timespec pause = { 0, 400000 };
	struct sched_param fifo = { .sched_priority = 1 }, normal = { 0 };

	fx_enable();
	prctl(PR_SET_TIMERSLACK, 2000000, 0, 0, 0);
	fflush(stdout);
	pid_t child = fork();
	if (child < 0)
		fx_die("fork");
	if (child == 0) {
		if (sched_setscheduler(0, SCHED_FIFO, &fifo) != 0) {
			printf("skipped=1\n");
			fflush(stdout);
			_exit(0);
		}
		if (sched_setscheduler(0, SCHED_OTHER, &normal) != 0)
			fx_die("SCHED_OTHER");
		fx_enable();
		uint64_t before = fx_record_of(fx_gettid()).acc_runnable_ns, kernel_before = kernel_ns();
		for (int i = 0; i < 100; i++)
			nanosleep(&pause, NULL);
		uint64_t kernel = kernel_ns() - kernel_before;
		uint64_t after = fx_record_of(fx_gettid()).acc_runnable_ns;
		printf("skipped=0\nslack=%d\nrunnable_us=%llu\nkernel_us=%llu\n", prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0),
		       (unsigned long long)(after - before) / 1000, (unsigned long long)kernel / 1000);
		fflush(stdout);
		_exit(0);
	}
	int status;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fx_die("child");
	return 0;
}

/* ---- setattr_faked_seen, setattr_faked_unseen ---- */
static int setattr_faked(bool seen)
{
#if defined(__x86_64__)
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sched_setattr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog program = { .len = sizeof(code) / sizeof(code[0]), .filter = code };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		fx_die("no_new_privs");
	long installed = seen ? syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program)
			      : tdtest_raw_syscall4(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, (long)&program, 0);
	if (installed != 0)
		fx_die("seccomp");
	printf("setattr=%ld\n", syscall(SYS_sched_setattr, 0, (void *)8, 0));
#else
	(void)seen;
	printf("setattr=0\n");
#endif
	return 0;
}


/* ---- sched_after_fork ---- */
static sem_t saf_go;
static pid_t saf_tid;

static void *saf_first(void *unused)
{
	saf_tid = fx_gettid();
	sem_wait(&saf_go);
	return unused;
}

static void *saf_sleeper(void *unused)
{
	const struct timespec pause = { 0, 400000 };

	prctl(PR_SET_TIMERSLACK, 2000000, 0, 0, 0);
	for (int i = 0; i < 100; i++)
		nanosleep(&pause, NULL);
	uint64_t kernel = kernel_ns();
	struct fx_record record = fx_record_of(fx_gettid());
	printf("skipped=0\nsame_slot=%d\nrunnable_us=%llu\nkernel_us=%llu\n",
	       fx_find_record(fx_gettid()) == (int)(intptr_t)unused, (unsigned long long)record.acc_runnable_ns / 1000,
	       (unsigned long long)kernel / 1000);
	return NULL;
}

static int sched_after_fork(void)
{
	struct sched_param fifo = { .sched_priority = 1 };
	pthread_t first, sleeper;

	fx_enable();
	sem_init(&saf_go, 0, 0);
	if (pthread_create(&first, NULL, saf_first, NULL) != 0)
		fx_die("pthread_create");
	if (pthread_setschedparam(first, SCHED_FIFO, &fifo) != 0) {
		sem_post(&saf_go);
		pthread_join(first, NULL);
		printf("skipped=1\n");
		return 0;
	}
	while (!__atomic_load_n(&saf_tid, __ATOMIC_ACQUIRE))
		sched_yield();
	int slot = fx_find_record(saf_tid);
	sem_post(&saf_go);
	pthread_join(first, NULL);
	fflush(stdout);
	pid_t child = fork();
	if (child < 0)
		fx_die("fork");
	if (child == 0) {
		fx_enable();
		if (pthread_create(&sleeper, NULL, saf_sleeper, (void *)(intptr_t)slot) != 0)
			fx_die("pthread_create");
		pthread_join(sleeper, NULL);
		fflush(stdout);
		_exit(0);
	}
	int status;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fx_die("child");
	return 0;
}


/* What the scheduling calls return, as the program sees them. */
static int sched_calls(void)
{
	struct sched_param zero = { 0 };

	errno = 0;
	int bad = sched_setscheduler(0, 12345, &zero);
	printf("bad_policy=%d\nbad_policy_errno=%d\n", bad, errno);
	errno = 0;
	int bad_pid = sched_setscheduler(-1, SCHED_BATCH, &zero);
	printf("bad_pid=%d\nbad_pid_errno=%d\n", bad_pid, errno);
	errno = 0;
	int batch = sched_setscheduler(0, SCHED_BATCH, &zero);
	printf("batch=%d\nbatch_errno=%d\nbatch_policy=%d\n", batch, errno, sched_getscheduler(0));
	printf("thread_bad=%d\n", pthread_setschedparam(pthread_self(), 12345, &zero));
	int other = pthread_setschedparam(pthread_self(), SCHED_OTHER, &zero);
	printf("thread_other=%d\nthread_other_policy=%d\n", other, sched_getscheduler(0));
	errno = 0;
	long attr_null = syscall(SYS_sched_setattr, 0, NULL, 0);
	printf("setattr_null=%ld\nsetattr_null_errno=%d\n", attr_null, errno);
	errno = 0;
	long raw_batch = syscall(SYS_sched_setscheduler, 0, SCHED_BATCH, &zero);
	printf("raw_batch=%ld\nraw_batch_errno=%d\nraw_batch_policy=%d\n", raw_batch, errno, sched_getscheduler(0));
	return 0;
}

/* A reset of the timer slack to the thread's default (0) made the shim
 * read the slack back (helper-65): one call the filter kills on. */
static int slack_reset_unseen(void)
{
#if defined(__x86_64__)
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prctl, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_GET_TIMERSLACK, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog program = { .len = sizeof(code) / sizeof(code[0]), .filter = code };
	const struct timespec pause = { 0, 1000000 };
	int resets = 0;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    tdtest_raw_syscall4(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, (long)&program, 0) != 0)
		fx_die("seccomp");
	for (int i = 0; i < 2; i++) {
		if (prctl(PR_SET_TIMERSLACK, 200000UL, 0, 0, 0) != 0)
			fx_die("PR_SET_TIMERSLACK");
		nanosleep(&pause, NULL);
		if ((i == 0 ? prctl(PR_SET_TIMERSLACK, 0UL, 0, 0, 0) : syscall(SYS_prctl, PR_SET_TIMERSLACK, 0UL, 0, 0, 0)) != 0)
			fx_die("PR_SET_TIMERSLACK 0");
		nanosleep(&pause, NULL);
		resets++;
	}
	printf("slack_resets=%d\n", resets);
	return 0;
#else
	printf("slack_resets=2\n");
	return 0;
#endif
}

static int no_getpid(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getpid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog program = { .len = sizeof(code) / sizeof(code[0]), .filter = code };
	pthread_t threads[4];

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0)
		fx_die("seccomp");
	for (int i = 0; i < 4; i++)
		if (pthread_create(&threads[i], NULL, register_destructor, NULL) != 0)
			fx_die("pthread_create");
	for (int i = 0; i < 4; i++)
		pthread_join(threads[i], NULL);
	printf("destructors_ran=%d\n", __atomic_load_n(&destructors_ran, __ATOMIC_SEQ_CST));
	return 0;
}

int main(int argc, char **argv)
{
	fx_region();
	if (argc == 2 && !strcmp(argv[1], "no_getpid"))
		return no_getpid();
	if (argc == 2 && !strcmp(argv[1], "sandbox_prctl"))
		return sandbox('p', argv);
	if (argc == 2 && !strcmp(argv[1], "sandbox_syscall"))
		return sandbox('s', argv);
	if (argc == 2 && !strcmp(argv[1], "sandbox_syscall_prctl"))
		return sandbox('q', argv);
	if (argc == 2 && !strcmp(argv[1], "sched_fork_round_trip"))
		return sched_fork_round_trip();
	if (argc == 2 && !strcmp(argv[1], "setattr_faked_seen"))
		return setattr_faked(true);
	if (argc == 2 && !strcmp(argv[1], "setattr_faked_unseen"))
		return setattr_faked(false);
	if (argc == 2 && !strcmp(argv[1], "sched_after_fork"))
		return sched_after_fork();
	if (argc == 2 && !strcmp(argv[1], "sched_calls"))
		return sched_calls();
	if (argc == 2 && !strcmp(argv[1], "slack_reset_unseen"))
		return slack_reset_unseen();
	if (argc == 2 && !strcmp(argv[1], "sandbox_inherited"))
		return sandbox('e', argv);
	if (argc == 2 && (!strcmp(argv[1], "sandbox_child") || !strcmp(argv[1], "own_getrusage")))
		return sandbox_waits();
	if (argc == 2 && !strcmp(argv[1], "errno_kept"))
		return errno_kept();
	if (argc == 2 && !strcmp(argv[1], "threads"))
		return threads();
	if (argc == 2 && !strcmp(argv[1], "mutex_counter"))
		return mutex_counter();
	if (argc == 2 && !strcmp(argv[1], "adopt"))
		return adopt();
	if (argc == 2 && !strcmp(argv[1], "c11"))
		return c11();
	if (argc == 2 && !strcmp(argv[1], "main_exit"))
		return main_exit();
	if (argc == 2 && !strcmp(argv[1], "concurrency"))
		return concurrency();
	nested = argc == 2 && !strcmp(argv[1], "signal_nested");
	if (argc == 2 && (nested || !strcmp(argv[1], "signal_post")))
		return signal_post();
	fx_die("usage: rt_misc no_getpid|concurrency|signal_post|signal_nested|mutex_counter|adopt|c11|main_exit|threads|errno_kept");
}
