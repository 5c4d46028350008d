/* SPDX-License-Identifier: MIT */
/*
 * The rest of Solaris' libc_db, which glibc's <thread_db.h> lacks: the
 * synchronization objects of the target (docs/CONTRACT.md §9).
 *
 * Names and meanings are Solaris': a td_synchandle_t names one object by
 * its address, td_sync_get_info() says what it is and who holds it,
 * td_sync_waiters() who waits on it, td_thr_sleepinfo() what a thread is
 * blocked on, td_thr_lockowner() what a thread holds, and with tracking
 * on (td_ta_sync_tracking_enable()) td_sync_get_stats() how contended it
 * has been.  The types differ from Solaris' in one way only: every field
 * has a fixed width, times are in nanoseconds (CLOCK_MONOTONIC spans) and
 * counts are 64-bit.  (Solaris' mutex_internal and cond_internal counted
 * libthread's own use of a lock; glibc has no such use to count, and the
 * fields are left out.)
 *
 * Threads are glibc's: td_ta_thr_iter(), td_ta_map_lwp2thr() and
 * td_thr_get_info() keep the prototypes of the system's <thread_db.h> and
 * work over the threads the shim tracks.  A td_thrhandle_t's th_unique is
 * the address of the thread's record in the target; td_thr_get_info()
 * fills ti_ta_p, ti_lid (the kernel thread id), ti_state (TD_THR_SLEEP
 * while the thread is BLOCKED in an interposed call, TD_THR_ACTIVE
 * otherwise), ti_type (TD_THR_USER), ti_ro_area and ti_ro_size (the
 * record), and zeroes the rest: the records do not keep the pthread_t
 * (ti_tid), the start function, the stack or the signal masks.
 *
 * What libc_db knows of an object, with tracking off: the objects a
 * tracked thread is blocked on now (a mutex, rwlock, condvar or semaphore
 * wait), and for each the object's own memory, read through ps_pdread
 * with glibc's layouts: a mutex's lock word, owner (__owner) and
 * recursion count, an rwlock's readers and writer (__cur_writer), a
 * semaphore's value.  With tracking on, also every object in the tracking
 * table.  An address it knows nothing of is TD_SYNC_UNKNOWN.  Condvars
 * and semaphores have waiters but no owner.
 *
 * These calls are in version node TDSTAT_1.3 of libc_db.so (td_ta_sync_table
 * too: it joined before the node was released).  MT-safe as
 * the rest; callbacks run in the caller's thread after libc_db has read
 * what it hands out, and may call libc_db on the same agent.
 */
#ifndef TDSTAT_THREAD_DB_SYNC_H
#define TDSTAT_THREAD_DB_SYNC_H

#include <stdint.h>
#include <thread_db.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The handle of a synchronization object: its agent, and its address in
 * the target. */
typedef struct td_synchandle {
	td_thragent_t *sh_ta_p;
	psaddr_t sh_unique;
} td_synchandle_t;

/* Called by td_ta_sync_iter() and td_thr_lockowner() once per object; a
 * non-zero return stops the iteration (the call still returns TD_OK). */
typedef int td_sync_iter_f(const td_synchandle_t *__sh, void *__cbdata);

typedef enum td_sync_type_e {
	TD_SYNC_UNKNOWN, /* libc_db does not know what lives there */
	TD_SYNC_COND,    /* pthread_cond_t */
	TD_SYNC_MUTEX,   /* pthread_mutex_t */
	TD_SYNC_SEMA,    /* sem_t */
	TD_SYNC_RWLOCK   /* pthread_rwlock_t */
} td_sync_type_e;

#define TD_SV_MAX_FLAGS 4
typedef uint8_t td_sync_flags_t;

/* si_shared_type */
#define TD_SYNC_PRIVATE 0u
#define TD_SYNC_SHARED 1u  /* PTHREAD_PROCESS_SHARED (from the object's memory) */

/*
 * What td_sync_get_info() says of an object, read at the call.  The
 * state fields come from the object's memory and are meaningful for its
 * type only; a field the type does not have is 0.
 */
typedef struct td_syncinfo {
	td_thragent_t *si_ta_p;
	psaddr_t si_sv_addr;            /* the object's address */
	uint32_t si_type;               /* td_sync_type_e */
	uint32_t si_shared_type;        /* TD_SYNC_PRIVATE or TD_SYNC_SHARED */
	td_sync_flags_t si_flags[TD_SV_MAX_FLAGS]; /* 0 (no flags are defined) */
	int32_t si_ownerpid;            /* 0 (a shared object's owning process is not recorded) */
	union _si_un_state {
		int32_t sem_count;      /* TD_SYNC_SEMA: the semaphore's value */
		int32_t nreaders;       /* TD_SYNC_RWLOCK: readers holding it, -1 while write-locked */
		int32_t mutex_locked;   /* TD_SYNC_MUTEX: non-zero while locked */
	} si_state;
	int32_t si_size;                /* sizeof the object's type in the target */
	uint8_t si_has_waiters;         /* non-zero: a tracked thread is blocked on it, or the
					 * object's memory says it has waiters */
	uint8_t si_is_wlock;            /* TD_SYNC_RWLOCK: non-zero while write-locked */
	uint8_t si_rcount;              /* TD_SYNC_MUTEX: recursion count of a locked recursive
					 * mutex, saturated at 255 (si_recursion has it whole) */
	uint8_t si_prioceiling;         /* TD_SYNC_MUTEX: the priority ceiling (PTHREAD_PRIO_PROTECT) */
	td_thrhandle_t si_owner;        /* the mutex's holder or the rwlock's writer, when it is a
					 * tracked thread; else th_unique 0 */
	psaddr_t si_data;               /* 0 */
	/* tdstat's additions, after Solaris' fields. */
	int32_t si_owner_lid;           /* the holder's kernel thread id from the object's memory
					 * (tracked or not); 0: none or not known */
	uint32_t si_nwaiters;           /* tracked threads blocked on it now */
	uint32_t si_recursion;          /* TD_SYNC_MUTEX: the recursion count */
	uint32_t si_tracked;            /* non-zero: the tracking table holds it */
} td_syncinfo_t;

/*
 * Per-object statistics (td_sync_get_stats(), tracking on): Solaris'
 * fields, by their names, 64-bit.  Counts are exact; *_time fields are
 * nanoseconds: a sleep time is the time threads spent blocked in the call
 * on that object, a hold time the time from a successful lock (or write
 * lock) to its unlock.
 */
typedef struct {
	uint64_t mutex_lock;            /* successful pthread_mutex_lock and timedlock calls */
	uint64_t mutex_sleep;           /* of those, the ones that blocked */
	uint64_t mutex_sleep_time;
	uint64_t mutex_hold_time;
	uint64_t mutex_try;             /* pthread_mutex_trylock calls */
	uint64_t mutex_try_fail;        /* of those, the ones that found it held */
} td_mutex_stats_t;

typedef struct {
	uint64_t cond_wait;             /* pthread_cond_wait calls */
	uint64_t cond_timedwait;        /* pthread_cond_timedwait (and clockwait) calls */
	uint64_t cond_wait_sleep_time;
	uint64_t cond_timedwait_sleep_time;
	uint64_t cond_timedwait_timeout; /* timed waits that ended by timing out */
	uint64_t cond_signal;
	uint64_t cond_broadcast;
} td_cond_stats_t;

typedef struct {
	uint64_t rw_rdlock;
	uint64_t rw_rdlock_sleep;
	uint64_t rw_rdlock_sleep_time;
	uint64_t rw_rdlock_try;
	uint64_t rw_rdlock_try_fail;
	uint64_t rw_wrlock;
	uint64_t rw_wrlock_sleep;
	uint64_t rw_wrlock_sleep_time;
	uint64_t rw_wrlock_hold_time;
	uint64_t rw_wrlock_try;
	uint64_t rw_wrlock_try_fail;
} td_rwlock_stats_t;

typedef struct {
	uint64_t sema_wait;
	uint64_t sema_wait_sleep;
	uint64_t sema_wait_sleep_time;
	uint64_t sema_trywait;
	uint64_t sema_trywait_fail;
	uint64_t sema_post;
	uint64_t sema_max_count;        /* the highest value seen */
	uint64_t sema_min_count;        /* the lowest value seen */
} td_sema_stats_t;

/* What td_sync_get_stats() fills: the object's info and, by ss_info.si_type,
 * one member of ss_un. */
typedef struct td_syncstats {
	td_syncinfo_t ss_info;
	union {
		td_mutex_stats_t mutex;
		td_cond_stats_t cond;
		td_rwlock_stats_t rwlock;
		td_sema_stats_t sema;
		uint64_t pad[32];       /* room to grow */
	} ss_un;
} td_syncstats_t;

/*
 * The tracking table as a whole (td_ta_sync_table()): how many objects it
 * can hold, how many it holds, and how many calls found no room in it.
 * The table is fixed in size (4,096 entries in this shim) and its entries
 * are never freed while the process lives, so once it is full the objects
 * a program uses afterwards are not tracked: their calls are counted
 * nowhere, and st_overflow counts the lookups that found no room, once
 * each time a thread turns to such an object (its next calls on the same
 * object are not looked up again): one thread's untracked objects count
 * once each; a thread that alternates between two counts each return.
 */
typedef struct td_sync_table {
	uint32_t st_capacity;           /* entries: objects the table can hold */
	uint32_t st_probes;             /* entries a lookup tries from the object's hash */
	uint64_t st_used;               /* entries claimed: objects tracked */
	uint64_t st_overflow;           /* lookups that found no entry: objects not tracked */
	uint32_t st_tracking;           /* non-zero: tracking is on */
	uint32_t st_pad;                /* 0 */
	uint64_t st_spare[4];           /* 0: room to grow */
} td_sync_table_t;

/*
 * Turns per-object tracking on (non-zero) or off in the target, by writing
 * its control block as td_ta_enable_stats does.  Errors: TD_BADTA,
 * TD_DBERR (a ps_* routine failed), TD_NOCAPAB (the shim in the target has
 * no tracking table).
 */
extern td_err_e td_ta_sync_tracking_enable(const td_thragent_t *__ta, int __on_off);

/*
 * Hands each object libc_db knows of to cb once: every object in the
 * tracking table, and every object a tracked thread is blocked on now
 * (tracking on or off).  Errors: TD_BADTA, TD_ERR (cb NULL), TD_DBERR,
 * TD_MALLOC.
 */
extern td_err_e td_ta_sync_iter(const td_thragent_t *__ta, td_sync_iter_f *__cb, void *__cbdata);

/*
 * The tracking table's capacity, use and overflow (td_sync_table_t), with
 * tracking on or off (what was counted while on stays).  Errors:
 * TD_BADTA, TD_ERR (table NULL), TD_DBERR, TD_NOCAPAB (the shim in the
 * target has no tracking table).
 */
extern td_err_e td_ta_sync_table(const td_thragent_t *__ta, td_sync_table_t *__table);

/*
 * The object's type, address and state now (see td_syncinfo_t).
 * Errors: TD_BADTA (sh's agent), TD_BADSH (sh NULL or its address 0),
 * TD_ERR (si NULL), TD_DBERR (a ps_* routine failed: the object's memory
 * cannot be read), TD_MALLOC.
 */
extern td_err_e td_sync_get_info(const td_synchandle_t *__sh, td_syncinfo_t *__si);

/*
 * The object's info and its statistics from the tracking table.  Errors
 * as td_sync_get_info(), and TD_NOCAPAB when tracking is off, TD_NOSV
 * when the table does not hold the object.
 */
extern td_err_e td_sync_get_stats(const td_synchandle_t *__sh, td_syncstats_t *__ss);

/*
 * Calls cb with the handle of each tracked thread blocked on the object
 * now; a non-zero return stops the calls.  Errors: TD_BADTA, TD_BADSH,
 * TD_ERR (cb NULL), TD_DBERR, TD_MALLOC.
 */
extern td_err_e td_sync_waiters(const td_synchandle_t *__sh, td_thr_iter_f *__cb, void *__cbdata);

/*
 * Calls cb with each object libc_db knows of (as td_ta_sync_iter) that
 * the thread holds: a mutex whose owner is its kernel thread id, an
 * rwlock it has write-locked.  Read locks, condvars and semaphores have
 * no owner.  Errors: TD_BADTA, TD_BADTH (not a thread handle of this
 * agent), TD_NOTHR (the thread has ended), TD_ERR (cb NULL), TD_DBERR,
 * TD_MALLOC.
 */
extern td_err_e td_thr_lockowner(const td_thrhandle_t *__th, td_sync_iter_f *__cb, void *__cbdata);

/*
 * The object the thread is blocked on now: a mutex, rwlock, condvar or
 * semaphore.  TD_ERR, and *sh zeroed, when it is not blocked on one (it
 * runs, or waits in another kind of call: sleep, I/O, join, ...).  Errors
 * also: TD_BADTA, TD_BADTH, TD_NOTHR, TD_DBERR.
 */
extern td_err_e td_thr_sleepinfo(const td_thrhandle_t *__th, td_synchandle_t *__sh);

#ifdef __cplusplus
}
#endif

#endif /* TDSTAT_THREAD_DB_SYNC_H */
