/* SPDX-License-Identifier: MIT */
/* glibc's td_thr_get_info for a tracked thread (docs/CONTRACT.md §9):
 * what the thread's record says, the rest zero. */
#include <string.h>

#include "sync_private.h"

TDDB_EXPORT td_err_e td_thr_get_info(const td_thrhandle_t *th, td_thrinfo_t *infop)
{
	struct td_thragent *agent;
	struct tddb_thread thread;
	td_err_e err;

	err = tddb_thread_call_enter(th, infop, &agent, &thread);
	if (!agent)
		return err;
	if (err == TD_OK) {
		memset(infop, 0, sizeof(*infop));
		infop->ti_ta_p = agent;
		infop->ti_lid = thread.tid;
		infop->ti_state = thread.state == TDSTAT_STATE_BLOCKED ? TD_THR_SLEEP : TD_THR_ACTIVE;
		infop->ti_type = TD_THR_USER;
		infop->ti_ro_area = th->th_unique;
		infop->ti_ro_size = (int)agent->geometry.record_size;
	}
	tddb_agent_leave(agent);
	return err;
}
