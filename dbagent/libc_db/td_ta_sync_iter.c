/* SPDX-License-Identifier: MIT */
/*
 * Every synchronization object libc_db knows of, once each: the objects
 * of the tracking table, and the objects tracked threads are blocked on
 * now (a mutex, rwlock, condvar or semaphore wait), tracking on or off.
 * The addresses are gathered first and handed out after the reads, in
 * ascending order, so a callback may call back into libc_db.
 */
#include <stdlib.h>

#include "sync_private.h"

struct addresses {
	uint64_t *items;
	size_t count;
	size_t room;
	bool failed;
};

static void add(struct addresses *list, uint64_t address)
{
	if (list->failed || address == 0)
		return;
	if (list->count == list->room) {
		size_t room = list->room ? 2 * list->room : 256;
		uint64_t *items = realloc(list->items, room * sizeof(*items));

		if (!items) {
			list->failed = true;
			return;
		}
		list->items = items;
		list->room = room;
	}
	list->items[list->count++] = address;
}

static int from_table(const struct tddb_sync_entry *entry, void *context)
{
	add(context, entry->object);
	return 0;
}

static td_err_e from_thread(const struct tddb_thread *thread, void *context)
{
	if (thread->state == TDSTAT_STATE_BLOCKED &&
	    (thread->kind == TDSTAT_WAIT_MUTEX || thread->kind == TDSTAT_WAIT_RWLOCK ||
	     thread->kind == TDSTAT_WAIT_COND || thread->kind == TDSTAT_WAIT_SEM))
		add(context, thread->object);
	return TD_OK;
}

static int ascending(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

TDDB_EXPORT td_err_e td_ta_sync_iter(const td_thragent_t *ta, td_sync_iter_f *cb, void *cbdata)
{
	struct addresses list = { 0 };
	struct tddb_sync_block block;
	struct tddb_snapshot snapshot;
	struct td_thragent *agent;
	td_err_e err;

	err = tddb_agent_enter(ta, &agent);
	if (err != TD_OK)
		return err;
	if (!cb) {
		tddb_agent_leave(agent);
		return TD_ERR;
	}
	err = tddb_snapshot_visit(agent, true, from_thread, &list, &snapshot);
	if (err == TD_OK) {
		err = tddb_sync_block(agent, &block);
		if (err == TD_OK)
			err = tddb_sync_walk(agent, &block, from_table, &list);
		else if (err == TD_NOCAPAB)
			err = TD_OK;
	}
	tddb_agent_leave(agent);
	if (err == TD_OK && list.failed)
		err = TD_MALLOC;
	if (err == TD_OK && list.count) {
		qsort(list.items, list.count, sizeof(*list.items), ascending);
		for (size_t i = 0; i < list.count; i++) {
			td_synchandle_t handle = { (td_thragent_t *)ta, (psaddr_t)(uintptr_t)list.items[i] };

			if (i > 0 && list.items[i] == list.items[i - 1])
				continue;
			if (cb(&handle, cbdata) != 0)
				break;
		}
	}
	free(list.items);
	return err;
}
