/* SPDX-License-Identifier: MIT */
/*
 * The fleet (fleet.c): every process here with the shim loaded that we
 * may read, found from /proc/PID/maps and confirmed through libc_db,
 * with an agent kept for each between collections.  Not thread-safe but
 * for a survey's run step (below).
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
 * PID or a member whose agent failed gets a new agent. */
void tdstat_fleet_discover(struct tdstat_fleet *fleet);

/* The same in three steps, for a caller that guards the fleet with a
 * lock: begin (under it: copies what the fleet knows; NULL when out of
 * memory), run (without it: walks /proc, attaches new processes), apply
 * (under it: merges, and frees the survey; a NULL survey is ignored). */
struct tdstat_fleet_survey;
struct tdstat_fleet_survey *tdstat_fleet_survey_begin(const struct tdstat_fleet *fleet);
void tdstat_fleet_survey_run(struct tdstat_fleet_survey *survey);
void tdstat_fleet_survey_apply(struct tdstat_fleet *fleet, struct tdstat_fleet_survey *survey);
size_t tdstat_fleet_size(const struct tdstat_fleet *fleet);
/* Snapshots every member, in PID order, and gives visit its line: the
 * interval since the member's previous collection when since_previous
 * (and it has one in the same window), else the window so far.  A
 * member that fails is left out; one that is gone leaves the fleet. */
void tdstat_fleet_collect(struct tdstat_fleet *fleet, bool since_previous,
			  tdstat_fleet_visit visit, void *context);

/* The agent of member pid (as of the last collection), or NULL. */
const td_thragent_t *tdstat_fleet_agent(const struct tdstat_fleet *fleet, pid_t pid);

#endif /* TDSTAT_FLEET_H */
