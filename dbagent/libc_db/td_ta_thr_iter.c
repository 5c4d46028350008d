/* SPDX-License-Identifier: MIT */
/*
 * glibc's td_ta_thr_iter over the tracked threads (docs/CONTRACT.md §9).
 * Like glibc's: a thread is handed out when `state` is TD_THR_ANY_STATE
 * or its own, and its priority (0: the records do not keep one) is at
 * least `ti_pri`; the signal mask and user flags select nothing; a
 * callback that answers non-zero stops the walk and the call answers
 * TD_DBERR.  The threads are read first, then handed out, so a callback
 * may call libc_db on the same agent.
 */
#include <stdlib.h>

#include "thread_db_private.h"

TDDB_EXPORT td_err_e td_ta_thr_iter(const td_thragent_t *ta, td_thr_iter_f *callback, void *cbdata_p,
				    td_thr_state_e state, int ti_pri, sigset_t *ti_sigmask_p, unsigned int ti_user_flags)
{
	struct tddb_thread_now *threads = NULL;
	struct td_thragent *agent;
	uint32_t count = 0;
	td_err_e err;

	(void)ti_sigmask_p;
	(void)ti_user_flags;
	err = tddb_agent_enter(ta, &agent);
	if (err != TD_OK)
		return err;
	if (!callback)
		err = TD_ERR;
	else
		err = tddb_threads_now(agent, &threads, &count);
	for (uint32_t i = 0; err == TD_OK && i < count; i++) {
		td_thr_state_e now = threads[i].state == TDSTAT_STATE_BLOCKED ? TD_THR_SLEEP : TD_THR_ACTIVE;
		td_thrhandle_t th = { .th_ta_p = agent, .th_unique = tddb_thread_unique(agent, threads[i].index) };

		if ((state != TD_THR_ANY_STATE && state != now) || ti_pri > 0)
			continue;
		if (callback(&th, cbdata_p) != 0)
			err = TD_DBERR;
	}
	free(threads);
	tddb_agent_leave(agent);
	return err;
}
