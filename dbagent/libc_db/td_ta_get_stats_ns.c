/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "thread_db_private.h"

/* The size every caller must offer: the first version of the struct. */
#define STATS_NS_FIRST_SIZE (offsetof(td_ta_stats_ns_t, snapshot_ns) + sizeof(uint64_t))
/* The second version's: a caller this large asks for the kinds. */
#define STATS_NS_KINDS_SIZE (offsetof(td_ta_stats_ns_t, idle_by_kind_ns) + sizeof(((td_ta_stats_ns_t *)0)->idle_by_kind_ns))

TDDB_EXPORT td_err_e td_ta_get_stats_ns(const td_thragent_t *ta, td_ta_stats_ns_t *statsp)
{
	struct td_thragent *agent;
	td_ta_stats_ns_t stats;
	size_t size;
	td_err_e err;

	err = tddb_agent_enter(ta, &agent);
	if (err != TD_OK)
		return err;
	if (!statsp || statsp->size < STATS_NS_FIRST_SIZE)
		err = TD_ERR;
	else
		err = tddb_stats_ns(agent, statsp->size >= STATS_NS_KINDS_SIZE, &stats);
	tddb_agent_leave(agent);
	if (err != TD_OK)
		return err;
	/* A caller built against a later, larger struct gets what we know. */
	size = statsp->size < sizeof(stats) ? statsp->size : sizeof(stats);
	stats.size = (uint32_t)size;
	memcpy(statsp, &stats, size);
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
