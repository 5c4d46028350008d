/* SPDX-License-Identifier: MIT */
/*
 * `-w`, the wait-for graph (docs/CONTRACT.md §9): which thread waits on
 * which mutex, rwlock, condvar or semaphore now, who holds it, and every
 * cycle of "waits for an object held by" as a deadlock.
 *
 * Everything comes from libc_db's Solaris calls (<tdstat/thread_db_sync.h>):
 * td_ta_thr_iter and td_thr_get_info for the threads, td_thr_sleepinfo for
 * what each waits on, td_sync_get_info for each object's type, state and
 * owner.  A thread waits on at most one object and an object has at most
 * one owner, so each thread has at most one successor (the owner of what
 * it waits on): the cycles are found by following successors once.
 */
#include "tdstat.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <tdstat/thread_db_sync.h>

/* A tracked thread as the graph sees it. */
struct node {
	pid_t tid;
	uint64_t object;   /* what it waits on (a sync object), else 0 */
	size_t row;        /* index of that object's row */
	size_t next;       /* the owner's node, or SIZE_MAX */
	int color;         /* cycle search: 0 new, 1 on the path, 2 done */
};

struct collect {
	struct node *nodes;
	size_t count, capacity;
	bool failed;
	td_err_e err;
};

static int add_thread(const td_thrhandle_t *th, void *data)
{
	struct collect *all = data;
	td_thrinfo_t info;
	td_synchandle_t sh;
	td_err_e err;

	err = td_thr_get_info(th, &info);
	/* A thread that ended since the walk began is simply gone. */
	if (err == TD_NOTHR)
		return 0;
	if (err != TD_OK) {
		all->err = err;
		return 0;
	}
	if (all->count == all->capacity) {
		size_t capacity = all->capacity ? 2 * all->capacity : 32;
		struct node *more = realloc(all->nodes, capacity * sizeof(*more));

		if (!more) {
			all->failed = true;
			return 0;
		}
		all->nodes = more;
		all->capacity = capacity;
	}
	memset(&all->nodes[all->count], 0, sizeof(all->nodes[0]));
	all->nodes[all->count].tid = info.ti_lid;
	all->nodes[all->count].next = SIZE_MAX;
	if (info.ti_state == TD_THR_SLEEP && td_thr_sleepinfo(th, &sh) == TD_OK)
		all->nodes[all->count].object = (uint64_t)(uintptr_t)sh.sh_unique;
	all->count++;
	return 0;
}

static int by_object(const void *a, const void *b)
{
	const struct node *x = a, *y = b;

	if (x->object != y->object)
		return x->object < y->object ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static const char *type_name(uint32_t type)
{
	switch (type) {
	case TD_SYNC_MUTEX:
		return "mutex";
	case TD_SYNC_RWLOCK:
		return "rwlock";
	case TD_SYNC_COND:
		return "cond";
	case TD_SYNC_SEMA:
		return "sem";
	default:
		return "unknown";
	}
}

const char *tdstat_sync_type_name(uint32_t type)
{
	return type_name(type);
}

static void thread_name(pid_t pid, pid_t tid, char name[TDSTAT_COMM_SIZE])
{
	/* A core (pid 0) keeps no thread names. */
	if (pid <= 0 || !tdstat_kernel_thread_comm(pid, tid, name))
		name[0] = '\0';
}

/* Nodes by tid, to find an owner's node. */
struct by_tid {
	pid_t tid;
	size_t node;
};

static int tid_order(const void *a, const void *b)
{
	const struct by_tid *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* The node of tid, or SIZE_MAX. */
static size_t node_of(const struct by_tid *index, size_t count, pid_t tid)
{
	struct by_tid key = { .tid = tid };
	const struct by_tid *found = tid > 0 ? bsearch(&key, index, count, sizeof(*index), tid_order) : NULL;

	return found ? found->node : SIZE_MAX;
}

/* The rows: one per object some thread waits on, in address order. */
static td_err_e make_rows(const td_thragent_t *agent, pid_t names_pid, struct tdstat_symbolizer *symbolizer,
			  struct node *nodes, size_t count, struct tdstat_waitfor *graph)
{
	for (size_t i = 0; i < count;) {
		size_t end = i;
		struct tdstat_sync_row *row;
		td_synchandle_t sh = { .sh_ta_p = (td_thragent_t *)agent, .sh_unique = (psaddr_t)(uintptr_t)nodes[i].object };
		td_syncinfo_t info;
		td_err_e err;

		if (nodes[i].object == 0) {
			i++;
			continue;
		}
		while (end < count && nodes[end].object == nodes[i].object)
			end++;
		err = td_sync_get_info(&sh, &info);
		if (err != TD_OK)
			return err;
		row = &graph->rows[graph->count++];
		memset(row, 0, sizeof(*row));
		row->pid = graph->pid;
		row->type = info.si_type;
		row->object = nodes[i].object;
		tdstat_object_name(symbolizer, names_pid, TDSTAT_WAIT_MUTEX, row->object, row->object_name,
				   sizeof(row->object_name));
		row->locked = info.si_type == TD_SYNC_MUTEX && info.si_state.mutex_locked;
		row->write_locked = info.si_type == TD_SYNC_RWLOCK && info.si_is_wlock;
		row->readers = info.si_type == TD_SYNC_RWLOCK && !info.si_is_wlock ? info.si_state.nreaders : 0;
		row->count = info.si_type == TD_SYNC_SEMA ? info.si_state.sem_count : 0;
		row->owner = info.si_owner_lid;
		if (row->owner > 0)
			thread_name(names_pid, row->owner, row->owner_name);
		row->waiter_count = end - i;
		row->waiters = calloc(row->waiter_count, sizeof(*row->waiters));
		if (!row->waiters)
			return TD_MALLOC;
		for (size_t w = i; w < end; w++) {
			row->waiters[w - i].tid = nodes[w].tid;
			thread_name(names_pid, nodes[w].tid, row->waiters[w - i].name);
			nodes[w].row = graph->count - 1;
		}
		i = end;
	}
	return TD_OK;
}

/* The cycle that `start` closes, as steps from its lowest tid. */
static bool add_cycle(struct tdstat_waitfor *graph, const struct node *nodes, size_t start)
{
	struct tdstat_deadlock *cycle;
	size_t length = 0, lowest = start, at = start;
	struct tdstat_deadlock *more;

	do {
		if (nodes[at].tid < nodes[lowest].tid)
			lowest = at;
		length++;
		at = nodes[at].next;
	} while (at != start);
	more = realloc(graph->deadlocks, (graph->deadlock_count + 1) * sizeof(*more));
	if (!more)
		return false;
	graph->deadlocks = more;
	cycle = &graph->deadlocks[graph->deadlock_count];
	memset(cycle, 0, sizeof(*cycle));
	cycle->steps = calloc(length, sizeof(*cycle->steps));
	if (!cycle->steps)
		return false;
	graph->deadlock_count++;
	cycle->length = length;
	at = lowest;
	for (size_t s = 0; s < length; s++, at = nodes[at].next) {
		const struct tdstat_sync_row *row = &graph->rows[nodes[at].row];
		struct tdstat_deadlock_step *step = &cycle->steps[s];

		step->tid = nodes[at].tid;
		step->type = row->type;
		step->object = row->object;
		memcpy(step->object_name, row->object_name, sizeof(step->object_name));
		for (size_t w = 0; w < row->waiter_count; w++)
			if (row->waiters[w].tid == step->tid)
				memcpy(step->name, row->waiters[w].name, sizeof(step->name));
		graph->rows[nodes[at].row].in_deadlock = true;
	}
	return true;
}

static bool find_cycles(struct tdstat_waitfor *graph, struct node *nodes, size_t count)
{
	struct by_tid *index = calloc(count ? count : 1, sizeof(*index));

	if (!index)
		return false;
	for (size_t i = 0; i < count; i++)
		index[i] = (struct by_tid){ .tid = nodes[i].tid, .node = i };
	qsort(index, count, sizeof(*index), tid_order);
	for (size_t i = 0; i < count; i++)
		if (nodes[i].object != 0)
			nodes[i].next = node_of(index, count, graph->rows[nodes[i].row].owner);
	free(index);
	for (size_t i = 0; i < count; i++) {
		size_t at = i;

		/* Follow successors until a node already done, or one on
		 * this very path: then a cycle closes there. */
		while (at != SIZE_MAX && nodes[at].color == 0) {
			nodes[at].color = 1;
			at = nodes[at].next;
		}
		if (at != SIZE_MAX && nodes[at].color == 1 && !add_cycle(graph, nodes, at))
			return false;
		for (at = i; at != SIZE_MAX && nodes[at].color == 1; at = nodes[at].next)
			nodes[at].color = 2;
	}
	return true;
}

td_err_e tdstat_waitfor_read(const td_thragent_t *agent, pid_t pid, pid_t names_pid,
			     struct tdstat_symbolizer *symbolizer, struct tdstat_waitfor *graph)
{
	struct collect all = { 0 };
	td_err_e err;

	memset(graph, 0, sizeof(*graph));
	graph->pid = pid;
	err = td_ta_thr_iter(agent, add_thread, &all, TD_THR_ANY_STATE, TD_THR_LOWEST_PRIORITY, TD_SIGNO_MASK,
			     TD_THR_ANY_USER_FLAGS);
	if (err == TD_OK && all.failed)
		err = TD_MALLOC;
	if (err == TD_OK && all.err != TD_OK)
		err = all.err;
	if (err == TD_OK && all.count) {
		qsort(all.nodes, all.count, sizeof(*all.nodes), by_object);
		graph->rows = calloc(all.count, sizeof(*graph->rows));
		if (!graph->rows)
			err = TD_MALLOC;
	}
	if (err == TD_OK)
		err = make_rows(agent, names_pid, symbolizer, all.nodes, all.count, graph);
	if (err == TD_OK && !find_cycles(graph, all.nodes, all.count))
		err = TD_MALLOC;
	free(all.nodes);
	if (err != TD_OK)
		tdstat_waitfor_free(graph);
	return err;
}

void tdstat_waitfor_free(struct tdstat_waitfor *graph)
{
	for (size_t i = 0; i < graph->count; i++)
		free(graph->rows[i].waiters);
	for (size_t i = 0; i < graph->deadlock_count; i++)
		free(graph->deadlocks[i].steps);
	free(graph->rows);
	free(graph->deadlocks);
	memset(graph, 0, sizeof(*graph));
}

/* "1234 (taker-a)", or "1234" without a name. */
static size_t thread_text(char *text, size_t size, pid_t tid, const char *name)
{
	int n = name[0] ? snprintf(text, size, "%d (%s)", (int)tid, name) : snprintf(text, size, "%d", (int)tid);

	return n < 0 ? 0 : (size_t)n;
}

void tdstat_thread_text(char *text, size_t size, pid_t tid, const char *name)
{
	thread_text(text, size, tid, name);
}

void tdstat_deadlock_text(const struct tdstat_deadlock *cycle, char *text, size_t size)
{
	size_t used = 0;

	text[0] = '\0';
	for (size_t s = 0; s < cycle->length && used < size; s++) {
		const struct tdstat_deadlock_step *step = &cycle->steps[s];
		const struct tdstat_deadlock_step *owner = &cycle->steps[(s + 1) % cycle->length];

		if (s == 0) {
			used += (size_t)snprintf(text + used, size - used, "thread ");
			if (used < size)
				used += thread_text(text + used, size - used, step->tid, step->name);
		}
		if (used < size)
			used += (size_t)snprintf(text + used, size - used, "%s waits for %s %s held by thread ",
						 s ? ", which" : "", type_name(step->type), step->object_name);
		if (used < size)
			used += thread_text(text + used, size - used, owner->tid, owner->name);
	}
}
