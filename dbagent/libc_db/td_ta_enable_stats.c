/* SPDX-License-Identifier: MIT */
#include "thread_db_private.h"

/* Enabling starts a new window even when gathering is already on;
 * disabling freezes the averages (docs/CONTRACT.md §3). */
TDDB_EXPORT td_err_e td_ta_enable_stats(const td_thragent_t *ta, int enable)
{
	struct td_thragent *agent;
	td_err_e err;

	err = tddb_agent_enter(ta, &agent);
	if (err != TD_OK)
		return err;
	err = tddb_control_change(agent, enable ? TDDB_CONTROL_ENABLE : TDDB_CONTROL_DISABLE);
	tddb_agent_leave(agent);
	return err;
}
