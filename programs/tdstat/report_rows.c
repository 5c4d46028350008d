/* SPDX-License-Identifier: MIT */
/*
 * The rows of -t (a thread each) and -w (an object each), as text under a
 * header and as JSON lines.  Their columns are documented in tdstat(1).
 */
#include "tdstat.h"

#include <inttypes.h>

/* Below this share a kind is left out of a text row: noise. */
#define SHOWN_MIN 0.005

static void json_string(FILE *out, const char *text)
{
	fputc('"', out);
	for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(out, "\\%c", *c);
		else if (*c < 0x20)
			fprintf(out, "\\u%04x", *c);
		else
			fputc(*c, out);
	}
	fputc('"', out);
}

/* "cond 0.98 mutex 0.02": the kinds with idle time, heaviest first. */
static void kinds_text(const double *idle_by, char *text, size_t size)
{
	bool shown[TDSTAT_WAIT_KIND_COUNT] = { false };
	size_t used = 0;

	snprintf(text, size, "-");
	for (;;) {
		int heaviest = -1;

		for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
			if (!shown[k] && idle_by[k] >= SHOWN_MIN && (heaviest < 0 || idle_by[k] > idle_by[heaviest]))
				heaviest = k;
		if (heaviest < 0 || used >= size)
			break;
		shown[heaviest] = true;
		used += (size_t)snprintf(text + used, size - used, "%s%s %.2f", used ? " " : "",
					 td_wait_kind_name((unsigned)heaviest), idle_by[heaviest]);
	}
}

/* What a thread waits in now: "cond parked_condvar in in_cond". */
static void wait_now_text(struct tdstat_symbolizer *symbolizer, pid_t pid, const struct tdstat_thread_row *row,
			  char *text, size_t size)
{
	char object[160], caller[128];
	uint64_t function;

	if (!row->tracked) {
		snprintf(text, size, "(no record: not tracked)");
		return;
	}
	if (row->wait_kind < 0) {
		snprintf(text, size, "-");
		return;
	}
	tdstat_object_name(symbolizer, pid, row->wait_kind, row->object, object, sizeof(object));
	if (!tdstat_symbolize_caller(symbolizer, row->site, caller, sizeof(caller), &function))
		snprintf(caller, sizeof(caller), "0x%" PRIx64, row->site);
	snprintf(text, size, "%s %s in %s", td_wait_kind_name((unsigned)row->wait_kind), object, caller);
}

static void share_text(char *text, size_t size, bool known, double share)
{
	if (known)
		snprintf(text, size, "%.2f", share);
	else
		snprintf(text, size, "-");
}

void tdstat_report_thread_header(FILE *out)
{
	fprintf(out, "%8s %-16s %8s %6s %6s %6s %9s  %-30s %s\n", "TID", "NAME", "RUNNABLE", "CPU", "RUNQ", "IDLE",
		"UNTRACKED", "IDLE BY KIND", "WAITING NOW IN");
}

void tdstat_report_thread_row(FILE *out, struct tdstat_symbolizer *symbolizer, pid_t pid,
			      const struct tdstat_thread_row *row)
{
	char runnable[16], idle[16], cpu[16], run_queue[16], untracked[16], kinds[256], now[320];

	share_text(runnable, sizeof(runnable), row->tracked && row->shim_known, row->runnable);
	share_text(idle, sizeof(idle), row->tracked && row->shim_known, row->idle);
	share_text(cpu, sizeof(cpu), row->has_kernel, row->cpu);
	share_text(run_queue, sizeof(run_queue), row->has_kernel, row->run_queue);
	share_text(untracked, sizeof(untracked), row->untracked >= 0, row->untracked);
	if (row->tracked && row->shim_known)
		kinds_text(row->idle_by, kinds, sizeof(kinds));
	else
		snprintf(kinds, sizeof(kinds), "-");
	wait_now_text(symbolizer, pid, row, now, sizeof(now));
	fprintf(out, "%8d %-16s %8s %6s %6s %6s %9s  %-30s %s\n", (int)row->tid, row->name, runnable, cpu, run_queue,
		idle, untracked, kinds, now);
}

static const char *state_name(const struct tdstat_thread_row *row)
{
	if (!row->tracked)
		return "untracked";
	return row->state == TDSTAT_STATE_BLOCKED ? "blocked" : "runnable";
}

void tdstat_report_thread_json(FILE *out, struct tdstat_symbolizer *symbolizer, pid_t pid,
			       const struct tdstat_thread_row *row)
{
	fprintf(out, "{\"pid\":%d,\"tid\":%d,\"name\":", (int)pid, (int)row->tid);
	json_string(out, row->name);
	fprintf(out, ",\"state\":\"%s\"", state_name(row));
	if (row->wait_kind >= 0) {
		char object[160], caller[128];
		uint64_t function;

		tdstat_object_name(symbolizer, pid, row->wait_kind, row->object, object, sizeof(object));
		fprintf(out, ",\"wait\":\"%s\",\"object\":", td_wait_kind_name((unsigned)row->wait_kind));
		json_string(out, object);
		fprintf(out, ",\"object_address\":\"0x%" PRIx64 "\",\"site\":", row->object);
		json_string(out, tdstat_symbolize_caller(symbolizer, row->site, caller, sizeof(caller), &function)
					 ? caller
					 : "");
		fprintf(out, ",\"site_address\":\"0x%" PRIx64 "\"", row->site);
	}
	if (row->tracked && row->shim_known) {
		fprintf(out, ",\"runnable\":%.6f,\"idle\":%.6f,\"idle_by\":{", row->runnable, row->idle);
		for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
			fprintf(out, "%s\"%s\":%.6f", k ? "," : "", td_wait_kind_name((unsigned)k), row->idle_by[k]);
		fputc('}', out);
	}
	if (row->has_kernel)
		fprintf(out, ",\"cpu\":%.6f,\"run_queue\":%.6f", row->cpu, row->run_queue);
	if (row->untracked >= 0)
		fprintf(out, ",\"untracked\":%.6f", row->untracked);
	fprintf(out, ",\"window_s\":%.6f}\n", row->window_s);
}

void tdstat_report_object_header(FILE *out)
{
	fprintf(out, "%-8s %8s  %-40s %s\n", "KIND", "WAITING", "OBJECT", "CALLER");
}

static void object_text(struct tdstat_symbolizer *symbolizer, pid_t pid, const struct tdstat_object_row *row,
			char *text, size_t size)
{
	size_t used;

	if (!row->ended) {
		tdstat_object_name(symbolizer, pid, row->kind, row->object, text, size);
		return;
	}
	used = (size_t)snprintf(text, size, "(waits that ended");
	for (int i = 0; i < row->seen_count && used < size; i++) {
		char name[160];

		tdstat_object_name(symbolizer, pid, row->kind, row->seen[i], name, sizeof(name));
		used += (size_t)snprintf(text + used, size - used, "%s%s", i ? ", " : ": ", name);
	}
	if (used < size)
		snprintf(text + used, size - used, "%s)", row->seen_more ? ", ..." : "");
}

void tdstat_report_object_row(FILE *out, struct tdstat_symbolizer *symbolizer, pid_t pid,
			      const struct tdstat_object_row *row)
{
	char object[512], caller[160];

	if (row->waiting < SHOWN_MIN)
		return;
	object_text(symbolizer, pid, row, object, sizeof(object));
	if (row->ended)
		snprintf(caller, sizeof(caller), "-");
	else if (row->site_name[0])
		snprintf(caller, sizeof(caller), "%s", row->site_name);
	else
		snprintf(caller, sizeof(caller), "0x%" PRIx64, row->site);
	fprintf(out, "%-8s %8.2f  %-40s %s\n", td_wait_kind_name((unsigned)row->kind), row->waiting, object, caller);
}

void tdstat_report_object_json(FILE *out, struct tdstat_symbolizer *symbolizer, pid_t pid,
			       const struct tdstat_object_row *row, double window_s)
{
	char object[512];

	object_text(symbolizer, pid, row, object, sizeof(object));
	fprintf(out, "{\"pid\":%d,\"kind\":\"%s\",\"object\":", (int)pid, td_wait_kind_name((unsigned)row->kind));
	json_string(out, object);
	if (!row->ended)
		fprintf(out, ",\"object_address\":\"0x%" PRIx64 "\",\"site\":", row->object);
	if (!row->ended) {
		json_string(out, row->site_name);
		fprintf(out, ",\"site_address\":\"0x%" PRIx64 "\"", row->site);
	}
	if (row->ended) {
		fputs(",\"ended\":true,\"seen\":[", out);
		for (int i = 0; i < row->seen_count; i++) {
			char name[160];

			tdstat_object_name(symbolizer, pid, row->kind, row->seen[i], name, sizeof(name));
			if (i)
				fputc(',', out);
			json_string(out, name);
		}
		fputc(']', out);
	}
	fprintf(out, ",\"waiting\":%.6f,\"window_s\":%.6f}\n", row->waiting, window_s);
}
