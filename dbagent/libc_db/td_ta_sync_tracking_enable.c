/* SPDX-License-Identifier: MIT */
#include "sync_private.h"

/* Per-object tracking on or off (docs/CONTRACT.md §9), by writing the
 * target's tracking block as td_ta_enable_stats writes the control block. */
TDDB_EXPORT td_err_e td_ta_sync_tracking_enable(const td_thragent_t *ta, int on_off)
{
	struct td_thragent *agent;
	td_err_e err;

	err = tddb_agent_enter(ta, &agent);
	if (err != TD_OK)
		return err;
	err = tddb_sync_set_tracking(agent, on_off != 0);
	tddb_agent_leave(agent);
	return err;
}
