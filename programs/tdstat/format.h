/* SPDX-License-Identifier: MIT */
/*
 * The output formats of the command: one table (format.c), one file per
 * format (format_text.c, format_json.c, format_csv.c,
 * format_openmetrics.c).  A new format is one file and one row.
 *
 * Every producer (live mode, run, ps, serve) writes through the same
 * calls, in this order:
 *
 *   tdstat_output_start                  once: a header, a CSV heading
 *   tdstat_output_begin                  a moment: one tick, one scrape
 *     tdstat_output_process              a process line (any number)
 *     tdstat_output_thread               -t: a thread row of the line before
 *     tdstat_output_object               -w: an object row of the line before
 *     tdstat_output_sync                 -w: an object waited on now, owner, waiters
 *     tdstat_output_deadlocks            -w: the cycles of the wait-for graph (once,
 *                                        after the sync rows, also when there are none)
 *     tdstat_output_sync_stats           -s: a tracked object's row (no line)
 *     tdstat_output_sync_table           -s: the tracking table's use and overflow,
 *                                        after the process's rows
 *   tdstat_output_end                    the moment is complete
 *   tdstat_output_summary                run: the whole run, at its end
 *
 * A moment is what OpenMetrics calls an exposition: that format keeps
 * the lines of a moment and writes them family by family at its end
 * (the samples of a family must be contiguous), then "# EOF".  The other
 * formats write each line at once.
 *
 * Thread rows (-t) and object rows (-w) are declared here and defined
 * where they are computed; a format that has no callback for a kind of
 * row leaves it out of its output.
 */
#ifndef TDSTAT_FORMAT_H
#define TDSTAT_FORMAT_H

#include "tdstat.h"

/* The fields of a process line after "pid", in the order JSON and CSV
 * give them: the counts now, the fractions of td_ta_stats_t, the
 * averages; the keys are the names docs/CONTRACT.md §6 gives them.  X(key) names a
 * member of struct tdstat_interval. */
#define TDSTAT_LINE_COUNTS(X) X(nthreads) X(r_concurrency)
#define TDSTAT_LINE_FRACTIONS(X)                                             \
	X(nrunnable_num) X(nrunnable_den) X(a_concurrency_num) X(a_concurrency_den) \
	X(nlwps_num) X(nlwps_den) X(nidle_num) X(nidle_den)
#define TDSTAT_LINE_AVERAGES(X) X(runnable) X(running) X(lwps) X(idle) X(window_s)

/* What a line is for: a format may lay out each differently. */
enum tdstat_output_mode {
	TDSTAT_OUTPUT_LIVE,   /* tdstat PID: one line per interval */
	TDSTAT_OUTPUT_RUN,    /* tdstat run: the summary at the end */
	TDSTAT_OUTPUT_LIST,   /* tdstat ps: one line per process */
	TDSTAT_OUTPUT_SCRAPE, /* tdstat serve: one moment per GET /metrics */
};

struct tdstat_thread_row; /* -t */
struct tdstat_object_row; /* -w */
struct tdstat_sync_row;   /* -w, the wait-for graph */
struct tdstat_deadlock;
struct tdstat_sync_stats_row; /* -s */
struct tdstat_sync_table_row; /* -s */
struct tdstat_output;

struct tdstat_format {
	const char *name; /* as --format takes it */
	/* Each may be NULL: nothing to do at that point. */
	void (*start)(struct tdstat_output *output);
	void (*begin)(struct tdstat_output *output);
	void (*process)(struct tdstat_output *output, const struct tdstat_interval *line);
	void (*thread)(struct tdstat_output *output, const struct tdstat_thread_row *row);
	void (*object)(struct tdstat_output *output, const struct tdstat_object_row *row);
	void (*sync)(struct tdstat_output *output, const struct tdstat_sync_row *row);
	void (*sync_stats)(struct tdstat_output *output, const struct tdstat_sync_stats_row *row);
	void (*sync_table)(struct tdstat_output *output, const struct tdstat_sync_table_row *row);
	void (*deadlocks)(struct tdstat_output *output, pid_t pid, const struct tdstat_deadlock *cycles,
			  size_t count);
	void (*end)(struct tdstat_output *output);
	void (*summary)(struct tdstat_output *output, const struct tdstat_interval *line);
	/* Releases what the format kept in output->state. */
	void (*close)(struct tdstat_output *output);
};

/* One output: where it goes and what the format keeps between calls. */
struct tdstat_output {
	const struct tdstat_format *format;
	FILE *out;
	enum tdstat_output_mode mode;
	const char *command;   /* run: CMD as the user typed it */
	/* openmetrics: write the Prometheus text format 0.0.4 instead (no
	 * _created, no # UNIT, no # EOF), for scrapers that ask for it. */
	bool prometheus_text;
	bool threads;          /* live mode with -t: thread rows follow lines */
	bool objects;          /* live mode with -w: object rows follow lines */
	bool sync;             /* -s: sync rows alone, no process line */
	bool failed;           /* out of memory: the output is incomplete */
	void *state;           /* the format's own */
};

/* The format named `name`, or NULL. */
const struct tdstat_format *tdstat_format_find(const char *name);
/* "text|json|csv|openmetrics": the names, for usage and errors. */
const char *tdstat_format_names(void);

void tdstat_output_init(struct tdstat_output *output, const struct tdstat_format *format,
			FILE *out, enum tdstat_output_mode mode);
void tdstat_output_start(struct tdstat_output *output);
void tdstat_output_begin(struct tdstat_output *output);
void tdstat_output_process(struct tdstat_output *output, const struct tdstat_interval *line);
void tdstat_output_thread(struct tdstat_output *output, const struct tdstat_thread_row *row);
void tdstat_output_object(struct tdstat_output *output, const struct tdstat_object_row *row);
void tdstat_output_sync(struct tdstat_output *output, const struct tdstat_sync_row *row);
void tdstat_output_sync_stats(struct tdstat_output *output, const struct tdstat_sync_stats_row *row);
void tdstat_output_sync_table(struct tdstat_output *output, const struct tdstat_sync_table_row *row);
void tdstat_output_deadlocks(struct tdstat_output *output, pid_t pid, const struct tdstat_deadlock *cycles,
			     size_t count);
/* The graph's rows, then its deadlocks. */
void tdstat_output_waitfor(struct tdstat_output *output, const struct tdstat_waitfor *graph);
void tdstat_output_end(struct tdstat_output *output);
void tdstat_output_summary(struct tdstat_output *output, const struct tdstat_interval *line);
void tdstat_output_close(struct tdstat_output *output);

/* The rows of the table, one per format file. */
extern const struct tdstat_format tdstat_format_text_row;
extern const struct tdstat_format tdstat_format_json_row;
extern const struct tdstat_format tdstat_format_csv_row;
extern const struct tdstat_format tdstat_format_openmetrics_row;

#endif /* TDSTAT_FORMAT_H */
