/* SPDX-License-Identifier: MIT */
/*
 * The tracked threads one by one (docs/CONTRACT.md §5): a visitor of the reader's
 * walk that hands each record, decoded, to the caller, beside the visitor
 * that adds up the process's figures, so both come from one snapshot and
 * agree.
 */
#include <string.h>

#include "thread_db_private.h"

struct caller {
	td_thr_stats_iter_f *callback;
	void *data;
	bool stopped;
};

static void thread_for_caller(const struct tddb_thread *thread, td_thr_stats_ns_t *out)
{
	bool blocked = thread->state == TDSTAT_STATE_BLOCKED;

	memset(out, 0, sizeof(*out));
	out->size = sizeof(*out);
	out->state = thread->state;
	out->tid = thread->state == TDSTAT_STATE_FREE ? 0 : thread->tid;
	out->kind = blocked ? thread->kind : TDSTAT_WAIT_KIND_COUNT;
	out->record = thread->index;
	out->generation = thread->generation;
	/* The detail keeps the last wait's object after it ended: only the
	 * current wait's is news. */
	out->object = blocked ? thread->object : 0;
	out->site = blocked ? thread->site : 0;
	out->since_ns = thread->since_ns;
	out->lwps_ns = thread->tracked_ns;
	out->runnable_ns = thread->runnable_ns;
	out->idle_ns = thread->tracked_ns - thread->runnable_ns;
	out->kinds = thread->detail ? TDSTAT_WAIT_KIND_COUNT : 0;
	memcpy(out->idle_by_kind_ns, thread->idle_ns, sizeof(out->idle_by_kind_ns));
}

static td_err_e hand_out(const struct tddb_thread *thread, void *context)
{
	struct caller *caller = context;
	td_thr_stats_ns_t out;

	if (caller->stopped)
		return TD_OK;
	thread_for_caller(thread, &out);
	caller->stopped = caller->callback(&out, caller->data) != 0;
	return TD_OK;
}

TDDB_EXPORT td_err_e td_ta_thr_stats_iter(const td_thragent_t *ta, td_thr_stats_iter_f *cb, void *cbdata,
					  td_ta_stats_ns_t *statsp)
{
	struct caller caller = { .callback = cb, .data = cbdata };
	struct tddb_snapshot snapshot;
	struct td_thragent *agent;
	td_ta_stats_ns_t stats;
	td_err_e err;

	err = tddb_agent_enter(ta, &agent);
	if (err != TD_OK)
		return err;
	if (!cb || (statsp && statsp->size < TDDB_STATS_NS_FIRST_SIZE))
		err = TD_ERR;
	else
		err = tddb_snapshot_visit(agent, true, hand_out, &caller, &snapshot);
	if (err == TD_OK && statsp)
		err = tddb_stats_from_snapshot(agent, &snapshot, &stats);
	tddb_agent_leave(agent);
	if (err != TD_OK)
		return err;
	if (statsp)
		tddb_stats_ns_copy_out(&stats, statsp);
	return TD_OK;
}
