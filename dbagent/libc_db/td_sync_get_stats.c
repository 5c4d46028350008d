/* SPDX-License-Identifier: MIT */
/*
 * An object's statistics from the tracking table (Solaris'
 * td_sync_get_stats): TD_NOCAPAB while tracking is off (or the shim has
 * no table), TD_NOSV when the table does not hold the object.  ss_info
 * holds what the table says (the agent, the address, the type, si_size,
 * si_tracked) and, as td_sync_get_info reads it, the object's state from
 * its own memory (locked, readers or writer, count, owner's tid,
 * has-waiters).  The waiters need the threads' records: si_nwaiters and
 * the owner's handle stay 0 here (td_sync_get_info gives them).  An
 * object whose memory cannot be read keeps the table's part alone: its
 * statistics do not depend on it.
 */
#include <string.h>

#include "sync_private.h"

static int32_t size_of_type(uint32_t type)
{
	switch (type) {
	case TDSTAT_SYNC_MUTEX:
		return (int32_t)sizeof(pthread_mutex_t);
	case TDSTAT_SYNC_COND:
		return (int32_t)sizeof(pthread_cond_t);
	case TDSTAT_SYNC_RWLOCK:
		return (int32_t)sizeof(pthread_rwlock_t);
	default:
		return 32; /* sem_t */
	}
}

TDDB_EXPORT td_err_e td_sync_get_stats(const td_synchandle_t *sh, td_syncstats_t *ss)
{
	struct tddb_sync_block block;
	struct tddb_sync_entry entry;
	struct td_thragent *agent;
	td_err_e err;

	if (!sh)
		return TD_BADSH;
	err = tddb_agent_enter(sh->sh_ta_p, &agent);
	if (err != TD_OK)
		return err;
	if (sh->sh_unique == 0)
		err = TD_BADSH;
	else if (!ss)
		err = TD_ERR;
	else
		err = tddb_sync_block(agent, &block);
	if (err == TD_OK && !tddb_sync_on(&block))
		err = TD_NOCAPAB;
	if (err == TD_OK)
		err = tddb_sync_find(agent, &block, (uint64_t)(uintptr_t)sh->sh_unique, &entry);
	if (err == TD_OK) {
		memset(ss, 0, sizeof(*ss));
		/* One bounded read of the object, no threads: its state. */
		if (tddb_sync_info(agent, (uint64_t)(uintptr_t)sh->sh_unique, tddb_sync_td_type(entry.type), NULL, 0,
				   &ss->ss_info) != TD_OK)
			memset(&ss->ss_info, 0, sizeof(ss->ss_info));
	}
	tddb_agent_leave(agent);
	if (err != TD_OK)
		return err;
	ss->ss_info.si_ta_p = sh->sh_ta_p;
	ss->ss_info.si_sv_addr = sh->sh_unique;
	ss->ss_info.si_type = tddb_sync_td_type(entry.type);
	ss->ss_info.si_size = size_of_type(entry.type);
	ss->ss_info.si_tracked = 1;
	tddb_sync_stats_of(&block, &entry, ss);
	return TD_OK;
}
