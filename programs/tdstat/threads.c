/* SPDX-License-Identifier: MIT */
/*
 * `-t`: one row per thread over an interval (like Solaris' prstat -mL).
 *
 * The shim's side comes from two readings of the thread iteration: a
 * record's integrals grow within a window, so the difference of two
 * readings is what the record did in between.  The kernel's side comes
 * from /proc/PID/task/TID/schedstat at the same two readings: time on a
 * CPU and time waiting for one.  A thread the shim counts runnable while
 * the kernel had it asleep is `untracked`: a wait that escaped
 * interposition (docs/CONTRACT.md §7).
 */
#include "tdstat.h"

#include <stdlib.h>
#include <string.h>

static uint64_t growth(uint64_t from, uint64_t to)
{
	return to > from ? to - from : 0;
}

/* The kernel's shares over [from, to] for tid: false when unknown. */
static bool kernel_shares(const struct tdstat_reading *from, const struct tdstat_reading *to, pid_t tid,
			  double *cpu, double *run_queue)
{
	const struct tdstat_kernel_thread *before, *after;
	double interval;

	if (!from || !from->kernel_valid || !to->kernel_valid || to->kernel.taken_ns <= from->kernel.taken_ns)
		return false;
	after = tdstat_kernel_thread_find(&to->kernel, tid);
	if (!after)
		return false;
	before = tdstat_kernel_thread_find(&from->kernel, tid);
	interval = (double)(to->kernel.taken_ns - from->kernel.taken_ns);
	/* A thread that began in the interval: all its time is in it. */
	uint64_t on_cpu = growth(before ? before->on_cpu_ns : 0, after->on_cpu_ns);
	uint64_t queued = growth(before ? before->run_queue_ns : 0, after->run_queue_ns);
	/* The sample's one clock and each file's own moment differ a little:
	 * shares of at most 1 between them (tdstat(1)). */
	if ((double)on_cpu + (double)queued > interval)
		interval = (double)on_cpu + (double)queued;
	*cpu = (double)on_cpu / interval;
	*run_queue = (double)queued / interval;
	return true;
}

/*
 * A record is one thread's at a time, and its integrals are the record's
 * (td_ta_thr_stats_iter): its growth over the interval is its thread's
 * own when the same owner held it at both readings (same generation), or
 * when the record was not in use at the first.  A record that changed
 * owners in between mixes them: its thread's shim shares are unknown.
 */
static void row_from_record(struct tdstat_thread_row *row, bool interval, const td_thr_stats_ns_t *before,
			    const td_thr_stats_ns_t *now, double window_ns)
{
	row->tracked = true;
	row->state = now->state;
	row->wait_kind = now->state == TDSTAT_STATE_BLOCKED ? (int)now->kind : -1;
	row->object = now->object;
	row->site = now->site;
	row->shim_known = !interval || !before || before->generation == now->generation;
	if (!row->shim_known || window_ns <= 0)
		return;
	uint64_t runnable = growth(before ? before->runnable_ns : 0, now->runnable_ns);
	uint64_t idle = growth(before ? before->idle_ns : 0, now->idle_ns);
	/* A wait's last commit lag is left open at a reading and counted at
	 * the next: a thread woken in between grows by up to the interval
	 * plus TDSTAT_COMMIT_LAG_NS.  Its shares are then of its own growth,
	 * so they stay within [0, 1] (tdstat(1)) and idle_by still adds up
	 * to idle. */
	double span = (double)runnable + (double)idle > window_ns ? (double)runnable + (double)idle : window_ns;

	row->runnable = (double)runnable / span;
	row->idle = (double)idle / span;
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		row->idle_by[k] =
			(double)growth(before ? before->idle_by_kind_ns[k] : 0, now->idle_by_kind_ns[k]) / span;
}

static int by_tid(const void *a, const void *b)
{
	const struct tdstat_thread_row *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* What it waits in now, named: the object and the calling function. */
static void name_wait(struct tdstat_symbolizer *symbolizer, struct tdstat_thread_row *row)
{
	uint64_t function;

	if (row->wait_kind < 0)
		return;
	tdstat_object_name(symbolizer, row->pid, row->wait_kind, row->object, row->object_name,
			   sizeof(row->object_name));
	if (!tdstat_symbolize_caller(symbolizer, row->site, row->site_name, sizeof(row->site_name), &function))
		row->site_name[0] = '\0';
	tdstat_printable(row->site_name);
}

void tdstat_thread_rows_name(struct tdstat_symbolizer *symbolizer, struct tdstat_thread_row *rows, size_t count)
{
	for (size_t r = 0; r < count; r++) {
		tdstat_kernel_thread_comm(rows[r].pid, rows[r].tid, rows[r].name);
		name_wait(symbolizer, &rows[r]);
	}
}

size_t tdstat_thread_rows(pid_t pid, const struct tdstat_reading *from, const struct tdstat_reading *to,
			  struct tdstat_thread_row **rows_out)
{
	size_t capacity = to->count + (to->kernel_valid ? to->kernel.count : 0), count = 0;
	struct tdstat_thread_row *rows = calloc(capacity ? capacity : 1, sizeof(*rows));
	double window_ns;

	*rows_out = rows;
	if (!rows)
		return 0;
	if (from && !tdstat_same_window(&from->stats, &to->stats))
		from = NULL;
	window_ns = (double)tdstat_interval_span_ns(from ? &from->stats : NULL, &to->stats);
	/* Threads the shim tracks, alive now (tid 0: not started yet). */
	for (size_t i = 0; i < to->count; i++) {
		const td_thr_stats_ns_t *now = &to->threads[i];
		struct tdstat_thread_row *row;

		if (now->state == TDSTAT_STATE_FREE || now->tid <= 0)
			continue;
		row = &rows[count++];
		row->tid = now->tid;
		row->window_s = window_ns / 1e9;
		row_from_record(row, from != NULL, tdstat_reading_record(from, now->record), now, window_ns);
	}
	/* Threads of the process the shim has no record of. */
	size_t tracked = count;

	qsort(rows, tracked, sizeof(*rows), by_tid);
	for (size_t i = 0; to->kernel_valid && i < to->kernel.count; i++) {
		struct tdstat_thread_row key = { .tid = to->kernel.threads[i].tid };

		if (bsearch(&key, rows, tracked, sizeof(*rows), by_tid))
			continue;
		rows[count] = (struct tdstat_thread_row){ .tid = key.tid, .wait_kind = -1, .window_s = window_ns / 1e9 };
		count++;
	}
	for (size_t r = 0; r < count; r++) {
		struct tdstat_thread_row *row = &rows[r];

		row->pid = pid;
		row->has_kernel = kernel_shares(from, to, row->tid, &row->cpu, &row->run_queue);
		if (row->has_kernel)
			row->kernel_window_s = (double)(to->kernel.taken_ns - from->kernel.taken_ns) / 1e9;
		row->untracked = -1;
		if (row->has_kernel && row->tracked && row->shim_known)
			row->untracked = row->runnable > row->cpu + row->run_queue
						 ? row->runnable - (row->cpu + row->run_queue)
						 : 0;
	}
	qsort(rows, count, sizeof(*rows), by_tid);
	return count;
}

/*
 * The process's untracked average: over the threads both sides know for
 * the interval, the shim's runnable less the kernel's, added up before
 * the one clamp at 0, so that the small offsets between the two sides'
 * reading moments cancel instead of adding up.  Threads that began or
 * ended in the interval, or whose record changed owner, take no part:
 * one side has only part of their time.
 */
double tdstat_untracked(const struct tdstat_thread_row *rows, size_t count)
{
	double total = 0;
	bool known = false;

	for (size_t i = 0; i < count; i++) {
		if (rows[i].untracked < 0)
			continue;
		known = true;
		total += rows[i].runnable - (rows[i].cpu + rows[i].run_queue);
	}
	if (!known)
		return -1;
	return total > 0 ? total : 0;
}

void tdstat_kernel_carry_free(struct tdstat_kernel_carry *carry)
{
	free(carry->rows);
	memset(carry, 0, sizeof(*carry));
}

static void kernel_columns_from(struct tdstat_thread_row *row, const struct tdstat_thread_row *source)
{
	row->has_kernel = source->has_kernel;
	row->cpu = source->cpu;
	row->run_queue = source->run_queue;
	row->untracked = source->untracked;
	row->kernel_window_s = source->kernel_window_s;
}

/* Each row of `rows` with a tid in `source` (both sorted by tid) takes
 * its kernel columns; rows of threads the shim has no record of that only
 * `source` has are added when `add_untracked` (a line without a kernel
 * reading knows them only from the last one).  Returns the new count. */
static size_t overlay_kernel(struct tdstat_thread_row **rows_io, size_t count, const struct tdstat_thread_row *source,
			     size_t source_count, bool add_untracked)
{
	struct tdstat_thread_row *rows = *rows_io;
	size_t added = 0;

	for (size_t i = 0, j = 0; i < count; i++) {
		while (j < source_count && source[j].tid < rows[i].tid)
			j++;
		if (j < source_count && source[j].tid == rows[i].tid)
			kernel_columns_from(&rows[i], &source[j]);
	}
	if (!add_untracked)
		return count;
	for (size_t j = 0; j < source_count; j++)
		if (!source[j].tracked && !bsearch(&source[j], rows, count, sizeof(*rows), by_tid))
			added++;
	if (!added)
		return count;
	struct tdstat_thread_row *more = realloc(rows, (count + added) * sizeof(*rows));
	if (!more)
		return count;
	rows = more;
	size_t total = count;
	for (size_t j = 0; j < source_count; j++)
		if (!source[j].tracked && !bsearch(&source[j], rows, count, sizeof(*rows), by_tid)) {
			rows[total] = source[j];
			rows[total].name[0] = '\0';
			total++;
		}
	qsort(rows, total, sizeof(*rows), by_tid);
	*rows_io = rows;
	return total;
}

size_t tdstat_thread_rows_carried(pid_t pid, const struct tdstat_reading *from,
				  const struct tdstat_reading *kernel_from, const struct tdstat_reading *to,
				  struct tdstat_kernel_carry *carry, struct tdstat_thread_row **rows_out, double *untracked)
{
	size_t count = tdstat_thread_rows(pid, from, to, rows_out);

	if (from && !tdstat_same_window(&from->stats, &to->stats))
		from = NULL;
	if (!from) {
		/* A new window: the carried figures are of the old one. */
		carry->valid = false;
		carry->count = 0;
	}
	*untracked = -1;
	if (to->kernel_valid) {
		if (from && !from->kernel_valid && kernel_from && kernel_from->kernel_valid) {
			/* The kernel's interval is longer than the line's: its
			 * columns, and the shim's runnable they are compared
			 * with, over [kernel_from, to]. */
			struct tdstat_thread_row *kernel_rows;
			size_t kernel_count = tdstat_thread_rows(pid, kernel_from, to, &kernel_rows);

			count = overlay_kernel(rows_out, count, kernel_rows, kernel_count, false);
			*untracked = tdstat_untracked(kernel_rows, kernel_count);
			free(kernel_rows);
		} else if (from) {
			*untracked = tdstat_untracked(*rows_out, count);
		}
		/* Kept for the lines until the next kernel reading. */
		struct tdstat_thread_row *kept = realloc(carry->rows, (count ? count : 1) * sizeof(*kept));
		if (kept) {
			carry->rows = kept;
			memcpy(kept, *rows_out, count * sizeof(*kept));
			carry->count = count;
			carry->untracked = *untracked;
			carry->valid = from != NULL;
		} else {
			carry->valid = false;
		}
	} else if (carry->valid) {
		count = overlay_kernel(rows_out, count, carry->rows, carry->count, true);
		*untracked = carry->untracked;
	}
	return count;
}
