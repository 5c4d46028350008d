/* SPDX-License-Identifier: MIT */
/*
 * Shared by the reliability programs: the statistics invariants of docs/CONTRACT.md §2,
 * a live agent on a child process, and small helpers.  Everything here runs
 * in the controlling process (never preloaded).
 */
#ifndef TDSTAT_TESTS_REL_SUPPORT_H
#define TDSTAT_TESTS_REL_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <thread_db.h>
#include <tdstat/thread_db_stats.h>

#include "tdtest.h"

/* CI=true (or any CI value): the short versions. */
bool rel_ci(void);

/* Seconds from `name` in the environment, else CI or local default. */
double rel_seconds(const char *name, double ci_default, double local_default);


/* Returns NULL when the fractions keep docs/CONTRACT.md §2's invariants, else a
 * description of the first broken one (static storage). */
const char *rel_check_fractions(const td_ta_stats_t *stats);
const char *rel_check_integrals(const td_ta_stats_ns_t *stats);

/* VmRSS / VmHWM of a process in kB, or -1. */
long rel_vm_kb(pid_t pid, const char *field);

/* A libc_db agent on a live process (libtdstat_ps). */
struct rel_agent {
	struct ps_prochandle *ph;
	td_thragent_t *ta;
};
/* Opens an agent on pid, retrying for up to timeout_ms while the shim is not
 * (yet) found.  Returns TD_OK or the last error. */
td_err_e rel_agent_open(struct rel_agent *agent, pid_t pid, int timeout_ms);
void rel_agent_close(struct rel_agent *agent);

/* Whether pid has mapped a file whose name contains `needle`. */
bool rel_maps_contain(pid_t pid, const char *needle);

const char *rel_td_name(td_err_e err);

/* Counts failures; each failure prints one line on stderr. */
extern int rel_failures;
void rel_fail(const char *format, ...) __attribute__((format(printf, 1, 2)));

#endif /* TDSTAT_TESTS_REL_SUPPORT_H */
