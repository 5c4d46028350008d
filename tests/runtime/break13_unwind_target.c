/* SPDX-License-Identifier: MIT */
/*
 * break13_unwind_target: async_unwind_target (same calls, same gdb drive
 * by async_unwind_test.py), which also checks what each forced unwinding
 * left behind, after every join:
 *
 * BREAK13_CHECK=records (default): no record of a thread that began its
 * tracking (its tid in the record) stays live once the thread is joined.
 * A pthread_exit from a handler that interrupted the trampoline's own
 * instructions passed its frame without the cleanup that ends tracking
 * (personality.c runs none in an interrupted frame; before it, only the
 * instructions after the start routine's return leaked), and nothing
 * else ended it.  A record still unowned (tid 0: the thread died before
 * begin_tracking took its creator's claim) is reported, not failed: no
 * code of the thread's can know that claim yet.
 *
 * BREAK13_CHECK=waiters: the semaphore's waiter count (the high half of
 * glibc's word) is back to 0.  semaphore_wait_sleeping registers as a
 * waiter and unregisters in a cleanup, which an interrupted frame skips:
 * each such unwinding leaves a waiter that never was, for good.
 *
 * Exits 5 when a check fails (async_unwind_test.py: "the target ended
 * with 5"), with one line per leak on stderr: the interrupted
 * instruction, as an offset in the object that holds it.
 */
#define _GNU_SOURCE
#include "fixture.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <linux/futex.h>

#define ROUNDS 3
#define THREADS_MAX 100000

volatile int finished;
static int futex_word = 1;
static sem_t semaphore;
static int silent_pipe[2];
static int epoll_fd;

/* gdb counts the threads that went through every round untouched. */
void fodder_done(void);
__attribute__((noinline)) void fodder_done(void)
{
	__asm__ __volatile__("" ::: "memory");
}

/* The instruction the last SIGUSR2 interrupted (0: none). */
static volatile unsigned long interrupted_at;

static void on_usr2(int number, siginfo_t *info, void *context)
{
	(void)number;
	(void)info;
	interrupted_at = (unsigned long)((ucontext_t *)context)->uc_mcontext.gregs[REG_RIP];
	pthread_exit(NULL);
}

static bool check_waiters;
static int leaks, unowned;
static uint64_t waiters_before;
/* A leaked record stays live: each is counted once. */
static bool reported[TDSTAT_RECORD_CAPACITY];

static void where(char *buffer, size_t size)
{
	Dl_info object = { 0 };

	if (interrupted_at && dladdr((void *)interrupted_at, &object) && object.dli_fname)
		snprintf(buffer, size, "%s+0x%lx", object.dli_fname, interrupted_at - (unsigned long)object.dli_fbase);
	else
		snprintf(buffer, size, "0x%lx", interrupted_at);
}

/* After each join: what the thread's end left behind. */
static void check_after_join(void)
{
	pid_t self = fx_gettid();
	char at[512];
	uint64_t word;

	where(at, sizeof(at));
	if (check_waiters) {
		memcpy(&word, &semaphore, sizeof(word));
		if (word >> 32 != waiters_before) {
			fprintf(stderr, "leak: semaphore waiters %llu -> %llu, unwound at %s\n",
				(unsigned long long)waiters_before, (unsigned long long)(word >> 32), at);
			waiters_before = word >> 32;
			leaks++;
		}
	} else {
		struct tdstat_region *region = fx_region();
		uint32_t high = __atomic_load_n(&region->header.status.high_water, __ATOMIC_ACQUIRE);

		for (uint32_t i = 0; i < high && i < TDSTAT_RECORD_CAPACITY; i++) {
			struct fx_record record = fx_read_record(i);

			if (record.state == TDSTAT_STATE_FREE || record.tid == self || reported[i])
				continue;
			reported[i] = true;
			fprintf(stderr, "leak: record %u (tid %d, %s) live, unwound at %s\n", i, (int)record.tid,
				fx_state_name(record.state), at);
			if (record.tid)
				leaks++;
			else
				unowned++;
		}
	}
	interrupted_at = 0;
}

/* Each thread's own: one ended while it held the lock leaves it held, and
 * the next thread must not wait for it. */
struct locks {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_rwlock_t rwlock;
};

static void one_round(struct locks *locks)
{
	static const struct timespec past = { 0, 1 }, zero = { 0, 0 };
	struct timespec deadline = { 0, 0 };
	struct pollfd fd = { .fd = silent_pipe[0], .events = POLLIN };
	struct timeval no_time = { 0, 0 };
	struct epoll_event event;
	fd_set read_set;
	sigset_t set;
	char byte;

	/* futex through syscall(): the word is not 0, EAGAIN at once. */
	syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	/* Rejected before any system call (EINVAL). */
	clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &past, NULL);
	nanosleep(&zero, NULL);
	poll(&fd, 1, 0);
	FD_ZERO(&read_set);
	FD_SET(silent_pipe[0], &read_set);
	select(silent_pipe[0] + 1, &read_set, NULL, NULL, &no_time);
	epoll_wait(epoll_fd, &event, 1, 0);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigtimedwait(&set, NULL, &zero);
	/* A deadline in the past: ETIMEDOUT at once. */
	sem_timedwait(&semaphore, &deadline);
	pthread_mutex_lock(&locks->lock);
	pthread_cond_timedwait(&locks->cond, &locks->lock, &deadline);
	pthread_mutex_unlock(&locks->lock);
	pthread_rwlock_timedrdlock(&locks->rwlock, &deadline);
	pthread_rwlock_unlock(&locks->rwlock);
	pthread_rwlock_timedwrlock(&locks->rwlock, &deadline);
	pthread_rwlock_unlock(&locks->rwlock);
	if (read(silent_pipe[0], &byte, 1) < 0 && errno != EAGAIN)
		abort();
	usleep(0);
}

static void *fodder(void *unused)
{
	struct locks locks = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_RWLOCK_INITIALIZER };

	(void)unused;
	for (int i = 0; i < ROUNDS; i++)
		one_round(&locks);
	fodder_done();
	return NULL;
}

int main(void)
{
	struct epoll_event never = { .events = EPOLLIN };
	struct sigaction action = { .sa_sigaction = on_usr2, .sa_flags = SA_SIGINFO };
	const char *check = getenv("BREAK13_CHECK");
	int threads = 0;

	check_waiters = check && !strcmp(check, "waiters");
	sigemptyset(&action.sa_mask);
	if (sigaction(SIGUSR2, &action, NULL) != 0 || sem_init(&semaphore, 0, 0) != 0 ||
	    pipe(silent_pipe) != 0 || (epoll_fd = epoll_create1(0)) < 0 ||
	    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, silent_pipe[0], &never) != 0) {
		fprintf(stderr, "break13_unwind_target: cannot set up\n");
		return 3;
	}
	/* read() returns at once. */
	if (fcntl(silent_pipe[0], F_SETFL, O_NONBLOCK) != 0)
		return 3;
	while (!finished && threads < THREADS_MAX) {
		pthread_t thread;

		if (pthread_create(&thread, NULL, fodder, NULL) != 0 || pthread_join(thread, NULL) != 0) {
			fprintf(stderr, "break13_unwind_target: cannot start or join thread %d\n", threads);
			return 3;
		}
		threads++;
		check_after_join();
	}
	printf("done %d\n", threads);
	fprintf(stderr, "break13_unwind_target: %s: %d leaks, %d records never owned\n",
		check_waiters ? "waiters" : "records", leaks, unowned);
	if (leaks)
		return 5;
	return 0;
}
