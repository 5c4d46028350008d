/* SPDX-License-Identifier: MIT */
/*
 * Reading and switching the tracking table (sync_private.h).
 */
#include <stdlib.h>
#include <string.h>

#include "sync_private.h"

static td_err_e read_at(const struct td_thragent *agent, uint64_t address, void *buffer, size_t size)
{
	if (address > UINTPTR_MAX - size)
		return TD_DBERR;
	return ps_pdread(agent->ph, (psaddr_t)(uintptr_t)address, buffer, size) == PS_OK ? TD_OK : TD_DBERR;
}

static bool power_of_two(uint32_t value)
{
	return value != 0 && (value & (value - 1)) == 0;
}

td_err_e tddb_sync_block(const struct td_thragent *agent, struct tddb_sync_block *block)
{
	struct tdstat_region_header header;
	struct tdstat_sync_header sync;
	uint64_t base = (uint64_t)(uintptr_t)agent->region, entries_end;
	td_err_e err;

	if (agent->geometry.abi_minor < 2 || agent->geometry.header_size < offsetof(struct tdstat_region_header, pad0))
		return TD_NOCAPAB;
	err = read_at(agent, base, &header, offsetof(struct tdstat_region_header, pad0));
	if (err != TD_OK)
		return err;
	if (header.sync_offset == 0 || header.sync_size < sizeof(sync) ||
	    (uint64_t)header.sync_offset + header.sync_size > header.region_size ||
	    header.sync_offset < agent->geometry.header_size || header.sync_offset % 8 != 0)
		return TD_NOCAPAB;
	err = read_at(agent, base + header.sync_offset, &sync, sizeof(sync));
	if (err != TD_OK)
		return err;
	if (sync.entry_size < sizeof(struct tdstat_sync_entry) || sync.entry_size > TDDB_SYNC_ENTRY_MAX ||
	    sync.entry_size % 8 != 0 || !power_of_two(sync.capacity) || sync.capacity > TDDB_SYNC_CAPACITY_MAX ||
	    sync.probes == 0 || sync.probes > TDDB_SYNC_PROBES_MAX || sync.probes > sync.capacity ||
	    sync.counts < TDSTAT_SYNC_COUNTS || sync.hold_sample == 0 || sync.entries_offset < sizeof(sync) ||
	    sync.entries_offset % 8 != 0)
		return TD_NOCAPAB;
	entries_end = (uint64_t)sync.entries_offset + (uint64_t)sync.capacity * sync.entry_size;
	if (entries_end > header.sync_size)
		return TD_NOCAPAB;
	block->address = base + header.sync_offset;
	block->entries = block->address + sync.entries_offset;
	block->entry_size = sync.entry_size;
	block->capacity = sync.capacity;
	block->probes = sync.probes;
	block->hold_sample = sync.hold_sample;
	block->control = sync.control;
	block->used = sync.used;
	block->overflow = sync.overflow;
	return TD_OK;
}

bool tddb_sync_on(const struct tddb_sync_block *block)
{
	return (block->control & TDSTAT_SYNC_ON) != 0;
}

/* Two copies of the same entries: each counter, the smaller (region.h). */
static void entry_decode(const unsigned char *first, const unsigned char *second, struct tddb_sync_entry *entry)
{
	struct tdstat_sync_entry a, b;

	memcpy(&a, first, sizeof(a));
	memcpy(&b, second, sizeof(b));
	entry->object = a.key & ~TDSTAT_SYNC_TYPE_MASK;
	entry->type = (uint32_t)(a.key & TDSTAT_SYNC_TYPE_MASK);
	entry->hold_samples = tddb_min_u64(a.hold_samples, b.hold_samples);
	entry->hold_sampled_ns = tddb_min_u64(a.hold_sampled_ns, b.hold_sampled_ns);
	for (unsigned int i = 0; i < TDSTAT_SYNC_COUNTS; i++)
		entry->count[i] = tddb_min_u64(a.count[i], b.count[i]);
}

/* A key is only ever set once (0 -> key): both copies must show the same
 * one, of a known type. */
static bool entry_claimed(const unsigned char *first, const unsigned char *second)
{
	uint64_t a, b;

	memcpy(&a, first, sizeof(a));
	memcpy(&b, second, sizeof(b));
	return a != 0 && a == b && (a & TDSTAT_SYNC_TYPE_MASK) >= TDSTAT_SYNC_MUTEX &&
	       (a & TDSTAT_SYNC_TYPE_MASK) <= TDSTAT_SYNC_SEMA;
}

#define TDSTAT_SYNC_SEMA_MIN_INDEX 7
#define WALK_CHUNK_BYTES (64u * 1024u)

td_err_e tddb_sync_walk(const struct td_thragent *agent, const struct tddb_sync_block *block,
			tddb_sync_visitor *visitor, void *context)
{
	uint32_t per_chunk = WALK_CHUNK_BYTES / block->entry_size;
	unsigned char *copies = malloc(2 * (size_t)per_chunk * block->entry_size);
	td_err_e err = TD_OK;

	if (!copies)
		return TD_MALLOC;
	for (uint32_t first = 0; first < block->capacity && err == TD_OK; first += per_chunk) {
		uint32_t count = tddb_min_u64(per_chunk, block->capacity - first);
		size_t bytes = (size_t)count * block->entry_size;
		uint64_t address = block->entries + (uint64_t)first * block->entry_size;
		unsigned char *a = copies, *b = copies + bytes;

		err = read_at(agent, address, a, bytes);
		if (err == TD_OK)
			err = read_at(agent, address, b, bytes);
		for (uint32_t i = 0; err == TD_OK && i < count; i++) {
			struct tddb_sync_entry entry;
			size_t at = (size_t)i * block->entry_size;

			if (!entry_claimed(a + at, b + at))
				continue;
			entry_decode(a + at, b + at, &entry);
			if (visitor(&entry, context) != 0) {
				free(copies);
				return TD_OK;
			}
		}
	}
	free(copies);
	return err;
}


static td_err_e find_typed(const struct td_thragent *agent, const struct tddb_sync_block *block, uint64_t key,
			   struct tddb_sync_entry *entry)
{
	unsigned char a[TDDB_SYNC_ENTRY_MAX], b[TDDB_SYNC_ENTRY_MAX];
	uint64_t index = tdstat_sync_hash(key);

	for (uint32_t probe = 0; probe < block->probes; probe++) {
		uint64_t address = block->entries + ((index + probe) & (block->capacity - 1)) * (uint64_t)block->entry_size;
		uint64_t seen;
		td_err_e err = read_at(agent, address, a, block->entry_size);

		if (err == TD_OK)
			err = read_at(agent, address, b, block->entry_size);
		if (err != TD_OK)
			return err;
		memcpy(&seen, a, sizeof(seen));
		if (seen == 0)
			return TD_NOSV;
		if (seen == key && entry_claimed(a, b)) {
			entry_decode(a, b, entry);
			return TD_OK;
		}
	}
	return TD_NOSV;
}

td_err_e tddb_sync_find(const struct td_thragent *agent, const struct tddb_sync_block *block, uint64_t object,
			struct tddb_sync_entry *entry)
{
	static const uint32_t order[] = { TDSTAT_SYNC_MUTEX, TDSTAT_SYNC_RWLOCK, TDSTAT_SYNC_SEMA, TDSTAT_SYNC_COND };

	if (object == 0 || (object & TDSTAT_SYNC_TYPE_MASK) != 0)
		return TD_NOSV;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		td_err_e err = find_typed(agent, block, tdstat_sync_key(object, order[i]), entry);

		if (err != TD_NOSV)
			return err;
	}
	return TD_NOSV;
}

static td_err_e write_at(struct td_thragent *agent, uint64_t address, const void *value, size_t size)
{
	return ps_pdwrite(agent->ph, (psaddr_t)(uintptr_t)address, value, size) == PS_OK ? TD_OK : TD_DBERR;
}

/* The controller's halves of the gates, all four. */
static td_err_e write_gates(struct td_thragent *agent, const struct tddb_sync_block *block, int16_t value)
{
	static const uint32_t gates[] = {
		offsetof(struct tdstat_sync_header, gate_mutex.half.tracking),
		offsetof(struct tdstat_sync_header, gate_rwlock.half.tracking),
		offsetof(struct tdstat_sync_header, gate_sem_wait.half.tracking),
		offsetof(struct tdstat_sync_header, gate_sem_post.half.tracking),
	};
	td_err_e err = TD_OK;

	for (size_t i = 0; i < sizeof(gates) / sizeof(gates[0]) && err == TD_OK; i++)
		err = write_at(agent, block->address + gates[i], &value, sizeof(value));
	return err;
}

/* Enable: control (a new epoch, on), then the gates; disable: the gates,
 * then control.  A failure leaves what was written: the gates alone send
 * calls to tracked paths that count nothing while control is off, and a
 * control word alone counts nothing the inline paths take. */
td_err_e tddb_sync_set_tracking(struct td_thragent *agent, bool on)
{
	struct tddb_sync_block block;
	uint64_t control;
	td_err_e err;

	pthread_mutex_lock(&agent->control_lock);
	err = tddb_sync_block(agent, &block);
	if (err == TD_OK && on) {
		control = (((block.control >> 1) + 1) << 1) | TDSTAT_SYNC_ON;
		err = write_at(agent, block.address + offsetof(struct tdstat_sync_header, control), &control,
			       sizeof(control));
		if (err == TD_OK)
			err = write_gates(agent, &block, 1);
	} else if (err == TD_OK) {
		control = block.control & ~TDSTAT_SYNC_ON;
		err = write_gates(agent, &block, 0);
		if (err == TD_OK)
			err = write_at(agent, block.address + offsetof(struct tdstat_sync_header, control), &control,
				       sizeof(control));
	}
	pthread_mutex_unlock(&agent->control_lock);
	return err;
}

uint32_t tddb_sync_td_type(uint32_t type)
{
	switch (type) {
	case TDSTAT_SYNC_MUTEX:
		return TD_SYNC_MUTEX;
	case TDSTAT_SYNC_COND:
		return TD_SYNC_COND;
	case TDSTAT_SYNC_RWLOCK:
		return TD_SYNC_RWLOCK;
	case TDSTAT_SYNC_SEMA:
		return TD_SYNC_SEMA;
	default:
		return TD_SYNC_UNKNOWN;
	}
}

/* A hold time from the samples: their mean times the locks. */
static uint64_t hold_estimate(const struct tddb_sync_entry *entry, uint64_t locks)
{
	if (entry->hold_samples == 0)
		return 0;
	return tddb_saturate_u64((unsigned __int128)entry->hold_sampled_ns * locks / entry->hold_samples);
}

static uint64_t sum(uint64_t a, uint64_t b)
{
	return tddb_saturate_u64((unsigned __int128)a + b);
}

/* region.h: a try count holds the tries that succeeded; Solaris' field
 * counts the calls, its _fail field the ones that failed. */
static uint64_t tries(uint64_t succeeded, uint64_t failed)
{
	return sum(succeeded, failed);
}

void tddb_sync_stats_of(const struct tddb_sync_block *block, const struct tddb_sync_entry *entry,
			td_syncstats_t *stats)
{
	(void)block;
	memset(&stats->ss_un, 0, sizeof(stats->ss_un));
#define FIELD_MUTEX(type, name, index) stats->ss_un.mutex.name = entry->count[index];
#define FIELD_COND(type, name, index) stats->ss_un.cond.name = entry->count[index];
#define FIELD_RWLOCK(type, name, index) stats->ss_un.rwlock.name = entry->count[index];
#define FIELD_SEMA(type, name, index) stats->ss_un.sema.name = entry->count[index];
	switch (entry->type) {
	case TDSTAT_SYNC_MUTEX:
		TDSTAT_SYNC_MUTEX_COUNTS(FIELD_MUTEX)
		/* Holds begin at a lock or a try that took it (sampled by
		 * either count), before the tries are made calls below. */
		stats->ss_un.mutex.mutex_hold_time = hold_estimate(
			entry, sum(stats->ss_un.mutex.mutex_lock, stats->ss_un.mutex.mutex_try));
		stats->ss_un.mutex.mutex_try = tries(stats->ss_un.mutex.mutex_try, stats->ss_un.mutex.mutex_try_fail);
		break;
	case TDSTAT_SYNC_COND:
		TDSTAT_SYNC_COND_COUNTS(FIELD_COND)
		break;
	case TDSTAT_SYNC_RWLOCK:
		TDSTAT_SYNC_RWLOCK_COUNTS(FIELD_RWLOCK)
		stats->ss_un.rwlock.rw_wrlock_hold_time = hold_estimate(
			entry, sum(stats->ss_un.rwlock.rw_wrlock, stats->ss_un.rwlock.rw_wrlock_try));
		stats->ss_un.rwlock.rw_rdlock_try =
			tries(stats->ss_un.rwlock.rw_rdlock_try, stats->ss_un.rwlock.rw_rdlock_try_fail);
		stats->ss_un.rwlock.rw_wrlock_try =
			tries(stats->ss_un.rwlock.rw_wrlock_try, stats->ss_un.rwlock.rw_wrlock_try_fail);
		break;
	case TDSTAT_SYNC_SEMA:
		TDSTAT_SYNC_SEMA_COUNTS(FIELD_SEMA)
		stats->ss_un.sema.sema_min_count = entry->count[TDSTAT_SYNC_SEMA_MIN_INDEX] ?
							   ~entry->count[TDSTAT_SYNC_SEMA_MIN_INDEX] : 0;
		stats->ss_un.sema.sema_trywait = tries(stats->ss_un.sema.sema_trywait, stats->ss_un.sema.sema_trywait_fail);
		break;
	}
#undef FIELD_MUTEX
#undef FIELD_COND
#undef FIELD_RWLOCK
#undef FIELD_SEMA
}
