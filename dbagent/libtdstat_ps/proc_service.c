/* SPDX-License-Identifier: MIT */
/*
 * The ps_* routines of <proc_service.h> for a live process.  Linux has one
 * address space for text and data, so the pt and pd variants are one.
 */
#include <proc_service.h>

#include "ps_live_private.h"

TDPS_EXPORT ps_err_e ps_pdread(struct ps_prochandle *ph, psaddr_t address, void *buffer, size_t size)
{
	return tdps_memory_read(ph, (uintptr_t)address, buffer, size);
}

TDPS_EXPORT ps_err_e ps_pdwrite(struct ps_prochandle *ph, psaddr_t address, const void *buffer, size_t size)
{
	return tdps_memory_write(ph, (uintptr_t)address, buffer, size);
}

TDPS_EXPORT ps_err_e ps_ptread(struct ps_prochandle *ph, psaddr_t address, void *buffer, size_t size)
{
	return tdps_memory_read(ph, (uintptr_t)address, buffer, size);
}

TDPS_EXPORT ps_err_e ps_ptwrite(struct ps_prochandle *ph, psaddr_t address, const void *buffer, size_t size)
{
	return tdps_memory_write(ph, (uintptr_t)address, buffer, size);
}

TDPS_EXPORT pid_t ps_getpid(struct ps_prochandle *ph)
{
	return ph ? ph->pid : -1;
}
