/* SPDX-License-Identifier: MIT */
/*
 * libtdstat_core: a proc_service provider over ELF core files (the
 * kernel's and gdb's gcore), so that libc_db reads the statistics a
 * process had at the moment it was dumped.
 *
 * It defines the ps_* routines of <proc_service.h> and ps_tdstat_image
 * (<tdstat/ps_image.h>) for handles opened by tdcore_open:
 *   - ps_pdread reads the core's PT_LOAD segments, and the parts of
 *     mapped files the core left out (text, read-only data) from the
 *     files its NT_FILE note names, as they are on disk now;
 *   - ps_pglobal_lookup searches the symbol tables of those files at the
 *     addresses they were loaded at;
 *   - ps_pdwrite and the other writes are refused (PS_ERR): a core is
 *     read-only;
 *   - ps_tdstat_image gives the process CPU time from the NT_PRSTATUS
 *     notes when the core has it (the kernel's cores do, gcore's do not).
 * The core is mapped and its files found with elfutils' libdwfl.
 *
 * Chained providers.  A program may link this library and another
 * provider (libtdstat_ps, for live processes) and use both: the first in
 * the dynamic linker's search order answers every ps_* call, so these
 * routines hand any handle that tdcore_open did not return to the next
 * definition of the same routine (dlsym RTLD_NEXT), and answer PS_BADPID
 * when there is none.  Link this library before the other provider.
 *
 * Everything in a core is untrusted: a truncated or damaged core gives an
 * error, never a crash.  Handles are independent; one handle may be used
 * from several threads.
 *
 * One wait is the caller's to bound: libdwfl open()s, blocking, every
 * name in the dynamic linker's list, which it reads from the core's
 * memory; a name that is a FIFO there waits for a writer.  tdcore_open
 * refuses a core whose NT_FILE names one, but cannot vouch for memory:
 * a caller that reads untrusted cores interrupts such an open with a
 * signal whose handler has no SA_RESTART (tdstat core: a timer).
 */
#ifndef TDSTAT_PS_CORE_H
#define TDSTAT_PS_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <proc_service.h>

#ifdef __cplusplus
extern "C" {
#endif

enum tdcore_status {
	TDCORE_OK = 0,
	TDCORE_CANNOT_OPEN,    /* the core file could not be opened (errno says why) */
	TDCORE_NOT_A_CORE,     /* not an ELF core file */
	TDCORE_FOREIGN,        /* a core of another machine or word size */
	TDCORE_DAMAGED,        /* truncated or corrupted: headers or notes out of bounds */
	TDCORE_NO_MEMORY,
	TDCORE_NOT_IN_CORE,    /* an address neither the core nor its files hold */
	TDCORE_READ_ONLY,      /* a write was asked of a core */
	TDCORE_FILES_MISSING,  /* files the core names were not found: their symbols are unknown */
	TDCORE_LOOKUP_LIMIT,   /* too many segments, objects or symbols: more than is read */
};

/* Opens a handle on core file `core_path`; `executable_path`, when not
 * NULL, is the program that dumped it (else the core's notes name it).
 * On failure returns the status, with errno set for TDCORE_CANNOT_OPEN,
 * and leaves *out NULL. */
enum tdcore_status tdcore_open(const char *core_path, const char *executable_path, struct ps_prochandle **out);
void tdcore_close(struct ps_prochandle *ph);

/* Status of the last failed ps_* call on this handle (TDCORE_OK if none). */
enum tdcore_status tdcore_last_status(const struct ps_prochandle *ph);

/* The dumped process, from the core's notes. */
struct tdcore_process {
	pid_t pid;
	char command[17];  /* NT_PRPSINFO's pr_fname, at most 16 bytes, printable
			    * ASCII ('?' for any other byte) */
	int signal;        /* the signal that caused the dump (gcore: 0 or the stop signal) */
	size_t threads;    /* NT_PRSTATUS notes: threads alive at the dump */
	int cpu_known;     /* 1 when cpu_ns is the process's CPU time (kernel cores) */
	uint64_t cpu_ns;
};
void tdcore_process(const struct ps_prochandle *ph, struct tdcore_process *process);

/* Writes one line (no newline) naming the cause and the fix for `status`
 * on core file `core_path` into buf; returns buf.  For TDCORE_CANNOT_OPEN
 * pass the errno tdcore_open left. */
const char *tdcore_explain(enum tdcore_status status, const char *core_path, int error, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TDSTAT_PS_CORE_H */
