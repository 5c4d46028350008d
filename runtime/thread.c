/* SPDX-License-Identifier: MIT */
/*
 * Thread lifecycle: creation (the creator claims the record, so the time
 * before the new thread first runs counts as RUNNABLE), adoption of
 * threads the shim did not see created, and the end of tracking on every
 * exit path (a TSD destructor runs on return, pthread_exit and
 * cancellation alike).  Also pthread_setconcurrency, and the wait scope.
 */
#include <stdlib.h>
#include <sys/syscall.h>

#include "shim.h"

/* What the trampoline needs: the user's start routine.  One per record
 * (indexed like the records), so creating a tracked thread allocates
 * nothing; a thread past capacity gets a heap one. */
struct launch {
	void *(*start_routine)(void *);
	void *argument;
};
static struct launch launches[TDSTAT_RECORD_CAPACITY];
static pthread_key_t exit_key;
static bool exit_key_created;

static bool is_record_launch(const struct launch *launch)
{
	return launch >= launches && launch < launches + TDSTAT_RECORD_CAPACITY;
}

pid_t tdshim_fetch_tid(void)
{
	tdshim_self.tid = (pid_t)syscall(SYS_gettid);
	return tdshim_self.tid;
}

static void end_tracking(void)
{
	struct tdshim_thread *self = &tdshim_self;

	if (self->exited)
		return;
	self->exited = true;
	if (self->record) {
		/* Forget the record before giving it back: a signal handler
		 * that waits from here on must not write a slot that another
		 * thread may already own. */
		struct tdstat_record *record = self->record;

		self->record = NULL;
		cmm_barrier();
		tdshim_record_set_state(record, TDSTAT_STATE_FREE);
		tdshim_slot_release(record);
	} else if (self->overflow) {
		uatomic_dec(&tdstat_region.header.status.overflow_live);
		self->overflow = false;
	}
}

static void exit_key_destructor(void *unused)
{
	end_tracking();
}

void tdshim_thread_key_init(void)
{
	/* Without the key (the program used up PTHREAD_KEYS_MAX first) threads
	 * still count, but only process exit ends their tracking; setting an
	 * uncreated key would write another library's slot. */
	exit_key_created = pthread_key_create(&exit_key, exit_key_destructor) == 0;
}

/* Runs in the thread itself, first thing, on the record its creator (or
 * adopt) claimed. */
static void begin_tracking(struct tdstat_record *record)
{
	struct tdshim_thread *self = &tdshim_self;

	self->record = record;
	self->overflow = record == NULL;
	self->exited = false;
	if (record)
		tdshim_record_set_owner(record, tdshim_cached_tid(), false);
	/* Any non-NULL value: it is only there to make the destructor run. */
	if (exit_key_created)
		pthread_setspecific(exit_key, self);
}

static void count_overflow(void)
{
	struct tdstat_status *status = &tdstat_region.header.status;

	uatomic_inc(&status->overflow_live);
	uatomic_inc(&status->overflow_total);
}

static struct tdstat_record *claim_runnable_record(pid_t tid)
{
	struct tdstat_record *record = tdshim_slot_claim();

	if (!record) {
		count_overflow();
		return NULL;
	}
	tdshim_record_set_owner(record, tid, true);
	tdshim_record_set_state(record, TDSTAT_STATE_RUNNABLE);
	return record;
}

void tdshim_thread_adopt(void)
{
	begin_tracking(claim_runnable_record(tdshim_cached_tid()));
}

static void *trampoline(void *argument)
{
	struct launch *launch = argument;
	struct launch copy = *launch;

	if (is_record_launch(launch))
		begin_tracking(&tdstat_region.records[launch - launches]);
	else {
		free(launch);
		begin_tracking(NULL);
	}
	return copy.start_routine(copy.argument);
}

TDSHIM_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
				 void *(*start_routine)(void *), void *argument)
{
	struct tdstat_record *record;
	struct launch *launch;
	int error;

	TDSHIM_REQUIRE_PTHREAD(pthread_create);
	record = claim_runnable_record(0);
	if (record) {
		launch = &launches[record - tdstat_region.records];
	} else {
		launch = malloc(sizeof(*launch));
		if (!launch) {
			uatomic_dec(&tdstat_region.header.status.overflow_live);
			return EAGAIN;
		}
	}
	launch->start_routine = start_routine;
	launch->argument = argument;

	error = tdshim_real_pthread_create(thread, attr, trampoline, launch);
	if (error == 0)
		return 0;
	if (record) {
		tdshim_record_abandon(record);
		tdshim_slot_release(record);
	} else {
		uatomic_dec(&tdstat_region.header.status.overflow_live);
		free(launch);
	}
	return error;
}

int tdshim_cancel_requested;

TDSHIM_EXPORT int pthread_cancel(pthread_t thread)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_cancel);
	/* Full barrier: visible before the target can see the request. */
	uatomic_set(&tdshim_cancel_requested, 1);
	uatomic_set(&tdshim_sem_wait_inline, 0);
	cmm_smp_mb();
	return tdshim_real_pthread_cancel(thread);
}

TDSHIM_EXPORT int pthread_setconcurrency(int level)
{
	int error;

	TDSHIM_REQUIRE_PTHREAD(pthread_setconcurrency);
	error = tdshim_real_pthread_setconcurrency(level);
	if (error == 0)
		CMM_STORE_SHARED(tdstat_region.header.control.r_concurrency, level);
	return error;
}

/* A controller may set the level too (td_ta_setconcurrency): the region is
 * the one place it lives. */
TDSHIM_EXPORT int pthread_getconcurrency(void)
{
	return CMM_LOAD_SHARED(tdstat_region.header.control.r_concurrency);
}

/*
 * Only the outermost scope writes: a signal handler that waits while its
 * thread is already in a wait leaves the record alone, and so does one
 * that arrives halfway through a record write (wait_depth is raised
 * before the write and lowered after it).
 */
/*
 * A wait whose scope never ended (a signal handler siglongjmp'ed out of
 * it) would leave wait_depth raised for good: the thread BLOCKED and its
 * later waits uncounted.  The outermost scope's address tells: a wait
 * nested in a handler runs deeper on the stack (or on the alternate
 * signal stack); a new wait at or above the outermost scope's address
 * means that frame is gone.
 */
static bool nested_in_live_wait(const struct tdshim_thread *self, const struct tdshim_wait_scope *scope)
{
	stack_t alternate;

	if (!self->outer_scope || (uintptr_t)scope < (uintptr_t)self->outer_scope)
		return true;
	return sigaltstack(NULL, &alternate) == 0 && (alternate.ss_flags & SS_ONSTACK);
}

void tdshim_wait_begin(struct tdshim_wait_scope *scope)
{
	struct tdshim_thread *self = &tdshim_self;

	if (caa_unlikely(self->wait_depth != 0)) {
		if (nested_in_live_wait(self, scope)) {
			self->wait_depth++;
			return;
		}
		self->wait_depth = 0;
	}
	/* Depth first: a handler arriving now sees a wait in progress (with
	 * no outer scope yet, it counts as nested) and writes nothing. */
	self->wait_depth = 1;
	cmm_barrier();
	self->outer_scope = scope;
	cmm_barrier();
	if (caa_unlikely(!self->record)) {
		if (self->exited || self->overflow)
			return;
		tdshim_ensure_init();
		tdshim_thread_adopt();
		if (!self->record)
			return;
	}
	tdshim_record_set_state(self->record, TDSTAT_STATE_BLOCKED);
}

void tdshim_wait_end(struct tdshim_wait_scope *scope)
{
	struct tdshim_thread *self = &tdshim_self;

	if (self->wait_depth == 1 && scope == self->outer_scope) {
		if (self->record)
			tdshim_record_set_state(self->record, TDSTAT_STATE_RUNNABLE);
		self->outer_scope = NULL;
		cmm_barrier();
		self->wait_depth = 0;
		return;
	}
	cmm_barrier();
	if (self->wait_depth > 0)
		self->wait_depth--;
}
