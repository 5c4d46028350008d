/* SPDX-License-Identifier: MIT */
/*
 * `-w`: the objects idle time was spent on over an interval, heaviest
 * first.
 *
 * A record says which object its thread waits on only for the wait it is
 * in now; its per-kind integrals cover every wait.  So the interval's
 * idle time goes to objects by this rule (tdstat(1) states it too), for
 * each thread, between two readings a and b of one window:
 *
 *   - in b the thread waits in the same wait as in a (same record owner,
 *     same start, same kind and object): all its growth in that kind
 *     belongs to that object;
 *   - in b it waits in a wait that began after a: that wait's part of the
 *     interval (from its start, or a's end, to b's end, less the commit
 *     lag that readers leave open), at most the kind's growth, belongs to
 *     its object;
 *   - the rest of every kind's growth (waits that began and ended between
 *     the readings, or that were current at a and ended before b) belongs
 *     to no object the readings saw: it is shown per kind as "waits that
 *     ended", so the rows of a kind sum to its idle_by figure.  The
 *     objects of waits current at a that ended before b are named with
 *     it: some of its time is theirs, how much is not known.
 *
 * Nothing is ever credited to an object it was not spent on, beyond the
 * reading's own duration (b's end is taken after the walk).
 */
#include "tdstat.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t growth(uint64_t from, uint64_t to)
{
	return to > from ? to - from : 0;
}

static bool same_wait(const td_thr_stats_ns_t *a, const td_thr_stats_ns_t *b)
{
	return a && a->state == TDSTAT_STATE_BLOCKED && b->state == TDSTAT_STATE_BLOCKED &&
	       a->generation == b->generation && a->since_ns == b->since_ns && a->kind == b->kind &&
	       a->object == b->object;
}

/* The rows, and an open-addressing index over their keys (kind, ended,
 * object, function): a process may wait on thousands of objects. */
struct object_table {
	struct tdstat_object_row *rows;
	size_t count, capacity;
	size_t *slots;      /* row index + 1; 0: empty */
	size_t slot_count;  /* a power of two, at least twice count */
	bool failed;
};

static bool same_key(const struct tdstat_object_row *a, const struct tdstat_object_row *b)
{
	return a->kind == b->kind && a->ended == b->ended && a->object == b->object && a->function == b->function;
}

static size_t key_hash(const struct tdstat_object_row *key)
{
	uint64_t hash = key->object * UINT64_C(0x9e3779b97f4a7c15) ^ key->function * UINT64_C(0xc2b2ae3d27d4eb4f) ^
			(uint64_t)(key->kind * 2 + key->ended);

	return (size_t)(hash ^ hash >> 29);
}

static size_t *slot_of(const struct object_table *table, const struct tdstat_object_row *key)
{
	size_t mask = table->slot_count - 1, at = key_hash(key) & mask;

	while (table->slots[at] && !same_key(&table->rows[table->slots[at] - 1], key))
		at = (at + 1) & mask;
	return &table->slots[at];
}

/* Room for one more row, in the rows and in the index. */
static bool table_grow(struct object_table *table)
{
	if (table->count == table->capacity) {
		size_t grown = table->capacity ? 2 * table->capacity : 32;
		void *more = realloc(table->rows, grown * sizeof(*table->rows));

		if (!more)
			return false;
		table->rows = more;
		table->capacity = grown;
	}
	if (2 * (table->count + 1) > table->slot_count) {
		size_t count = table->slot_count ? 2 * table->slot_count : 64;
		size_t *slots = calloc(count, sizeof(*slots));

		if (!slots)
			return false;
		free(table->slots);
		table->slots = slots;
		table->slot_count = count;
		for (size_t i = 0; i < table->count; i++)
			*slot_of(table, &table->rows[i]) = i + 1;
	}
	return true;
}

/* An ended row names a few of the objects whose waits it holds. */
static void note_seen(struct tdstat_object_row *row, uint64_t object)
{
	for (int i = 0; i < row->seen_count; i++)
		if (row->seen[i] == object)
			return;
	if (row->seen_count < TDSTAT_SEEN_MAX)
		row->seen[row->seen_count++] = object;
	else
		row->seen_more = true;
}

static struct tdstat_object_row *credit(struct object_table *table, const struct tdstat_object_row *key, uint64_t ns)
{
	size_t *slot;

	if (ns == 0 || table->failed)
		return NULL;
	if (table->slot_count) {
		slot = slot_of(table, key);
		if (*slot) {
			table->rows[*slot - 1].idle_ns += ns;
			return &table->rows[*slot - 1];
		}
	}
	if (!table_grow(table)) {
		table->failed = true;
		return NULL;
	}
	table->rows[table->count] = *key;
	table->rows[table->count].idle_ns = ns;
	*slot_of(table, key) = table->count + 1;
	return &table->rows[table->count++];
}

static int heaviest_first(const void *a, const void *b)
{
	const struct tdstat_object_row *x = a, *y = b;

	if (x->idle_ns != y->idle_ns)
		return x->idle_ns < y->idle_ns ? 1 : -1;
	if (x->kind != y->kind)
		return x->kind - y->kind;
	return (x->object > y->object) - (x->object < y->object);
}

/* The current wait of `now`, keyed by its object and its caller's
 * function (the return address when the caller has no symbol). */
static void current_wait_key(struct tdstat_symbolizer *symbolizer, const td_thr_stats_ns_t *now,
			     struct tdstat_object_row *key)
{
	memset(key, 0, sizeof(*key));
	key->kind = (int)now->kind;
	key->object = now->object;
	key->site = now->site;
	if (!tdstat_symbolize_caller(symbolizer, now->site, key->site_name, sizeof(key->site_name), &key->function))
		key->function = now->site;
}

/* The names of a row, for the formats. */
static void name_row(struct tdstat_symbolizer *symbolizer, struct tdstat_object_row *row)
{
	if (!row->ended)
		tdstat_object_name(symbolizer, row->pid, row->kind, row->object, row->object_name,
				   sizeof(row->object_name));
	for (int i = 0; i < row->seen_count; i++)
		tdstat_object_name(symbolizer, row->pid, row->kind, row->seen[i], row->seen_names[i],
				   sizeof(row->seen_names[i]));
	tdstat_printable(row->site_name);
}

size_t tdstat_object_rows(pid_t pid, struct tdstat_symbolizer *symbolizer, const struct tdstat_reading *from,
			  const struct tdstat_reading *to, struct tdstat_object_row **rows_out)
{
	struct object_table table = { 0 };
	uint64_t from_end, to_end, window_ns;

	if (from && !tdstat_same_window(&from->stats, &to->stats))
		from = NULL;
	window_ns = tdstat_interval_span_ns(from ? &from->stats : NULL, &to->stats);
	from_end = from ? tdstat_reading_end_ns(from) : to->stats.window_start_ns;
	/* Readers leave the last commit lag of a wait open (region.h). */
	to_end = tdstat_reading_end_ns(to);
	to_end = to_end > TDSTAT_COMMIT_LAG_NS ? to_end - TDSTAT_COMMIT_LAG_NS : 0;
	for (size_t i = 0; i < to->count; i++) {
		const td_thr_stats_ns_t *now = &to->threads[i];
		const td_thr_stats_ns_t *before = tdstat_reading_record(from, now->record);
		uint64_t kind_growth[TDSTAT_WAIT_KIND_COUNT];
		/* Without a breakdown at either reading, no growth by kind:
		 * the other reading's whole breakdown would be one interval's
		 * waiting. */
		bool kinds = tdstat_record_kinds_known(before, now);

		for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
			kind_growth[k] = kinds ? growth(before ? before->idle_by_kind_ns[k] : 0, now->idle_by_kind_ns[k]) : 0;
		if (now->state == TDSTAT_STATE_BLOCKED && now->kind < TDSTAT_WAIT_KIND_COUNT) {
			struct tdstat_object_row key;
			uint64_t start = now->since_ns > from_end ? now->since_ns : from_end;
			uint64_t part = same_wait(before, now) ? kind_growth[now->kind]
							       : growth(start, to_end);

			if (part > kind_growth[now->kind])
				part = kind_growth[now->kind];
			current_wait_key(symbolizer, now, &key);
			credit(&table, &key, part);
			kind_growth[now->kind] -= part;
		}
		for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++) {
			struct tdstat_object_row *ended =
				credit(&table, &(struct tdstat_object_row){ .kind = k, .ended = true }, kind_growth[k]);

			/* The wait current at a that ended since is part of it. */
			if (ended && before && before->state == TDSTAT_STATE_BLOCKED && (int)before->kind == k &&
			    !same_wait(before, now) && before->object != 0)
				note_seen(ended, before->object);
		}
	}
	for (size_t i = 0; i < table.count; i++) {
		table.rows[i].pid = pid;
		table.rows[i].window_s = (double)window_ns / 1e9;
		table.rows[i].waiting = window_ns ? (double)table.rows[i].idle_ns / (double)window_ns : 0;
		name_row(symbolizer, &table.rows[i]);
	}
	free(table.slots);
	if (table.count)
		qsort(table.rows, table.count, sizeof(*table.rows), heaviest_first);
	*rows_out = table.rows;
	return table.count;
}

/* What a wait of `kind` on `object` is, for people: the symbol it lives
 * in, else what the number means for that kind. */
static void object_name(struct tdstat_symbolizer *symbolizer, pid_t pid, int kind, uint64_t object, char *name,
			size_t size)
{
	switch (kind) {
	case TDSTAT_WAIT_SLEEP:
	case TDSTAT_WAIT_SIGNAL:
		snprintf(name, size, "-");
		return;
	case TDSTAT_WAIT_IO: {
		/* The first descriptor waited on (poll's first, select's lowest). */
		char link[96], target[256];
		ssize_t length;

		snprintf(link, sizeof(link), "/proc/%d/fd/%" PRId64, (int)pid, (int64_t)object);
		length = readlink(link, target, sizeof(target) - 1);
		if (length > 0) {
			target[length] = '\0';
			snprintf(name, size, "fd %" PRId64 " %s", (int64_t)object, target);
		} else {
			snprintf(name, size, "fd %" PRId64, (int64_t)object);
		}
		return;
	}
	case TDSTAT_WAIT_CHILD:
		/* waitpid's terms (the shim maps waitid's to them); a pidfd
		 * as INT64_MIN + fd. */
		if ((int64_t)object > 0)
			snprintf(name, size, "pid %" PRId64, (int64_t)object);
		else if ((int64_t)object == 0)
			snprintf(name, size, "a child in its group");
		else if ((int64_t)object == -1)
			snprintf(name, size, "any child");
		else if ((int64_t)object >= -(int64_t)INT32_MAX)
			snprintf(name, size, "a child in group %" PRId64, -(int64_t)object);
		else if (object - (uint64_t)INT64_MIN <= (uint64_t)INT32_MAX)
			snprintf(name, size, "pidfd %" PRIu64, object - (uint64_t)INT64_MIN);
		else
			snprintf(name, size, "child 0x%" PRIx64, object);
		return;
	case TDSTAT_WAIT_JOIN:
		/* A pthread_t: the thread's descriptor, on its own stack. */
		snprintf(name, size, "thread 0x%" PRIx64, object);
		return;
	default:
		if (!tdstat_symbolize_object(symbolizer, object, name, size))
			snprintf(name, size, "0x%" PRIx64, object);
	}
}

void tdstat_object_name(struct tdstat_symbolizer *symbolizer, pid_t pid, int kind, uint64_t object, char *name,
			size_t size)
{
	/* Symbols and file names are any bytes. */
	object_name(symbolizer, pid, kind, object, name, size);
	tdstat_printable(name);
}
