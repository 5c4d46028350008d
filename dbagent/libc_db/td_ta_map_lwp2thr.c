/* SPDX-License-Identifier: MIT */
/* glibc's td_ta_map_lwp2thr over the tracked threads: the handle of the
 * thread whose kernel thread id is `lwpid`; TD_NOLWP when no tracked
 * thread has it (docs/CONTRACT.md §9). */
#include <stdlib.h>

#include "thread_db_private.h"

TDDB_EXPORT td_err_e td_ta_map_lwp2thr(const td_thragent_t *ta, lwpid_t lwpid, td_thrhandle_t *th)
{
	struct tddb_thread_now *threads = NULL;
	struct td_thragent *agent;
	uint32_t count = 0;
	td_err_e err;

	err = tddb_agent_enter(ta, &agent);
	if (err != TD_OK)
		return err;
	if (!th)
		err = TD_ERR;
	else if (lwpid <= 0)
		err = TD_NOLWP;
	else
		err = tddb_threads_now(agent, &threads, &count);
	if (err == TD_OK) {
		err = TD_NOLWP;
		for (uint32_t i = 0; i < count; i++)
			if (threads[i].tid == lwpid) {
				th->th_ta_p = agent;
				th->th_unique = tddb_thread_unique(agent, threads[i].index);
				err = TD_OK;
				break;
			}
	}
	free(threads);
	tddb_agent_leave(agent);
	return err;
}
