/* SPDX-License-Identifier: MIT */
#include <limits.h>

#include "thread_db_private.h"

/* Threads alive now, the ones counted in the overflow figure included. */
TDDB_EXPORT td_err_e td_ta_get_nthreads(const td_thragent_t *ta, int *np)
{
	struct tddb_snapshot snapshot;
	struct td_thragent *agent;
	uint64_t threads;
	td_err_e err;

	err = tddb_agent_enter(ta, &agent);
	if (err != TD_OK)
		return err;
	if (!np)
		err = TD_ERR;
	else
		err = tddb_snapshot(agent, false, &snapshot);
	tddb_agent_leave(agent);
	if (err != TD_OK)
		return err;
	threads = (uint64_t)snapshot.live + snapshot.overflow_live;
	*np = threads > INT_MAX ? INT_MAX : (int)threads;
	return TD_OK;
}
