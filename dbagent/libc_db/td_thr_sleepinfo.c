/* SPDX-License-Identifier: MIT */
/* Solaris' td_thr_sleepinfo: the mutex, rwlock, condvar or semaphore a
 * tracked thread is blocked on now, from its record (docs/CONTRACT.md
 * §9); TD_ERR and a zeroed handle when it is blocked on none. */
#include "sync_private.h"

TDDB_EXPORT td_err_e td_thr_sleepinfo(const td_thrhandle_t *th, td_synchandle_t *sh)
{
	struct td_thragent *agent;
	struct tddb_thread thread;
	td_err_e err;

	err = tddb_thread_call_enter(th, sh, &agent, &thread);
	if (!agent)
		return err;
	if (sh) {
		sh->sh_ta_p = NULL;
		sh->sh_unique = 0;
	}
	if (err == TD_OK) {
		struct tddb_thread_now now = {
			.state = thread.state,
			.kind = thread.kind,
			.object = thread.object,
		};

		if (tddb_thread_sync_type(&now) == TD_SYNC_UNKNOWN) {
			err = TD_ERR;
		} else {
			sh->sh_ta_p = agent;
			sh->sh_unique = (psaddr_t)(uintptr_t)thread.object;
		}
	}
	tddb_agent_leave(agent);
	return err;
}
