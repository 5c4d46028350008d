/* SPDX-License-Identifier: MIT */
/*
 * Record slots: a lock-free stack of released slots, then a bump
 * allocator up to the capacity.  Both are async-signal-safe and
 * allocate nothing.
 *
 * The stack head packs a 32-bit tag with a 32-bit (index + 1); the tag
 * changes on every successful push and pop, which rules out ABA.  The links
 * live in a private array (not in the exported region): they are shim
 * internals a reader has no use for.
 */
#include <string.h>

#include "shim.h"

#define SLOT_NONE 0u

static uint32_t slot_next[TDSTAT_RECORD_CAPACITY]; /* index + 1 of the next free slot */
static uint64_t free_head;                          /* tag << 32 | (index + 1) */

static uint64_t pack(uint64_t tag, uint32_t link)
{
	return tag << 32 | link;
}

static struct tdstat_record *pop_released(void)
{
	uint64_t head = uatomic_read(&free_head);

	for (;;) {
		uint32_t link = (uint32_t)head;
		if (link == SLOT_NONE)
			return NULL;
		uint32_t next = CMM_LOAD_SHARED(slot_next[link - 1]);
		uint64_t seen = uatomic_cmpxchg(&free_head, head, pack((head >> 32) + 1, next));
		if (seen == head)
			return &tdstat_region.records[link - 1];
		head = seen;
	}
}

static struct tdstat_record *bump(void)
{
	struct tdstat_status *status = &tdstat_region.header.status;
	uint32_t capacity = CMM_LOAD_SHARED(status->capacity);
	uint32_t used = uatomic_read(&status->high_water);

	while (used < capacity) {
		uint32_t seen = uatomic_cmpxchg(&status->high_water, used, used + 1);
		if (seen == used)
			return &tdstat_region.records[used];
		used = seen;
	}
	return NULL;
}

struct tdstat_record *tdshim_slot_claim(void)
{
	struct tdstat_record *record = pop_released();

	return record ? record : bump();
}

/* The record must already be FREE: its owner wrote that last. */
void tdshim_slot_release(struct tdstat_record *record)
{
	uint32_t index = (uint32_t)(record - tdstat_region.records);
	uint64_t head = uatomic_read(&free_head);

	for (;;) {
		CMM_STORE_SHARED(slot_next[index], (uint32_t)head);
		uint64_t seen = uatomic_cmpxchg(&free_head, head, pack((head >> 32) + 1, index + 1));
		if (seen == head)
			return;
		head = seen;
	}
}

/* In a fork child only the forking thread survives: every slot is free
 * again.  Records are cleared up to the high-water mark only, so a child
 * of a small program touches little memory. */
void tdshim_slots_reset_after_fork(void)
{
	struct tdstat_status *status = &tdstat_region.header.status;

	memset(tdstat_region.records, 0, status->high_water * sizeof(struct tdstat_record));
	/* Their marks too, block by block (region.h, ABI 2.3). */
	memset(tdstat_region.changes, 0,
	       (status->high_water + TDSTAT_CHANGES_BLOCK - 1) / TDSTAT_CHANGES_BLOCK * TDSTAT_CHANGES_BLOCK *
		       sizeof(tdstat_region.changes[0]));
	free_head = 0;
	status->high_water = 0;
	status->overflow_live = 0;
	status->overflow_total = 0;
}

void tdshim_slots_hide_from_race_detectors(void)
{
	tdshim_hide_from_race_detectors(slot_next, sizeof(slot_next));
	tdshim_hide_from_race_detectors(&free_head, sizeof(free_head));
}
