/* SPDX-License-Identifier: MIT */
/*
 * --format csv: RFC 4180, a heading row, then one row per line.  The
 * columns are the JSON keys, idle_by flattened to idle_KIND; a value that
 * is not known (stopped in `run`, untracked before a second sample) is an
 * empty field.  ps adds comm and enabled after pid, and leaves the
 * averages of a process whose gathering is off empty.
 */
#include "format.h"

static void start(struct tdstat_output *output)
{
	FILE *out = output->out;

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
	fputs(",untracked\r\n", out);
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
	fputs("\r\n", out);
}

const struct tdstat_format tdstat_format_csv_row = {
	.name = "csv",
	.start = start,
	.process = process,
	.summary = process,
};
