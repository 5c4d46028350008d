/* SPDX-License-Identifier: MIT */
/*
 * race_free: two threads share counters under a default mutex, an rwlock
 * (read and write) and a semaphore, and nothing else; then a thread
 * waiting in sem_wait is cancelled.  A race detector (valgrind's
 * helgrind) must find nothing, with the shim preloaded as without it: the
 * shim must let such a tool see every lock and join, and keep its own
 * state out of its sight.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

#define ROUNDS 200

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static sem_t semaphore;
static long under_mutex, under_rwlock, under_semaphore;

static void *work(void *argument)
{
	long seen = 0;

	(void)argument;
	for (int i = 0; i < ROUNDS; i++) {
		pthread_mutex_lock(&mutex);
		under_mutex++;
		pthread_mutex_unlock(&mutex);
		pthread_rwlock_wrlock(&rwlock);
		under_rwlock++;
		pthread_rwlock_unlock(&rwlock);
		pthread_rwlock_rdlock(&rwlock);
		seen += under_rwlock;
		pthread_rwlock_unlock(&rwlock);
		sem_wait(&semaphore);
		under_semaphore++;
		sem_post(&semaphore);
	}
	return (void *)seen;
}

static sem_t never_posted;

static void *waits_forever(void *argument)
{
	sem_wait(&never_posted);
	return argument;
}

int main(void)
{
	pthread_t threads[2], waiter;

	sem_init(&semaphore, 0, 1);
	for (int i = 0; i < 2; i++)
		pthread_create(&threads[i], NULL, work, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(threads[i], NULL);
	sem_init(&never_posted, 0, 0);
	pthread_create(&waiter, NULL, waits_forever, NULL);
	pthread_cancel(waiter);
	pthread_join(waiter, NULL);
	printf("%ld %ld %ld\n", under_mutex, under_rwlock, under_semaphore);
	return under_mutex == 2 * ROUNDS && under_rwlock == 2 * ROUNDS && under_semaphore == 2 * ROUNDS ? 0 : 1;
}
