/* SPDX-License-Identifier: MIT */
/*
 * --format csv: RFC 4180, a heading row, then one row per line.  The
 * columns are the JSON keys, idle_by flattened to idle_KIND; a value that
 * is not known (stopped in `run`, untracked before a second sample) is an
 * empty field.  ps adds comm and enabled after pid, and leaves the
 * averages of a process whose gathering is off empty.
 */
#include "format.h"

#include <inttypes.h>
#include <string.h>

#include <tdstat/thread_db_sync.h>

/* With -t or -w, rows of three kinds share one heading: a first column
 * `record` says which (process, thread, object; and with -w the
 * wait-for graph's sync and deadlock), each row fills its own
 * columns, and the thread and object columns follow the process's.  A
 * thread's runnable, idle, idle_KIND, untracked and window_s go in the
 * process's columns of those names. */
static bool tables(const struct tdstat_output *output)
{
	return output->mode == TDSTAT_OUTPUT_LIVE && (output->threads || output->objects);
}

#define TABLE_COLUMNS(X)                                                                        \
	X(tid) X(name) X(state) X(wait) X(object) X(object_address) X(site) X(site_address) X(cpu) \
	X(run_queue) X(kind) X(waiting) X(ended) X(owner_tid) X(owner_name) X(waiters) X(deadlock)

/* -s: pid, object, address, type, sleep_ns, then every type's fields
 * (empty for the other types), then the table's columns, which only the
 * last row of a process, of type "table", fills. */
#define SYNC_TABLE_COLUMNS(X) X(capacity) X(used) X(overflow)

static void sync_heading(FILE *out)
{
	fputs("pid,object,address,type,sleep_ns", out);
#define COLUMN(type, member, name) fputs("," #name, out);
	TDSTAT_SYNC_FIELDS(COLUMN)
#undef COLUMN
#define COLUMN(name) fputs("," #name, out);
	SYNC_TABLE_COLUMNS(COLUMN)
#undef COLUMN
	fputs("\r\n", out);
}

static void start(struct tdstat_output *output)
{
	FILE *out = output->out;

	if (output->sync) {
		sync_heading(out);
		return;
	}
	if (tables(output))
		fputs("record,", out);
	fputs("pid", out);
	if (output->mode == TDSTAT_OUTPUT_LIST)
		fputs(",comm,enabled", out);
#define COLUMN(key) fputs("," #key, out);
	TDSTAT_LINE_COUNTS(COLUMN)
	TDSTAT_LINE_FRACTIONS(COLUMN)
	TDSTAT_LINE_AVERAGES(COLUMN)
#undef COLUMN
	fputs(",stopped", out);
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		fprintf(out, ",idle_%s", td_wait_kind_name((unsigned)k));
	fputs(",untracked", out);
	if (tables(output)) {
#define TABLE_COLUMN(key) fputs("," #key, out);
		TABLE_COLUMNS(TABLE_COLUMN)
#undef TABLE_COLUMN
	}
	fputs("\r\n", out);
}

/* Always quoted, quotes doubled (RFC 4180). */
static void csv_string(FILE *out, const char *text)
{
	fputc('"', out);
	for (; *text; text++) {
		if (*text == '"')
			fputc('"', out);
		fputc(*text, out);
	}
	fputc('"', out);
}

static void process(struct tdstat_output *output, const struct tdstat_interval *line)
{
	FILE *out = output->out;
	bool averages = output->mode != TDSTAT_OUTPUT_LIST || line->totals.enabled;

	if (tables(output))
		fputs("process,", out);
	fprintf(out, "%d", (int)line->pid);
	if (output->mode == TDSTAT_OUTPUT_LIST) {
		fputc(',', out);
		csv_string(out, line->comm);
		fputs(line->totals.enabled ? ",true" : ",false", out);
	}
#define COUNT(key) fprintf(out, ",%d", line->key);
	TDSTAT_LINE_COUNTS(COUNT)
#undef COUNT
#define FRACTION(key) averages ? fprintf(out, ",%d", line->key) : fputc(',', out);
	TDSTAT_LINE_FRACTIONS(FRACTION)
#undef FRACTION
#define AVERAGE(key) averages ? fprintf(out, ",%.6f", line->key) : fputc(',', out);
	TDSTAT_LINE_AVERAGES(AVERAGE)
#undef AVERAGE
	fputs(line->stopped == TDSTAT_STOPPED ? ",true" : line->stopped == TDSTAT_RUNNING ? ",false" : ",", out);
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		if (averages && line->has_kinds)
			fprintf(out, ",%.6f", line->idle_by[k]);
		else
			fputc(',', out);
	if (line->untracked >= 0)
		fprintf(out, ",%.6f", line->untracked);
	else
		fputc(',', out);
	if (tables(output)) {
#define EMPTY(key) fputc(',', out);
		TABLE_COLUMNS(EMPTY)
#undef EMPTY
	}
	fputs("\r\n", out);
}

static void optional(FILE *out, bool known, double value)
{
	if (known)
		fprintf(out, ",%.6f", value);
	else
		fputc(',', out);
}

static void address(FILE *out, bool known, uint64_t value)
{
	if (known)
		fprintf(out, ",0x%" PRIx64, value);
	else
		fputc(',', out);
}

/* The process columns a table row leaves empty or fills: counts and
 * fractions empty, the averages of its own by name. */
static void process_columns(FILE *out, double runnable, double idle, double window_s, bool shares)
{
#define EMPTY(key) fputc(',', out);
	TDSTAT_LINE_COUNTS(EMPTY)
	TDSTAT_LINE_FRACTIONS(EMPTY)
#undef EMPTY
#define AVERAGE(key)                                                   \
	if (!strcmp(#key, "window_s"))                                 \
		fprintf(out, ",%.6f", window_s);                       \
	else                                                           \
		optional(out, shares && (!strcmp(#key, "runnable") || !strcmp(#key, "idle")), \
			 !strcmp(#key, "runnable") ? runnable : idle);
	TDSTAT_LINE_AVERAGES(AVERAGE)
#undef AVERAGE
	fputc(',', out); /* stopped */
}

static void thread(struct tdstat_output *output, const struct tdstat_thread_row *row)
{
	FILE *out = output->out;
	bool own = row->tracked && row->shim_known, waits = row->wait_kind >= 0;

	fprintf(out, "thread,%d", (int)row->pid);
	process_columns(out, row->runnable, row->idle, row->window_s, own);
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		optional(out, own && row->has_kinds, row->idle_by[k]);
	optional(out, row->untracked >= 0, row->untracked);
	fprintf(out, ",%d,", (int)row->tid);
	csv_string(out, row->name);
	fprintf(out, ",%s,%s,", !row->tracked ? "untracked" : row->state == TDSTAT_STATE_BLOCKED ? "blocked" : "runnable",
		waits ? td_wait_kind_name((unsigned)row->wait_kind) : "");
	if (waits)
		csv_string(out, row->object_name);
	address(out, waits, row->object);
	fputc(',', out);
	if (waits)
		csv_string(out, row->site_name);
	address(out, waits, row->site);
	optional(out, row->has_kernel, row->cpu);
	optional(out, row->has_kernel, row->run_queue);
	fputs(",,,,,,,\r\n", out); /* kind, waiting, ended, owner_tid, owner_name, waiters, deadlock */
}

static void object(struct tdstat_output *output, const struct tdstat_object_row *row)
{
	FILE *out = output->out;

	fprintf(out, "object,%d", (int)row->pid);
	process_columns(out, 0, 0, row->window_s, false);
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		fputc(',', out);
	fputs(",,,,,,", out); /* untracked, tid, name, state, wait; then the object */
	if (!row->ended)
		csv_string(out, row->object_name);
	address(out, !row->ended, row->object);
	fputc(',', out);
	if (!row->ended)
		csv_string(out, row->site_name);
	address(out, !row->ended, row->site);
	fprintf(out, ",,,%s,%.6f,%s,,,,\r\n", td_wait_kind_name((unsigned)row->kind), row->waiting,
		row->ended ? "true" : "false");
}

/* The process's columns, all empty (a row of the wait-for graph has no
 * interval). */
static void no_process_columns(FILE *out)
{
#define EMPTY(key) fputc(',', out);
	TDSTAT_LINE_COUNTS(EMPTY)
	TDSTAT_LINE_FRACTIONS(EMPTY)
	TDSTAT_LINE_AVERAGES(EMPTY)
#undef EMPTY
	fputc(',', out); /* stopped */
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		fputc(',', out);
	fputc(',', out); /* untracked */
}

/* -w, the wait-for graph: record `sync`, one row per object waited on
 * now: state in `state`, the type in `wait` and `kind`, the number of
 * waiters in `waiting`, the waiters as "TID NAME" joined by "; ". */
static void sync_row(struct tdstat_output *output, const struct tdstat_sync_row *row)
{
	FILE *out = output->out;
	char state[32], waiters[2048];
	size_t used = 0;

	if (row->type == TD_SYNC_MUTEX)
		snprintf(state, sizeof(state), "%s", row->locked ? "locked" : "free");
	else if (row->type == TD_SYNC_RWLOCK && row->write_locked)
		snprintf(state, sizeof(state), "write-locked");
	else if (row->type == TD_SYNC_RWLOCK)
		snprintf(state, sizeof(state), "readers %d", (int)row->readers);
	else if (row->type == TD_SYNC_SEMA)
		snprintf(state, sizeof(state), "count %d", (int)row->count);
	else
		state[0] = '\0';
	waiters[0] = '\0';
	for (size_t i = 0; i < row->waiter_count && used < sizeof(waiters); i++) {
		int n = snprintf(waiters + used, sizeof(waiters) - used, "%s%d%s%s", i ? "; " : "",
				 (int)row->waiters[i].tid, row->waiters[i].name[0] ? " " : "", row->waiters[i].name);
		used += n > 0 ? (size_t)n : 0;
	}
	fprintf(out, "sync,%d", (int)row->pid);
	no_process_columns(out);
	fprintf(out, ",,,%s,%s,", state, tdstat_sync_type_name(row->type)); /* tid, name, state, wait */
	csv_string(out, row->object_name);
	fprintf(out, ",0x%" PRIx64 ",,,,,%s,%zu,,", row->object, tdstat_sync_type_name(row->type), row->waiter_count);
	if (row->owner > 0) {
		fprintf(out, "%d,", (int)row->owner);
		csv_string(out, row->owner_name);
	} else {
		fputc(',', out);
	}
	fputc(',', out);
	csv_string(out, waiters);
	fprintf(out, ",%s\r\n", row->in_deadlock ? "true" : "false");
}

/* -w: record `deadlock`, one row per cycle, its text in `deadlock`. */
static void deadlocks(struct tdstat_output *output, pid_t pid, const struct tdstat_deadlock *cycles, size_t count)
{
	FILE *out = output->out;
	char text[4096];

	for (size_t i = 0; i < count; i++) {
		tdstat_deadlock_text(&cycles[i], text, sizeof(text));
		fprintf(out, "deadlock,%d", (int)pid);
		no_process_columns(out);
#define EMPTY(key) fputc(',', out);
		TABLE_COLUMNS(EMPTY)
#undef EMPTY
		/* The comma before the last column (deadlock) is out: its value. */
		csv_string(out, text);
		fputs("\r\n", out);
	}
}

/* -s: a tracked object's row under sync_heading's columns. */
static void sync_stats_row(struct tdstat_output *output, const struct tdstat_sync_stats_row *row)
{
	FILE *out = output->out;

	fprintf(out, "%d,", (int)row->pid);
	csv_string(out, row->object_name);
	fprintf(out, ",0x%" PRIx64 ",%s,%" PRIu64, row->object, tdstat_sync_type_name(row->type), row->sleep_ns);
#define FIELD(type_, member, name)                                              \
	if (row->type == TD_SYNC_##type_)                                        \
		fprintf(out, ",%" PRIu64, row->stats.ss_un.member.name);        \
	else                                                                    \
		fputc(',', out);
	TDSTAT_SYNC_FIELDS(FIELD)
#undef FIELD
#define EMPTY(name) fputc(',', out);
	SYNC_TABLE_COLUMNS(EMPTY)
#undef EMPTY
	fputs("\r\n", out);
}

/* -s: the row of type "table": pid, the table's columns, nothing else. */
static void sync_table_row(struct tdstat_output *output, const struct tdstat_sync_table_row *row)
{
	FILE *out = output->out;

	fprintf(out, "%d,,,table,", (int)row->pid);
#define EMPTY(type_, member, name) fputc(',', out);
	TDSTAT_SYNC_FIELDS(EMPTY)
#undef EMPTY
	fprintf(out, ",%" PRIu32 ",%" PRIu64 ",%" PRIu64 "\r\n", row->table.st_capacity, row->table.st_used,
		row->table.st_overflow);
}

const struct tdstat_format tdstat_format_csv_row = {
	.name = "csv",
	.start = start,
	.process = process,
	.thread = thread,
	.object = object,
	.sync = sync_row,
	.sync_stats = sync_stats_row,
	.sync_table = sync_table_row,
	.deadlocks = deadlocks,
	.summary = process,
};
