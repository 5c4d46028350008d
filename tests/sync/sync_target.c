/* SPDX-License-Identifier: MIT */
/*
 * The sync tests' target (docs/CONTRACT.md §9): threads parked on named,
 * static synchronization objects, in states the tests know.
 *
 *   taker-a    holds lock_alpha, waits for lock_beta      } a deadlock
 *   taker-b    holds lock_beta, waits for lock_alpha      }
 *   tab-writer write-locks table_lock, then pauses
 *   tab-reader waits to read-lock table_lock
 *   tab-writer2 waits to write-lock table_lock
 *   slot-1, slot-2 wait on the semaphore free_slots (value 0)
 *
 * With the argument "free" the takers take their locks one after the
 * other instead (no deadlock; both end up parked elsewhere).  Each thread
 * prints "thread NAME TID" before its last wait; main prints "ready" once
 * every thread sleeps in the kernel after saying so, then waits for its
 * stdin to close and exits.  Built with symbols (.symtab) so that the
 * objects have names.
 */
#include <dirent.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock_alpha = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_beta = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static sem_t free_slots;
static pthread_barrier_t crossed;      /* both takers hold their first lock */
static pthread_barrier_t table_taken;  /* the writer holds table_lock */
static bool deadlock = true;

#define THREADS 7
static pid_t tids[THREADS];
static atomic_int announced;
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

/* Says who is about to wait: the last thing before the wait itself. */
static void announce(const char *name)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);

	pthread_setname_np(pthread_self(), name);
	pthread_mutex_lock(&print_lock);
	printf("thread %s %d\n", name, (int)tid);
	fflush(stdout);
	tids[atomic_fetch_add(&announced, 1)] = tid;
	pthread_mutex_unlock(&print_lock);
}

static void park(void)
{
	for (;;)
		pause();
}

static void *taker_a(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&lock_alpha);
	if (!deadlock)
		pthread_mutex_unlock(&lock_alpha);
	pthread_barrier_wait(&crossed);
	announce("taker-a");
	pthread_mutex_lock(&lock_beta);
	park();
	return NULL;
}

static void *taker_b(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&lock_beta);
	if (!deadlock)
		pthread_mutex_unlock(&lock_beta);
	pthread_barrier_wait(&crossed);
	announce("taker-b");
	if (!deadlock) {
		/* The other taker holds lock_beta for good: wait for it to
		 * take it, then take lock_alpha, which nobody holds. */
		struct timespec nap = { 0, 10 * 1000 * 1000 };
		while (pthread_mutex_trylock(&lock_beta) == 0) {
			pthread_mutex_unlock(&lock_beta);
			nanosleep(&nap, NULL);
		}
		pthread_mutex_lock(&lock_alpha);
		park();
	}
	pthread_mutex_lock(&lock_alpha);
	park();
	return NULL;
}

static void *table_writer(void *unused)
{
	(void)unused;
	pthread_rwlock_wrlock(&table_lock);
	pthread_barrier_wait(&table_taken);
	announce("tab-writer");
	park();
	return NULL;
}

static void *table_reader(void *unused)
{
	(void)unused;
	pthread_barrier_wait(&table_taken);
	announce("tab-reader");
	pthread_rwlock_rdlock(&table_lock);
	park();
	return NULL;
}

static void *table_writer2(void *unused)
{
	(void)unused;
	pthread_barrier_wait(&table_taken);
	announce("tab-writer2");
	pthread_rwlock_wrlock(&table_lock);
	park();
	return NULL;
}

static void *slot_waiter(void *name)
{
	announce(name);
	sem_wait(&free_slots);
	park();
	return NULL;
}

/* Whether thread tid sleeps in the kernel ('S' in its stat). */
static bool sleeping(pid_t tid)
{
	char path[64], line[512], *state;
	FILE *stat;
	bool asleep = false;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	stat = fopen(path, "r");
	if (!stat)
		return false;
	if (fgets(line, sizeof(line), stat) && (state = strrchr(line, ')')) && state[1] == ' ')
		asleep = state[2] == 'S';
	fclose(stat);
	return asleep;
}

int main(int argc, char **argv)
{
	void *(*starts[THREADS])(void *) = { taker_a, taker_b, table_writer, table_reader, table_writer2,
					     slot_waiter, slot_waiter };
	void *names[THREADS] = { NULL, NULL, NULL, NULL, NULL, "slot-1", "slot-2" };
	struct timespec nap = { 0, 20 * 1000 * 1000 };
	char buffer[64];
	pthread_t thread;

	deadlock = !(argc > 1 && strcmp(argv[1], "free") == 0);
	sem_init(&free_slots, 0, 0);
	pthread_barrier_init(&crossed, NULL, 2);
	pthread_barrier_init(&table_taken, NULL, 3);
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&thread, NULL, starts[i], names[i]) != 0) {
			perror("pthread_create");
			return 1;
		}
	/* Every thread announced, then slept for two looks in a row. */
	for (int quiet = 0; quiet < 2;) {
		bool all = atomic_load(&announced) == THREADS;

		for (int i = 0; all && i < THREADS; i++)
			all = sleeping(tids[i]);
		quiet = all ? quiet + 1 : 0;
		nanosleep(&nap, NULL);
	}
	printf("ready\n");
	fflush(stdout);
	while (read(0, buffer, sizeof(buffer)) > 0)
		;
	_exit(0);
}
