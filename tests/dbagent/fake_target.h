/* SPDX-License-Identifier: MIT */
/*
 * A fake target for libc_db: the test program itself defines the ps_*
 * routines (exported with ENABLE_EXPORTS) and serves a region image built
 * in memory from region.h, so a test can make the target say anything:
 * a valid region, another ABI, torn records, random bytes, failing reads.
 */
#ifndef TDSTAT_TESTS_FAKE_TARGET_H
#define TDSTAT_TESTS_FAKE_TARGET_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <proc_service.h>
#include <tdstat/region.h>

/* Where the image seems to live in the fake target's address space. */
#define FAKE_REGION_ADDRESS ((uintptr_t)0x7f0000100000u)

struct ps_prochandle {
	pthread_mutex_t lock;       /* image, counters and knobs below */
	unsigned char *image;
	size_t image_size;
	ps_err_e lookup_result;     /* what ps_pglobal_lookup answers */
	bool fail_reads;
	int writes_before_failure;  /* the write after this many fails, once; <0: none */
	int torn_reads;             /* this many record reads see a seq that moved */
	bool random_reads;          /* every read returns random bytes */
	/* A writer of the test, run under the lock at every read that the
	 * image serves: before the copy (`mid` false), and when that call
	 * returns a cut inside the read, again after the first `cut` bytes
	 * are copied (a change landing in the middle of one read). */
	size_t (*on_read)(struct ps_prochandle *ph, size_t size, bool mid);
	/* Run at every write before it lands, without the lock (a test may
	 * read the target from there, as a reader racing the writer). */
	void (*before_write)(struct ps_prochandle *ph, psaddr_t address, const void *buffer, size_t size);
	unsigned long reads, writes;
	unsigned long read_bytes;   /* what the reads asked for */
	unsigned int seed;
	char last_object[64];       /* the object name of the last lookup */
};

/* A valid region with `capacity` records, `used` of them in use so far,
 * gathering off and an empty window. */
void fake_target_init(struct ps_prochandle *ph, uint32_t capacity, uint32_t used);
void fake_target_destroy(struct ps_prochandle *ph);

/* Gives the region change marks (ABI 2.3), all zero; a writer of the
 * test then moves a record's (fake_mark) as the shim does. */
void fake_target_add_marks(struct ps_prochandle *ph);
/* The change mark of a record, or NULL without marks. */
uint32_t *fake_mark(struct ps_prochandle *ph, uint32_t index);

struct tdstat_region_header *fake_header(struct ps_prochandle *ph);
struct tdstat_record *fake_record(struct ps_prochandle *ph, uint32_t index);
/* The published copy of a record (region.h's latch). */
struct tdstat_record_copy *fake_copy(struct ps_prochandle *ph, uint32_t index);

uint64_t fake_monotonic_ns(void);

#endif /* TDSTAT_TESTS_FAKE_TARGET_H */
