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

/*
 * A region of a newer minor may list more wait kinds than this library
 * names (docs/READER.md, "Minors").  A thread blocked in one of them is
 * handed out blocked in no kind named here (TDSTAT_WAIT_KIND_COUNT, as
 * for a thread not blocked): its number means nothing to the caller,
 * who may index a table of our kinds by it.  A thread whose named kinds
 * do not add up to its idle time (time in such a kind, now or earlier in
 * the window) has no breakdown (`kinds` 0): the process figures share
 * that time out among the kinds, which no thread's own figures can
 * follow while the walk is under way.
 */
static bool kinds_add_up(const struct tddb_thread *thread)
{
	uint64_t named = 0;

	/* Unrolled: every record handed out comes here. */
#pragma GCC unroll 16
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		named += thread->idle_ns[k];
	return named == thread->tracked_ns - thread->runnable_ns;
}

static void thread_for_caller(const struct tddb_thread *thread, td_thr_stats_ns_t *out)
{
	bool blocked = thread->state == TDSTAT_STATE_BLOCKED;
	bool named = blocked && thread->kind < TDSTAT_WAIT_KIND_COUNT;
	bool kinds = thread->detail && kinds_add_up(thread);

	/* Every field named (the rest, padding included, zero): a walk
	 * hands out every thread, so no memset first. */
	*out = (td_thr_stats_ns_t){
		.size = sizeof(*out),
		.state = thread->state,
		.tid = thread->state == TDSTAT_STATE_FREE ? 0 : thread->tid,
		.kind = named ? thread->kind : TDSTAT_WAIT_KIND_COUNT,
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
		.kinds = kinds ? TDSTAT_WAIT_KIND_COUNT : 0,
	};
	if (kinds)
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
