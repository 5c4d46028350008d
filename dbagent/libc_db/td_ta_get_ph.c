/* SPDX-License-Identifier: MIT */
#include "thread_db_private.h"

TDDB_EXPORT td_err_e td_ta_get_ph(const td_thragent_t *ta, struct ps_prochandle **ph)
{
	struct td_thragent *agent;
	td_err_e err;

	err = tddb_agent_enter(ta, &agent);
	if (err != TD_OK)
		return err;
	if (ph)
		*ph = agent->ph;
	else
		err = TD_ERR;
	tddb_agent_leave(agent);
	return err;
}
