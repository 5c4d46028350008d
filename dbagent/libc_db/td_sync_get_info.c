/* SPDX-License-Identifier: MIT */
/* Solaris' td_sync_get_info (docs/CONTRACT.md §9): the object's type from
 * the waits that name it, its state from its own memory. */
#include <stdlib.h>

#include "sync_private.h"

TDDB_EXPORT td_err_e td_sync_get_info(const td_synchandle_t *sh, td_syncinfo_t *si)
{
	struct tddb_thread_now *threads;
	struct tddb_sync_object *objects = NULL;
	struct td_thragent *agent;
	uint32_t count, nobjects = 0, type = TD_SYNC_UNKNOWN;
	uint64_t address = 0;
	td_err_e err;

	err = tddb_sync_call_enter(sh, si, &agent, &address, &threads, &count);
	if (!agent)
		return err;
	if (err == TD_OK)
		err = tddb_sync_objects(agent, threads, count, &objects, &nobjects);
	for (uint32_t i = 0; err == TD_OK && i < nobjects; i++)
		if (objects[i].address == address)
			type = objects[i].type;
	if (err == TD_OK)
		err = tddb_sync_info(agent, address, type, threads, count, si);
	free(objects);
	free(threads);
	tddb_agent_leave(agent);
	return err;
}
