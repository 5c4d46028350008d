/* SPDX-License-Identifier: MIT */
/*
 * The table of output formats, and the calls every producer writes
 * through (format.h).
 */
#include "format.h"

#include <string.h>

static const struct tdstat_format *const formats[] = {
	&tdstat_format_text_row,
	&tdstat_format_json_row,
	&tdstat_format_csv_row,
	&tdstat_format_openmetrics_row,
};

#define FORMAT_COUNT (sizeof(formats) / sizeof(formats[0]))

const struct tdstat_format *tdstat_format_find(const char *name)
{
	for (size_t i = 0; i < FORMAT_COUNT; i++)
		if (!strcmp(formats[i]->name, name))
			return formats[i];
	return NULL;
}

const char *tdstat_format_names(void)
{
	static char names[128];

	if (!names[0])
		for (size_t i = 0; i < FORMAT_COUNT; i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 i ? "|" : "", formats[i]->name);
	return names;
}

void tdstat_output_init(struct tdstat_output *output, const struct tdstat_format *format,
			FILE *out, enum tdstat_output_mode mode)
{
	memset(output, 0, sizeof(*output));
	output->format = format ? format : &tdstat_format_text_row;
	output->out = out;
	output->mode = mode;
}

void tdstat_output_start(struct tdstat_output *output)
{
	if (output->format->start)
		output->format->start(output);
}

void tdstat_output_begin(struct tdstat_output *output)
{
	if (output->format->begin)
		output->format->begin(output);
}

void tdstat_output_process(struct tdstat_output *output, const struct tdstat_interval *line)
{
	if (output->format->process)
		output->format->process(output, line);
}

void tdstat_output_thread(struct tdstat_output *output, const struct tdstat_thread_row *row)
{
	if (output->format->thread)
		output->format->thread(output, row);
}

void tdstat_output_object(struct tdstat_output *output, const struct tdstat_object_row *row)
{
	if (output->format->object)
		output->format->object(output, row);
}

void tdstat_output_sync(struct tdstat_output *output, const struct tdstat_sync_row *row)
{
	if (output->format->sync)
		output->format->sync(output, row);
}

void tdstat_output_sync_stats(struct tdstat_output *output, const struct tdstat_sync_stats_row *row)
{
	if (output->format->sync_stats)
		output->format->sync_stats(output, row);
}

void tdstat_output_sync_table(struct tdstat_output *output, const struct tdstat_sync_table_row *row)
{
	if (output->format->sync_table)
		output->format->sync_table(output, row);
}

void tdstat_output_deadlocks(struct tdstat_output *output, pid_t pid, const struct tdstat_deadlock *cycles,
			     size_t count)
{
	if (output->format->deadlocks)
		output->format->deadlocks(output, pid, cycles, count);
}

void tdstat_output_waitfor(struct tdstat_output *output, const struct tdstat_waitfor *graph)
{
	for (size_t i = 0; i < graph->count; i++)
		tdstat_output_sync(output, &graph->rows[i]);
	tdstat_output_deadlocks(output, graph->pid, graph->deadlocks, graph->deadlock_count);
}

void tdstat_output_end(struct tdstat_output *output)
{
	if (output->format->end)
		output->format->end(output);
	fflush(output->out);
}

void tdstat_output_summary(struct tdstat_output *output, const struct tdstat_interval *line)
{
	if (output->format->summary)
		output->format->summary(output, line);
}

void tdstat_output_close(struct tdstat_output *output)
{
	if (output->format->close)
		output->format->close(output);
	output->state = NULL;
}
