/* SPDX-License-Identifier: MIT */
/*
 * Private to libtdstat_core: the core handle and what its files share.
 */
#ifndef TDSTAT_PS_CORE_PRIVATE_H
#define TDSTAT_PS_CORE_PRIVATE_H

#include <elfutils/libdwfl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <tdstat/ps_core.h>

#define TDCORE_EXPORT __attribute__((visibility("default")))

/* Bounds on what a core may make us do (symbols.c, handle.c).  libdwfl's
 * dwfl_core_file_report takes time quadratic in the segments (16 s for
 * 2^18 here) and in the modules it finds, one per segment that starts
 * with an ELF header: a core with 2^20 segments kept it busy for many
 * minutes.  2^18 is the largest vm.max_map_count commonly set (the
 * default is 65530); the modules are bounded before libdwfl sees them
 * by the lookup's own limit. */
#define TDCORE_SEGMENTS_MAX (1u << 18)
#define TDCORE_THREADS_MAX (1u << 22)
#define TDCORE_NOTES_BYTES_MAX (UINT64_C(1) << 30)
#define TDCORE_MODULES_MAX 4096u
#define TDCORE_SYMBOLS_MAX (1u << 24)

/* A thread of the dump, from its NT_PRSTATUS note (notes.c). */
struct tdcore_thread {
	pid_t tid;
	int cpu_known;
	uint64_t cpu_ns;
};

/* A PT_LOAD of the core: [vaddr, vaddr + filesz) is at offset in the file;
 * the rest of [vaddr, vaddr + memsz) was left out. */
struct tdcore_segment {
	uint64_t vaddr, memsz, filesz, offset;
};

/*
 * Immutable after tdcore_open except last_status (any thread; a
 * diagnostic, relaxed) and the libdwfl state, which dwfl_lock guards:
 * libdwfl opens module files lazily and is not thread-safe.
 */
struct ps_prochandle {
	struct ps_prochandle *registry_next; /* registry lock (handle.c) */
	int fd;
	uint64_t file_size;
	Elf *elf;
	struct tdcore_segment *segments;     /* by vaddr */
	size_t segment_count;
	struct tdcore_process process;
	struct tdcore_thread *threads;
	bool maps_shim;                      /* NT_FILE names libtdshim.so */
	pthread_mutex_t dwfl_lock;
	Dwfl *dwfl;
	_Atomic int last_status;             /* enum tdcore_status */
};

void tdcore_set_status(struct ps_prochandle *ph, enum tdcore_status status);

/* True when tdcore_open returned ph and tdcore_close has not run: the
 * other handles belong to the next provider (proc_service.c). */
bool tdcore_handle_known(const struct ps_prochandle *ph);

/* memory.c: whole reads or PS_ERR (status TDCORE_NOT_IN_CORE). */
ps_err_e tdcore_memory_read(struct ps_prochandle *ph, uint64_t address, void *buffer, size_t size);

/* notes.c: the process and its threads from the core's notes. */
enum tdcore_status tdcore_notes_read(struct ps_prochandle *ph);

/* symbols.c */
ps_err_e tdcore_symbol_lookup(struct ps_prochandle *ph, const char *object_hint, const char *name, psaddr_t *address);

#endif /* TDSTAT_PS_CORE_PRIVATE_H */
