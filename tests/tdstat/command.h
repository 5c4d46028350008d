/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the tdstat command tests: running the built tdstat, reading
 * its JSON lines, starting targets.  Children are started through tdtest,
 * the one way the suites spawn programs.
 */
#ifndef TDSTAT_TEST_COMMAND_H
#define TDSTAT_TEST_COMMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "tdtest.h"

#define COMMAND_TIMEOUT_MS 60000

/* Paths of the built programs, given at compile time. */
const char *tdstat_path(void);
const char *workload_path(void);
const char *phases_path(void);
const char *slow_start_path(void);

/* Runs tdstat with args (NULL-terminated), stdout and stderr merged into
 * *output (malloc'd).  Returns the wait status, -1 on timeout/error. */
int run_tdstat_merged(const char *const args[], char **output);
/* Runs tdstat with args; *output gets stdout only. */
int run_tdstat(const char *const args[], char **output);
/* As run_tdstat_merged, as user `nobody` (setpriv).  Returns -2 when that
 * is impossible here (not root, no setpriv). */
int run_tdstat_as_nobody(const char *const args[], char **output);

/* A `workload stdin` target: started, its "ready" line read.  With
 * enable, TDSTAT_ENABLE=1 is in its environment; with preload, the shim
 * is. */
int start_target(struct tdtest_child *child, bool preload, bool enable);
/* The same with `workload MODE` (a mode that prints "ready"). */
int start_target_mode(struct tdtest_child *child, const char *mode, bool preload, bool enable);
/* Closes its stdin and reaps it. */
void stop_target(struct tdtest_child *child);

/* The value of "key": in a JSON line; false when missing. */
bool json_number(const char *line, const char *key, double *value);
/* Number of lines in text (counting a last line without '\n'). */
size_t count_lines(const char *text);

/* Exit status of a wait status (128+N for signal N). */
int exit_code(int status);

#endif /* TDSTAT_TEST_COMMAND_H */
