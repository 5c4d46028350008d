/* SPDX-License-Identifier: MIT */
/*
 * The table of tracked objects (region.h's struct tdstat_sync): lookup
 * and claim by CAS, counters, sampled hold times.  No lock, no
 * allocation, no system call but the clock of a sleep or a sampled hold:
 * async-signal-safe.
 */
#include <stdlib.h>
#include <string.h>

#include "sync_track.h"


__thread struct tdshim_sync_last tdshim_sync_last TDSHIM_TLS;

/* One store each (sync_track.h says why): a signal handler's lookup in
 * between replaces the cache whole, never half of it. */
static struct tdstat_sync_entry *remember(uint64_t key, struct tdstat_sync_entry *entry)
{
	if (entry)
		CMM_STORE_SHARED(tdshim_sync_last.entry, entry);
	else
		CMM_STORE_SHARED(tdshim_sync_last.no_room, key);
	return entry;
}

struct tdstat_sync_entry *tdshim_sync_lookup(uint64_t key)
{
	struct tdstat_sync *sync = &tdshim_own_region.sync;
	uint64_t index = tdstat_sync_hash(key);

	/* An object at an address not 8-aligned shares the key of its
	 * neighbour: glibc's objects are aligned, a packed one costs
	 * precision, never a crash. */
	for (unsigned int probe = 0; probe < TDSTAT_SYNC_PROBES; probe++) {
		struct tdstat_sync_entry *entry = &sync->entries[(index + probe) & (TDSTAT_SYNC_CAPACITY - 1)];
		uint64_t seen = CMM_LOAD_SHARED(entry->key);

		if (seen == key)
			return remember(key, entry);
		if (seen == 0) {
			seen = uatomic_cmpxchg(&entry->key, 0, key);
			if (seen == 0) {
				uatomic_inc(&sync->header.used);
				return remember(key, entry);
			}
			if (seen == key)
				return remember(key, entry);
		}
	}
	/* No room: counted once, and remembered, so that this thread's next
	 * calls on the object (its unlock, the next lock) neither probe the
	 * table again nor count again (region.h's overflow). */
	uatomic_inc(&sync->header.overflow);
	return remember(key, NULL);
}

void tdshim_sync_raise(struct tdstat_sync_entry *entry, unsigned int index, uint64_t value)
{
	uint64_t seen;

	if (!entry)
		return;
	seen = uatomic_read(&entry->count[index]);
	while (seen < value) {
		uint64_t before = uatomic_cmpxchg(&entry->count[index], seen, value);
		if (before == seen)
			return;
		seen = before;
	}
}

/* The sleep counts sit right after the lock count in every type's list
 * (mutex_lock, mutex_sleep, mutex_sleep_time; rw_wrlock, ...). */
void tdshim_sync_locked_slow(struct tdstat_sync_entry *entry, unsigned int lock_index, uint64_t locks,
			     uint64_t slept_ns)
{
	if (slept_ns) {
		tdshim_sync_holder_add(entry, lock_index + 1, 1);
		tdshim_sync_holder_add(entry, lock_index + 2, slept_ns);
	}
	if (locks % TDSTAT_SYNC_HOLD_SAMPLE == 0) {
		CMM_STORE_SHARED(entry->hold_epoch, tdshim_sync_control() >> 1);
		CMM_STORE_SHARED(entry->hold_start_ns, tdshim_now_ns());
	} else if (CMM_LOAD_SHARED(entry->hold_start_ns) != 0) {
		CMM_STORE_SHARED(entry->hold_start_ns, 0);
	}
}

void tdshim_sync_hold_end(struct tdstat_sync_entry *entry, uint64_t start)
{
	uint64_t now;

	CMM_STORE_SHARED(entry->hold_start_ns, 0);
	if (CMM_LOAD_SHARED(entry->hold_epoch) != tdshim_sync_control() >> 1)
		return;
	now = tdshim_now_ns();
	if (now < start)
		return;
	CMM_STORE_SHARED(entry->hold_samples, CMM_LOAD_SHARED(entry->hold_samples) + 1);
	CMM_STORE_SHARED(entry->hold_sampled_ns, CMM_LOAD_SHARED(entry->hold_sampled_ns) + (now - start));
}

static void describe(void)
{
	struct tdstat_region_header *header = &tdshim_own_region.header;
	struct tdstat_sync_header *sync = &TDSHIM_SYNC;

	sync->entries_offset = offsetof(struct tdstat_sync, entries);
	sync->entry_size = sizeof(struct tdstat_sync_entry);
	sync->capacity = TDSTAT_SYNC_CAPACITY;
	sync->probes = TDSTAT_SYNC_PROBES;
	sync->hold_sample = TDSTAT_SYNC_HOLD_SAMPLE;
	sync->counts = TDSTAT_SYNC_COUNTS;
	header->sync_offset = offsetof(struct tdstat_region, sync);
	header->sync_size = sizeof(struct tdstat_sync);
	header->region_size = sizeof(struct tdstat_region);
}

static void set_tracking_gates(int16_t value)
{
	CMM_STORE_SHARED(TDSHIM_SYNC.gate_mutex.half.tracking, value);
	CMM_STORE_SHARED(TDSHIM_SYNC.gate_rwlock.half.tracking, value);
	CMM_STORE_SHARED(TDSHIM_SYNC.gate_sem_wait.half.tracking, value);
	CMM_STORE_SHARED(TDSHIM_SYNC.gate_sem_post.half.tracking, value);
}

void tdshim_sync_init(void)
{
	const char *text = getenv("TDSTAT_SYNC_TRACKING");

	describe();
	if (text && (strcmp(text, "1") == 0 || strcmp(text, "yes") == 0 || strcmp(text, "on") == 0 ||
		     strcmp(text, "true") == 0)) {
		/* The order of a controller's enable: control, then gates. */
		CMM_STORE_SHARED(TDSHIM_SYNC.control, (UINT64_C(1) << 1) | TDSTAT_SYNC_ON);
		cmm_smp_wmb();
		set_tracking_gates(1);
	}
}

/* A new process: its own objects, counted from zero; tracking stays as
 * it was (a new epoch: no hold started before the fork is counted). */
void tdshim_sync_after_fork(void)
{
	struct tdstat_sync *sync = &tdshim_own_region.sync;
	uint64_t control = CMM_LOAD_SHARED(sync->header.control);

	if (CMM_LOAD_SHARED(sync->header.used) != 0) {
		for (unsigned int i = 0; i < TDSTAT_SYNC_CAPACITY; i++)
			if (CMM_LOAD_SHARED(sync->entries[i].key) != 0)
				memset(&sync->entries[i], 0, sizeof(sync->entries[i]));
		CMM_STORE_SHARED(sync->header.used, 0);
	}
	CMM_STORE_SHARED(sync->header.overflow, 0);
	CMM_STORE_SHARED(tdshim_sync_last.entry, NULL);
	CMM_STORE_SHARED(tdshim_sync_last.no_room, 0);
	CMM_STORE_SHARED(sync->header.control, (((control >> 1) + 1) << 1) | (control & TDSTAT_SYNC_ON));
}
