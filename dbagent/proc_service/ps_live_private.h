/* SPDX-License-Identifier: MIT */
/*
 * Private to libtdstat_ps: the process handle and the helpers shared by
 * the ps_* routines.
 */
#ifndef TDSTAT_PS_LIVE_PRIVATE_H
#define TDSTAT_PS_LIVE_PRIVATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <tdstat/ps_live.h>

#define TDPS_EXPORT __attribute__((visibility("default")))

/*
 * Immutable after tdps_open except last_status, which any thread may set
 * (relaxed: it is a diagnostic, not a synchronization point).
 */
struct ps_prochandle {
	pid_t pid;
	int mem_fd;            /* /proc/PID/mem, the fallback path; -1 if none */
	_Atomic int last_status; /* enum tdps_status */
};

/* Reads or writes the target's memory; on failure records why on the
 * handle and returns the ps_err_e to give the caller. */
ps_err_e tdps_memory_read(struct ps_prochandle *ph, uintptr_t address, void *buffer, size_t size);
ps_err_e tdps_memory_write(struct ps_prochandle *ph, uintptr_t address, const void *buffer, size_t size);

/* Turns an errno from an access to process `pid` into a status. */
enum tdps_status tdps_status_from_errno(pid_t pid, int error);
void tdps_set_status(struct ps_prochandle *ph, enum tdps_status status);

/* True when `pid` is gone or a zombie (its memory is gone with it). */
bool tdps_process_gone(pid_t pid);

#endif /* TDSTAT_PS_LIVE_PRIVATE_H */
