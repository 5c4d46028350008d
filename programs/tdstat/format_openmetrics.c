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
#include <stddef.h>
#include <string.h>
#include <time.h>

#include <tdstat/clock.h>

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
	/* -t and -w: gauges of the last interval, after the counters. */
	struct tdstat_thread_row *threads;
	size_t thread_count, thread_capacity;
	struct tdstat_object_row *objects;
	size_t object_count, object_capacity;
	/* -w, the wait-for graph: its objects (waiters copied out) and the
	 * number of cycles per process. */
	struct sync_sample {
		pid_t pid;
		uint32_t type;
		uint64_t object;
		char object_name[TDSTAT_NAME_SIZE];
		pid_t owner;
		size_t waiters;
	} *syncs;
	size_t sync_count, sync_capacity;
	struct deadlock_sample {
		pid_t pid;
		size_t count;
	} *deadlocks;
	size_t deadlock_count, deadlock_capacity;
	/* -s and serve: the tracked objects' statistics. */
	struct tdstat_sync_stats_row *sync_stats;
	size_t sync_stats_count, sync_stats_capacity;
	/* ... and their tables' use and overflow. */
	struct tdstat_sync_table_row *sync_tables;
	size_t sync_table_count, sync_table_capacity;
};

/* Appends one element to a growing array; false when out of memory. */
static bool append(void **array, size_t *count, size_t *capacity, size_t size, const void *element)
{
	if (*count == *capacity) {
		size_t grown = *capacity ? *capacity * 2 : 16;
		void *more = realloc(*array, grown * size);

		if (!more)
			return false;
		*array = more;
		*capacity = grown;
	}
	memcpy((char *)*array + *count * size, element, size);
	(*count)++;
	return true;
}

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
	moment->thread_count = 0;
	moment->object_count = 0;
	moment->sync_count = 0;
	moment->sync_stats_count = 0;
	moment->sync_table_count = 0;
	moment->deadlock_count = 0;
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

static void thread(struct tdstat_output *output, const struct tdstat_thread_row *row)
{
	struct moment *moment = output->state;

	if (moment && !append((void **)&moment->threads, &moment->thread_count, &moment->thread_capacity,
			      sizeof(*row), row))
		output->failed = true;
}

static void object(struct tdstat_output *output, const struct tdstat_object_row *row)
{
	struct moment *moment = output->state;

	if (moment && !append((void **)&moment->objects, &moment->object_count, &moment->object_capacity,
			      sizeof(*row), row))
		output->failed = true;
}

static void sync_row(struct tdstat_output *output, const struct tdstat_sync_row *row)
{
	struct moment *moment = output->state;
	struct sync_sample sample = {
		.pid = row->pid, .type = row->type, .object = row->object, .owner = row->owner,
		.waiters = row->waiter_count,
	};

	memcpy(sample.object_name, row->object_name, sizeof(sample.object_name));
	if (moment && !append((void **)&moment->syncs, &moment->sync_count, &moment->sync_capacity, sizeof(sample),
			      &sample))
		output->failed = true;
}

static void deadlocks(struct tdstat_output *output, pid_t pid, const struct tdstat_deadlock *cycles, size_t count)
{
	struct moment *moment = output->state;
	struct deadlock_sample sample = { .pid = pid, .count = count };

	(void)cycles;
	if (moment && !append((void **)&moment->deadlocks, &moment->deadlock_count, &moment->deadlock_capacity,
			      sizeof(sample), &sample))
		output->failed = true;
}

static void sync_stats_row(struct tdstat_output *output, const struct tdstat_sync_stats_row *row)
{
	struct moment *moment = output->state;

	if (moment && !append((void **)&moment->sync_stats, &moment->sync_stats_count, &moment->sync_stats_capacity,
			      sizeof(*row), row))
		output->failed = true;
}

static void sync_table_row(struct tdstat_output *output, const struct tdstat_sync_table_row *row)
{
	struct moment *moment = output->state;

	if (moment && !append((void **)&moment->sync_tables, &moment->sync_table_count, &moment->sync_table_capacity,
			      sizeof(*row), row))
		output->failed = true;
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

/* include/tdstat/clock.h's, as everywhere. */
static uint64_t clock_ns(clockid_t clock)
{
	return tdstat_clock_ns(clock);
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

/*
 * -t and -w: gauges over the line's interval (averages, 0 to 1 for a
 * thread's shares), labelled by thread or by object.  They are not
 * counters: a record's integrals belong to its slot, not to one thread
 * (td_ta_thr_stats_iter), and an object's time is only known per
 * interval (tdstat(1), Objects).
 */
enum thread_value { THREAD_RUNNABLE, THREAD_IDLE, THREAD_CPU, THREAD_RUN_QUEUE, THREAD_UNTRACKED };

static const struct thread_family {
	const char *name;
	enum thread_value value;
	const char *help;
} thread_families[] = {
	{ "tdstat_thread_runnable", THREAD_RUNNABLE, "Share of the last interval the thread was runnable (-t)." },
	{ "tdstat_thread_idle", THREAD_IDLE, "Share of the last interval the thread waited, by wait kind (-t)." },
	{ "tdstat_thread_cpu", THREAD_CPU, "Share of the last interval the thread was on a CPU, from schedstat (-t)." },
	{ "tdstat_thread_run_queue", THREAD_RUN_QUEUE,
	  "Share of the last interval the thread waited for a CPU, from schedstat (-t)." },
	{ "tdstat_thread_untracked", THREAD_UNTRACKED,
	  "Share of the last interval the thread was asleep in a wait the shim does not see (-t)." },
};

static void thread_labels(FILE *out, const char *name, const struct tdstat_thread_row *row, const char *kind)
{
	fprintf(out, "%s{pid=\"%d\",tid=\"%d\",name=\"", name, (int)row->pid, (int)row->tid);
	label_value(out, row->name);
	if (kind)
		fprintf(out, "\",kind=\"%s", kind);
	fputs("\"}", out);
}

static void thread_samples(struct tdstat_output *output, const struct thread_family *family,
			   const struct tdstat_thread_row *row)
{
	FILE *out = output->out;
	bool own = row->tracked && row->shim_known;

	switch (family->value) {
	case THREAD_RUNNABLE:
		if (!own)
			return;
		thread_labels(out, family->name, row, NULL);
		fprintf(out, " %.6f\n", row->runnable);
		return;
	case THREAD_IDLE:
		/* Kinds not known (a newer shim's): the idle share alone, as
		 * the process's counter without its kinds. */
		if (own && !row->has_kinds) {
			thread_labels(out, family->name, row, NULL);
			fprintf(out, " %.6f\n", row->idle);
			return;
		}
		for (unsigned k = 0; own && k < TDSTAT_WAIT_KIND_COUNT; k++) {
			thread_labels(out, family->name, row, td_wait_kind_name(k));
			fprintf(out, " %.6f\n", row->idle_by[k]);
		}
		return;
	case THREAD_CPU:
	case THREAD_RUN_QUEUE:
		if (!row->has_kernel)
			return;
		thread_labels(out, family->name, row, NULL);
		fprintf(out, " %.6f\n", family->value == THREAD_CPU ? row->cpu : row->run_queue);
		return;
	case THREAD_UNTRACKED:
		if (row->untracked < 0)
			return;
		thread_labels(out, family->name, row, NULL);
		fprintf(out, " %.6f\n", row->untracked);
		return;
	}
}

static void gauge_metadata(FILE *out, const char *name, const char *help)
{
	fprintf(out, "# TYPE %s gauge\n# HELP %s %s\n", name, name, help);
}

static void table_samples(struct tdstat_output *output, const struct moment *moment)
{
	FILE *out = output->out;

	for (size_t f = 0; moment->thread_count && f < sizeof(thread_families) / sizeof(thread_families[0]); f++) {
		gauge_metadata(out, thread_families[f].name, thread_families[f].help);
		for (size_t i = 0; i < moment->thread_count; i++)
			thread_samples(output, &thread_families[f], &moment->threads[i]);
	}
	if (moment->sync_count) {
		gauge_metadata(out, "tdstat_sync_waiters",
			       "Threads blocked on the synchronization object now, with its owner's tid (0: none) (-w).");
		for (size_t i = 0; i < moment->sync_count; i++) {
			const struct sync_sample *sample = &moment->syncs[i];

			fprintf(out, "tdstat_sync_waiters{pid=\"%d\",type=\"%s\",object=\"", (int)sample->pid,
				tdstat_sync_type_name(sample->type));
			label_value(out, sample->object_name);
			fprintf(out, "\",object_address=\"0x%" PRIx64 "\",owner_tid=\"%d\"} %zu\n", sample->object,
				(int)sample->owner, sample->waiters);
		}
	}
	if (moment->deadlock_count) {
		gauge_metadata(out, "tdstat_deadlocks",
			       "Cycles in the wait-for graph now: threads waiting for each other's locks (-w).");
		for (size_t i = 0; i < moment->deadlock_count; i++)
			fprintf(out, "tdstat_deadlocks{pid=\"%d\"} %zu\n", (int)moment->deadlocks[i].pid,
				moment->deadlocks[i].count);
	}
	if (!moment->object_count)
		return;
	gauge_metadata(out, "tdstat_object_waiting",
		       "Threads waiting on the object from the function, on average over the last interval (-w).");
	for (size_t i = 0; i < moment->object_count; i++) {
		const struct tdstat_object_row *row = &moment->objects[i];

		fprintf(out, "tdstat_object_waiting{pid=\"%d\",kind=\"%s\",object=\"", (int)row->pid,
			td_wait_kind_name((unsigned)row->kind));
		label_value(out, row->ended ? "(waits that ended)" : row->object_name);
		fputs("\",site=\"", out);
		label_value(out, row->site_name);
		/* A row is one object and one calling function (objects.c's
		 * key); their names need not be unique (static functions of
		 * one name in two files, symbols of one name in two modules),
		 * their addresses are, and a family never repeats a label set. */
		fprintf(out, "\",object_address=\"0x%" PRIx64 "\",function_address=\"0x%" PRIx64 "\"} %.6f\n",
			row->ended ? 0 : row->object, row->ended ? 0 : row->function, row->waiting);
	}
}

/*
 * Per-object statistics (-s; serve's heaviest objects): a family per
 * Solaris field, tdstat_sync_FIELD, labelled pid, type, object (the name)
 * and address.  Counts and times (in seconds) are counters, which only
 * grow while tracking is on; sema_max_count and sema_min_count gauges.
 */
enum sync_metric { SYNC_COUNT, SYNC_SECONDS, SYNC_GAUGE };

static enum sync_metric sync_metric_of(const char *field)
{
	if (strstr(field, "_time"))
		return SYNC_SECONDS;
	if (strstr(field, "_max_count") || strstr(field, "_min_count"))
		return SYNC_GAUGE;
	return SYNC_COUNT;
}

static void sync_family(struct tdstat_output *output, const struct moment *moment, uint32_t type, const char *field,
			size_t offset)
{
	FILE *out = output->out;
	enum sync_metric metric = sync_metric_of(field);
	const char *unit = metric == SYNC_SECONDS ? "_seconds" : "";
	bool any = false;

	for (size_t i = 0; i < moment->sync_stats_count && !any; i++)
		any = moment->sync_stats[i].type == type;
	if (!any)
		return;
	if (metric == SYNC_GAUGE)
		fprintf(out, "# TYPE tdstat_sync_%s gauge\n", field);
	else if (output->prometheus_text)
		fprintf(out, "# TYPE tdstat_sync_%s%s_total counter\n", field, unit);
	else
		fprintf(out, "# TYPE tdstat_sync_%s%s counter\n", field, unit);
	if (metric == SYNC_SECONDS && !output->prometheus_text)
		fprintf(out, "# UNIT tdstat_sync_%s%s seconds\n", field, unit);
	fprintf(out, "# HELP tdstat_sync_%s%s%s Solaris' %s of the object (per-object tracking, tdstat -s).\n", field,
		unit, metric != SYNC_GAUGE && output->prometheus_text ? "_total" : "", field);
	for (size_t i = 0; i < moment->sync_stats_count; i++) {
		const struct tdstat_sync_stats_row *row = &moment->sync_stats[i];
		uint64_t value;

		if (row->type != type)
			continue;
		memcpy(&value, (const char *)&row->stats.ss_un + offset, sizeof(value));
		fprintf(out, "tdstat_sync_%s%s%s{pid=\"%d\",type=\"%s\",object=\"", field, unit,
			metric == SYNC_GAUGE ? "" : "_total", (int)row->pid, tdstat_sync_type_name(row->type));
		label_value(out, row->object_name);
		fprintf(out, "\",address=\"0x%" PRIx64 "\"}", row->object);
		if (metric == SYNC_SECONDS)
			seconds(out, value);
		else
			fprintf(out, " %" PRIu64 "\n", value);
	}
}

static void sync_samples(struct tdstat_output *output, const struct moment *moment)
{
#define FAMILY(type_, member, name)                                                                \
	sync_family(output, moment, TD_SYNC_##type_, #name,                                         \
		    offsetof(td_syncstats_t, ss_un.member.name) - offsetof(td_syncstats_t, ss_un));
	TDSTAT_SYNC_FIELDS(FAMILY)
#undef FAMILY
}

/* The tracking tables: capacity and use (gauges), overflow (a counter of
 * lookups that found no room, which only grows while the
 * process lives). */
static void sync_table_samples(struct tdstat_output *output, const struct moment *moment)
{
	static const struct {
		const char *name, *help;
		bool counter;
	} table_families[] = {
		{ "capacity", "Objects the per-object tracking table can hold.", false },
		{ "used", "Objects the per-object tracking table holds (tracked objects).", false },
		{ "overflow", "Lookups of objects the tracking table had no room for (objects not tracked).", true },
	};
	FILE *out = output->out;

	for (size_t f = 0; f < sizeof(table_families) / sizeof(table_families[0]); f++) {
		const char *total = table_families[f].counter ? "_total" : "";

		if (table_families[f].counter)
			fprintf(out, "# TYPE tdstat_sync_table_%s%s counter\n", table_families[f].name,
				output->prometheus_text ? "_total" : "");
		else
			fprintf(out, "# TYPE tdstat_sync_table_%s gauge\n", table_families[f].name);
		fprintf(out, "# HELP tdstat_sync_table_%s%s %s\n", table_families[f].name,
			table_families[f].counter && output->prometheus_text ? "_total" : "", table_families[f].help);
		for (size_t i = 0; i < moment->sync_table_count; i++) {
			const td_sync_table_t *table = &moment->sync_tables[i].table;
			uint64_t value = f == 0 ? table->st_capacity : f == 1 ? table->st_used : table->st_overflow;

			fprintf(out, "tdstat_sync_table_%s%s{pid=\"%d\"} %" PRIu64 "\n", table_families[f].name, total,
				(int)moment->sync_tables[i].pid, value);
		}
	}
}

static void end(struct tdstat_output *output)
{
	const struct moment *moment = output->state;
	uint64_t realtime_ns = clock_ns(CLOCK_REALTIME);
	uint64_t monotonic_ns = clock_ns(CLOCK_MONOTONIC);
	FILE *out = output->out;

	for (size_t f = 0; moment && !output->sync && f < FAMILY_COUNT; f++) {
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
	if (moment)
		table_samples(output, moment);
	if (moment && moment->sync_stats_count)
		sync_samples(output, moment);
	if (moment && moment->sync_table_count)
		sync_table_samples(output, moment);
	if (!output->prometheus_text)
		fputs("# EOF\n", out);
}

static void close_output(struct tdstat_output *output)
{
	struct moment *moment = output->state;

	if (moment) {
		free(moment->lines);
		free(moment->threads);
		free(moment->objects);
		free(moment->syncs);
		free(moment->sync_stats);
		free(moment->sync_tables);
		free(moment->deadlocks);
	}
	free(moment);
}

const struct tdstat_format tdstat_format_openmetrics_row = {
	.name = "openmetrics",
	.begin = begin,
	.process = process,
	.thread = thread,
	.object = object,
	.sync = sync_row,
	.sync_stats = sync_stats_row,
	.sync_table = sync_table_row,
	.deadlocks = deadlocks,
	.end = end,
	.summary = process,
	.close = close_output,
};
