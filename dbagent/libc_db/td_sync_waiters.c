/* SPDX-License-Identifier: MIT */
/* Solaris' td_sync_waiters (docs/CONTRACT.md §9): every tracked thread
 * blocked on the object now, from the records' current waits; a non-zero
 * answer from the callback stops the calls. */
#include <stdlib.h>

#include "sync_private.h"

TDDB_EXPORT td_err_e td_sync_waiters(const td_synchandle_t *sh, td_thr_iter_f *cb, void *cbdata)
{
	struct tddb_thread_now *threads;
	struct td_thragent *agent;
	uint32_t count;
	uint64_t address = 0;
	td_err_e err;

	err = tddb_sync_call_enter(sh, (const void *)(uintptr_t)cb, &agent, &address, &threads, &count);
	if (!agent)
		return err;
	for (uint32_t i = 0; err == TD_OK && i < count; i++) {
		td_thrhandle_t th = { .th_ta_p = agent, .th_unique = tddb_thread_unique(agent, threads[i].index) };

		if (threads[i].object != address || tddb_thread_sync_type(&threads[i]) == TD_SYNC_UNKNOWN)
			continue;
		if (cb(&th, cbdata) != 0)
			break;
	}
	free(threads);
	tddb_agent_leave(agent);
	return err;
}
