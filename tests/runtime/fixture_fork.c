/* SPDX-License-Identifier: MIT */
/*
 * rt_fork on|off main|thread: fork while another thread waits, from the
 * main thread or from a second thread, with gathering on or off.
 * rt_fork on|off _Fork|clone: the same from main while three threads wait,
 * through _Fork() or a raw clone system call, which run no atfork
 * handler: the child makes one interposed wait before it looks.
 *
 * The child prints child.* lines: its live records, whether its one
 * record carries its own tid, status.pid, the window (restarted at the
 * fork when gathering was on, empty otherwise), and (fork only) that it
 * can still create and track a thread.  The parent then prints parent.*
 * lines.  Every child also takes and gives back locks the shim takes
 * inline and glibc gives back (child.rwlock_retaken, child.mutex_unlocked):
 * after a raw fork glibc's descriptor still holds the parent's tid, which
 * glibc writes and checks as the owner, so the shim must write that one
 * too, not the kernel's.
 */
#define _GNU_SOURCE
#include "fixture.h"

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static sem_t hold, child_gate;
static bool gathering;
static uint64_t before_fork_ns;

static pid_t waiter_tids[3];

static void *waits(void *arg)
{
	__atomic_store_n(&waiter_tids[(intptr_t)arg], fx_gettid(), __ATOMIC_SEQ_CST);
	sem_wait(&hold);
	return NULL;
}

/* The fork comes once the waiters sleep: a thread still starting may hold
 * a lock (a sanitizer's allocator) that the child would then never get. */
static void wait_until_asleep(int count)
{
	for (int i = 0; i < count; i++) {
		while (!__atomic_load_n(&waiter_tids[i], __ATOMIC_SEQ_CST))
			sched_yield();
		if (!fx_wait_state(waiter_tids[i], TDSTAT_STATE_BLOCKED))
			fx_die("waiter %d never blocked", i);
	}
}

static void *child_thread(void *arg)
{
	(void)arg;
	sem_wait(&child_gate);
	return NULL;
}

static void locks_in_child(void);

static void in_child(bool raw)
{
	struct tdstat_region *region = fx_region();
	const struct tdstat_control *control = &region->header.control;
	struct fx_record own;
	struct fx_snapshot snapshot;
	pthread_t thread;

	/* Nothing ran in a raw child yet: the shim learns of the new process
	 * at its first call. */
	if (raw)
		poll(NULL, 0, 1);
	own = fx_record_of(fx_gettid());

	printf("child.live=%d\n", fx_live_records());
	printf("child.own_record=%d\n", own.state == TDSTAT_STATE_RUNNABLE && own.tid == getpid());
	printf("child.status_pid=%d\n", region->header.status.pid == getpid());
	printf("child.overflow_live=%u\n", region->header.status.overflow_live);
	printf("child.enabled=%d\n", control->window_end_ns == TDSTAT_WINDOW_OPEN);
	printf("child.window_after_fork=%d\n", control->window_start_ns >= before_fork_ns);
	printf("child.window_empty=%d\n", control->window_start_ns == control->window_end_ns);
	fx_spin_ns(20 * 1000000ull);
	snapshot = fx_snapshot();
	fx_print_snapshot("child", &snapshot);
	/* one thread only, alive since before the window start */
	printf("child.tracked_is_window=%d\n", snapshot.tracked_ns == snapshot.window_ns);
	locks_in_child();
	if (raw) {
		/* only async-signal-safe calls in the child of _Fork */
		fflush(stdout);
		_exit(0);
	}
	sem_init(&child_gate, 0, 0);
	pthread_create(&thread, NULL, child_thread, NULL);
	printf("child.live_with_thread=%d\n", fx_live_records());
	sem_post(&child_gate);
	pthread_join(thread, NULL);
	printf("child.live_end=%d\n", fx_live_records());
	fflush(stdout);
	_exit(0);
}

/* A writer-preferring rwlock taken, given back and taken again (the shim
 * tries it inline, glibc's unlock compares the writer with its own tid),
 * and an error-checking mutex locked and unlocked (glibc's unlock fails
 * with EPERM unless the owner is its own tid). */
static void locks_in_child(void)
{
	pthread_rwlockattr_t attr;
	pthread_rwlock_t rwlock;
	pthread_mutexattr_t mutex_attr;
	pthread_mutex_t mutex;
	int first, second, unlocked;

	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&rwlock, &attr);
	first = pthread_rwlock_trywrlock(&rwlock);
	pthread_rwlock_unlock(&rwlock);
	second = pthread_rwlock_trywrlock(&rwlock);
	printf("child.rwlock_retaken=%d\n", first == 0 && second == 0);
	pthread_mutexattr_init(&mutex_attr);
	pthread_mutexattr_settype(&mutex_attr, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&mutex, &mutex_attr);
	pthread_mutex_lock(&mutex);
	unlocked = pthread_mutex_unlock(&mutex);
	printf("child.mutex_unlocked=%d\n", unlocked == 0);
}

static pid_t fork_by(const char *how)
{
	if (!strcmp(how, "_Fork"))
		return _Fork();
	if (!strcmp(how, "clone"))
		return (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, 0);
	return fork();
}

static int do_fork(const char *how)
{
	int status;
	pid_t child;

	fflush(stdout);
	before_fork_ns = fx_now_ns();
	child = fork_by(how);
	if (child < 0)
		fx_die("fork");
	if (child == 0)
		in_child(strcmp(how, "fork") != 0);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		fx_die("child failed");
	return 0;
}

static void *forks(void *arg)
{
	(void)arg;
	do_fork("fork");
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t waiters[3], forker;
	int nwaiters;

	if (argc != 3)
		fx_die("usage: rt_fork on|off main|thread|_Fork|clone");
	fx_region();
	gathering = !strcmp(argv[1], "on");
	if (gathering)
		fx_enable();
	sem_init(&hold, 0, 0);
	nwaiters = !strcmp(argv[2], "main") || !strcmp(argv[2], "thread") ? 1 : 3;
	for (intptr_t i = 0; i < nwaiters; i++)
		pthread_create(&waiters[i], NULL, waits, (void *)i);
	wait_until_asleep(nwaiters);
	if (!strcmp(argv[2], "thread")) {
		pthread_create(&forker, NULL, forks, NULL);
		pthread_join(forker, NULL);
	} else {
		do_fork(!strcmp(argv[2], "main") ? "fork" : argv[2]);
	}
	printf("parent.live=%d\n", fx_live_records());
	printf("parent.status_pid=%d\n", fx_region()->header.status.pid == getpid());
	printf("parent.enabled=%d\n",
	       fx_region()->header.control.window_end_ns == TDSTAT_WINDOW_OPEN);
	for (int i = 0; i < nwaiters; i++)
		sem_post(&hold);
	for (int i = 0; i < nwaiters; i++)
		pthread_join(waiters[i], NULL);
	return 0;
}
