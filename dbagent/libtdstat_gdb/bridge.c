/* SPDX-License-Identifier: MIT */
/*
 * libtdstat_gdb: the ps_* routines of <proc_service.h> over callbacks, so
 * that tdstat-gdb.py drives libc_db with gdb's own access to the inferior
 * (its memory and its symbol lookup) through ctypes.
 *
 * Why a bridge: gdb exports the ps_* routines it gives libthread_db, but
 * their handle is gdb's internal struct (a thread_info pointer), which
 * Python cannot make; and gdb's exported definitions come first in the
 * process's global scope.  So tdstat-gdb.py loads this library with
 * RTLD_DEEPBIND: the library and its dependency libc_db.so then search
 * their own scope first, and libc_db's ps_* calls bind here, while gdb's
 * own libthread_db keeps binding to gdb's.  Nothing of this library
 * enters the global scope (ctypes loads it RTLD_LOCAL).
 *
 * The callbacks run in gdb's main thread, in Python; a handle is used by
 * one thread at a time.
 */
#include <proc_service.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>

#include <tdstat/ps_image.h>

#define TDGDB_EXPORT __attribute__((visibility("default")))

/* 0: done; otherwise failed.  lookup: 1 when there is no such symbol. */
typedef int tdgdb_read_fn(uint64_t address, void *buffer, size_t size);
typedef int tdgdb_write_fn(uint64_t address, const void *buffer, size_t size);
typedef int tdgdb_lookup_fn(const char *object, const char *name, uint64_t *address);

struct ps_prochandle {
	pid_t pid;
	tdgdb_read_fn *read;
	tdgdb_write_fn *write;   /* NULL: read-only (a core) */
	tdgdb_lookup_fn *lookup;
	int frozen;              /* a core: ps_tdstat_image answers */
	int cpu_known;
	uint64_t cpu_ns;
};

/* The calls tdstat-gdb.py makes (through ctypes: no header). */
struct ps_prochandle *tdgdb_open(pid_t pid, tdgdb_read_fn *read, tdgdb_write_fn *write, tdgdb_lookup_fn *lookup);
void tdgdb_set_image(struct ps_prochandle *ph, int cpu_known, uint64_t cpu_ns);
void tdgdb_close(struct ps_prochandle *ph);

/* A handle over gdb's inferior `pid`; write NULL for a core. */
TDGDB_EXPORT struct ps_prochandle *tdgdb_open(pid_t pid, tdgdb_read_fn *read, tdgdb_write_fn *write,
					      tdgdb_lookup_fn *lookup)
{
	struct ps_prochandle *ph;

	if (!read || !lookup)
		return NULL;
	ph = calloc(1, sizeof(*ph));
	if (!ph)
		return NULL;
	*ph = (struct ps_prochandle){ .pid = pid, .read = read, .write = write, .lookup = lookup };
	return ph;
}

/* The inferior is a core: libc_db ends the window at the dump and takes
 * the CPU time given here (ps_image.h); cpu_known 0 when the core has none. */
TDGDB_EXPORT void tdgdb_set_image(struct ps_prochandle *ph, int cpu_known, uint64_t cpu_ns)
{
	ph->frozen = 1;
	ph->cpu_known = cpu_known;
	ph->cpu_ns = cpu_ns;
}

TDGDB_EXPORT void tdgdb_close(struct ps_prochandle *ph)
{
	free(ph);
}

TDGDB_EXPORT ps_err_e ps_pdread(struct ps_prochandle *ph, psaddr_t address, void *buffer, size_t size)
{
	if (!ph)
		return PS_BADPID;
	return ph->read((uint64_t)(uintptr_t)address, buffer, size) == 0 ? PS_OK : PS_ERR;
}

TDGDB_EXPORT ps_err_e ps_ptread(struct ps_prochandle *ph, psaddr_t address, void *buffer, size_t size)
{
	return ps_pdread(ph, address, buffer, size);
}

TDGDB_EXPORT ps_err_e ps_pdwrite(struct ps_prochandle *ph, psaddr_t address, const void *buffer, size_t size)
{
	if (!ph)
		return PS_BADPID;
	if (!ph->write)
		return PS_ERR;
	return ph->write((uint64_t)(uintptr_t)address, buffer, size) == 0 ? PS_OK : PS_ERR;
}

TDGDB_EXPORT ps_err_e ps_ptwrite(struct ps_prochandle *ph, psaddr_t address, const void *buffer, size_t size)
{
	return ps_pdwrite(ph, address, buffer, size);
}

TDGDB_EXPORT ps_err_e ps_pglobal_lookup(struct ps_prochandle *ph, const char *object_name, const char *sym_name,
					psaddr_t *sym_addr)
{
	uint64_t address;
	int result;

	if (!ph)
		return PS_BADPID;
	if (!sym_name || !sym_addr)
		return PS_ERR;
	result = ph->lookup(object_name ? object_name : "", sym_name, &address);
	if (result == 1)
		return PS_NOSYM;
	if (result != 0)
		return PS_ERR;
	*sym_addr = (psaddr_t)(uintptr_t)address;
	return PS_OK;
}

TDGDB_EXPORT pid_t ps_getpid(struct ps_prochandle *ph)
{
	return ph ? ph->pid : -1;
}

TDGDB_EXPORT ps_err_e ps_tdstat_image(struct ps_prochandle *ph, struct ps_tdstat_image *image)
{
	struct ps_tdstat_image answer = { .size = sizeof(answer) };
	size_t size;

	if (!ph || !ph->frozen)
		return PS_NOSYM; /* a live inferior */
	if (!image || image->size < offsetof(struct ps_tdstat_image, flags) + sizeof(image->flags))
		return PS_ERR;
	if (ph->cpu_known) {
		answer.flags = PS_TDSTAT_IMAGE_CPU;
		answer.cpu_ns = ph->cpu_ns;
	}
	size = image->size < sizeof(answer) ? image->size : sizeof(answer);
	answer.size = (uint32_t)size;
	memcpy(image, &answer, size);
	return PS_OK;
}

/* gdb stops and resumes the inferior itself; registers are gdb's
 * business.  libc_db calls none of these: refused. */
TDGDB_EXPORT ps_err_e ps_pstop(struct ps_prochandle *ph)
{
	return PS_ERR;
}

TDGDB_EXPORT ps_err_e ps_pcontinue(struct ps_prochandle *ph)
{
	return PS_ERR;
}

TDGDB_EXPORT ps_err_e ps_lstop(struct ps_prochandle *ph, lwpid_t lwp)
{
	return PS_ERR;
}

TDGDB_EXPORT ps_err_e ps_lcontinue(struct ps_prochandle *ph, lwpid_t lwp)
{
	return PS_ERR;
}

TDGDB_EXPORT ps_err_e ps_lgetregs(struct ps_prochandle *ph, lwpid_t lwp, prgregset_t registers)
{
	return PS_ERR;
}

TDGDB_EXPORT ps_err_e ps_lsetregs(struct ps_prochandle *ph, lwpid_t lwp, const prgregset_t registers)
{
	return PS_ERR;
}

TDGDB_EXPORT ps_err_e ps_lgetfpregs(struct ps_prochandle *ph, lwpid_t lwp, prfpregset_t *registers)
{
	return PS_ERR;
}

TDGDB_EXPORT ps_err_e ps_lsetfpregs(struct ps_prochandle *ph, lwpid_t lwp, const prfpregset_t *registers)
{
	return PS_ERR;
}

TDGDB_EXPORT ps_err_e ps_get_thread_area(struct ps_prochandle *ph, lwpid_t lwp, int index, psaddr_t *address)
{
	return PS_ERR;
}
