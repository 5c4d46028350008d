/* SPDX-License-Identifier: MIT */
/*
 * The fleet (fleet.c): every process here with the shim loaded that we
 * may read, found from /proc/PID/maps and confirmed through libc_db,
 * with an agent kept for each between collections.  Not thread-safe.
 */
#ifndef TDSTAT_FLEET_H
#define TDSTAT_FLEET_H

#include "tdstat.h"

struct tdstat_fleet;

typedef void (*tdstat_fleet_visit)(const struct tdstat_interval *line, void *context);

/* NULL when out of memory. */
struct tdstat_fleet *tdstat_fleet_new(void);
void tdstat_fleet_free(struct tdstat_fleet *fleet);
/* Finds the processes again: new ones join, gone ones leave, a reused
 * PID or an exec'd image gets a new agent. */
void tdstat_fleet_discover(struct tdstat_fleet *fleet);
size_t tdstat_fleet_size(const struct tdstat_fleet *fleet);
/* Snapshots every member, in PID order, and gives visit its line: the
 * interval since the member's previous collection when since_previous
 * (and it has one in the same window), else the window so far.  A
 * member that fails is left out; one that is gone leaves the fleet. */
void tdstat_fleet_collect(struct tdstat_fleet *fleet, bool since_previous,
			  tdstat_fleet_visit visit, void *context);

#endif /* TDSTAT_FLEET_H */
