/* SPDX-License-Identifier: MIT */
/*
 * --plot IMAGE (plot.c): the lines of a run or of live mode, drawn over
 * time into a PNG or an SVG.
 */
#ifndef TDSTAT_PLOT_H
#define TDSTAT_PLOT_H

#include "tdstat.h"

struct tdstat_plot;

/* True when path ends in .png or .svg (any case). */
bool tdstat_plot_path_valid(const char *path);
/* A plot to write to path (valid); NULL when out of memory. */
struct tdstat_plot *tdstat_plot_new(const char *path);
void tdstat_plot_free(struct tdstat_plot *plot);
/* Adds the interval a line covers; lines come in time order. */
void tdstat_plot_add(struct tdstat_plot *plot, const struct tdstat_interval *line);
size_t tdstat_plot_samples(const struct tdstat_plot *plot);
/* Draws and writes the image; 0, or -1 after saying why. */
int tdstat_plot_write(const struct tdstat_plot *plot, const char *title);

#endif /* TDSTAT_PLOT_H */
