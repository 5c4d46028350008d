/* SPDX-License-Identifier: MIT */
#include "thread_db_private.h"

TDDB_EXPORT td_err_e td_ta_get_stats(const td_thragent_t *ta, td_ta_stats_t *statsp)
{
	struct td_thragent *agent;
	td_ta_stats_ns_t stats;
	td_err_e err;

	err = tddb_agent_enter(ta, &agent);
	if (err != TD_OK)
		return err;
	if (!statsp)
		err = TD_ERR;
	else
		err = tddb_stats_ns(agent, false, &stats);
	tddb_agent_leave(agent);
	if (err == TD_OK)
		tddb_stats_fractions(&stats, statsp);
	return err;
}
