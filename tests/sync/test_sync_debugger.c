/* SPDX-License-Identifier: MIT */
/*
 * The synchronization-object calls as a debugger uses them: built against
 * <tdstat/thread_db_sync.h> and the system <thread_db.h>, linked with
 * -lc_db, with its own ps_* routines (tests/dbagent/own_proc_service.c),
 * on sync_target (sync_test.py's target) parked under the shim: which
 * lock each thread sleeps on, who holds it, who else waits, what each
 * thread holds, and the thread handles behind them.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tdstat/thread_db_sync.h>

#include "own_proc_service.h"
#include "tdtest.h"

#define NAMES 7
static const char *const names[NAMES] = { "taker-a", "taker-b", "tab-writer", "tab-reader",
					   "tab-writer2", "slot-1", "slot-2" };

struct parked {
	struct tdtest_child child;
	struct ps_prochandle ph;
	td_thragent_t *ta;
	int tids[NAMES];
};

static int tid_of(const struct parked *parked, const char *name)
{
	for (int i = 0; i < NAMES; i++)
		if (!strcmp(names[i], name))
			return parked->tids[i];
	cr_assert_fail("no thread %s", name);
	return 0;
}

static void park(struct parked *parked)
{
	const char *const argv[] = { SYNC_TARGET_PATH, NULL };
	const char *const env[] = { "TDSTAT_ENABLE=1", NULL };
	struct tdtest_spawn_options options = { .preload = tdtest_shim_path(), .env = env, .pipe_stdin = true };
	char line[256], name[64];
	int tid;

	memset(parked, 0, sizeof(*parked));
	cr_assert_eq(tdtest_spawn(&parked->child, argv, &options), 0);
	for (;;) {
		cr_assert_geq(tdtest_read_line(&parked->child, line, sizeof(line), 30000), 0, "sync_target ended early");
		if (!strcmp(line, "ready"))
			break;
		cr_assert_eq(sscanf(line, "thread %63s %d", name, &tid), 2, "unexpected line %s", line);
		for (int i = 0; i < NAMES; i++)
			if (!strcmp(names[i], name))
				parked->tids[i] = tid;
	}
	parked->ph.pid = parked->child.pid;
	cr_assert_eq(td_init(), TD_OK);
	cr_assert_eq(td_ta_new(&parked->ph, &parked->ta), TD_OK);
}

static void unpark(struct parked *parked)
{
	cr_assert_eq(td_ta_delete(parked->ta), TD_OK);
	cr_assert_eq(tdtest_wait(&parked->child, 30000), 0);
}

static td_thrhandle_t thread_named(const struct parked *parked, const char *name)
{
	td_thrhandle_t th;
	td_thrinfo_t info;

	cr_assert_eq(td_ta_map_lwp2thr(parked->ta, tid_of(parked, name), &th), TD_OK, "%s has a handle", name);
	cr_assert_eq(td_thr_get_info(&th, &info), TD_OK);
	cr_assert_eq(info.ti_lid, tid_of(parked, name));
	return th;
}

static int lid_of(const td_thrhandle_t *th)
{
	td_thrinfo_t info;

	cr_assert_eq(td_thr_get_info(th, &info), TD_OK);
	return info.ti_lid;
}

struct lids {
	int count;
	int lids[64];
	td_synchandle_t objects[8];
	int object_count;
};

static int collect_lid(const td_thrhandle_t *th, void *data)
{
	struct lids *lids = data;
	td_thrinfo_t info;

	/* glibc's debuggers call back into the library from here. */
	cr_assert_eq(td_thr_get_info(th, &info), TD_OK);
	cr_assert_lt(lids->count, 64);
	lids->lids[lids->count++] = info.ti_lid;
	return 0;
}

static int collect_object(const td_synchandle_t *sh, void *data)
{
	struct lids *lids = data;

	cr_assert_lt(lids->object_count, 8);
	lids->objects[lids->object_count++] = *sh;
	return 0;
}

static int int_order(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

TestSuite(sync_debugger, .timeout = 60);

Test(sync_debugger, the_deadlock_from_outside)
{
	struct parked parked;
	td_synchandle_t beta, alpha;
	td_syncinfo_t info;
	struct lids held = { 0 };
	td_thrinfo_t thread;

	park(&parked);
	td_thrhandle_t a = thread_named(&parked, "taker-a"), b = thread_named(&parked, "taker-b");
	cr_assert_eq(td_thr_get_info(&a, &thread), TD_OK);
	cr_assert_eq(thread.ti_state, TD_THR_SLEEP);
	cr_assert_eq(td_thr_sleepinfo(&a, &beta), TD_OK);
	cr_assert_eq(td_thr_sleepinfo(&b, &alpha), TD_OK);
	cr_assert_neq(alpha.sh_unique, beta.sh_unique);

	cr_assert_eq(td_sync_get_info(&beta, &info), TD_OK);
	cr_assert_eq(info.si_type, TD_SYNC_MUTEX);
	cr_assert_neq(info.si_state.mutex_locked, 0);
	cr_assert_eq(info.si_owner_lid, tid_of(&parked, "taker-b"));
	cr_assert_eq(lid_of(&info.si_owner), tid_of(&parked, "taker-b"), "the owner's handle is taker-b's");
	cr_assert_eq(info.si_nwaiters, 1);
	cr_assert_eq(info.si_size, (int32_t)sizeof(pthread_mutex_t));
	cr_assert_eq(td_sync_get_info(&alpha, &info), TD_OK);
	cr_assert_eq(info.si_owner_lid, tid_of(&parked, "taker-a"));

	/* Each taker holds the lock the other sleeps on. */
	cr_assert_eq(td_thr_lockowner(&a, collect_object, &held), TD_OK);
	cr_assert_eq(held.object_count, 1);
	cr_assert_eq(held.objects[0].sh_unique, alpha.sh_unique);
	held.object_count = 0;
	cr_assert_eq(td_thr_lockowner(&b, collect_object, &held), TD_OK);
	cr_assert_eq(held.object_count, 1);
	cr_assert_eq(held.objects[0].sh_unique, beta.sh_unique);
	unpark(&parked);
}

Test(sync_debugger, rwlock_and_semaphore)
{
	struct parked parked;
	td_synchandle_t table, table2, slots;
	td_syncinfo_t info;
	struct lids waiters = { 0 }, held = { 0 };

	park(&parked);
	td_thrhandle_t writer = thread_named(&parked, "tab-writer"), reader = thread_named(&parked, "tab-reader");
	td_thrhandle_t writer2 = thread_named(&parked, "tab-writer2"), slot = thread_named(&parked, "slot-1");
	cr_assert_eq(td_thr_sleepinfo(&reader, &table), TD_OK);
	cr_assert_eq(td_thr_sleepinfo(&writer2, &table2), TD_OK);
	cr_assert_eq(table.sh_unique, table2.sh_unique, "both wait on table_lock");
	cr_assert_eq(td_thr_sleepinfo(&writer, &slots), TD_ERR, "the writer pauses, on no lock");

	cr_assert_eq(td_sync_get_info(&table, &info), TD_OK);
	cr_assert_eq(info.si_type, TD_SYNC_RWLOCK);
	cr_assert_neq(info.si_is_wlock, 0);
	cr_assert_eq(info.si_state.nreaders, -1);
	cr_assert_eq(info.si_owner_lid, tid_of(&parked, "tab-writer"));
	cr_assert_eq(info.si_nwaiters, 2);
	cr_assert_neq(info.si_has_waiters, 0);
	cr_assert_eq(td_sync_waiters(&table, collect_lid, &waiters), TD_OK);
	qsort(waiters.lids, (size_t)waiters.count, sizeof(int), int_order);
	int want[2] = { tid_of(&parked, "tab-reader"), tid_of(&parked, "tab-writer2") };
	qsort(want, 2, sizeof(int), int_order);
	cr_assert_eq(waiters.count, 2);
	cr_assert_eq(waiters.lids[0], want[0]);
	cr_assert_eq(waiters.lids[1], want[1]);
	cr_assert_eq(td_thr_lockowner(&writer, collect_object, &held), TD_OK);
	cr_assert_eq(held.object_count, 1);
	cr_assert_eq(held.objects[0].sh_unique, table.sh_unique);

	cr_assert_eq(td_thr_sleepinfo(&slot, &slots), TD_OK);
	cr_assert_eq(td_sync_get_info(&slots, &info), TD_OK);
	cr_assert_eq(info.si_type, TD_SYNC_SEMA);
	cr_assert_eq(info.si_state.sem_count, 0);
	cr_assert_eq(info.si_owner_lid, 0);
	cr_assert_null(info.si_owner.th_unique);
	cr_assert_eq(info.si_nwaiters, 2);
	cr_assert_eq(info.si_size, (int32_t)sizeof(sem_t));
	held.object_count = 0;
	cr_assert_eq(td_thr_lockowner(&slot, collect_object, &held), TD_OK);
	cr_assert_eq(held.object_count, 0, "a semaphore has no owner");
	unpark(&parked);
}

Test(sync_debugger, threads_are_the_kernels)
{
	struct parked parked;
	struct lids all = { 0 };
	int tasks[64], count = 0;
	char path[64];
	struct dirent *entry;
	DIR *dir;

	park(&parked);
	cr_assert_eq(td_ta_thr_iter(parked.ta, collect_lid, &all, TD_THR_ANY_STATE, TD_THR_LOWEST_PRIORITY,
				    TD_SIGNO_MASK, TD_THR_ANY_USER_FLAGS),
		     TD_OK);
	snprintf(path, sizeof(path), "/proc/%d/task", (int)parked.child.pid);
	dir = opendir(path);
	cr_assert_not_null(dir);
	while ((entry = readdir(dir)))
		if (entry->d_name[0] != '.' && count < 64)
			tasks[count++] = atoi(entry->d_name);
	closedir(dir);
	qsort(tasks, (size_t)count, sizeof(int), int_order);
	qsort(all.lids, (size_t)all.count, sizeof(int), int_order);
	cr_assert_eq(all.count, count, "every task is a tracked thread");
	for (int i = 0; i < count; i++)
		cr_assert_eq(all.lids[i], tasks[i]);

	/* Failing reads: TD_DBERR from every call. */
	td_thrhandle_t a = thread_named(&parked, "taker-a");
	td_synchandle_t sh, zeroed;
	td_syncinfo_t info;
	td_thrinfo_t thread;
	cr_assert_eq(td_thr_sleepinfo(&a, &sh), TD_OK);
	parked.ph.fail_reads = true;
	cr_assert_eq(td_thr_get_info(&a, &thread), TD_DBERR);
	cr_assert_eq(td_thr_sleepinfo(&a, &zeroed), TD_DBERR);
	cr_assert_null(zeroed.sh_unique, "Solaris': no handle on an error");
	cr_assert_eq(td_sync_get_info(&sh, &info), TD_DBERR);
	cr_assert_eq(td_ta_thr_iter(parked.ta, collect_lid, &all, TD_THR_ANY_STATE, 0, NULL, 0), TD_DBERR);
	parked.ph.fail_reads = false;
	unpark(&parked);
}
