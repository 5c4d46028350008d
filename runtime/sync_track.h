/* SPDX-License-Identifier: MIT */
/*
 * Per-object tracking of synchronization objects (region.h's struct
 * tdstat_sync; docs/CONTRACT.md §9).  The wrappers' inline paths compare
 * the gates (the whole word); every tracked path starts with
 * tdshim_sync_gated(), reached only when an inline path did not apply.
 */
#ifndef TDSHIM_SYNC_TRACK_H
#define TDSHIM_SYNC_TRACK_H

#include "shim.h"

#define TDSHIM_SYNC (tdshim_own_region.sync.header)

/* A controller set the gate's tracking half: the call goes to a tracked
 * path (which counts only while tracking is on). */
static inline bool tdshim_sync_gated(const union tdstat_sync_gate *gate)
{
	return caa_unlikely(CMM_LOAD_SHARED(gate->half.tracking) != 0);
}

static inline uint64_t tdshim_sync_control(void)
{
	return CMM_LOAD_SHARED(TDSHIM_SYNC.control);
}

/* The entry of `object` when tracking is on, else NULL (also when the
 * table has no room: counted as overflow).  Each thread remembers the
 * last entry it found, or that it found none: a lock and its unlock look
 * up the same object.
 * Entries are never freed while the process lives (a fork child's table
 * starts empty, and its one thread forgets: tdshim_sync_after_fork). */
/* Two caches of one word each, so a signal handler's lookup between a
 * thread's stores cannot leave a key paired with another object's entry:
 * an entry is checked against its own key (an entry's key changes only
 * when the table is emptied), and "no room" is a key alone. */
struct tdshim_sync_last {
	struct tdstat_sync_entry *entry;
	uint64_t no_room;
};
extern __thread struct tdshim_sync_last tdshim_sync_last TDSHIM_TLS;

struct tdstat_sync_entry *tdshim_sync_lookup(uint64_t key);
static inline uint64_t tdshim_sync_key(const void *object, enum tdstat_sync_type type)
{
	return tdstat_sync_key((uint64_t)(uintptr_t)object, type);
}

static inline struct tdstat_sync_entry *tdshim_sync_entry(const void *object, enum tdstat_sync_type type)
{
	uint64_t key = tdshim_sync_key(object, type);

	if (!(tdshim_sync_control() & TDSTAT_SYNC_ON))
		return NULL;
	struct tdstat_sync_entry *entry = CMM_LOAD_SHARED(tdshim_sync_last.entry);

	if (caa_likely(entry != NULL) && caa_likely(CMM_LOAD_SHARED(entry->key) == key))
		return entry;
	if (CMM_LOAD_SHARED(tdshim_sync_last.no_room) == key)
		return NULL;
	return tdshim_sync_lookup(key);
}

/* Counters: by an atomic add, or by the holder of the object alone. */
static inline void tdshim_sync_add(struct tdstat_sync_entry *entry, unsigned int index, uint64_t amount)
{
	if (entry)
		uatomic_add(&entry->count[index], amount);
}

static inline void tdshim_sync_holder_add(struct tdstat_sync_entry *entry, unsigned int index, uint64_t amount)
{
	if (entry)
		CMM_STORE_SHARED(entry->count[index], CMM_LOAD_SHARED(entry->count[index]) + amount);
}

/* Raises a counter to at least `value` (sema_max_count, the complement
 * of sema_min_count). */
void tdshim_sync_raise(struct tdstat_sync_entry *entry, unsigned int index, uint64_t value);
/* The same, with the common case (already that high) inline: a load. */
static inline void tdshim_sync_raise_inline(struct tdstat_sync_entry *entry, unsigned int index, uint64_t value)
{
	if (caa_unlikely(CMM_LOAD_SHARED(entry->count[index]) < value))
		tdshim_sync_raise(entry, index, value);
}

/* The out-of-line parts of the two below: a sleep or a sampled hold. */
void tdshim_sync_locked_slow(struct tdstat_sync_entry *entry, unsigned int lock_index, uint64_t locks,
			     uint64_t slept_ns);
void tdshim_sync_hold_end(struct tdstat_sync_entry *entry, uint64_t start);

/* A lock taken by the caller (the holder), `lock_index` its lock count,
 * `slept_ns` its wait (0: none; the sleep counts follow the lock's).
 * One lock in TDSTAT_SYNC_HOLD_SAMPLE (by the object's count) starts a
 * sampled hold; every other clears a stale start. */
static inline void tdshim_sync_locked(struct tdstat_sync_entry *entry, unsigned int lock_index, uint64_t slept_ns)
{
	uint64_t locks;

	if (!entry)
		return;
	locks = CMM_LOAD_SHARED(entry->count[lock_index]);
	CMM_STORE_SHARED(entry->count[lock_index], locks + 1);
	if (caa_unlikely(slept_ns != 0 || locks % TDSTAT_SYNC_HOLD_SAMPLE == 0))
		tdshim_sync_locked_slow(entry, lock_index, locks, slept_ns);
	else if (caa_unlikely(CMM_LOAD_SHARED(entry->hold_start_ns) != 0))
		CMM_STORE_SHARED(entry->hold_start_ns, 0);
}

/* The holder releases it: a sampled hold of this epoch is counted. */
static inline void tdshim_sync_released(struct tdstat_sync_entry *entry)
{
	uint64_t start;

	if (!entry)
		return;
	start = CMM_LOAD_SHARED(entry->hold_start_ns);
	if (caa_unlikely(start != 0))
		tdshim_sync_hold_end(entry, start);
}

/* Start of the process (env TDSTAT_SYNC_TRACKING) and a fork child. */
void tdshim_sync_init(void);
void tdshim_sync_after_fork(void);

/* Counter indexes, by Solaris name: TDSHIM_SYNC_mutex_lock ... */
enum {
#define TDSHIM_SYNC_INDEX(type, name, index) TDSHIM_SYNC_##name = index,
	TDSTAT_SYNC_MUTEX_COUNTS(TDSHIM_SYNC_INDEX)
	TDSTAT_SYNC_COND_COUNTS(TDSHIM_SYNC_INDEX)
	TDSTAT_SYNC_RWLOCK_COUNTS(TDSHIM_SYNC_INDEX)
	TDSTAT_SYNC_SEMA_COUNTS(TDSHIM_SYNC_INDEX)
#undef TDSHIM_SYNC_INDEX
};

#endif /* TDSHIM_SYNC_TRACK_H */
