/* SPDX-License-Identifier: MIT */
/* From the adversarial review (branch `break`, tests/reliability/break/stress.c),
 * unchanged: the churning target of rel_review resets-monotonic. */
/* A churning target: threads that hammer a contended mutex, a condvar
 * ping-pong, futex waits through syscall(), semaphores, short sleeps, and
 * (mode "jump") a timer signal whose handler siglongjmp's out of waits.
 * usage: stress SECONDS [jump] */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static sem_t s1, s2;
static atomic_int fw;
static volatile int stop;
static int turn;
static long counter;
static int jump_mode;
static __thread sigjmp_buf env;
static __thread volatile int armed;

static void handler(int sig)
{
	(void)sig;
	if (armed) { armed = 0; siglongjmp(env, 1); }
}

static void *locker(void *a)
{
	(void)a;
	while (!stop) {
		pthread_mutex_lock(&m);
		counter++;
		for (volatile int i = 0; i < 200; i++);
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

static void *pinger(void *a)
{
	int me = (int)(long)a;
	while (!stop) {
		pthread_mutex_lock(&m);
		while (turn != me && !stop) pthread_cond_wait(&c, &m);
		turn = !me;
		pthread_cond_broadcast(&c);
		pthread_mutex_unlock(&m);
	}
	pthread_mutex_lock(&m); turn = !me; pthread_cond_broadcast(&c); pthread_mutex_unlock(&m);
	return NULL;
}

static void *futexer(void *a)
{
	int me = (int)(long)a;
	while (!stop) {
		if (me) {
			int v = atomic_load(&fw);
			if (v & 1) { struct timespec t = {0, 1000000}; syscall(SYS_futex, &fw, FUTEX_WAIT_PRIVATE, v, &t, NULL, 0); }
			else { atomic_fetch_add(&fw, 1); syscall(SYS_futex, &fw, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); }
		} else {
			int v = atomic_load(&fw);
			if (!(v & 1)) { struct timespec t = {0, 1000000}; syscall(SYS_futex, &fw, FUTEX_WAIT_PRIVATE, v, &t, NULL, 0); }
			else { atomic_fetch_add(&fw, 1); syscall(SYS_futex, &fw, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); }
		}
	}
	return NULL;
}

static void *semmer(void *a)
{
	int me = (int)(long)a;
	while (!stop) {
		struct timespec t; clock_gettime(CLOCK_REALTIME, &t); t.tv_nsec += 2000000; if (t.tv_nsec >= 1000000000) { t.tv_sec++; t.tv_nsec -= 1000000000; }
		if (me) { sem_post(&s1); sem_timedwait(&s2, &t); }
		else { sem_timedwait(&s1, &t); sem_post(&s2); }
	}
	sem_post(&s1); sem_post(&s2);
	return NULL;
}

static void *sleeper(void *a)
{
	(void)a;
	while (!stop) {
		if (jump_mode && sigsetjmp(env, 1) == 0) {
			armed = 1;
			struct timespec t = {0, 300000};
			nanosleep(&t, NULL);
			armed = 0;
		} else if (!jump_mode) usleep(300);
	}
	return NULL;
}

static void *churner(void *a)
{
	(void)a;
	while (!stop) {
		pthread_t t;
		if (pthread_create(&t, NULL, locker, NULL) == 0) { usleep(100); pthread_join(t, NULL); }
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	jump_mode = argc > 2 && strcmp(argv[2], "jump") == 0;
	sem_init(&s1, 0, 0); sem_init(&s2, 0, 0);
	pthread_t t[12]; int n = 0;
	if (jump_mode) {
		struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = handler; sigaction(SIGUSR1, &sa, NULL);
	}
	pthread_create(&t[n++], NULL, locker, NULL);
	pthread_create(&t[n++], NULL, locker, NULL);
	pthread_create(&t[n++], NULL, pinger, (void *)0L);
	pthread_create(&t[n++], NULL, pinger, (void *)1L);
	pthread_create(&t[n++], NULL, futexer, (void *)0L);
	pthread_create(&t[n++], NULL, futexer, (void *)1L);
	pthread_create(&t[n++], NULL, semmer, (void *)0L);
	pthread_create(&t[n++], NULL, semmer, (void *)1L);
	int sl = n;
	pthread_create(&t[n++], NULL, sleeper, NULL);
	pthread_create(&t[n++], NULL, sleeper, NULL);
	pthread_create(&t[n++], NULL, churner, NULL);
	struct timespec end; clock_gettime(CLOCK_MONOTONIC, &end);
	for (;;) {
		struct timespec now; clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - end.tv_sec + (now.tv_nsec - end.tv_nsec) / 1e9 > secs) break;
		if (jump_mode) { pthread_kill(t[sl], SIGUSR1); pthread_kill(t[sl + 1], SIGUSR1); }
		struct timespec d = {0, 200000}; nanosleep(&d, NULL);
	}
	stop = 1;
	for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
	printf("counter %ld\n", counter);
	return 0;
}
