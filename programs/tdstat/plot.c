/* SPDX-License-Identifier: MIT */
/*
 * --plot IMAGE: a run drawn over time with cairo (docs/DESIGN.md says
 * why cairo): for each interval, the threads running on a CPU, the
 * runnable ones waiting for a CPU, and the idle ones by wait kind,
 * stacked (together they are the LWPs in use), with the thread count as
 * a line; titled with the command and its averages over the whole plot.
 * PNG or SVG by the file name's extension.
 */
#include "plot.h"

#include <cairo.h>
#include <cairo-svg.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WIDTH 1000.0
#define HEIGHT 520.0
#define MARGIN_LEFT 60.0
#define MARGIN_RIGHT 150.0
#define MARGIN_TOP 50.0
#define MARGIN_BOTTOM 50.0

struct sample {
	double start_s, end_s; /* since the first sample's start */
	int nthreads;
	double running, waiting; /* waiting: runnable, not on a CPU */
	double idle_by[TDSTAT_WAIT_KIND_COUNT];
	double idle;             /* when the kinds are not known */
	bool has_kinds;
};

struct tdstat_plot {
	const char *path;
	bool svg;
	struct sample *samples;
	size_t count, capacity;
	uint64_t origin_ns; /* the first sample's start, target's CLOCK_MONOTONIC */
	bool failed;
	/* Integrals over every sample, for the title's averages. */
	double span_s, runnable_s, running_s, idle_s;
};

/* One colour per layer: running, waiting, then the kinds in their order. */
static const double running_colour[3] = { 0.13, 0.55, 0.13 };
static const double waiting_colour[3] = { 0.60, 0.85, 0.45 };
static const double kind_colours[TDSTAT_WAIT_KIND_COUNT][3] = {
	{ 0.84, 0.15, 0.16 }, /* mutex */
	{ 1.00, 0.50, 0.05 }, /* rwlock */
	{ 0.12, 0.47, 0.71 }, /* cond */
	{ 0.58, 0.40, 0.74 }, /* sem */
	{ 0.55, 0.34, 0.29 }, /* barrier */
	{ 0.89, 0.47, 0.76 }, /* join */
	{ 0.74, 0.74, 0.13 }, /* futex */
	{ 0.62, 0.85, 0.90 }, /* sleep */
	{ 0.09, 0.75, 0.81 }, /* io */
	{ 0.50, 0.50, 0.50 }, /* child */
	{ 0.35, 0.35, 0.60 }, /* signal */
};
static const double idle_colour[3] = { 0.55, 0.65, 0.80 };

bool tdstat_plot_path_valid(const char *path)
{
	const char *dot = strrchr(path, '.');

	return dot && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".svg"));
}

struct tdstat_plot *tdstat_plot_new(const char *path)
{
	struct tdstat_plot *plot = calloc(1, sizeof(*plot));

	if (!plot)
		return NULL;
	plot->path = path;
	plot->svg = !strcasecmp(strrchr(path, '.'), ".svg");
	return plot;
}

void tdstat_plot_free(struct tdstat_plot *plot)
{
	if (plot)
		free(plot->samples);
	free(plot);
}

void tdstat_plot_add(struct tdstat_plot *plot, const struct tdstat_interval *line)
{
	uint64_t end_ns = line->totals.window_start_ns + line->totals.window_ns;
	uint64_t span_ns = (uint64_t)(line->window_s * 1e9 + 0.5);
	struct sample *sample;

	if (line->window_s <= 0)
		return;
	if (plot->count == plot->capacity) {
		size_t capacity = plot->capacity ? plot->capacity * 2 : 256;
		struct sample *samples = realloc(plot->samples, capacity * sizeof(*samples));

		if (!samples) {
			plot->failed = true;
			return;
		}
		plot->samples = samples;
		plot->capacity = capacity;
	}
	if (plot->count == 0)
		plot->origin_ns = end_ns > span_ns ? end_ns - span_ns : 0;
	sample = &plot->samples[plot->count++];
	memset(sample, 0, sizeof(*sample));
	sample->end_s = ((double)end_ns - (double)plot->origin_ns) / 1e9;
	sample->start_s = sample->end_s - line->window_s;
	sample->nthreads = line->nthreads;
	sample->running = line->running;
	sample->waiting = line->runnable - line->running;
	sample->idle = line->idle;
	sample->has_kinds = line->has_kinds;
	memcpy(sample->idle_by, line->idle_by, sizeof(sample->idle_by));
	plot->span_s += line->window_s;
	plot->runnable_s += line->runnable * line->window_s;
	plot->running_s += line->running * line->window_s;
	plot->idle_s += line->idle * line->window_s;
}

size_t tdstat_plot_samples(const struct tdstat_plot *plot)
{
	return plot->count;
}

/* A round step (1, 2 or 5 times a power of ten) giving about `ticks`
 * ticks over `range`. */
static double tick_step(double range, int ticks)
{
	double raw = range / ticks, power = pow(10.0, floor(log10(raw)));

	if (raw / power < 1.5)
		return power;
	if (raw / power < 3.5)
		return 2 * power;
	if (raw / power < 7.5)
		return 5 * power;
	return 10 * power;
}

struct frame {
	double x0, y0, width, height; /* the plot area; y0 is its bottom */
	double time_s, threads;       /* what the axes span */
};

static double x_of(const struct frame *frame, double seconds)
{
	return frame->x0 + frame->width * seconds / frame->time_s;
}

static double y_of(const struct frame *frame, double threads)
{
	return frame->y0 - frame->height * threads / frame->threads;
}

static void set_colour(cairo_t *cairo, const double colour[3])
{
	cairo_set_source_rgb(cairo, colour[0], colour[1], colour[2]);
}

static void text_at(cairo_t *cairo, double x, double y, const char *text, double align)
{
	cairo_text_extents_t extents;

	cairo_text_extents(cairo, text, &extents);
	cairo_move_to(cairo, x - extents.width * align, y);
	cairo_show_text(cairo, text);
}

static void draw_axes(cairo_t *cairo, const struct frame *frame)
{
	double step_x = tick_step(frame->time_s, 10), step_y = tick_step(frame->threads, 6);
	char label[32];

	cairo_set_font_size(cairo, 12);
	cairo_set_line_width(cairo, 1);
	for (double t = 0; t <= frame->time_s + 1e-9; t += step_x) {
		cairo_set_source_rgb(cairo, 0.85, 0.85, 0.85);
		cairo_move_to(cairo, x_of(frame, t), frame->y0);
		cairo_line_to(cairo, x_of(frame, t), frame->y0 - frame->height);
		cairo_stroke(cairo);
		cairo_set_source_rgb(cairo, 0, 0, 0);
		snprintf(label, sizeof(label), "%g", t);
		text_at(cairo, x_of(frame, t), frame->y0 + 16, label, 0.5);
	}
	for (double n = 0; n <= frame->threads + 1e-9; n += step_y) {
		cairo_set_source_rgb(cairo, 0.85, 0.85, 0.85);
		cairo_move_to(cairo, frame->x0, y_of(frame, n));
		cairo_line_to(cairo, frame->x0 + frame->width, y_of(frame, n));
		cairo_stroke(cairo);
		cairo_set_source_rgb(cairo, 0, 0, 0);
		snprintf(label, sizeof(label), "%g", n);
		text_at(cairo, frame->x0 - 6, y_of(frame, n) + 4, label, 1.0);
	}
	cairo_set_source_rgb(cairo, 0, 0, 0);
	cairo_rectangle(cairo, frame->x0, frame->y0 - frame->height, frame->width, frame->height);
	cairo_stroke(cairo);
	text_at(cairo, frame->x0 + frame->width / 2, frame->y0 + 36, "seconds", 0.5);
	cairo_save(cairo);
	cairo_move_to(cairo, frame->x0 - 40, frame->y0 - frame->height / 2);
	cairo_rotate(cairo, -M_PI / 2);
	text_at(cairo, 0, 0, "threads", 0.5);
	cairo_restore(cairo);
}

/* The stack of one sample: running, waiting, the idle kinds. */
static void draw_sample(cairo_t *cairo, const struct frame *frame, const struct sample *sample)
{
	double x = x_of(frame, sample->start_s), width = x_of(frame, sample->end_s) - x;
	double level = 0;

	/* A hair wider than the interval: neighbours meet without a seam. */
	width += 0.5;
#define LAYER(value, colour)                                                          \
	do {                                                                          \
		double height_ = (value) > 0 ? (value) : 0;                           \
		set_colour(cairo, colour);                                            \
		cairo_rectangle(cairo, x, y_of(frame, level + height_), width,        \
				y_of(frame, level) - y_of(frame, level + height_));   \
		cairo_fill(cairo);                                                    \
		level += height_;                                                     \
	} while (0)
	LAYER(sample->running, running_colour);
	LAYER(sample->waiting, waiting_colour);
	if (!sample->has_kinds)
		LAYER(sample->idle, idle_colour);
	for (int k = 0; sample->has_kinds && k < TDSTAT_WAIT_KIND_COUNT; k++)
		LAYER(sample->idle_by[k], kind_colours[k]);
#undef LAYER
}

static void draw_thread_line(cairo_t *cairo, const struct frame *frame, const struct tdstat_plot *plot)
{
	cairo_set_source_rgb(cairo, 0, 0, 0);
	cairo_set_line_width(cairo, 2);
	for (size_t i = 0; i < plot->count; i++) {
		const struct sample *sample = &plot->samples[i];

		if (i == 0)
			cairo_move_to(cairo, x_of(frame, sample->start_s), y_of(frame, sample->nthreads));
		else
			cairo_line_to(cairo, x_of(frame, sample->start_s), y_of(frame, sample->nthreads));
		cairo_line_to(cairo, x_of(frame, sample->end_s), y_of(frame, sample->nthreads));
	}
	cairo_stroke(cairo);
}

static void legend_entry(cairo_t *cairo, double x, double *y, const double colour[3], const char *name)
{
	set_colour(cairo, colour);
	cairo_rectangle(cairo, x, *y - 10, 14, 12);
	cairo_fill(cairo);
	cairo_set_source_rgb(cairo, 0, 0, 0);
	text_at(cairo, x + 20, *y, name, 0);
	*y += 18;
}

/* The layers that hold anything, top of the stack first. */
static void draw_legend(cairo_t *cairo, const struct frame *frame, const struct tdstat_plot *plot)
{
	double x = frame->x0 + frame->width + 14, y = frame->y0 - frame->height + 12;
	bool used[TDSTAT_WAIT_KIND_COUNT] = { false }, untyped = false;
	char label[48];

	cairo_set_font_size(cairo, 12);
	cairo_set_source_rgb(cairo, 0, 0, 0);
	cairo_set_line_width(cairo, 2);
	cairo_move_to(cairo, x, y - 4);
	cairo_line_to(cairo, x + 14, y - 4);
	cairo_stroke(cairo);
	text_at(cairo, x + 20, y, "threads", 0);
	y += 22;
	for (size_t i = 0; i < plot->count; i++) {
		untyped |= !plot->samples[i].has_kinds;
		for (int k = 0; plot->samples[i].has_kinds && k < TDSTAT_WAIT_KIND_COUNT; k++)
			used[k] |= plot->samples[i].idle_by[k] >= 0.005;
	}
	for (int k = TDSTAT_WAIT_KIND_COUNT - 1; k >= 0; k--) {
		if (!used[k])
			continue;
		snprintf(label, sizeof(label), "idle: %s", td_wait_kind_name((unsigned)k));
		legend_entry(cairo, x, &y, kind_colours[k], label);
	}
	if (untyped)
		legend_entry(cairo, x, &y, idle_colour, "idle");
	legend_entry(cairo, x, &y, waiting_colour, "runnable, no CPU");
	legend_entry(cairo, x, &y, running_colour, "running");
}

static void draw(cairo_t *cairo, const struct tdstat_plot *plot, const char *title)
{
	struct frame frame = {
		.x0 = MARGIN_LEFT, .y0 = HEIGHT - MARGIN_BOTTOM,
		.width = WIDTH - MARGIN_LEFT - MARGIN_RIGHT, .height = HEIGHT - MARGIN_TOP - MARGIN_BOTTOM,
		.time_s = 0, .threads = 1,
	};
	char subtitle[256];

	/* The scale is the thread count's, not the stacks': a stack above
	 * it is a short interval's edge noise, and is clipped. */
	for (size_t i = 0; i < plot->count; i++) {
		frame.time_s = fmax(frame.time_s, plot->samples[i].end_s);
		frame.threads = fmax(frame.threads, (double)plot->samples[i].nthreads);
	}
	frame.time_s = frame.time_s > 0 ? frame.time_s : 1;
	frame.threads = ceil(frame.threads * 1.1);
	cairo_set_source_rgb(cairo, 1, 1, 1);
	cairo_paint(cairo);
	cairo_select_font_face(cairo, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
	draw_axes(cairo, &frame);
	cairo_save(cairo);
	cairo_rectangle(cairo, frame.x0, frame.y0 - frame.height, frame.width, frame.height);
	cairo_clip(cairo);
	for (size_t i = 0; i < plot->count; i++)
		draw_sample(cairo, &frame, &plot->samples[i]);
	draw_thread_line(cairo, &frame, plot);
	cairo_restore(cairo);
	draw_legend(cairo, &frame, plot);
	cairo_set_source_rgb(cairo, 0, 0, 0);
	cairo_select_font_face(cairo, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
	cairo_set_font_size(cairo, 15);
	text_at(cairo, MARGIN_LEFT, 22, title, 0);
	snprintf(subtitle, sizeof(subtitle),
		 "over %.2f s: runnable %.2f, running %.2f, idle %.2f threads on average",
		 plot->span_s, plot->span_s > 0 ? plot->runnable_s / plot->span_s : 0,
		 plot->span_s > 0 ? plot->running_s / plot->span_s : 0,
		 plot->span_s > 0 ? plot->idle_s / plot->span_s : 0);
	cairo_select_font_face(cairo, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cairo, 12);
	text_at(cairo, MARGIN_LEFT, 40, subtitle, 0);
}

int tdstat_plot_write(const struct tdstat_plot *plot, const char *title)
{
	cairo_surface_t *surface;
	cairo_status_t status;
	cairo_t *cairo;

	if (plot->failed) {
		tdstat_error("out of memory: no plot written to %s", plot->path);
		return -1;
	}
	surface = plot->svg ? cairo_svg_surface_create(plot->path, WIDTH, HEIGHT)
			    : cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)WIDTH, (int)HEIGHT);
	cairo = cairo_create(surface);
	draw(cairo, plot, title);
	cairo_destroy(cairo);
	cairo_surface_flush(surface);
	if (plot->svg) {
		cairo_surface_finish(surface);
		status = cairo_surface_status(surface);
	} else {
		status = cairo_surface_status(surface);
		if (status == CAIRO_STATUS_SUCCESS)
			status = cairo_surface_write_to_png(surface, plot->path);
	}
	cairo_surface_destroy(surface);
	if (status != CAIRO_STATUS_SUCCESS) {
		tdstat_error("cannot write the plot %s: %s", plot->path,
			     status == CAIRO_STATUS_WRITE_ERROR ? strerror(errno ? errno : EIO)
								: cairo_status_to_string(status));
		return -1;
	}
	return 0;
}
