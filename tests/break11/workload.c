/* SPDX-License-Identifier: MIT */
/*
 * Targets for tests/break11/names_test.py: waits whose objects tdstat -w
 * must name truthfully and as distinct rows.
 *   select    main waits in select() on a pipe (fd R) with nfds R+1, while
 *             descriptor R+1 is open on a marker file;
 *   children  three threads of one function wait for children:
 *             waitpid(-1), waitpid(0) and waitid(P_PGID, own group);
 *   churn      threads with odd names (quotes, commas, a newline, '%',
 *             a backslash, bytes that are not UTF-8) pass a mutex and a
 *             condvar around while others start and end short threads;
 *   truncate LIB  loads LIB (a copy of libbreak11_truncated.so), whose
 *             thread waits on the library's condvar, and a thread that
 *             waits on a heap condvar with a timeout, in a loop; at a
 *             line on stdin truncates LIB to nothing and says "truncated";
 *   many N     N threads asleep in nanosleep, main joins;
 *   same-names two static functions named `waiter`, in two files, wait
 *             on one condition variable (same_name_a.c, same_name_b.c).
 * Prints "ready" once every wait has begun (or is about to), then stays.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "same_name.h"

pthread_mutex_t same_name_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t same_name_cond = PTHREAD_COND_INITIALIZER;

static int run_select(const char *marker)
{
	int pipe_fds[2];
	fd_set readable;

	if (pipe(pipe_fds) != 0)
		return 1;
	/* The write end moves out of the way so the marker file takes the
	 * descriptor after the read end. */
	if (dup2(pipe_fds[1], 40) < 0 || close(pipe_fds[1]) != 0)
		return 1;
	if (open(marker, O_RDONLY | O_CREAT, 0600) != pipe_fds[0] + 1)
		return 1;
	printf("ready %d\n", pipe_fds[0]);
	fflush(stdout);
	FD_ZERO(&readable);
	FD_SET(pipe_fds[0], &readable);
	select(pipe_fds[0] + 1, &readable, NULL, NULL, NULL);
	return 0;
}

enum how { ANY_PID, OWN_GROUP_PID, OWN_GROUP_ID };

static void *waiter(void *arg)
{
	siginfo_t info;

	switch ((enum how)(intptr_t)arg) {
	case ANY_PID:
		waitpid(-1, NULL, 0);
		break;
	case OWN_GROUP_PID:
		waitpid(0, NULL, 0);
		break;
	case OWN_GROUP_ID:
		waitid(P_PGID, (id_t)getpgid(0), &info, WEXITED);
		break;
	}
	return NULL;
}

static int run_children(void)
{
	pthread_t threads[3];
	pid_t child = fork();

	if (child < 0)
		return 1;
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	for (int i = 0; i < 3; i++)
		pthread_create(&threads[i], NULL, waiter, (void *)(intptr_t)i);
	printf("ready %d\n", (int)getpgid(0));
	fflush(stdout);
	for (int i = 0; i < 3; i++)
		pthread_join(threads[i], NULL);
	return 0;
}

static pthread_mutex_t churn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t churn_cond = PTHREAD_COND_INITIALIZER;
static const char *const odd_names[] = {
	"q\"uo,te", "new\nline", "%s%n%d", "back\\sl", "\xff\xfe\xc3", "a\"\\,\r%",
};

static void *short_thread(void *arg)
{
	struct timespec pause_for = { 0, 200000 };

	prctl(PR_SET_NAME, odd_names[(intptr_t)arg % 6]);
	nanosleep(&pause_for, NULL);
	return NULL;
}

static void *churner(void *arg)
{
	prctl(PR_SET_NAME, odd_names[(intptr_t)arg % 6]);
	for (unsigned long i = 0;; i++) {
		pthread_t thread;
		struct timespec deadline;

		if ((intptr_t)arg % 2 && pthread_create(&thread, NULL, short_thread, (void *)(intptr_t)i) == 0)
			pthread_join(thread, NULL);
		pthread_mutex_lock(&churn_lock);
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_nsec += 300000;
		if (deadline.tv_nsec >= 1000000000) {
			deadline.tv_nsec -= 1000000000;
			deadline.tv_sec++;
		}
		pthread_cond_broadcast(&churn_cond);
		pthread_cond_timedwait(&churn_cond, &churn_lock, &deadline);
		pthread_mutex_unlock(&churn_lock);
	}
	return NULL;
}

static int run_churn(void)
{
	pthread_t threads[6];

	for (int i = 0; i < 6; i++)
		pthread_create(&threads[i], NULL, churner, (void *)(intptr_t)i);
	printf("ready 0\n");
	fflush(stdout);
	pthread_join(threads[0], NULL);
	return 0;
}

static void *heap_waiter(void *arg)
{
	pthread_cond_t *cond = arg;
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

	pthread_mutex_lock(&lock);
	for (;;) {
		struct timespec deadline;

		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_nsec += 50000000;
		if (deadline.tv_nsec >= 1000000000) {
			deadline.tv_nsec -= 1000000000;
			deadline.tv_sec++;
		}
		pthread_cond_timedwait(cond, &lock, &deadline);
	}
	return NULL;
}

static int run_truncate(const char *library)
{
	void *handle = dlopen(library, RTLD_NOW);
	void (*start)(void) = handle ? (void (*)(void))dlsym(handle, "break11_lib_start") : NULL;
	pthread_cond_t *cond = malloc(sizeof(*cond));
	pthread_t thread;
	char line[16];

	if (!start || !cond)
		return 1;
	pthread_cond_init(cond, NULL);
	start();
	pthread_create(&thread, NULL, heap_waiter, cond);
	printf("ready 0\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin) || truncate(library, 0) != 0)
		return 1;
	printf("truncated\n");
	fflush(stdout);
	pthread_join(thread, NULL);
	return 0;
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		sleep(1000);
	return NULL;
}

static int run_many(int count)
{
	pthread_t thread;
	pthread_attr_t attributes;

	pthread_attr_init(&attributes);
	pthread_attr_setstacksize(&attributes, 64 * 1024);
	for (int i = 0; i < count; i++)
		if (pthread_create(&thread, &attributes, sleeper, NULL) != 0)
			return 1;
	printf("ready %d\n", count);
	fflush(stdout);
	pthread_join(thread, NULL);
	return 0;
}

static int run_same_names(void)
{
	pthread_t threads[2];

	start_waiter_a(&threads[0]);
	start_waiter_b(&threads[1]);
	printf("ready 0\n");
	fflush(stdout);
	pthread_join(threads[0], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "select"))
		return run_select(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "children"))
		return run_children();
	if (argc == 2 && !strcmp(argv[1], "churn"))
		return run_churn();
	if (argc == 3 && !strcmp(argv[1], "truncate"))
		return run_truncate(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "many"))
		return run_many(atoi(argv[2]));
	if (argc == 2 && !strcmp(argv[1], "same-names"))
		return run_same_names();
	fprintf(stderr, "usage: %s select MARKER | children | churn | truncate LIB | many N | same-names\n", argv[0]);
	return 2;
}
