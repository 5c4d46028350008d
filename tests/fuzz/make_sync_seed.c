/* SPDX-License-Identifier: MIT */
/*
 * Writes the seed `sync-table` of fuzz_agent (run once by hand, like
 * make-seeds.py; the seed is kept in git):
 *   cc -I include tests/fuzz/make_sync_seed.c -o /tmp/s && /tmp/s tests/fuzz/corpus/sync-table
 * An ABI 2.2 region of two records with its tracking block right after
 * them (a live shim's is megabytes away, past any seed): a mutex, a
 * semaphore and a condvar claimed where the shim's hash puts them, one
 * address with two types, a key of no known type; tracking on.  The
 * script runs the per-object calls (op 0xc7: iteration and statistics,
 * 0xe7/0xe6: tracking on and off).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tdstat/region.h>

#define RECORDS 2u
#define ENTRIES 8u

static unsigned char image[sizeof(struct tdstat_region_header) + RECORDS * (sizeof(struct tdstat_record) + sizeof(struct tdstat_detail)) +
			   sizeof(struct tdstat_sync_header) + ENTRIES * sizeof(struct tdstat_sync_entry)];

static struct tdstat_sync_entry *claim(struct tdstat_sync_entry *entries, uint64_t key)
{
	for (uint64_t i = 0; i < ENTRIES; i++) {
		struct tdstat_sync_entry *entry = &entries[(tdstat_sync_hash(key) + i) & (ENTRIES - 1)];

		if (!entry->key) {
			entry->key = key;
			entry->hold_samples = 2;
			entry->hold_sampled_ns = 100;
			return entry;
		}
	}
	exit(1);
}

int main(int argc, char **argv)
{
	static const unsigned char script[16] = { 0, 0, 0, 7, 0xc7, 0xe7, 0xc7, 0xe6, 0xc7, 0, 0xcf };
	struct tdstat_region_header *header = (struct tdstat_region_header *)image;
	size_t sync_at = sizeof(*header) + RECORDS * (sizeof(struct tdstat_record) + sizeof(struct tdstat_detail));
	struct tdstat_sync_header *sync = (struct tdstat_sync_header *)(image + sync_at);
	struct tdstat_sync_entry *entries = (struct tdstat_sync_entry *)(sync + 1);
	FILE *out;

	if (argc != 2)
		return 2;
	tdstat_region_header_describe(header, RECORDS);
	header->magic = TDSTAT_REGION_MAGIC;
	header->region_size = sizeof(image);
	header->sync_offset = (uint32_t)sync_at;
	header->sync_size = (uint32_t)(sizeof(image) - sync_at);
	header->control.window_start_ns = 1000;
	header->control.window_end_ns = 2000;
	header->status.capacity = RECORDS;
	sync->entries_offset = sizeof(*sync);
	sync->entry_size = sizeof(struct tdstat_sync_entry);
	sync->capacity = ENTRIES;
	sync->probes = 4;
	sync->hold_sample = TDSTAT_SYNC_HOLD_SAMPLE;
	sync->counts = TDSTAT_SYNC_COUNTS;
	sync->control = (UINT64_C(5) << 1) | TDSTAT_SYNC_ON;
	sync->gate_mutex.half.tracking = sync->gate_rwlock.half.tracking = 1;
	sync->gate_sem_wait.half.tracking = sync->gate_sem_post.half.tracking = 1;
	claim(entries, tdstat_sync_key(0x5000, TDSTAT_SYNC_MUTEX))->count[0] = 10;
	claim(entries, tdstat_sync_key(0x5000, TDSTAT_SYNC_RWLOCK))->count[5] = 4;
	claim(entries, tdstat_sync_key(0x6000, TDSTAT_SYNC_SEMA))->count[7] = ~UINT64_C(2);
	claim(entries, tdstat_sync_key(0x7000, TDSTAT_SYNC_COND))->count[5] = 9;
	claim(entries, UINT64_C(0x9007));
	out = fopen(argv[1], "wb");
	if (!out || fwrite(script, 1, sizeof(script), out) != sizeof(script) ||
	    fwrite(image, 1, sizeof(image), out) != sizeof(image) || fclose(out) != 0)
		return 1;
	return 0;
}
