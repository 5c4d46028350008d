/* SPDX-License-Identifier: MIT */
/*
 * `tdstat ps [-i SECS] [--format F]`: every process here with the shim
 * loaded that we may read (fleet.c), one line each: pid, command,
 * gathering on or off, threads, and while gathering is on its runnable
 * and idle averages over a short interval (two snapshots SECS apart,
 * 0.2 s by default: what it does now, not since its window began).
 */
#include "fleet.h"
#include "format.h"

#include <errno.h>
#include <time.h>

static void ignore_line(const struct tdstat_interval *line, void *context)
{
	(void)line;
	(void)context;
}

static void print_line(const struct tdstat_interval *line, void *context)
{
	tdstat_output_process(context, line);
}

int tdstat_ps(const struct tdstat_ps_options *options)
{
	struct tdstat_fleet *fleet = tdstat_fleet_new();
	struct tdstat_output output;
	struct timespec pause;
	bool failed;

	if (!fleet) {
		tdstat_error("out of memory");
		return TDSTAT_EXIT_FAILURE;
	}
	tdstat_fleet_discover(fleet);
	tdstat_fleet_collect(fleet, false, ignore_line, NULL);
	pause.tv_sec = (time_t)options->interval_s;
	pause.tv_nsec = (long)((options->interval_s - (double)pause.tv_sec) * 1e9);
	if (tdstat_fleet_size(fleet) > 0)
		while (nanosleep(&pause, &pause) < 0 && errno == EINTR)
			;
	tdstat_output_init(&output, options->format, stdout, TDSTAT_OUTPUT_LIST);
	tdstat_output_start(&output);
	tdstat_output_begin(&output);
	tdstat_fleet_collect(fleet, true, print_line, &output);
	tdstat_output_end(&output);
	tdstat_output_close(&output);
	failed = output.failed;
	tdstat_fleet_free(fleet);
	if (failed) {
		tdstat_error("out of memory while writing the list");
		return TDSTAT_EXIT_FAILURE;
	}
	return TDSTAT_EXIT_OK;
}
