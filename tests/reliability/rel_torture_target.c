/* SPDX-License-Identifier: MIT */
/*
 * rel_torture_target WRITERS FODDER: the target of the torture test
 * (rel_torture.c), run with the shim preloaded; in the spirit of liburcu's
 * rcutorture, every thread state change of the shim is made to happen
 * under every interruption the record protocol must survive.
 *
 * - WRITERS threads wait at random in every kind of wait: mutex contention,
 *   condvar, rwlock, semaphore, sleeps, poll, select, epoll, sigtimedwait,
 *   futex through syscall(), and bursts of instant waits (a wait the C
 *   library rejects without a syscall, so the thread runs inside the
 *   shim's record writes most of the time).
 * - Around the waits that can be abandoned safely (no lock held, nothing
 *   half done that another thread needs), SIGUSR1 is unblocked; its
 *   handler siglongjmps out of the wait, wherever in the shim it is.
 * - FODDER threads with asynchronous cancellation loop in lock-free short
 *   waits; the chaos thread cancels one at random, joins it and starts a
 *   replacement, and sends the writers their signals.
 * - The controller stops and continues the whole process (SIGSTOP).
 *
 * Prints "ready WRITERS FODDER MAX_THREADS"; then, one line each:
 *   "quiet"  ends the chaos (and the fodder): "quiet signals S jumps J cancels C"
 *   "exit"   (or end of input) ends the writers and exits with status 0.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/futex.h>

#define WRITERS_MAX 64
#define FODDER_MAX 64

static void die(const char *what)
{
	fprintf(stderr, "rel_torture_target: %s\n", what);
	exit(3);
}

static uint32_t next_random(uint64_t *state)
{
	*state = *state * 6364136223846793005u + 1442695040888963407u;
	return (uint32_t)(*state >> 33);
}

static uint64_t monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static void spin_ns(uint64_t ns)
{
	uint64_t end = monotonic_ns() + ns;

	while (monotonic_ns() < end)
		;
}

/* An absolute CLOCK_REALTIME deadline `us` microseconds from now. */
static struct timespec realtime_in(long us)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += us * 1000;
	while (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	return t;
}

/* The shim opens and closes a wait around it; glibc rejects it with
 * EINVAL before any syscall. */
static void instant_wait(void)
{
	static const struct timespec past = { 0, 1 };

	clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &past, NULL);
}

/* ---- what the threads wait on ---- */

static pthread_mutex_t contended = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static sem_t semaphore;
static atomic_int futex_word;
static int silent_pipe[2]; /* never written: poll and select time out */
static int epoll_fd;       /* watches nothing */

static int futex_wait_us(long us)
{
	struct timespec t = { 0, us * 1000 };

	return (int)syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &t, NULL, 0);
}

/* Waits that hold no lock and leave nothing half done that another thread
 * needs: a thread may leave them by siglongjmp or asynchronous
 * cancellation at any instruction.  (A semaphore wait left that way keeps
 * its waiter count raised, which only costs sem_post a futex wake.) */
static void abandonable_wait(uint64_t *seed)
{
	uint32_t r = next_random(seed);
	long us = 1 + (long)(r >> 8) % 300;

	switch (r % 13) {
	case 0:
		usleep((useconds_t)us);
		break;
	case 1: {
		struct timespec t = { 0, us * 1000 };

		nanosleep(&t, NULL);
		break;
	}
	case 2:
	case 3:
	case 10:
	case 11:
	case 12:
		/* Most often: where a record write is most likely cut. */
		for (uint32_t i = (r >> 8) % 1000; i > 0; i--)
			instant_wait();
		break;
	case 4: {
		struct pollfd fd = { .fd = silent_pipe[0], .events = POLLIN };

		poll(&fd, 1, (int)(r >> 8) % 2);
		break;
	}
	case 5: {
		struct timeval t = { 0, us };
		fd_set read_set;

		FD_ZERO(&read_set);
		FD_SET(silent_pipe[0], &read_set);
		select(silent_pipe[0] + 1, &read_set, NULL, NULL, &t);
		break;
	}
	case 6: {
		struct epoll_event event;

		epoll_wait(epoll_fd, &event, 1, (int)(r >> 8) % 2);
		break;
	}
	case 7: {
		struct timespec t = realtime_in(us);

		sem_timedwait(&semaphore, &t);
		break;
	}
	case 8:
		futex_wait_us(us);
		break;
	default: {
		struct timespec t = { 0, us * 1000 };
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR2); /* never sent */
		sigtimedwait(&set, NULL, &t);
	}
	}
}

/* Waits on shared objects: never left half done (SIGUSR1 stays blocked
 * around them). */
static void shared_wait(uint64_t *seed)
{
	uint32_t r = next_random(seed);
	long us = 1 + (long)(r >> 8) % 200;

	switch (r % 6) {
	case 0:
		/* Contention: the holder sleeps with the lock held. */
		pthread_mutex_lock(&contended);
		if (r & 0x100)
			usleep((useconds_t)us);
		else
			spin_ns((uint64_t)us * 1000);
		pthread_mutex_unlock(&contended);
		break;
	case 1: {
		struct timespec t = realtime_in(us);

		pthread_mutex_lock(&cond_lock);
		pthread_cond_timedwait(&cond, &cond_lock, &t);
		pthread_mutex_unlock(&cond_lock);
		break;
	}
	case 2:
		pthread_mutex_lock(&cond_lock);
		if (r & 0x100)
			pthread_cond_broadcast(&cond);
		else
			pthread_cond_signal(&cond);
		pthread_mutex_unlock(&cond_lock);
		break;
	case 3:
		if (r & 0x100) {
			pthread_rwlock_wrlock(&rwlock);
			spin_ns((uint64_t)us * 500);
		} else {
			pthread_rwlock_rdlock(&rwlock);
			usleep((useconds_t)us);
		}
		pthread_rwlock_unlock(&rwlock);
		break;
	case 4:
		sem_post(&semaphore);
		syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		break;
	default:
		spin_ns((uint64_t)us * 1000);
	}
}

/* ---- writers ---- */

struct writer {
	pthread_t thread;
	sigjmp_buf env;
	volatile sig_atomic_t armed;
	atomic_long jumps;
	uint64_t seed;
};

static struct writer writers[WRITERS_MAX];
static int writer_count;
static atomic_int stopping;
static sigset_t jump_signals;
static __thread struct writer *self_writer;

static void jump_out(int number)
{
	struct writer *w = self_writer;

	(void)number;
	if (w && w->armed) {
		w->armed = 0;
		siglongjmp(w->env, 1);
	}
}

/* One abandonable wait with SIGUSR1 open: the signal may jump out of it
 * anywhere, the shim's wrapper included.  sigsetjmp saved the mask with
 * SIGUSR1 blocked, and siglongjmp restores it. */
static void jumpable_wait(struct writer *w)
{
	if (sigsetjmp(w->env, 1)) {
		atomic_fetch_add(&w->jumps, 1);
		return;
	}
	w->armed = 1;
	pthread_sigmask(SIG_UNBLOCK, &jump_signals, NULL);
	abandonable_wait(&w->seed);
	pthread_sigmask(SIG_BLOCK, &jump_signals, NULL);
	w->armed = 0;
}

static void *writer_main(void *argument)
{
	struct writer *w = argument;

	self_writer = w;
	while (!atomic_load(&stopping)) {
		if (next_random(&w->seed) % 2)
			jumpable_wait(w);
		else
			shared_wait(&w->seed);
	}
	return NULL;
}

/* ---- fodder and chaos ---- */

static pthread_t fodder[FODDER_MAX];
static int fodder_count;
static atomic_long fodder_started;

static void *fodder_main(void *argument)
{
	uint64_t seed = (uintptr_t)argument;
	int old;

	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
	for (;;)
		abandonable_wait(&seed);
	return NULL;
}

static void fodder_start(int i)
{
	long n = atomic_fetch_add(&fodder_started, 1);

	if (pthread_create(&fodder[i], NULL, fodder_main, (void *)(uintptr_t)(n * 7919 + 1)) != 0)
		die("cannot start a fodder thread");
}

static void fodder_end(int i)
{
	if (pthread_cancel(fodder[i]) != 0 || pthread_join(fodder[i], NULL) != 0)
		die("cannot cancel a fodder thread");
}

static atomic_int quiet;
static atomic_long signals_sent, cancels;

static void *chaos_main(void *unused)
{
	uint64_t seed = 4242;

	(void)unused;
	while (!atomic_load(&quiet)) {
		uint32_t r = next_random(&seed);

		if (r % 10 < 7) {
			pthread_kill(writers[(r >> 8) % (uint32_t)writer_count].thread, SIGUSR1);
			atomic_fetch_add(&signals_sent, 1);
		} else {
			int i = (int)((r >> 8) % (uint32_t)fodder_count);

			fodder_end(i);
			fodder_start(i);
			atomic_fetch_add(&cancels, 1);
		}
		usleep((r >> 16) % 300);
	}
	return NULL;
}

static long jumps_taken(void)
{
	long sum = 0;

	for (int i = 0; i < writer_count; i++)
		sum += atomic_load(&writers[i].jumps);
	return sum;
}

int main(int argc, char **argv)
{
	struct sigaction action = { .sa_handler = jump_out };
	struct epoll_event never = { .events = EPOLLIN };
	pthread_t chaos;
	char line[64];
	bool quieted = false;

	if (argc != 3 || (writer_count = atoi(argv[1])) < 1 || writer_count > WRITERS_MAX ||
	    (fodder_count = atoi(argv[2])) < 1 || fodder_count > FODDER_MAX) {
		fprintf(stderr, "usage: rel_torture_target WRITERS FODDER (1..64 each)\n");
		return 2;
	}
	/* Every thread starts with SIGUSR1 blocked; writers open it around
	 * abandonable waits only. */
	sigemptyset(&jump_signals);
	sigaddset(&jump_signals, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &jump_signals, NULL);
	sigemptyset(&action.sa_mask);
	if (sigaction(SIGUSR1, &action, NULL) != 0 || sem_init(&semaphore, 0, 0) != 0 || pipe(silent_pipe) != 0 ||
	    (epoll_fd = epoll_create1(0)) < 0 || epoll_ctl(epoll_fd, EPOLL_CTL_ADD, silent_pipe[0], &never) != 0)
		die("cannot set up");

	for (int i = 0; i < writer_count; i++) {
		writers[i].seed = (uint64_t)i * 104729 + 17;
		if (pthread_create(&writers[i].thread, NULL, writer_main, &writers[i]) != 0)
			die("cannot start a writer");
	}
	for (int i = 0; i < fodder_count; i++)
		fodder_start(i);
	if (pthread_create(&chaos, NULL, chaos_main, NULL) != 0)
		die("cannot start the chaos thread");
	/* main, chaos, writers, fodder (a replacement starts after the join) */
	printf("ready %d %d %d\n", writer_count, fodder_count, 2 + writer_count + fodder_count);
	fflush(stdout);

	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "quiet", 5) && !quieted) {
			atomic_store(&quiet, 1);
			pthread_join(chaos, NULL);
			for (int i = 0; i < fodder_count; i++)
				fodder_end(i);
			quieted = true;
			printf("quiet signals %ld jumps %ld cancels %ld\n", atomic_load(&signals_sent), jumps_taken(),
			       atomic_load(&cancels));
			fflush(stdout);
		} else if (!strncmp(line, "exit", 4)) {
			break;
		}
	}
	if (!quieted) {
		atomic_store(&quiet, 1);
		pthread_join(chaos, NULL);
	}
	atomic_store(&stopping, 1);
	for (int i = 0; i < writer_count; i++)
		pthread_join(writers[i].thread, NULL);
	return 0;
}
