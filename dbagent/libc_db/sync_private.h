/* SPDX-License-Identifier: MIT */
/*
 * The tracking table of the target (region.h's struct tdstat_sync, ABI
 * 2.2): where it is, its entries read as region.h says (two copies, the
 * smaller value of each counter), and the controller's writes.  Every
 * value read from the target is hostile: sizes and counts are checked,
 * loops bounded, nothing allocated by a size the target gives.
 */
#ifndef TDSTAT_SYNC_PRIVATE_H
#define TDSTAT_SYNC_PRIVATE_H

#include <tdstat/thread_db_sync.h>

#include "thread_db_private.h"

/* Limits on what a tracking block may claim. */
#define TDDB_SYNC_CAPACITY_MAX (UINT32_C(1) << 20)
#define TDDB_SYNC_ENTRY_MAX 4096u
#define TDDB_SYNC_PROBES_MAX 64u

/* A validated tracking block. */
struct tddb_sync_block {
	uint64_t address;          /* of the block in the target */
	uint64_t entries;          /* of entry 0 */
	uint32_t entry_size;
	uint32_t capacity;
	uint32_t probes;
	uint32_t hold_sample;
	uint64_t control;          /* as read */
	uint64_t used;
	uint64_t overflow;
};

/* One entry, decoded. */
struct tddb_sync_entry {
	uint64_t object;
	uint32_t type;             /* enum tdstat_sync_type */
	uint64_t hold_samples;
	uint64_t hold_sampled_ns;
	uint64_t count[TDSTAT_SYNC_COUNTS];
};

/* TD_NOCAPAB: a region without a tracking block (older than 2.2, or one
 * whose block does not validate). */
td_err_e tddb_sync_block(const struct td_thragent *agent, struct tddb_sync_block *block);
bool tddb_sync_on(const struct tddb_sync_block *block);

/* Visits every claimed entry (the whole table, in chunks, copied twice);
 * a visitor's non-zero answer stops the walk. */
typedef int tddb_sync_visitor(const struct tddb_sync_entry *entry, void *context);
td_err_e tddb_sync_walk(const struct td_thragent *agent, const struct tddb_sync_block *block,
			tddb_sync_visitor *visitor, void *context);

/* The entry of `object` (any type; the first found in the order mutex,
 * rwlock, semaphore, condvar).  TD_NOSV: none. */
td_err_e tddb_sync_find(const struct td_thragent *agent, const struct tddb_sync_block *block, uint64_t object,
			struct tddb_sync_entry *entry);

/* Tracking on or off (the write order of region.h). */
td_err_e tddb_sync_set_tracking(struct td_thragent *agent, bool on);

/*
 * The argument checks every handle call of <tdstat/thread_db_sync.h>
 * starts with, in one place each.  On return *agent is NULL when the
 * handle was refused (return the error: nothing to leave); otherwise the
 * agent is entered (the caller leaves it) and the error, if any, is the
 * call's: TD_ERR for a NULL `out`, TD_DBERR, TD_MALLOC, TD_NOTHR.
 *   thread calls: the record read into *thread; TD_NOTHR when it is free;
 *   sync calls:   the object's address, and the threads now (*threads
 *                 malloc'd: the caller frees it).
 */
td_err_e tddb_thread_call_enter(const td_thrhandle_t *th, const void *out, struct td_thragent **agent,
				struct tddb_thread *thread);
td_err_e tddb_sync_call_enter(const td_synchandle_t *sh, const void *out, struct td_thragent **agent,
			      uint64_t *address, struct tddb_thread_now **threads, uint32_t *count);

/* td_sync_type_e of a table type, and the statistics of an entry. */
uint32_t tddb_sync_td_type(uint32_t type);
void tddb_sync_stats_of(const struct tddb_sync_block *block, const struct tddb_sync_entry *entry,
			td_syncstats_t *stats);

#endif /* TDSTAT_SYNC_PRIVATE_H */
