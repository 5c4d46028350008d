/* SPDX-License-Identifier: MIT */
/*
 * The ps_* routines of <proc_service.h>, and ps_tdstat_image, over a
 * core.  A handle that tdcore_open did not return belongs to a provider
 * chained after this one (ps_core.h): its call goes to the next
 * definition of the same routine in the dynamic linker's search order.
 */
#include <dlfcn.h>
#include <string.h>
#include <sys/procfs.h>

#include <tdstat/ps_image.h>

#include "core_private.h"

/* The next provider's routine, looked up once, absence included (a
 * relaxed cache: every thread that fills it finds the same answer). */
#define ABSENT ((void *)&next_routine)

static void *next_routine(const char *name, void *_Atomic *cache)
{
	void *routine = atomic_load_explicit(cache, memory_order_relaxed);

	if (!routine) {
		routine = dlsym(RTLD_NEXT, name);
		atomic_store_explicit(cache, routine ? routine : ABSENT, memory_order_relaxed);
	}
	return routine == ABSENT ? NULL : routine;
}

/* Returns the next provider's answer for a handle not ours, or
 * `otherwise` when there is no next provider. */
#define CHAIN(ph, routine, otherwise, ...)                                        \
	do {                                                                      \
		if (!tdcore_handle_known(ph)) {                                   \
			static void *_Atomic cache;                               \
			__typeof__(&routine) next = next_routine(#routine, &cache); \
			return next ? next(ph, ##__VA_ARGS__) : (otherwise);      \
		}                                                                 \
	} while (0)

TDCORE_EXPORT ps_err_e ps_pdread(struct ps_prochandle *ph, psaddr_t address, void *buffer, size_t size)
{
	CHAIN(ph, ps_pdread, PS_BADPID, address, buffer, size);
	return tdcore_memory_read(ph, (uintptr_t)address, buffer, size);
}

TDCORE_EXPORT ps_err_e ps_ptread(struct ps_prochandle *ph, psaddr_t address, void *buffer, size_t size)
{
	CHAIN(ph, ps_ptread, PS_BADPID, address, buffer, size);
	return tdcore_memory_read(ph, (uintptr_t)address, buffer, size);
}

TDCORE_EXPORT ps_err_e ps_pdwrite(struct ps_prochandle *ph, psaddr_t address, const void *buffer, size_t size)
{
	CHAIN(ph, ps_pdwrite, PS_BADPID, address, buffer, size);
	tdcore_set_status(ph, TDCORE_READ_ONLY);
	return PS_ERR;
}

TDCORE_EXPORT ps_err_e ps_ptwrite(struct ps_prochandle *ph, psaddr_t address, const void *buffer, size_t size)
{
	CHAIN(ph, ps_ptwrite, PS_BADPID, address, buffer, size);
	tdcore_set_status(ph, TDCORE_READ_ONLY);
	return PS_ERR;
}

TDCORE_EXPORT ps_err_e ps_pglobal_lookup(struct ps_prochandle *ph, const char *object_name, const char *sym_name,
					 psaddr_t *sym_addr)
{
	CHAIN(ph, ps_pglobal_lookup, PS_BADPID, object_name, sym_name, sym_addr);
	if (!sym_name || !sym_addr || !*sym_name)
		return PS_ERR;
	return tdcore_symbol_lookup(ph, object_name, sym_name, sym_addr);
}

TDCORE_EXPORT pid_t ps_getpid(struct ps_prochandle *ph)
{
	CHAIN(ph, ps_getpid, -1);
	return ph->process.pid;
}

TDCORE_EXPORT ps_err_e ps_tdstat_image(struct ps_prochandle *ph, struct ps_tdstat_image *image)
{
	struct ps_tdstat_image answer = { .size = sizeof(answer) };
	size_t size;

	/* No next provider: a live process (ps_image.h). */
	CHAIN(ph, ps_tdstat_image, PS_NOSYM, image);
	if (!image || image->size < offsetof(struct ps_tdstat_image, flags) + sizeof(image->flags))
		return PS_ERR;
	if (ph->process.cpu_known) {
		answer.flags = PS_TDSTAT_IMAGE_CPU;
		answer.cpu_ns = ph->process.cpu_ns;
	}
	size = image->size < sizeof(answer) ? image->size : sizeof(answer);
	answer.size = (uint32_t)size;
	memcpy(image, &answer, size);
	return PS_OK;
}

/* A core is stopped for good: stopping and continuing have nothing to do. */
TDCORE_EXPORT ps_err_e ps_pstop(struct ps_prochandle *ph)
{
	CHAIN(ph, ps_pstop, PS_BADPID);
	return PS_OK;
}

TDCORE_EXPORT ps_err_e ps_pcontinue(struct ps_prochandle *ph)
{
	CHAIN(ph, ps_pcontinue, PS_BADPID);
	return PS_OK;
}

TDCORE_EXPORT ps_err_e ps_lstop(struct ps_prochandle *ph, lwpid_t lwp)
{
	CHAIN(ph, ps_lstop, PS_BADPID, lwp);
	return PS_OK;
}

TDCORE_EXPORT ps_err_e ps_lcontinue(struct ps_prochandle *ph, lwpid_t lwp)
{
	CHAIN(ph, ps_lcontinue, PS_BADPID, lwp);
	return PS_OK;
}

/* Registers are in the notes but libc_db never asks for them, and the
 * handle keeps none: refused, like every write. */
TDCORE_EXPORT ps_err_e ps_lgetregs(struct ps_prochandle *ph, lwpid_t lwp, prgregset_t registers)
{
	CHAIN(ph, ps_lgetregs, PS_BADPID, lwp, registers);
	return PS_ERR;
}

TDCORE_EXPORT ps_err_e ps_lsetregs(struct ps_prochandle *ph, lwpid_t lwp, const prgregset_t registers)
{
	CHAIN(ph, ps_lsetregs, PS_BADPID, lwp, registers);
	tdcore_set_status(ph, TDCORE_READ_ONLY);
	return PS_ERR;
}

TDCORE_EXPORT ps_err_e ps_lgetfpregs(struct ps_prochandle *ph, lwpid_t lwp, prfpregset_t *registers)
{
	CHAIN(ph, ps_lgetfpregs, PS_BADPID, lwp, registers);
	return PS_ERR;
}

TDCORE_EXPORT ps_err_e ps_lsetfpregs(struct ps_prochandle *ph, lwpid_t lwp, const prfpregset_t *registers)
{
	CHAIN(ph, ps_lsetfpregs, PS_BADPID, lwp, registers);
	tdcore_set_status(ph, TDCORE_READ_ONLY);
	return PS_ERR;
}

TDCORE_EXPORT ps_err_e ps_get_thread_area(struct ps_prochandle *ph, lwpid_t lwp, int index, psaddr_t *address)
{
	CHAIN(ph, ps_get_thread_area, PS_BADPID, lwp, index, address);
	return PS_ERR;
}
