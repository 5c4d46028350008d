/* SPDX-License-Identifier: MIT */
/*
 * What the fixture programs share: finding the shim's region in their own
 * process, reading records as a reader would (seqlock copies), acting as a
 * controller (the write orders of region.h), and a minimal snapshot
 * following docs/READER.md without its clamps, so that a shim writing
 * impossible integrals shows up instead of being hidden.
 *
 * Fixtures print what they observe as "key=value" lines; the Criterion
 * tests decide.  Waiting for another thread is done by spinning with
 * sched_yield (not interposed), so the observing thread stays RUNNABLE.
 */
#ifndef RT_FIXTURE_H
#define RT_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <tdstat/region.h>

/* Generous: a safety net against hangs, never a measurement. */
#define FX_TIMEOUT_MS 10000

struct fx_record {
	uint32_t seq;
	TDSTAT_RECORD_COPY_FIELDS(TDSTAT_FIELD_DECLARE) /* the published copy's */
	bool settled;         /* no change under way: pending_ns <= since_ns */
};

struct fx_snapshot {
	bool enabled;
	uint64_t window_ns;   /* |W| */
	uint64_t tracked_ns;  /* integral of tracked threads over W */
	uint64_t runnable_ns; /* integral of RUNNABLE threads over W */
	uint64_t idle_ns;     /* tracked - runnable */
	int live;             /* records not FREE */
	int impossible;       /* records whose values break region.h's rules */
};

_Noreturn void fx_die(const char *format, ...);

/* The region through dlsym(RTLD_DEFAULT); dies when the shim is absent. */
struct tdstat_region *fx_region(void);

pid_t fx_gettid(void);
uint64_t fx_now_ns(void);
/* Spins (no interposed call) for at least ns nanoseconds. */
void fx_spin_ns(uint64_t ns);

/* A consistent copy of records[index]; dies if none comes (bounded). */
struct fx_record fx_read_record(uint32_t index);
/* Index of the live record whose tid is tid, or -1. */
int fx_find_record(pid_t tid);
/* Copy of the live record of tid; state FREE and seq 0 if there is none. */
struct fx_record fx_record_of(pid_t tid);
int fx_live_records(void);
/* Waits until tid's record is in state; false after FX_TIMEOUT_MS. */
bool fx_wait_state(pid_t tid, uint32_t state);
/* Waits until the number of live records equals count. */
bool fx_wait_live(int count);
const char *fx_state_name(uint32_t state);
/* region.h's name of a wait kind ("mutex", ...), "?" for another number. */
const char *fx_kind_name(uint32_t kind);

/* Controller writes, in region.h's orders. */
void fx_enable(void);
void fx_disable(void);
void fx_reset(void);

struct fx_snapshot fx_snapshot(void);
/* Prints the snapshot as name.key=value lines. */
void fx_print_snapshot(const char *name, const struct fx_snapshot *snapshot);

#endif /* RT_FIXTURE_H */
