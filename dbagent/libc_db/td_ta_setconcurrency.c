/* SPDX-License-Identifier: MIT */
#include "thread_db_private.h"

/* Records the level as pthread_setconcurrency would: on Linux's 1:1
 * threads it is a hint that only pthread_getconcurrency reports back. */
TDDB_EXPORT td_err_e td_ta_setconcurrency(const td_thragent_t *ta, int level)
{
	struct td_thragent *agent;
	td_err_e err;

	err = tddb_agent_enter(ta, &agent);
	if (err != TD_OK)
		return err;
	/* pthread_setconcurrency refuses a negative level with EINVAL. */
	if (level < 0)
		err = TD_ERR;
	else
		err = tddb_control_set_concurrency(agent, level);
	tddb_agent_leave(agent);
	return err;
}
