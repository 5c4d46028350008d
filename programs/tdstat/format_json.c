/* SPDX-License-Identifier: MIT */
/*
 * --format json (and --json): one object per line, keys as docs/CONTRACT.md §6
 * names them.  ps adds "comm" and "enabled", and leaves out the averages
 * of a process whose gathering is off.
 */
#include "format.h"

/* comm is printable UTF-8 already (tdstat_kernel_comm): only the two
 * characters JSON reserves need escaping. */
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
	if (line->has_kinds) {
		fputs(",\"idle_by\":{", out);
		for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
			fprintf(out, "%s\"%s\":%.6f", k ? "," : "", td_wait_kind_name((unsigned)k),
				line->idle_by[k]);
		fputc('}', out);
	}
	if (line->untracked >= 0)
		fprintf(out, ",\"untracked\":%.6f", line->untracked);
	fputs("}\n", out);
}

const struct tdstat_format tdstat_format_json_row = {
	.name = "json",
	.process = process,
	.summary = process,
};
