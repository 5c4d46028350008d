/* SPDX-License-Identifier: MIT */
/* break5 probe: return values and errno of calls that now stamp before they act (unlocks by non-owners of each mutex type, sem_post at the maximum, failing futex wakes, a signal, an rwlock unlock).  Run it bare and under the shim and diff the outputs. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static pthread_mutex_t m;
static void *stranger(void *a) { (void)a; errno = 1234; int e = pthread_mutex_unlock(&m); printf("unlock other's: %d errno %d\n", e, errno); return NULL; }
static void *locker(void *a) { (void)a; pthread_mutex_lock(&m); pthread_mutex_unlock(&m); return NULL; }
int main(void)
{
	for (int type = 0; type < 4; type++) {
		pthread_mutexattr_t at; pthread_mutexattr_init(&at);
		if (type == 1) pthread_mutexattr_settype(&at, PTHREAD_MUTEX_ERRORCHECK);
		if (type == 2) pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST);
		if (type == 3) pthread_mutexattr_setprotocol(&at, PTHREAD_PRIO_INHERIT);
		pthread_mutex_init(&m, &at);
		pthread_mutex_lock(&m);
		pthread_t l, s; pthread_create(&l, NULL, locker, NULL); usleep(20000);
		pthread_create(&s, NULL, stranger, NULL); pthread_join(s, NULL);
		errno = 4321; int e = pthread_mutex_unlock(&m); printf("type %d own unlock %d errno %d\n", type, e, errno);
		pthread_join(l, NULL);
		errno = 4321; e = pthread_mutex_unlock(&m); printf("type %d unlock unlocked %d errno %d\n", type, e, errno);
	}
	sem_t s; sem_init(&s, 0, SEM_VALUE_MAX);
	errno = 0; int r = sem_post(&s); printf("sem_post at max: %d errno %d\n", r, errno);
	int w = 0;
	errno = 0; long x = syscall(SYS_futex, &w, FUTEX_WAKE_BITSET_PRIVATE, 1, NULL, NULL, 0); printf("wake bitset 0: %ld errno %d\n", x, errno);
	errno = 0; x = syscall(SYS_futex, (int *)1, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); printf("wake misaligned: %ld errno %d\n", x, errno);
	errno = 0; x = syscall(SYS_futex, &w, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1, (int *)8, 0); printf("wake_op bad: %ld errno %d\n", x, errno);
	errno = 0; x = syscall(SYS_futex, &w, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)1, &w, 5); printf("requeue mismatch: %ld errno %d\n", x, errno);
	pthread_cond_t c = PTHREAD_COND_INITIALIZER; errno = 77; r = pthread_cond_signal(&c); printf("signal: %d errno %d\n", r, errno);
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER; errno = 77; r = pthread_rwlock_unlock(&rw); printf("rw unlock unlocked: %d errno %d\n", r, errno);
	return 0;
}
