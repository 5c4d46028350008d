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
#include <unistd.h>

#include <tdstat/clock.h>

static uint64_t growth(uint64_t from, uint64_t to)
{
	return to > from ? to - from : 0;
}

/* The kernel's shares over [from, to] of a thread, from its entries in
 * both samples (before NULL: it began in between); false when unknown. */
static bool kernel_shares(const struct tdstat_reading *from, const struct tdstat_reading *to,
			  const struct tdstat_kernel_thread *before, const struct tdstat_kernel_thread *after,
			  double *cpu, double *run_queue)
{
	double interval;

	if (!from || !from->kernel_valid || !to->kernel_valid || to->kernel.taken_ns <= from->kernel.taken_ns)
		return false;
	if (!after)
		return false;
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

/* The entry of tid in a sample sorted by tid, for tids asked in
 * increasing order: *at moves forward only (a merge, not a search per
 * row). */
static const struct tdstat_kernel_thread *kernel_walk(const struct tdstat_kernel_sample *sample, bool valid,
						      size_t *at, pid_t tid)
{
	if (!valid)
		return NULL;
	while (*at < sample->count && sample->threads[*at].tid < tid)
		(*at)++;
	return *at < sample->count && sample->threads[*at].tid == tid ? &sample->threads[*at] : NULL;
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
	/* A newer shim's kind (TDSTAT_WAIT_KIND_COUNT) has no name to print. */
	row->wait_kind = now->state == TDSTAT_STATE_BLOCKED && now->kind < TDSTAT_WAIT_KIND_COUNT ? (int)now->kind : -1;
	row->object = now->object;
	row->site = now->site;
	row->since_ns = now->since_ns;
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
	row->has_kinds = tdstat_record_kinds_known(before, now);
	if (!row->has_kinds)
		return;
	/* Most kinds of most threads did not grow: no division for them
	 * (0 / span is 0 exactly).  The earlier reading is looked up once,
	 * not once a kind. */
	static const uint64_t none[TDSTAT_WAIT_KIND_COUNT];
	const uint64_t *earlier = before ? before->idle_by_kind_ns : none;

#pragma GCC unroll 16
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++) {
		uint64_t kind = growth(earlier[k], now->idle_by_kind_ns[k]);

		row->idle_by[k] = kind ? (double)kind / span : 0;
	}
}

static int by_tid(const void *a, const void *b)
{
	const struct tdstat_thread_row *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/*
 * The names of -t, kept from line to line: a thread's name is read again
 * once a second (TDSTAT_COMM_REREAD_NS), its wait's object and caller
 * once per wait (the same kind, object and call site since the same
 * moment).  At 100 lines a second on a thousand threads, naming every
 * row afresh was a quarter of tdstat's time.  One entry per thread of
 * the last naming, sorted by tid as the rows are, in one array; the names
 * themselves are interned (most threads of a program share theirs), so
 * that printing a thousand rows reads a few strings, not a thousand
 * scattered ones.
 */
struct thread_names {
	pid_t pid, tid;
	uint64_t comm_read_ns;
	uint64_t comm_since_ns; /* the record's since_ns then, when BLOCKED; 0: not */
	int wait_kind;          /* the wait the names below are of; -1: none named */
	uint64_t object, site, since_ns;
	const char *comm, *object_name, *site_name; /* interned */
};

/* The interned names: an open-addressing set of strings, emptied when it
 * holds many more than the last naming used (threads come and go). */
struct interned {
	char **slots;           /* NULL: empty */
	size_t size;            /* a power of 2 */
	size_t count;
};

static struct {
	struct thread_names *entries; /* sorted by tid */
	size_t count;
	const struct tdstat_symbolizer *symbolizer; /* the names' */
	struct interned strings;
} kept_names;

/* Bumped whenever interned strings are freed: a pointer kept from
 * before may be another text's now (tdstat_thread_row.names_generation). */
static uint64_t names_generation = 1;

static void interned_free(struct interned *set)
{
	names_generation++;
	for (size_t i = 0; i < set->size; i++)
		free(set->slots[i]);
	free(set->slots);
	memset(set, 0, sizeof(*set));
}

static uint64_t text_hash(const char *text)
{
	uint64_t hash = 14695981039346656037u; /* FNV-1a */

	for (; *text; text++)
		hash = (hash ^ (unsigned char)*text) * 1099511628211u;
	return hash;
}

/* The one copy of `text` (a copy of it on first sight); "" when there is
 * no memory. */
static const char *intern(struct interned *set, const char *text)
{
	if (!text[0])
		return "";
	if (2 * (set->count + 1) > set->size) {
		size_t size = set->size ? 2 * set->size : 256;
		char **slots = calloc(size, sizeof(*slots));

		if (!slots)
			return "";
		for (size_t i = 0; i < set->size; i++)
			if (set->slots[i]) {
				size_t at = text_hash(set->slots[i]) & (size - 1);

				while (slots[at])
					at = (at + 1) & (size - 1);
				slots[at] = set->slots[i];
			}
		free(set->slots);
		set->slots = slots;
		set->size = size;
	}
	size_t at = text_hash(text) & (set->size - 1);

	for (; set->slots[at]; at = (at + 1) & (set->size - 1))
		if (strcmp(set->slots[at], text) == 0)
			return set->slots[at];
	set->slots[at] = strdup(text);
	if (!set->slots[at])
		return "";
	set->count++;
	return set->slots[at];
}

void tdstat_thread_names_forget(void)
{
	free(kept_names.entries);
	interned_free(&kept_names.strings);
	memset(&kept_names, 0, sizeof(kept_names));
}

/* What it waits in now, named: the object and the calling function. */
static void name_wait(struct tdstat_symbolizer *symbolizer, const struct tdstat_thread_row *row,
		      struct thread_names *names)
{
	char object_name[TDSTAT_NAME_SIZE], site_name[TDSTAT_NAME_SIZE];
	uint64_t function;

	names->wait_kind = row->wait_kind;
	names->object = row->object;
	names->site = row->site;
	names->since_ns = row->since_ns;
	tdstat_object_name(symbolizer, row->pid, row->wait_kind, row->object, object_name, sizeof(object_name));
	if (!tdstat_symbolize_caller(symbolizer, row->site, site_name, sizeof(site_name), &function))
		site_name[0] = '\0';
	tdstat_printable(site_name);
	names->object_name = intern(&kept_names.strings, object_name);
	names->site_name = intern(&kept_names.strings, site_name);
}

static bool same_wait(const struct tdstat_thread_row *row, const struct thread_names *names)
{
	return names->wait_kind == row->wait_kind && names->object == row->object && names->site == row->site &&
	       names->since_ns == row->since_ns;
}

/* Names interned by earlier namings of threads now gone: once they
 * outnumber the live ones, the set starts again (a program whose
 * threads come and go with names of their own). */
static void names_trim(void)
{
	if (kept_names.strings.count < 1024 || kept_names.strings.count < 4 * (kept_names.count + 1))
		return;
	interned_free(&kept_names.strings);
	for (size_t i = 0; i < kept_names.count; i++) {
		kept_names.entries[i].comm_read_ns = 0;
		kept_names.entries[i].wait_kind = -1;
	}
}

/* The rows are the threads of the last naming, in the same order: their
 * entries are named again where they are (most lines of a program whose
 * threads stay). */
static bool same_threads(const struct tdstat_thread_row *rows, size_t count)
{
	if (count != kept_names.count || !count)
		return false;
	for (size_t r = 0; r < count; r++)
		if (rows[r].tid != kept_names.entries[r].tid || rows[r].pid != kept_names.entries[r].pid)
			return false;
	return true;
}

void tdstat_thread_rows_name(struct tdstat_symbolizer *symbolizer, struct tdstat_thread_row *rows, size_t count)
{
	struct thread_names *entries;
	uint64_t now = tdstat_monotonic_ns();
	size_t old = 0, made = 0;
	pid_t last_tid = 0;
	bool in_place;

	if (kept_names.symbolizer != symbolizer)
		tdstat_thread_names_forget();
	kept_names.symbolizer = symbolizer;
	names_trim();
	in_place = same_threads(rows, count);
	entries = in_place ? kept_names.entries : malloc((count ? count : 1) * sizeof(*entries));
	for (size_t r = 0; r < count; r++) {
		struct tdstat_thread_row *row = &rows[r];
		struct thread_names *names;

		row->name = row->object_name = row->site_name = "";
		row->names_generation = names_generation;
		if (!entries)
			continue;
		names = &entries[made++];
		/* Rows come sorted by tid (tdstat_thread_rows): a merge with
		 * the kept entries.  Rows out of order get fresh names.  In
		 * place, the entry is this very thread's already. */
		if (!in_place && (r == 0 || row->tid > last_tid))
			while (old < kept_names.count && kept_names.entries[old].tid < row->tid)
				old++;
		if (in_place) {
			/* named again below */
		} else if ((r == 0 || row->tid > last_tid) && old < kept_names.count &&
			   kept_names.entries[old].tid == row->tid && kept_names.entries[old].pid == row->pid) {
			*names = kept_names.entries[old++];
		} else {
			*names = (struct thread_names){ .pid = row->pid, .tid = row->tid, .wait_kind = -1,
							.comm_read_ns = now - TDSTAT_COMM_REREAD_NS,
							.comm = "", .object_name = "", .site_name = "" };
		}
		last_tid = row->tid;
		/* A thread asleep in the same wait since its name was read
		 * did not rename itself: read again less often (another
		 * thread may still have renamed it). */
		bool same_sleep = row->tracked && row->state == TDSTAT_STATE_BLOCKED && row->since_ns &&
				  row->since_ns == names->comm_since_ns;

		if (now - names->comm_read_ns >= (same_sleep ? TDSTAT_COMM_ASLEEP_REREAD_NS : TDSTAT_COMM_REREAD_NS)) {
			char comm[TDSTAT_COMM_SIZE];

			tdstat_kernel_thread_comm_read(row->pid, row->tid, comm);
			names->comm = intern(&kept_names.strings, comm);
			names->comm_read_ns = now;
			names->comm_since_ns =
				row->tracked && row->state == TDSTAT_STATE_BLOCKED ? row->since_ns : 0;
		}
		row->name = names->comm;
		if (row->wait_kind < 0)
			continue;
		if (!same_wait(row, names))
			name_wait(symbolizer, row, names);
		row->object_name = names->object_name;
		row->site_name = names->site_name;
	}
	if (in_place)
		return;
	free(kept_names.entries);
	kept_names.entries = entries;
	kept_names.count = made;
}

/* Sorted by tid: most lines find the rows so already (records and tids
 * are both handed out in creation order), and skip the sort. */
static void sort_by_tid(struct tdstat_thread_row *rows, size_t count)
{
	for (size_t i = 1; i < count; i++)
		if (rows[i].tid < rows[i - 1].tid) {
			qsort(rows, count, sizeof(*rows), by_tid);
			return;
		}
}

size_t tdstat_thread_rows(pid_t pid, const struct tdstat_reading *from, const struct tdstat_reading *to,
			  struct tdstat_thread_row **rows_out)
{
	size_t capacity = to->count + (to->kernel_valid ? to->kernel.count : 0), count = 0;
	struct tdstat_thread_row *rows = malloc((capacity ? capacity : 1) * sizeof(*rows));
	double window_ns;

	*rows_out = rows;
	if (!rows)
		return 0;
	if (from && !tdstat_same_window(&from->stats, &to->stats))
		from = NULL;
	window_ns = (double)tdstat_interval_span_ns(from ? &from->stats : NULL, &to->stats);
	/* Threads the shim tracks, alive now (tid 0: not started yet).  Both
	 * readings list records in increasing order: the record's earlier
	 * reading is found by walking `from` along. */
	size_t earlier = 0;

	for (size_t i = 0; i < to->count; i++) {
		const td_thr_stats_ns_t *now = &to->threads[i], *before = NULL;
		struct tdstat_thread_row *row;

		while (from && earlier < from->count && from->threads[earlier].record < now->record)
			earlier++;
		if (from && earlier < from->count && from->threads[earlier].record == now->record)
			before = &from->threads[earlier];
		if (now->state == TDSTAT_STATE_FREE || now->tid <= 0)
			continue;
		row = &rows[count++];
		*row = (struct tdstat_thread_row){ .tid = now->tid, .window_s = window_ns / 1e9 };
		row_from_record(row, from != NULL, before, now, window_ns);
	}
	/* Threads of the process the shim has no record of. */
	size_t tracked = count, at = 0;

	sort_by_tid(rows, tracked);
	for (size_t i = 0; to->kernel_valid && i < to->kernel.count; i++) {
		pid_t tid = to->kernel.threads[i].tid;

		while (at < tracked && rows[at].tid < tid)
			at++;
		if (at < tracked && rows[at].tid == tid)
			continue;
		rows[count++] = (struct tdstat_thread_row){ .tid = tid, .wait_kind = -1, .window_s = window_ns / 1e9 };
	}
	if (count > tracked)
		qsort(rows, count, sizeof(*rows), by_tid);
	size_t kernel_before = 0, kernel_after = 0;

	for (size_t r = 0; r < count; r++) {
		struct tdstat_thread_row *row = &rows[r];
		const struct tdstat_kernel_thread *after = kernel_walk(&to->kernel, to->kernel_valid, &kernel_after,
								      row->tid);
		const struct tdstat_kernel_thread *before =
			from ? kernel_walk(&from->kernel, from->kernel_valid, &kernel_before, row->tid) : NULL;

		row->pid = pid;
		row->name = row->object_name = row->site_name = "";
		row->has_kernel = kernel_shares(from, to, before, after, &row->cpu, &row->run_queue);
		if (row->has_kernel)
			row->kernel_window_s = (double)(to->kernel.taken_ns - from->kernel.taken_ns) / 1e9;
		row->untracked = -1;
		if (row->has_kernel && row->tracked && row->shim_known)
			row->untracked = row->runnable > row->cpu + row->run_queue
						 ? row->runnable - (row->cpu + row->run_queue)
						 : 0;
	}
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

bool tdstat_kernel_carry_take(struct tdstat_kernel_carry *carry, struct tdstat_thread_row *rows)
{
	if (!carry->awaiting)
		return false;
	carry->awaiting = false;
	carry->rows = rows;
	carry->valid = true;
	return true;
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
			rows[total].name = rows[total].object_name = rows[total].site_name = "";
			total++;
		}
	qsort(rows, total, sizeof(*rows), by_tid);
	*rows_io = rows;
	return total;
}

/*
 * The machine's steal over [from, to], in CPUs: time the hypervisor ran
 * something else on our vCPUs.  A thread running on a vCPU while it is
 * stolen counts neither as CPU nor as run-queue wait in its schedstat
 * (the scheduler's task clock leaves steal out), yet the shim counts it
 * runnable: it shows as untracked, up to the steal itself (tdstat(1)).
 * /proc/stat is read about once a second (kernel.c): between two
 * readings of it, the steal of the line is that between them; a line
 * within one reading's second gets the steal between that reading and
 * the one before.  /proc/stat counts in USER_HZ ticks, each reading
 * rounded down: the difference may be off by one tick, *resolution.
 */
static uint64_t steal_taken_ns(const struct tdstat_kernel_sample *sample)
{
	return sample->steal_taken_ns ? sample->steal_taken_ns : sample->taken_ns;
}

static double steal_between(const struct tdstat_kernel_sample *from, const struct tdstat_kernel_sample *to,
			    double *resolution)
{
	static long ticks_per_second;
	uint64_t from_ticks = from->steal_ticks, from_ns = steal_taken_ns(from), to_ns = steal_taken_ns(to);
	bool from_known = from->steal_known;
	double interval_s;

	*resolution = 0;
	if (to_ns <= from_ns) {
		/* The same reading at both ends: the second before it. */
		from_known = to->steal_before_known;
		from_ticks = to->steal_before_ticks;
		from_ns = to->steal_before_taken_ns;
	}
	if (!from_known || !to->steal_known || to_ns <= from_ns || to->steal_ticks < from_ticks)
		return -1;
	if (!ticks_per_second)
		ticks_per_second = sysconf(_SC_CLK_TCK);
	if (ticks_per_second <= 0)
		return -1;
	interval_s = (double)(to_ns - from_ns) / 1e9;
	*resolution = 1 / (double)ticks_per_second / interval_s;
	return (double)(to->steal_ticks - from_ticks) / (double)ticks_per_second / interval_s;
}

size_t tdstat_thread_rows_carried(pid_t pid, const struct tdstat_reading *from,
				  const struct tdstat_reading *kernel_from, const struct tdstat_reading *to,
				  struct tdstat_kernel_carry *carry, struct tdstat_thread_row **rows_out,
				  struct tdstat_kernel_line *line)
{
	size_t count = tdstat_thread_rows(pid, from, to, rows_out);

	if (from && !tdstat_same_window(&from->stats, &to->stats))
		from = NULL;
	if (!from) {
		/* A new window: the carried figures are of the old one. */
		carry->valid = false;
		carry->count = 0;
	}
	*line = (struct tdstat_kernel_line){ .untracked = -1, .steal = -1 };
	if (to->kernel_valid) {
		if (from && !from->kernel_valid && kernel_from && kernel_from->kernel_valid) {
			/* The kernel's interval is longer than the line's: its
			 * columns, and the shim's runnable they are compared
			 * with, over [kernel_from, to]. */
			struct tdstat_thread_row *kernel_rows;
			size_t kernel_count = tdstat_thread_rows(pid, kernel_from, to, &kernel_rows);

			count = overlay_kernel(rows_out, count, kernel_rows, kernel_count, false);
			line->untracked = tdstat_untracked(kernel_rows, kernel_count);
			line->steal = steal_between(&kernel_from->kernel, &to->kernel, &line->steal_resolution);
			free(kernel_rows);
		} else if (from) {
			line->untracked = tdstat_untracked(*rows_out, count);
			if (from->kernel_valid)
				line->steal = steal_between(&from->kernel, &to->kernel, &line->steal_resolution);
		}
		/* Kept for the lines until the next kernel reading: these
		 * very rows, handed over once printed
		 * (tdstat_kernel_carry_take), not copied (200 KB a line at a
		 * thousand threads, which now have the kernel's figures at
		 * almost every line). */
		free(carry->rows);
		carry->rows = NULL;
		carry->count = count;
		carry->line = *line;
		carry->valid = false;
		carry->awaiting = from != NULL;
	} else if (carry->valid) {
		count = overlay_kernel(rows_out, count, carry->rows, carry->count, true);
		*line = carry->line;
	}
	return count;
}
