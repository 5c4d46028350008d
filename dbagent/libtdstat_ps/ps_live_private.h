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

/* The bounds of one ps_pglobal_lookup, over all objects (symbol_lookup.c;
 * the explanation of TDPS_LOOKUP_LIMIT quotes them). */
#define TDPS_LOOKUP_OBJECTS_MAX 4096u
#define TDPS_LOOKUP_READS_MAX (1u << 18)
#define TDPS_LOOKUP_STEPS_MAX (1u << 20)
#define TDPS_LOOKUP_SECONDS 5u

/*
 * Immutable after tdps_open except access_tid and last_status, which any
 * thread may set (relaxed: access_tid is only ever some live thread of the
 * process, any of which will do; last_status is a diagnostic).
 */
struct ps_prochandle {
	pid_t pid;               /* the process (its leader's TID), ps_getpid */
	int mem_fd;              /* /proc/PID/task/TID/mem, the fallback path; -1 if none */
	_Atomic pid_t access_tid; /* a live thread, for process_vm_readv and maps */
	_Atomic int last_status;  /* enum tdps_status */
};

/* Reads or writes the target's memory; on failure records why on the
 * handle and returns the ps_err_e to give the caller. */
ps_err_e tdps_memory_read(struct ps_prochandle *ph, uintptr_t address, void *buffer, size_t size);
ps_err_e tdps_memory_write(struct ps_prochandle *ph, uintptr_t address, const void *buffer, size_t size);

/* Turns an errno from an access to process `pid` into a status. */
enum tdps_status tdps_status_from_errno(pid_t pid, int error);
void tdps_set_status(struct ps_prochandle *ph, enum tdps_status status);

/* True when no thread of process `pid` lives (its memory is gone). */
bool tdps_process_gone(pid_t pid);
/* A live thread of process `pid`: the leader while it lives, else another
 * (main may have called pthread_exit); 0 when none. */
pid_t tdps_live_thread(pid_t pid);
/* The process that thread `pid` belongs to (its Tgid); 0 when none. */
pid_t tdps_process_of(pid_t pid);

#endif /* TDSTAT_PS_LIVE_PRIVATE_H */
