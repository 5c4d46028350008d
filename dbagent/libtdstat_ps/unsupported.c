/* SPDX-License-Identifier: MIT */
/*
 * What a live-process provider refuses: it never stops a target, and it
 * has no registers to offer since it never attaches with ptrace.  libc_db
 * does not call these; they exist so a program that expects a complete
 * proc_service links.
 */
#include <proc_service.h>

#include "ps_live_private.h"

TDPS_EXPORT ps_err_e ps_pstop(struct ps_prochandle *ph)
{
	return PS_ERR;
}

TDPS_EXPORT ps_err_e ps_pcontinue(struct ps_prochandle *ph)
{
	return PS_ERR;
}

TDPS_EXPORT ps_err_e ps_lstop(struct ps_prochandle *ph, lwpid_t lwp)
{
	return PS_ERR;
}

TDPS_EXPORT ps_err_e ps_lcontinue(struct ps_prochandle *ph, lwpid_t lwp)
{
	return PS_ERR;
}

TDPS_EXPORT ps_err_e ps_lgetregs(struct ps_prochandle *ph, lwpid_t lwp, prgregset_t registers)
{
	return PS_ERR;
}

TDPS_EXPORT ps_err_e ps_lsetregs(struct ps_prochandle *ph, lwpid_t lwp, const prgregset_t registers)
{
	return PS_ERR;
}

TDPS_EXPORT ps_err_e ps_lgetfpregs(struct ps_prochandle *ph, lwpid_t lwp, prfpregset_t *registers)
{
	return PS_ERR;
}

TDPS_EXPORT ps_err_e ps_lsetfpregs(struct ps_prochandle *ph, lwpid_t lwp, const prfpregset_t *registers)
{
	return PS_ERR;
}

TDPS_EXPORT ps_err_e ps_get_thread_area(struct ps_prochandle *ph, lwpid_t lwp, int index, psaddr_t *address)
{
	return PS_ERR;
}
