/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "thread_db_private.h"

void tddb_stats_ns_copy_out(td_ta_stats_ns_t *stats, td_ta_stats_ns_t *to_caller)
{
	size_t size = to_caller->size < sizeof(*stats) ? to_caller->size : sizeof(*stats);

	stats->size = (uint32_t)size;
	memcpy(to_caller, stats, size);
}

TDDB_EXPORT td_err_e td_ta_get_stats_ns(const td_thragent_t *ta, td_ta_stats_ns_t *statsp)
{
	struct td_thragent *agent;
	td_ta_stats_ns_t stats;
	td_err_e err;

	err = tddb_agent_enter(ta, &agent);
	if (err != TD_OK)
		return err;
	if (!statsp || statsp->size < TDDB_STATS_NS_FIRST_SIZE)
		err = TD_ERR;
	else
		err = tddb_stats_ns(agent, statsp->size >= TDDB_STATS_NS_KINDS_SIZE, &stats);
	tddb_agent_leave(agent);
	if (err != TD_OK)
		return err;
	tddb_stats_ns_copy_out(&stats, statsp);
	return TD_OK;
}

static const char *const kind_names[] = {
#define KIND_NAME(suffix, name) name,
	TDSTAT_WAIT_KINDS(KIND_NAME)
#undef KIND_NAME
};

TDDB_EXPORT const char *td_wait_kind_name(unsigned int kind)
{
	return kind < TDSTAT_WAIT_KIND_COUNT ? kind_names[kind] : NULL;
}
