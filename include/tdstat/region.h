/* SPDX-License-Identifier: MIT */
/*
 * The shared region: the ABI between libtdshim.so (the writer, inside the
 * target process) and libc_db.so (the reader, in a controlling process).
 *
 * One exported data symbol, TDSTAT_REGION_SYMBOL, of type
 * struct tdstat_region, 64-byte aligned, leads to everything.  It holds no pointers: a reader
 * copies it with ps_pdread and validates every size, count and offset.
 *
 * Versioning: a reader accepts a region whose abi_major equals its own and
 * whose header_size, record_size and layout table cover the fields it uses;
 * minor versions only append fields (to the header or to a record) and
 * never move one.  Anything else is TD_VERSION.
 *
 * Time is CLOCK_MONOTONIC in nanoseconds, the same clock in every process
 * of the machine, so a controller can stamp a window start that the
 * target's threads compare with their own clock readings.
 *
 * Writers and what they may write:
 *   - each record: only the thread that owns it (single writer), under the
 *     record's sequence counter;
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
#define TDSTAT_ABI_MAJOR 1
#define TDSTAT_ABI_MINOR 0

/* Records in the region: the most threads tracked at once.  Past it,
 * threads are counted in status.overflow_live and not integrated. */
#define TDSTAT_RECORD_CAPACITY 32768u

/* control.window_end_ns while gathering is on. */
#define TDSTAT_WINDOW_OPEN UINT64_MAX

/* record.state */
enum tdstat_thread_state {
	TDSTAT_STATE_FREE = 0,     /* slot not in use */
	TDSTAT_STATE_RUNNABLE = 1, /* tracked, not waiting in an interposed call */
	TDSTAT_STATE_BLOCKED = 2,  /* tracked, waiting in an interposed call */
};

/*
 * One thread's record, one cache line so no two writers share a line.
 *
 * Sequence rule (a seqlock with a single writer): the owner makes seq odd,
 * issues a write barrier, writes the other fields, issues a write barrier
 * and makes seq even again.  A reader that copies the record twice and sees
 * the same even seq in both copies holds a consistent first copy.
 *
 * Integrals: acc_tracked_ns and acc_runnable_ns are the tracked and
 * RUNNABLE time of all closed intervals of this slot (across the threads
 * that used it) that fall inside the window starting at epoch_ns.  The
 * interval still open, [since_ns, now) in the current state, is not in
 * them.  When epoch_ns differs from control.window_start_ns the
 * accumulators belong to an older window and count as zero, and the open
 * interval counts from the window's start: the record has not changed
 * state since the window was published (a change made in the instant
 * between the controller reading its clock and its write landing may have
 * set since_ns a little later; that instant counts in the current state).
 */
struct tdstat_record {
	uint32_t seq;
	uint32_t state;       /* enum tdstat_thread_state */
	int32_t tid;          /* kernel thread id; 0 until the thread first runs */
	uint32_t generation;  /* bumped each time the slot is claimed */
	uint64_t epoch_ns;    /* window the accumulators belong to */
	uint64_t since_ns;    /* start of the open interval in `state` */
	uint64_t acc_tracked_ns;
	uint64_t acc_runnable_ns;
	uint64_t reserved[2];
};

/*
 * Written by a controller (and by the shim at start and in a fork child).
 * Every intermediate state of the documented write orders is a valid
 * (possibly empty) window:
 *   enable at T:            window_start_ns = T, cpu_start, then window_end_ns = OPEN
 *   disable at T:           cpu_end, then window_end_ns = T
 *   reset at T, enabled:    cpu_start, window_start_ns = T
 *   reset at T, disabled:   window_start_ns = T, window_end_ns = T
 * Gathering is on exactly while window_end_ns == TDSTAT_WINDOW_OPEN.
 * generation is bumped after each change so a reader can tell that the
 * block it copied was not being rewritten.
 */
struct tdstat_control {
	uint64_t window_start_ns;
	uint64_t window_end_ns;
	uint64_t cpu_start_ns; /* process CPU clock at window start */
	uint64_t cpu_end_ns;   /* process CPU clock at window end (disabled) */
	uint64_t generation;
	int32_t r_concurrency; /* pthread_setconcurrency / td_ta_setconcurrency */
	uint32_t reserved0;
	uint64_t reserved[2];
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

/* Byte offsets of the fields a reader of ABI major 1 uses.  A future minor
 * version appends entries; readers check layout_size before using one. */
struct tdstat_layout {
	uint16_t control_offset;
	uint16_t status_offset;
	uint16_t record_seq;
	uint16_t record_state;
	uint16_t record_tid;
	uint16_t record_epoch;
	uint16_t record_since;
	uint16_t record_acc_tracked;
	uint16_t record_acc_runnable;
	uint16_t reserved[7];
};

struct tdstat_region_header {
	uint64_t magic;
	uint16_t abi_major;
	uint16_t abi_minor;
	uint32_t header_size;     /* sizeof(struct tdstat_region_header) */
	uint64_t region_size;     /* header_size + record_capacity * record_size, padded */
	uint32_t records_offset;  /* from the start of the region */
	uint32_t record_size;
	uint32_t record_capacity; /* records in the array */
	uint32_t layout_size;     /* sizeof(struct tdstat_layout) */
	struct tdstat_layout layout;
	uint8_t pad0[56];       /* control starts on its own cache line */
	struct tdstat_control control; /* own cache lines: read on slow paths */
	struct tdstat_status status;   /* own cache lines: written on create/exit */
};

struct tdstat_region {
	struct tdstat_region_header header;
	struct tdstat_record records[TDSTAT_RECORD_CAPACITY];
};

/*
 * Fills the self-description of a header for `record_capacity` records
 * placed right after it: sizes, ABI numbers and the layout table, but not
 * the magic (the shim writes it last, once the rest is in place), the
 * control block or the status block.
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
	header->region_size = sizeof(struct tdstat_region_header) +
			      (uint64_t)record_capacity * sizeof(struct tdstat_record);
	header->layout_size = sizeof(struct tdstat_layout);
	header->layout = (struct tdstat_layout){
		.control_offset = offsetof(struct tdstat_region_header, control),
		.status_offset = offsetof(struct tdstat_region_header, status),
		.record_seq = offsetof(struct tdstat_record, seq),
		.record_state = offsetof(struct tdstat_record, state),
		.record_tid = offsetof(struct tdstat_record, tid),
		.record_epoch = offsetof(struct tdstat_record, epoch_ns),
		.record_since = offsetof(struct tdstat_record, since_ns),
		.record_acc_tracked = offsetof(struct tdstat_record, acc_tracked_ns),
		.record_acc_runnable = offsetof(struct tdstat_record, acc_runnable_ns),
	};
}

#define TDSTAT_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)

TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_record) == 64, "record is one cache line");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_record, seq) == 0, "seq first");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_record, epoch_ns) == 16, "record layout");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_record, acc_runnable_ns) == 40, "record layout");
TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_layout) == 32, "layout table");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_region_header, layout) == 40, "header layout");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_region_header, control) == 128, "control on its own line");
TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_control) == 64, "control is one line");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_region_header, status) == 192, "status on its own line");
TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_status) == 64, "status is one line");
TDSTAT_STATIC_ASSERT(sizeof(struct tdstat_region_header) == 256, "header size");
TDSTAT_STATIC_ASSERT(offsetof(struct tdstat_region, records) == 256, "records follow the header");

#endif /* TDSTAT_REGION_H */
