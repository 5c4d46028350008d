/* SPDX-License-Identifier: MIT */
/*
 * Reading the shared region: validating its header once (td_ta_new), then
 * taking snapshots as docs/READER.md describes.  Every value read from the
 * target is untrusted.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "thread_db_private.h"

/* Bounds on retries (READER.md steps 3 and 4).  A writer preempted inside
 * its critical section keeps its record odd until it runs again, which on
 * a loaded machine takes milliseconds: retries are bounded by time as well
 * as by count, and yield so the writer can finish. */
#define CONTROL_COPIES_MAX 64
#define RECORD_RETRIES_MAX 1000
#define RETRY_BUDGET_NS (200 * 1000 * 1000ull)

/* Records are copied in chunks of this many bytes, so the memory a
 * snapshot needs does not depend on what the target claims. */
#define CHUNK_BYTES (64u * 1024u)

uint64_t tddb_monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static bool field_inside(uint32_t offset, uint32_t width, uint32_t size)
{
	return offset <= size && width <= size - offset;
}

td_err_e tddb_geometry_from_header(const struct tdstat_region_header *header, struct tddb_geometry *geometry)
{
	const struct tdstat_layout *layout = &header->layout;
	uint32_t record = header->record_size;
	uint64_t records_end;

	/* Not a region we know how to read. */
	if (header->magic != TDSTAT_REGION_MAGIC || header->abi_major != TDSTAT_ABI_MAJOR)
		return TD_VERSION;
	if (header->header_size < sizeof(struct tdstat_region_header) ||
	    header->layout_size < sizeof(struct tdstat_layout) || record < TDDB_RECORD_MIN)
		return TD_VERSION;

	/* Ours, but claiming what no shim writes: corrupted. */
	if (header->header_size > TDDB_HEADER_MAX || record > TDDB_RECORD_MAX ||
	    header->record_capacity > TDDB_CAPACITY_MAX || header->records_offset < header->header_size)
		return TD_DBERR;
	records_end = (uint64_t)header->records_offset + (uint64_t)header->record_capacity * record;
	if (header->region_size < records_end)
		return TD_DBERR;
	if (!field_inside(layout->control_offset, sizeof(struct tdstat_control), header->header_size) ||
	    !field_inside(layout->status_offset, sizeof(struct tdstat_status), header->header_size) ||
	    !field_inside(layout->record_seq, sizeof(uint32_t), record) ||
	    !field_inside(layout->record_state, sizeof(uint32_t), record) ||
	    !field_inside(layout->record_tid, sizeof(int32_t), record) ||
	    !field_inside(layout->record_epoch, sizeof(uint64_t), record) ||
	    !field_inside(layout->record_since, sizeof(uint64_t), record) ||
	    !field_inside(layout->record_acc_tracked, sizeof(uint64_t), record) ||
	    !field_inside(layout->record_acc_runnable, sizeof(uint64_t), record))
		return TD_DBERR;

	geometry->header_size = header->header_size;
	geometry->records_offset = header->records_offset;
	geometry->record_size = record;
	geometry->record_capacity = header->record_capacity;
	geometry->abi_minor = header->abi_minor;
	geometry->layout = *layout;
	return TD_OK;
}

static td_err_e region_read(const struct td_thragent *agent, uint64_t offset, void *buffer, size_t size)
{
	uintptr_t base = (uintptr_t)agent->region;

	if (offset > UINTPTR_MAX - base || size > UINTPTR_MAX - base - offset)
		return TD_DBERR;
	if (ps_pdread(agent->ph, (psaddr_t)(base + offset), buffer, size) != PS_OK)
		return TD_DBERR;
	return TD_OK;
}

static td_err_e header_copy(const struct td_thragent *agent, unsigned char *buffer)
{
	td_err_e err = region_read(agent, 0, buffer, agent->geometry.header_size);

	if (err != TD_OK)
		return err;
	/* Re-validated on every call: the region was rewritten (or the
	 * process exec'd and this address means something else). */
	if (memcmp(buffer, agent->identity, sizeof(agent->identity)) != 0)
		return TD_DBERR;
	return TD_OK;
}

/*
 * Two consecutive copies with identical control bytes: every control field
 * held its copied value across the gap between the copies, so together they
 * are the block as it was at one instant (the generation guards against a
 * field changing and changing back).
 */
td_err_e tddb_read_header(const struct td_thragent *agent, struct tddb_header_view *view)
{
	unsigned char copies[2][TDDB_HEADER_MAX];
	uint32_t control = agent->geometry.layout.control_offset;
	uint32_t status = agent->geometry.layout.status_offset;
	td_err_e err;
	int attempt, older = 0;

	err = header_copy(agent, copies[0]);
	for (attempt = 0; err == TD_OK && attempt < CONTROL_COPIES_MAX; attempt++) {
		int newer = !older;

		err = header_copy(agent, copies[newer]);
		if (err != TD_OK)
			break;
		if (memcmp(copies[older] + control, copies[newer] + control, sizeof(view->control)) == 0) {
			memcpy(&view->control, copies[newer] + control, sizeof(view->control));
			memcpy(&view->status, copies[newer] + status, sizeof(view->status));
			return TD_OK;
		}
		older = newer;
		if (attempt > 4)
			sched_yield();
	}
	return err != TD_OK ? err : TD_DBERR;
}

/* The record fields a reader uses, taken out at the layout's offsets. */
struct record_view {
	uint32_t seq;
	uint32_t state;
	uint64_t epoch_ns;
	uint64_t since_ns;
	uint64_t acc_tracked_ns;
	uint64_t acc_runnable_ns;
};

static void record_decode(const struct tdstat_layout *layout, const unsigned char *bytes, struct record_view *record)
{
	memcpy(&record->seq, bytes + layout->record_seq, sizeof(record->seq));
	memcpy(&record->state, bytes + layout->record_state, sizeof(record->state));
	memcpy(&record->epoch_ns, bytes + layout->record_epoch, sizeof(record->epoch_ns));
	memcpy(&record->since_ns, bytes + layout->record_since, sizeof(record->since_ns));
	memcpy(&record->acc_tracked_ns, bytes + layout->record_acc_tracked, sizeof(record->acc_tracked_ns));
	memcpy(&record->acc_runnable_ns, bytes + layout->record_acc_runnable, sizeof(record->acc_runnable_ns));
}

static uint32_t record_seq(const struct tdstat_layout *layout, const unsigned char *bytes)
{
	uint32_t seq;

	memcpy(&seq, bytes + layout->record_seq, sizeof(seq));
	return seq;
}

/*
 * Sums over the records.  The open intervals end at `end`, known only once
 * every record is read (READER.md takes `now` after the reads), so they are
 * kept as a count and a sum of starts: sum(end - s) = count * end - sum(s).
 * 128 bits hold 2^22 records of 64-bit values without overflow.
 */
struct record_sums {
	uint32_t live;
	uint32_t used;                 /* records that contributed anything */
	unsigned __int128 acc_tracked;
	unsigned __int128 acc_runnable;
	uint64_t open_tracked_count;
	unsigned __int128 open_tracked_starts;
	uint64_t open_runnable_count;
	unsigned __int128 open_runnable_starts;
};

/* What the window looks like before `now` is known. */
struct window_bounds {
	uint64_t start;   /* ws */
	uint64_t cap;     /* the end, were now infinite: disable time, exit time */
};

static uint64_t window_end(const struct window_bounds *bounds, uint64_t now)
{
	return tddb_min_u64(now, bounds->cap);
}

static uint64_t window_length(const struct window_bounds *bounds, uint64_t now)
{
	uint64_t end = window_end(bounds, now);

	return end > bounds->start ? end - bounds->start : 0;
}

static td_err_e record_add(const struct record_view *record, const struct window_bounds *bounds,
			   uint64_t read_ns, struct record_sums *sums)
{
	bool counted = false;

	if (record->state > TDSTAT_STATE_BLOCKED)
		return TD_DBERR;
	if (record->epoch_ns == bounds->start) {
		/* Closed intervals lie inside [ws, read_ns): clamp hostile values. */
		uint64_t tracked = tddb_min_u64(record->acc_tracked_ns, window_length(bounds, read_ns));
		uint64_t runnable = tddb_min_u64(record->acc_runnable_ns, tracked);

		sums->acc_tracked += tracked;
		sums->acc_runnable += runnable;
		counted = tracked != 0;
	}
	if (record->state != TDSTAT_STATE_FREE) {
		/* A record on an older window has not changed state since this
		 * one began (region.h): its open interval starts with it. */
		uint64_t start = record->epoch_ns == bounds->start ? tddb_max_u64(record->since_ns, bounds->start)
								   : bounds->start;

		sums->live++;
		counted = true;
		/* A start later than our own clock reading after the copy
		 * cannot come from an honest writer: it contributes nothing. */
		if (start < bounds->cap && start <= read_ns) {
			sums->open_tracked_count++;
			sums->open_tracked_starts += start;
			if (record->state == TDSTAT_STATE_RUNNABLE) {
				sums->open_runnable_count++;
				sums->open_runnable_starts += start;
			}
		}
	}
	if (counted)
		sums->used++;
	return TD_OK;
}

struct retry_budget {
	uint64_t deadline_ns;
};

static bool seq_stable(uint32_t first, uint32_t second)
{
	return first == second && (first & 1u) == 0;
}

/* Re-reads one record until two copies agree (READER.md step 4). */
static td_err_e record_reread(const struct td_thragent *agent, uint64_t offset, unsigned char *first,
			      unsigned char *second, struct retry_budget *budget)
{
	const struct tdstat_layout *layout = &agent->geometry.layout;
	uint32_t size = agent->geometry.record_size;
	int attempt;

	for (attempt = 0; attempt < RECORD_RETRIES_MAX; attempt++) {
		td_err_e err = region_read(agent, offset, first, size);

		if (err == TD_OK)
			err = region_read(agent, offset, second, size);
		if (err != TD_OK)
			return err;
		if (seq_stable(record_seq(layout, first), record_seq(layout, second)))
			return TD_OK;
		if (tddb_monotonic_ns() > budget->deadline_ns)
			break;
		if (attempt > 2)
			sched_yield();
	}
	return TD_DBERR;
}

static td_err_e records_read(const struct td_thragent *agent, uint32_t count, const struct window_bounds *bounds,
			     struct record_sums *sums)
{
	const struct tddb_geometry *geometry = &agent->geometry;
	uint32_t size = geometry->record_size;
	uint32_t per_chunk = CHUNK_BYTES / size;
	struct retry_budget budget = { tddb_monotonic_ns() + RETRY_BUDGET_NS };
	unsigned char *first, *second;
	td_err_e err = TD_OK;
	uint32_t base;

	if (count == 0)
		return TD_OK;
	first = malloc(2 * (size_t)per_chunk * size);
	if (!first)
		return TD_MALLOC;
	second = first + (size_t)per_chunk * size;

	for (base = 0; base < count && err == TD_OK; base += per_chunk) {
		uint32_t n = count - base < per_chunk ? count - base : per_chunk;
		uint64_t offset = geometry->records_offset + (uint64_t)base * size;
		uint64_t read_ns;
		uint32_t i;

		err = region_read(agent, offset, first, (size_t)n * size);
		if (err == TD_OK)
			err = region_read(agent, offset, second, (size_t)n * size);
		for (i = 0; i < n && err == TD_OK; i++) {
			unsigned char *a = first + (size_t)i * size, *b = second + (size_t)i * size;

			if (!seq_stable(record_seq(&geometry->layout, a), record_seq(&geometry->layout, b)))
				err = record_reread(agent, offset + (uint64_t)i * size, a, b, &budget);
		}
		read_ns = tddb_monotonic_ns();
		for (i = 0; i < n && err == TD_OK; i++) {
			struct record_view record;

			record_decode(&geometry->layout, first + (size_t)i * size, &record);
			err = record_add(&record, bounds, read_ns, sums);
		}
	}
	free(first);
	return err;
}

static uint64_t open_total(uint64_t count, unsigned __int128 starts, uint64_t end)
{
	unsigned __int128 ends = (unsigned __int128)count * end;

	/* Every counted start is <= end (record_add), so this never wraps. */
	return tddb_saturate_u64(ends > starts ? ends - starts : 0);
}

td_err_e tddb_snapshot(const struct td_thragent *agent, struct tddb_snapshot *snapshot)
{
	struct tddb_header_view view;
	struct record_sums sums = { 0 };
	struct window_bounds bounds;
	unsigned __int128 tracked, runnable, bound;
	uint64_t now, end, length;
	uint32_t count;
	td_err_e err;

	err = tddb_read_header(agent, &view);
	if (err != TD_OK)
		return err;
	snapshot->control = view.control;
	snapshot->enabled = view.control.window_end_ns == TDSTAT_WINDOW_OPEN;
	bounds.start = view.control.window_start_ns;
	bounds.cap = snapshot->enabled ? UINT64_MAX : view.control.window_end_ns;
	if (view.status.exit_ns != 0)
		bounds.cap = tddb_min_u64(bounds.cap, view.status.exit_ns);

	count = view.status.high_water < agent->geometry.record_capacity ? view.status.high_water
									   : agent->geometry.record_capacity;
	err = records_read(agent, count, &bounds, &sums);
	if (err != TD_OK)
		return err;

	now = tddb_monotonic_ns();
	end = window_end(&bounds, now);
	length = window_length(&bounds, now);
	snapshot->now_ns = now;
	snapshot->window_ns = length;
	snapshot->live = sums.live;
	snapshot->overflow_live = view.status.overflow_live;
	if (length == 0) {
		snapshot->tracked_ns = 0;
		snapshot->runnable_ns = 0;
		return TD_OK;
	}
	tracked = sums.acc_tracked + open_total(sums.open_tracked_count, sums.open_tracked_starts, end);
	runnable = sums.acc_runnable + open_total(sums.open_runnable_count, sums.open_runnable_starts, end);
	/* Hostile records could claim more than |W| each: keep the invariants
	 * runnable <= tracked <= |W| * (records that took part). */
	bound = (unsigned __int128)length * sums.used;
	if (tracked > bound)
		tracked = bound;
	if (runnable > tracked)
		runnable = tracked;
	snapshot->tracked_ns = tddb_saturate_u64(tracked);
	snapshot->runnable_ns = tddb_saturate_u64(runnable);
	return TD_OK;
}
