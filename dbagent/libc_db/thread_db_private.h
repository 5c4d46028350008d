/* SPDX-License-Identifier: MIT */
/*
 * Private to libc_db: the agent, the registry of live agents, and the
 * helpers that read and write the shared region in the target.
 *
 * Everything read from the target is hostile: every size, count and offset
 * is checked before use, every loop and retry is bounded, and no allocation
 * is sized by target data.
 */
#ifndef TDSTAT_THREAD_DB_PRIVATE_H
#define TDSTAT_THREAD_DB_PRIVATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <proc_service.h>
#include <thread_db.h>

#include <tdstat/clock.h>
#include <tdstat/region.h>
#include <tdstat/thread_db_stats.h>
#include <tdstat/thread_db_sync.h>

/* The library is built with hidden visibility; only these leave it (and
 * the version script says so a second time). */
#define TDDB_EXPORT __attribute__((visibility("default")))

enum tddb_symbol {
#define TARGET_SYMBOL(id, object, name) TDDB_SYMBOL_##id,
#include "target_symbols.def"
#undef TARGET_SYMBOL
	TDDB_SYMBOL_COUNT
};

/* Limits on what a region may claim (READER.md step 2). */
#define TDDB_HEADER_MAX 4096u
#define TDDB_RECORD_MAX 4096u
#define TDDB_DETAIL_MAX 4096u
#define TDDB_CAPACITY_MAX (UINT32_C(1) << 22)
#define TDDB_COMMIT_LAG_MAX UINT64_C(1000000000)
#define TDDB_STALL_MAX UINT64_C(1000000)

/* The header fields that never change while a shim runs: the bytes from
 * the magic to the end of the layout table.  A later call that finds other
 * bytes there is not reading the region td_ta_new validated. */
#define TDDB_IDENTITY_SIZE (offsetof(struct tdstat_region_header, layout) + sizeof(struct tdstat_layout))

/* What td_ta_new learned from a validated header. */
struct tddb_geometry {
	uint32_t header_size;
	uint32_t records_offset;
	uint32_t record_size;
	uint32_t record_capacity;
	uint32_t details_offset;
	uint32_t detail_size;
	uint64_t commit_lag_ns;
	uint64_t stall_ns;
	uint16_t abi_minor;
	/* ABI 2.3: where the change marks are (region.h); 0: none. */
	uint32_t changes_offset;
	/* Every field this reader knows sits in the copies where its own
	 * structs put it (any minor that only appended): a copy decodes as
	 * one fixed-size memcpy rather than field by field. */
	bool native_copies;
	struct tdstat_layout layout;
};

/*
 * The last reading of the target's process CPU clock, and what the
 * region looked like then (stats.c: when nothing can have run since, the
 * reading still holds and the kernel is not asked again).
 */
struct tddb_cpu_reading {
	bool valid;
	uint64_t window_start_ns;  /* the control block's, at the reading */
	uint64_t cpu_start_ns;
	uint64_t generation;
	uint64_t seq_sum;          /* of every record visited */
	uint32_t visited;          /* records visited */
	uint32_t live;
	uint64_t taken_ns;         /* CLOCK_MONOTONIC just before the reading */
	uint64_t cpu_ns;
};

/*
 * The target's CPU clock read before a snapshot's reads (stats.c), when
 * the agent expects to need it: a controller that disables gathering
 * after the snapshot's last check of the control block then reads it
 * later, so the window it freezes holds at least this much.
 */
struct tddb_cpu_ahead {
	bool taken;
	uint64_t taken_ns;         /* CLOCK_MONOTONIC just before the reading */
	uint64_t cpu_ns;
	/* Out: the reading came after the snapshot's reads, and a window
	 * had begun by then (stats.c, cpu_checked_after). */
	bool moved_on;
};

/*
 * The records as the last snapshot found them consistent (region_read.c):
 * a record whose first copy is byte for byte its cached image needs no
 * second copy, and its cached detail no new read.  `lock` is only ever
 * tried: a snapshot that finds it taken (another snapshot of this agent,
 * or a visitor calling back into the agent) reads without the cache.
 */
struct tddb_record_cache {
	pthread_mutex_t lock;
	uint32_t slots;           /* records it has room for */
	unsigned char *records;   /* slots * record_size */
	unsigned char *details;   /* slots * detail_size */
	uint8_t *held;            /* per slot: TDDB_CACHED_* */
	/* Per slot, the change mark (ABI 2.3) read before the kept bytes
	 * were, or TDDB_MARK_UNKNOWN. */
	uint64_t *marks;
	uint32_t last_count;      /* records in use at the last snapshot */
	/* Per chunk of records (region_read.c): the closed per-kind time of
	 * its records as kept, so that a snapshot that finds the chunk as
	 * kept adds it up without reading a kept detail. */
	struct tddb_chunk_kinds *chunks;
	uint32_t chunk_slots;
};
struct tddb_chunk_kinds {
	bool valid;
	uint32_t records;         /* in the chunk when summed */
	/* The window they were summed in: its start, and its end (open, or
	 * where gathering or the process ended), which a record's closed
	 * time was checked against (clamped). */
	uint64_t window_start_ns, window_end_ns, exit_ns;
	unsigned __int128 idle[TDSTAT_WAIT_KIND_COUNT];
	/*
	 * The whole chunk's part of the process sums, from its records as
	 * kept (any walk, with or without the details), so that a snapshot
	 * of the process's figures alone that finds the chunk as kept adds
	 * it up without decoding a record (region_read.c, chunk_whole_add).
	 * Valid only when every record is plain: no change under way, a
	 * known state and kind.  The open intervals are then linear in the
	 * snapshot's clock: per state (and per kind) the number of live
	 * records and the sum of where their open intervals start.
	 */
	bool whole;
	uint32_t whole_records;          /* in the chunk when summed */
	uint64_t whole_window_start_ns; /* the window it was summed in */
	uint32_t live, used, runnable_live;
	uint64_t seq_sum, latest_since;
	uint64_t acc_max;                /* largest closed tracked time */
	unsigned __int128 tracked, runnable; /* closed time */
	uint32_t runnable_open;          /* live RUNNABLE records */
	unsigned __int128 runnable_from; /* the sum of their open intervals' starts */
	uint64_t runnable_from_max;
	__int128 runnable_excess;        /* the largest closed time less open start */
	uint32_t blocked_open;           /* live BLOCKED records */
	uint64_t blocked_from_max;
	__int128 blocked_excess;
	uint32_t blocked_by_kind[TDSTAT_WAIT_KIND_COUNT];
	unsigned __int128 blocked_from[TDSTAT_WAIT_KIND_COUNT];
};
#define TDDB_CACHED_NONE 0
#define TDDB_CACHED_RECORD 1
#define TDDB_CACHED_DETAIL 2      /* the record and its detail */
#define TDDB_MARK_UNKNOWN UINT64_MAX
/* What the cache may take, whatever the region claims. */
#define TDDB_CACHE_BYTES_MAX (16u << 20)

/*
 * The timer this agent arms on a large target's process CPU clock, so
 * that the kernel keeps the process's running total and reading the
 * clock stops costing a walk of every thread (stats.c, docs/READER.md
 * "The process CPU clock").  Armed at most once per agent, released with
 * the agent.
 */
struct tddb_cpu_timer {
	bool tried;               /* arming was attempted (it is not retried) */
	bool armed;
	pid_t owner;              /* the process that created it: a fork child
				   * of the reader does not have it */
	timer_t id;
};
/* Targets with at least this many threads get the timer: the walk then
 * costs the reader about 33 us a snapshot or more, more than the fixed
 * part of the budget of one snapshot (20 us); below, the target's cost
 * buys little. */
#define TDDB_CPU_TIMER_THREADS 1000u

/*
 * The agent.  Immutable after td_ta_new except `users`, `deleted` and
 * `registry_next` (registry lock), `cpu`, `cpu_spared` and `cpu_timer`
 * (control_lock) and the control block in the target (control_lock
 * serializes this agent's writes to it).
 */
struct td_thragent {
	struct td_thragent *registry_next;
	unsigned int users;       /* calls in progress on this agent */
	bool deleted;             /* td_ta_delete ran; freed when users == 0 */
	struct ps_prochandle *ph;
	psaddr_t region;
	struct tddb_geometry geometry;
	unsigned char identity[TDDB_IDENTITY_SIZE];
	pthread_mutex_t control_lock;
	struct tddb_cpu_reading cpu;
	/* The last snapshot needed no new reading of the CPU clock (the
	 * last one still held, or gathering was off): the next one does not
	 * read it before its reads (stats.c).  A hint: a wrong one costs a
	 * read of the header. */
	bool cpu_spared;
	/* The CPU start of the last control block this agent read whole
	 * (`rewriting` 0), with its window's start and generation: a block
	 * read halfway through a reset, the new CPU start already in beside
	 * the old window's start, is read with this one (stats.c,
	 * settled_cpu_start).  Under control_lock. */
	struct {
		bool valid;
		uint64_t window_start_ns, cpu_start_ns, generation;
	} settled;
	struct tddb_cpu_timer cpu_timer;
	/* /proc/PID/task of a live target, kept open (control_lock) once a
	 * snapshot needs the kernel's thread count: fstat of it is that
	 * count without a path walk (stats.c).  -1: not open. */
	int task_fd;
	struct tddb_record_cache cache;
	/* The control block of this agent's last whole reading of the
	 * header (`rewriting` 0): one copy byte for byte the same is the
	 * block at one instant, as a second copy would prove
	 * (region_read.c, tddb_read_header).  `lock` is only ever tried. */
	struct {
		pthread_mutex_t lock;
		bool valid;
		struct tdstat_control control;
	} control_kept;
};

/* A consistent copy of the header's mutable parts. */
struct tddb_header_view {
	struct tdstat_control control;
	struct tdstat_status status;
};

/* The window a snapshot covers: [start, end), end = min(cap, now - lag);
 * now: the reader's clock when the reads ended. */
struct tddb_window {
	uint64_t start;
	uint64_t end;
	uint64_t now;
	uint64_t counted_end;    /* open intervals end here (<= end) */
};

/* What the provider says of the target (include/tdstat/ps_image.h):
 * frozen for a core, with its CPU time when known. */
struct tddb_image {
	bool frozen;
	bool cpu_known;
	uint64_t cpu_ns;
};

/*
 * One record's published state, decoded (READER.md step 4), and its
 * integrals in the window (step 6).  `detail` tells whether the per-kind
 * figures, object and site were read.  thread_decode (region_read.c) sets
 * every field but `index` (the copy loop does not clear it first: that
 * was a tenth of a snapshot's instructions).  A BLOCKED thread's `kind`
 * may be past TDSTAT_WAIT_KIND_COUNT in a region of a newer minor (a kind
 * this reader has no name for): its time is blocked, in no idle_ns entry.
 */
struct tddb_thread {
	uint32_t index;
	uint32_t seq;            /* the latch's: moves on every change */
	uint32_t state;
	uint32_t kind;
	int32_t tid;
	uint32_t generation;
	bool detail;
	uint64_t since_ns;
	uint64_t object;
	uint64_t site;
	uint64_t woken_ns;
	/* in the window */
	uint64_t tracked_ns;
	uint64_t runnable_ns;
	uint64_t idle_ns[TDSTAT_WAIT_KIND_COUNT]; /* with `detail` only; else not set */
	/* How the figures came (region_read.c, the kept chunk sums): the
	 * open interval of a BLOCKED record (in idle_ns[kind] with the
	 * detail), and whether the copy's closed time was cut to the window. */
	uint64_t blocked_open_ns;
	bool clamped;
	/* For the kept chunk sums: the closed time (tracked_ns and
	 * runnable_ns less the open interval), where the open interval
	 * starts, and whether a change was under way (pending_ns). */
	uint64_t closed_tracked_ns, closed_runnable_ns;
	uint64_t open_from_ns;
	bool changing;
};

/* Called once per record in use; a non-TD_OK answer stops the walk. */
typedef td_err_e tddb_thread_visitor(const struct tddb_thread *thread, void *context);

/* READER.md steps 3 to 6: everything but the target's CPU clock. */
struct tddb_snapshot {
	struct tdstat_control control;
	bool enabled;
	bool detail;             /* idle_by_kind_ns filled */
	uint32_t live;           /* records not FREE */
	uint32_t overflow_live;
	uint64_t window_start_ns;
	uint64_t window_ns;      /* |W| */
	uint64_t counted_ns;     /* the part of |W| the open intervals reach */
	uint64_t tracked_ns;     /* clamped: runnable <= tracked <= |W| * records */
	uint64_t runnable_ns;
	uint64_t idle_by_kind_ns[TDSTAT_WAIT_KIND_COUNT]; /* sum to tracked - runnable */
	uint64_t now_ns;         /* CLOCK_MONOTONIC when the reads began */
	/* What could have used CPU since an earlier snapshot (stats.c). */
	uint32_t visited;        /* records visited */
	uint32_t runnable_live;  /* records RUNNABLE now */
	uint64_t seq_sum;        /* sum of the visited records' seq */
	uint64_t latest_since_ns; /* the latest since_ns of a live record */
};

/* Registry (agent_registry.c).  tddb_agent_enter() checks a handle and
 * pins it so a concurrent td_ta_delete cannot free it under the caller;
 * every successful enter is paired with one tddb_agent_leave(). */
td_err_e tddb_agent_enter(const td_thragent_t *ta, struct td_thragent **agent);
void tddb_agent_leave(struct td_thragent *agent);
void tddb_registry_add(struct td_thragent *agent);
td_err_e tddb_registry_remove(const td_thragent_t *ta);

/* The record cache's life (region_read.c): set up by td_ta_new, freed
 * with the agent. */
td_err_e tddb_cache_init(struct td_thragent *agent);
void tddb_cache_free(struct td_thragent *agent);

/* Region access (region_read.c, region_write.c). */
td_err_e tddb_geometry_from_header(const struct tdstat_region_header *header, struct tddb_geometry *geometry);
td_err_e tddb_read_header(const struct td_thragent *agent, struct tddb_header_view *view);
/* Whether the control block still reads, byte for byte, as `control`:
 * one copy of the header. */
td_err_e tddb_control_held(const struct td_thragent *agent, const struct tdstat_control *control, bool *held);
/* Walks the records in use with their integrals in the window; `detail`
 * also reads the details (kinds, object, site).  *window gets the window
 * the integrals cover. */
td_err_e tddb_threads_visit(const struct td_thragent *agent, bool detail, tddb_thread_visitor *visitor,
			    void *context, struct tddb_header_view *view, struct tddb_window *window);
td_err_e tddb_snapshot(const struct td_thragent *agent, bool detail, struct tddb_snapshot *snapshot);
/* tddb_snapshot in one walk that also hands every record to `visitor`:
 * the snapshot's sums are the sums of what the visitor saw.  (No re-read
 * when a controller changed the window during the walk: the visitor's
 * calls cannot be taken back.) */
td_err_e tddb_snapshot_visit(const struct td_thragent *agent, bool detail, tddb_thread_visitor *visitor,
			     void *context, struct tddb_snapshot *snapshot);

/* One record as it stands now, for a thread handle (region_read.c):
 * TD_NOTHR for an index the shim never handed out. */
td_err_e tddb_thread_read(const struct td_thragent *agent, uint32_t index, struct tddb_thread *thread);

/*
 * Threads and synchronization objects (sync_objects.c, docs/CONTRACT.md
 * §9).  A thread handle's th_unique is the address of its record in the
 * target; a sync handle's sh_unique the object's address.
 */
struct tddb_thread_now {
	uint32_t index;          /* the record's */
	uint32_t state;          /* RUNNABLE or BLOCKED (FREE records are left out) */
	int32_t tid;
	uint32_t kind;           /* BLOCKED: the wait's kind; else TDSTAT_WAIT_KIND_COUNT */
	uint64_t object;         /* BLOCKED: what it waits on; else 0 */
	uint64_t site;           /* BLOCKED: the call site; else 0 */
};
/* Every tracked thread now, from one walk; *threads is the caller's to
 * free (NULL when there are none). */
td_err_e tddb_threads_now(const struct td_thragent *agent, struct tddb_thread_now **threads, uint32_t *count);

/* A thread handle of the agent for a record, and back: TD_BADTH for a
 * NULL handle or one that names no record of the agent (its agent
 * entered: the caller leaves it). */
psaddr_t tddb_thread_unique(const struct td_thragent *agent, uint32_t index);
td_err_e tddb_thread_handle_enter(const td_thrhandle_t *th, struct td_thragent **agent, uint32_t *index);
/* A sync handle's agent, entered: TD_BADSH for NULL or address 0, TD_BADTA
 * for its agent. */
td_err_e tddb_sync_handle_enter(const td_synchandle_t *sh, struct td_thragent **agent);

/* The td_sync_type_e a wait kind waits on; TD_SYNC_UNKNOWN for the other
 * kinds (their object is no synchronization object). */
uint32_t tddb_sync_type_of_kind(uint32_t kind);
/* What a BLOCKED thread waits on, as a sync object: its type, or
 * TD_SYNC_UNKNOWN. */
uint32_t tddb_thread_sync_type(const struct tddb_thread_now *thread);

/* One object libc_db knows of (td_ta_sync_iter's set). */
struct tddb_sync_object {
	uint64_t address;
	uint32_t type;           /* td_sync_type_e */
	uint32_t waiters;        /* tracked threads blocked on it now */
};
/* The objects libc_db knows of, each once, by address: the ones a
 * tracked thread in `threads` is blocked on.  *objects is the caller's to
 * free. */
td_err_e tddb_sync_objects(const struct td_thragent *agent, const struct tddb_thread_now *threads, uint32_t count,
			   struct tddb_sync_object **objects, uint32_t *nobjects);
/* td_sync_get_info's answer for an object of a known type, from its own
 * memory and the tracked threads (their handles for the owner, their
 * waits for the waiters). */
td_err_e tddb_sync_info(const struct td_thragent *agent, uint64_t address, uint32_t type,
			const struct tddb_thread_now *threads, uint32_t count, td_syncinfo_t *info);

enum tddb_control_change {
	TDDB_CONTROL_ENABLE,
	TDDB_CONTROL_DISABLE,
	TDDB_CONTROL_RESET,
};
td_err_e tddb_control_change(struct td_thragent *agent, enum tddb_control_change change);
/* How long before its reads a reader's clock is taken (region_read.c):
 * a disable waits it out too (region_write.c). */
uint64_t tddb_reader_margin(const struct tddb_geometry *geometry);
td_err_e tddb_control_set_concurrency(struct td_thragent *agent, int level);

/* A frozen image or a live process (image.c). */
void tddb_image_query(const struct td_thragent *agent, struct tddb_image *image);

/* Statistics (stats.c). */
td_err_e tddb_target_cpu_ns(const struct td_thragent *agent, uint64_t *cpu_ns);
/* Deletes the agent's CPU timer, if it armed one (td_ta_delete). */
void tddb_cpu_timer_release(struct td_thragent *agent);
td_err_e tddb_stats_ns(struct td_thragent *agent, bool kinds, td_ta_stats_ns_t *stats);
/* Before a snapshot whose statistics will be made: the CPU clock, if the
 * agent expects to need it (`surely`: whatever it expects). */
void tddb_cpu_ahead(struct td_thragent *agent, bool surely, struct tddb_cpu_ahead *ahead);
/* The 64-bit statistics of a snapshot taken after `ahead` (adds the CPU
 * clock; the agent's last reading of it may change, stats.c;
 * ahead->moved_on says the snapshot is best read again). */
td_err_e tddb_stats_from_snapshot(struct td_thragent *agent, const struct tddb_snapshot *snapshot,
				  struct tddb_cpu_ahead *ahead, td_ta_stats_ns_t *stats);
void tddb_stats_fractions(const td_ta_stats_ns_t *stats, td_ta_stats_t *fractions);

/* The reader's clock (include/tdstat/clock.h). */
static inline uint64_t tddb_monotonic_ns(void)
{
	return tdstat_monotonic_ns();
}

/* td_ta_stats_ns_t as callers offer it (td_ta_get_stats_ns.c): the size
 * every caller must offer, the first version of the struct ... */
#define TDDB_STATS_NS_FIRST_SIZE (offsetof(td_ta_stats_ns_t, snapshot_ns) + sizeof(uint64_t))
/* ... a size that asks for the kinds too (the second version's end: a
 * caller of it, or of any later version, gets them) ... */
#define TDDB_STATS_NS_KINDS_SIZE \
	(offsetof(td_ta_stats_ns_t, idle_by_kind_ns) + sizeof(((td_ta_stats_ns_t *)0)->idle_by_kind_ns))
/* ... and what a caller built against a later, larger struct gets: what
 * we know. */
void tddb_stats_ns_copy_out(td_ta_stats_ns_t *stats, td_ta_stats_ns_t *to_caller);

static inline uint64_t tddb_min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t tddb_max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static inline uint64_t tddb_saturate_u64(unsigned __int128 value)
{
	return value > UINT64_MAX ? UINT64_MAX : (uint64_t)value;
}

#endif /* TDSTAT_THREAD_DB_PRIVATE_H */
