/* SPDX-License-Identifier: MIT */
/*
 * tdstat's addition to <thread_db.h>: the 64-bit statistics call.
 *
 * td_ta_get_stats() reports averages as int fractions over the window; this
 * call gives the raw integrals in nanoseconds, so a tool can compute the
 * averages over any interval from two snapshots without resetting the
 * target: for snapshots a and b of the same window (equal window_start_ns),
 * the average number of RUNNABLE threads over [a, b] is
 * (b.runnable_ns - a.runnable_ns) / (b.counted_ns - a.counted_ns).
 *
 * The snapshot's window ends when it is taken (window_start_ns +
 * window_ns); averages between two snapshots divide by the growth of
 * counted_ns, up to which the threads are counted, which never goes
 * down within a window.  window_ns may: a snapshot taken while a
 * disable is under way ends its open window at its own clock, later
 * than the disable's, which ends the window for the next one.  A thread woken from a wait counts as runnable from the
 * wake-up, which it learns only when it runs again: a wait's last
 * TDSTAT_COMMIT_LAG_NS (10 ms) are not final, so a thread still waiting
 * counts as idle only up to that long before the snapshot, and a short
 * interval may show fewer LWPs than threads (docs/READER.md).
 *
 * Everything else libc_db offers is declared by the system's <thread_db.h>,
 * with glibc's exact prototypes.
 */
#ifndef TDSTAT_THREAD_DB_STATS_H
#define TDSTAT_THREAD_DB_STATS_H

#include <stdint.h>
#include <thread_db.h>

#include <tdstat/region.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Filled by td_ta_get_stats_ns().  The caller sets `size` to
 * sizeof(td_ta_stats_ns_t) first; the library fills at most that many bytes
 * and sets `size` to the number it filled, so the struct can grow.
 */
typedef struct td_ta_stats_ns {
	uint32_t size;
	uint32_t enabled;          /* 1 while gathering is on */
	int32_t nthreads;          /* threads alive now, overflow included */
	int32_t r_concurrency;     /* last pthread_setconcurrency value */
	uint32_t overflow_threads; /* alive threads the shim had no record for */
	uint32_t abi_minor;        /* of the shim in the target */
	uint64_t window_start_ns;  /* CLOCK_MONOTONIC start of the window */
	uint64_t window_ns;        /* |W|: to now, or to the disable */
	uint64_t lwps_ns;          /* integral of tracked threads over W */
	uint64_t runnable_ns;      /* integral of RUNNABLE threads over W */
	uint64_t idle_ns;          /* lwps_ns - runnable_ns */
	uint64_t cpu_ns;           /* process CPU time used during W */
	uint64_t running_ns;       /* min(cpu_ns, runnable_ns) */
	uint64_t snapshot_ns;      /* CLOCK_MONOTONIC when the snapshot was taken */
	/* Second version: the blocked time by wait kind. */
	uint32_t kinds;            /* entries of idle_by_kind_ns filled (TDSTAT_WAIT_KIND_COUNT) */
	uint32_t reserved0;
	uint64_t idle_by_kind_ns[TDSTAT_WAIT_KIND_COUNT]; /* by enum tdstat_wait_kind; sum: idle_ns */
	/* Third version: the wall-clock anchor (a shim of ABI 2.1 or later).
	 * CLOCK_REALTIME when the window began, so a stamp t of this struct
	 * (window_start_ns, snapshot_ns) was at wall-clock time
	 * window_start_realtime_ns + (t - window_start_ns); 0: unknown (a
	 * shim of ABI 2.0 has no anchor). */
	uint64_t window_start_realtime_ns;
	/* Fourth version: how far into the window the threads are counted.
	 * A thread's current state counts up to the reader's clock before it
	 * read that thread's record (less TDSTAT_COMMIT_LAG_NS for a wait);
	 * window_start_ns + counted_ns is the mean of those clocks over the
	 * live threads, while window_ns ends at the clock after all the
	 * reads.  counted_ns <= window_ns.  The average number of LWPs
	 * (or runnable, or idle threads) between two snapshots a and b of a
	 * window is (b.lwps_ns - a.lwps_ns) / (b.counted_ns - a.counted_ns):
	 * dividing by the growth of window_ns instead mixes in how long
	 * each snapshot's reads took, which can make LWPs exceed the threads
	 * over a short interval.  0 from a library of an earlier version
	 * (size does not cover it). */
	uint64_t counted_ns;
} td_ta_stats_ns_t;

/* The names of the wait kinds, the keys of idle_by_kind_ns ("mutex",
 * "rwlock", "cond", "sem", "barrier", "join", "futex", "sleep", "io",
 * "child", "signal"); NULL past the last. */
extern const char *td_wait_kind_name(unsigned int __kind);

/* Errors as td_ta_get_stats(); TD_ERR also when stats->size is smaller
 * than the first version of this struct (everything up to snapshot_ns).
 * A size that covers idle_by_kind_ns asks for the kinds too (a snapshot
 * that also reads the records' details); one that covers
 * window_start_realtime_ns gets the anchor; one that covers counted_ns
 * gets that figure. */
extern td_err_e td_ta_get_stats_ns(const td_thragent_t *__ta, td_ta_stats_ns_t *__stats);

/*
 * Version node TDSTAT_1.2: the tracked threads one by one, in the spirit
 * of td_ta_thr_iter (docs/CONTRACT.md §5).
 *
 * One thread as td_ta_thr_stats_iter() hands it out.  The library fills
 * the struct as it knows it and sets `size` to its own sizeof; a caller
 * built against a later, larger struct reads a field only when `size`
 * covers it.  Times are the record's integrals in the window, by the
 * rules of td_ta_get_stats_ns: over every record the call hands out,
 * lwps_ns, runnable_ns and each idle_by_kind_ns add up to the process's
 * figures that the same call returns.
 *
 * A record is the shim's slot for one thread at a time; a thread that
 * ends gives its slot back for a later thread to claim (`generation`
 * then changes).  Its integrals cover every owner the slot had in the
 * window, the ended ones included: a slot whose last owner ended is
 * handed out with state TDSTAT_STATE_FREE and tid 0 while its time still
 * counts in the window.
 */
typedef struct td_thr_stats_ns {
	uint32_t size;             /* sizeof(td_thr_stats_ns_t) of the library */
	uint32_t state;            /* enum tdstat_thread_state, now */
	int32_t tid;               /* kernel thread id; 0 before it first ran, or FREE */
	uint32_t kind;             /* BLOCKED: enum tdstat_wait_kind of the wait it is in;
				    * otherwise, or in a newer shim's kind that this
				    * library does not name, TDSTAT_WAIT_KIND_COUNT */
	uint32_t record;           /* the slot's index in the shim's region */
	uint32_t generation;       /* changes each time the slot gets a new owner */
	uint64_t object;           /* BLOCKED: what it waits on (the mutex, condvar,
				    * semaphore, futex word address; the fd for io); else 0 */
	uint64_t site;             /* BLOCKED: return address of the interposed call it
				    * waits in (an address in its caller); else 0 */
	uint64_t since_ns;         /* CLOCK_MONOTONIC of its last change of state */
	uint64_t lwps_ns;          /* tracked time in the window */
	uint64_t runnable_ns;      /* RUNNABLE time in the window */
	uint64_t idle_ns;          /* lwps_ns - runnable_ns */
	uint32_t kinds;            /* entries of idle_by_kind_ns (TDSTAT_WAIT_KIND_COUNT); 0
				    * when the thread spent time in a newer shim's kind
				    * (the process figures share it out, docs/READER.md
				    * "Minors"): then the threads' kinds need not add up
				    * to the process's */
	uint32_t reserved0;
	uint64_t idle_by_kind_ns[TDSTAT_WAIT_KIND_COUNT]; /* sum: idle_ns */
} td_thr_stats_ns_t;

/* Called once per record; a non-zero return stops the calls (the walk
 * still completes, so *stats stays whole). */
typedef int td_thr_stats_iter_f(const td_thr_stats_ns_t *__thr, void *__cbdata);

/*
 * Hands every record in use (and every free one whose time still counts
 * in the window) to `cb`, from one snapshot, and fills *stats (unless
 * NULL; its `size` as for td_ta_get_stats_ns) with the process's figures
 * from that same snapshot.  MT-safe; the callback runs in the caller's
 * thread and must not call libc_db on the same agent.
 *
 * Errors as td_ta_get_stats_ns(): TD_BADTA, TD_ERR (cb NULL, or
 * stats->size too small), TD_DBERR (a ps_* routine failed, or the region
 * is corrupted), TD_MALLOC.  An error may come after some records were
 * handed out: the caller discards them.
 */
extern td_err_e td_ta_thr_stats_iter(const td_thragent_t *__ta, td_thr_stats_iter_f *__cb, void *__cbdata,
				     td_ta_stats_ns_t *__stats);

#ifdef __cplusplus
}
#endif

#endif /* TDSTAT_THREAD_DB_STATS_H */
