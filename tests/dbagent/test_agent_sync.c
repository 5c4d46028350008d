/* SPDX-License-Identifier: MIT */
/*
 * Per-object tracking through the agent (ABI 2.2, docs/CONTRACT.md §9),
 * against hand-built tracking blocks: the statistics of each type by
 * their Solaris names, the hold-time estimate, the semaphore minimum's
 * complement, TD_NOCAPAB while off and TD_NOSV for an unknown object,
 * td_ta_sync_iter once per object, the exact writes of enable and
 * disable, and hostile blocks (bad capacity, sizes, offsets, a region of
 * an older minor) that leave the agent's other calls alone.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <tdstat/thread_db_stats.h>
#include <tdstat/thread_db_sync.h>

#include "fake_target.h"

#define RECORDS 4u
#define ENTRIES 16u
#define MUTEX_AT UINT64_C(0x5000)
#define SEMA_AT UINT64_C(0x6000)
#define COND_AT UINT64_C(0x7000)

static struct ps_prochandle target;
static td_thragent_t *agent;

TestSuite(agent_sync, .timeout = 10);

static size_t sync_offset(void)
{
	return (sizeof(struct tdstat_region_header) + RECORDS * (sizeof(struct tdstat_record) +
								   sizeof(struct tdstat_detail)) + 63) & ~(size_t)63;
}

static struct tdstat_sync_header *sync_header(void)
{
	return (struct tdstat_sync_header *)(target.image + sync_offset());
}

static struct tdstat_sync_entry *entries(void)
{
	return (struct tdstat_sync_entry *)(target.image + sync_offset() + sizeof(struct tdstat_sync_header));
}

/* As the shim claims: the first free entry from the object's hash. */
static struct tdstat_sync_entry *claim(uint64_t object, enum tdstat_sync_type type)
{
	uint64_t key = tdstat_sync_key(object, type);

	for (uint64_t i = 0; i < ENTRIES; i++) {
		struct tdstat_sync_entry *entry = &entries()[(tdstat_sync_hash(key) + i) & (ENTRIES - 1)];

		if (entry->key == 0) {
			entry->key = key;
			return entry;
		}
	}
	cr_assert_fail("table full");
	return NULL;
}

static void build(bool on)
{
	size_t size = sync_offset() + sizeof(struct tdstat_sync_header) + ENTRIES * sizeof(struct tdstat_sync_entry);
	struct tdstat_region_header *header;
	struct tdstat_sync_header *sync;

	fake_target_init(&target, RECORDS, 0);
	target.image = realloc(target.image, size);
	memset(target.image + target.image_size, 0, size - target.image_size);
	target.image_size = size;
	header = fake_header(&target);
	header->region_size = size;
	header->sync_offset = (uint32_t)sync_offset();
	header->sync_size = (uint32_t)(size - sync_offset());
	sync = sync_header();
	sync->entries_offset = sizeof(struct tdstat_sync_header);
	sync->entry_size = sizeof(struct tdstat_sync_entry);
	sync->capacity = ENTRIES;
	sync->probes = 4;
	sync->hold_sample = 64;
	sync->counts = TDSTAT_SYNC_COUNTS;
	sync->control = (UINT64_C(3) << 1) | (on ? TDSTAT_SYNC_ON : 0);
	sync->gate_mutex.half.shim = 0;
	sync->gate_rwlock.half.shim = 1;
	sync->gate_sem_wait.half.shim = 1;
	sync->gate_sem_post.half.shim = 1;

	struct tdstat_sync_entry *mutex = claim(MUTEX_AT, TDSTAT_SYNC_MUTEX);
	mutex->count[0] = 10; /* mutex_lock */
	mutex->count[1] = 3;  /* mutex_sleep */
	mutex->count[2] = 500;
	mutex->hold_samples = 2;
	mutex->hold_sampled_ns = 100;
	struct tdstat_sync_entry *sema = claim(SEMA_AT, TDSTAT_SYNC_SEMA);
	sema->count[0] = 7;   /* sema_wait */
	sema->count[5] = 8;   /* sema_post */
	sema->count[6] = 4;   /* sema_max_count */
	sema->count[7] = ~UINT64_C(2); /* sema_min_count 2, stored as its complement */
	struct tdstat_sync_entry *cond = claim(COND_AT, TDSTAT_SYNC_COND);
	cond->count[5] = 9;   /* cond_signal */
	cond->count[4] = 1;   /* cond_timedwait_timeout */
}

static void attach(void)
{
	cr_assert_eq(td_ta_new(&target, &agent), TD_OK);
}

static void finish(void)
{
	if (agent)
		td_ta_delete(agent);
	agent = NULL;
	fake_target_destroy(&target);
}

static td_err_e stats_of(uint64_t object, td_syncstats_t *stats)
{
	td_synchandle_t handle = { agent, (psaddr_t)object };

	return td_sync_get_stats(&handle, stats);
}

Test(agent_sync, statistics_by_solaris_names)
{
	td_syncstats_t stats;

	build(true);
	attach();
	cr_assert_eq(stats_of(MUTEX_AT, &stats), TD_OK);
	cr_assert_eq(stats.ss_info.si_type, TD_SYNC_MUTEX);
	cr_assert_eq(stats.ss_info.si_sv_addr, (psaddr_t)MUTEX_AT);
	cr_assert_eq(stats.ss_un.mutex.mutex_lock, 10);
	cr_assert_eq(stats.ss_un.mutex.mutex_sleep, 3);
	cr_assert_eq(stats.ss_un.mutex.mutex_sleep_time, 500);
	/* Two sampled holds of 50 ns on average, over 10 locks. */
	cr_assert_eq(stats.ss_un.mutex.mutex_hold_time, 500);
	cr_assert_eq(stats_of(SEMA_AT, &stats), TD_OK);
	cr_assert_eq(stats.ss_info.si_type, TD_SYNC_SEMA);
	cr_assert_eq(stats.ss_un.sema.sema_wait, 7);
	cr_assert_eq(stats.ss_un.sema.sema_post, 8);
	cr_assert_eq(stats.ss_un.sema.sema_max_count, 4);
	cr_assert_eq(stats.ss_un.sema.sema_min_count, 2);
	cr_assert_eq(stats_of(COND_AT, &stats), TD_OK);
	cr_assert_eq(stats.ss_info.si_type, TD_SYNC_COND);
	cr_assert_eq(stats.ss_un.cond.cond_signal, 9);
	cr_assert_eq(stats.ss_un.cond.cond_timedwait_timeout, 1);
	cr_assert_eq(stats_of(UINT64_C(0x8000), &stats), TD_NOSV);
	finish();
}

/* region.h: a try count holds the tries that succeeded; Solaris' count of
 * calls adds the failed ones, and holds begin at tries that took the
 * object as well as at locks. */
Test(agent_sync, tries_are_successes_and_failures)
{
	td_syncstats_t stats;

	build(true);
	struct tdstat_sync_entry *mutex = claim(UINT64_C(0x5100), TDSTAT_SYNC_MUTEX);
	mutex->count[0] = 10; /* mutex_lock */
	mutex->count[3] = 6;  /* mutex_try: the ones that took it */
	mutex->count[4] = 4;  /* mutex_try_fail */
	mutex->hold_samples = 2;
	mutex->hold_sampled_ns = 100;
	struct tdstat_sync_entry *rwlock = claim(UINT64_C(0x5200), TDSTAT_SYNC_RWLOCK);
	rwlock->count[3] = 5; /* rw_rdlock_try */
	rwlock->count[4] = 1;
	rwlock->count[8] = 2; /* rw_wrlock_try */
	rwlock->count[9] = 3;
	struct tdstat_sync_entry *sema = claim(UINT64_C(0x5300), TDSTAT_SYNC_SEMA);
	sema->count[3] = 9;   /* sema_trywait */
	sema->count[4] = UINT64_MAX; /* hostile: the sum saturates */
	attach();
	cr_assert_eq(stats_of(UINT64_C(0x5100), &stats), TD_OK);
	cr_assert_eq(stats.ss_un.mutex.mutex_try, 10);
	cr_assert_eq(stats.ss_un.mutex.mutex_try_fail, 4);
	cr_assert_eq(stats.ss_un.mutex.mutex_lock, 10);
	/* 50 ns a hold, over 10 locks and 6 tries that took it. */
	cr_assert_eq(stats.ss_un.mutex.mutex_hold_time, 800);
	cr_assert_eq(stats_of(UINT64_C(0x5200), &stats), TD_OK);
	cr_assert_eq(stats.ss_un.rwlock.rw_rdlock_try, 6);
	cr_assert_eq(stats.ss_un.rwlock.rw_rdlock_try_fail, 1);
	cr_assert_eq(stats.ss_un.rwlock.rw_wrlock_try, 5);
	cr_assert_eq(stats.ss_un.rwlock.rw_wrlock_try_fail, 3);
	cr_assert_eq(stats_of(UINT64_C(0x5300), &stats), TD_OK);
	cr_assert_eq(stats.ss_un.sema.sema_trywait, UINT64_MAX);
	finish();
}

/* ss_info also carries the object's state, read from its memory as
 * td_sync_get_info reads it: a mutex locked by tid 4242 past the table.
 * An object whose memory cannot be read (MUTEX_AT) keeps the table's
 * part alone. */
Test(agent_sync, info_has_the_objects_state)
{
	td_syncstats_t stats;
	pthread_mutex_t locked;
	size_t at;

	build(true);
	at = target.image_size;
	target.image = realloc(target.image, at + sizeof(locked));
	target.image_size = at + sizeof(locked);
	memset(&locked, 0, sizeof(locked));
	locked.__data.__lock = 1;
	locked.__data.__owner = 4242;
	memcpy(target.image + at, &locked, sizeof(locked));
	claim(FAKE_REGION_ADDRESS + at, TDSTAT_SYNC_MUTEX)->count[0] = 5;
	attach();
	cr_assert_eq(stats_of(FAKE_REGION_ADDRESS + at, &stats), TD_OK);
	cr_assert_eq(stats.ss_un.mutex.mutex_lock, 5);
	cr_assert_eq(stats.ss_info.si_type, TD_SYNC_MUTEX);
	cr_assert_eq(stats.ss_info.si_tracked, 1);
	cr_assert_eq(stats.ss_info.si_state.mutex_locked, 1);
	cr_assert_eq(stats.ss_info.si_owner_lid, 4242);
	cr_assert_eq(stats.ss_info.si_nwaiters, 0);
	cr_assert_eq(stats_of(MUTEX_AT, &stats), TD_OK);
	cr_assert_eq(stats.ss_info.si_type, TD_SYNC_MUTEX);
	cr_assert_eq(stats.ss_info.si_state.mutex_locked, 0);
	cr_assert_eq(stats.ss_info.si_owner_lid, 0);
	cr_assert_eq(stats.ss_un.mutex.mutex_lock, 10);
	finish();
}

/* The table as a whole: capacity, use and overflow from its header, on
 * or off; a header that claims more entries used than it has says the
 * capacity. */
Test(agent_sync, table_capacity_use_and_overflow)
{
	td_sync_table_t table;

	build(false);
	sync_header()->used = 3;
	sync_header()->overflow = 12345;
	attach();
	memset(&table, 0xff, sizeof(table));
	cr_assert_eq(td_ta_sync_table(agent, &table), TD_OK);
	cr_assert_eq(table.st_capacity, ENTRIES);
	cr_assert_eq(table.st_probes, 4);
	cr_assert_eq(table.st_used, 3);
	cr_assert_eq(table.st_overflow, 12345);
	cr_assert_eq(table.st_tracking, 0);
	cr_assert_eq(table.st_pad, 0);
	cr_assert_eq(table.st_spare[3], 0);
	cr_assert_eq(td_ta_sync_table(agent, NULL), TD_ERR);
	cr_assert_eq(td_ta_sync_table(NULL, &table), TD_BADTA);
	cr_assert_eq(td_ta_sync_tracking_enable(agent, 1), TD_OK);
	sync_header()->used = UINT64_MAX;
	cr_assert_eq(td_ta_sync_table(agent, &table), TD_OK);
	cr_assert_eq(table.st_tracking, 1);
	cr_assert_eq(table.st_used, ENTRIES);
	finish();
}

Test(agent_sync, off_is_nocapab)
{
	td_syncstats_t stats;

	build(false);
	attach();
	cr_assert_eq(stats_of(MUTEX_AT, &stats), TD_NOCAPAB);
	finish();
}

static int gather(const td_synchandle_t *handle, void *context)
{
	uint64_t *seen = context;

	seen[++seen[0]] = (uint64_t)handle->sh_unique;
	return seen[0] >= 7;
}

Test(agent_sync, iteration_once_per_object)
{
	uint64_t seen[8] = { 0 };

	build(true);
	/* The same address as another type: one handle. */
	claim(MUTEX_AT, TDSTAT_SYNC_RWLOCK);
	/* A key of no known type: not an object. */
	entries()[(tdstat_sync_hash(0x9007) + 1) & (ENTRIES - 1)].key = UINT64_C(0x9007);
	attach();
	cr_assert_eq(td_ta_sync_iter(agent, gather, seen), TD_OK);
	cr_assert_eq(seen[0], 3);
	cr_assert_eq(seen[1], MUTEX_AT);
	cr_assert_eq(seen[2], SEMA_AT);
	cr_assert_eq(seen[3], COND_AT);
	cr_assert_eq(td_ta_sync_iter(agent, NULL, seen), TD_ERR);
	finish();
}

Test(agent_sync, enable_and_disable_write_control_then_gates)
{
	build(false);
	attach();
	cr_assert_eq(td_ta_sync_tracking_enable(agent, 1), TD_OK);
	cr_assert_eq(sync_header()->control, (UINT64_C(4) << 1) | TDSTAT_SYNC_ON, "a new epoch, on");
	cr_assert_eq(sync_header()->gate_mutex.half.tracking, 1);
	cr_assert_eq(sync_header()->gate_rwlock.half.tracking, 1);
	cr_assert_eq(sync_header()->gate_sem_wait.half.tracking, 1);
	cr_assert_eq(sync_header()->gate_sem_post.half.tracking, 1);
	cr_assert_eq(sync_header()->gate_rwlock.half.shim, 1, "the shim's half untouched");
	cr_assert_eq(td_ta_sync_tracking_enable(agent, 0), TD_OK);
	cr_assert_eq(sync_header()->control, UINT64_C(4) << 1, "the epoch kept, off");
	cr_assert_eq(sync_header()->gate_mutex.word, 0);
	cr_assert_eq(sync_header()->gate_sem_post.word, 1);
	finish();
}

/* A block this reader cannot trust: TD_NOCAPAB from the sync calls, the
 * other calls unaffected. */
static void expect_refused(void)
{
	td_syncstats_t stats;
	td_ta_stats_t process;
	uint64_t seen[8] = { 0 };

	attach();
	cr_assert_eq(stats_of(MUTEX_AT, &stats), TD_NOCAPAB);
	cr_assert_eq(td_ta_sync_tracking_enable(agent, 1), TD_NOCAPAB);
	td_sync_table_t table;
	cr_assert_eq(td_ta_sync_table(agent, &table), TD_NOCAPAB);
	cr_assert_eq(td_ta_sync_iter(agent, gather, seen), TD_OK, "the blocked objects only");
	cr_assert_eq(seen[0], 0);
	cr_assert_eq(td_ta_get_stats(agent, &process), TD_OK);
	finish();
}

Test(agent_sync, capacity_not_a_power_of_two)
{
	build(true);
	sync_header()->capacity = ENTRIES - 1;
	expect_refused();
}

Test(agent_sync, entries_past_the_block)
{
	build(true);
	sync_header()->capacity = ENTRIES * 2;
	expect_refused();
}

Test(agent_sync, block_past_the_region)
{
	build(true);
	fake_header(&target)->sync_size += 64;
	expect_refused();
}

Test(agent_sync, no_probes_or_short_entries)
{
	build(true);
	sync_header()->probes = 0;
	expect_refused();
	build(true);
	sync_header()->entry_size = 64;
	expect_refused();
	build(true);
	sync_header()->capacity = UINT32_C(1) << 31;
	expect_refused();
}

Test(agent_sync, older_minor_has_no_table)
{
	build(true);
	fake_header(&target)->abi_minor = 1;
	expect_refused();
}
