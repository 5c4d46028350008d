/* SPDX-License-Identifier: MIT */
/*
 * `tdstat enable|disable|reset PID`: one libc_db call each.  libc_db
 * writes the target's control block; the target is never stopped.
 */
#include "tdstat.h"

static td_err_e apply(enum tdstat_control_action action, const td_thragent_t *agent)
{
	switch (action) {
	case TDSTAT_CONTROL_ENABLE:
		return td_ta_enable_stats(agent, 1);
	case TDSTAT_CONTROL_DISABLE:
		return td_ta_enable_stats(agent, 0);
	case TDSTAT_CONTROL_RESET:
		return td_ta_reset_stats(agent);
	}
	return TD_ERR;
}

int tdstat_control(enum tdstat_control_action action, pid_t pid)
{
	struct tdstat_target target;
	td_err_e err;

	if (tdstat_target_open(&target, pid) < 0)
		return TDSTAT_EXIT_FAILURE;
	err = apply(action, target.agent);
	if (err != TD_OK)
		tdstat_target_explain(&target, err);
	tdstat_target_close(&target);
	return err == TD_OK ? TDSTAT_EXIT_OK : TDSTAT_EXIT_FAILURE;
}
