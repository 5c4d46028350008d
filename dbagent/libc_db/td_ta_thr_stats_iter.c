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

	/* Every field named (the rest, padding included, zero): a walk
	 * hands out every thread, so no memset first. */
	*out = (td_thr_stats_ns_t){
		.size = sizeof(*out),
		.state = thread->state,
		.tid = thread->state == TDSTAT_STATE_FREE ? 0 : thread->tid,
		.kind = blocked ? thread->kind : TDSTAT_WAIT_KIND_COUNT,
		.record = thread->index,
		.generation = thread->generation,
		/* The detail keeps the last wait's object after it ended:
		 * only the current wait's is news. */
		.object = blocked ? thread->object : 0,
		.site = blocked ? thread->site : 0,
		.since_ns = thread->since_ns,
		.lwps_ns = thread->tracked_ns,
		.runnable_ns = thread->runnable_ns,
		.idle_ns = thread->tracked_ns - thread->runnable_ns,
		.kinds = thread->detail ? TDSTAT_WAIT_KIND_COUNT : 0,
	};
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
	struct tddb_cpu_ahead ahead = { .taken = false, .moved_on = false };
	struct tddb_snapshot snapshot;
	struct td_thragent *agent;
	td_ta_stats_ns_t stats;
	td_err_e err;

	err = tddb_agent_enter(ta, &agent);
	if (err != TD_OK)
		return err;
	if (!cb || (statsp && statsp->size < TDDB_STATS_NS_FIRST_SIZE)) {
		err = TD_ERR;
	} else {
		/* The CPU clock before the walk (stats.c): the walk's control
		 * block was read at its start, a whole walk before the
		 * process figures are made.  A walk cannot read again: one
		 * that read the clock after it, a window begun since, has
		 * its reading capped as cpu_checked_after can
		 * (ahead.moved_on is not acted on). */
		if (statsp)
			tddb_cpu_ahead(agent, false, &ahead);
		err = tddb_snapshot_visit(agent, true, hand_out, &caller, &snapshot);
	}
	if (err == TD_OK && statsp)
		err = tddb_stats_from_snapshot(agent, &snapshot, &ahead, &stats);
	tddb_agent_leave(agent);
	if (err != TD_OK)
		return err;
	if (statsp)
		tddb_stats_ns_copy_out(&stats, statsp);
	return TD_OK;
}
