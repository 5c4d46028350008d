/* SPDX-License-Identifier: MIT */
/*
 * The shared region: the ABI between libtdshim.so (the writer, inside the
 * target process) and libc_db.so (the reader, in a controlling process).
 *
 * One exported data symbol, TDSTAT_REGION_SYMBOL, of type
 * struct tdstat_region, 64-byte aligned, leads to everything.  It holds no
 * pointers: a reader copies it with ps_pdread and validates every size,
 * count and offset.  docs/READER.md is the reader's algorithm.
 *
 * Versioning: a reader accepts a region whose abi_major equals its own.  A
 * minor version only appends fields (to the header, to a record, to a
 * detail) and never moves one; the layout table says where every field
 * is and how big each struct is, so a reader of a newer minor reads the
 * fields it knows, and a reader of an older minor reports what is missing
 * as absent.  Major 2 replaced major 1's sequence lock by the latch below:
 * a major-1 reader cannot read it safely, hence the new major.
 *
 * Time is CLOCK_MONOTONIC in nanoseconds, the same clock in every process
 * of the machine, so a controller can stamp a window start that the
 * target's threads compare with their own clock readings.
 *
 * Writers and what they may write:
 *   - each record and its detail: only the thread that owns it (single
 *     writer), by the latch rule below;
 *   - the control block: only a controller (through ps_pdwrite), or the
 *     shim itself at process start and in a fork child;
 *   - the status block: the shim, with atomic operations, on thread
 *     creation and exit only (never on a fast path).
 */
#ifndef TDSTAT_REGION_H
#define TDSTAT_REGION_H

#include <stddef.h>
#include <stdint.h>

#define TDSTAT_REGION_SYMBOL "tdstat_region"
#define TDSTAT_SHIM_SONAME "libtdshim.so"

/* "tdstatR\x01" read as a little-endian 64-bit number. */
#define TDSTAT_REGION_MAGIC UINT64_C(0x0152746174736474)
/* "tdstatE\x01": a copy of the shim that stood down because another copy
 * was preloaded first; header.elsewhere is the address of the region in
 * use (in the same process).  Nothing else of its region is written. */
#define TDSTAT_REGION_MAGIC_ELSEWHERE UINT64_C(0x0145746174736474)
#define TDSTAT_ABI_MAJOR 2
#define TDSTAT_ABI_MINOR 3

/*
 * What each minor of major 2 added, so a reader knows what an older
 * region lacks (and reports it as absent):
 *   2.0  everything not listed below;
 *   2.1  control.realtime_offset_ns, the wall-clock anchor (the field was
 *        reserved, and zero, in 2.0);
 *   2.2  header.sync_offset and header.sync_size (in 2.1's padding, zero
 *        there): the per-object tracking block, struct tdstat_sync below;
 *   2.3  header.changes_offset (in 2.2's padding, zero there): the change
 *        marks, one word per record that moves whenever the record does,
 *        so that a reader reads only the records that moved (below).
 * The sizes of 2.0, the least a region of this major holds: */
#define TDSTAT_ABI_2_0_HEADER_SIZE 320u
#define TDSTAT_ABI_2_0_LAYOUT_SIZE 48u

/* Records in the region: the most threads tracked at once.  Past it,
 * threads are counted in status.overflow_live and not integrated. */
#define TDSTAT_RECORD_CAPACITY 32768u

/* control.window_end_ns while gathering is on. */
#define TDSTAT_WINDOW_OPEN UINT64_MAX

/*
 * How far back a thread may date the end of a wait when it commits it:
 * a waiter that was woken (its lock handed over, its condvar signalled,
 * its timeout reached) becomes RUNNABLE at the moment of the wake-up,
 * which it learns only once it runs again.  Readers leave the last L of
 * a wait still open (header.commit_lag_ns) out of every figure until it
 * is final, so no commit changes what a reader already reported:
 * integrals never decrease.  A wait whose wake-up lies further back than
 * L counts as blocked until L before its end.
 */
#define TDSTAT_COMMIT_LAG_NS UINT64_C(10000000)

/* record state */
enum tdstat_thread_state {
	TDSTAT_STATE_FREE = 0,     /* slot not in use */
	TDSTAT_STATE_RUNNABLE = 1, /* tracked, not waiting in an interposed call */
	TDSTAT_STATE_BLOCKED = 2,  /* tracked, waiting in an interposed call */
};

/*
 * Wait kinds, the keys of every per-kind figure (docs/CONTRACT.md §2).  One list,
 * expanded wherever kinds are needed: X(ENUM_SUFFIX, name).
 */
#define TDSTAT_WAIT_KINDS(X)            \
	X(MUTEX, "mutex")               \
	X(RWLOCK, "rwlock")             \
	X(COND, "cond")                 \
	X(SEM, "sem")                   \
	X(BARRIER, "barrier")           \
	X(JOIN, "join")                 \
	X(FUTEX, "futex")               \
	X(SLEEP, "sleep")               \
	X(IO, "io")                     \
	X(CHILD, "child")               \
	X(SIGNAL, "signal")

enum tdstat_wait_kind {
#define TDSTAT_KIND_ENUM(suffix, name) TDSTAT_WAIT_##suffix,
	TDSTAT_WAIT_KINDS(TDSTAT_KIND_ENUM)
#undef TDSTAT_KIND_ENUM
	TDSTAT_WAIT_KIND_COUNT
};

/*
 * The latch (a single-writer, two-copy protocol: every copy a reader is
 * pointed at is complete, whatever the writer does).
 *
 * A record holds two copies of the thread's state; copy[seq & 1] is the
 * published one, and the record's detail holds two copies published by
 * the same seq.  The owner changes its state so:
 *
 *   1. if the change closes time in the window: pending_ns = T (its
 *      clock), a full barrier, its clock again; if more than
 *      header.stall_ns passed (it was preempted, stopped or interrupted
 *      between the read and the store), T = that later time, repeat (a
 *      few times at most); T is after the published since_ns;
 *   2. writes the new state into the unpublished copies (the record's
 *      and the detail's), computed from the published ones, with T as
 *      the moment of the change;
 *   3. a write barrier, then seq + 1: the new copies are published.
 *
 * A writer stopped, killed or abandoned (siglongjmp, asynchronous
 * cancellation) anywhere in 1-3 never touched the published copies, and
 * its next change starts again from them.  A reader copies the record,
 * copies it again, and keeps copy[seq & 1] when seq and that copy are the
 * same in both.
 *
 * Reading the open interval: the published copy is in `state` since
 * since_ns.  When pending_ns > since_ns a change at or after pending_ns is
 * under way, so the open interval may be extended only up to pending_ns;
 * a BLOCKED one only up to TDSTAT_COMMIT_LAG_NS before that (or before
 * the reader's clock), the part a commit may still date a wake-up into.
 * Step 1 re-reads the clock after its store so that a reader that saw no
 * pending change extended the interval no further than the time the
 * writer then commits.  See docs/READER.md for the complete rule.
 *
 * Integrals: acc_tracked_ns, acc_runnable_ns (and the detail's per-kind
 * acc_idle_ns) are the time of all closed intervals of this slot (across
 * the threads that used it) inside the window starting at epoch_ns.  When
 * epoch_ns differs from control.window_start_ns they belong to an older
 * window and count as zero, and the open interval counts from the
 * window's start.
 */
/* The default stall bound; a writer whose clock reads take longer (no
 * vDSO clock source) publishes a larger one in header.stall_ns. */
#define TDSTAT_STALL_NS UINT64_C(1000)

/*
 * The fields of a record's copies, listed once: X(type, name, dims), dims
 * empty or an array's [count].  From these lists come the structs, the
 * layout table (an offset for every field, in this order) and its
 * description, the reader's check that every field fits in the copy the
 * layout describes, and the tests' pinned offsets.  A minor version
 * appends to a list (and the layout table grows with it).
 */
/* One copy of a record's state: 48 bytes. */
#define TDSTAT_RECORD_COPY_FIELDS(X)    \
	X(uint32_t, state, )            \
	X(uint32_t, kind, )             \
	X(int32_t, tid, )               \
	X(uint32_t, generation, )       \
	X(uint64_t, epoch_ns, )         \
	X(uint64_t, since_ns, )         \
	X(uint64_t, acc_tracked_ns, )   \
	X(uint64_t, acc_runnable_ns, )

/* One copy of a record's detail: 128 bytes. */
#define TDSTAT_DETAIL_COPY_FIELDS(X)    \
	X(uint64_t, object, )           \
	X(uint64_t, site, )             \
	X(uint64_t, woken_ns, )         \
	X(uint64_t, acc_idle_ns, [TDSTAT_WAIT_KIND_COUNT])

#define TDSTAT_FIELD_DECLARE(type, name, dims) type name dims;
/* The size of a field of a list: sizeof(type dims). */
#define TDSTAT_FIELD_SIZE(type, dims) sizeof(type dims)

/* state: enum tdstat_thread_state.  kind: enum tdstat_wait_kind of the
 * current wait (BLOCKED only).  tid: kernel thread id, 0 until the thread
 * first runs.  generation: bumped each time the slot is claimed. */
struct tdstat_record_copy {
	TDSTAT_RECORD_COPY_FIELDS(TDSTAT_FIELD_DECLARE)
};

/* object: address the current wait is on (mutex, condvar, semaphore,
 * futex word, fd number for io); site: the return address of the
 * interposed call; woken_ns: moment the last wait was woken (0 if
 * unknown); acc_idle_ns: blocked time by kind, as acc_tracked_ns. */
struct tdstat_detail_copy {
	TDSTAT_DETAIL_COPY_FIELDS(TDSTAT_FIELD_DECLARE)
	uint64_t reserved[2];
};

/* Two cache lines; the latch's seq and pending_ns lead. */
struct tdstat_record {
	uint32_t seq;         /* copy[seq & 1] (and detail copy[seq & 1]) is published */
	uint32_t reserved0;
	uint64_t pending_ns;  /* > published since_ns: a change at >= this time is under way */
	struct tdstat_record_copy copy[2];
	uint64_t reserved[2];
};

struct tdstat_detail {
	struct tdstat_detail_copy copy[2];
};

/*
 * Written by a controller (and by the shim at start and in a fork child).
 * Every intermediate state of the documented write orders is a valid
 * (possibly empty) window:
 *   enable at T:            window_start_ns = T, cpu_start, then window_end_ns = OPEN
 *   disable at T:           cpu_end, then window_end_ns = T
 *   reset at T, enabled:    cpu_start, window_start_ns = T
 *   reset at T, disabled:   window_start_ns = T, window_end_ns = T
 * A disable's T is the controller's clock, read once `rewriting` is set:
 * after everything a reader of the open window counted.  A wait's last L
 * (commit_lag_ns) before T are final only L later, so the disable returns
 * once L and the reader's margin have passed; from then on every reader
 * reads the frozen figures (docs/READER.md, "Control writes").
 * Gathering is on exactly while window_end_ns == TDSTAT_WINDOW_OPEN.
 * Since minor 1 whoever starts a window (enable, reset, the shim at start
 * and in a fork child) also writes realtime_offset_ns, CLOCK_REALTIME -
 * CLOCK_MONOTONIC read together with the window's start (before
 * window_start_ns, inside the rewrite): window_start_ns + it is the
 * wall-clock time the window began, and any monotonic stamp of the
 * region converts the same way (a core's, say).  It is an offset rather
 * than a wall-clock time so that a window started by a controller of
 * minor 0, which leaves it alone, still gets a right (if older) anchor.
 * 0: unknown; in a region of minor 0 the field is reserved: ignore it.
 * generation is bumped after each change so a reader can tell that the
 * block it copied was not being rewritten; a controller also sets
 * `rewriting` before its first write and clears it after its last, so a
 * reader never pairs one window's start with another's CPU clock.
 */
struct tdstat_control {
	uint64_t window_start_ns;
	uint64_t window_end_ns;
	uint64_t cpu_start_ns; /* process CPU clock at window start */
	uint64_t cpu_end_ns;   /* process CPU clock at window end (disabled) */
	uint64_t generation;
	int32_t r_concurrency; /* pthread_setconcurrency / td_ta_setconcurrency */
	uint32_t reserved0;
	uint64_t rewriting;    /* 1 while a controller rewrites the block (its first
				* and last writes): readers wait for it, bounded */
	int64_t realtime_offset_ns; /* 2.1: the wall-clock anchor, below */
};

/* Written by the shim on thread creation and exit, never on a fast path. */
struct tdstat_status {
	uint32_t high_water;      /* records[0, high_water) have been used */
	uint32_t capacity;        /* records this process may use (<= record_capacity) */
	uint32_t overflow_live;   /* threads alive now that found no free record */
	uint32_t reserved0;
	uint64_t overflow_total;  /* threads ever refused a record */
	uint64_t start_ns;        /* shim start (process start, or fork) */
	uint64_t exit_ns;         /* process exit began (exit()), 0 before */
	int32_t pid;              /* process that owns this copy of the region */
	uint32_t reserved1;
	uint64_t reserved[2];
};

/*
 * Where everything is: offsets of the blocks in the header and of every
 * field a reader of ABI major 2 uses in a record copy and a detail copy,
 * and the sizes of the copies.  A later minor appends entries; readers
 * check layout_size before using one.
 */
struct tdstat_layout {
	uint16_t control_offset;
	uint16_t status_offset;
	uint16_t record_seq;
	uint16_t record_pending;
	uint16_t record_copies;      /* offset of copy[0] in a record */
	uint16_t record_copy_size;   /* sizeof(struct tdstat_record_copy) */
	uint16_t detail_copies;      /* offset of copy[0] in a detail */
	uint16_t detail_copy_size;   /* sizeof(struct tdstat_detail_copy) */
#define TDSTAT_LAYOUT_DECLARE(type, name, dims) uint16_t name;
	/* offsets inside a record copy */
	TDSTAT_RECORD_COPY_FIELDS(TDSTAT_LAYOUT_DECLARE)
	/* offsets inside a detail copy */
	TDSTAT_DETAIL_COPY_FIELDS(TDSTAT_LAYOUT_DECLARE)
#undef TDSTAT_LAYOUT_DECLARE
	uint16_t kind_count;         /* entries in acc_idle_ns */
	uint16_t reserved[3];
};

struct tdstat_region_header {
	uint64_t magic;
	uint16_t abi_major;
	uint16_t abi_minor;
	uint32_t header_size;     /* sizeof(struct tdstat_region_header) */
	uint64_t region_size;     /* everything a reader may read, from the start */
	uint32_t records_offset;  /* from the start of the region */
	uint32_t record_size;
	uint32_t record_capacity; /* records (and details) in the arrays */
	uint32_t layout_size;     /* sizeof(struct tdstat_layout) */
	uint32_t details_offset;  /* from the start of the region */
	uint32_t detail_size;
	uint64_t commit_lag_ns;   /* TDSTAT_COMMIT_LAG_NS of this writer */
	struct tdstat_layout layout;
	uint64_t elsewhere;       /* with TDSTAT_REGION_MAGIC_ELSEWHERE only */
	uint64_t stall_ns;        /* this writer's TDSTAT_STALL_NS (step 1), >= the default */
	uint32_t sync_offset;     /* 2.2: struct tdstat_sync, from the start; 0: none */
	uint32_t sync_size;       /* 2.2: its size (header and entries) */
	uint32_t changes_offset;  /* 2.3: the change marks (below), from the start; 0: none */
	uint32_t reserved2;
	uint8_t pad0[56];        /* control starts on its own cache line */
	struct tdstat_control control; /* own cache line: read on slow paths */
	struct tdstat_status status;   /* own cache line: written on create/exit */
};

/*
 * Per-object tracking of synchronization objects (ABI 2.2,
 * docs/CONTRACT.md §9): Solaris' td_ta_sync_tracking_enable and
 * td_sync_get_stats.  Off by default; then nothing but the gates below is
 * ever read and no path costs anything: the gates are the very words the
 * shim's inline paths compare already.
 *
 * A gate is one 32-bit word: the low half the shim's own (which inline
 * path applies: written by the shim at start only), the high half the
 * controller's (nonzero: tracking on).  An inline path runs only while
 * the whole word holds its "inline" value, so a controller that sets the
 * high half of every gate sends every call of a tracked family to the
 * shim's tracked paths, without the target's cooperation.  The tracked
 * paths then count only while `control` says on.
 *
 * control: bit 0 on; bits 1-63 the epoch, bumped by every enable.  A
 * controller enables by writing control (epoch + 1, on), then the high
 * half of each gate; it disables by clearing the gates' high halves, then
 * bit 0 of control.  Hold times are sampled (one lock in hold_sample,
 * per object, by its count); a hold started in another epoch is never
 * counted, so a lock taken before an enable never adds its hold.
 *
 * The table: open addressing keyed by `key` (the object's address with
 * its type in the low three bits), `capacity` entries (a power of two),
 * claimed by CAS from 0 at the first tracked call on the object; a probe
 * goes at most `probes` entries from the object's hash.  A lookup that
 * finds no entry is counted in `overflow`, never a crash: once each time
 * a thread turns to such an object (the thread remembers the last object
 * it looked up, found or not, so its next calls on it are neither looked
 * up nor counted again until it turns to another).  One thread's
 * objects are thus each counted once however often it calls them; a
 * thread that alternates between objects counts each return.  Entries are never freed (a process that
 * makes and destroys objects without end fills the table: overflow).
 *
 * Counters are 64-bit words updated in place: by an atomic add, or, for
 * the counts only a lock's holder changes (a mutex's, a write lock's), by
 * the holder alone with a plain store.  A reader copies the table twice
 * and takes, field by field, the smaller value: a counter only grows, and
 * a copy that tore a word as it changed read it too high, never too low.
 * Entries only grow in later minors (entry_size says how big).
 */
enum tdstat_sync_type {
	TDSTAT_SYNC_NONE = 0,
	TDSTAT_SYNC_MUTEX = 1,
	TDSTAT_SYNC_COND = 2,
	TDSTAT_SYNC_RWLOCK = 3,
	TDSTAT_SYNC_SEMA = 4,
};
#define TDSTAT_SYNC_TYPE_MASK UINT64_C(7)

/* The counters of an entry, by type: X(type, Solaris field name, index
 * into count[]).  The hold times (mutex_hold_time, rw_wrlock_hold_time)
 * are not counters: a reader computes them from the samples. */
#define TDSTAT_SYNC_MUTEX_COUNTS(X)                  \
	X(MUTEX, mutex_lock, 0)                      \
	X(MUTEX, mutex_sleep, 1)                     \
	X(MUTEX, mutex_sleep_time, 2)                \
	X(MUTEX, mutex_try, 3)                       \
	X(MUTEX, mutex_try_fail, 4)
#define TDSTAT_SYNC_COND_COUNTS(X)                   \
	X(COND, cond_wait, 0)                        \
	X(COND, cond_timedwait, 1)                   \
	X(COND, cond_wait_sleep_time, 2)             \
	X(COND, cond_timedwait_sleep_time, 3)        \
	X(COND, cond_timedwait_timeout, 4)           \
	X(COND, cond_signal, 5)                      \
	X(COND, cond_broadcast, 6)
#define TDSTAT_SYNC_RWLOCK_COUNTS(X)                 \
	X(RWLOCK, rw_rdlock, 0)                      \
	X(RWLOCK, rw_rdlock_sleep, 1)                \
	X(RWLOCK, rw_rdlock_sleep_time, 2)           \
	X(RWLOCK, rw_rdlock_try, 3)                  \
	X(RWLOCK, rw_rdlock_try_fail, 4)             \
	X(RWLOCK, rw_wrlock, 5)                      \
	X(RWLOCK, rw_wrlock_sleep, 6)                \
	X(RWLOCK, rw_wrlock_sleep_time, 7)           \
	X(RWLOCK, rw_wrlock_try, 8)                  \
	X(RWLOCK, rw_wrlock_try_fail, 9)
/* sema_max_count is stored as is, sema_min_count as its complement (0:
 * never seen); both only grow.  The try counts (mutex_try, rw_rdlock_try,
 * rw_wrlock_try, sema_trywait) hold the tries that succeeded (a mutex's
 * and a write lock's are then written by the new holder alone, as its
 * lock count); Solaris' counts of calls are each plus its _fail count,
 * which a reader adds.  A hold starts at a lock or at a try that took the
 * object: a reader scales the sampled holds by the two together. */
#define TDSTAT_SYNC_SEMA_COUNTS(X)                   \
	X(SEMA, sema_wait, 0)                        \
	X(SEMA, sema_wait_sleep, 1)                  \
	X(SEMA, sema_wait_sleep_time, 2)             \
	X(SEMA, sema_trywait, 3)                     \
	X(SEMA, sema_trywait_fail, 4)                \
	X(SEMA, sema_post, 5)                        \
	X(SEMA, sema_max_count, 6)                   \
	X(SEMA, sema_min_count, 7)
#define TDSTAT_SYNC_COUNTS 11u

/* 128 bytes.  hold_*: the sampled holds of a mutex or write lock, written
 * by the holder only. */
struct tdstat_sync_entry {
	uint64_t key;             /* object address | enum tdstat_sync_type; 0: free */
	uint64_t hold_start_ns;   /* a sampled hold in progress (0: none) */
	uint64_t hold_epoch;      /* control's epoch when it started */
	uint64_t hold_samples;    /* sampled holds ended */
	uint64_t hold_sampled_ns; /* their total */
	uint64_t count[TDSTAT_SYNC_COUNTS];
};

union tdstat_sync_gate {
	int32_t word;
	struct {
		int16_t shim;     /* the shim's: which inline path applies */
		int16_t tracking; /* the controller's: nonzero while tracking */
	} half;
};

#define TDSTAT_SYNC_CAPACITY 4096u
#define TDSTAT_SYNC_PROBES 16u
#define TDSTAT_SYNC_HOLD_SAMPLE 64u
#define TDSTAT_SYNC_ON UINT64_C(1)

struct tdstat_sync_header {
	/* line 0: read by the inline paths, written by controllers */
	union tdstat_sync_gate gate_mutex;    /* mutex lock and unlock */
	union tdstat_sync_gate gate_rwlock;   /* read lock, unlock, write lock */
	union tdstat_sync_gate gate_sem_wait;
	union tdstat_sync_gate gate_sem_post;
	uint64_t control;         /* TDSTAT_SYNC_ON | epoch << 1 */
	uint64_t reserved0[5];
	/* line 1: the description, written once */
	uint32_t entries_offset;  /* from the start of this block */
	uint32_t entry_size;
	uint32_t capacity;        /* a power of two */
	uint32_t probes;
	uint32_t hold_sample;
	uint32_t counts;          /* entries of count[] */
	uint64_t reserved1[5];
	/* line 2: written on claims and overflows */
	uint64_t used;            /* entries claimed */
	uint64_t overflow;        /* lookups that found no entry (see above) */
	uint64_t reserved2[6];
};

/* Where an object's probe starts: (hash & (capacity - 1)), then the next
 * entries (writer and readers must agree). */
static inline uint64_t tdstat_sync_hash(uint64_t key)
{
	key ^= key >> 33;
	key *= UINT64_C(0xff51afd7ed558ccd);
	key ^= key >> 33;
	return key;
}

static inline uint64_t tdstat_sync_key(uint64_t object, enum tdstat_sync_type type)
{
	return (object & ~TDSTAT_SYNC_TYPE_MASK) | (uint64_t)type;
}

struct tdstat_sync {
	struct tdstat_sync_header header;
	struct tdstat_sync_entry entries[TDSTAT_SYNC_CAPACITY];
};

/*
 * The change marks (ABI 2.3): one 32-bit word per record, written by the
 * record's owner around every change of the record (region.h's latch and
 * the identity changes alike):
 *   before step 1 (before pending_ns may move): mark = 2 * seq + 1;
 *   after step 3 (after seq moved to seq + 1):  mark = 2 * (seq + 1).
 * So a reader that reads a record's mark, and kept the record's bytes
 * read after an earlier reading of an even mark of the same value, knows
 * the record is still as it kept it: any change since would have moved
 * the mark first (and a change under way, or stopped half way, leaves it
 * odd: a reader reads the record itself then, pending_ns and all).  A
 * sleeping target's snapshot then reads the marks, 4 bytes a record,
 * instead of the records, 128.  The marks of each block of
 * TDSTAT_CHANGES_BLOCK records are one contiguous block of words, in the
 * order tdstat_change_slot gives: neighbouring records (threads created
 * together, which often change state at once on two CPUs) on different
 * cache lines.  The array has room for record_capacity rounded up to a
 * whole block.
 */
#define TDSTAT_CHANGES_BLOCK 256u

static inline uint32_t tdstat_change_slot(uint32_t record)
{
	return (record & ~(TDSTAT_CHANGES_BLOCK - 1u)) | (record & 15u) << 4 | (record >> 4 & 15u);
}

struct tdstat_region {
	struct tdstat_region_header header;
	struct tdstat_record records[TDSTAT_RECORD_CAPACITY];
	struct tdstat_detail details[TDSTAT_RECORD_CAPACITY];
	struct tdstat_sync sync; /* 2.2 */
	uint32_t changes[TDSTAT_RECORD_CAPACITY]; /* 2.3 */
};

/*
 * Fills the self-description of a header for `record_capacity` records
 * placed right after it, and as many details after them: sizes, ABI
 * numbers and the layout table, but not the magic (the shim writes it
 * last, once the rest is in place), the control block or the status block.
 */
static inline void tdstat_region_header_describe(struct tdstat_region_header *header,
						 uint32_t record_capacity)
{
	header->abi_major = TDSTAT_ABI_MAJOR;
	header->abi_minor = TDSTAT_ABI_MINOR;
	header->header_size = sizeof(struct tdstat_region_header);
	header->records_offset = sizeof(struct tdstat_region_header);
	header->record_size = sizeof(struct tdstat_record);
	header->record_capacity = record_capacity;
	header->details_offset = (uint32_t)(sizeof(struct tdstat_region_header) +
					    (uint64_t)record_capacity * sizeof(struct tdstat_record));
	header->detail_size = sizeof(struct tdstat_detail);
	header->region_size = header->details_offset + (uint64_t)record_capacity * sizeof(struct tdstat_detail);
	header->commit_lag_ns = TDSTAT_COMMIT_LAG_NS;
	header->stall_ns = TDSTAT_STALL_NS;
	header->layout_size = sizeof(struct tdstat_layout);
	header->layout = (struct tdstat_layout){
		.control_offset = offsetof(struct tdstat_region_header, control),
		.status_offset = offsetof(struct tdstat_region_header, status),
		.record_seq = offsetof(struct tdstat_record, seq),
		.record_pending = offsetof(struct tdstat_record, pending_ns),
		.record_copies = offsetof(struct tdstat_record, copy),
		.record_copy_size = sizeof(struct tdstat_record_copy),
		.detail_copies = offsetof(struct tdstat_detail, copy),
		.detail_copy_size = sizeof(struct tdstat_detail_copy),
#define TDSTAT_LAYOUT_COPY(type, name, dims) .name = offsetof(struct tdstat_record_copy, name),
		TDSTAT_RECORD_COPY_FIELDS(TDSTAT_LAYOUT_COPY)
#undef TDSTAT_LAYOUT_COPY
#define TDSTAT_LAYOUT_DETAIL(type, name, dims) .name = offsetof(struct tdstat_detail_copy, name),
		TDSTAT_DETAIL_COPY_FIELDS(TDSTAT_LAYOUT_DETAIL)
#undef TDSTAT_LAYOUT_DETAIL
		.kind_count = TDSTAT_WAIT_KIND_COUNT,
	};
}

/* The published copies of a record, for a reader in the same process
 * (tests, the shim itself): load seq with acquire, use copy[seq & 1],
 * check seq again. */
static inline uint32_t tdstat_record_published(const struct tdstat_record *record)
{
	return __atomic_load_n(&record->seq, __ATOMIC_ACQUIRE) & 1u;
}

#define TDSTAT_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)

TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_record_copy) == 48, "record copy layout");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_record_copy, epoch_ns) == 16, "record copy layout");
TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_record) == 128, "record is two cache lines");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_record, seq) == 0, "seq first");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_record, copy) == 16, "copies after seq and pending");
TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_detail_copy) == 128, "detail copy is two lines");
TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_detail) == 256, "detail layout");
TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_layout) == 48, "layout table");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_region_header, layout) == 56, "header layout");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_region_header, control) == 192, "control on its own line");
TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_control) == 64, "control is one line");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_region_header, status) == 256, "status after control");
TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_status) == 64, "status is one line");
TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_region_header) == 320, "header size");
TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_region_header) >= TDSTAT_ABI_2_0_HEADER_SIZE, "minors only append");
TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_layout) >= TDSTAT_ABI_2_0_LAYOUT_SIZE, "minors only append");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_control, realtime_offset_ns) == 56, "2.1 anchor in 2.0's reserved word");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_region, records) == 320, "records follow the header");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_region_header, sync_offset) == 120, "2.2 sync block in 2.1's padding");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_region_header, changes_offset) == 128, "2.3 marks in 2.2's padding");
TDSTAT_STATIC_ASSERT(TDSTAT_CHANGES_BLOCK == 256u, "tdstat_change_slot permutes blocks of 16 x 16");
TDSTAT_STATIC_ASSERT(TDSTAT_RECORD_CAPACITY % TDSTAT_CHANGES_BLOCK == 0, "whole blocks of marks");
TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_sync_entry) == 128, "sync entry is two lines");
TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_sync_header) == 192, "sync header is three lines");
TDSTAT_STATIC_ASSERT((TDSTAT_SYNC_CAPACITY & (TDSTAT_SYNC_CAPACITY - 1)) == 0, "capacity a power of two");

#endif /* TDSTAT_REGION_H */
