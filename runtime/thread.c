/* SPDX-License-Identifier: MIT */
/*
 * Thread lifecycle: creation (the creator claims the record, so the time
 * before the new thread first runs counts as RUNNABLE), adoption of
 * threads the shim did not see created, and the end of tracking on every
 * exit path (the trampoline's cleanup on return and unwinding, a cleanup
 * buffer of glibc's where the unwinding stops short of the trampoline, a
 * thread_local destructor of the shim's after the program's own and in a
 * thread the shim did not start; the main thread ends at exit or in
 * pthread_exit).
 * Also pthread_setconcurrency, and the wait scope.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <threads.h>
#include <unwind.h>

#include "shim.h"
#include "profile.h"
#include "counter_clock.h"

/* What the trampoline needs: the user's start routine.  One per record
 * (indexed like the records), so creating a tracked thread allocates
 * nothing; a thread past capacity gets a heap one. */
struct launch {
	void *(*start_routine)(void *);
	/* Instead, a C11 one (thrd_create), which returns an int. */
	int (*c11_start_routine)(void *);
	void *argument;
	/* The creator's timer slack, which the kernel gives the new thread. */
	bool timer_slack_own;
	uint64_t timer_slack_ns;
	/* The new thread's scheduling class as the kernel starts it: its
	 * creator's, or the attributes' (see launch_sched). */
	bool sched_own;
	bool sched_rt;
	int sched_explicit; /* the attributes' class: 0 none, else 1 + real-time */
	/* The thread started with this launch, once pthread_create returned
	 * it (0 until then): whose record a pthread_t's launch names. */
	pthread_t thread;
};
static struct launch launches[TDSTAT_RECORD_CAPACITY];

/* The handle of this object, which keeps it loaded while a thread_local
 * destructor of ours is pending. */
extern void *__dso_handle;
/* Inherited across fork with the rest of the thread's memory, like the
 * registration itself. */
static __thread bool exit_hook_registered TDSHIM_TLS;
/* Set while the trampoline's frame stands at the call of the start
 * routine, the one call its cleanup covers (see before_thread_exit), and
 * thread_entry's cleanup buffer is on glibc's list. */
static __thread bool in_start_routine TDSHIM_TLS;
/* Set once the trampoline has taken its launch's record: from then on
 * the descriptor's argument no longer says anything of this thread's (the
 * slot may start another thread), see abandon_unstarted_launch. */
static __thread bool launch_taken TDSHIM_TLS;
/* thread_entry's cleanup buffer while it stands (see entry_buffer_lost). */
static __thread struct _pthread_cleanup_buffer *entry_buffer TDSHIM_TLS;

static bool is_record_launch(const struct launch *launch)
{
	return launch >= launches && launch < launches + TDSTAT_RECORD_CAPACITY;
}

void tdshim_thread_hide_from_race_detectors(void)
{
	tdshim_hide_from_race_detectors(launches, sizeof(launches));
}

/*
 * Where glibc keeps a thread's tid in its descriptor, as glibc itself
 * tells debuggers: _thread_db_pthread_tid (bits, count, offset), the
 * description libthread_db reads through ps_pglobal_lookup.  The kernel
 * stores the tid there before the thread first runs (CLONE_PARENT_SETTID;
 * a fork child's with CLONE_CHILD_SETTID), so a new thread learns its tid
 * without a system call: one less per pthread_create+join (gettid costs
 * as much as getpid, ~150 ns on this kind of virtual machine).  Used only
 * if the description is the expected one and agrees with gettid() for
 * the initialising thread; else, and for a descriptor that says 0, the
 * system call.  -1 until then.
 *
 * The descriptor is found as glibc's own THREAD_SELF finds it, at the
 * thread pointer (x86-64: the TCB comes first in it, and its `self` word,
 * %fs:0x10, points to it), not by calling pthread_self: a program may
 * define a pthread_self of its own (exported, it binds the shim's calls
 * too), and so may a library preloaded after the shim, that returns no
 * descriptor at all, a thread number say (runtime.misc's lifecycle
 * tests: SIGSEGV before main).  Elsewhere, the system call.
 */
static int32_t pthread_tid_offset = -1;
/* Where glibc keeps the start routine in its descriptor, the argument
 * right after it (struct pthread's start_routine and arg, the same since
 * NPTL's start): _thread_db_pthread_start_routine.  -1 where unknown. */
static int32_t pthread_start_routine_offset = -1;

static const char *thread_descriptor(void)
{
#if defined(__x86_64__)
	const char *self;

	__asm__("mov %%fs:0x10, %0" : "=r"(self));
	return self;
#else
	return NULL;
#endif
}

/* The caller's pthread_t, glibc's descriptor (what its pthread_self
 * returns), without calling pthread_self: a program or library may
 * define its own (tests/runtime fixture_self), which the shim must not
 * call.  0 where unknown. */
static pthread_t own_handle(void)
{
	return (pthread_t)(uintptr_t)thread_descriptor();
}

void tdshim_probe_thread_tid(void)
{
	const uint32_t *field = dlsym(RTLD_NEXT, "_thread_db_pthread_tid");
	const uint32_t *size = dlsym(RTLD_NEXT, "_thread_db_sizeof_pthread");
	const uint32_t *start = dlsym(RTLD_NEXT, "_thread_db_pthread_start_routine");
	const char *self = thread_descriptor();

	if (self && start && start[0] == 8 * sizeof(void *) && start[1] == 1 && start[2] % sizeof(void *) == 0 &&
	    start[2] <= 65536 && (!size || start[2] + 2 * sizeof(void *) <= *size))
		CMM_STORE_SHARED(pthread_start_routine_offset, (int32_t)start[2]);
	if (!self || !field || field[0] != 8 * sizeof(pid_t) || field[1] != 1 || field[2] % sizeof(pid_t) != 0 ||
	    field[2] > 65536 || (size && field[2] + sizeof(pid_t) > *size))
		return;
	if (*(const volatile pid_t *)(self + field[2]) != tdshim_kernel_tid())
		return;
	CMM_STORE_SHARED(pthread_tid_offset, (int32_t)field[2]);
}

/*
 * The caller's tid from the kernel, through libc's syscall(): not
 * gettid(), which a program may define itself (as code from before glibc
 * 2.30 does): helper-73's took a pthread mutex, and the shim's start hung
 * in it (its lock asks the tid); and the shim makes no system call from
 * its own text (shim.h, tdshim_futex6).  errno as it was.
 */
pid_t tdshim_kernel_tid(void)
{
	long (*real)(long, ...) = tdshim_real_syscall;
	int saved = errno;
	long tid = real ? real(SYS_gettid) : -1;

	errno = saved;
	return tid > 0 ? (pid_t)tid : 0;
}

/* The tid glibc's descriptor holds for the caller, 0 where unknown. */
pid_t tdshim_descriptor_tid(void)
{
	int32_t offset = CMM_LOAD_SHARED(pthread_tid_offset);
	const char *self = offset >= 0 ? thread_descriptor() : NULL;

	return self ? *(const volatile pid_t *)(self + offset) : 0;
}

pid_t tdshim_fetch_tid(void)
{
	pid_t tid = tdshim_descriptor_tid();

	if (tid <= 0)
		tid = tdshim_kernel_tid();
	tdshim_self.lock_tid = tid;
	tdshim_self.tid = tid;
	return tid;
}

static void end_tracking(void)
{
	struct tdshim_thread *self = &tdshim_self;

	if (self->exited)
		return;
	self->exited = true;
	/* No wake-up stamp for a joiner here: destructors that run after
	 * this one may keep the thread for long before the kernel wakes it. */
	if (self->record) {
		/* Forget the record before giving it back: a signal handler
		 * that waits from here on must not write a slot that another
		 * thread may already own. */
		struct tdstat_record *record = self->record;

		self->record = NULL;
		cmm_barrier();
		/* A write this thread abandoned (asynchronous cancellation inside
		 * one) never resumes: the latch lets this one start over. */
		self->writing = 0;
		tdshim_record_set_state(record, TDSTAT_STATE_FREE);
		tdshim_slot_release(record);
	} else if (self->overflow) {
		uatomic_dec(&tdstat_region.header.status.overflow_live);
		self->overflow = false;
	}
}

static void end_tracking_at_thread_exit(void *unused)
{
	end_tracking();
}

/* A thread ending through the exit system call itself (syscall(SYS_exit)),
 * which skips every destructor. */
void tdshim_thread_end(void)
{
	end_tracking();
}

/*
 * Ends tracking when the calling thread ends, whatever way it leaves,
 * without taking one of the program's PTHREAD_KEYS_MAX thread keys: glibc
 * runs thread_local destructors (__call_tls_dtors) in start_thread after
 * the start routine returns, after pthread_exit and after cancellation
 * (after its longjmp, whatever the unwinding did), and in exit() for the
 * thread that calls it; ours, registered before the program's, runs after
 * them.  Not for the main thread: it would end at the start of exit(),
 * before the program's exit handlers have run, and a main thread's
 * pthread_exit runs no such destructor (see pthread_exit below).
 *
 * The registration allocates (glibc's calloc): in a thread that never
 * allocates, a malloc cache set up and flushed, about 1,900 instructions,
 * more than half of what the shim adds to a create+join.  And it takes
 * the dynamic loader's lock (against a racing dlclose), which dlopen
 * holds while a library's constructor runs: a thread that the constructor
 * starts and joins would wait for it for ever, where bare glibc takes
 * none.  So only where the program's own call takes that lock anyway (a
 * thread_local destructor of its own, see __cxa_thread_atexit_impl), and
 * in a thread the trampoline did not start (adopted; or past its start
 * routine, in a thread_local destructor), whose end nothing else sees.
 * Should it fail, only process exit ends the thread's tracking.
 */
/* The main thread's tid is the process id. */
static bool is_main_thread(void)
{
	return tdshim_cached_tid() == tdshim_process_id();
}

static void register_exit_hook(bool main_thread_possible)
{
	if (exit_hook_registered || !tdshim_real___cxa_thread_atexit_impl)
		return;
	if (main_thread_possible && is_main_thread())
		return;
	exit_hook_registered =
		tdshim_real___cxa_thread_atexit_impl(end_tracking_at_thread_exit, NULL, &__dso_handle) == 0;
}

/* The end of the trampoline's frame, on return or unwinding. */
static void end_tracking_unless_hooked(bool *unused)
{
	if (!exit_hook_registered)
		end_tracking();
}

/* thread_entry's cleanup buffer, which glibc runs as the unwinding leaves
 * its frame or ends short of it. */
static void end_tracking_at_unwinding(void *unused)
{
	if (!exit_hook_registered)
		end_tracking();
}

/*
 * Scheduling policy, for the timer slack (timer_slack below).  The kernel
 * gives a real-time or deadline thread's timers no slack, and since
 * Linux 6.12 (and the stable releases of March 2025 on) says so in the
 * thread's slack itself: a policy change into real time sets it to 0, a
 * change out of it sets a 0 back to the thread's default, and
 * PR_SET_TIMERSLACK is ignored meanwhile (verified on this machine's
 * 6.18; a thread created by a real-time one starts with 0 as both its
 * slack and its default).  Older kernels only skip the slack while the
 * policy is real time; the shim follows the newer rules, which agree
 * with the older ones while the thread is real time.
 *
 * Another thread's policy may be changed too (pthread_setschedparam,
 * sched_setscheduler of its tid), also before it first runs: the change
 * goes into the target's word, one per record, tagged with the record's
 * generation, and the target applies it before it next takes or dates a
 * slack (sched_sync); nothing of another thread's TLS is written.  The
 * word counts the changes into real time, so that a target that missed
 * a round trip (real time and back before it looked) still takes the
 * slack back to its default.  A thread past capacity (no record) sees
 * only its own changes.
 */
/* A word: the record's generation (high half), the count of moves into
 * real time (29 bits: five wrapped after 32 round trips between two
 * looks, helper-67), the class. */
#define SCHED_WORD_VALID UINT64_C(1)
#define SCHED_WORD_RT UINT64_C(2)
#define SCHED_WORD_RESET UINT64_C(4)
#define SCHED_WORD_ENTRIES_SHIFT 3
#define SCHED_WORD_ENTRIES_MASK UINT64_C(0x1fffffff)
#define SCHED_WORD_GENERATION_SHIFT 32
static uint64_t sched_words[TDSTAT_RECORD_CAPACITY];
/* The process's class at start, for threads the shim did not start. */
static bool process_rt, process_reset;

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

static void *thread_entry(void *argument);

static bool policy_is_rt(int policy)
{
	policy &= ~SCHED_RESET_ON_FORK;
	return policy == SCHED_FIFO || policy == SCHED_RR || policy == SCHED_DEADLINE;
}

static bool thread_is_rt(const struct tdshim_thread *self)
{
	return self->sched_own ? self->sched_rt : CMM_LOAD_SHARED(process_rt);
}

static bool thread_resets_on_fork(const struct tdshim_thread *self)
{
	return self->sched_own ? self->sched_reset : CMM_LOAD_SHARED(process_reset);
}

/* The kernel's rules for the slack at a change of class (see above). */
static void sched_apply(struct tdshim_thread *self, bool rt, bool reset)
{
	bool was_rt = thread_is_rt(self);
	uint64_t slack = self->timer_slack_own ? self->timer_slack_ns : tdshim_timer_slack_ns;

	if (rt && !was_rt) {
		self->timer_slack_own = true;
		self->timer_slack_ns = 0;
	} else if (!rt && was_rt && slack == 0) {
		self->timer_slack_own = self->default_slack_own;
		self->timer_slack_ns = self->default_slack_ns;
	}
	self->sched_own = true;
	self->sched_rt = rt;
	self->sched_reset = reset;
}

static uint32_t record_generation(const struct tdstat_record *record)
{
	return CMM_LOAD_SHARED(record->copy[CMM_LOAD_SHARED(record->seq) & 1].generation);
}

static bool word_is_of(uint64_t word, uint32_t generation)
{
	return (word & SCHED_WORD_VALID) && word >> SCHED_WORD_GENERATION_SHIFT == generation;
}

static uint64_t word_entries(uint64_t word)
{
	return word >> SCHED_WORD_ENTRIES_SHIFT & SCHED_WORD_ENTRIES_MASK;
}

/* A word: the class, and the count of moves into real time, one more
 * when the class is real time. */
static uint64_t sched_word(uint32_t generation, uint64_t entries, bool rt, bool reset)
{
	if (rt)
		entries = (entries + 1) & SCHED_WORD_ENTRIES_MASK;
	return (uint64_t)generation << SCHED_WORD_GENERATION_SHIFT | entries << SCHED_WORD_ENTRIES_SHIFT | SCHED_WORD_VALID |
	       (rt ? SCHED_WORD_RT : 0) | (reset ? SCHED_WORD_RESET : 0);
}

/* Record `index` (of `generation`) in class (rt, reset): the word
 * replaced, its count of entries into real time carried on. */
static uint64_t sched_write(uint32_t index, uint32_t generation, bool rt, bool reset)
{
	uint64_t old = CMM_LOAD_SHARED(sched_words[index]);

	for (;;) {
		uint64_t word = sched_word(generation, word_is_of(old, generation) ? word_entries(old) : 0, rt, reset);
		uint64_t seen = uatomic_cmpxchg(&sched_words[index], old, word);
		if (seen == old)
			return word;
		old = seen;
	}
}

/* A word another thread wrote to this one's record, applied. */
static void sched_take(struct tdshim_thread *self, uint64_t word, uint32_t generation)
{
	uint64_t entries = word_is_of(self->sched_seen, generation) ? word_entries(self->sched_seen) : 0;
	bool rt = word & SCHED_WORD_RT, reset = word & SCHED_WORD_RESET;

	self->sched_seen = word;
	/* Into real time and out again since the last look. */
	if (word_entries(word) != entries && !rt)
		sched_apply(self, true, reset);
	sched_apply(self, rt, reset);
}

static void sched_sync(struct tdshim_thread *self)
{
	const struct tdstat_record *record = self->record;

	if (!record)
		return;
	uint64_t word = CMM_LOAD_SHARED(sched_words[record - tdstat_region.records]);
	if (caa_likely(word == self->sched_seen))
		return;
	uint32_t generation = record_generation(record);
	if (word_is_of(word, generation))
		sched_take(self, word, generation);
}

/* This thread's own class into its word.  A change another thread wrote
 * meanwhile (its compare-and-swap fails) is applied first, never written
 * over: a pthread_setschedparam landing as the thread began was lost
 * once in 120,000 creations (helper-66). */
static void sched_publish(struct tdshim_thread *self)
{
	const struct tdstat_record *record = self->record;

	if (!record)
		return;
	uint32_t index = (uint32_t)(record - tdstat_region.records), generation = record_generation(record);
	uint64_t old = CMM_LOAD_SHARED(sched_words[index]);

	for (;;) {
		if (word_is_of(old, generation) && old != self->sched_seen)
			sched_take(self, old, generation);
		uint64_t word = sched_word(generation, word_is_of(old, generation) ? word_entries(old) : 0,
					   thread_is_rt(self), thread_resets_on_fork(self));
		uint64_t seen = uatomic_cmpxchg(&sched_words[index], old, word);
		if (seen == old) {
			self->sched_seen = word;
			return;
		}
		old = seen;
	}
}

/* The record of a thread the shim started, from its descriptor: the
 * launch glibc keeps as its start routine's argument. */
static const struct tdstat_record *launched_record(pthread_t thread)
{
	int32_t offset = CMM_LOAD_SHARED(pthread_start_routine_offset);

	if (offset < 0 || !thread)
		return NULL;
	void *const *fields = (void *const *)((const char *)thread + offset);
	if (fields[0] != (void *)thread_entry || !is_record_launch(fields[1]))
		return NULL;
	const struct launch *launch = fields[1];
	/* The slot of a thread that ended may already serve another, whose
	 * launch names that one (helper-66: a policy change of a thread in
	 * its key destructors, after its tracking ended, went to the thread
	 * created next in its slot). */
	if (!pthread_equal(CMM_LOAD_SHARED(launch->thread), thread))
		return NULL;
	return &tdstat_region.records[launch - launches];
}

/*
 * Whether the caller is the thread whose TLS it sees: not a vfork child,
 * which runs on its parent's memory, TLS included, until it execs or
 * exits (helper-66: a vfork child's sched_setscheduler made its parent
 * real time in the shim's eyes).  A system call, on these rare calls
 * only; not in a sandbox (shim.h), where the caller is taken to be the
 * thread.
 */
bool tdshim_caller_owns_tls(void)
{
	pid_t tid = tdshim_cached_tid();

	return tdshim_in_sandbox() || tid <= 0 || tdshim_kernel_tid() == tid;
}

void tdshim_sched_changed(pid_t tid, int policy)
{
	struct tdshim_thread *self = &tdshim_self;
	bool rt = policy_is_rt(policy), reset = (policy & SCHED_RESET_ON_FORK) != 0;

	/* 0 is the caller, which in a vfork child is not the TLS's thread;
	 * the TLS's own tid is that thread, whoever calls (a vfork child's
	 * pthread_setschedparam(pthread_self()) changes its parent's thread,
	 * by glibc's descriptor: helper-67). */
	if ((tid == 0 && tdshim_caller_owns_tls()) || (tid != 0 && tid == self->tid)) {
		sched_sync(self);
		sched_apply(self, rt, reset);
		sched_publish(self);
		return;
	}
	if (tid == 0)
		return;
	/* Another thread of this process, by its record.  One that ends
	 * meanwhile leaves a word of its generation, which the slot's next
	 * owner ignores. */
	uint32_t used = CMM_LOAD_SHARED(tdstat_region.header.status.high_water);
	if (used > TDSTAT_RECORD_CAPACITY)
		used = TDSTAT_RECORD_CAPACITY;
	for (uint32_t i = 0; i < used; i++) {
		const struct tdstat_record *record = &tdstat_region.records[i];
		const struct tdstat_record_copy *copy = &record->copy[CMM_LOAD_SHARED(record->seq) & 1];

		if (CMM_LOAD_SHARED(copy->tid) == tid && CMM_LOAD_SHARED(copy->state) != TDSTAT_STATE_FREE) {
			sched_write(i, record_generation(record), rt, reset);
			return;
		}
	}
}

void tdshim_sched_thread_changed(pthread_t thread, int policy)
{
	if (thread && pthread_equal(thread, own_handle())) {
		tdshim_sched_changed(tdshim_cached_tid(), policy);
		return;
	}
	/* One the shim started, also before it first ran (its record's tid
	 * is then still 0). */
	const struct tdstat_record *record = launched_record(thread);
	if (record) {
		sched_write((uint32_t)(record - tdstat_region.records), record_generation(record), policy_is_rt(policy),
			    (policy & SCHED_RESET_ON_FORK) != 0);
		return;
	}
	int32_t offset = CMM_LOAD_SHARED(pthread_tid_offset);
	if (offset < 0 || !thread)
		return;
	pid_t tid = *(const volatile pid_t *)((const char *)thread + offset);
	if (tid > 0)
		tdshim_sched_changed(tid, policy);
}

/* A thread the shim did not start (main, glibc's own helper threads, a
 * raw clone's) takes its class from the kernel as it is adopted: its
 * creator is unknown, and the process's class at start may be long gone
 * (helper-67: a SIGEV_THREAD timer's thread, in a process started real
 * time whose main had left it, was taken for real time and its own
 * PR_SET_TIMERSLACK ignored).  One system call, not in a sandbox. */
static void sched_adopted(void)
{
	struct tdshim_thread *self = &tdshim_self;

	if (self->sched_own || tdshim_in_sandbox())
		return;
	int saved_errno = errno;
	int policy = sched_getscheduler(0);

	errno = saved_errno;
	if (policy < 0)
		return;
	self->sched_own = true;
	self->sched_rt = policy_is_rt(policy);
	self->sched_reset = (policy & SCHED_RESET_ON_FORK) != 0;
}

/* The slack of process `pid` (/proc/PID/timerslack_ns), 0 when unknown. */
static uint64_t process_slack(pid_t pid)
{
	char path[64], text[32];
	int saved_errno = errno;

	snprintf(path, sizeof(path), "/proc/%d/timerslack_ns", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);

	if (fd >= 0)
		close(fd);
	errno = saved_errno;
	if (got <= 0)
		return 0;
	text[got] = 0;
	return strtoull(text, NULL, 10);
}

void tdshim_sched_init(void)
{
	int saved_errno = errno;
	int policy = sched_getscheduler(0);

	errno = saved_errno;
	if (policy < 0)
		return;
	CMM_STORE_SHARED(process_rt, policy_is_rt(policy));
	CMM_STORE_SHARED(process_reset, (policy & SCHED_RESET_ON_FORK) != 0);
	/* Started in real time (chrt): the slack read at start is 0, and
	 * the default a move out of real time gives back is the one the
	 * thread was created with, its parent's slack then: the parent's
	 * now (a shell's, which chrt, exec'ing, was forked from; helper-67:
	 * systemd's TimerSlackNSec=), where readable, else the kernel's own
	 * (50 us). */
	if (policy_is_rt(policy) && tdshim_timer_slack_ns == 0) {
		uint64_t parent = process_slack(getppid());

		tdshim_self.default_slack_own = true;
		tdshim_self.default_slack_ns = parent ? parent : TDSHIM_KERNEL_TIMER_SLACK_NS;
	}
}

/* A fork child's only thread, before the slots start again: what others
 * wrote to it applied, the words of the parent's threads gone (the
 * child's claims start the generations again, and would take them for
 * their own), and SCHED_RESET_ON_FORK took it out of real time (its
 * slack stays as it was). */
void tdshim_sched_after_fork(void)
{
	struct tdshim_thread *self = &tdshim_self;
	uint32_t used = CMM_LOAD_SHARED(tdstat_region.header.status.high_water);

	sched_sync(self);
	/* The kernel gives a child the slack its parent had at the fork as
	 * its default (helper-66: a fork child's round trip through real
	 * time came back to its parent's default instead). */
	self->default_slack_own = self->timer_slack_own;
	self->default_slack_ns = self->timer_slack_ns;
	memset(sched_words, 0, (used < TDSTAT_RECORD_CAPACITY ? used : TDSTAT_RECORD_CAPACITY) * sizeof(sched_words[0]));
	self->sched_seen = 0;
	if (thread_resets_on_fork(self)) {
		self->sched_own = true;
		self->sched_rt = false;
		self->sched_reset = false;
	}
}

/*
 * What a new thread starts with: its creator's slack (as its own and as
 * its default) and its creator's class, unless the creator resets on
 * fork (then not real time), or the attributes say otherwise
 * (PTHREAD_EXPLICIT_SCHED: glibc then sets the new thread's policy, a
 * change like any other; an attribute left at SCHED_OTHER with a
 * priority is glibc's "the creator's policy", which must be real time
 * for the creation to succeed).
 */
static void launch_sched(struct launch *launch, const pthread_attr_t *attr)
{
	struct tdshim_thread *self = &tdshim_self;
	int inherit = PTHREAD_INHERIT_SCHED, policy = SCHED_OTHER;
	struct sched_param param = { 0 };

	sched_sync(self);
	launch->timer_slack_own = self->timer_slack_own;
	launch->timer_slack_ns = self->timer_slack_ns;
	/* The class is the thread's own from its start: one that a creator
	 * resetting on fork starts out of real time must not fall back to
	 * the process's (helper-66: under chrt -R, every thread). */
	launch->sched_own = true;
	launch->sched_rt = thread_is_rt(self) && !thread_resets_on_fork(self);
	launch->thread = 0;
	launch->sched_explicit = 0;
	if (!attr || pthread_attr_getinheritsched(attr, &inherit) != 0 || inherit != PTHREAD_EXPLICIT_SCHED ||
	    pthread_attr_getschedpolicy(attr, &policy) != 0 || pthread_attr_getschedparam(attr, &param) != 0)
		return;
	bool rt = policy_is_rt(policy) || (policy == SCHED_OTHER && param.sched_priority > 0 && thread_is_rt(self));
	launch->sched_explicit = 1 + rt;
}

/* Runs in the thread itself, first thing, on the record its creator (or
 * adopt) claimed. */
static void begin_tracking(struct tdstat_record *record)
{
	struct tdshim_thread *self = &tdshim_self;
	struct tdstat_record *adopted = self->record;

	/* A handler arriving from here on writes nothing (and adopts
	 * nothing): this write of the record is the only one. */
	self->writing_frame = __builtin_frame_address(0);
	self->writing = 1;
	cmm_barrier();
	/* A signal handler that waited before this (a signal delivered at
	 * the thread's very start, in glibc's start_thread) adopted the
	 * thread into a record of its own: give that back, the creator's
	 * claim stands. */
	if (adopted && adopted != record) {
		self->record = NULL;
		cmm_barrier();
		tdshim_record_set_state(adopted, TDSTAT_STATE_FREE);
		tdshim_slot_release(adopted);
	} else if (self->overflow && record) {
		uatomic_dec(&tdstat_region.header.status.overflow_live);
	}
	self->record = record;
	self->overflow = record == NULL;
	self->exited = false;
	if (record)
		tdshim_record_set_owner(record, tdshim_cached_tid(), false);
	/* A change made by another thread before this one ran (to the
	 * record its creator claimed) applies first. */
	self->sched_seen = 0;
	sched_sync(self);
	sched_publish(self);
	cmm_barrier();
	self->writing = 0;
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
	/* Never tracked here: later waits skip adoption at once. */
	if (caa_unlikely(tdshim_standing_down)) {
		tdshim_self.exited = true;
		return;
	}
	sched_adopted();
	begin_tracking(claim_runnable_record(tdshim_cached_tid()));
	register_exit_hook(true);
}

/*
 * A thread the shim started ends its tracking as it leaves the start
 * routine: on return, and on the unwinding of pthread_exit or a deferred
 * cancellation (the shim is built with -fexceptions, so the cleanup runs
 * as the unwinding passes this frame).  Where that is not enough, the
 * cleanup buffer of thread_entry below, or the exit hook
 * (register_exit_hook) where the program registers a thread_local
 * destructor of its own (so its waits stay tracked).  Never inlined:
 * before_thread_exit looks for its frame.
 */
static __attribute__((noinline)) void *trampoline(void *argument)
{
	struct launch *launch = argument;
	struct launch copy = *launch;

	tdshim_self.timer_slack_own = tdshim_self.default_slack_own = copy.timer_slack_own;
	tdshim_self.timer_slack_ns = tdshim_self.default_slack_ns = copy.timer_slack_ns;
	tdshim_self.sched_own = copy.sched_own;
	tdshim_self.sched_rt = copy.sched_rt;
	tdshim_self.sched_reset = false;
	/* The attributes' policy, which glibc set as it created the thread,
	 * before anything another thread changed since. */
	if (copy.sched_explicit)
		sched_apply(&tdshim_self, copy.sched_explicit > 1, false);
	/* This thread's handle in its launch, while the record is surely its
	 * own: the creator's store after pthread_create returns may come
	 * after this thread ended and its slot went to another (helper-67). */
	if (is_record_launch(launch))
		CMM_STORE_SHARED(launch->thread, own_handle());
	if (is_record_launch(launch))
		begin_tracking(&tdstat_region.records[launch - launches]);
	else {
		free(launch);
		begin_tracking(NULL);
	}
	CMM_STORE_SHARED(launch_taken, true);
	bool leaving __attribute__((cleanup(end_tracking_unless_hooked))) = true;
	(void)leaving;
	CMM_STORE_SHARED(in_start_routine, true);
	/* A C11 routine's int as glibc's start_thread stores it, where
	 * thrd_join finds it. */
	void *result = copy.c11_start_routine ? (void *)(uintptr_t)copy.c11_start_routine(copy.argument)
					      : copy.start_routine(copy.argument);
	CMM_STORE_SHARED(in_start_routine, false);
	return result;
}

/*
 * What pthread_create starts: the trampoline, inside a cleanup buffer.
 * Where the unwinding of a cancellation or pthread_exit stops short of
 * the trampoline (frames without unwind tables, an asynchronous
 * cancellation at an instruction the tables do not describe), glibc
 * longjmps to start_thread past it; but first, in its unwinding's stop
 * function, it runs every cleanup buffer of the first kind still on the
 * thread's list (nptl/unwind.c, unwind_stop), as it does for one whose
 * frame the unwinding leaves, also one whose cleanup an interrupted frame
 * skipped (personality.c): a pthread_exit from a signal handler inside
 * the trampoline, an asynchronous cancellation left on past the start
 * routine.  A few stores, no lock, no allocation, where the exit hook
 * takes the loader's lock.  The buffer lies above the trampoline's frame,
 * so glibc runs it after the cleanups of the start routine's frames.
 */
static void *thread_entry(void *argument)
{
	struct _pthread_cleanup_buffer unwinding;

	_pthread_cleanup_push(&unwinding, end_tracking_at_unwinding, NULL);
	CMM_STORE_SHARED(entry_buffer, &unwinding);
	void *result = trampoline(argument);
	CMM_STORE_SHARED(entry_buffer, NULL);
	_pthread_cleanup_pop(&unwinding, 0);
	return result;
}

static void no_cleanup(void *unused)
{
}

/*
 * Whether glibc dropped thread_entry's buffer from the thread's list.  A
 * longjmp runs and drops the buffers of the frames it leaves
 * (__pthread_cleanup_upto), but when the jump starts on an alternate
 * signal stack that lies inside the thread's own stack (a local array
 * of the start routine's) and a buffer below it is left (a sem_wait's,
 * the shim's or glibc's own), glibc takes that buffer for one already
 * gone and empties the whole list, thread_entry's too.  An unwinding
 * that then stops short of the trampoline ran nothing of the shim's, and
 * the record stayed live.  The list is walked from its head (read by a
 * push and pop of a buffer of our own) only through addresses between
 * this frame and thread_entry's buffer, each older than the last: a head
 * elsewhere (a handler's on another stack) counts as not lost.
 */
static bool entry_buffer_lost(void)
{
	struct _pthread_cleanup_buffer probe, *entry = CMM_LOAD_SHARED(entry_buffer);

	if (!entry)
		return false;
	_pthread_cleanup_push(&probe, no_cleanup, NULL);
	struct _pthread_cleanup_buffer *buffer = probe.__prev;
	_pthread_cleanup_pop(&probe, 0);
	for (uintptr_t floor = (uintptr_t)&probe; buffer != entry; buffer = buffer->__prev) {
		if (!buffer)
			return true;
		if ((uintptr_t)buffer <= floor || (uintptr_t)buffer > (uintptr_t)entry)
			return false;
		floor = (uintptr_t)buffer;
	}
	return false;
}

static int create_thread(pthread_t *thread, const pthread_attr_t *attr, void *(*start_routine)(void *),
			 int (*c11_start_routine)(void *), void *argument)
{
	struct tdstat_record *record;
	struct launch *launch;
	int error;

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
	launch->c11_start_routine = c11_start_routine;
	launch->argument = argument;
	launch_sched(launch, attr);

	error = tdshim_real_pthread_create(thread, attr, thread_entry, launch);
	if (error == 0) {
		/* Not a heap launch: its thread may have freed it already.  Only
		 * while the thread has not stored its own (it started), and
		 * not over another's: see trampoline.  A thread that ended
		 * and whose slot another creator took meanwhile leaves a
		 * window until the next thread starts. */
		if (record)
			uatomic_cmpxchg(&launch->thread, (pthread_t)0, *thread);
		return 0;
	}
	if (record) {
		tdshim_record_abandon(record);
		tdshim_slot_release(record);
	} else {
		uatomic_dec(&tdstat_region.header.status.overflow_live);
		free(launch);
	}
	return error;
}

TDSHIM_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
				 void *(*start_routine)(void *), void *argument)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_create);
	if (caa_unlikely(tdshim_standing_down))
		return tdshim_real_pthread_create(thread, attr, start_routine, argument);
	return create_thread(thread, attr, start_routine, NULL, argument);
}

/*
 * C11's: glibc's thrd_create calls its own pthread_create, past the
 * wrapper above, and the thread was adopted at its first wait.  Adoption
 * registers the exit hook, which takes the loader's lock: a C11 thread
 * that a library's constructor starts and joins during dlopen hung (see
 * register_exit_hook).  Created here instead, through the trampoline; a
 * C11 thread differs from another only in the return type of its start
 * routine (glibc's start_thread).  Errors as glibc maps them.
 */
TDSHIM_EXPORT int thrd_create(thrd_t *thread, thrd_start_t start_routine, void *argument)
{
	tdshim_ensure_init();
	if (caa_unlikely(!tdshim_real_thrd_create))
		return thrd_error;
	if (caa_unlikely(tdshim_standing_down || !tdshim_real_pthread_create))
		return tdshim_real_thrd_create(thread, start_routine, argument);
	return tdshim_thrd_result(create_thread(thread, NULL, NULL, start_routine, argument));
}

static bool is_signal_frame(struct _Unwind_Context *context)
{
	int signal_frame = 0;

	_Unwind_GetIPInfo(context, &signal_frame);
	return signal_frame != 0;
}

/* A walk of the caller's stack by the unwinder's tables, as far as they
 * go, to the first frame that answers `holds`: whether there is one, and
 * whether that frame was interrupted (a signal frame's, its instruction
 * pointer exact) rather than stopped at a call. */
struct stack_search {
	bool (*holds)(struct _Unwind_Context *context);
	bool found;
	bool interrupted;
};

static _Unwind_Reason_Code search_frame(struct _Unwind_Context *context, void *argument)
{
	struct stack_search *search = argument;

	if (!search->holds(context))
		return _URC_NO_REASON;
	search->found = true;
	search->interrupted = is_signal_frame(context);
	return _URC_END_OF_STACK;
}

static struct stack_search stack_search(bool (*holds)(struct _Unwind_Context *context))
{
	struct stack_search search = { holds, false, false };

	_Unwind_Backtrace(search_frame, &search);
	return search;
}

static bool is_trampoline(struct _Unwind_Context *context)
{
	return _Unwind_GetRegionStart(context) == (_Unwind_Ptr)trampoline;
}

/* A tracked thread (or one past capacity) whose tracking the exit hook
 * does not end yet. */
static bool tracked_without_hook(void)
{
	return !exit_hook_registered && !tdshim_self.exited && (tdshim_self.record || tdshim_self.overflow);
}

/* What pthread_exit's unwinding will do at the trampoline's frame. */
enum trampoline_unwinding {
	TRAMPOLINE_NOT_REACHED, /* the unwinding stops short of it */
	TRAMPOLINE_CLEANS_UP,   /* it runs the trampoline's cleanup */
	TRAMPOLINE_PASSED,      /* it passes the frame without the cleanup */
};

/*
 * Whether pthread_exit's unwinding, which walks the same frames with the
 * same tables, will pass the trampoline and run its cleanup.
 *
 * The cleanup covers the call of the start routine only, and only while
 * that frame stands at the call: a pthread_exit from a signal handler
 * that interrupted the trampoline's own instructions (the frame is a
 * signal frame's: personality.c runs no cleanup there) or a call of the
 * trampoline's other than the start routine (begin_tracking, the
 * cleanup itself on return) passes it.
 */
static enum trampoline_unwinding trampoline_on_unwinding(void)
{
	struct stack_search found = stack_search(is_trampoline);

	if (!found.found)
		return TRAMPOLINE_NOT_REACHED;
	return !found.interrupted && CMM_LOAD_SHARED(in_start_routine) ? TRAMPOLINE_CLEANS_UP : TRAMPOLINE_PASSED;
}

/* glibc ends a main thread that calls pthread_exit without running
 * thread_local destructors: its tracking ends here.  (A cancelled main
 * thread is tracked until the process exits.)  Another thread keeps its
 * tracking through the unwinding (the waits of its cleanup handlers
 * count): the trampoline's cleanup ends it, or, where the unwinding
 * stops short of the trampoline (frames without unwind tables), its
 * cleanup buffer; the exit hook in a thread the trampoline did not start
 * (adopted) or has left (a thread_local destructor's pthread_exit).
 * Not the exit hook where the buffer will do: a thread that a library's
 * constructor starts and joins would wait for ever for the loader's lock
 * that its registration takes (dlopen holds it while the constructor
 * runs), where bare glibc's pthread_exit, its unwinder loaded, takes no
 * such lock.  Where the unwinding will pass the trampoline without its
 * cleanup (a signal handler's pthread_exit that interrupted the
 * trampoline's own code, or its calls before and after the start
 * routine), the tracking ends here, before the handler's own cleanups:
 * end_tracking takes no lock and allocates nothing, where the hook would
 * allocate in a handler. */
/*
 * A thread that ends before its trampoline took the record its creator
 * claimed for it: a signal handler's pthread_exit at the thread's very
 * start (glibc's start_thread unblocks signals before it calls
 * thread_entry, so a signal sent right after pthread_create lands there).
 * Nothing of the shim's is on its stack yet, and the record stayed
 * RUNNABLE for good, one more leaked with each such thread.  The launch
 * is found where glibc keeps the start routine's argument, if the start
 * routine is thread_entry; a record the thread has begun tracking in
 * (the trampoline interrupted before launch_taken) ends the usual way.
 * A heap launch (past capacity) is left: freeing it in a handler is not
 * safe, and the trampoline may have freed it already.
 */
static void abandon_unstarted_launch(struct tdshim_thread *self)
{
	int32_t offset = CMM_LOAD_SHARED(pthread_start_routine_offset);
	const char *descriptor = offset >= 0 ? thread_descriptor() : NULL;

	if (!descriptor || CMM_LOAD_SHARED(launch_taken))
		return;
	void *const *fields = (void *const *)(descriptor + offset);
	if (fields[0] != (void *)thread_entry || !is_record_launch(fields[1]))
		return;
	struct tdstat_record *record = &tdstat_region.records[(const struct launch *)fields[1] - launches];

	CMM_STORE_SHARED(launch_taken, true);
	if (self->record == record)
		return;
	tdshim_record_set_state(record, TDSTAT_STATE_FREE);
	tdshim_slot_release(record);
}

static void before_thread_exit(void)
{
	tdshim_ensure_init();
	if (is_main_thread()) {
		end_tracking();
		return;
	}
	abandon_unstarted_launch(&tdshim_self);
	if (!tracked_without_hook())
		return;
	switch (trampoline_on_unwinding()) {
	case TRAMPOLINE_NOT_REACHED:
		if (!CMM_LOAD_SHARED(in_start_routine) || entry_buffer_lost())
			register_exit_hook(false);
		break;
	case TRAMPOLINE_PASSED:
		end_tracking();
		break;
	case TRAMPOLINE_CLEANS_UP:
		break;
	}
}

TDSHIM_EXPORT void pthread_exit(void *value)
{
	before_thread_exit();
	if (caa_unlikely(!tdshim_real_pthread_exit))
		abort();
	tdshim_real_pthread_exit(value);
	__builtin_unreachable();
}

/* C11's: glibc's thrd_exit calls its own pthread_exit directly, past the
 * wrapper above, and the same unwinding follows. */
TDSHIM_EXPORT void thrd_exit(int result)
{
	before_thread_exit();
	if (caa_unlikely(!tdshim_real_thrd_exit))
		abort();
	tdshim_real_thrd_exit(result);
	__builtin_unreachable();
}

int tdshim_cancel_requested;

/* Whether the caller runs in a signal handler: the stack holds a signal
 * frame (the unwinder tells them apart by their tables). */
static bool in_signal_handler(void)
{
	return stack_search(is_signal_frame).found;
}

/*
 * A thread that turns on asynchronous cancellation, whose unwinding from
 * an arbitrary instruction does not always reach the trampoline, ends at
 * thread_entry's cleanup buffer.  One outside its start routine (adopted,
 * or in a thread_local destructor) gets the exit hook first, once.  Not
 * from a signal handler: the registration allocates, and a handler that
 * interrupted malloc would wait for ever for the lock its own thread
 * holds, where glibc's pthread_setcanceltype takes none (DESIGN.md).
 */
TDSHIM_EXPORT int pthread_setcanceltype(int type, int *old_type)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_setcanceltype);
	if (type == PTHREAD_CANCEL_ASYNCHRONOUS && !CMM_LOAD_SHARED(in_start_routine) && !exit_hook_registered &&
	    !tdshim_self.exited && !in_signal_handler()) {
		tdshim_ensure_init();
		register_exit_hook(true);
	}
	return tdshim_real_pthread_setcanceltype(type, old_type);
}

/* The program's first thread_local destructor in a thread: ours first, so
 * that it runs after the program's (glibc runs them last registered
 * first), and the waits in theirs count. */
int __cxa_thread_atexit_impl(void (*destructor)(void *), void *object, void *dso_handle);
TDSHIM_EXPORT int __cxa_thread_atexit_impl(void (*destructor)(void *), void *object, void *dso_handle)
{
	tdshim_ensure_init();
	if (caa_unlikely(!tdshim_real___cxa_thread_atexit_impl))
		return -1;
	if (tracked_without_hook())
		register_exit_hook(true);
	return tdshim_real___cxa_thread_atexit_impl(destructor, object, dso_handle);
}

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
 * that arrives halfway through a record write (`writing`, and wait_depth
 * raised before the write and lowered after it).  A scope abandoned by a
 * siglongjmp is ended by runtime/jump.c before the jump, so wait_depth
 * always comes back to 0.
 */
static void change_own_record(struct tdshim_thread *self, const struct tdshim_change *change)
{
	if (!self->record || self->writing)
		return;
	self->writing_frame = __builtin_frame_address(0);
	self->writing = 1;
	cmm_barrier();
	tdshim_record_change(self->record, change);
	cmm_barrier();
	self->writing = 0;
}

/*
 * A safety net for a jump out of a wait that runtime/jump.c did not see:
 * a wait nested in a signal handler runs deeper on the same stack, or on
 * the alternate signal stack; a new wait above the outermost scope's
 * frame on the same stack means that frame is gone.  (The converse does
 * not hold: a deeper wait may come after a jump too, which is why the
 * jumps are interposed.)
 */
static bool outer_scope_gone(const struct tdshim_thread *self, const struct tdshim_wait_scope *scope)
{
	stack_t alternate;

	if (!self->outer_scope || (uintptr_t)scope <= (uintptr_t)self->outer_scope)
		return false;
	return !(sigaltstack(NULL, &alternate) == 0 && (alternate.ss_flags & SS_ONSTACK));
}

/*
 * The CPU a sleep takes.  The kernel counts a sleeping call's own work
 * (entering the futex, switching out, and back in after the wake-up) as
 * running.  When the wake comes from another CPU within
 * TDSHIM_REMOTE_WAKE_NS, or from a timer within TDSHIM_LATE_TIMER_NS, the
 * stamp cannot say when the kernel counted the thread runnable (see
 * late_wake), so the thread counts as woken that much CPU before its
 * return: the part after the switch in, and, in its place, the part
 * before the switch out, which the record counts BLOCKED from the
 * announcement on.  It is measured as the thread CPU clock's growth over
 * a sleep of the same kind (one figure per kind, below), less what one
 * reading of that clock costs (a system call, about 0.6 us here: each
 * reading falls in the middle of its own call, so the growth holds one
 * whole call besides the sleep): the thread's next sleep of that kind
 * from the same call site after such a wake (not merely the next of the
 * kind, which may be a rare one: a sleep that a signal handler filled,
 * 150 us of CPU, set the figure for another thread's light sleeps, read
 * 2.9-3.9x the kernel; helper-64, rel_review sampled-elsewhere), every
 * one until a first figure exists, then one in CREDIT_EVERY;
 * the figure is the median of the kind's last CREDIT_SAMPLES, renewed
 * with each batch (a virtual machine's cost of a sleep moves with the
 * host's own halt polling: 3.5 us at one program's start, 14 us a second
 * later).  Until the kind's first batch such a wake counts from the
 * return.
 */
#define CREDIT_SAMPLES 15u
#define CREDIT_EVERY 64u
#define CREDIT_SAMPLE_MAX_NS UINT64_C(1000000)
/* One figure per wait kind: a kind's sleeps differ from another's (a
 * poll over many descriptors works tens of microseconds on its way in, a
 * condvar wait may sleep twice, on the condvar and on its mutex), and a
 * wake is dated by its own kind's figure. */
static struct credit_figure {
	uint64_t samples[CREDIT_SAMPLES];
	unsigned int claimed, stored;
	uint64_t credit_ns;
} credits[TDSTAT_WAIT_KIND_COUNT];
static bool credit_clock_failed;

static struct credit_figure *credit_of(unsigned int kind)
{
	return &credits[kind < TDSTAT_WAIT_KIND_COUNT ? kind : TDSTAT_WAIT_FUTEX];
}

/* 0 in a seccomp sandbox: the thread CPU clock is a system call (the
 * vDSO serves only the wall clocks), which a filter may kill on. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec now;

	if (tdshim_in_sandbox())
		return 0;
	TDSHIM_SAVE_ERRNO();
	int failed = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);

	TDSHIM_RESTORE_ERRNO();
	if (failed)
		CMM_STORE_SHARED(credit_clock_failed, true);
	return failed ? 0 : (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static void credit_sample_begin(struct tdshim_thread *self, struct tdshim_wait_scope *scope)
{
	self->sample_pending = false;
	/* The clock is a system call: each reading falls in the middle of
	 * its own, so the growth up to the end's reading holds one whole
	 * call besides the sleep's CPU.  Two readings here measure one. */
	uint64_t first = thread_cpu_ns();
	scope->sample_cpu_ns = thread_cpu_ns();
	scope->sample_read_ns = first && scope->sample_cpu_ns > first ? scope->sample_cpu_ns - first : 0;
	scope->sample_wall_ns = tdshim_stamp_ns();
	scope->sample_lifts = self->lifts;
}

/* A sample counts when the wait slept: its wall time is longer than its
 * CPU time by more than a few microseconds. */
static void credit_sample_end(const struct tdshim_wait_scope *scope)
{
	uint64_t cpu = thread_cpu_ns(), wall = tdshim_stamp_ns();

	if (!cpu || cpu < scope->sample_cpu_ns || wall < scope->sample_wall_ns)
		return;
	cpu -= scope->sample_cpu_ns;
	cpu = cpu > scope->sample_read_ns ? cpu - scope->sample_read_ns : 0;
	wall -= scope->sample_wall_ns;
	/* A handler that ran inside the wait put its own CPU in (helper-64's
	 * 150 us of a handler as one sleep's figure). */
	if (scope->never_slept || cpu > CREDIT_SAMPLE_MAX_NS || wall < cpu + 2000 ||
	    scope->sample_lifts != tdshim_self.lifts)
		return;
	struct credit_figure *figure = credit_of(scope->kind);
	unsigned int index = uatomic_add_return(&figure->claimed, 1) - 1;

	CMM_STORE_SHARED(figure->samples[index % CREDIT_SAMPLES], cpu);
	if (uatomic_add_return(&figure->stored, 1) % CREDIT_SAMPLES != 0)
		return;
	/* The last one of a batch publishes the median (no allocation, no
	 * lock, no libc call: this may run in a signal handler's wait; a
	 * sample of the next batch stored meanwhile joins it). */
	uint64_t sorted[CREDIT_SAMPLES];
	for (unsigned int i = 0; i < CREDIT_SAMPLES; i++) {
		uint64_t value = CMM_LOAD_SHARED(figure->samples[i]);
		unsigned int at = i;

		for (; at > 0 && sorted[at - 1] > value; at--)
			sorted[at] = sorted[at - 1];
		sorted[at] = value;
	}
	CMM_STORE_SHARED(figure->credit_ns, sorted[CREDIT_SAMPLES / 2]);
}

TDSHIM_BLOCKING_PATH void tdshim_wait_begin(struct tdshim_wait_scope *scope)
{
	TDSHIM_PROFILE_START(begin);
	struct tdshim_thread *self = &tdshim_self;

	if (caa_unlikely(self->wait_depth != 0)) {
		if (!outer_scope_gone(self, scope)) {
			self->wait_depth++;
			return;
		}
		tdshim_wait_abandon(self, NULL);
	}
	/* Depth first: a handler arriving now sees a wait in progress (with
	 * no outer scope yet, it counts as nested) and writes nothing. */
	self->wait_depth = 1;
	cmm_barrier();
	self->outer_scope = scope;
	cmm_barrier();
	if (caa_unlikely(!self->record)) {
		if (self->exited || self->overflow || self->writing)
			return;
		tdshim_ensure_init();
		tdshim_thread_adopt();
		if (!self->record)
			return;
	}
	struct tdshim_change change = {
		.state = TDSTAT_STATE_BLOCKED,
		.kind = scope->kind,
		.object = scope->object,
		.site = scope->site,
	};
	if (caa_unlikely(self->sample_pending) && scope->site == self->sample_site && scope->kind == self->sample_kind)
		credit_sample_begin(self, scope);
	change_own_record(self, &change);
	TDSHIM_PROFILE_END(begin, TDSHIM_PROFILE_WAIT_BEGIN);
}

/*
 * The slack the kernel gave the timer of a wait with this deadline, which
 * started at `since`: the process's timer slack (PR_GET_TIMERSLACK, read
 * at start), except for the readiness waits (poll, select, epoll: kind IO
 * with a deadline), whose slack grows with the timeout as in the kernel's
 * select_estimate_accuracy(): 0.1% of it, at most 100 ms, at least the
 * timer slack; none at all for a real-time thread (see "Scheduling
 * policy" above).  No system call here (a seccomp filter may forbid one
 * the program never makes), so one case comes out wrong: a thread with a
 * positive nice (the kernel takes 0.5% for poll and select).
 */
static uint64_t timer_slack(const struct tdshim_wait_scope *scope, uint64_t deadline, uint64_t since)
{
	struct tdshim_thread *self = &tdshim_self;

	sched_sync(self);
	/* None for a real-time thread, poll's and select's neither. */
	if (thread_is_rt(self))
		return 0;
	uint64_t slack = self->timer_slack_own ? self->timer_slack_ns : tdshim_timer_slack_ns;

	if (scope->kind != TDSTAT_WAIT_IO || deadline <= since)
		return slack;
	uint64_t share = (deadline - since) / 1000;
	if (share > TDSHIM_MAX_POLL_SLACK_NS)
		share = TDSHIM_MAX_POLL_SLACK_NS;
	return share > slack ? share : slack;
}

/*
 * The kernel's timer slack is per thread: PR_SET_TIMERSLACK sets the
 * calling thread's, 0 sets it back to the thread's default (the slack its
 * creator had when it was created), and a new thread starts with its
 * creator's: the launch carries it, as both.  A thread the shim did not
 * start has the process's (read at start) as both.  No system call here
 * (reading the slack back would be one the program never makes, which a
 * seccomp filter installed by an inline system call may kill on;
 * helper-65).  A real-time thread's change is ignored, as the kernel
 * ignores it (see "Scheduling policy" above).
 */
void tdshim_timer_slack_changed(unsigned long requested)
{
	struct tdshim_thread *self = &tdshim_self;

	if (!tdshim_caller_owns_tls())
		return;
	/* Ignored by the kernel while the thread is real time (see the
	 * scheduling policy above); a thread not yet adopted asks the
	 * kernel its class first (helper-67's SIGEV_THREAD callback set
	 * its slack before its first wait). */
	sched_adopted();
	sched_sync(self);
	if (thread_is_rt(self))
		return;
	if (requested > 0) {
		self->timer_slack_ns = requested;
		self->timer_slack_own = true;
		return;
	}
	self->timer_slack_ns = self->default_slack_ns;
	self->timer_slack_own = self->default_slack_own;
}

/*
 * A wake that may have reached a halted CPU: from another CPU (`woken`
 * its stamp), or a timer's (`woken` its expiry as set, which fires on the
 * sleeper's own CPU, idle or not).  A halted CPU takes the wake (the
 * interrupt) late: 15-100 us on a virtual CPU whose host must run it
 * again, up to a deep C-state's exit latency on real hardware.  The kernel
 * counts the thread runnable only once the CPU takes it, just before it
 * runs; on a busy CPU it queues the thread at once, and a woken sleeper
 * usually preempts soon.  The waiter cannot tell the two apart, so a
 * return within `bound` of `woken` counts as woken the CPU its kind's
 * sleep takes before its return (or at `woken`, if that is later): what
 * the kernel counts in the first case, and most of the second (a thread
 * queued behind a busy CPU's current thread waits its slice,
 * milliseconds, past this bound).  Measured on a 2-CPU guest whose host
 * runs a halted virtual CPU 40-100 us after its interrupt (a wake's
 * stamp to the kernel's wake-up: 60-110 us; a 500 us sleep's return
 * 140 us late on average), tests/accuracy's pool shapes (broadcast wakes
 * to the idle CPU, a pause in nanosleep) read 1.05-1.12 of the kernel
 * with timers dated at their expiry, 1.02-1.10 with TDSHIM_LATE_TIMER_NS
 * (250 us) for them.  A bound of 120-250 us for remote wakes too brought
 * the C++ pool to 1.05 but the ping-pongs (each wake to the other, idle
 * CPU) from 0.98-0.99 to 0.95-0.96: it stays TDSHIM_REMOTE_WAKE_NS
 * (50 us).  The whole CPU of the sleep, not half of it as until session
 * 22: with half (and one figure for all kinds, the clock's own call left
 * in) the ping-pongs read 0.89-0.93 of the kernel at no steal; with the
 * whole, less the clock's call, 1.00-1.04 (DESIGN.md).
 */
static uint64_t late_wake(uint64_t woken, uint64_t bound, const struct tdshim_wait_scope *scope)
{
	struct tdshim_thread *self = &tdshim_self;
	uint64_t now = tdshim_stamp_ns();

	if (now < woken || now - woken >= bound)
		return woken;
	/* This CPU ran a thread of ours at `woken`: it was awake, and this
	 * one queued from then (helper-72: eight Java threads in
	 * parkNanos(100 us) with 40 us of work each on 2 CPUs read
	 * 0.57-0.73 of the kernel, their run-queue waits of 50-250 us
	 * counted asleep; helper-74: four timers a halted CPU fired late at
	 * once, counted from the expiry by a change after it, read
	 * 1.3-4.3x). */
	if (tdshim_cpu_busy_at(woken))
		return woken;
	uint64_t credit = CMM_LOAD_SHARED(credit_of(scope->kind)->credit_ns);

	if (!CMM_LOAD_SHARED(credit_clock_failed) && !tdshim_in_sandbox() &&
	    (!credit || ++self->remote_wakes % CREDIT_EVERY == 0)) {
		self->sample_kind = scope->kind;
		self->sample_site = scope->site;
		self->sample_pending = true;
	}
	if (!credit)
		return woken;
	return now - woken > credit ? now - credit : woken;
}

/* The moment the scope's wait was woken, as far as anyone stamped it; 0
 * when nobody did (the thread counts as woken when it returns). */
static uint64_t wait_woken(const struct tdshim_wait_scope *scope, uint64_t since)
{
	uint64_t woken = 0;

	if (scope->never_slept)
		return since;
	uint64_t deadline = scope->deadline_ns ? scope->deadline_ns : scope->timeout_ns ? since + scope->timeout_ns : 0;
	if (deadline && (scope->timed_out || scope->kind == TDSTAT_WAIT_SLEEP)) {
		/* The kernel sets the timer to fire at the deadline plus the
		 * slack, and runs it at the deadline or later only when
		 * another timer or interrupt comes first in between, which
		 * is rare: measured on a 2-CPU guest, 10 ms sleeps fired
		 * 58-71 us past their deadline with both CPUs busy and 97 us
		 * with both idle (slack 50 us).  So the deadline plus the
		 * slack, the earliest the timer fires as set, or later where
		 * the CPU took the timer's interrupt late (late_wake). */
		uint64_t expiry = deadline + timer_slack(scope, deadline, since);
		/* One past the change's own moment (a sleep cut short) is
		 * clamped to it by the change. */
		if (expiry <= since)
			return 0;
		woken = late_wake(expiry, TDSHIM_LATE_TIMER_NS, scope);
		/* A timed-out condvar wait that slept again to take its mutex
		 * back (the second key: wrap_sync.c, cond_timed_out): a wake
		 * of the mutex after the timer's ended that sleep. */
		if (scope->timed_out && scope->wake_keys[1] &&
		    (!scope->relock_if_late || tdshim_stamp_ns() - woken > TDSHIM_RELOCK_SLEEP_NS)) {
			unsigned int cpu = 0;
			bool one = false;
			uint64_t stamp = tdshim_wake_lookup(scope->wake_keys[1], woken ? woken : since, &cpu, &one);

			if (stamp > woken)
				woken = stamp;
		}
		return woken;
	}
	unsigned int waker_cpu = 0;
	bool claimed = false;
	/* Wake descriptors (wrap_fd.c): the first write after the start to
	 * any of the keys woke the wait. */
	for (int i = 0; i < 2 && scope->earliest_stamp; i++) {
		unsigned int cpu = 0;
		uint64_t stamp = 0;

		if (scope->wake_keys[i]) {
			/* The first write after the last read that took the data
			 * (another thread's: this one's comes after its return). */
			bool one = false;
			uint64_t drained = tdshim_wake_lookup(tdshim_wake_drain_key(scope->wake_keys[i]), since, &cpu, &one);

			stamp = tdshim_wake_earliest(scope->wake_keys[i], drained > since ? drained : since, &cpu);
		}

		if (stamp > since && (!woken || stamp < woken)) {
			woken = stamp;
			waker_cpu = cpu;
		}
	}
	for (int i = 0; i < 2 && !scope->earliest_stamp; i++) {
		unsigned int cpu = 0;
		bool one = false;
		uint64_t stamp = !scope->wake_keys[i]                ? 0
				 : i == 0 && scope->claims_stamp ? tdshim_wake_claim(scope->wake_keys[i], since, &cpu)
								 : tdshim_wake_lookup(scope->wake_keys[i], since, &cpu, &one);
		if (i == 0 && scope->claims_stamp && stamp > since)
			claimed = true;
		/* A wake of one's copy in the slot is the newest such wake's,
		 * not necessarily this waiter's: only when the ring no longer
		 * holds an entry to claim (other wakes of its ring wrote over
		 * it while this thread waited for a CPU). */
		if (one && claimed)
			continue;
		if (stamp > since && stamp > woken) {
			woken = stamp;
			waker_cpu = cpu;
		}
	}
	/* A wake from this CPU ran the waker here: the kernel queued the
	 * thread at once. */
	if (woken && tdshim_wake_from_other_cpu(waker_cpu))
		return late_wake(woken, TDSHIM_REMOTE_WAKE_NS, scope);
	return woken;
}

/* Ends the outermost scope: RUNNABLE again, from when the wait was woken. */
TDSHIM_BLOCKING_PATH void tdshim_wait_abandon(struct tdshim_thread *self, const struct tdshim_wait_scope *scope)
{
	TDSHIM_PROFILE_START(end);
	if (self->record) {
		const struct tdstat_record *record = self->record;
		uint64_t since = CMM_LOAD_SHARED(record->copy[CMM_LOAD_SHARED(record->seq) & 1].since_ns);
		if (scope && caa_unlikely(scope->sample_cpu_ns))
			credit_sample_end(scope);
		TDSHIM_PROFILE_START(woken);
		struct tdshim_change change = {
			.state = TDSTAT_STATE_RUNNABLE,
			.woken_ns = scope && tdshim_gathering() ? wait_woken(scope, since) : 0,
		};
		TDSHIM_PROFILE_END(woken, TDSHIM_PROFILE_WOKEN);
		change_own_record(self, &change);
	}
	self->outer_scope = NULL;
	cmm_barrier();
	self->wait_depth = 0;
	TDSHIM_PROFILE_END(end, TDSHIM_PROFILE_WAIT_END);
}

TDSHIM_BLOCKING_PATH void tdshim_wait_end(struct tdshim_wait_scope *scope)
{
	struct tdshim_thread *self = &tdshim_self;

	/* The outermost scope ends every scope nested in it, also those a
	 * handler left without ending (a jump inside the handler). */
	if (scope == self->outer_scope) {
		tdshim_wait_abandon(self, scope);
		return;
	}
	cmm_barrier();
	if (self->wait_depth > 0)
		self->wait_depth--;
}

/*
 * Signal handlers inside a wait (shim.h, struct tdshim_lift).  The thread
 * is lifted only out of a wait whose BLOCKED state its record publishes,
 * with no change of it under way: a handler that arrives while a scope
 * begins or ends (the depth set, the change not yet or already made), or
 * inside a change, runs as before, counted in the wait.  Each step leaves
 * a state a handler nested in this one reads the same way: the record
 * RUNNABLE first (a nested handler finds no BLOCKED wait to lift), then
 * no scope; on the way back the scope first, then BLOCKED.
 */
TDSHIM_BLOCKING_PATH void tdshim_handler_enter(struct tdshim_lift *lift)
{
	struct tdshim_thread *self = &tdshim_self;
	const struct tdshim_wait_scope *scope = self->outer_scope;
	const struct tdstat_record *record = self->record;

	if (!scope || !record || self->writing)
		return;
	uint32_t published = CMM_LOAD_SHARED(record->seq) & 1;
	const struct tdstat_record_copy *copy = &record->copy[published];
	const struct tdstat_detail_copy *detail = &tdshim_detail_of(record)->copy[published];

	if (copy->state != TDSTAT_STATE_BLOCKED)
		return;
	/* The wait as the record publishes it, put back after the handler:
	 * not the scope's, whose frame a jump the shim did not see
	 * (setcontext out of a handler) may have left. */
	lift->kind = copy->kind;
	lift->object = (const void *)(uintptr_t)detail->object;
	lift->site = (const void *)(uintptr_t)detail->site;
	/* The signal woke the thread before the handler started: by as much
	 * CPU as a sleep of the kind takes (late_wake), when the shim has a
	 * figure for it, the kernel's part of leaving the wait and, after
	 * the handler, of going back into it (counted BLOCKED from there). */
	uint64_t credit = CMM_LOAD_SHARED(credit_of(lift->kind)->credit_ns);
	uint64_t now = credit ? tdshim_stamp_ns() : 0;
	struct tdshim_change change = {
		.state = TDSTAT_STATE_RUNNABLE,
		.woken_ns = now > credit ? now - credit : 0,
	};

	change_own_record(self, &change);
	self->lifts++;
	lift->depth = self->wait_depth;
	lift->scope = scope;
	lift->lifted = true;
	self->outer_scope = NULL;
	cmm_barrier();
	self->wait_depth = 0;
	cmm_barrier();
}

TDSHIM_BLOCKING_PATH void tdshim_handler_park(const struct tdshim_lift *lift, uintptr_t pc, uintptr_t sp)
{
	struct tdshim_parked_wait *parked = &tdshim_self.parked;

	if (!lift->lifted)
		return;
	parked->pc = 0;
	cmm_barrier();
	parked->sp = sp;
	parked->depth = lift->depth;
	parked->scope = lift->scope;
	parked->kind = lift->kind;
	parked->object = lift->object;
	parked->site = lift->site;
	cmm_barrier();
	parked->pc = pc;
}

TDSHIM_BLOCKING_PATH void tdshim_handler_unpark(void)
{
	struct tdshim_thread *self = &tdshim_self;
	struct tdshim_lift back = {
		.lifted = true,
		.returned = true,
		.depth = self->parked.depth,
		.scope = self->parked.scope,
		.kind = self->parked.kind,
		.object = self->parked.object,
		.site = self->parked.site,
	};

	self->parked.pc = 0;
	cmm_barrier();
	tdshim_handler_leave(&back);
}

TDSHIM_BLOCKING_PATH void tdshim_handler_leave(struct tdshim_lift *lift)
{
	struct tdshim_thread *self = &tdshim_self;

	/* Resumed elsewhere (run_lifted): lifted it stays. */
	if (!lift->lifted || lift->resumed_elsewhere)
		return;
	TDSHIM_SAVE_ERRNO();
	/* Whatever the handler's own waits left (a jump inside it ends
	 * them): the interrupted wait's scopes are back. */
	self->wait_depth = lift->depth;
	cmm_barrier();
	self->outer_scope = lift->scope;
	cmm_barrier();
	if (lift->returned) {
		struct tdshim_change change = {
			.state = TDSTAT_STATE_BLOCKED,
			.kind = lift->kind,
			.object = lift->object,
			.site = lift->site,
		};
		change_own_record(self, &change);
	}
	TDSHIM_RESTORE_ERRNO();
}
