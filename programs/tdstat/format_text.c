/* SPDX-License-Identifier: MIT */
/*
 * --format text, the default: rows under a header (live mode, ps) and
 * the summary that `tdstat run` prints when its command ends.
 */
#include "format.h"

#include <time.h>

/* Below this average a kind, or the untracked figure, is left out of a
 * text row: it would only be noise. */
#define SHOWN_MIN 0.005

static void start(struct tdstat_output *output)
{
	if (output->mode == TDSTAT_OUTPUT_LIVE)
		fprintf(output->out, "%-8s %8s %8s %6s %9s %8s %8s %8s %9s  %s\n",
			"TIME", "PID", "NTHREADS", "RCONC", "RUNNABLE", "RUNNING",
			"LWPS", "IDLE", "WINDOW", "IDLE BY KIND");
	else if (output->mode == TDSTAT_OUTPUT_LIST)
		fprintf(output->out, "%8s %-16s %-9s %8s %9s %8s  %s\n",
			"PID", "COMMAND", "GATHERING", "NTHREADS", "RUNNABLE", "IDLE",
			"IDLE BY KIND");
}

/* "cond 2.00 mutex 0.98 sleep 1.00": the kinds with idle time, heaviest
 * first. */
static void idle_by_text(char *text, size_t size, const struct tdstat_interval *line)
{
	bool shown[TDSTAT_WAIT_KIND_COUNT] = { false };
	size_t used = 0;

	text[0] = '\0';
	if (!line->has_kinds) {
		snprintf(text, size, "-");
		return;
	}
	for (;;) {
		int heaviest = -1;

		for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
			if (!shown[k] && line->idle_by[k] >= SHOWN_MIN &&
			    (heaviest < 0 || line->idle_by[k] > line->idle_by[heaviest]))
				heaviest = k;
		if (heaviest < 0 || used >= size)
			break;
		shown[heaviest] = true;
		used += (size_t)snprintf(text + used, size - used, "%s%s %.2f", used ? " " : "",
					 td_wait_kind_name((unsigned)heaviest), line->idle_by[heaviest]);
	}
	if (!text[0])
		snprintf(text, size, "-");
}

static void live_row(FILE *out, const struct tdstat_interval *line)
{
	char clock[16] = "-", kinds[256], untracked[160] = "";
	time_t now = time(NULL);
	struct tm local;

	if (localtime_r(&now, &local))
		strftime(clock, sizeof(clock), "%H:%M:%S", &local);
	idle_by_text(kinds, sizeof(kinds), line);
	/* docs/CONTRACT.md §7: a wait the shim cannot see passes for work; the kernel
	 * tells, and the row says so. */
	if (line->untracked >= 0.05)
		snprintf(untracked, sizeof(untracked),
			 "  untracked %.2f (asleep in waits the shim cannot see: an inline syscall, "
			 "a read; tdstat(1))", line->untracked);
	/* A stopped target's threads keep the states they had when it
	 * stopped: the note says why the row does not move. */
	fprintf(out, "%-8s %8d %8d %6d %9.2f %8.2f %8.2f %8.2f %8.2fs  %s%s%s\n",
		clock, (int)line->pid, line->nthreads, line->r_concurrency,
		line->runnable, line->running, line->lwps, line->idle, line->window_s,
		kinds, untracked, line->stopped == TDSTAT_STOPPED ? "  stopped" : "");
}

/* ps: the averages only while gathering is on (off, there are none). */
static void list_row(FILE *out, const struct tdstat_interval *line)
{
	char kinds[256];

	if (!line->totals.enabled) {
		fprintf(out, "%8d %-16s %-9s %8d %9s %8s  %s\n", (int)line->pid,
			line->comm, "off", line->nthreads, "-", "-", "-");
		return;
	}
	idle_by_text(kinds, sizeof(kinds), line);
	fprintf(out, "%8d %-16s %-9s %8d %9.2f %8.2f  %s\n", (int)line->pid, line->comm,
		"on", line->nthreads, line->runnable, line->idle, kinds);
}

static void process(struct tdstat_output *output, const struct tdstat_interval *line)
{
	if (output->mode == TDSTAT_OUTPUT_LIST)
		list_row(output->out, line);
	else
		live_row(output->out, line);
}

static void summary_line(FILE *out, double value, const char *name,
			 int num, int den, const char *meaning)
{
	fprintf(out, "  %12.3f  %-15s %-34s (%d/%d)\n", value, name, meaning, num, den);
}

static void summary(struct tdstat_output *output, const struct tdstat_interval *line)
{
	FILE *out = output->out;

	fprintf(out, "\n Thread statistics of '%s' (pid %d), %.3f s%s:\n\n",
		output->command ? output->command : line->comm, (int)line->pid, line->window_s,
		line->totals.enabled ? ", the whole run" : ", up to when gathering was turned off");
	fprintf(out, "  %12d  %-15s %s\n", line->nthreads, "nthreads",
		"threads alive at exit");
	fprintf(out, "  %12d  %-15s %s\n", line->r_concurrency, "r_concurrency",
		"requested concurrency");
	summary_line(out, line->runnable, "nrunnable", line->nrunnable_num,
		     line->nrunnable_den, "runnable threads, on average");
	summary_line(out, line->running, "a_concurrency", line->a_concurrency_num,
		     line->a_concurrency_den, "running threads (on a CPU)");
	summary_line(out, line->lwps, "nlwps", line->nlwps_num,
		     line->nlwps_den, "LWPs (threads) in use");
	summary_line(out, line->idle, "nidle", line->nidle_num,
		     line->nidle_den, "idle LWPs (waiting threads)");
	for (int k = 0; line->has_kinds && k < TDSTAT_WAIT_KIND_COUNT; k++)
		if (line->idle_by[k] >= SHOWN_MIN)
			fprintf(out, "  %12.3f    idle in %-10s %s\n", line->idle_by[k],
				td_wait_kind_name((unsigned)k), "threads waiting, on average");
	fputc('\n', out);
}

const struct tdstat_format tdstat_format_text_row = {
	.name = "text",
	.start = start,
	.process = process,
	.summary = summary,
};
