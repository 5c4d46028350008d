/* SPDX-License-Identifier: MIT */
/*
 * The synchronization-object calls (docs/CONTRACT.md §9) against a fake
 * target: hand-made records and hand-made glibc objects in the fake
 * target's memory, so every answer is known exactly: types, states,
 * owners (glibc's __owner, __cur_writer), waiters, thread handles, and
 * the errors (bad handles, failing reads, unreadable objects, hostile
 * bytes).
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>

#include <tdstat/thread_db_sync.h>

#include "fake_target.h"

static struct ps_prochandle target;
static td_thragent_t *agent;
static size_t objects_at; /* offset in the image of the fake objects */

#define OBJECTS_ROOM 4096
#define MUTEX_AT 0
#define RWLOCK_AT 64
#define SEM_AT 128
#define COND_AT 192
#define MUTEX2_AT 256
#define UNMAPPED ((uint64_t)0x10) /* outside the fake target's memory */

static uint64_t object_address(size_t at)
{
	return FAKE_REGION_ADDRESS + objects_at + at;
}

static void *object_memory(size_t at)
{
	return target.image + objects_at + at;
}

static void setup(void)
{
	fake_target_init(&target, 16, 0);
	/* Room after the region for the objects the records point at. */
	objects_at = (target.image_size + 63) & ~(size_t)63;
	target.image = realloc(target.image, objects_at + OBJECTS_ROOM);
	cr_assert_not_null(target.image);
	memset(target.image + target.image_size, 0, objects_at + OBJECTS_ROOM - target.image_size);
	target.image_size = objects_at + OBJECTS_ROOM;
	cr_assert_eq(td_ta_new(&target, &agent), TD_OK);
}

static void teardown(void)
{
	td_ta_delete(agent);
	fake_target_destroy(&target);
}

TestSuite(sync_fake, .init = setup, .fini = teardown, .timeout = 10);

static void set_thread(uint32_t index, uint32_t state, int32_t tid, uint32_t kind, uint64_t object)
{
	struct tdstat_region_header *header = fake_header(&target);
	struct tdstat_record *record = fake_record(&target, index);
	struct tdstat_detail *detail = (struct tdstat_detail *)(target.image + header->details_offset) + index;
	struct tdstat_record_copy *copy;
	uint64_t now = fake_monotonic_ns();

	record->seq += 2;
	record->pending_ns = now;
	copy = fake_copy(&target, index);
	memset(copy, 0, sizeof(*copy));
	copy->state = state;
	copy->kind = kind;
	copy->tid = tid;
	copy->generation = 1;
	copy->epoch_ns = header->control.window_start_ns;
	copy->since_ns = now;
	detail->copy[record->seq & 1].object = object;
	detail->copy[record->seq & 1].site = 0x401000;
	if (index >= header->status.high_water)
		header->status.high_water = index + 1;
}

/* glibc's objects, as the test's own glibc lays them out. */
static void set_mutex(size_t at, int lock, int owner, int kind, unsigned int count)
{
	pthread_mutex_t *mutex = object_memory(at);

	memset(mutex, 0, sizeof(*mutex));
	mutex->__data.__lock = lock;
	mutex->__data.__owner = owner;
	mutex->__data.__kind = kind;
	mutex->__data.__count = count;
}

static void set_rwlock(size_t at, unsigned int readers, int writer)
{
	pthread_rwlock_t *rwlock = object_memory(at);

	memset(rwlock, 0, sizeof(*rwlock));
	rwlock->__data.__readers = readers;
	rwlock->__data.__cur_writer = writer;
}

static void set_sem(size_t at, uint32_t value, uint32_t waiters, int private)
{
	uint64_t data = (uint64_t)waiters << 32 | value;

	memset(object_memory(at), 0, sizeof(sem_t));
	memcpy(object_memory(at), &data, sizeof(data));
	memcpy((char *)object_memory(at) + 8, &private, sizeof(private));
}

#define MAX_SEEN 16
struct seen {
	int count;
	int stop_after; /* 0: never */
	td_thrhandle_t threads[MAX_SEEN];
	td_synchandle_t objects[MAX_SEEN];
};

static int remember_thread(const td_thrhandle_t *th, void *data)
{
	struct seen *seen = data;

	cr_assert_lt(seen->count, MAX_SEEN);
	seen->threads[seen->count++] = *th;
	return seen->stop_after && seen->count == seen->stop_after;
}

static int remember_object(const td_synchandle_t *sh, void *data)
{
	struct seen *seen = data;

	cr_assert_lt(seen->count, MAX_SEEN);
	seen->objects[seen->count++] = *sh;
	return seen->stop_after && seen->count == seen->stop_after;
}

static td_thrhandle_t thread_of(int32_t tid)
{
	td_thrhandle_t th;

	cr_assert_eq(td_ta_map_lwp2thr(agent, tid, &th), TD_OK, "tid %d has a handle", tid);
	return th;
}

static td_synchandle_t sync_at(uint64_t address)
{
	return (td_synchandle_t){ .sh_ta_p = agent, .sh_unique = (psaddr_t)(uintptr_t)address };
}

/* Thread 100 holds the mutex, 101 and 102 wait for it, 103 runs. */
static void mutex_scene(void)
{
	set_mutex(MUTEX_AT, 2, 100, PTHREAD_MUTEX_NORMAL, 0);
	set_thread(0, TDSTAT_STATE_RUNNABLE, 100, TDSTAT_WAIT_KIND_COUNT, 0);
	set_thread(1, TDSTAT_STATE_BLOCKED, 101, TDSTAT_WAIT_MUTEX, object_address(MUTEX_AT));
	set_thread(2, TDSTAT_STATE_BLOCKED, 102, TDSTAT_WAIT_MUTEX, object_address(MUTEX_AT));
	/* A sleeper: its object is no synchronization object. */
	set_thread(3, TDSTAT_STATE_BLOCKED, 103, TDSTAT_WAIT_SLEEP, 0);
}

Test(sync_fake, threads_are_the_records)
{
	struct seen seen = { 0 };
	td_thrinfo_t info;

	mutex_scene();
	set_thread(4, TDSTAT_STATE_FREE, 0, 0, 0);
	cr_assert_eq(td_ta_thr_iter(agent, remember_thread, &seen, TD_THR_ANY_STATE, TD_THR_LOWEST_PRIORITY,
				    TD_SIGNO_MASK, TD_THR_ANY_USER_FLAGS),
		     TD_OK);
	cr_assert_eq(seen.count, 4, "the four threads in use, not the free record");
	for (int i = 0; i < seen.count; i++) {
		cr_assert_eq(seen.threads[i].th_ta_p, agent);
		cr_assert_eq(td_thr_get_info(&seen.threads[i], &info), TD_OK);
		cr_assert_eq(info.ti_ta_p, agent);
		cr_assert_eq(info.ti_lid, 100 + i);
		cr_assert_eq(info.ti_state, i == 0 ? TD_THR_ACTIVE : TD_THR_SLEEP);
		cr_assert_eq(info.ti_type, TD_THR_USER);
		cr_assert_eq(info.ti_ro_area, seen.threads[i].th_unique);
	}
	/* The state filter, and glibc's priority rule (ours are all 0). */
	seen.count = 0;
	cr_assert_eq(td_ta_thr_iter(agent, remember_thread, &seen, TD_THR_SLEEP, 0, NULL, 0), TD_OK);
	cr_assert_eq(seen.count, 3);
	seen.count = 0;
	cr_assert_eq(td_ta_thr_iter(agent, remember_thread, &seen, TD_THR_ANY_STATE, 1, NULL, 0), TD_OK);
	cr_assert_eq(seen.count, 0);
	/* glibc's rule: a callback that answers non-zero stops it, TD_DBERR. */
	seen = (struct seen){ .stop_after = 2 };
	cr_assert_eq(td_ta_thr_iter(agent, remember_thread, &seen, TD_THR_ANY_STATE, 0, NULL, 0), TD_DBERR);
	cr_assert_eq(seen.count, 2);
	/* lwp -> handle, the same as the iteration's. */
	cr_assert_eq(thread_of(100).th_unique, seen.threads[0].th_unique);
	cr_assert_eq(thread_of(101).th_unique, seen.threads[1].th_unique);
	cr_assert_neq(thread_of(101).th_unique, thread_of(102).th_unique);
	td_thrhandle_t th;
	cr_assert_eq(td_ta_map_lwp2thr(agent, 999, &th), TD_NOLWP);
	cr_assert_eq(td_ta_map_lwp2thr(agent, 0, &th), TD_NOLWP);
}

Test(sync_fake, mutex_owner_and_waiters)
{
	struct seen seen = { 0 };
	td_synchandle_t sh = sync_at(object_address(MUTEX_AT)), none;
	td_syncinfo_t info;
	td_thrhandle_t owner, first;

	mutex_scene();
	owner = thread_of(100);
	first = thread_of(101);
	cr_assert_eq(td_thr_sleepinfo(&first, &none), TD_OK);
	cr_assert_eq(none.sh_unique, sh.sh_unique);
	cr_assert_eq(none.sh_ta_p, agent);
	/* Not blocked on a synchronization object: Solaris' TD_ERR, zeroed. */
	none.sh_unique = (psaddr_t)1;
	cr_assert_eq(td_thr_sleepinfo(&owner, &none), TD_ERR);
	cr_assert_null(none.sh_unique);
	cr_assert_null(none.sh_ta_p);
	td_thrhandle_t sleeper = thread_of(103);
	cr_assert_eq(td_thr_sleepinfo(&sleeper, &none), TD_ERR);

	cr_assert_eq(td_sync_get_info(&sh, &info), TD_OK);
	cr_assert_eq(info.si_ta_p, agent);
	cr_assert_eq(info.si_sv_addr, sh.sh_unique);
	cr_assert_eq(info.si_type, TD_SYNC_MUTEX);
	cr_assert_eq(info.si_size, (int32_t)sizeof(pthread_mutex_t));
	cr_assert_neq(info.si_state.mutex_locked, 0);
	cr_assert_eq(info.si_owner_lid, 100);
	cr_assert_eq(info.si_owner.th_unique, owner.th_unique, "the owner as a thread handle");
	cr_assert_eq(info.si_owner.th_ta_p, agent);
	cr_assert_eq(info.si_nwaiters, 2);
	cr_assert_neq(info.si_has_waiters, 0);
	cr_assert_eq(info.si_shared_type, TD_SYNC_PRIVATE);

	cr_assert_eq(td_sync_waiters(&sh, remember_thread, &seen), TD_OK);
	cr_assert_eq(seen.count, 2);
	cr_assert_eq(seen.threads[0].th_unique, thread_of(101).th_unique);
	cr_assert_eq(seen.threads[1].th_unique, thread_of(102).th_unique);
	/* Solaris' rule for its own iterators: non-zero stops, TD_OK. */
	seen = (struct seen){ .stop_after = 1 };
	cr_assert_eq(td_sync_waiters(&sh, remember_thread, &seen), TD_OK);
	cr_assert_eq(seen.count, 1);

	seen = (struct seen){ 0 };
	cr_assert_eq(td_thr_lockowner(&owner, remember_object, &seen), TD_OK);
	cr_assert_eq(seen.count, 1);
	cr_assert_eq(seen.objects[0].sh_unique, sh.sh_unique);
	seen = (struct seen){ 0 };
	td_thrhandle_t waiter = thread_of(101);
	cr_assert_eq(td_thr_lockowner(&waiter, remember_object, &seen), TD_OK);
	cr_assert_eq(seen.count, 0, "a waiter holds nothing");

	/* Released: free, no owner, the waiters still recorded. */
	set_mutex(MUTEX_AT, 0, 0, PTHREAD_MUTEX_NORMAL, 0);
	cr_assert_eq(td_sync_get_info(&sh, &info), TD_OK);
	cr_assert_eq(info.si_state.mutex_locked, 0);
	cr_assert_eq(info.si_owner_lid, 0);
	cr_assert_null(info.si_owner.th_unique);
	cr_assert_eq(info.si_nwaiters, 2);
	seen = (struct seen){ 0 };
	cr_assert_eq(td_thr_lockowner(&owner, remember_object, &seen), TD_OK);
	cr_assert_eq(seen.count, 0);
}

Test(sync_fake, mutex_kinds)
{
	td_synchandle_t sh = sync_at(object_address(MUTEX_AT));
	td_syncinfo_t info;

	mutex_scene();
	/* Recursive, held three deep, process-shared. */
	set_mutex(MUTEX_AT, 1, 100, PTHREAD_MUTEX_RECURSIVE | 0x80, 3);
	cr_assert_eq(td_sync_get_info(&sh, &info), TD_OK);
	cr_assert_eq(info.si_recursion, 3);
	cr_assert_eq(info.si_rcount, 3);
	cr_assert_eq(info.si_shared_type, TD_SYNC_SHARED);
	cr_assert_eq(info.si_owner_lid, 100);
	/* Saturated in Solaris' byte, whole in ours. */
	set_mutex(MUTEX_AT, 1, 100, PTHREAD_MUTEX_RECURSIVE, 1000);
	cr_assert_eq(td_sync_get_info(&sh, &info), TD_OK);
	cr_assert_eq(info.si_rcount, 255);
	cr_assert_eq(info.si_recursion, 1000);
	/* Robust (and PI): the lock word holds the tid and the waiters bit. */
	set_mutex(MUTEX_AT, (int)(0x80000000u | 100), 100, 0x10, 0);
	cr_assert_eq(td_sync_get_info(&sh, &info), TD_OK);
	cr_assert_neq(info.si_state.mutex_locked, 0);
	cr_assert_eq(info.si_owner_lid, 100);
	/* A robust mutex whose owner died: locked, no owner thread. */
	set_mutex(MUTEX_AT, 100 | 0x40000000, INT_MAX, 0x10, 0);
	cr_assert_eq(td_sync_get_info(&sh, &info), TD_OK);
	cr_assert_eq(info.si_owner_lid, 0);
	/* Priority protect: the ceiling in the high bits, locked below. */
	set_mutex(MUTEX_AT, (int)(7u << 19 | 1), 100, 0x40, 0);
	cr_assert_eq(td_sync_get_info(&sh, &info), TD_OK);
	cr_assert_eq(info.si_prioceiling, 7);
	cr_assert_neq(info.si_state.mutex_locked, 0);
	set_mutex(MUTEX_AT, (int)(7u << 19), 0, 0x40, 0);
	cr_assert_eq(td_sync_get_info(&sh, &info), TD_OK);
	cr_assert_eq(info.si_state.mutex_locked, 0);
}

Test(sync_fake, rwlock_writer_and_readers)
{
	td_synchandle_t sh = sync_at(object_address(RWLOCK_AT));
	struct seen seen = { 0 };
	td_syncinfo_t info;

	/* 200 write-locked it; 201 wants to read, 202 to write. */
	set_rwlock(RWLOCK_AT, 1 | 2 | 4, 200);
	set_thread(0, TDSTAT_STATE_BLOCKED, 200, TDSTAT_WAIT_SIGNAL, 0);
	set_thread(1, TDSTAT_STATE_BLOCKED, 201, TDSTAT_WAIT_RWLOCK, object_address(RWLOCK_AT));
	set_thread(2, TDSTAT_STATE_BLOCKED, 202, TDSTAT_WAIT_RWLOCK, object_address(RWLOCK_AT));
	cr_assert_eq(td_sync_get_info(&sh, &info), TD_OK);
	cr_assert_eq(info.si_type, TD_SYNC_RWLOCK);
	cr_assert_eq(info.si_state.nreaders, -1);
	cr_assert_neq(info.si_is_wlock, 0);
	cr_assert_eq(info.si_owner_lid, 200);
	cr_assert_eq(info.si_owner.th_unique, thread_of(200).th_unique);
	cr_assert_eq(info.si_nwaiters, 2);
	cr_assert_neq(info.si_has_waiters, 0);
	td_thrhandle_t writer = thread_of(200);
	cr_assert_eq(td_thr_lockowner(&writer, remember_object, &seen), TD_OK);
	cr_assert_eq(seen.count, 1);
	cr_assert_eq(seen.objects[0].sh_unique, sh.sh_unique);

	/* Three readers hold it (read phase): no owner. */
	set_rwlock(RWLOCK_AT, 3u << 3, 0);
	cr_assert_eq(td_sync_get_info(&sh, &info), TD_OK);
	cr_assert_eq(info.si_state.nreaders, 3);
	cr_assert_eq(info.si_is_wlock, 0);
	cr_assert_eq(info.si_owner_lid, 0);
	seen = (struct seen){ 0 };
	cr_assert_eq(td_thr_lockowner(&writer, remember_object, &seen), TD_OK);
	cr_assert_eq(seen.count, 0);
}

Test(sync_fake, semaphore_and_condvar_have_no_owner)
{
	td_synchandle_t sem = sync_at(object_address(SEM_AT)), cond = sync_at(object_address(COND_AT));
	struct seen seen = { 0 };
	td_syncinfo_t info;
	pthread_cond_t *memory = object_memory(COND_AT);

	set_sem(SEM_AT, 0, 2, 128);
	memset(memory, 0, sizeof(*memory));
	memory->__data.__wrefs = 1u << 3;
	set_thread(0, TDSTAT_STATE_BLOCKED, 300, TDSTAT_WAIT_SEM, object_address(SEM_AT));
	set_thread(1, TDSTAT_STATE_BLOCKED, 301, TDSTAT_WAIT_SEM, object_address(SEM_AT));
	set_thread(2, TDSTAT_STATE_BLOCKED, 302, TDSTAT_WAIT_COND, object_address(COND_AT));
	cr_assert_eq(td_sync_get_info(&sem, &info), TD_OK);
	cr_assert_eq(info.si_type, TD_SYNC_SEMA);
	cr_assert_eq(info.si_state.sem_count, 0);
	cr_assert_eq(info.si_owner_lid, 0);
	cr_assert_null(info.si_owner.th_unique);
	cr_assert_eq(info.si_nwaiters, 2);
	cr_assert_eq(info.si_shared_type, TD_SYNC_PRIVATE);
	cr_assert_eq(td_sync_waiters(&sem, remember_thread, &seen), TD_OK);
	cr_assert_eq(seen.count, 2);
	set_sem(SEM_AT, 5, 0, 0);
	cr_assert_eq(td_sync_get_info(&sem, &info), TD_OK);
	cr_assert_eq(info.si_state.sem_count, 5);
	cr_assert_eq(info.si_shared_type, TD_SYNC_SHARED);

	cr_assert_eq(td_sync_get_info(&cond, &info), TD_OK);
	cr_assert_eq(info.si_type, TD_SYNC_COND);
	cr_assert_eq(info.si_owner_lid, 0);
	cr_assert_eq(info.si_nwaiters, 1);
	for (int32_t tid = 300; tid <= 302; tid++) {
		td_thrhandle_t th = thread_of(tid);
		seen = (struct seen){ 0 };
		cr_assert_eq(td_thr_lockowner(&th, remember_object, &seen), TD_OK);
		cr_assert_eq(seen.count, 0);
	}
}

Test(sync_fake, an_address_nobody_waits_on_is_unknown)
{
	td_synchandle_t sh = sync_at(object_address(MUTEX2_AT));
	struct seen seen = { 0 };
	td_syncinfo_t info;

	mutex_scene();
	set_mutex(MUTEX2_AT, 1, 100, 0, 0);
	cr_assert_eq(td_sync_get_info(&sh, &info), TD_OK);
	cr_assert_eq(info.si_type, TD_SYNC_UNKNOWN);
	cr_assert_eq(info.si_owner_lid, 0);
	cr_assert_eq(info.si_has_waiters, 0);
	cr_assert_eq(td_sync_waiters(&sh, remember_thread, &seen), TD_OK);
	cr_assert_eq(seen.count, 0);
}

Test(sync_fake, handles_are_checked)
{
	td_synchandle_t sh = sync_at(object_address(MUTEX_AT)), out;
	struct seen seen = { 0 };
	td_syncinfo_t info;
	td_thrinfo_t thread;
	td_thrhandle_t th;

	mutex_scene();
	th = thread_of(101);
	cr_assert_eq(td_thr_get_info(NULL, &thread), TD_BADTH);
	cr_assert_eq(td_thr_get_info(&th, NULL), TD_ERR);
	cr_assert_eq(td_thr_sleepinfo(NULL, &out), TD_BADTH);
	cr_assert_eq(td_thr_sleepinfo(&th, NULL), TD_ERR);
	cr_assert_eq(td_thr_lockowner(NULL, remember_object, &seen), TD_BADTH);
	cr_assert_eq(td_thr_lockowner(&th, NULL, &seen), TD_ERR);
	cr_assert_eq(td_sync_get_info(NULL, &info), TD_BADSH);
	cr_assert_eq(td_sync_get_info(&sh, NULL), TD_ERR);
	cr_assert_eq(td_sync_get_info(&(td_synchandle_t){ agent, NULL }, &info), TD_BADSH);
	cr_assert_eq(td_sync_waiters(NULL, remember_thread, &seen), TD_BADSH);
	cr_assert_eq(td_sync_waiters(&sh, NULL, &seen), TD_ERR);
	cr_assert_eq(td_ta_thr_iter(agent, NULL, NULL, TD_THR_ANY_STATE, 0, NULL, 0), TD_ERR);
	cr_assert_eq(td_ta_map_lwp2thr(agent, 101, NULL), TD_ERR);
	/* A handle between records, past the capacity, before the region. */
	td_thrhandle_t bad = th;
	bad.th_unique = (psaddr_t)((uintptr_t)th.th_unique + 1);
	cr_assert_eq(td_thr_get_info(&bad, &thread), TD_BADTH);
	bad.th_unique = (psaddr_t)((uintptr_t)th.th_unique + 1000 * sizeof(struct tdstat_record));
	cr_assert_eq(td_thr_get_info(&bad, &thread), TD_BADTH);
	bad.th_unique = (psaddr_t)(uintptr_t)0x1000;
	cr_assert_eq(td_thr_sleepinfo(&bad, &out), TD_BADTH);
	/* A record the shim never handed out, and one whose thread ended. */
	bad.th_unique = (psaddr_t)((uintptr_t)th.th_unique + 10 * sizeof(struct tdstat_record));
	cr_assert_eq(td_thr_get_info(&bad, &thread), TD_NOTHR);
	set_thread(1, TDSTAT_STATE_FREE, 0, 0, 0);
	cr_assert_eq(td_thr_get_info(&th, &thread), TD_NOTHR);
	cr_assert_eq(td_thr_sleepinfo(&th, &out), TD_NOTHR);
	cr_assert_eq(td_thr_lockowner(&th, remember_object, &seen), TD_NOTHR);
	/* Another agent's handles, and a deleted agent's. */
	td_thrhandle_t foreign = { .th_ta_p = (td_thragent_t *)&seen, .th_unique = th.th_unique };
	cr_assert_eq(td_thr_get_info(&foreign, &thread), TD_BADTA);
	cr_assert_eq(td_sync_get_info(&(td_synchandle_t){ (td_thragent_t *)&seen, sh.sh_unique }, &info), TD_BADTA);
	td_thrhandle_t live = thread_of(100);
	cr_assert_eq(td_ta_delete(agent), TD_OK);
	cr_assert_eq(td_thr_get_info(&live, &thread), TD_BADTA);
	cr_assert_eq(td_sync_get_info(&sh, &info), TD_BADTA);
	cr_assert_eq(td_ta_thr_iter(agent, remember_thread, &seen, TD_THR_ANY_STATE, 0, NULL, 0), TD_BADTA);
	cr_assert_eq(td_ta_new(&target, &agent), TD_OK); /* for teardown */
}

Test(sync_fake, failing_reads_are_dberr)
{
	td_synchandle_t sh = sync_at(object_address(MUTEX_AT)), out;
	struct seen seen = { 0 };
	td_syncinfo_t info;
	td_thrinfo_t thread;
	td_thrhandle_t th;

	mutex_scene();
	th = thread_of(101);
	target.fail_reads = true;
	cr_assert_eq(td_ta_thr_iter(agent, remember_thread, &seen, TD_THR_ANY_STATE, 0, NULL, 0), TD_DBERR);
	cr_assert_eq(seen.count, 0);
	cr_assert_eq(td_ta_map_lwp2thr(agent, 101, &th), TD_DBERR);
	cr_assert_eq(td_thr_get_info(&th, &thread), TD_DBERR);
	cr_assert_eq(td_thr_sleepinfo(&th, &out), TD_DBERR);
	cr_assert_eq(td_thr_lockowner(&th, remember_object, &seen), TD_DBERR);
	cr_assert_eq(td_sync_get_info(&sh, &info), TD_DBERR);
	cr_assert_eq(td_sync_waiters(&sh, remember_thread, &seen), TD_DBERR);
	cr_assert_eq(seen.count, 0);
	target.fail_reads = false;
	/* The records readable, the object not: its waiter points at memory
	 * the target does not have. */
	set_thread(1, TDSTAT_STATE_BLOCKED, 101, TDSTAT_WAIT_MUTEX, UNMAPPED);
	cr_assert_eq(td_sync_get_info(&(td_synchandle_t){ agent, (psaddr_t)(uintptr_t)UNMAPPED }, &info), TD_DBERR);
	td_thrhandle_t owner = thread_of(100);
	cr_assert_eq(td_thr_lockowner(&owner, remember_object, &seen), TD_OK, "an unreadable object holds nothing");
	/* At the very top of the address space: no wrap-around. */
	set_thread(1, TDSTAT_STATE_BLOCKED, 101, TDSTAT_WAIT_MUTEX, UINT64_MAX - 8);
	cr_assert_eq(td_sync_get_info(&(td_synchandle_t){ agent, (psaddr_t)(uintptr_t)(UINT64_MAX - 8) }, &info), TD_DBERR);
}

static int count_object(const td_synchandle_t *sh, void *data)
{
	(void)sh;
	++*(int *)data;
	return 0;
}

static int count_thread(const td_thrhandle_t *th, void *data)
{
	(void)th;
	++*(int *)data;
	return 0;
}

/* Random bytes for every read, many times: answers or errors, never a
 * crash, a hang or a wrong agent in a handle. */
static int check_thread(const td_thrhandle_t *th, void *data)
{
	td_thrinfo_t info;
	td_synchandle_t sh;
	td_syncinfo_t sync;

	(void)data;
	cr_assert_eq(th->th_ta_p, agent);
	(void)td_thr_get_info(th, &info);
	if (td_thr_sleepinfo(th, &sh) == TD_OK) {
		cr_assert_eq(sh.sh_ta_p, agent);
		(void)td_sync_get_info(&sh, &sync);
	}
	return 0;
}

Test(sync_fake, hostile_bytes)
{
	mutex_scene();
	for (int round = 0; round < 200; round++) {
		td_thrhandle_t th;
		td_syncinfo_t info;

		target.random_reads = round % 2 == 0;
		target.seed = (unsigned)round;
		(void)td_ta_thr_iter(agent, check_thread, NULL, TD_THR_ANY_STATE, 0, NULL, 0);
		target.random_reads = false;
		th = thread_of(100);
		target.random_reads = true;
		int n = 0;
		(void)td_thr_lockowner(&th, count_object, &n);
		td_synchandle_t sh = sync_at(object_address(MUTEX_AT));
		(void)td_sync_get_info(&sh, &info);
		(void)td_sync_waiters(&sh, count_thread, &n);
		cr_assert_leq(n, 2 * 16, "no more calls than records");
	}
	target.random_reads = false;
}
