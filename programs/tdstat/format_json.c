/* SPDX-License-Identifier: MIT */
/*
 * --format json (and --json): one object per line, keys as docs/CONTRACT.md §6
 * names them; -t and -w rows are objects of their own after their line
 * (tdstat(1)).  ps adds "comm" and "enabled", and leaves out the averages
 * of a process whose gathering is off.
 */
#include "format.h"

#include <inttypes.h>

#include <tdstat/thread_db_sync.h>

/* Names are printable UTF-8 already (tdstat_kernel_comm,
 * tdstat_printable): only the two characters JSON reserves need
 * escaping. */
static void json_string(FILE *out, const char *text)
{
	fputc('"', out);
	for (; *text; text++) {
		if (*text == '"' || *text == '\\')
			fputc('\\', out);
		fputc(*text, out);
	}
	fputc('"', out);
}

static void idle_by(FILE *out, const double *values)
{
	fputs(",\"idle_by\":{", out);
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		fprintf(out, "%s\"%s\":%.6f", k ? "," : "", td_wait_kind_name((unsigned)k), values[k]);
	fputc('}', out);
}

static void process(struct tdstat_output *output, const struct tdstat_interval *line)
{
	FILE *out = output->out;

	fprintf(out, "{\"pid\":%d", (int)line->pid);
	if (output->mode == TDSTAT_OUTPUT_LIST) {
		fputs(",\"comm\":", out);
		json_string(out, line->comm);
		fprintf(out, ",\"enabled\":%s", line->totals.enabled ? "true" : "false");
	}
#define INTEGER(key) fprintf(out, ",\"" #key "\":%d", line->key);
	TDSTAT_LINE_COUNTS(INTEGER)
	if (output->mode == TDSTAT_OUTPUT_LIST && !line->totals.enabled) {
		fputs("}\n", out);
		return;
	}
	TDSTAT_LINE_FRACTIONS(INTEGER)
#undef INTEGER
#define AVERAGE(key) fprintf(out, ",\"" #key "\":%.6f", line->key);
	TDSTAT_LINE_AVERAGES(AVERAGE)
#undef AVERAGE
	if (line->stopped != TDSTAT_STOPPED_UNKNOWN)
		fprintf(out, ",\"stopped\":%s", line->stopped == TDSTAT_STOPPED ? "true" : "false");
	/* idle_by: every kind of docs/CONTRACT.md §2, averages that sum to idle. */
	if (line->has_kinds)
		idle_by(out, line->idle_by);
	if (line->untracked >= 0)
		fprintf(out, ",\"untracked\":%.6f", line->untracked);
	/* Over the same interval as untracked: what it may owe to the
	 * hypervisor (tdstat(1)). */
	if (line->steal >= 0)
		fprintf(out, ",\"steal\":%.6f", line->steal);
	fputs("}\n", out);
}

/* -t: one object per thread, after its line (tdstat(1), JSON). */
static void thread(struct tdstat_output *output, const struct tdstat_thread_row *row)
{
	FILE *out = output->out;

	fprintf(out, "{\"pid\":%d,\"tid\":%d,\"name\":", (int)row->pid, (int)row->tid);
	json_string(out, row->name);
	fprintf(out, ",\"state\":\"%s\"",
		!row->tracked ? "untracked" : row->state == TDSTAT_STATE_BLOCKED ? "blocked" : "runnable");
	if (row->wait_kind >= 0) {
		fprintf(out, ",\"wait\":\"%s\",\"object\":", td_wait_kind_name((unsigned)row->wait_kind));
		json_string(out, row->object_name);
		fprintf(out, ",\"object_address\":\"0x%" PRIx64 "\",\"site\":", row->object);
		json_string(out, row->site_name);
		fprintf(out, ",\"site_address\":\"0x%" PRIx64 "\"", row->site);
	}
	if (row->tracked && row->shim_known) {
		fprintf(out, ",\"runnable\":%.6f,\"idle\":%.6f", row->runnable, row->idle);
		/* As the line's: only when the kinds are known. */
		if (row->has_kinds)
			idle_by(out, row->idle_by);
	}
	if (row->has_kernel)
		fprintf(out, ",\"cpu\":%.6f,\"run_queue\":%.6f,\"kernel_window_s\":%.6f", row->cpu, row->run_queue,
			row->kernel_window_s);
	if (row->untracked >= 0)
		fprintf(out, ",\"untracked\":%.6f", row->untracked);
	fprintf(out, ",\"window_s\":%.6f}\n", row->window_s);
}

/* -w: one object per row of the objects table. */
static void object(struct tdstat_output *output, const struct tdstat_object_row *row)
{
	FILE *out = output->out;

	fprintf(out, "{\"pid\":%d,\"kind\":\"%s\"", (int)row->pid, td_wait_kind_name((unsigned)row->kind));
	if (row->ended) {
		fputs(",\"ended\":true,\"seen\":[", out);
		for (int i = 0; i < row->seen_count; i++) {
			if (i)
				fputc(',', out);
			json_string(out, row->seen_names[i]);
		}
		fputc(']', out);
	} else {
		fputs(",\"object\":", out);
		json_string(out, row->object_name);
		fprintf(out, ",\"object_address\":\"0x%" PRIx64 "\",\"site\":", row->object);
		json_string(out, row->site_name);
		fprintf(out, ",\"site_address\":\"0x%" PRIx64 "\"", row->site);
	}
	fprintf(out, ",\"waiting\":%.6f,\"window_s\":%.6f}\n", row->waiting, row->window_s);
}

static void json_thread(FILE *out, pid_t tid, const char *name)
{
	fprintf(out, "{\"tid\":%d,\"name\":", (int)tid);
	json_string(out, name);
	fputc('}', out);
}

/* -w, the wait-for graph: one object per object waited on now. */
static void sync_row(struct tdstat_output *output, const struct tdstat_sync_row *row)
{
	FILE *out = output->out;

	fprintf(out, "{\"pid\":%d,\"sync\":\"%s\",\"object\":", (int)row->pid, tdstat_sync_type_name(row->type));
	json_string(out, row->object_name);
	fprintf(out, ",\"object_address\":\"0x%" PRIx64 "\"", row->object);
	if (row->type == TD_SYNC_MUTEX)
		fprintf(out, ",\"locked\":%s", row->locked ? "true" : "false");
	if (row->type == TD_SYNC_RWLOCK)
		fprintf(out, ",\"write_locked\":%s,\"readers\":%d", row->write_locked ? "true" : "false",
			(int)row->readers);
	if (row->type == TD_SYNC_SEMA)
		fprintf(out, ",\"count\":%d", (int)row->count);
	fputs(",\"owner\":", out);
	if (row->owner > 0)
		json_thread(out, row->owner, row->owner_name);
	else
		fputs("null", out);
	fputs(",\"waiters\":[", out);
	for (size_t i = 0; i < row->waiter_count; i++) {
		if (i)
			fputc(',', out);
		json_thread(out, row->waiters[i].tid, row->waiters[i].name);
	}
	fprintf(out, "],\"deadlocked\":%s}\n", row->in_deadlock ? "true" : "false");
}

/* -w: one object per moment with key "deadlocks": every cycle, each a
 * list of steps (a thread and the object it waits for, held by the next
 * step's thread); [] when there is none. */
static void deadlocks(struct tdstat_output *output, pid_t pid, const struct tdstat_deadlock *cycles, size_t count)
{
	FILE *out = output->out;

	fprintf(out, "{\"pid\":%d,\"deadlocks\":[", (int)pid);
	for (size_t i = 0; i < count; i++) {
		fputs(i ? ",[" : "[", out);
		for (size_t s = 0; s < cycles[i].length; s++) {
			const struct tdstat_deadlock_step *step = &cycles[i].steps[s];

			fprintf(out, "%s{\"tid\":%d,\"name\":", s ? "," : "", (int)step->tid);
			json_string(out, step->name);
			fprintf(out, ",\"waits_for\":{\"sync\":\"%s\",\"object\":", tdstat_sync_type_name(step->type));
			json_string(out, step->object_name);
			fprintf(out, ",\"object_address\":\"0x%" PRIx64 "\"}}", step->object);
		}
		fputc(']', out);
	}
	fputs("]}\n", out);
}

/* -s: {"pid","object","address","type","sleep_ns", the type's fields by
 * their Solaris names}. */
static void sync_stats_row(struct tdstat_output *output, const struct tdstat_sync_stats_row *row)
{
	FILE *out = output->out;

	fprintf(out, "{\"pid\":%d,\"object\":", (int)row->pid);
	json_string(out, row->object_name);
	fprintf(out, ",\"address\":\"0x%" PRIx64 "\",\"type\":\"%s\",\"sleep_ns\":%" PRIu64, row->object,
		tdstat_sync_type_name(row->type), row->sleep_ns);
#define FIELD(type_, member, name)                                                            \
	if (row->type == TD_SYNC_##type_)                                                      \
		fprintf(out, ",\"" #name "\":%" PRIu64, row->stats.ss_un.member.name);
	TDSTAT_SYNC_FIELDS(FIELD)
#undef FIELD
	fputs("}\n", out);
}

/* -s: {"pid","sync_table":{"capacity","probes","used","overflow",
 * "tracking"}}, after the object lines (a line with no "object"). */
static void sync_table_row(struct tdstat_output *output, const struct tdstat_sync_table_row *row)
{
	const td_sync_table_t *table = &row->table;

	fprintf(output->out,
		"{\"pid\":%d,\"sync_table\":{\"capacity\":%" PRIu32 ",\"probes\":%" PRIu32 ",\"used\":%" PRIu64
		",\"overflow\":%" PRIu64 ",\"tracking\":%s}}\n",
		(int)row->pid, table->st_capacity, table->st_probes, table->st_used, table->st_overflow,
		table->st_tracking ? "true" : "false");
}

const struct tdstat_format tdstat_format_json_row = {
	.name = "json",
	.process = process,
	.thread = thread,
	.object = object,
	.sync = sync_row,
	.sync_stats = sync_stats_row,
	.sync_table = sync_table_row,
	.deadlocks = deadlocks,
	.summary = process,
};
