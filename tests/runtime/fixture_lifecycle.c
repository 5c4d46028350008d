/* SPDX-License-Identifier: MIT */
/*
 * rt_lifecycle HOW: a thread's tracking from pthread_create to its end.
 *
 * HOW is the way the thread ends: return, exit (pthread_exit), exit_altstack
 * (pthread_exit in a signal handler on the alternate stack), cancel_cond,
 * cancel_join, cancel_sem (cancelled while waiting in that call), detached
 * (returns, nobody joins), create_failure (pthread_create fails),
 * exit_no_unwind (pthread_exit from a frame without unwind tables),
 * thrd_exit_no_unwind (C11's thrd_exit from such a frame),
 * cancel_no_unwind (deferred cancellation in such a frame),
 * cancel_async_no_unwind (asynchronous cancellation in such a frame),
 * tls_dtor_waits (returns, then waits in a thread_local destructor of its
 * own: still tracked there, state_in_destructor and live_in_destructor),
 * BODY_in_constructor[_after_cancel] (a thread that a library's
 * constructor starts and joins during dlopen, which holds the loader's
 * lock, ends as BODY says: exit, return, async, exit_no_unwind, c11, see
 * fixture_lifecycle_module.c; _after_cancel: the program has cancelled a
 * thread before the dlopen: module_joined, live_after).
 * async_in_handler (threads that allocate turn asynchronous cancellation
 * on and off in a signal handler, as glibc allows: all_joined, live_after).
 * exit_in_handler_at_start (a signal sent right after pthread_create,
 * whose handler calls pthread_exit before the shim's trampoline runs:
 * all_joined, exited_before_start, live_after).
 * exit_no_unwind_after_altstack_jump (a signal handler on an alternate
 * stack inside the thread's own siglongjmps out of sem_wait, then the
 * thread calls pthread_exit from a frame without unwind tables: joined,
 * live_after).
 *
 * Prints live_before, live_after_create (just after pthread_create
 * returned), tid_recorded (the thread found its own record with its tid),
 * state_waiting (the thread's record while it waits), joined (the join
 * result was right), live_after (once the thread is gone) and
 * mutex_free (cancel_cond: the cleanup handler released the mutex).
 */
#define _GNU_SOURCE
#include "fixture.h"
#include "fixture_lifecycle.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
sem_t start_gate, hold_gate;
static sem_t destructor_entered, destructor_gate;
static pid_t thread_tid;
static int tid_recorded;
static pthread_t helper;

void publish_self(void)
{
	pid_t tid = fx_gettid();

	__atomic_store_n(&tid_recorded, fx_record_of(tid).tid == tid, __ATOMIC_SEQ_CST);
	__atomic_store_n(&thread_tid, tid, __ATOMIC_SEQ_CST);
}

static void *returns(void *arg)
{
	(void)arg;
	sem_wait(&start_gate);
	publish_self();
	sem_wait(&hold_gate);
	return (void *)42;
}

/* glibc's registration of a thread_local destructor, what C++ calls. */
extern int __cxa_thread_atexit_impl(void (*destructor)(void *), void *object, void *dso_handle);
extern void *__dso_handle;

static void waits_in_destructor(void *arg)
{
	(void)arg;
	sem_post(&destructor_entered);
	sem_wait(&destructor_gate);
}

static void *returns_into_destructor(void *arg)
{
	(void)arg;
	sem_wait(&start_gate);
	if (__cxa_thread_atexit_impl(waits_in_destructor, NULL, &__dso_handle) != 0)
		fx_die("__cxa_thread_atexit_impl failed");
	publish_self();
	sem_wait(&hold_gate);
	return (void *)42;
}

static void *exits(void *arg)
{
	(void)arg;
	sem_wait(&start_gate);
	publish_self();
	sem_wait(&hold_gate);
	pthread_exit((void *)43);
}

static void exit_in_handler(int signal)
{
	(void)signal;
	pthread_exit((void *)43);
}

static void *exits_on_altstack(void *arg)
{
	/* Mapped, not static: AddressSanitizer unmaps the alternate stack a
	 * thread ends with as if it were its own (the ASan build's
	 * runtime.lifecycle died of "unable to unmap" with a .bss stack). */
	const size_t size = 64 * 1024;
	void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	stack_t alternate = { .ss_sp = stack, .ss_size = size };
	struct sigaction action = { .sa_handler = exit_in_handler, .sa_flags = SA_ONSTACK };

	(void)arg;
	if (stack == MAP_FAILED)
		return NULL;
	sigaltstack(&alternate, NULL);
	sigaction(SIGUSR2, &action, NULL);
	sem_wait(&start_gate);
	publish_self();
	sem_wait(&hold_gate);
	raise(SIGUSR2);
	return NULL;
}

static void unlock_mutex(void *arg)
{
	pthread_mutex_unlock(arg);
}

static void *waits_on_cond(void *arg)
{
	(void)arg;
	sem_wait(&start_gate);
	publish_self();
	pthread_mutex_lock(&mutex);
	pthread_cleanup_push(unlock_mutex, &mutex);
	for (;;)
		pthread_cond_wait(&cond, &mutex);
	pthread_cleanup_pop(1);
	return NULL;
}

static void *joins_helper(void *arg)
{
	(void)arg;
	sem_wait(&start_gate);
	publish_self();
	pthread_join(helper, NULL);
	return NULL;
}

static void *waits_on_sem(void *arg)
{
	(void)arg;
	sem_wait(&start_gate);
	publish_self();
	for (;;)
		sem_wait(&hold_gate);
	return NULL;
}

static void *holds(void *arg)
{
	(void)arg;
	sem_wait(&hold_gate);
	return (void *)44;
}

static pid_t wait_for_tid(void)
{
	uint64_t deadline = fx_now_ns() + FX_TIMEOUT_MS * 1000000ull;
	pid_t tid;

	while (!(tid = __atomic_load_n(&thread_tid, __ATOMIC_SEQ_CST))) {
		if (fx_now_ns() > deadline)
			fx_die("thread did not start");
		sched_yield();
	}
	return tid;
}

static int create_failure(int live_before)
{
	pthread_attr_t attr;
	pthread_t thread;
	int error;

	fx_enable();
	uint32_t claimed = __atomic_load_n(&fx_region()->header.status.high_water, __ATOMIC_SEQ_CST);
	pthread_attr_init(&attr);
	/* no address space holds this stack: creation fails */
	pthread_attr_setstacksize(&attr, (size_t)1 << 46);
	error = pthread_create(&thread, &attr, returns, NULL);
	printf("create_error=%s\n", error ? "failed" : "succeeded");
	printf("live_after=%d\n", fx_live_records());
	/* The record the failed creation claimed (the next one), FREE again,
	 * keeps the instant it was RUNNABLE: a reader may have counted it. */
	struct fx_record abandoned = fx_read_record(claimed);
	printf("abandoned_state=%s\n", fx_state_name(abandoned.state));
	printf("abandoned_counted=%d\n", abandoned.acc_tracked_ns > 0 && abandoned.acc_runnable_ns == abandoned.acc_tracked_ns);
	(void)live_before;
	return 0;
}

static void *exits_early(void *arg)
{
	(void)arg;
	pthread_exit(NULL);
}

static void *waits_for_cancel(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static int thread_in_constructor(int live_before, const char *body, bool after_cancel)
{
	pthread_t thread;

	/* glibc loads its unwinder (a dlopen, the loader's lock) at the first
	 * pthread_exit: done here, bare glibc's pthread_exit in the
	 * constructor takes no loader lock. */
	if (pthread_create(&thread, NULL, exits_early, NULL) != 0 || pthread_join(thread, NULL) != 0)
		fx_die("first thread failed");
	/* The program's first cancellation request changes how every thread
	 * started after it ends its tracking. */
	if (after_cancel) {
		void *result = NULL;

		if (pthread_create(&thread, NULL, waits_for_cancel, NULL) != 0 || pthread_cancel(thread) != 0 ||
		    pthread_join(thread, &result) != 0 || result != PTHREAD_CANCELED)
			fx_die("cancelled thread failed");
	}
	if (setenv("LIFECYCLE_MODULE_THREAD", body, 1) != 0)
		fx_die("setenv failed");
	fflush(stdout);
	/* A hang is this test's failure: end it early, with nothing printed. */
	alarm(FX_TIMEOUT_MS / 1000 + 1);
	void *module = dlopen(LIFECYCLE_MODULE, RTLD_NOW);
	if (!module)
		fx_die("dlopen: %s", dlerror());
	alarm(0);
	const int *joined = dlsym(module, "lifecycle_module_joined");
	printf("module_joined=%d\n", joined && *joined);
	printf("live_after=%d\n", fx_live_records() - live_before);
	return 0;
}

static int stop_allocating;

static void toggle_cancel_type(int signal)
{
	int type;

	(void)signal;
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &type);
	pthread_setcanceltype(type, NULL);
}

/* Sizes past malloc's per-thread cache: most of the time in malloc's
 * locked part, where the signal lands. */
static void *allocates(void *arg)
{
	unsigned int size = 3000;

	(void)arg;
	while (!__atomic_load_n(&stop_allocating, __ATOMIC_RELAXED)) {
		/* Through a volatile pointer: the compiler may drop a
		 * calloc that is freed unused. */
		void *volatile block = calloc(1, size);

		free(block);
		size = size % 1024 + 3000;
	}
	return (void *)42;
}

static int async_in_handler(int live_before)
{
	enum { THREADS = 2, ROUNDS = 20 };
	struct sigaction action = { .sa_handler = toggle_cancel_type };
	int joined = 0;

	sigaction(SIGUSR2, &action, NULL);
	fflush(stdout);
	/* A hang is this test's failure: end it early, with nothing printed. */
	alarm(FX_TIMEOUT_MS / 1000 + 1);
	for (int round = 0; round < ROUNDS; round++) {
		pthread_t threads[THREADS];

		__atomic_store_n(&stop_allocating, 0, __ATOMIC_RELAXED);
		for (int i = 0; i < THREADS; i++)
			if (pthread_create(&threads[i], NULL, allocates, NULL) != 0)
				fx_die("pthread_create failed");
		usleep(2000);
		for (int i = 0; i < THREADS; i++)
			pthread_kill(threads[i], SIGUSR2);
		usleep(1000);
		__atomic_store_n(&stop_allocating, 1, __ATOMIC_RELAXED);
		for (int i = 0; i < THREADS; i++) {
			void *result = NULL;

			joined += pthread_join(threads[i], &result) == 0 && result == (void *)42;
		}
	}
	alarm(0);
	printf("all_joined=%d\n", joined == THREADS * ROUNDS);
	printf("live_after=%d\n", fx_live_records() - live_before);
	return 0;
}

static void exit_at_start(int signal)
{
	pthread_exit((void *)44);
}

static int started_bodies;

static void *counts_start(void *unused)
{
	__atomic_add_fetch(&started_bodies, 1, __ATOMIC_SEQ_CST);
	return (void *)42;
}

/* A signal sent right after pthread_create lands in glibc's start_thread,
 * which unblocks signals before it calls the start routine: the handler's
 * pthread_exit ends the thread before the shim's trampoline ran. */
static int exit_in_handler_at_start(int live_before)
{
	enum { THREADS = 50 };
	struct sigaction action = { .sa_handler = exit_at_start };
	int joined = 0, exited_in_handler = 0;

	sigaction(SIGUSR1, &action, NULL);
	for (int i = 0; i < THREADS; i++) {
		pthread_t thread;
		void *result = NULL;

		if (pthread_create(&thread, NULL, counts_start, NULL) != 0)
			fx_die("pthread_create failed");
		pthread_kill(thread, SIGUSR1);
		joined += pthread_join(thread, &result) == 0;
		exited_in_handler += result == (void *)44;
	}
	printf("all_joined=%d\n", joined == THREADS);
	printf("exited_before_start=%d\n",
	       exited_in_handler > 0 && __atomic_load_n(&started_bodies, __ATOMIC_SEQ_CST) < THREADS);
	printf("live_after=%d\n", fx_live_records() - live_before);
	return 0;
}

static sigjmp_buf jump_target;
static sem_t never_posted;
static pid_t jumping_tid;

static void jump_out(int signal)
{
	siglongjmp(jump_target, 1);
}

/* The alternate signal stack is a local array, inside the thread's own
 * stack above sem_wait's frames: glibc's siglongjmp from there takes
 * sem_wait's cleanup buffer for one already gone and empties the thread's
 * list of them, thread_entry's buffer too. */
static void *jumps_then_exits_without_unwind_tables(void *unused)
{
	char alternate[65536];
	stack_t stack = { .ss_sp = alternate, .ss_size = sizeof(alternate) };

	sigaltstack(&stack, NULL);
	__atomic_store_n(&jumping_tid, fx_gettid(), __ATOMIC_SEQ_CST);
	if (sigsetjmp(jump_target, 1) == 0)
		sem_wait(&never_posted);
	stack.ss_flags = SS_DISABLE;
	sigaltstack(&stack, NULL);
	lifecycle_exit_now_without_unwind_tables();
	return NULL;
}

static int exit_no_unwind_after_altstack_jump(int live_before)
{
	struct sigaction action = { .sa_handler = jump_out, .sa_flags = SA_ONSTACK };
	pthread_t thread;
	void *result = NULL;
	pid_t tid;

	sigaction(SIGUSR1, &action, NULL);
	sem_init(&never_posted, 0, 0);
	if (pthread_create(&thread, NULL, jumps_then_exits_without_unwind_tables, NULL) != 0)
		fx_die("pthread_create failed");
	while (!(tid = __atomic_load_n(&jumping_tid, __ATOMIC_SEQ_CST)))
		sched_yield();
	if (!fx_wait_state(tid, TDSTAT_STATE_BLOCKED))
		fx_die("the thread never blocked in sem_wait");
	pthread_kill(thread, SIGUSR1);
	printf("joined=%d\n", pthread_join(thread, &result) == 0 && result == (void *)45);
	printf("live_after=%d\n", fx_live_records() - live_before);
	return 0;
}

int main(int argc, char **argv)
{
	void *(*body)(void *) = NULL;
	const char *how = argc > 1 ? argv[1] : "";
	bool detached = !strcmp(how, "detached");
	void *expected = NULL, *result = NULL;
	pthread_attr_t attr;
	pthread_t thread;
	int live_before;
	pid_t tid;

	fx_region();
	sem_init(&start_gate, 0, 0);
	sem_init(&hold_gate, 0, 0);
	sem_init(&destructor_entered, 0, 0);
	sem_init(&destructor_gate, 0, 0);
	live_before = fx_live_records();
	printf("live_before=%d\n", live_before);
	if (!strcmp(how, "create_failure"))
		return create_failure(live_before);
	const char *in_constructor = strstr(how, "_in_constructor");
	if (in_constructor) {
		char module_body[32];
		size_t length = (size_t)(in_constructor - how);

		if (length >= sizeof(module_body))
			fx_die("unknown way to end: %s", how);
		memcpy(module_body, how, length);
		module_body[length] = '\0';
		return thread_in_constructor(live_before, module_body,
					     !strcmp(in_constructor, "_in_constructor_after_cancel"));
	}
	if (!strcmp(how, "async_in_handler"))
		return async_in_handler(live_before);
	if (!strcmp(how, "exit_in_handler_at_start"))
		return exit_in_handler_at_start(live_before);
	if (!strcmp(how, "exit_no_unwind_after_altstack_jump"))
		return exit_no_unwind_after_altstack_jump(live_before);
	if (!strcmp(how, "return") || detached) {
		body = returns;
		expected = (void *)42;
	} else if (!strcmp(how, "exit")) {
		body = exits;
		expected = (void *)43;
	} else if (!strcmp(how, "exit_altstack")) {
		body = exits_on_altstack;
		expected = (void *)43;
	} else if (!strcmp(how, "cancel_cond")) {
		body = waits_on_cond;
	} else if (!strcmp(how, "cancel_join")) {
		body = joins_helper;
		pthread_create(&helper, NULL, holds, NULL);
		live_before++;
	} else if (!strcmp(how, "cancel_sem")) {
		body = waits_on_sem;
	} else if (!strcmp(how, "exit_no_unwind")) {
		body = lifecycle_exits_without_unwind_tables;
		expected = (void *)43;
	} else if (!strcmp(how, "thrd_exit_no_unwind")) {
		body = lifecycle_thrd_exits_without_unwind_tables;
		expected = (void *)43;
	} else if (!strcmp(how, "cancel_no_unwind")) {
		body = lifecycle_cancel_without_unwind_tables;
		expected = PTHREAD_CANCELED;
	} else if (!strcmp(how, "cancel_async_no_unwind")) {
		body = lifecycle_async_cancel_without_unwind_tables;
		expected = PTHREAD_CANCELED;
	} else if (!strcmp(how, "tls_dtor_waits")) {
		body = returns_into_destructor;
		expected = (void *)42;
	} else {
		fx_die("unknown way to end: %s", how);
	}
	if (body == waits_on_cond || body == joins_helper || body == waits_on_sem)
		expected = PTHREAD_CANCELED;

	pthread_attr_init(&attr);
	if (detached)
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_create(&thread, &attr, body, NULL);
	/* the thread waits for start_gate: it has not done anything yet */
	printf("live_after_create=%d\n", fx_live_records() - live_before);
	sem_post(&start_gate);
	tid = wait_for_tid();
	printf("tid_recorded=%d\n", __atomic_load_n(&tid_recorded, __ATOMIC_SEQ_CST));
	printf("state_waiting=%s\n",
	       fx_wait_state(tid, TDSTAT_STATE_BLOCKED) ? "BLOCKED" : "never-BLOCKED");
	printf("live_during=%d\n", fx_live_records() - live_before);

	if (expected == PTHREAD_CANCELED)
		pthread_cancel(thread);
	else
		sem_post(&hold_gate);
	if (body == returns_into_destructor) {
		/* Past its start routine, inside its own thread_local
		 * destructor, waiting: still tracked, and BLOCKED. */
		sem_wait(&destructor_entered);
		printf("state_in_destructor=%s\n",
		       fx_wait_state(tid, TDSTAT_STATE_BLOCKED) ? "BLOCKED" : "never-BLOCKED");
		printf("live_in_destructor=%d\n", fx_live_records() - live_before);
		sem_post(&destructor_gate);
	}
	if (detached) {
		printf("joined=1\n");
		printf("live_after=%d\n", fx_wait_live(live_before) ? 0 : fx_live_records() - live_before);
	} else {
		int error = pthread_join(thread, &result);

		printf("joined=%d\n", error == 0 && result == expected);
		/* after a join the thread runs no more code: no waiting for it */
		printf("live_after=%d\n", fx_live_records() - live_before);
	}
	printf("thread_record_gone=%d\n", fx_find_record(tid) < 0);
	if (body == waits_on_cond) {
		int error = pthread_mutex_trylock(&mutex);

		printf("mutex_free=%d\n", error == 0);
	}
	if (body == joins_helper) {
		sem_post(&hold_gate);
		pthread_join(helper, &result);
		printf("helper_joined=%d\n", result == (void *)44);
		printf("live_final=%d\n", fx_live_records() - (live_before - 1));
	}
	return 0;
}
