/* SPDX-License-Identifier: MIT */
#include "thread_db_private.h"

/* A new window from now; while gathering is off it stays empty. */
TDDB_EXPORT td_err_e td_ta_reset_stats(const td_thragent_t *ta)
{
	struct td_thragent *agent;
	td_err_e err;

	err = tddb_agent_enter(ta, &agent);
	if (err != TD_OK)
		return err;
	err = tddb_control_change(agent, TDDB_CONTROL_RESET);
	tddb_agent_leave(agent);
	return err;
}
