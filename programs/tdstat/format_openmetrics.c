/* SPDX-License-Identifier: MIT */
/*
 * --format openmetrics: OpenMetrics 1.0 text, one exposition per moment
 * (a tick of live mode, the end of `run`, a scrape of `serve`), ended by
 * "# EOF".  With output->prometheus_text, the Prometheus text format
 * 0.0.4 instead, for scrapers that do not accept OpenMetrics.
 *
 * The counters are the integrals of the window in seconds (docs/CONTRACT.md §2):
 * they only grow within a window, a reset or enable starts them again
 * from zero (which rate() takes as a counter reset), and _created is the
 * window's start.  rate() of a counter over an interval is therefore the
 * live view's average over that interval.  Every sample has the labels
 * pid and comm; the idle counter has kind too, one sample per wait kind.
 *
 * The samples of a family must be contiguous, so the lines of a moment
 * are kept until its end and written family by family.
 */
#include "format.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum family_type { GAUGE, COUNTER };

/* What a family reads from a line's snapshot (td_ta_stats_ns_t). */
enum family_value {
	VALUE_THREADS,
	VALUE_R_CONCURRENCY,
	VALUE_GATHERING,
	VALUE_LWPS,
	VALUE_RUNNABLE,
	VALUE_RUNNING,
	VALUE_IDLE,
	VALUE_CPU,
};

static const struct family {
	const char *name;
	enum family_type type;
	enum family_value value;
	const char *help;
} families[] = {
	{ "tdstat_threads", GAUGE, VALUE_THREADS,
	  "Threads alive in the process now (td_ta_stats_t nthreads)." },
	{ "tdstat_r_concurrency", GAUGE, VALUE_R_CONCURRENCY,
	  "Concurrency last requested with pthread_setconcurrency." },
	{ "tdstat_gathering", GAUGE, VALUE_GATHERING,
	  "1 while the process gathers statistics; 0 after tdstat disable (the counters then stand still)." },
	{ "tdstat_lwps_seconds", COUNTER, VALUE_LWPS,
	  "Thread-seconds of tracked threads in the window: rate() is the average number of LWPs in use." },
	{ "tdstat_runnable_seconds", COUNTER, VALUE_RUNNABLE,
	  "Thread-seconds runnable (on a CPU or ready to run) in the window: rate() is nrunnable." },
	{ "tdstat_running_seconds", COUNTER, VALUE_RUNNING,
	  "Thread-seconds on a CPU in the window: rate() is a_concurrency." },
	{ "tdstat_idle_seconds", COUNTER, VALUE_IDLE,
	  "Thread-seconds blocked in the window, by wait kind: rate() summed over kind is nidle." },
	{ "tdstat_cpu_seconds", COUNTER, VALUE_CPU,
	  "CPU time the process used in the window." },
};

#define FAMILY_COUNT (sizeof(families) / sizeof(families[0]))

struct moment {
	struct tdstat_interval *lines;
	size_t count, capacity;
};

static void begin(struct tdstat_output *output)
{
	struct moment *moment = output->state;

	if (!moment) {
		moment = calloc(1, sizeof(*moment));
		output->state = moment;
		if (!moment) {
			output->failed = true;
			return;
		}
	}
	moment->count = 0;
}

static void process(struct tdstat_output *output, const struct tdstat_interval *line)
{
	struct moment *moment = output->state;

	if (!moment)
		return;
	if (moment->count == moment->capacity) {
		size_t capacity = moment->capacity ? moment->capacity * 2 : 16;
		struct tdstat_interval *lines = realloc(moment->lines, capacity * sizeof(*lines));

		if (!lines) {
			output->failed = true;
			return;
		}
		moment->lines = lines;
		moment->capacity = capacity;
	}
	moment->lines[moment->count++] = *line;
}

/* A label value: backslash, double quote and newline escaped.  comm has
 * no newline (tdstat_kernel_comm), but a label value must never end a
 * sample early whatever it holds. */
static void label_value(FILE *out, const char *text)
{
	for (; *text; text++) {
		if (*text == '\n') {
			fputs("\\n", out);
			continue;
		}
		if (*text == '"' || *text == '\\')
			fputc('\\', out);
		fputc(*text, out);
	}
}

/* name{pid="..",comm="..",kind=".."}: kind NULL leaves it out. */
static void sample_name(FILE *out, const char *name, const char *suffix,
			const struct tdstat_interval *line, const char *kind)
{
	fprintf(out, "%s%s{pid=\"%d\",comm=\"", name, suffix, (int)line->pid);
	label_value(out, line->comm);
	if (kind)
		fprintf(out, "\",kind=\"%s", kind);
	fputs("\"}", out);
}

/* Nanoseconds as exact decimal seconds: a counter never loses a
 * nanosecond to rounding, so it never appears to go down. */
static void seconds(FILE *out, uint64_t ns)
{
	fprintf(out, " %" PRIu64 ".%09" PRIu64 "\n", ns / 1000000000u, ns % 1000000000u);
}

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec now;

	clock_gettime(clock, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* The window's start (CLOCK_MONOTONIC in the target) on the wall clock,
 * in milliseconds: the two clocks are read microseconds apart, and a
 * created time must not wobble from one scrape to the next. */
static double created_s(const struct tdstat_interval *line, uint64_t realtime_ns,
			uint64_t monotonic_ns)
{
	uint64_t start = line->totals.window_start_ns;
	uint64_t age = monotonic_ns > start ? monotonic_ns - start : 0;

	return (double)((realtime_ns - age) / 1000000u) / 1e3;
}

static uint64_t counter_ns(enum family_value value, const td_ta_stats_ns_t *totals)
{
	switch (value) {
	case VALUE_LWPS:
		return totals->lwps_ns;
	case VALUE_RUNNABLE:
		return totals->runnable_ns;
	case VALUE_RUNNING:
		return totals->running_ns;
	case VALUE_CPU:
		return totals->cpu_ns;
	default:
		return totals->idle_ns;
	}
}

static int gauge(enum family_value value, const struct tdstat_interval *line)
{
	switch (value) {
	case VALUE_THREADS:
		return line->nthreads;
	case VALUE_R_CONCURRENCY:
		return line->r_concurrency;
	default:
		return line->totals.enabled ? 1 : 0;
	}
}

/* A process that never gathered has no window: no counters. */
static bool has_window(const struct tdstat_interval *line)
{
	return line->totals.window_start_ns != 0;
}

/* One counter: _total, then (OpenMetrics) _created, per label set. */
static void counter(struct tdstat_output *output, const char *name,
		    const struct tdstat_interval *line, const char *kind, uint64_t ns,
		    double created)
{
	FILE *out = output->out;

	sample_name(out, name, "_total", line, kind);
	seconds(out, ns);
	if (output->prometheus_text)
		return;
	sample_name(out, name, "_created", line, kind);
	fprintf(out, " %.3f\n", created);
}

static void counter_samples(struct tdstat_output *output, const struct family *family,
			    const struct tdstat_interval *line, double created)
{
	const td_ta_stats_ns_t *totals = &line->totals;

	if (family->value != VALUE_IDLE || totals->kinds < TDSTAT_WAIT_KIND_COUNT) {
		counter(output, family->name, line, NULL, counter_ns(family->value, totals), created);
		return;
	}
	for (unsigned k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		counter(output, family->name, line, td_wait_kind_name(k),
			totals->idle_by_kind_ns[k], created);
}

static void metadata(struct tdstat_output *output, const struct family *family)
{
	FILE *out = output->out;
	const char *type = family->type == COUNTER ? "counter" : "gauge";

	/* 0.0.4 names a counter's family by its sample (with _total) and
	 * has no units. */
	if (output->prometheus_text) {
		const char *suffix = family->type == COUNTER ? "_total" : "";

		fprintf(out, "# HELP %s%s %s\n", family->name, suffix, family->help);
		fprintf(out, "# TYPE %s%s %s\n", family->name, suffix, type);
		return;
	}
	fprintf(out, "# TYPE %s %s\n", family->name, type);
	if (family->type == COUNTER)
		fprintf(out, "# UNIT %s seconds\n", family->name);
	fprintf(out, "# HELP %s %s\n", family->name, family->help);
}

static void end(struct tdstat_output *output)
{
	const struct moment *moment = output->state;
	uint64_t realtime_ns = clock_ns(CLOCK_REALTIME);
	uint64_t monotonic_ns = clock_ns(CLOCK_MONOTONIC);
	FILE *out = output->out;

	for (size_t f = 0; moment && f < FAMILY_COUNT; f++) {
		const struct family *family = &families[f];

		metadata(output, family);
		for (size_t i = 0; i < moment->count; i++) {
			const struct tdstat_interval *line = &moment->lines[i];

			if (family->type == COUNTER) {
				if (has_window(line))
					counter_samples(output, family, line,
							created_s(line, realtime_ns, monotonic_ns));
				continue;
			}
			sample_name(out, family->name, "", line, NULL);
			fprintf(out, " %d\n", gauge(family->value, line));
		}
	}
	if (!output->prometheus_text)
		fputs("# EOF\n", out);
}

static void close_output(struct tdstat_output *output)
{
	struct moment *moment = output->state;

	if (moment)
		free(moment->lines);
	free(moment);
}

const struct tdstat_format tdstat_format_openmetrics_row = {
	.name = "openmetrics",
	.begin = begin,
	.process = process,
	.end = end,
	.summary = process,
	.close = close_output,
};
