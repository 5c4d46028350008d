/* SPDX-License-Identifier: MIT */
/* Solaris' td_thr_lockowner (docs/CONTRACT.md §9): of the objects libc_db
 * knows of, the mutexes and write-locked rwlocks whose owner field, in the
 * object's own memory, is the thread's kernel thread id. */
#include <stdlib.h>

#include "sync_private.h"

TDDB_EXPORT td_err_e td_thr_lockowner(const td_thrhandle_t *th, td_sync_iter_f *cb, void *cbdata)
{
	struct tddb_thread_now *threads = NULL;
	struct tddb_sync_object *objects = NULL;
	struct td_thragent *agent;
	struct tddb_thread thread;
	uint32_t count = 0, nobjects = 0;
	td_err_e err;

	err = tddb_thread_call_enter(th, (const void *)(uintptr_t)cb, &agent, &thread);
	if (!agent)
		return err;
	/* A record being claimed has no owner's tid yet: nothing it holds. */
	if (err == TD_OK && thread.tid <= 0)
		err = TD_NOTHR;
	if (err == TD_OK)
		err = tddb_threads_now(agent, &threads, &count);
	if (err == TD_OK)
		err = tddb_sync_objects(agent, threads, count, &objects, &nobjects);
	for (uint32_t i = 0; err == TD_OK && i < nobjects; i++) {
		td_synchandle_t sh = { .sh_ta_p = agent, .sh_unique = (psaddr_t)(uintptr_t)objects[i].address };
		td_syncinfo_t info;

		if (objects[i].type != TD_SYNC_MUTEX && objects[i].type != TD_SYNC_RWLOCK)
			continue;
		/* An object whose memory cannot be read now (unmapped since
		 * its waiter recorded it) holds nothing we can show. */
		if (tddb_sync_info(agent, objects[i].address, objects[i].type, threads, count, &info) != TD_OK)
			continue;
		if (info.si_owner_lid != thread.tid)
			continue;
		if (cb(&sh, cbdata) != 0)
			break;
	}
	free(objects);
	free(threads);
	tddb_agent_leave(agent);
	return err;
}
