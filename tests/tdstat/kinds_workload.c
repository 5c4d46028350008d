/* SPDX-License-Identifier: MIT */
/*
 * Threads parked in known kinds of wait, for the idle-by-kind tests:
 *   kinds    two threads in pthread_cond_wait on `parked_condvar`, one
 *            blocked on `parked_mutex` (held by the sleeper), one in
 *            nanosleep holding it, one in poll on a pipe, main in
 *            pthread_join of the sleeper.  Prints "ready" and stays so
 *            until killed.
 *   pingpong two threads take turns through `turn_changed`, sleeping
 *            200 us in each turn: waits that begin and end between two
 *            readings of tdstat.  Prints "ready"; runs until killed.
 *   moving   one thread that, every 0.4 s, takes another name ("phase-a",
 *            "phase-b") and waits on another condvar (`first_condvar`,
 *            `second_condvar`), for tdstat -t's names kept from line to
 *            line (they must follow).  Prints "ready"; runs until killed.
 *   pulse    twenty threads in pthread_cond_wait for good, and one named
 *            "pulse" that, every 20 ms, runs 4 ms on a CPU and sleeps
 *            again (nanosleep): it wakes, runs and sleeps between two
 *            lines of tdstat -t at -i 0.05, while the others never move
 *            (what tdstat reads of the kernel, and prints, from line to
 *            line must follow it); and one named "hidden" that does the
 *            same but sleeps in a raw clock_nanosleep system call, which
 *            the shim does not see (its record never changes: runnable
 *            throughout); and on x86-64 one named "unrecorded", started
 *            with a raw clone (the shim has no record of it), doing the
 *            same with raw system calls.  Prints "ready"; runs until
 *            killed.
 *   stack    main in pthread_cond_wait on a condvar on its own stack,
 *            above every module's mapping (-w names it by address, not
 *            as a module's offset).  Prints "ready"; stays until killed.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <stdbool.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "raw_syscall.h"

static pthread_mutex_t parked_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t parked_condvar = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t condvar_mutex = PTHREAD_MUTEX_INITIALIZER;
static int never;
static int pipe_ends[2];

static void *in_cond(void *unused)
{
	pthread_mutex_lock(&condvar_mutex);
	while (!never)
		pthread_cond_wait(&parked_condvar, &condvar_mutex);
	pthread_mutex_unlock(&condvar_mutex);
	return unused;
}

static void *on_mutex(void *unused)
{
	pthread_mutex_lock(&parked_mutex);
	pthread_mutex_unlock(&parked_mutex);
	return unused;
}

static void *sleeper(void *unused)
{
	pthread_mutex_lock(&parked_mutex);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		sleep(1000);
	return unused;
}

static void *in_poll(void *unused)
{
	struct pollfd wait_for = { .fd = pipe_ends[0], .events = POLLIN };

	poll(&wait_for, 1, -1);
	return unused;
}

static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static int turn;

static void *take_turns(void *mine)
{
	int me = (int)(long)mine;

	for (;;) {
		pthread_mutex_lock(&turn_lock);
		while (turn != me)
			pthread_cond_wait(&turn_changed, &turn_lock);
		pthread_mutex_unlock(&turn_lock);
		usleep(200);
		pthread_mutex_lock(&turn_lock);
		turn = !me;
		pthread_cond_signal(&turn_changed);
		pthread_mutex_unlock(&turn_lock);
	}
	return NULL;
}

static int ping_pong(void)
{
	pthread_t threads[2];

	pthread_create(&threads[0], NULL, take_turns, (void *)0L);
	pthread_create(&threads[1], NULL, take_turns, (void *)1L);
	printf("ready\n");
	fflush(stdout);
	pthread_join(threads[0], NULL);
	return 0;
}

static pthread_mutex_t moving_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t first_condvar = PTHREAD_COND_INITIALIZER;
static pthread_cond_t second_condvar = PTHREAD_COND_INITIALIZER;

static void *mover(void *unused)
{
	for (int phase = 0;; phase = !phase) {
		struct timespec until;

		prctl(PR_SET_NAME, phase ? "phase-b" : "phase-a");
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 400 * 1000 * 1000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&moving_lock);
		while (pthread_cond_timedwait(phase ? &second_condvar : &first_condvar, &moving_lock, &until) == 0)
			;
		pthread_mutex_unlock(&moving_lock);
	}
	return unused;
}

static int moving(void)
{
	pthread_t thread;

	pthread_create(&thread, NULL, mover, NULL);
	printf("ready\n");
	fflush(stdout);
	pthread_join(thread, NULL);
	return 0;
}

static void spin_ms(int ms)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do
		clock_gettime(CLOCK_MONOTONIC, &now);
	while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < ms * 1000000L);
}

static void *pulsing(void *unused)
{
	const struct timespec rest = { 0, 16 * 1000 * 1000 };

	for (;;) {
		spin_ms(4);
		nanosleep(&rest, NULL);
	}
	return unused;
}

static void *hiding(void *unused)
{
	const struct timespec rest = { 0, 16 * 1000 * 1000 };

	for (;;) {
		spin_ms(4);
		syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &rest, NULL);
	}
	return unused;
}

#if defined(__x86_64__)
static int unrecorded(void *unused)
{
	static const struct timespec rest = { 0, 16 * 1000 * 1000 };

	tdtest_raw_syscall4(SYS_prctl, PR_SET_NAME, (long)"unrecorded", 0, 0);
	for (;;) {
		spin_ms(4);
		tdtest_raw_syscall4(SYS_nanosleep, (long)&rest, 0, 0, 0);
	}
	return unused != NULL;
}

/* Its stack from the heap: 64 KiB more of .bss would take the parked
 * objects' pages out of the executable's file-backed mapping, where the
 * other modes' tests name them. */
static void start_unrecorded(void)
{
	enum { STACK = 64 * 1024 };
	char *stack = aligned_alloc(64, STACK);

	if (stack)
		clone(unrecorded, stack + STACK,
		      CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM, NULL);
}
#else
static void start_unrecorded(void)
{
}
#endif

static int pulse(void)
{
	pthread_t thread;

	for (int i = 0; i < 20; i++)
		pthread_create(&thread, NULL, in_cond, NULL);
	/* Named before "ready", so the first reading has the names. */
	pthread_create(&thread, NULL, hiding, NULL);
	pthread_setname_np(thread, "hidden");
	pthread_create(&thread, NULL, pulsing, NULL);
	pthread_setname_np(thread, "pulse");
	start_unrecorded();
	/* It names itself: wait for it (a tenth of a second at most). */
	for (int i = 0; i < 100; i++) {
		char comm[32] = "";
		FILE *file = NULL;
		char path[320];
		DIR *tasks = opendir("/proc/self/task");
		struct dirent *entry;
		bool named = false;

		while (tasks && (entry = readdir(tasks)) && !named) {
			snprintf(path, sizeof(path), "/proc/self/task/%s/comm", entry->d_name);
			file = entry->d_name[0] != '.' ? fopen(path, "r") : NULL;
			if (file && fgets(comm, sizeof(comm), file))
				named = strncmp(comm, "unrecorded", 10) == 0;
			if (file)
				fclose(file);
		}
		if (tasks)
			closedir(tasks);
		if (named)
			break;
		usleep(1000);
	}
	printf("ready\n");
	fflush(stdout);
	pthread_join(thread, NULL);
	return 0;
}

static __attribute__((noinline)) int wait_on_stack(void)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t forever = PTHREAD_COND_INITIALIZER;

	printf("ready\n");
	fflush(stdout);
	pthread_mutex_lock(&lock);
	for (;;)
		pthread_cond_wait(&forever, &lock);
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t threads[5];

	if (argc > 1 && strcmp(argv[1], "pingpong") == 0)
		return ping_pong();
	if (argc > 1 && strcmp(argv[1], "moving") == 0)
		return moving();
	if (argc > 1 && strcmp(argv[1], "pulse") == 0)
		return pulse();
	if (argc > 1 && strcmp(argv[1], "stack") == 0)
		return wait_on_stack();

	if (pipe(pipe_ends) != 0)
		return 1;
	pthread_create(&threads[0], NULL, sleeper, NULL);
	/* The sleeper holds the mutex before anyone blocks on it. */
	while (pthread_mutex_trylock(&parked_mutex) == 0)
		pthread_mutex_unlock(&parked_mutex);
	pthread_create(&threads[1], NULL, in_cond, NULL);
	pthread_create(&threads[2], NULL, in_cond, NULL);
	pthread_create(&threads[3], NULL, on_mutex, NULL);
	pthread_create(&threads[4], NULL, in_poll, NULL);
	pthread_join(threads[0], NULL);
	return 0;
}
