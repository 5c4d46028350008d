/* SPDX-License-Identifier: MIT */
/*
 * libtdstat_ps: a proc_service provider for live processes.
 *
 * It defines the ps_* routines that <proc_service.h> declares, for a
 * process named by its PID, so that a program (tdstat, the tests) can use
 * libc_db without being a debugger.  It never stops the target: reads and
 * writes go through process_vm_readv/writev, with /proc/PID/mem as the
 * fallback; symbols are looked up in the target's memory (the dynamic
 * symbol tables of its loaded objects), so a shim loaded through a symlink,
 * or whose file was since replaced or deleted, is still found.
 *
 * Handles are independent; one handle may be used from several threads.
 */
#ifndef TDSTAT_PS_LIVE_H
#define TDSTAT_PS_LIVE_H

#include <stddef.h>
#include <sys/types.h>
#include <proc_service.h>

#ifdef __cplusplus
extern "C" {
#endif

enum tdps_status {
	TDPS_OK = 0,
	TDPS_NO_PROCESS,   /* no such process (or it exited) */
	TDPS_PERMISSION,   /* ptrace access mode check refused us */
	TDPS_NOT_DYNAMIC,  /* the target has no dynamic symbol tables to search */
	TDPS_NO_MEMORY,
	TDPS_IO,           /* any other failure reading the target */
};

/* Opens a handle on live process `pid`.  On failure returns the status and
 * leaves *out NULL. */
enum tdps_status tdps_open(pid_t pid, struct ps_prochandle **out);
void tdps_close(struct ps_prochandle *ph);

/* Status of the last failed ps_* call on this handle (TDPS_OK if none):
 * tells a caller that got TD_DBERR from libc_db what happened. */
enum tdps_status tdps_last_status(const struct ps_prochandle *ph);

/* Writes one line (no newline) naming the cause and the fix for `status`
 * on process `pid` into buf; returns buf. */
const char *tdps_explain(enum tdps_status status, pid_t pid, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TDSTAT_PS_LIVE_H */
