/* SPDX-License-Identifier: MIT */
/*
 * What async_unwind_target and break13_unwind_target share: threads, one
 * at a time, go through the wrapped calls of one_round (each returns at
 * once: the thread spends its time in the shim's wrappers) ROUNDS times,
 * then call fodder_done() and end; main starts the next one until gdb
 * (async_unwind_test.py) sets `finished`.  gdb stops a thread at an
 * instruction of a wrapper and delivers SIGUSR2, whose handler (the
 * target's) calls pthread_exit.  Included by one file of each target.
 */
#ifndef RT_UNWIND_ROUNDS_H
#define RT_UNWIND_ROUNDS_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/futex.h>

#define ROUNDS 3
#define THREADS_MAX 100000

/* Both set and read by gdb by name. */
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

/* SIGUSR2 to `on_usr2`, and what one_round reads from.  Exits 3 when
 * something cannot be set up. */
static void unwind_rounds_setup(const char *name, void (*on_usr2)(int, siginfo_t *, void *))
{
	struct epoll_event never = { .events = EPOLLIN };
	struct sigaction action = { .sa_sigaction = on_usr2, .sa_flags = SA_SIGINFO };

	sigemptyset(&action.sa_mask);
	if (sigaction(SIGUSR2, &action, NULL) != 0 || sem_init(&semaphore, 0, 0) != 0 ||
	    pipe(silent_pipe) != 0 || (epoll_fd = epoll_create1(0)) < 0 ||
	    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, silent_pipe[0], &never) != 0 ||
	    /* read() returns at once. */
	    fcntl(silent_pipe[0], F_SETFL, O_NONBLOCK) != 0) {
		fprintf(stderr, "%s: cannot set up\n", name);
		exit(3);
	}
}

/* Threads, one at a time, until gdb says `finished`; `after_join` (if
 * any) after each.  Returns how many; exits 3 when one cannot be started
 * or joined. */
static int unwind_rounds_run(const char *name, void (*after_join)(void))
{
	int threads = 0;

	while (!finished && threads < THREADS_MAX) {
		pthread_t thread;

		if (pthread_create(&thread, NULL, fodder, NULL) != 0 || pthread_join(thread, NULL) != 0) {
			fprintf(stderr, "%s: cannot start or join thread %d\n", name, threads);
			exit(3);
		}
		threads++;
		if (after_join)
			after_join();
	}
	return threads;
}

#endif
