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

#include <proc_service.h>
#include <thread_db.h>

#include <tdstat/region.h>
#include <tdstat/thread_db_stats.h>

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
	struct tdstat_layout layout;
};

/*
 * The agent.  Immutable after td_ta_new except `users`, `deleted` and
 * `registry_next` (registry lock) and the control block in the target
 * (control_lock serializes this agent's writes to it).
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
 * figures, object and site were read.
 */
struct tddb_thread {
	uint32_t index;
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
	uint64_t idle_ns[TDSTAT_WAIT_KIND_COUNT];
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
	uint64_t tracked_ns;     /* clamped: runnable <= tracked <= |W| * records */
	uint64_t runnable_ns;
	uint64_t idle_by_kind_ns[TDSTAT_WAIT_KIND_COUNT]; /* sum to tracked - runnable */
	uint64_t now_ns;         /* CLOCK_MONOTONIC when the reads began */
};

/* Registry (agent_registry.c).  tddb_agent_enter() checks a handle and
 * pins it so a concurrent td_ta_delete cannot free it under the caller;
 * every successful enter is paired with one tddb_agent_leave(). */
td_err_e tddb_agent_enter(const td_thragent_t *ta, struct td_thragent **agent);
void tddb_agent_leave(struct td_thragent *agent);
void tddb_registry_add(struct td_thragent *agent);
td_err_e tddb_registry_remove(const td_thragent_t *ta);

/* Region access (region_read.c, region_write.c). */
td_err_e tddb_geometry_from_header(const struct tdstat_region_header *header, struct tddb_geometry *geometry);
td_err_e tddb_read_header(const struct td_thragent *agent, struct tddb_header_view *view);
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

enum tddb_control_change {
	TDDB_CONTROL_ENABLE,
	TDDB_CONTROL_DISABLE,
	TDDB_CONTROL_RESET,
};
td_err_e tddb_control_change(struct td_thragent *agent, enum tddb_control_change change);
td_err_e tddb_control_set_concurrency(struct td_thragent *agent, int level);

/* A frozen image or a live process (image.c). */
void tddb_image_query(const struct td_thragent *agent, struct tddb_image *image);

/* Statistics (stats.c). */
td_err_e tddb_target_cpu_ns(const struct td_thragent *agent, uint64_t *cpu_ns);
td_err_e tddb_stats_ns(const struct td_thragent *agent, bool kinds, td_ta_stats_ns_t *stats);
/* The 64-bit statistics of a snapshot already taken (adds the CPU clock). */
td_err_e tddb_stats_from_snapshot(const struct td_thragent *agent, const struct tddb_snapshot *snapshot,
				  td_ta_stats_ns_t *stats);
void tddb_stats_fractions(const td_ta_stats_ns_t *stats, td_ta_stats_t *fractions);

uint64_t tddb_monotonic_ns(void);

/* td_ta_stats_ns_t as callers offer it (td_ta_get_stats_ns.c): the size
 * every caller must offer, the first version of the struct ... */
#define TDDB_STATS_NS_FIRST_SIZE (offsetof(td_ta_stats_ns_t, snapshot_ns) + sizeof(uint64_t))
/* ... a size that asks for the kinds too ... */
#define TDDB_STATS_NS_KINDS_SIZE sizeof(td_ta_stats_ns_t)
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
