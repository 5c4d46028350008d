/* SPDX-License-Identifier: MIT */
/*
 * `-s`: per-object statistics (Solaris' td_sync_get_stats, tracking on),
 * one row per tracked object, heaviest first by sleep time (the time
 * threads spent blocked on it), named as -w names objects, then the
 * table's use and overflow (td_ta_sync_table); and
 * `tdstat sync enable|disable PID`.  Everything through libc_db.
 */
#include "format.h"

#include <stdlib.h>
#include <string.h>

/* The wait kind an object's name is looked up as (-w's names). */
int tdstat_sync_wait_kind(uint32_t type)
{
	switch (type) {
	case TD_SYNC_COND:
		return TDSTAT_WAIT_COND;
	case TD_SYNC_RWLOCK:
		return TDSTAT_WAIT_RWLOCK;
	case TD_SYNC_SEMA:
		return TDSTAT_WAIT_SEM;
	default:
		return TDSTAT_WAIT_MUTEX;
	}
}

static uint64_t sleep_of(const td_syncstats_t *stats)
{
	switch (stats->ss_info.si_type) {
	case TD_SYNC_MUTEX:
		return stats->ss_un.mutex.mutex_sleep_time;
	case TD_SYNC_COND:
		return stats->ss_un.cond.cond_wait_sleep_time + stats->ss_un.cond.cond_timedwait_sleep_time;
	case TD_SYNC_RWLOCK:
		return stats->ss_un.rwlock.rw_rdlock_sleep_time + stats->ss_un.rwlock.rw_wrlock_sleep_time;
	case TD_SYNC_SEMA:
		return stats->ss_un.sema.sema_wait_sleep_time;
	default:
		return 0;
	}
}

struct handles {
	uint64_t *items;
	size_t count, room;
	bool failed;
};

static int collect(const td_synchandle_t *handle, void *context)
{
	struct handles *list = context;

	if (list->count == list->room) {
		size_t room = list->room ? 2 * list->room : 64;
		uint64_t *items = realloc(list->items, room * sizeof(*items));

		if (!items) {
			list->failed = true;
			return 1;
		}
		list->items = items;
		list->room = room;
	}
	list->items[list->count++] = (uint64_t)(uintptr_t)handle->sh_unique;
	return 0;
}

static int heaviest_first(const void *a, const void *b)
{
	const struct tdstat_sync_stats_row *x = a, *y = b;

	if (x->sleep_ns != y->sleep_ns)
		return x->sleep_ns < y->sleep_ns ? 1 : -1;
	return (x->object > y->object) - (x->object < y->object);
}

td_err_e tdstat_sync_rows(const td_thragent_t *agent, pid_t pid, struct tdstat_symbolizer *symbolizer,
			  struct tdstat_sync_stats_row **rows_out, size_t *count_out)
{
	struct handles list = { 0 };
	struct tdstat_sync_stats_row *rows = NULL;
	size_t count = 0;
	/* Whether tracking is on: td_sync_get_stats says TD_NOCAPAB while
	 * off, TD_NOSV for an address the table does not hold (no object
	 * lives at 8). */
	td_synchandle_t probe = { (td_thragent_t *)agent, (psaddr_t)8 };
	td_syncstats_t unused;
	td_err_e err = td_sync_get_stats(&probe, &unused);

	if (err == TD_NOSV || err == TD_OK)
		err = td_ta_sync_iter(agent, collect, &list);

	if (err == TD_OK && list.failed)
		err = TD_MALLOC;
	if (err == TD_OK && list.count && !(rows = calloc(list.count, sizeof(*rows))))
		err = TD_MALLOC;
	for (size_t i = 0; err == TD_OK && i < list.count; i++) {
		td_synchandle_t handle = { (td_thragent_t *)agent, (psaddr_t)(uintptr_t)list.items[i] };
		struct tdstat_sync_stats_row *row = &rows[count];
		td_err_e got = td_sync_get_stats(&handle, &row->stats);

		/* Objects the table does not hold (a thread blocked on one
		 * untracked) have no statistics: no row. */
		if (got == TD_NOSV)
			continue;
		if (got != TD_OK) {
			err = got;
			break;
		}
		row->pid = pid;
		row->object = list.items[i];
		row->type = row->stats.ss_info.si_type;
		row->sleep_ns = sleep_of(&row->stats);
		tdstat_object_name(symbolizer, pid, tdstat_sync_wait_kind(row->type), row->object, row->object_name,
				   sizeof(row->object_name));
		count++;
	}
	free(list.items);
	if (err != TD_OK) {
		free(rows);
		return err;
	}
	if (count)
		qsort(rows, count, sizeof(*rows), heaviest_first);
	*rows_out = rows;
	*count_out = count;
	return TD_OK;
}

td_err_e tdstat_sync_table(const td_thragent_t *agent, pid_t pid, struct tdstat_sync_table_row *row)
{
	row->pid = pid;
	return td_ta_sync_table(agent, &row->table);
}

int tdstat_sync_print(const td_thragent_t *agent, pid_t pid, struct tdstat_symbolizer *symbolizer,
		      const struct tdstat_format *format, void (*explain)(td_err_e err, const void *context),
		      const void *context)
{
	struct tdstat_sync_stats_row *rows = NULL;
	struct tdstat_sync_table_row table;
	struct tdstat_output output;
	size_t count = 0;
	td_err_e err = tdstat_sync_rows(agent, pid, symbolizer, &rows, &count);

	if (err == TD_OK)
		err = tdstat_sync_table(agent, pid, &table);
	if (err != TD_OK) {
		free(rows);
		explain(err, context);
		return TDSTAT_EXIT_FAILURE;
	}
	tdstat_output_init(&output, format, stdout, TDSTAT_OUTPUT_LIVE);
	output.sync = true;
	tdstat_output_start(&output);
	tdstat_output_begin(&output);
	for (size_t i = 0; i < count; i++)
		tdstat_output_sync_stats(&output, &rows[i]);
	tdstat_output_sync_table(&output, &table);
	tdstat_output_end(&output);
	tdstat_output_close(&output);
	free(rows);
	return output.failed ? TDSTAT_EXIT_FAILURE : TDSTAT_EXIT_OK;
}

int tdstat_sync_control(bool on, pid_t pid)
{
	struct tdstat_target target;
	td_err_e err;

	if (tdstat_target_open(&target, pid) < 0)
		return TDSTAT_EXIT_FAILURE;
	err = td_ta_sync_tracking_enable(target.agent, on);
	if (err == TD_NOCAPAB)
		tdstat_error("process %d runs a libtdshim.so without per-object tracking (ABI before 2.2)", (int)pid);
	else if (err != TD_OK)
		tdstat_target_explain(&target, err);
	tdstat_target_close(&target);
	return err == TD_OK ? TDSTAT_EXIT_OK : TDSTAT_EXIT_FAILURE;
}
