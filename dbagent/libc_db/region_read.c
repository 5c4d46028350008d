/* SPDX-License-Identifier: MIT */
/*
 * Reading the shared region: validating its header once (td_ta_new), then
 * copying the records as docs/READER.md describes and handing each one,
 * decoded, with its integrals in the window, to a visitor.  What is added
 * up (process sums, per-kind sums, a thread list) is the visitors'
 * business; copying is this file's.  Every value read from the target is
 * untrusted.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "thread_db_private.h"

/* Bounds on retries (READER.md steps 3 and 4).  A record is re-read only
 * when its writer published a new copy between our two reads; a writer
 * that stopped anywhere leaves its published copy alone, so a record that
 * keeps failing belongs to a thread changing state at a high rate:
 * bounded by time as well as count, yielding so it can run. */
#define CONTROL_COPIES_MAX 64
#define CONTROL_COPIES_HARD_MAX 100000
#define CONTROL_BUDGET_NS (100 * 1000 * 1000ull)
#define RECORD_RETRIES_MAX 10000
#define RETRY_BUDGET_NS (200 * 1000 * 1000ull)
#define RECORD_TRIES_PAST_BUDGET 8

/* Records are copied in chunks of this many bytes, so the memory a
 * snapshot needs does not depend on what the target claims. */
#define CHUNK_BYTES (64u * 1024u)

/* Records read with the header at most (header_and_records): every
 * read of a live target costs a system call and a page walk, so a
 * thousand records come in one read rather than one a chunk. */
#define LEAD_BYTES_MAX (256u * 1024u)

/* The kept sums (struct tddb_chunk_kinds) are of groups of this many
 * records of a chunk: a chunk where a band of records moved adds up
 * the groups outside the band from their sums, without decoding their
 * records. */
#define SUM_GROUP_RECORDS 64u

static uint32_t groups_per_chunk(uint32_t per_chunk)
{
	return (per_chunk + SUM_GROUP_RECORDS - 1) / SUM_GROUP_RECORDS;
}

/* The change marks (ABI 2.3) of this many records at most are read at
 * once: one read for a whole snapshot of a few thousand threads. */
#define MARKS_AHEAD 8192u
/* ... and only for targets with more than this many bytes of records in
 * use: for fewer, the header with the records in one read
 * (header_and_records) costs less than the header, the marks and the
 * header again (3.96 against 6.90 us for one thread, hot). */
#define MARKS_MIN_BYTES (32u * 1024u)

/* Kept details asked for this many records ahead of their decoding. */
#define DETAIL_PREFETCH 4

static bool field_inside(uint32_t offset, uint32_t width, uint32_t size)
{
	return offset <= size && width <= size - offset;
}

static bool record_layout_valid(const struct tdstat_layout *layout, uint32_t record_size, uint32_t detail_size)
{
	uint32_t copy = layout->record_copy_size, detail = layout->detail_copy_size;

	if (copy == 0 || detail == 0 || layout->kind_count < TDSTAT_WAIT_KIND_COUNT)
		return false;
	if (!field_inside(layout->record_seq, sizeof(uint32_t), record_size) ||
	    !field_inside(layout->record_pending, sizeof(uint64_t), record_size) ||
	    !field_inside(layout->record_copies, 2 * copy, record_size) ||
	    !field_inside(layout->detail_copies, 2 * detail, detail_size))
		return false;
#define CHECK_COPY_FIELD(type, name, dims) \
	if (!field_inside(layout->name, TDSTAT_FIELD_SIZE(type, dims), copy)) \
		return false;
#define CHECK_DETAIL_FIELD(type, name, dims) \
	if (!field_inside(layout->name, TDSTAT_FIELD_SIZE(type, dims), detail)) \
		return false;
	TDSTAT_RECORD_COPY_FIELDS(CHECK_COPY_FIELD)
	TDSTAT_DETAIL_COPY_FIELDS(CHECK_DETAIL_FIELD)
#undef CHECK_DETAIL_FIELD
#undef CHECK_COPY_FIELD
	return true;
}

/* Whether the copies' known fields are where this reader's structs have
 * them (geometry.native_copies). */
static bool native_copies(const struct tdstat_region_header *header)
{
	const struct tdstat_layout *layout = &header->layout;

	if (layout->record_copy_size < sizeof(struct tdstat_record_copy) ||
	    layout->detail_copy_size < sizeof(struct tdstat_detail_copy))
		return false;
	/* Read in place (record_copy_at): every copy at an address its
	 * struct may have, in buffers malloc aligns. */
	if ((header->record_size | header->detail_size | layout->record_copies | layout->record_copy_size |
	     layout->detail_copies | layout->detail_copy_size) % _Alignof(uint64_t) != 0)
		return false;
#define SAME_COPY_FIELD(type, name, dims) \
	if (layout->name != offsetof(struct tdstat_record_copy, name)) \
		return false;
#define SAME_DETAIL_FIELD(type, name, dims) \
	if (layout->name != offsetof(struct tdstat_detail_copy, name)) \
		return false;
	TDSTAT_RECORD_COPY_FIELDS(SAME_COPY_FIELD)
	TDSTAT_DETAIL_COPY_FIELDS(SAME_DETAIL_FIELD)
#undef SAME_DETAIL_FIELD
#undef SAME_COPY_FIELD
	return true;
}

td_err_e tddb_geometry_from_header(const struct tdstat_region_header *header, struct tddb_geometry *geometry)
{
	const struct tdstat_layout *layout = &header->layout;
	uint64_t records_end, details_end;

	/* Not a region we know how to read: another major, or one smaller
	 * than the first minor of ours.  Any minor of our major is ours
	 * (docs/CONTRACT.md §4, "Versions"): an older one lacks what later minors added,
	 * which is then absent (TDSTAT_ABI_MINOR's list in region.h), a
	 * newer one has more, which we do not read.  So the least we
	 * require is minor 0's, never this reader's own struct sizes. */
	if (header->magic != TDSTAT_REGION_MAGIC || header->abi_major != TDSTAT_ABI_MAJOR)
		return TD_VERSION;
	if (header->header_size < TDSTAT_ABI_2_0_HEADER_SIZE || header->layout_size < TDSTAT_ABI_2_0_LAYOUT_SIZE)
		return TD_VERSION;

	/* Ours, but claiming what no shim writes: corrupted. */
	if (header->header_size > TDDB_HEADER_MAX || header->record_size > TDDB_RECORD_MAX ||
	    header->detail_size > TDDB_DETAIL_MAX || header->record_capacity > TDDB_CAPACITY_MAX ||
	    header->records_offset < header->header_size || header->details_offset < header->header_size ||
	    header->commit_lag_ns > TDDB_COMMIT_LAG_MAX || header->stall_ns > TDDB_STALL_MAX)
		return TD_DBERR;
	records_end = (uint64_t)header->records_offset + (uint64_t)header->record_capacity * header->record_size;
	details_end = (uint64_t)header->details_offset + (uint64_t)header->record_capacity * header->detail_size;
	if (header->region_size < records_end || header->region_size < details_end)
		return TD_DBERR;
	if (!field_inside(layout->control_offset, sizeof(struct tdstat_control), header->header_size) ||
	    !field_inside(layout->status_offset, sizeof(struct tdstat_status), header->header_size))
		return TD_DBERR;
	/* Records whose fields do not fit where the layout puts them: a
	 * layout this reader cannot read safely. */
	if (!record_layout_valid(layout, header->record_size, header->detail_size))
		return TD_VERSION;

	geometry->header_size = header->header_size;
	geometry->records_offset = header->records_offset;
	geometry->record_size = header->record_size;
	geometry->record_capacity = header->record_capacity;
	geometry->details_offset = header->details_offset;
	geometry->detail_size = header->detail_size;
	geometry->commit_lag_ns = header->commit_lag_ns;
	geometry->stall_ns = tddb_max_u64(header->stall_ns, TDSTAT_STALL_NS);
	geometry->abi_minor = header->abi_minor;
	geometry->changes_offset = 0;
	if (header->abi_minor >= 3 && header->changes_offset != 0) {
		uint64_t blocks = ((uint64_t)header->record_capacity + TDSTAT_CHANGES_BLOCK - 1) / TDSTAT_CHANGES_BLOCK;

		if (header->changes_offset < header->header_size || header->changes_offset % sizeof(uint32_t) != 0 ||
		    header->changes_offset + blocks * TDSTAT_CHANGES_BLOCK * sizeof(uint32_t) > header->region_size)
			return TD_DBERR;
		geometry->changes_offset = header->changes_offset;
	}
	geometry->layout = *layout;
	geometry->native_copies = native_copies(header);
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
 * The control block this agent last read whole, when this copy of the
 * header holds it byte for byte: no second copy is needed (below).  A
 * kept block another call is using or replacing is not waited for: the
 * copy then takes the two-copy rule.
 */
static bool control_as_kept(const struct td_thragent *agent, const unsigned char *control)
{
	struct td_thragent *mutable = (struct td_thragent *)agent;
	bool same = false;

	if (pthread_mutex_trylock(&mutable->control_kept.lock) != 0)
		return false;
	same = mutable->control_kept.valid &&
	       memcmp(&mutable->control_kept.control, control, sizeof(mutable->control_kept.control)) == 0;
	pthread_mutex_unlock(&mutable->control_kept.lock);
	return same;
}

static void control_keep(const struct td_thragent *agent, const struct tdstat_control *control)
{
	struct td_thragent *mutable = (struct td_thragent *)agent;

	if (control->rewriting != 0 || pthread_mutex_trylock(&mutable->control_kept.lock) != 0)
		return;
	mutable->control_kept.control = *control;
	mutable->control_kept.valid = true;
	pthread_mutex_unlock(&mutable->control_kept.lock);
}

/*
 * Two consecutive copies with identical control bytes: every control field
 * held its copied value across the gap between the copies, so together they
 * are the block as it was at one instant (the generation guards against a
 * field changing and changing back).
 *
 * The first of the two may be the last block this agent read whole, taken
 * at an earlier call: one copy that holds it byte for byte is the block
 * as it stood then and still stands.  Every field of the copy has that
 * block's value, whenever within the copy it was read; a controller that
 * began a change during the copy wrote `rewriting` and later the
 * generation, so a copy that took any of its new values differs, and
 * one that took none is the block before the change.  So a reader that
 * samples a target whose control block did not change (every line of
 * `tdstat` between resets) reads the header once, not twice: on a live
 * target each read is a system call, most of a snapshot's fixed cost
 * after a sleep.
 */
td_err_e tddb_read_header(const struct td_thragent *agent, struct tddb_header_view *view)
{
	unsigned char copies[2][TDDB_HEADER_MAX];
	uint32_t control = agent->geometry.layout.control_offset;
	uint32_t status = agent->geometry.layout.status_offset;
	td_err_e err;
	int attempt, older = 0;

	uint64_t deadline = 0;

	err = header_copy(agent, copies[0]);
	if (err == TD_OK && control_as_kept(agent, copies[0] + control)) {
		memcpy(&view->control, copies[0] + control, sizeof(view->control));
		memcpy(&view->status, copies[0] + status, sizeof(view->status));
		return TD_OK;
	}
	/* Bounded by count and, past CONTROL_COPIES_MAX (controllers
	 * rewriting the block without pause, on a loaded machine), by time. */
	for (attempt = 0; err == TD_OK && attempt < CONTROL_COPIES_HARD_MAX; attempt++) {
		int newer = !older;

		if (attempt == CONTROL_COPIES_MAX)
			deadline = tddb_monotonic_ns() + CONTROL_BUDGET_NS;
		if (attempt > CONTROL_COPIES_MAX && tddb_monotonic_ns() > deadline)
			break;

		err = header_copy(agent, copies[newer]);
		if (err != TD_OK)
			break;
		uint64_t rewriting;

		memcpy(&rewriting, copies[newer] + control + offsetof(struct tdstat_control, rewriting),
		       sizeof(rewriting));
		/* A controller between its first and last write: wait for it
		 * (bounded; one that died there leaves a valid window). */
		if (rewriting != 0 && attempt < CONTROL_COPIES_MAX / 2) {
			older = newer;
			sched_yield();
			continue;
		}
		if (memcmp(copies[older] + control, copies[newer] + control, sizeof(view->control)) == 0) {
			memcpy(&view->control, copies[newer] + control, sizeof(view->control));
			memcpy(&view->status, copies[newer] + status, sizeof(view->status));
			control_keep(agent, &view->control);
			return TD_OK;
		}
		older = newer;
		if (attempt > 4)
			sched_yield();
	}
	return err != TD_OK ? err : TD_DBERR;
}

/* (stats.c: a CPU reading taken after a snapshot's reads.)  Any
 * controller's first write, `rewriting = 1`, changes the bytes. */
td_err_e tddb_control_held(const struct td_thragent *agent, const struct tdstat_control *control, bool *held)
{
	unsigned char copy[TDDB_HEADER_MAX];
	td_err_e err = header_copy(agent, copy);

	*held = err == TD_OK && memcmp(copy + agent->geometry.layout.control_offset, control, sizeof(*control)) == 0;
	return err;
}

static uint32_t u32_at(const unsigned char *bytes, uint32_t offset)
{
	uint32_t value;

	memcpy(&value, bytes + offset, sizeof(value));
	return value;
}

static uint64_t u64_at(const unsigned char *bytes, uint32_t offset)
{
	uint64_t value;

	memcpy(&value, bytes + offset, sizeof(value));
	return value;
}

static uint32_t record_seq(const struct tddb_geometry *geometry, const unsigned char *record)
{
	return u32_at(record, geometry->layout.record_seq);
}

static const unsigned char *published_copy(const struct tddb_geometry *geometry, const unsigned char *record)
{
	const struct tdstat_layout *layout = &geometry->layout;

	return record + layout->record_copies + (record_seq(geometry, record) & 1u) * layout->record_copy_size;
}

/* The latch's consistency rule (region.h): the same seq in both copies of
 * the record, and the same published copy. */
static bool record_stable(const struct tddb_geometry *geometry, const unsigned char *first,
			  const unsigned char *second)
{
	return record_seq(geometry, first) == record_seq(geometry, second) &&
	       memcmp(published_copy(geometry, first), published_copy(geometry, second),
		      geometry->layout.record_copy_size) == 0;
}

/* The record's fields, and its integrals in the window (READER.md
 * step 6), from its published copy (and detail copy, if read). */
struct record_bytes {
	const unsigned char *record;
	const unsigned char *detail; /* NULL: not read */
};

/*
 * Where a record's figures end (READER.md step 5): its open interval at
 * the reader's clock taken before the reads (`open_end`), its closed
 * intervals at the latest commit it can show, which is before the clock
 * taken after the record was read (`read_end`, a bound for hostile
 * values).
 */
struct record_ends {
	uint64_t start;     /* the window's */
	uint64_t open_end;
	uint64_t read_end;
	uint64_t reader_now;
};

/* A published copy, decoded field by field where the layout puts each
 * (region.h's lists) into `scratch`, or read where it is when that is
 * this reader's own layout (no copy: a snapshot decodes every record). */
static const struct tdstat_record_copy *record_copy_at(const struct tddb_geometry *geometry,
							const unsigned char *bytes,
							struct tdstat_record_copy *scratch)
{
	const struct tdstat_layout *layout = &geometry->layout;

	if (geometry->native_copies)
		return (const struct tdstat_record_copy *)(const void *)bytes;
#define DECODE_FIELD(type, name, dims) memcpy(&scratch->name, bytes + layout->name, TDSTAT_FIELD_SIZE(type, dims));
	TDSTAT_RECORD_COPY_FIELDS(DECODE_FIELD)
#undef DECODE_FIELD
	return scratch;
}

/* As record_copy_at; reserved[] is never read (a newer minor may use it). */
static const struct tdstat_detail_copy *detail_copy_at(const struct tddb_geometry *geometry,
							const unsigned char *bytes,
							struct tdstat_detail_copy *scratch)
{
	const struct tdstat_layout *layout = &geometry->layout;

	if (geometry->native_copies)
		return (const struct tdstat_detail_copy *)(const void *)bytes;
#define DECODE_FIELD(type, name, dims) memcpy(&scratch->name, bytes + layout->name, TDSTAT_FIELD_SIZE(type, dims));
	TDSTAT_DETAIL_COPY_FIELDS(DECODE_FIELD)
#undef DECODE_FIELD
	return scratch;
}

static td_err_e thread_decode(const struct tddb_geometry *geometry, const struct record_bytes *bytes,
			      const struct record_ends *window, struct tddb_thread *thread)
{
	const struct tdstat_layout *layout = &geometry->layout;
	struct tdstat_record_copy scratch;
	uint64_t pending = u64_at(bytes->record, layout->record_pending);
	uint64_t length = window->read_end > window->start ? window->read_end - window->start : 0;
	uint64_t acc_tracked, acc_runnable;
	uint32_t seq = record_seq(geometry, bytes->record);
	const struct tdstat_record_copy *copy = record_copy_at(geometry, published_copy(geometry, bytes->record),
								&scratch);
	const struct tdstat_detail_copy *detail = NULL;
	struct tdstat_detail_copy detail_scratch;
	bool current;

	current = copy->epoch_ns == window->start;
	thread->seq = seq;
	thread->state = copy->state;
	thread->kind = copy->kind;
	thread->tid = copy->tid;
	thread->generation = copy->generation;
	thread->since_ns = copy->since_ns;
	thread->detail = bytes->detail != NULL;
	thread->object = thread->site = thread->woken_ns = 0;
	thread->blocked_open_ns = 0;
	thread->clamped = current && copy->acc_tracked_ns > length;
	if (thread->state > TDSTAT_STATE_BLOCKED)
		return TD_DBERR;
	/* A kind past the region's own list is corrupted; one past ours but
	 * within the region's is a newer minor's (docs/READER.md "Minors"). */
	if (thread->state == TDSTAT_STATE_BLOCKED && thread->kind >= layout->kind_count)
		return TD_DBERR;
	if (bytes->detail) {
		detail = detail_copy_at(geometry,
					bytes->detail + layout->detail_copies + (seq & 1u) * layout->detail_copy_size,
					&detail_scratch);
		thread->object = detail->object;
		thread->site = detail->site;
		thread->woken_ns = detail->woken_ns;
	}

	/* Closed intervals lie inside the window: clamp hostile values. */
	acc_tracked = current ? tddb_min_u64(copy->acc_tracked_ns, length) : 0;
	acc_runnable = current ? tddb_min_u64(copy->acc_runnable_ns, acc_tracked) : 0;
	thread->tracked_ns = thread->closed_tracked_ns = acc_tracked;
	thread->runnable_ns = thread->closed_runnable_ns = acc_runnable;
	thread->changing = pending > thread->since_ns;
	thread->open_from_ns = current ? tddb_max_u64(thread->since_ns, window->start) : window->start;
	/* Without the details idle_ns is left as it is (struct tddb_thread):
	 * clearing it was a tenth of a sleeping target's snapshot. */
	if (detail && !current) {
		memset(thread->idle_ns, 0, sizeof(thread->idle_ns));
	} else if (detail) {
		/* The per-kind parts of the blocked time, within it. */
		uint64_t left = acc_tracked - acc_runnable, most_part = 0;
		int most = 0;
		/* Without branches: which kinds a thread has is anyone's guess
		 * from one record to the next.  Unrolled (a loop over every
		 * record's kinds). */
#pragma GCC unroll 16
		for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++) {
			uint64_t part = tddb_min_u64(detail->acc_idle_ns[k], left);

			thread->idle_ns[k] = part;
			left -= part;
			most = part > most_part ? k : most;
			most_part = part > most_part ? part : most_part;
		}
		/* Blocked time no kind claims (a hostile region: the shim's
		 * kinds share it out exactly) goes to the kind of the most, so
		 * a record's kinds, like the process's, sum to its idle time. */
		thread->idle_ns[most] += left;
	}

	if (thread->state != TDSTAT_STATE_FREE) {
		/* A record on an older window has not changed state since this
		 * one began (region.h): its open interval starts with it. */
		uint64_t from = thread->open_from_ns;
		uint64_t to = window->open_end;

		/* A change under way since pending_ns: the old state lasted
		 * at least until then, and maybe not longer (region.h). */
		if (pending > thread->since_ns)
			to = tddb_min_u64(to, pending);
		/* A wait's last commit_lag_ns are not final: the thread may yet
		 * date its wake-up back into them (region.h). */
		if (thread->state == TDSTAT_STATE_BLOCKED)
			to = tddb_min_u64(to, tddb_min_u64(window->reader_now, pending > thread->since_ns ? pending : UINT64_MAX) -
						      tddb_min_u64(geometry->commit_lag_ns, window->reader_now));
		if (to > from) {
			uint64_t open = tddb_min_u64(to - from, length - thread->tracked_ns);
			thread->tracked_ns += open;
			if (thread->state == TDSTAT_STATE_RUNNABLE)
				thread->runnable_ns += open;
			else
				thread->blocked_open_ns = open;
			if (thread->state == TDSTAT_STATE_BLOCKED && bytes->detail && thread->kind < TDSTAT_WAIT_KIND_COUNT)
				thread->idle_ns[thread->kind] += open;
		}
	}
	/* For a region without details, blocked time has no kind; callers
	 * that asked for details always get them. */
	return TD_OK;
}

/* Re-reads one record (and its detail) until two copies agree (READER.md
 * step 4). */
static td_err_e record_reread(const struct td_thragent *agent, uint32_t index, unsigned char *first,
			      unsigned char *second, unsigned char *detail, uint64_t deadline)
{
	const struct tddb_geometry *geometry = &agent->geometry;
	uint64_t offset = geometry->records_offset + (uint64_t)index * geometry->record_size;
	uint64_t detail_offset = geometry->details_offset + (uint64_t)index * geometry->detail_size;
	int attempt;

	for (attempt = 0; attempt < RECORD_RETRIES_MAX; attempt++) {
		td_err_e err = region_read(agent, offset, first, geometry->record_size);

		if (err == TD_OK && detail)
			err = region_read(agent, detail_offset, detail, geometry->detail_size);
		if (err == TD_OK)
			err = region_read(agent, offset, second, geometry->record_size);
		if (err != TD_OK)
			return err;
		if (record_stable(geometry, first, second))
			return TD_OK;
		/* Past the snapshot's time budget a record still gets a few
		 * tries: a reader starved by a loaded machine may reach the
		 * deadline before it even meets a record that moved. */
		if (attempt >= RECORD_TRIES_PAST_BUDGET && tddb_monotonic_ns() > deadline)
			break;
		if (attempt > 2)
			sched_yield();
	}
	return TD_DBERR;
}

/*
 * The reader's clock for open intervals is taken before the reads, and
 * the reads begin at least 2 * TDSTAT_STALL_NS later: a writer that
 * announces a change after we read its record then commits at a time no
 * earlier than that clock (region.h, step 1), so extending its open
 * interval to the clock never counts time it then takes back.  The
 * window itself ends at a clock taken after the reads, which every
 * commit the reads saw precedes: no closed interval lies past it.
 */
/*
 * Beyond the writer's stall bound, the margin covers two things no
 * writer can check:
 * - the clocks of two CPUs of a virtual machine, which may differ by
 *   microseconds;
 * - an interrupt that holds a writer up between its last counter read and
 *   its store (runtime/announce.c): its restartable sequence is restarted
 *   by a preemption, a migration or a signal, not by an interrupt that
 *   returns to it, and an interrupt runs its softirqs on the way out
 *   (the kernel bounds that at about 2 ms, then hands them to a thread,
 *   which preempts the writer).  With 20 us, 10 minutes of torture under
 *   24-30 CPU hogs still saw decreases of 5-10 us (a store about 30 us
 *   late); 1 ms is 30 times that.  Readers report open intervals that
 *   much later, which no figure notices (a wait's last 10 ms are held
 *   back anyway).
 * An interrupt, or a host descheduling the vCPU, at that very instruction
 * for longer still escapes it (docs/READER.md).
 */
#define CLOCK_SKEW_MARGIN_NS UINT64_C(1000000)

/* The reads begin after the clock is read, so a clock value that margin
 * earlier is "taken at least the margin before the reads": the same
 * guarantee as reading the clock and then waiting out the margin, without
 * the wait (22 us of spinning per snapshot). */
static uint64_t reader_margin(const struct tddb_geometry *geometry)
{
	return 2 * geometry->stall_ns + CLOCK_SKEW_MARGIN_NS;
}

uint64_t tddb_reader_margin(const struct tddb_geometry *geometry)
{
	return reader_margin(geometry);
}

static uint64_t reader_clock(const struct tddb_geometry *geometry)
{
	uint64_t now = tddb_monotonic_ns();

	return now - tddb_min_u64(now, reader_margin(geometry));
}

/*
 * A frozen window's figures are final once its end plus commit_lag_ns is
 * past the clock up to which a reader counts an open wait (its clock
 * less the margin and the lag).  A disable returns only once the end
 * plus the lag and the margin is past (region_write.c, disable_settle),
 * so a reader after it waits for nothing.  One that comes when the end
 * plus the lag is past but not the margin (within a disabling caller's
 * last margin, or after a disable by an older libc_db, which ended the
 * window at its clock less the lag and did not wait) waits out the rest
 * of the margin, at most the margin, so a frozen window reads the same
 * from its first snapshot on.  One that comes earlier, while the disable
 * is still under way, waits for nothing: its figures still grow.
 */
static uint64_t reader_clock_for(const struct tddb_geometry *geometry, const struct tddb_header_view *view,
				 uint64_t now)
{
	uint64_t end = view->control.window_end_ns, lag = geometry->commit_lag_ns;

	if (end == TDSTAT_WINDOW_OPEN || end > UINT64_MAX - lag - reader_margin(geometry) || end + lag <= now)
		return now;
	if (end + lag > tddb_monotonic_ns())
		return now;
	/* Sleep most of it: the margin is milliseconds. */
	for (uint64_t at = tddb_monotonic_ns(); at < end + lag + reader_margin(geometry); at = tddb_monotonic_ns()) {
		uint64_t left = end + lag + reader_margin(geometry) - at;
		struct timespec pause = { 0, (long)(left > 20000 ? left - 10000 : 0) };

		if (pause.tv_nsec)
			nanosleep(&pause, NULL);
	}
	return end + lag;
}

/* The window's end at `now`: gathering off or the process exiting end it
 * earlier. */
static uint64_t window_end_at(const struct tddb_header_view *view, uint64_t now)
{
	uint64_t end = now;

	if (view->control.window_end_ns != TDSTAT_WINDOW_OPEN)
		end = tddb_min_u64(end, view->control.window_end_ns);
	if (view->status.exit_ns != 0)
		end = tddb_min_u64(end, view->status.exit_ns);
	return tddb_max_u64(end, view->control.window_start_ns);
}

/* The window at `now` (the clock after the reads), its threads counted
 * to `counted` (the mean of the clocks their open intervals end at). */
static struct tddb_window window_of(const struct tddb_header_view *view, uint64_t now, uint64_t counted)
{
	uint64_t end = window_end_at(view, now);

	return (struct tddb_window){ .start = view->control.window_start_ns,
				     .end = end,
				     .now = now,
				     .counted_end = tddb_min_u64(window_end_at(view, counted), end) };
}

/* The clock that ends open intervals: for a frozen image, its moment. */
static uint64_t reader_now(const struct tddb_image *image, uint64_t moment)
{
	return image->frozen ? moment : tddb_monotonic_ns();
}

/*
 * The moment of a frozen image (include/tdstat/ps_image.h): the latest
 * the region proves.  Every stamp a writer made is a moment the process
 * reached; nothing in a core tells how long after the last of them it
 * was dumped, so the window ends there.
 */
static td_err_e image_moment(const struct td_thragent *agent, const struct tddb_header_view *view, uint64_t *moment)
{
	const struct tddb_geometry *geometry = &agent->geometry;
	const struct tdstat_layout *layout = &geometry->layout;
	uint32_t size = geometry->record_size, detail_size = geometry->detail_size;
	uint32_t per_chunk = CHUNK_BYTES / tddb_max_u64(size, detail_size);
	uint32_t count = tddb_min_u64(view->status.high_water, geometry->record_capacity);
	uint64_t latest = tddb_max_u64(view->control.window_start_ns, view->status.exit_ns);
	unsigned char *records, *details;
	td_err_e err = TD_OK;

	if (view->control.window_end_ns != TDSTAT_WINDOW_OPEN)
		latest = tddb_max_u64(latest, view->control.window_end_ns);
	records = malloc((size_t)per_chunk * ((size_t)size + detail_size));
	if (!records)
		return TD_MALLOC;
	details = records + (size_t)per_chunk * size;
	for (uint32_t base = 0; base < count && err == TD_OK; base += per_chunk) {
		uint32_t n = count - base < per_chunk ? count - base : per_chunk;

		err = region_read(agent, geometry->records_offset + (uint64_t)base * size, records, (size_t)n * size);
		if (err == TD_OK)
			err = region_read(agent, geometry->details_offset + (uint64_t)base * detail_size, details,
					  (size_t)n * detail_size);
		for (uint32_t i = 0; i < n && err == TD_OK; i++) {
			const unsigned char *record = records + (size_t)i * size;
			const unsigned char *copy = published_copy(geometry, record);
			const unsigned char *detail = details + (size_t)i * detail_size + layout->detail_copies +
						      (record_seq(geometry, record) & 1u) * layout->detail_copy_size;

			latest = tddb_max_u64(latest, u64_at(copy, layout->since_ns));
			latest = tddb_max_u64(latest, u64_at(copy, layout->epoch_ns));
			latest = tddb_max_u64(latest, u64_at(record, layout->record_pending));
			latest = tddb_max_u64(latest, u64_at(detail, layout->woken_ns));
		}
	}
	free(records);
	*moment = latest;
	return err;
}

td_err_e tddb_cache_init(struct td_thragent *agent)
{
	memset(&agent->cache, 0, sizeof(agent->cache));
	memset(&agent->control_kept, 0, sizeof(agent->control_kept));
	if (pthread_mutex_init(&agent->control_kept.lock, NULL) != 0)
		return TD_MALLOC;
	if (pthread_mutex_init(&agent->cache.lock, NULL) != 0) {
		pthread_mutex_destroy(&agent->control_kept.lock);
		return TD_MALLOC;
	}
	return TD_OK;
}

void tddb_cache_free(struct td_thragent *agent)
{
	free(agent->cache.records);
	free(agent->cache.details);
	free(agent->cache.held);
	free(agent->cache.marks);
	free(agent->cache.chunks);
	pthread_mutex_destroy(&agent->cache.lock);
	pthread_mutex_destroy(&agent->control_kept.lock);
}

/*
 * The agent's record cache, locked, or NULL: taken by another snapshot.
 * The agent is otherwise immutable here: the cache is the one part a
 * snapshot writes, under its lock.
 */
static struct tddb_record_cache *cache_lock(const struct td_thragent *agent)
{
	struct tddb_record_cache *cache = (struct tddb_record_cache *)&agent->cache;

	return pthread_mutex_trylock(&cache->lock) == 0 ? cache : NULL;
}

/* The locked cache grown to `count` records, at most TDDB_CACHE_BYTES_MAX
 * (records past its slots are read without it); NULL, unlocked, when
 * there is no memory for that. */
static struct tddb_record_cache *cache_grow(const struct td_thragent *agent, struct tddb_record_cache *cache,
					    uint32_t count)
{
	uint64_t entry = (uint64_t)agent->geometry.record_size + agent->geometry.detail_size;
	uint32_t want = (uint32_t)tddb_min_u64(count, TDDB_CACHE_BYTES_MAX / entry);

	if (!cache)
		return NULL;
	if (want > cache->slots) {
		unsigned char *records = realloc(cache->records, (size_t)want * agent->geometry.record_size);
		if (records)
			cache->records = records;
		unsigned char *details = records ? realloc(cache->details, (size_t)want * agent->geometry.detail_size) : NULL;
		if (details)
			cache->details = details;
		uint8_t *held = details ? realloc(cache->held, want) : NULL;
		if (held)
			cache->held = held;
		uint64_t *marks = held ? realloc(cache->marks, (size_t)want * sizeof(*marks)) : NULL;
		if (!marks) {
			pthread_mutex_unlock(&cache->lock);
			return NULL;
		}
		memset(held + cache->slots, TDDB_CACHED_NONE, want - cache->slots);
		for (uint32_t i = cache->slots; i < want; i++)
			marks[i] = TDDB_MARK_UNKNOWN;
		cache->marks = marks;
		cache->slots = want;
	}
	uint32_t per_chunk = CHUNK_BYTES / tddb_max_u64(agent->geometry.record_size, agent->geometry.detail_size);
	uint32_t chunks = (cache->slots + per_chunk - 1) / per_chunk * groups_per_chunk(per_chunk);
	if (chunks > cache->chunk_slots) {
		struct tddb_chunk_kinds *grown = realloc(cache->chunks, chunks * sizeof(*grown));

		if (!grown) {
			pthread_mutex_unlock(&cache->lock);
			return NULL;
		}
		memset(grown + cache->chunk_slots, 0, (chunks - cache->chunk_slots) * sizeof(*grown));
		cache->chunks = grown;
		cache->chunk_slots = chunks;
	}
	return cache;
}

/* Whether every record of a chunk is its cached image (with its detail,
 * if wanted): then the one copy just read is consistent (the writer
 * changes the published copy only after moving seq, and moves pending_ns
 * first, so bytes equal to a consistent image are that image), and the
 * cached details are those the records publish. */
static bool chunk_cached(const struct tddb_record_cache *cache, const unsigned char *records, uint32_t base,
			 uint32_t n, uint32_t size, bool detail)
{
	uint8_t need = detail ? TDDB_CACHED_DETAIL : TDDB_CACHED_RECORD;

	if (!cache || base + n > cache->slots)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (cache->held[base + i] < need)
			return false;
	return memcmp(records, cache->records + (size_t)base * size, (size_t)n * size) == 0;
}

/* A chunk that is not all as kept: where the records are that are not
 * (not kept, with the detail if wanted, or differing from their kept
 * images).  Every other one is consistent as it is (chunk_cached's
 * rule, record by record).  The first SPARSE_CHANGED_MAX of them are
 * listed in at[]; first and last bound them all.  False when the cache
 * has no room for the chunk, or when every record is as kept. */
#define SPARSE_CHANGED_MAX 3

struct chunk_changes {
	uint32_t count;
	uint32_t at[SPARSE_CHANGED_MAX];
	uint32_t first, last;
};

static bool chunk_changed(const struct tddb_record_cache *cache, const unsigned char *records, uint32_t base,
			  uint32_t n, uint32_t size, bool detail, struct chunk_changes *changes)
{
	uint8_t need = detail ? TDDB_CACHED_DETAIL : TDDB_CACHED_RECORD;

	changes->count = 0;
	if (!cache || base + n > cache->slots)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		if (cache->held[base + i] >= need &&
		    memcmp(records + (size_t)i * size, cache->records + (size_t)(base + i) * size, size) == 0)
			continue;
		if (changes->count < SPARSE_CHANGED_MAX)
			changes->at[changes->count] = i;
		if (changes->count++ == 0)
			changes->first = i;
		changes->last = i;
	}
	return changes->count > 0;
}

static void cache_keep(struct tddb_record_cache *cache, const struct tddb_geometry *geometry, uint32_t index,
		       const unsigned char *record, const unsigned char *detail)
{
	unsigned char *kept;

	if (!cache || index >= cache->slots)
		return;
	kept = cache->records + (size_t)index * geometry->record_size;
	/* The same bytes publish the same detail copy: kept already. */
	if (cache->held[index] == TDDB_CACHED_DETAIL && memcmp(kept, record, geometry->record_size) == 0)
		return;
	if (detail) {
		memcpy(cache->details + (size_t)index * geometry->detail_size, detail, geometry->detail_size);
		cache->held[index] = TDDB_CACHED_DETAIL;
	} else if (cache->held[index] == TDDB_CACHED_NONE || memcmp(kept, record, geometry->record_size) != 0) {
		/* A record that changed publishes another detail copy. */
		cache->held[index] = TDDB_CACHED_RECORD;
	}
	memcpy(kept, record, geometry->record_size);
}

/*
 * The header and the first records in one read (a snapshot's fixed cost is
 * mostly its reads: each one costs the kernel a permission check and a
 * page walk, about 2 us here, as much as 25 records).  Records follow the
 * header, so one read from the region's start brings the header and as
 * many records as the last snapshot found in use; a second copy of the
 * header then proves the control block held still across that read
 * (tddb_read_header's rule: two consecutive copies, same control bytes),
 * and so across the records read with it.  Returns false, having read
 * nothing usable, when that does not apply: the caller reads the header
 * the usual way.  On true, *view is set, and the records in `first`.
 */
static bool header_and_records(const struct td_thragent *agent, unsigned char *lead, uint32_t records,
			       struct tddb_header_view *view, td_err_e *err)
{
	const struct tddb_geometry *geometry = &agent->geometry;
	uint32_t control = geometry->layout.control_offset, status = geometry->layout.status_offset;
	unsigned char again[TDDB_HEADER_MAX];
	uint64_t rewriting;

	*err = region_read(agent, 0, lead, geometry->records_offset + (size_t)records * geometry->record_size);
	if (*err == TD_OK && memcmp(lead, agent->identity, sizeof(agent->identity)) != 0)
		*err = TD_DBERR;
	if (*err == TD_OK)
		*err = header_copy(agent, again);
	if (*err != TD_OK)
		return false;
	memcpy(&rewriting, again + control + offsetof(struct tdstat_control, rewriting), sizeof(rewriting));
	if (rewriting != 0 || memcmp(lead + control, again + control, sizeof(view->control)) != 0)
		return false;
	memcpy(&view->control, again + control, sizeof(view->control));
	memcpy(&view->status, again + status, sizeof(view->status));
	return true;
}

/* The process sums (a visitor), and a caller's visitor beside them. */
struct process_sums {
	uint32_t live;
	uint32_t used;                 /* records that contributed anything */
	uint32_t runnable_live;
	uint64_t seq_sum;
	uint64_t latest_since;
	unsigned __int128 tracked;
	unsigned __int128 runnable;
	unsigned __int128 idle[TDSTAT_WAIT_KIND_COUNT];
	tddb_thread_visitor *also;
	void *also_context;
};

/*
 * The kept sums of a whole chunk (struct tddb_chunk_kinds, `whole`):
 * what add_thread adds up for its records, without the open intervals,
 * which are linear in the snapshot's clock when every record is plain.
 */
static void chunk_whole_begin(struct tddb_chunk_kinds *chunk)
{
	memset(&chunk->whole, 0, sizeof(*chunk) - offsetof(struct tddb_chunk_kinds, whole));
	chunk->whole = true;
}

static void chunk_whole_note(struct tddb_chunk_kinds *chunk, const struct tddb_thread *thread)
{
	if (thread->clamped || (thread->state != TDSTAT_STATE_FREE && thread->changing) ||
	    (thread->state == TDSTAT_STATE_BLOCKED && thread->kind >= TDSTAT_WAIT_KIND_COUNT)) {
		chunk->whole = false;
		return;
	}
	if (thread->state == TDSTAT_STATE_FREE && thread->tracked_ns == 0)
		return; /* not visited */
	chunk->used++;
	chunk->seq_sum += thread->seq;
	chunk->tracked += thread->closed_tracked_ns;
	chunk->runnable += thread->closed_runnable_ns;
	chunk->acc_max = tddb_max_u64(chunk->acc_max, thread->closed_tracked_ns);
	if (thread->state == TDSTAT_STATE_FREE)
		return;
	__int128 excess = (__int128)thread->closed_tracked_ns - (__int128)thread->open_from_ns;

	chunk->live++;
	chunk->latest_since = tddb_max_u64(chunk->latest_since, thread->since_ns);
	if (thread->state == TDSTAT_STATE_RUNNABLE) {
		chunk->runnable_excess = chunk->runnable_open ? (excess > chunk->runnable_excess ? excess : chunk->runnable_excess) : excess;
		chunk->runnable_live++;
		chunk->runnable_open++;
		chunk->runnable_from += thread->open_from_ns;
		chunk->runnable_from_max = tddb_max_u64(chunk->runnable_from_max, thread->open_from_ns);
	} else {
		chunk->blocked_excess = chunk->blocked_open ? (excess > chunk->blocked_excess ? excess : chunk->blocked_excess) : excess;
		chunk->blocked_open++;
		chunk->blocked_by_kind[thread->kind]++;
		chunk->blocked_from[thread->kind] += thread->open_from_ns;
		chunk->blocked_from_max = tddb_max_u64(chunk->blocked_from_max, thread->open_from_ns);
	}
}

/* Whether every open interval of the chunk runs from its start to the
 * same end, uncut (thread_decode's rule then reduces to that end less
 * the start): `to` after every `from`, and no record's tracked time
 * past the window's length. */
static bool open_linear(uint32_t open, uint64_t to, uint64_t from_max, __int128 excess, uint64_t length)
{
	return open == 0 || (to > from_max && (__int128)to + excess <= (__int128)length);
}

/*
 * A chunk found as kept, added to the process sums from its kept sums
 * (with the per-kind closed time of `kinds_from` when the caller wants
 * the kinds), exactly as its records one by one would add up; false,
 * having added nothing, when the sums do not apply to this snapshot.
 */
static bool chunk_whole_add(const struct tddb_chunk_kinds *chunk, uint32_t records, const struct tddb_geometry *geometry,
			    const struct record_ends *ends, const struct tddb_chunk_kinds *kinds_from,
			    struct process_sums *into, unsigned __int128 *counted_sum, uint32_t *counted_live)
{
	uint64_t length = ends->read_end > ends->start ? ends->read_end - ends->start : 0;
	uint64_t runnable_to = ends->open_end;
	uint64_t blocked_to = tddb_min_u64(ends->open_end, ends->reader_now - tddb_min_u64(geometry->commit_lag_ns,
											     ends->reader_now));

	if (!chunk->whole || chunk->whole_records != records || chunk->whole_window_start_ns != ends->start ||
	    chunk->acc_max > length ||
	    !open_linear(chunk->runnable_open, runnable_to, chunk->runnable_from_max, chunk->runnable_excess, length) ||
	    !open_linear(chunk->blocked_open, blocked_to, chunk->blocked_from_max, chunk->blocked_excess, length))
		return false;
	unsigned __int128 runnable_open = (unsigned __int128)chunk->runnable_open * runnable_to - chunk->runnable_from;
	unsigned __int128 blocked_open = 0;

	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++) {
		unsigned __int128 open = (unsigned __int128)chunk->blocked_by_kind[k] * blocked_to - chunk->blocked_from[k];

		blocked_open += open;
		if (kinds_from)
			into->idle[k] += kinds_from->idle[k] + open;
	}
	into->live += chunk->live;
	into->used += chunk->used;
	into->runnable_live += chunk->runnable_live;
	into->seq_sum += chunk->seq_sum;
	into->latest_since = tddb_max_u64(into->latest_since, chunk->latest_since);
	into->tracked += chunk->tracked + runnable_open + blocked_open;
	into->runnable += chunk->runnable + runnable_open;
	*counted_sum += (unsigned __int128)chunk->live * ends->open_end;
	*counted_live += chunk->live;
	return true;
}

/*
 * The change marks (ABI 2.3, region.h) of records [base, base + n), in
 * record order: the blocks of marks that hold them read in one go
 * (`blocks` has room for n + 2 * TDSTAT_CHANGES_BLOCK words).
 */
static td_err_e marks_read(const struct td_thragent *agent, uint32_t base, uint32_t n, uint32_t *blocks,
			   uint32_t *marks)
{
	uint32_t from = base / TDSTAT_CHANGES_BLOCK * TDSTAT_CHANGES_BLOCK;
	uint32_t to = (base + n + TDSTAT_CHANGES_BLOCK - 1) / TDSTAT_CHANGES_BLOCK * TDSTAT_CHANGES_BLOCK;
	td_err_e err = region_read(agent, agent->geometry.changes_offset + (uint64_t)from * sizeof(uint32_t), blocks,
				   (size_t)(to - from) * sizeof(uint32_t));

	for (uint32_t i = 0; err == TD_OK && i < n; i++)
		marks[i] = blocks[tdstat_change_slot(base + i) - from];
	return err;
}

/* What the marks just read say of a chunk's records: all as kept (none
 * need reading), those in [*lo, *hi) to read (the others as kept), or
 * nothing (not every record kept, with its detail if wanted: read the
 * chunk as without marks).  A record is as kept when its mark is even and
 * the one read before its kept bytes were: an odd one is a change under
 * way, or stopped half way, which only the record itself shows. */
enum marks_say { MARKS_SAY_NOTHING, MARKS_ALL_KEPT, MARKS_SPAN };

static enum marks_say marks_plan(const struct tddb_record_cache *cache, uint32_t base, uint32_t n,
				 const uint32_t *marks, bool detail, uint32_t *lo, uint32_t *hi)
{
	uint8_t need = detail ? TDDB_CACHED_DETAIL : TDDB_CACHED_RECORD;
	uint32_t first = n, last = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (cache->held[base + i] < need)
			return MARKS_SAY_NOTHING;
		if (cache->marks[base + i] == marks[i] && !(marks[i] & 1u))
			continue;
		first = first < i ? first : i;
		last = i + 1;
	}
	if (first == n)
		return MARKS_ALL_KEPT;
	*lo = first;
	*hi = last;
	return MARKS_SPAN;
}

/*
 * A copy of the header read after `view` still says what the records'
 * ends come from: the control block (byte for byte, its generation and
 * `rewriting` included) and exit_ns, which ends every open interval
 * (window_end_at) once the process began to exit.
 */
static bool header_holds(const struct td_thragent *agent, const unsigned char *copy,
			 const struct tddb_header_view *view)
{
	const struct tdstat_layout *layout = &agent->geometry.layout;

	return memcmp(copy + layout->control_offset, &view->control, sizeof(view->control)) == 0 &&
	       u64_at(copy, layout->status_offset + (uint32_t)offsetof(struct tdstat_status, exit_ns)) ==
		       view->status.exit_ns;
}

/*
 * A clock taken after the header's copies, to count the records read
 * after it, or `before` (a clock that was good for the view) when the
 * control block or exit_ns changed since the view was read (header_holds).  Only for a walk that
 * cannot read again (`walk`: its visitor saw the records before this
 * one): a disable that landed after the header's copies ended the window
 * at its own clock, maybe before this one (region_write.c), and what a
 * walk counts past that end the next reader takes back.  The clock is
 * taken first: a control block unchanged after it was still unchanged
 * when it was taken, so any controller's end comes later.  Other reads
 * check the header after all their records (tddb_snapshot_visit).
 */
static uint64_t later_clock(const struct td_thragent *agent, const struct tddb_header_view *view, uint64_t before,
			    bool walk, td_err_e *err)
{
	uint64_t later = tddb_max_u64(before, reader_clock(&agent->geometry));
	unsigned char again[TDDB_HEADER_MAX];

	if (!walk)
		return later;
	*err = header_copy(agent, again);
	if (*err == TD_OK && header_holds(agent, again, view))
		return later;
	return before;
}

/* tddb_threads_visit; *checked_after: the header was read after every
 * record (so the control block held still across all of them).  With
 * `whole_into` (the process sums only: `visitor` is add_thread on it), a
 * chunk that is as kept is added there from its kept sums, none of its
 * records decoded (chunk_whole_add); failing that, with the details, the
 * per-kind time of such a chunk comes from its kept sums and its records
 * are visited without the details (struct tddb_chunk_kinds); the others
 * are visited with them. */
static td_err_e threads_visit(const struct td_thragent *agent, bool detail, tddb_thread_visitor *visitor,
			      void *context, struct tddb_header_view *view, struct tddb_window *window,
			      bool *checked_after, struct process_sums *whole_into, bool walk)
{
	unsigned __int128 *kinds = whole_into && detail ? whole_into->idle : NULL;
	const struct tddb_geometry *geometry = &agent->geometry;
	uint32_t size = geometry->record_size, detail_size = geometry->detail_size;
	uint32_t per_chunk = CHUNK_BYTES / tddb_max_u64(size, detail_size);
	struct tddb_image image;
	uint64_t now, deadline;
	unsigned char *block, *first, *second, *details = NULL;
	struct tddb_record_cache *cache;
	uint32_t count, base, led = 0;
	size_t lead_size = 0;
	td_err_e err = TD_OK;

	*checked_after = false;
	/* A frozen image has one moment, and no writer to wait for. */
	tddb_image_query(agent, &image);
	now = image.frozen ? 0 : reader_clock(geometry);
	deadline = tddb_monotonic_ns() + RETRY_BUDGET_NS;
	cache = image.frozen ? NULL : cache_lock(agent);
	/* The records the last snapshot found, read with the header when
	 * they follow it at an aligned offset (record_copy_at). */
	/* The change marks (ABI 2.3) serve once the records in use are
	 * more than MARKS_MIN_BYTES; below, the records read with the
	 * header cost less than the marks' own reads. */
	bool marking = geometry->changes_offset && cache &&
		       (uint64_t)cache->last_count * size > MARKS_MIN_BYTES;

	if (cache && cache->last_count && !marking && geometry->records_offset <= TDDB_HEADER_MAX &&
	    geometry->records_offset % _Alignof(uint64_t) == 0) {
		led = (uint32_t)tddb_min_u64(tddb_min_u64(cache->last_count, tddb_max_u64(per_chunk, LEAD_BYTES_MAX / size)),
					     geometry->record_capacity);
		lead_size = geometry->records_offset;
	}
	/* Room for the records read with the header, or for one chunk; and
	 * for a chunk's change marks (marks_read). */
	uint32_t first_records = (uint32_t)tddb_max_u64(led, per_chunk);
	uint32_t marks_span = (uint32_t)tddb_max_u64(MARKS_AHEAD, per_chunk);
	size_t marks_words = marking ? 2 * (size_t)marks_span + 2 * TDSTAT_CHANGES_BLOCK : 0;
	block = malloc(marks_words * sizeof(uint32_t) + lead_size + (size_t)first_records * size +
		       (size_t)per_chunk * ((size_t)size + (detail ? detail_size : 0)));
	if (!block) {
		if (cache)
			pthread_mutex_unlock(&cache->lock);
		return TD_MALLOC;
	}
	/* The marks first: the rest keeps malloc's alignment (an even
	 * number of words). */
	uint32_t *marks_now = marks_words ? (uint32_t *)(void *)block : NULL;
	uint32_t *marks_blocks = marks_now ? marks_now + marks_span : NULL;
	uint32_t marks_from = 0, marks_to = 0; /* the records whose marks marks_now holds */
	bool marks_ok = false;
	unsigned char *lead = block + marks_words * sizeof(uint32_t);

	first = lead + lead_size;
	second = first + (size_t)first_records * size;
	if (detail)
		details = second + (size_t)per_chunk * size;
	if (led && !header_and_records(agent, lead, led, view, &err))
		led = 0;
	if (!led && err == TD_OK)
		err = tddb_read_header(agent, view);
	if (err == TD_OK && image.frozen)
		err = image_moment(agent, view, &now);
	/* A core's window was frozen for good: nothing to wait out.  A
	 * window frozen just now is (reader_clock_for), and records read
	 * before that wait are then read again after it. */
	if (err == TD_OK && !image.frozen) {
		uint64_t waited = reader_clock_for(geometry, view, now);

		if (waited != now)
			led = 0;
		now = waited;
	}
	count = err == TD_OK ? (uint32_t)tddb_min_u64(view->status.high_water, geometry->record_capacity) : 0;
	/* More records in use than were read with the header: read the
	 * first chunk again, whole. */
	if (led < tddb_min_u64(count, per_chunk))
		led = 0;
	if (err != TD_OK || count == 0) {
		if (cache) {
			cache->last_count = count;
			pthread_mutex_unlock(&cache->lock);
		}
		free(block);
		if (err == TD_OK)
			*window = window_of(view, reader_now(&image, now), now);
		*checked_after = led != 0;
		return err;
	}
	/* (After the header's read succeeded: its view is whole.) */
	struct record_ends ends = {
		.start = view->control.window_start_ns,
		.open_end = window_end_at(view, now),
		.reader_now = now,
	};
	cache = cache_grow(agent, cache, count);
	/* Where the live records' open intervals ended, added up: their mean
	 * is where the snapshot counted its threads (counted_ns). */
	unsigned __int128 counted_sum = 0;
	uint32_t counted_live = 0;
	bool later_reads = false; /* reads after the header's last copy */
	/* Every chunk served as kept on the word of its marks, read after
	 * the header (a sleeping target's usual snapshot): see the end. */
	bool all_vouched = marks_now != NULL;

	for (base = 0; base < count && err == TD_OK; base += per_chunk) {
		uint32_t n = count - base < per_chunk ? count - base : per_chunk;
		uint64_t offset = geometry->records_offset + (uint64_t)base * size;
		bool cached, chunk_stable;
		uint32_t i;
		/* Read with the header (all of it), or now. */
		bool from_lead = led && base + n <= led;
		unsigned char *records = from_lead ? first + (size_t)base * size : first;

		/* Each chunk's open intervals end at a clock taken before its
		 * own reads (the rule of reader_clock holds for any such
		 * clock): a record is counted up to when it was read, not to
		 * when the records chunk was, which a walk slowed by a visitor,
		 * by re-reads or by preemption leaves far behind. */
		bool use_marks = !from_lead && marks_now && cache && base + n <= cache->slots;
		bool new_marks = use_marks && base + n > marks_to;

		/* With marks, every chunk they cover is counted up to the
		 * clock taken before they were read (a record as kept was
		 * "read" then). */
		if (base > 0 && !image.frozen && !from_lead && (!use_marks || new_marks)) {
			uint64_t chunk_now = later_clock(agent, view, tddb_max_u64(now, ends.reader_now), walk, &err);

			ends.open_end = window_end_at(view, chunk_now);
			ends.reader_now = chunk_now;
			/* A clock after the header's copies: a disable may have
			 * ended the window before it, which only a header read
			 * after it shows, however still the records held. */
			all_vouched = false;
		}
		if (new_marks) {
			marks_from = base;
			marks_to = (uint32_t)tddb_min_u64(count, (uint64_t)base + marks_span);
			err = marks_read(agent, marks_from, marks_to - marks_from, marks_blocks, marks_now);
			later_reads = true;
			marks_ok = err == TD_OK;
		}

		/* Records, details, records: a detail copy is whole when the
		 * record around it was stable across both record reads.  A
		 * chunk that is all as the last snapshot left it needs only
		 * the records read (a sleeping target's usual case). */
		/* With the change marks (ABI 2.3): records whose marks held
		 * still since their bytes were kept are as kept, and not read
		 * (a sleeping target's snapshot reads 4 bytes a record). */
		enum marks_say plan = MARKS_SAY_NOTHING;
		uint32_t mark_lo = 0, mark_hi = n;
		bool marks_known = use_marks && marks_ok && err == TD_OK;
		const uint32_t *chunk_marks = marks_known ? marks_now + (base - marks_from) : NULL;

		if (marks_known)
			plan = marks_plan(cache, base, n, chunk_marks, detail, &mark_lo, &mark_hi);
		all_vouched = all_vouched && plan == MARKS_ALL_KEPT;
		if (err == TD_OK && plan == MARKS_ALL_KEPT) {
			records = cache->records + (size_t)base * size;
		} else if (err == TD_OK && plan == MARKS_SPAN) {
			err = region_read(agent, offset + (uint64_t)mark_lo * size, records + (size_t)mark_lo * size,
					  (size_t)(mark_hi - mark_lo) * size);
			memcpy(records, cache->records + (size_t)base * size, (size_t)mark_lo * size);
			memcpy(records + (size_t)mark_hi * size, cache->records + (size_t)(base + mark_hi) * size,
			       (size_t)(n - mark_hi) * size);
		} else if (err == TD_OK && !from_lead) {
			err = region_read(agent, offset, records, (size_t)n * size);
			later_reads = true;
		}
		cached = err == TD_OK && (plan == MARKS_ALL_KEPT || chunk_cached(cache, records, base, n, size, detail));
		/* A chunk where some records moved (or are not kept yet),
		 * every other one as kept: only those are read again.  A few (a thread or
		 * two changing state among sleeping ones) one by one (record,
		 * detail, record); more, the span from the first to the last
		 * of them in one read of details and one of records (threads
		 * queuing on a lock change state in turn, a band of records at
		 * a time); the others are as kept, their details not read. */
		struct chunk_changes changes = { 0 };
		uint32_t next_changed = 0;
		bool moved = err == TD_OK && !cached && chunk_changed(cache, records, base, n, size, detail, &changes);
		bool sparse = moved && changes.count <= SPARSE_CHANGED_MAX;
		uint32_t lo = moved && !sparse ? changes.first : 0, hi = moved && !sparse ? changes.last + 1 : n;

		if (err == TD_OK && detail && !cached && !sparse)
			err = region_read(agent, geometry->details_offset + (uint64_t)(base + lo) * detail_size,
					  details + (size_t)lo * detail_size, (size_t)(hi - lo) * detail_size);
		if (err == TD_OK && !cached && !sparse) {
			err = region_read(agent, offset + (uint64_t)lo * size, second + (size_t)lo * size,
					  (size_t)(hi - lo) * size);
			later_reads = true;
		}
		ends.read_end = window_end_at(view, reader_now(&image, now));
		/* Most chunks held still between the two reads: one compare
		 * of the whole chunk clears every record at once (identical
		 * bytes satisfy the latch's rule), else record by record. */
		chunk_stable = cached || (err == TD_OK && !sparse &&
					  memcmp(records + (size_t)lo * size, second + (size_t)lo * size, (size_t)(hi - lo) * size) == 0);
		/* The chunk group by group (SUM_GROUP_RECORDS): a group whose
		 * records are all as kept may be added up from its kept sums. */
		for (uint32_t g0 = 0; g0 < n && err == TD_OK; g0 += SUM_GROUP_RECORDS) {
			uint32_t gn = n - g0 < SUM_GROUP_RECORDS ? n - g0 : SUM_GROUP_RECORDS;
			uint32_t slot = base / per_chunk * groups_per_chunk(per_chunk) + g0 / SUM_GROUP_RECORDS;
			bool group_cached = cached;

			if (moved && sparse) {
				group_cached = true;
				for (uint32_t c = 0; c < changes.count; c++)
					group_cached = group_cached && (changes.at[c] < g0 || changes.at[c] >= g0 + gn);
			} else if (moved) {
				group_cached = g0 + gn <= lo || g0 >= hi;
			}
			/* The group's closed per-kind time, kept from the last walk
			 * that read its details: every record as then, in the same
			 * window, none cut to the window's length then (a cut that
			 * the window's growth since may have undone). */
			struct tddb_chunk_kinds *sums = cache && detail && slot < cache->chunk_slots ? &cache->chunks[slot] : NULL;
			bool sums_current = sums && group_cached && sums->valid && sums->records == gn &&
					    sums->window_start_ns == ends.start &&
					    sums->window_end_ns == view->control.window_end_ns &&
					    sums->exit_ns == view->status.exit_ns;
			bool from_sums = kinds && sums_current;
			unsigned __int128 open[TDSTAT_WAIT_KIND_COUNT] = { 0 };
			/* Sums that hold for this group as it is are not taken again
			 * (a walk that visits every record anyway). */
			bool summing = sums && !sums_current;
			/* The process sums alone: a group as kept adds its kept sums,
			 * no record decoded. */
			struct tddb_chunk_kinds *chunk = cache && slot < cache->chunk_slots ? &cache->chunks[slot] : NULL;

			if (whole_into && chunk && group_cached && err == TD_OK && (!detail || from_sums) &&
			    chunk_whole_add(chunk, gn, geometry, &ends, detail ? sums : NULL, whole_into, &counted_sum,
					    &counted_live))
				continue;
			bool whole_summing = chunk && !(group_cached && chunk->whole && chunk->whole_records == gn &&
							chunk->whole_window_start_ns == ends.start);

			if (summing)
				memset(sums, 0, offsetof(struct tddb_chunk_kinds, whole));
			if (whole_summing)
				chunk_whole_begin(chunk);
			for (i = g0; i < g0 + gn && err == TD_OK; i++) {
				unsigned char *a = records + (size_t)i * size, *b = second + (size_t)i * size;
				/* In a sparse chunk, a record that is not one of those
				 * that moved is as kept; in a spanned one, one outside
				 * the span. */
				bool as_kept = moved && (sparse ? !(next_changed < changes.count && changes.at[next_changed] == i)
								: i < lo || i >= hi);
				unsigned char *d = !detail || from_sums ? NULL
					: cached || as_kept ? cache->details + (size_t)(base + i) * detail_size
							    : details + (size_t)i * detail_size;

				if (sparse && !as_kept)
					next_changed++;
				struct tddb_thread thread;

				struct record_ends record_ends = ends;

				/* The kept details are read one record after another, two
				 * lines each: asked for ahead, they come while the records
				 * before them are decoded (a snapshot at 100 Hz finds them
				 * out of the CPU's caches). */
				if ((cached || moved) && d && i + DETAIL_PREFETCH < n) {
					uint32_t parity = record_seq(geometry, records + (size_t)(i + DETAIL_PREFETCH) * size) & 1u;
					const unsigned char *ahead = cache->details +
								     (size_t)(base + i + DETAIL_PREFETCH) * detail_size +
								     geometry->layout.detail_copies + parity * geometry->layout.detail_copy_size;

					__builtin_prefetch(ahead);
					__builtin_prefetch(ahead + 64);
				}

				thread.index = base + i;
				if (!chunk_stable && !as_kept && (sparse || !record_stable(geometry, a, b))) {
					/* Read again, so counted up to a clock before that. */
					if (!image.frozen) {
						uint64_t reread_now = later_clock(agent, view, ends.reader_now, walk, &err);

						record_ends.open_end = window_end_at(view, reread_now);
						record_ends.reader_now = reread_now;
					}
					if (err == TD_OK)
						err = record_reread(agent, base + i, a, b, d, deadline);
					later_reads = true;
					ends.read_end = window_end_at(view, reader_now(&image, now));
					record_ends.read_end = ends.read_end;
				}
				if (err == TD_OK)
					err = thread_decode(geometry, &(struct record_bytes){ a, d }, &record_ends, &thread);
				if (err == TD_OK && thread.state != TDSTAT_STATE_FREE) {
					counted_sum += record_ends.open_end;
					counted_live++;
				}
				if (err == TD_OK && !cached && !as_kept)
					cache_keep(cache, geometry, base + i, a, d);
				if (err == TD_OK && whole_summing)
					chunk_whole_note(chunk, &thread);
				if (err == TD_OK && from_sums && thread.state == TDSTAT_STATE_BLOCKED &&
				    thread.kind < TDSTAT_WAIT_KIND_COUNT)
					open[thread.kind] += thread.blocked_open_ns;
				if (err == TD_OK && summing) {
					/* What the copies closed, without the open interval. */
					for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
						sums->idle[k] += thread.idle_ns[k];
					if (thread.state == TDSTAT_STATE_BLOCKED && thread.kind < TDSTAT_WAIT_KIND_COUNT)
						sums->idle[thread.kind] -= thread.blocked_open_ns;
					sums->valid = sums->valid || i == g0;
					if (thread.clamped)
						summing = sums->valid = false;
				}
				if (err == TD_OK && (thread.state != TDSTAT_STATE_FREE || thread.tracked_ns != 0))
					err = visitor(&thread, context);
			}
			if (whole_summing && err == TD_OK && i == g0 + gn && chunk->whole) {
				chunk->whole_records = gn;
				chunk->whole_window_start_ns = ends.start;
			} else if (whole_summing) {
				chunk->whole = false;
			}
			if (summing && err == TD_OK && i == g0 + gn) {
				sums->records = gn;
				sums->window_start_ns = ends.start;
				sums->window_end_ns = view->control.window_end_ns;
				sums->exit_ns = view->status.exit_ns;
			} else if (summing || (sums && !sums_current)) {
				sums->valid = false;
			}
			if (from_sums && err == TD_OK)
				for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
					kinds[k] += sums->idle[k] + open[k];
		}
		/* The chunk's kept bytes were all read after its marks were
		 * (or are equal to bytes that were): the marks go with them. */
		if (cache && base + n <= cache->slots)
			for (i = 0; i < n; i++)
				cache->marks[base + i] = marks_known && err == TD_OK ? chunk_marks[i] : TDDB_MARK_UNKNOWN;
	}
	if (cache) {
		cache->last_count = count;
		pthread_mutex_unlock(&cache->lock);
	}
	free(block);
	/* The records were all read with the header's first copy, the
	 * second after them.  Or none was read: each is as kept, and its
	 * mark, read after the header, held still since it was kept, so its
	 * bytes were the kept ones all along, the header's copies included
	 * (the writer marks a record before it touches it, READER.md
	 * "Change marks"): the records and the control block are of one
	 * moment, and reading the header once more after the marks would
	 * check nothing (a controller that rewrote it since changed no
	 * record).  Saves one of a sleeping target's four reads.  Not when
	 * a chunk was counted up to a clock taken after the header (a
	 * second marks read, past MARKS_AHEAD records): a disable between
	 * the two ended the window before that clock. */
	*checked_after = (led != 0 && !later_reads) || (all_vouched && err == TD_OK && count > 0);
	*window = window_of(view, reader_now(&image, now),
			    counted_live ? (uint64_t)(counted_sum / counted_live) : ends.reader_now);
	return err;
}

td_err_e tddb_threads_visit(const struct td_thragent *agent, bool detail, tddb_thread_visitor *visitor,
			    void *context, struct tddb_header_view *view, struct tddb_window *window)
{
	bool checked_after;

	return threads_visit(agent, detail, visitor, context, view, window, &checked_after, NULL, true);
}


static td_err_e add_thread(const struct tddb_thread *thread, void *context)
{
	struct process_sums *sums = context;

	if (thread->state != TDSTAT_STATE_FREE) {
		sums->live++;
		sums->latest_since = tddb_max_u64(sums->latest_since, thread->since_ns);
	}
	if (thread->state == TDSTAT_STATE_RUNNABLE)
		sums->runnable_live++;
	sums->used++;
	sums->seq_sum += thread->seq;
	sums->tracked += thread->tracked_ns;
	sums->runnable += thread->runnable_ns;
	/* Without the details only the open interval has a kind: the
	 * per-kind sums are not reported then.  (The loops over the kinds of
	 * every record are unrolled: their counting was a third of them.) */
	if (thread->detail) {
#pragma GCC unroll 16
		for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
			sums->idle[k] += thread->idle_ns[k];
	}
	return sums->also ? sums->also(thread, sums->also_context) : TD_OK;
}

td_err_e tddb_snapshot(const struct td_thragent *agent, bool detail, struct tddb_snapshot *snapshot)
{
	return tddb_snapshot_visit(agent, detail, NULL, NULL, snapshot);
}

td_err_e tddb_snapshot_visit(const struct td_thragent *agent, bool detail, tddb_thread_visitor *visitor,
			     void *context, struct tddb_snapshot *snapshot)
{
	struct tddb_header_view view;
	struct process_sums sums = { 0 };
	struct tddb_window window;
	unsigned __int128 bound, idle_total = 0;
	td_err_e err;

	/* A controller that starts a new window while the records are being
	 * read leaves some of them on the new window and the copied control
	 * block on the old one: read again (bounded) until the control block
	 * held still across the reads. */
	for (int attempt = 0;; attempt++) {
		unsigned char after[TDDB_HEADER_MAX];

		memset(&sums, 0, sizeof(sums));
		sums.also = visitor;
		sums.also_context = context;
		bool checked_after;

		/* The process sums alone may take a chunk's kinds whole. */
		err = threads_visit(agent, detail, add_thread, &sums, &view, &window, &checked_after,
				    visitor ? NULL : &sums, visitor != NULL);
		/* A caller's visitor saw every record once: the walk cannot be
		 * taken back, and the sums agree with what it saw.  A walk
		 * whose header was read again after its records is checked
		 * already. */
		if (err != TD_OK || visitor || checked_after)
			break;
		/* One copy is enough here: bytes equal to the stable block
		 * read before the records (its generation and `rewriting`
		 * included) say no controller changed it since; and an exit
		 * begun since (exit_ns) ends the threads before the clocks
		 * the later chunks were counted to (header_holds). */
		err = header_copy(agent, after);
		if (err != TD_OK)
			return err;
		/* Controllers that never stop rewriting it (a storm of
		 * resets) get the last read: readers always make progress,
		 * and each such snapshot is of a window of its own anyway. */
		if (header_holds(agent, after, &view) || attempt == CONTROL_COPIES_MAX / 8)
			break;
	}
	if (err != TD_OK)
		return err;
	memset(snapshot, 0, sizeof(*snapshot));
	snapshot->control = view.control;
	snapshot->enabled = view.control.window_end_ns == TDSTAT_WINDOW_OPEN;
	snapshot->detail = detail;
	snapshot->now_ns = window.now;
	snapshot->window_start_ns = window.start;
	snapshot->window_ns = window.end - window.start;
	snapshot->counted_ns = window.counted_end > window.start ? window.counted_end - window.start : 0;
	snapshot->live = sums.live;
	snapshot->overflow_live = view.status.overflow_live;
	snapshot->visited = sums.used;
	snapshot->runnable_live = sums.runnable_live;
	snapshot->seq_sum = sums.seq_sum;
	snapshot->latest_since_ns = sums.latest_since;
	if (snapshot->window_ns == 0)
		return TD_OK;
	/* Each record is clamped to |W| already; keep the invariants
	 * runnable <= tracked <= |W| * (records that took part). */
	bound = (unsigned __int128)snapshot->window_ns * sums.used;
	if (sums.tracked > bound)
		sums.tracked = bound;
	if (sums.runnable > sums.tracked)
		sums.runnable = sums.tracked;
	snapshot->tracked_ns = tddb_saturate_u64(sums.tracked);
	snapshot->runnable_ns = tddb_saturate_u64(sums.runnable);
	if (!detail)
		return TD_OK;
	/* The kinds share out the blocked time exactly (they do for an
	 * honest region; a hostile one gets its kinds cut to fit). */
	uint64_t idle = snapshot->tracked_ns - snapshot->runnable_ns, left = idle;
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++) {
		snapshot->idle_by_kind_ns[k] = tddb_min_u64(tddb_saturate_u64(sums.idle[k]), left);
		left -= snapshot->idle_by_kind_ns[k];
		idle_total += sums.idle[k];
	}
	/* Blocked time that no kind claims (clamps): the kind of the most. */
	if (left) {
		int most = 0;
		for (int k = 1; k < TDSTAT_WAIT_KIND_COUNT; k++)
			if (snapshot->idle_by_kind_ns[k] > snapshot->idle_by_kind_ns[most])
				most = k;
		snapshot->idle_by_kind_ns[most] += left;
	}
	(void)idle_total;
	return TD_OK;
}

/*
 * One record as it stands now (a thread handle's, thread_handles.c): its
 * state, tid, kind, object and site, without the integrals.  The header is
 * read first, so the region is still the one td_ta_new validated and the
 * index one the shim has handed out.
 */
td_err_e tddb_thread_read(const struct td_thragent *agent, uint32_t index, struct tddb_thread *thread)
{
	const struct tddb_geometry *geometry = &agent->geometry;
	struct tddb_header_view view;
	struct record_ends none = { 0 };
	unsigned char *first, *second, *detail;
	td_err_e err;

	err = tddb_read_header(agent, &view);
	if (err != TD_OK)
		return err;
	if (index >= tddb_min_u64(view.status.high_water, geometry->record_capacity))
		return TD_NOTHR;
	first = malloc(2 * (size_t)geometry->record_size + geometry->detail_size);
	if (!first)
		return TD_MALLOC;
	second = first + geometry->record_size;
	detail = second + geometry->record_size;
	err = record_reread(agent, index, first, second, detail, tddb_monotonic_ns() + RETRY_BUDGET_NS);
	if (err == TD_OK)
		err = thread_decode(geometry, &(struct record_bytes){ first, detail }, &none, thread);
	free(first);
	thread->index = index;
	return err;
}
