/* SPDX-License-Identifier: MIT */
/*
 * libtdshim internals.  Everything here is hidden; the only exported names
 * are the wrappers themselves and the region symbol.
 *
 * Threading model: each tracked thread owns one record of the region and
 * is its only writer.  Claiming and releasing records go through a
 * lock-free stack (runtime/slots.c).  Nothing here takes a lock, allocates
 * memory or makes a syscall other than clock_gettime on a state change.
 */
#ifndef TDSHIM_SHIM_H
#define TDSHIM_SHIM_H

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include <urcu/arch.h>
#include <urcu/compiler.h>
#include <urcu/system.h>
#include <urcu/uatomic.h>

#include "tdstat/region.h"

#define TDSHIM_EXPORT __attribute__((visibility("default")))
#define TDSHIM_TLS __attribute__((tls_model("initial-exec")))
/* The code of the blocking paths (a wait's record changes, wake-up
 * stamps and claims, the semaphore's own sleep and wake, the condvar
 * wait and signal), kept together in one stretch of .text: it runs just
 * before and after a context switch, whose kernel path has pushed much
 * of it out of the caches, and each line and page it spans costs there
 * (bench/: one-CPU condvar and semaphore ping-pongs). */
#define TDSHIM_BLOCKING_PATH __attribute__((section(".text.hot.tdshim_blocking")))
/* The uncontended fast paths (a few ns each, at or below glibc's own):
 * each starts a cache line of its own, so that code added or moved
 * elsewhere does not move them across a line or next to another one's
 * branches.  Moved alone, by the change that grouped the blocking paths,
 * sem_post+sem_trywait went from 1.00x to 1.10x bare (an earlier change
 * moved trywrlock to 2.05x). */
#define TDSHIM_FAST_PATH __attribute__((aligned(64)))

extern struct tdstat_region tdstat_region;
/* This copy's own region (runtime/region.c), reached without the GOT. */
extern struct tdstat_region tdshim_own_region __attribute__((visibility("hidden")));

/* Per-thread state, in static TLS (no allocation, async-signal-safe). */
struct tdshim_thread {
	struct tdstat_record *record; /* NULL: not tracked (yet, or overflow) */
	pid_t tid;                    /* gettid(), 0 until known */
	pid_t lock_tid;               /* what glibc writes as a lock's owner or writer: its
				       * descriptor's tid (thread.c), the same but in the child
				       * of a raw fork; 0 until known */
	unsigned int wait_depth;      /* nested interposed waits (signal handlers) */
	unsigned int writing;         /* inside a change of its own record */
	const void *writing_frame;    /* ... made from this frame */
	const void *outer_scope;      /* the outermost live wait scope, NULL if none */
	int *errno_location;          /* cached __errno_location() */
	bool overflow;                /* counted in status.overflow_live */
	bool exited;                  /* tracking ended: never adopt again */
	bool sample_pending;          /* measure the CPU its next sleep takes at ... */
	unsigned int sample_kind;     /* ... this kind of wait, called ... */
	const void *sample_site;      /* ... from here (thread.c) */
	unsigned int remote_wakes;    /* late wakes, dated by that measure */
	bool timer_slack_own;         /* timer_slack_ns is this thread's (else the process's: */
	uint64_t timer_slack_ns;      /* tdshim_timer_slack_ns): set by prctl, or its creator's */
	bool default_slack_own;       /* the same for the slack a PR_SET_TIMERSLACK of 0 */
	uint64_t default_slack_ns;    /* goes back to: its creator's at its creation */
	bool sched_own;               /* sched_rt is this thread's (else the process's, */
	bool sched_rt;                /* tdshim_process_rt): a real-time or deadline policy, */
	bool sched_reset;             /* ... and SCHED_RESET_ON_FORK (thread.c, scheduling) */
	uint64_t sched_seen;          /* its slot's scheduling word as last applied */
	uint64_t switches_looked_ns;  /* a condvar wait's last look at its switches (wrap_sync.c) */
	unsigned int lifts;           /* handlers run inside its waits (thread.c, handlers) */
	/* A wait a handler moved the thread out of, to be resumed where it
	 * was left (wrap_handler.c, run_lifted; thread.c): pc 0 if none. */
	struct tdshim_parked_wait {
		uintptr_t pc, sp;       /* the interrupted context's */
		unsigned int depth;
		const void *scope;
		uint32_t kind;
		const void *object, *site;
	} parked;
	/* The counter clock's anchors (runtime/announce.c): anchors[anchor & 1]
	 * is in use; a renewal writes the other one whole, then moves
	 * `anchor`.  `check` (the xor of the other three) tells a whole one
	 * from one a renewal inside a signal handler wrote over halfway. */
	unsigned int anchor;
	struct tdshim_anchor {
		uint64_t counter; /* a time stamp counter reading ... */
		uint64_t ns;      /* ... CLOCK_MONOTONIC then ... */
		uint64_t scale;   /* ... and ns per cycle, 32.32 fixed point */
		uint64_t check;
	} anchors[2];
};
extern __thread struct tdshim_thread tdshim_self TDSHIM_TLS;

/* Real functions, resolved once (runtime/region.c). */
#define TDSHIM_REAL_FUNCTION(ret, name, params, version) extern ret(*tdshim_real_##name) params;
#include "real.def"
#undef TDSHIM_REAL_FUNCTION

/* The wait kind each waiting call records, from the table of calls
 * (runtime/calls.def): TDSHIM_KIND(pthread_mutex_lock) is
 * TDSTAT_WAIT_MUTEX.  A call with no wait kind has no constant. */
enum tdshim_call_kind {
#define TDSHIM_CALL_GROUP(id, title)
#define TDSHIM_CALL(name, group, real, ret, params)
#define TDSHIM_WAIT_CALL(name, kind, group, real, ret, params) tdshim_kind_##name = TDSTAT_WAIT_##kind,
#include "calls.def"
#undef TDSHIM_WAIT_CALL
#undef TDSHIM_CALL
#undef TDSHIM_CALL_GROUP
};
#define TDSHIM_KIND(call) tdshim_kind_##call

/* glibc's _FORTIFY_SOURCE entry points, which programs built with it call
 * instead of read, recv, recvfrom, poll and ppoll.  <*.h> declare them only
 * inside fortify wrappers. */
ssize_t __read_chk(int fd, void *buffer, size_t size, size_t buffer_size);
ssize_t __recv_chk(int fd, void *buffer, size_t size, size_t buffer_size, int flags);
ssize_t __recvfrom_chk(int fd, void *buffer, size_t size, size_t buffer_size, int flags,
		       struct sockaddr *from, socklen_t *from_size);
int __poll_chk(struct pollfd *fds, nfds_t count, int timeout_ms, size_t fds_size);
int __ppoll_chk(struct pollfd *fds, nfds_t count, const struct timespec *timeout,
		const sigset_t *mask, size_t fds_size);

/* Ensures the shim is initialised: real functions resolved, the main
 * thread tracked.  Cheap after the first call.  In the child of a fork
 * that ran no atfork handler (_Fork, a raw clone) it starts the child's
 * region instead: the flag lives alone in a page that the kernel wipes in
 * such a child (runtime/region.c). */
void tdshim_init(void);
#define TDSHIM_PROCESS_PAGE_SIZE 4096
struct tdshim_process_page {
	int initialised; /* in this process */
	int resetting;   /* a forked child's reset has begun */
	pid_t pid;       /* this process's, once known (tdshim_process_id) */
	int starting;    /* a thread of this address space runs the start-up */
	char unused[TDSHIM_PROCESS_PAGE_SIZE - 3 * sizeof(int) - sizeof(pid_t)];
};
extern struct tdshim_process_page tdshim_process;

/* TDSTAT_TRACK_READS=1: read/readv take part (see runtime/wrap_read.c). */
extern bool tdshim_track_reads;

/* Another copy of the shim, loaded first, owns the region: this one only
 * forwards (runtime/region.c). */
extern bool tdshim_standing_down;

/* The mutex __kind that pthread_mutex_lock takes inline (the default
 * mutex), or one no mutex has: set once at init (runtime/wrap_mutex.c). */
#define TDSHIM_MUTEX_KIND_NEVER_INLINE (-1)
/* The shim's half of the mutex gate (region.h's struct tdstat_sync): the
 * inline path compares the whole gate, which a controller's tracking
 * half turns off (runtime/sync_track.h).  NEVER_INLINE stored there makes
 * the gate read 65535, a kind no mutex has (not even a destroyed one,
 * whose kind glibc sets to -1). */
#define tdshim_inline_mutex_kind (tdshim_own_region.sync.header.gate_mutex.half.shim)
/* Lock elision on: default mutexes are not taken inline. */
void tdshim_probe_mutex_elision(void);
void tdshim_probe_thread_tid(void);
static inline void tdshim_ensure_init(void)
{
	if (caa_unlikely(!CMM_LOAD_SHARED(tdshim_process.initialised)))
		tdshim_init();
}

/* CLOCK_MONOTONIC in ns (vDSO, no syscall). */
uint64_t tdshim_now_ns(void);

/* Step 1 of region.h's latch, tdshim_announce(), and tdshim_stamp_ns(),
 * CLOCK_MONOTONIC for stamps from the time stamp counter where that is
 * cheaper (within microseconds of the clock; the readers' margin is a
 * millisecond), never for durations the program sees, are inline in
 * runtime/counter_clock.h.  _init picks the way once the stall bound is
 * known (runtime/announce.c). */
void tdshim_announce_init(uint64_t stall_ns);
bool tdshim_announce_uses_rseq(void);

/*
 * A change of a record (region.h's latch).  Only the owner changes its
 * record, except for the claim of a new thread's record by its creator
 * (before the thread exists).
 *   state:  the new state;
 *   kind, object, site: the wait the new state is in (BLOCKED);
 *   woken_ns: closing a BLOCKED interval, the moment the wait was woken
 *           (0: unknown, the change itself); dated back at most
 *           TDSTAT_COMMIT_LAG_NS;
 *   tid, new_claim: set the owner (a claim bumps the generation).
 */
struct tdshim_change {
	uint32_t state;
	uint32_t kind;
	const void *object;
	const void *site;
	uint64_t woken_ns;
};
void tdshim_record_change(struct tdstat_record *record, const struct tdshim_change *change);
void tdshim_record_set_owner(struct tdstat_record *record, pid_t tid, bool new_claim);
void tdshim_record_abandon(struct tdstat_record *record);
struct tdstat_detail *tdshim_detail_of(const struct tdstat_record *record);
static inline void tdshim_record_set_state(struct tdstat_record *record, uint32_t new_state)
{
	struct tdshim_change change = { .state = new_state };

	tdshim_record_change(record, &change);
}

/* True while gathering is on: the only time wake-ups are stamped. */
static inline bool tdshim_gathering(void)
{
	return CMM_LOAD_SHARED(tdstat_region.header.control.window_end_ns) == TDSTAT_WINDOW_OPEN;
}

/*
 * Wake-up stamps (runtime/wake.c).  A thread that wakes others (an unlock
 * with waiters, a signal, a post, a futex wake, a barrier arrival)
 * stamps the object's slot with the time and its CPU, just before the
 * wake (and withdraws the stamp when the call failed or woke nobody);
 * a joiner is not stamped: it counts from its return;
 * a waiter that returns from a wait on that object takes the stamp as the
 * moment it was woken.  Slots are a fixed hash table of single 64-bit
 * words (time and a tag of the object): no lock, no allocation, and a
 * collision only costs the precision of one wake-up.
 */
void tdshim_wake_stamp(const void *object);
struct tdshim_stamp {
	uint64_t *slot, before, written;
	uint64_t *slot2, before2, written2; /* a wake of one's slot copy */
};
void tdshim_wake_stamp_keep(const void *object, struct tdshim_stamp *kept);
void tdshim_wake_withdraw(const struct tdshim_stamp *kept);
/* The stamp of `object` after `since` (0: none), and the field naming
 * its waker's CPU, which tdshim_wake_from_other_cpu() compares with this
 * thread's. */
uint64_t tdshim_wake_lookup(const void *object, uint64_t since, unsigned int *waker_cpu, bool *one);
/* The same for wakes of exactly one waiter, kept several per object
 * (runtime/wake.c): the waker's stamp, and the waiter's claim of the
 * earliest one after `since` that nobody claimed (else the latest). */
void tdshim_wake_stamp_one_keep(const void *object, struct tdshim_stamp *kept);
/* The same, and a copy in the object's slot, marked as a wake of one
 * (lookup's `one`): what a claiming waiter whose entry other wakes of its
 * ring overwrote takes instead (runtime/thread.c, wait_woken). */
void tdshim_wake_stamp_one_and_slot_keep(const void *object, struct tdshim_stamp *kept);
uint64_t tdshim_wake_claim(const void *object, uint64_t since, unsigned int *waker_cpu);
/* The earliest stamp of `object` after `since`, claimed or not (a wake of
 * every waiter: wake descriptors, runtime/wrap_fd.c). */
uint64_t tdshim_wake_earliest(const void *object, uint64_t since, unsigned int *waker_cpu);
bool tdshim_wake_from_other_cpu(unsigned int waker_cpu);
/* Waits that may sleep on a default mutex's word inside glibc, where
 * they claim no stamp of the ring (a timed lock; a condvar wait, whose
 * relock sleeps there): while one is in progress on an object of the
 * mutex's ring, the mutex's wakes are stamped in the slot instead
 * (runtime/wake.c).  `object` NULL: nothing counted (not gathering at
 * the start). */
void tdshim_wake_unclaimed_begin(const void *object);
void tdshim_wake_unclaimed_end(const void *const *object);
bool tdshim_wake_all_claim(const void *object);
/* Wake-ups through descriptors (runtime/wrap_fd.c): the key a write to
 * an eventfd, pipe or socket pair stamps for the readers of `fd`, and for
 * an epoll wait on `epfd` (with the event data its wake descriptor was
 * registered with); NULL where no such write is known. */
const void *tdshim_wake_fd_key(int fd);
const void *tdshim_wake_epoll_key(int epfd, uint64_t *data);
bool tdshim_wake_fds_exist(void);
/* A read that took data from a wake descriptor (the readers' next wake
 * is a write after it), and the key its stamp goes under: the wake key's
 * next 4 bytes (runtime/wrap_fd.c). */
void tdshim_wake_fd_drained(int fd);
extern int tdshim_wake_fds_made __attribute__((visibility("hidden")));
static inline void tdshim_wake_fd_read(int fd, ssize_t got)
{
	if (got > 0 && caa_unlikely(CMM_LOAD_SHARED(tdshim_wake_fds_made)))
		tdshim_wake_fd_drained(fd);
}
static inline const void *tdshim_wake_drain_key(const void *key)
{
	return (const char *)key + sizeof(int32_t);
}
/* A pthread call's error number as C11's threads.h result (glibc's
 * thrd_err_map). */
int tdshim_thrd_result(int error);
#define TDSHIM_UNCLAIMED_WAIT(object_)                                                                 \
	const void *tdshim_unclaimed_ __attribute__((cleanup(tdshim_wake_unclaimed_end))) =           \
		tdshim_gathering() ? (const void *)(object_) : NULL;                                   \
	tdshim_wake_unclaimed_begin(tdshim_unclaimed_)
/* A wake stamped on another CPU, or a timer's expiry, that a waiter
 * returns from sooner than these is dated back from the waiter's return by
 * no more than the CPU a sleep takes (runtime/thread.c: late_wake says
 * why). */
#define TDSHIM_REMOTE_WAKE_NS UINT64_C(50000)  /* from another CPU */
#define TDSHIM_LATE_TIMER_NS UINT64_C(250000)  /* a timer's */
/* A timed-out condvar wait whose sleeps were not counted that returns this
 * long after its timer slept to take its mutex back (thread.c, wait_woken;
 * wrap_sync.c, cond_timed_out). */
#define TDSHIM_RELOCK_SLEEP_NS UINT64_C(2000000)
/* The kernel's cap on a readiness wait's timer slack (MAX_SLACK, fs/select.c). */
#define TDSHIM_MAX_POLL_SLACK_NS UINT64_C(100000000)
static inline void tdshim_wake_stamp_if_gathering(const void *object)
{
	if (tdshim_gathering())
		tdshim_wake_stamp(object);
}

/* The kernel's timer slack of this process at start (ns): a timed wait
 * ends up to this much after its deadline, where runtime/thread.c dates
 * its wake; the slack of every thread that has none of its own
 * (struct tdshim_thread, timer_slack_own). */
extern uint64_t tdshim_timer_slack_ns;
/* The kernel's own default slack (init_task's), which a process keeps
 * unless something sets another. */
#define TDSHIM_KERNEL_TIMER_SLACK_NS UINT64_C(50000)
/* A successful PR_SET_TIMERSLACK to `requested` (prctl, or syscall()):
 * the calling thread's timers get that slack from now on (thread.c). */
void tdshim_timer_slack_changed(unsigned long requested);
/* A successful change of scheduling policy (sched_setscheduler,
 * pthread_setschedparam, sched_setattr through syscall()) of thread
 * `tid` of this process (0: the caller); `policy` as the call took it
 * (SCHED_RESET_ON_FORK may be or-ed in).  A real-time or deadline
 * thread's timers get no slack (thread.c). */
void tdshim_sched_changed(pid_t tid, int policy);
/* The same for a thread named by its pthread_t. */
void tdshim_sched_thread_changed(pthread_t thread, int policy);
/* The process's policy at start (the main thread's, and the fallback of
 * threads the shim did not start), read once by runtime/region.c. */
void tdshim_sched_init(void);
/* In a fork child, before the slots start again (thread.c). */
void tdshim_sched_after_fork(void);

/*
 * Set once the process runs under a seccomp filter: one it inherited
 * (PR_GET_SECCOMP at start) or one it installs through libc's prctl()
 * or syscall() (runtime/wrap_sandbox.c, runtime/wrap_futex.c).  From
 * then on the shim makes no system call of its own beyond those every
 * threaded program makes (futex; clock_gettime of the wall clocks, not
 * of the thread CPU clock, which is a system call): a filter that allows
 * what the program uses and kills on the rest must not meet one of the
 * shim's.  A filter installed by an inline system call is not seen.
 */
extern int tdshim_sandboxed;

static inline bool tdshim_in_sandbox(void)
{
	return CMM_LOAD_SHARED(tdshim_sandboxed) != 0;
}

static inline void tdshim_note_sandbox(void)
{
	CMM_STORE_SHARED(tdshim_sandboxed, 1);
}

/* The shim's personality routine (runtime/personality.c): libgcc's, found at start. */
void tdshim_personality_init(void);

/* Record slots (runtime/slots.c). */
struct tdstat_record *tdshim_slot_claim(void);
void tdshim_slot_release(struct tdstat_record *record);
void tdshim_slots_reset_after_fork(void);

/* glibc's semaphore and rwlock layouts, checked at start-up
 * (runtime/wrap_sync.c). */
void tdshim_probe_semaphore_layout(void);
void tdshim_probe_rwlock_layout(void);
/* Another interposer must see every rwlock and semaphore call: no inline
 * read lock or take from here on; with `helgrind_may_watch` (valgrind:
 * helgrind does not intercept sem_trywait and pthread_tryjoin_np),
 * sem_wait and pthread_join run for real. */
void tdshim_sync_pass_through(bool helgrind_may_watch);
/* ... and must not see the shim's own lock-free state as the program's. */
void tdshim_hide_from_race_detectors(const void *start, size_t size);
void tdshim_slots_hide_from_race_detectors(void);
void tdshim_thread_hide_from_race_detectors(void);
void tdshim_wake_hide_from_race_detectors(void);

/*
 * pthread_testcancel, for wrappers whose non-waiting path must act on a
 * pending cancellation as the real call would.  Until some thread has
 * called pthread_cancel no cancellation can be pending, and the call (a
 * third of an uncontended sem_wait) is skipped.  A cancel that sets the
 * flag just after a thread tested it is indistinguishable from one that
 * arrived after the call returned.
 */
extern int tdshim_cancel_requested;
/* sem_wait's inline take: the shim's half of its gate. */
#define tdshim_sem_wait_inline (tdshim_own_region.sync.header.gate_sem_wait.half.shim)
static inline void tdshim_testcancel(void)
{
	if (caa_unlikely(CMM_LOAD_SHARED(tdshim_cancel_requested)))
		pthread_testcancel();
}

/* Thread lifecycle (runtime/thread.c). */
void tdshim_thread_end(void);
void tdshim_thread_adopt(void);
pid_t tdshim_fetch_tid(void);
pid_t tdshim_descriptor_tid(void);

/* getpid(), without a system call once known (runtime/region.c). */
pid_t tdshim_process_id(void);

/* The caller's tid, fetched once per thread (and again in a fork child). */
static inline pid_t tdshim_cached_tid(void)
{
	pid_t tid = tdshim_self.tid;

	return caa_likely(tid != 0) ? tid : tdshim_fetch_tid();
}

/* The tid the shim writes into, and compares with, glibc's own lock
 * fields (a mutex's __owner, an rwlock's __cur_writer): glibc's, so that
 * glibc's unlock of a lock the shim took finds its own thread there. */
static inline pid_t tdshim_lock_tid(void)
{
	pid_t tid = tdshim_self.lock_tid;

	if (caa_likely(tid != 0))
		return tid;
	tdshim_fetch_tid();
	return tdshim_self.lock_tid;
}

/*
 * A wait scope marks the calling thread BLOCKED from its start to its end.
 * The end runs on every way out of the scope, including the unwinding of
 * a cancellation or pthread_exit inside the wait (the shim is compiled with
 * -fexceptions, so the cleanup attribute runs during forced unwinding),
 * and a siglongjmp out of a signal handler that interrupted the wait
 * (runtime/jump.c ends the scope before the jump).
 *
 * Nesting (a signal handler that waits while its thread already waits)
 * changes nothing: only the outermost scope writes the record.
 *
 * The wait's kind, object and call site go into the record.  The moment
 * the wait was woken comes from the wake-up stamps of wake_keys (the
 * objects whose wakers stamp), or from deadline_ns (a sleep or timeout
 * that ran its course: the deadline plus the timer's slack), whichever
 * applies; without either the thread counts as woken when it returns.
 */
struct tdshim_wait_scope {
	uint32_t kind;
	const void *object;
	const void *site;
	const void *wake_keys[2];
	uint64_t deadline_ns;   /* monotonic; 0: none */
	uint64_t timeout_ns;    /* or relative to the wait's start; 0: none */
	bool never_slept;       /* the call returned without sleeping (EAGAIN) */
	bool claims_stamp;      /* wake_keys[0]'s wakers stamp one waiter each */
	bool earliest_stamp;    /* the keys' wakers wake every waiter: the first after the start */
	bool timed_out;         /* the call said its timeout expired */
	bool relock_if_late;    /* wake_keys[1]: only for a return long after the timer */
	uint64_t sample_cpu_ns; /* a sampled wait: the thread's CPU clock ... */
	uint64_t sample_wall_ns; /* ... and the monotonic clock at its start */
	uint64_t sample_read_ns; /* ... and what one read of that CPU clock costs */
	unsigned int sample_lifts; /* ... and the thread's handlers run inside waits then */
};
/* glibc's cleanup buffers of the first kind (pthread_cleanup_push before
 * glibc 2.3.3, exported still and used inside libc; a list in the
 * thread's descriptor, no allocation, no lock): glibc's unwinding
 * runs them in its stop function whatever the frames' personality
 * routines do (thread_entry in thread.c, semaphore_wait_sleeping in
 * wrap_sync.c). */
void _pthread_cleanup_push(struct _pthread_cleanup_buffer *buffer, void (*routine)(void *), void *argument);
void _pthread_cleanup_pop(struct _pthread_cleanup_buffer *buffer, int execute);
void tdshim_wait_begin(struct tdshim_wait_scope *scope);
void tdshim_wait_end(struct tdshim_wait_scope *scope);
/* Ends the outermost scope (NULL: a scope whose frame is gone, with no
 * wake-up to take from it) and every scope nested in it. */
void tdshim_wait_abandon(struct tdshim_thread *self, const struct tdshim_wait_scope *scope);

#define TDSHIM_CALL_SITE() __builtin_extract_return_addr(__builtin_return_address(0))

/*
 * A signal handler that runs while its thread waits (runtime/wrap_handler.c)
 * runs on a CPU: the kernel counts it running, so the thread is RUNNABLE
 * from the handler's start to its return, and BLOCKED again in the same
 * wait after it.  Inside the handler the thread is in no wait of the
 * shim's: a wait the handler makes is an outermost one of its own.
 * `enter` before the program's handler, `leave` after it, also when the
 * handler is left by unwinding (`returned` false: the wait then ends as
 * the unwinding passes its scope); a jump out of the handler leaves the
 * thread RUNNABLE and in no wait, which is where the jump lands.
 */
struct tdshim_lift {
	bool lifted;                           /* the thread was made RUNNABLE */
	bool returned;                         /* the handler returned */
	bool resumed_elsewhere;                /* ... to another instruction or stack */
	unsigned int depth;                    /* the wait's scopes, ... */
	const struct tdshim_wait_scope *scope; /* ... and its outermost, put back */
	uint32_t kind;                         /* the wait the record published */
	const void *object, *site;
};
void tdshim_handler_enter(struct tdshim_lift *lift);
void tdshim_handler_leave(struct tdshim_lift *lift);
/* The lifted wait, left at (pc, sp) by a handler that moved its thread
 * elsewhere, kept; and a kept wait resumed, the thread back at its point. */
void tdshim_handler_park(const struct tdshim_lift *lift, uintptr_t pc, uintptr_t sp);
void tdshim_handler_unpark(void);
/* Whether the caller is the thread whose TLS it sees (not a vfork child:
 * thread.c). */
bool tdshim_caller_owns_tls(void);
/* The caller's tid, from the kernel through libc's syscall() (thread.c). */
pid_t tdshim_kernel_tid(void);

/* A scope for a wait of `kind` on `object`, woken through the stamps of
 * `object` (and of `second_key`, or NULL), called from `site`. */
#define TDSHIM_WAIT_SCOPE_FULL(kind_, object_, second_key_, site_)                             \
	struct tdshim_wait_scope tdshim_scope_ __attribute__((cleanup(tdshim_wait_end))) = {  \
		.kind = (kind_),                                                              \
		.object = (const void *)(object_),                                            \
		.site = (site_),                                                              \
		.wake_keys = { (const void *)(object_), (const void *)(second_key_) },        \
	};                                                                                    \
	tdshim_wait_begin(&tdshim_scope_)

#define TDSHIM_WAIT_SCOPE_AT(kind_, object_, site_) TDSHIM_WAIT_SCOPE_FULL(kind_, object_, NULL, site_)
#define TDSHIM_WAIT_SCOPE(kind_, object_) TDSHIM_WAIT_SCOPE_FULL(kind_, object_, NULL, TDSHIM_CALL_SITE())

/* A wait whose wake-up is not stamped by anyone (I/O, signals, children):
 * the object is only a label. */
#define TDSHIM_WAIT_SCOPE_LABEL(kind_, label_, site_)                                         \
	struct tdshim_wait_scope tdshim_scope_ __attribute__((cleanup(tdshim_wait_end))) = {  \
		.kind = (kind_),                                                              \
		.object = (const void *)(uintptr_t)(label_),                                  \
		.site = (site_),                                                              \
	};                                                                                    \
	tdshim_wait_begin(&tdshim_scope_)

/* Copies a timespec the caller passed, or false when it is unreadable
 * (the real call then fails with EFAULT): never a crash of our own. */
bool tdshim_copy_timespec(const struct timespec *from, struct timespec *to);
/* The same for `size` bytes of anything. */
bool tdshim_copy_in(const void *from, void *to, size_t size);
/* A relative timeout in ns (0 when invalid), from a readable timespec. */
uint64_t tdshim_timespec_ns(const struct timespec *time);

/* Monotonic deadline of a relative timeout, from now (timespec). */
uint64_t tdshim_deadline_after(const struct timespec *timeout);
/* Monotonic deadline of an absolute timeout on `clock`. */
uint64_t tdshim_deadline_at(clockid_t clock, const struct timespec *abstime);

/*
 * The shim's own futex calls: libc's syscall() (tdshim_real_syscall,
 * never the interposed syscall() of runtime/wrap_futex.c), with errno as
 * it was.  The kernel's answer: >= 0, or -errno.  Not a syscall
 * instruction of the shim's own: a program that lets only libc's text
 * make system calls (syscall user dispatch, a seccomp filter on the
 * instruction pointer) would get SIGSYS for a semaphore's sleep or wake,
 * a contended mutex or an rwlock release that work bare
 * (regression.shim.futex_from_libc_text).  Inline at each call: they
 * run on blocking paths, just before or after a context switch, where an
 * out-of-line call that saved and put back errno every time was 0.8% of
 * a one-CPU semaphore ping-pong's samples (perf); libc's syscall()
 * writes errno only when it fails, so only then is it put back.  Every
 * caller runs after initialisation (its path is turned on there), so
 * none initialises here; a missing syscall() is -ENOSYS.
 */
static inline int *tdshim_errno(void);

static inline __attribute__((always_inline)) long tdshim_futex6(void *word, int operation, long value,
								const struct timespec *timeout, long fifth, long sixth)
{
	long (*real)(long, ...) = tdshim_real_syscall;
	int *error = tdshim_errno();
	int saved = *error;
	long result;

	if (caa_unlikely(!real))
		return -ENOSYS;
	result = real(SYS_futex, (long)word, (long)operation, value, (long)timeout, fifth, sixth);
	/* libc's syscall() writes errno only when it fails. */
	if (caa_unlikely(result == -1)) {
		result = -*error;
		*error = saved;
	}
	return result;
}

static inline long tdshim_futex(int *word, int operation, int value, const struct timespec *timeout)
{
	return tdshim_futex6(word, operation, value, timeout, 0, 0);
}

/* The real function, or the caller's "not available" answer when the C
 * library lacks it (an older glibc): pthread-style calls return the error,
 * the others set errno and return -1. */
#define TDSHIM_REQUIRE_PTHREAD(name)                      \
	do {                                              \
		tdshim_ensure_init();                     \
		if (caa_unlikely(!tdshim_real_##name))    \
			return ENOSYS;                    \
	} while (0)
#define TDSHIM_REQUIRE_LIBC(name)                         \
	do {                                              \
		tdshim_ensure_init();                     \
		if (caa_unlikely(!tdshim_real_##name)) {  \
			errno = ENOSYS;                   \
			return -1;                        \
		}                                         \
	} while (0)

/* The clocks glibc's timed waits accept; with any other the real call
 * fails with EINVAL before looking at the object, so no try may come
 * first. */
static inline bool tdshim_clock_supported(clockid_t clock)
{
	return clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC;
}

/* glibc's rwlock and semaphore timed waits reject a bad clock or a bad
 * tv_nsec before looking at the object; such calls go straight to it. */
static inline bool tdshim_abstime_valid(clockid_t clock, const struct timespec *abstime)
{
	return tdshim_clock_supported(clock) && abstime && abstime->tv_nsec >= 0 &&
	       abstime->tv_nsec < 1000000000L;
}

/* glibc's timed rwlock calls take a NULL abstime as "no timeout". */
static inline bool tdshim_rwlock_abstime_valid(clockid_t clock, const struct timespec *abstime)
{
	return tdshim_clock_supported(clock) && (!abstime || tdshim_abstime_valid(clock, abstime));
}

/* This thread's errno, without a call into libc on every use (the
 * location never changes for a thread, across fork included). */
static inline int *tdshim_errno(void)
{
	int *location = tdshim_self.errno_location;

	if (caa_unlikely(!location))
		location = tdshim_self.errno_location = __errno_location();
	return location;
}

/* A timeout the kernel accepts (NULL: none).  With any other the real
 * call fails with EINVAL whatever is ready, so no try may come first. */
static inline bool tdshim_timeout_valid(const struct timespec *timeout)
{
	return !timeout || (timeout->tv_sec >= 0 && timeout->tv_nsec >= 0 && timeout->tv_nsec < 1000000000L);
}

/* errno around a try: a try that fails must not leave its errno behind
 * when the real call then succeeds. */
#define TDSHIM_SAVE_ERRNO() int tdshim_saved_errno_ = *tdshim_errno()
#define TDSHIM_RESTORE_ERRNO() (*tdshim_errno() = tdshim_saved_errno_)

#endif /* TDSHIM_SHIM_H */
