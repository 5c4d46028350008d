/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "sync_private.h"

/* The tracking table's capacity, use and overflow (docs/CONTRACT.md §9),
 * from one read of its header, checked as every sync call checks it. */
TDDB_EXPORT td_err_e td_ta_sync_table(const td_thragent_t *ta, td_sync_table_t *table)
{
	struct td_thragent *agent;
	struct tddb_sync_block block;
	td_err_e err;

	err = tddb_agent_enter(ta, &agent);
	if (err != TD_OK)
		return err;
	if (!table)
		err = TD_ERR;
	else
		err = tddb_sync_block(agent, &block);
	if (err == TD_OK) {
		memset(table, 0, sizeof(*table));
		table->st_capacity = block.capacity;
		table->st_probes = block.probes;
		/* A hostile header may claim more than the table holds. */
		table->st_used = tddb_min_u64(block.used, block.capacity);
		table->st_overflow = block.overflow;
		table->st_tracking = tddb_sync_on(&block);
	}
	tddb_agent_leave(agent);
	return err;
}
