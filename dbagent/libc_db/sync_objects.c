/* SPDX-License-Identifier: MIT */
/*
 * Threads and synchronization objects without per-object tracking
 * (docs/CONTRACT.md §9): the tracked threads as handles, the objects they
 * are blocked on, and each object's state from its own memory.
 *
 * The object layouts are glibc's (LP64, glibc 2.25 or later), taken from
 * the public types' field offsets where glibc publishes them and from
 * glibc's documented internal layout for sem_t.  The target's memory is
 * hostile: an object is read whole with one ps_pdread into a buffer of
 * its type's size, and every value read only selects among the answers
 * below, never an address or a count to follow.
 */
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sync_private.h"

#if !defined(__LP64__)
#error "the object layouts below are glibc's LP64 ones"
#endif

/* pthread_mutex_t (glibc's __pthread_mutex_s). */
#define MUTEX_LOCK offsetof(pthread_mutex_t, __data.__lock)
#define MUTEX_COUNT offsetof(pthread_mutex_t, __data.__count)
#define MUTEX_OWNER offsetof(pthread_mutex_t, __data.__owner)
#define MUTEX_KIND offsetof(pthread_mutex_t, __data.__kind)
#define MUTEX_KIND_TYPE_MASK 3u          /* PTHREAD_MUTEX_KIND_MASK_NP */
#define MUTEX_KIND_ROBUST 0x10u          /* PTHREAD_MUTEX_ROBUST_NORMAL_NP */
#define MUTEX_KIND_PI 0x20u              /* PTHREAD_MUTEX_PRIO_INHERIT_NP */
#define MUTEX_KIND_PP 0x40u              /* PTHREAD_MUTEX_PRIO_PROTECT_NP */
#define MUTEX_KIND_PSHARED 0x80u         /* PTHREAD_MUTEX_PSHARED_BIT */
#define MUTEX_CEILING_MASK 0xfff80000u   /* PTHREAD_MUTEX_PRIO_CEILING_MASK */
#define MUTEX_CEILING_SHIFT 19
#define FUTEX_WAITERS_BIT 0x80000000u
#define FUTEX_TID_BITS 0x3fffffffu
/* __owner of a robust mutex whose holder died, or that cannot be
 * recovered: no thread. */
#define MUTEX_OWNER_INCONSISTENT INT_MAX
#define MUTEX_OWNER_NOTRECOVERABLE (INT_MAX - 1)

/* pthread_rwlock_t (glibc's __pthread_rwlock_arch_t). */
#define RWLOCK_READERS offsetof(pthread_rwlock_t, __data.__readers)
#define RWLOCK_WRPHASE_FUTEX offsetof(pthread_rwlock_t, __data.__wrphase_futex)
#define RWLOCK_WRITERS_FUTEX offsetof(pthread_rwlock_t, __data.__writers_futex)
#define RWLOCK_CUR_WRITER offsetof(pthread_rwlock_t, __data.__cur_writer)
#define RWLOCK_SHARED offsetof(pthread_rwlock_t, __data.__shared)
#define RWLOCK_WRPHASE 1u
#define RWLOCK_WRLOCKED 2u
#define RWLOCK_RWAITING 4u
#define RWLOCK_READER_SHIFT 3
#define RWLOCK_FUTEX_USED 0x80000000u

/* pthread_cond_t: __wrefs holds the waiter references (from bit 3) and
 * the process-shared flag (bit 0). */
#define COND_WREFS offsetof(pthread_cond_t, __data.__wrefs)
#define COND_WREFS_SHARED 1u
#define COND_WREFS_SHIFT 3

/* sem_t on LP64: a 64-bit word (value in the low half, waiters in the
 * high half), then `private`: 0 for a process-shared semaphore. */
#define SEM_DATA 0
#define SEM_PRIVATE 8
#define SEM_VALUE_BITS 0xffffffffu
#define SEM_WAITERS_SHIFT 32

_Static_assert(sizeof(sem_t) >= SEM_PRIVATE + sizeof(int), "sem_t holds its data and private words");

static uint32_t u32_in(const unsigned char *bytes, size_t offset)
{
	uint32_t value;

	memcpy(&value, bytes + offset, sizeof(value));
	return value;
}

static int32_t i32_in(const unsigned char *bytes, size_t offset)
{
	int32_t value;

	memcpy(&value, bytes + offset, sizeof(value));
	return value;
}

uint32_t tddb_sync_type_of_kind(uint32_t kind)
{
	switch (kind) {
	case TDSTAT_WAIT_MUTEX:
		return TD_SYNC_MUTEX;
	case TDSTAT_WAIT_RWLOCK:
		return TD_SYNC_RWLOCK;
	case TDSTAT_WAIT_COND:
		return TD_SYNC_COND;
	case TDSTAT_WAIT_SEM:
		return TD_SYNC_SEMA;
	default:
		return TD_SYNC_UNKNOWN;
	}
}

uint32_t tddb_thread_sync_type(const struct tddb_thread_now *thread)
{
	if (thread->state != TDSTAT_STATE_BLOCKED || thread->object == 0)
		return TD_SYNC_UNKNOWN;
	return tddb_sync_type_of_kind(thread->kind);
}

/* The records in use, collected by the reader's walk. */
struct collection {
	struct tddb_thread_now *threads;
	uint32_t count;
	uint32_t room;
};

static td_err_e collect(const struct tddb_thread *thread, void *context)
{
	struct collection *all = context;
	bool blocked = thread->state == TDSTAT_STATE_BLOCKED;

	if (thread->state == TDSTAT_STATE_FREE)
		return TD_OK;
	if (all->count == all->room) {
		/* The walk visits each record once, at most the capacity td_ta_new
		 * accepted: the array is bounded by that. */
		uint32_t room = all->room ? 2 * all->room : 64;
		struct tddb_thread_now *grown = realloc(all->threads, (size_t)room * sizeof(*grown));

		if (!grown)
			return TD_MALLOC;
		all->threads = grown;
		all->room = room;
	}
	all->threads[all->count++] = (struct tddb_thread_now){
		.index = thread->index,
		.state = thread->state,
		.tid = thread->tid,
		.kind = blocked ? thread->kind : TDSTAT_WAIT_KIND_COUNT,
		/* The detail keeps the last wait's object after it ended. */
		.object = blocked ? thread->object : 0,
		.site = blocked ? thread->site : 0,
	};
	return TD_OK;
}

td_err_e tddb_threads_now(const struct td_thragent *agent, struct tddb_thread_now **threads, uint32_t *count)
{
	struct collection all = { 0 };
	struct tddb_header_view view;
	struct tddb_window window;
	td_err_e err;

	err = tddb_threads_visit(agent, true, collect, &all, &view, &window);
	if (err != TD_OK) {
		free(all.threads);
		return err;
	}
	*threads = all.threads;
	*count = all.count;
	return TD_OK;
}

static uint64_t records_base(const struct td_thragent *agent)
{
	return (uint64_t)(uintptr_t)agent->region + agent->geometry.records_offset;
}

psaddr_t tddb_thread_unique(const struct td_thragent *agent, uint32_t index)
{
	return (psaddr_t)(uintptr_t)(records_base(agent) + (uint64_t)index * agent->geometry.record_size);
}

td_err_e tddb_thread_handle_enter(const td_thrhandle_t *th, struct td_thragent **out, uint32_t *index)
{
	struct td_thragent *agent;
	uint64_t unique, base, offset;
	td_err_e err;

	if (!th)
		return TD_BADTH;
	err = tddb_agent_enter(th->th_ta_p, &agent);
	if (err != TD_OK)
		return err;
	unique = (uint64_t)(uintptr_t)th->th_unique;
	base = records_base(agent);
	offset = unique - base;
	if (unique < base || offset % agent->geometry.record_size != 0 ||
	    offset / agent->geometry.record_size >= agent->geometry.record_capacity) {
		tddb_agent_leave(agent);
		return TD_BADTH;
	}
	*index = (uint32_t)(offset / agent->geometry.record_size);
	*out = agent;
	return TD_OK;
}

td_err_e tddb_sync_handle_enter(const td_synchandle_t *sh, struct td_thragent **agent)
{
	if (!sh)
		return TD_BADSH;
	if (!sh->sh_unique) {
		/* The agent is checked first, as for every call. */
		td_err_e err = tddb_agent_enter(sh->sh_ta_p, agent);
		if (err != TD_OK)
			return err;
		tddb_agent_leave(*agent);
		return TD_BADSH;
	}
	return tddb_agent_enter(sh->sh_ta_p, agent);
}

td_err_e tddb_thread_call_enter(const td_thrhandle_t *th, const void *out, struct td_thragent **agent,
				struct tddb_thread *thread)
{
	uint32_t index;
	td_err_e err = tddb_thread_handle_enter(th, agent, &index);

	if (err != TD_OK) {
		*agent = NULL;
		return err;
	}
	if (!out)
		return TD_ERR;
	err = tddb_thread_read(*agent, index, thread);
	if (err == TD_OK && thread->state == TDSTAT_STATE_FREE)
		err = TD_NOTHR;
	return err;
}

td_err_e tddb_sync_call_enter(const td_synchandle_t *sh, const void *out, struct td_thragent **agent,
			      uint64_t *address, struct tddb_thread_now **threads, uint32_t *count)
{
	td_err_e err = tddb_sync_handle_enter(sh, agent);

	*threads = NULL;
	*count = 0;
	if (err != TD_OK) {
		*agent = NULL;
		return err;
	}
	*address = (uint64_t)(uintptr_t)sh->sh_unique;
	if (!out)
		return TD_ERR;
	return tddb_threads_now(*agent, threads, count);
}

static int object_order(const void *a, const void *b)
{
	const struct tddb_sync_object *x = a, *y = b;

	if (x->address != y->address)
		return x->address < y->address ? -1 : 1;
	return x->type < y->type ? -1 : x->type > y->type;
}

td_err_e tddb_sync_objects(const struct td_thragent *agent, const struct tddb_thread_now *threads, uint32_t count,
			   struct tddb_sync_object **objects, uint32_t *nobjects)
{
	struct tddb_sync_object *all;
	uint32_t n = 0, kept = 0;

	(void)agent;
	*objects = NULL;
	*nobjects = 0;
	if (count == 0)
		return TD_OK;
	all = malloc((size_t)count * sizeof(*all));
	if (!all)
		return TD_MALLOC;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t type = tddb_thread_sync_type(&threads[i]);

		if (type != TD_SYNC_UNKNOWN)
			all[n++] = (struct tddb_sync_object){ .address = threads[i].object, .type = type, .waiters = 1 };
	}
	qsort(all, n, sizeof(*all), object_order);
	/* One entry per address.  Two kinds of wait on one address (only a
	 * hostile or reused region shows that) keep the first type. */
	for (uint32_t i = 0; i < n; i++) {
		if (kept && all[kept - 1].address == all[i].address)
			all[kept - 1].waiters++;
		else
			all[kept++] = all[i];
	}
	if (kept == 0) {
		free(all);
		return TD_OK;
	}
	*objects = all;
	*nobjects = kept;
	return TD_OK;
}

static uint8_t saturate_u8(uint32_t value)
{
	return value > UINT8_MAX ? UINT8_MAX : (uint8_t)value;
}

static int32_t owner_tid(int32_t owner)
{
	if (owner <= 0 || owner == MUTEX_OWNER_INCONSISTENT || owner == MUTEX_OWNER_NOTRECOVERABLE)
		return 0;
	return owner;
}

/* A mutex's state: locked, owner, recursion, waiters, ceiling. */
static void mutex_decode(const unsigned char *bytes, td_syncinfo_t *info)
{
	uint32_t lock = u32_in(bytes, MUTEX_LOCK);
	uint32_t kind = u32_in(bytes, MUTEX_KIND);
	bool locked, waiters;

	if (kind & (MUTEX_KIND_PI | MUTEX_KIND_ROBUST)) {
		/* The lock word holds the owner's tid and the waiters bit. */
		locked = (lock & FUTEX_TID_BITS) != 0;
		waiters = (lock & FUTEX_WAITERS_BIT) != 0;
	} else if (kind & MUTEX_KIND_PP) {
		uint32_t state = lock & ~MUTEX_CEILING_MASK;

		locked = state != 0;
		waiters = state > 1;
		info->si_prioceiling = saturate_u8((lock & MUTEX_CEILING_MASK) >> MUTEX_CEILING_SHIFT);
	} else {
		/* 0 free, 1 locked, 2 locked and maybe waited on. */
		locked = lock != 0;
		waiters = lock > 1;
	}
	info->si_shared_type = (kind & MUTEX_KIND_PSHARED) ? TD_SYNC_SHARED : TD_SYNC_PRIVATE;
	info->si_state.mutex_locked = locked;
	info->si_has_waiters = waiters;
	if (!locked)
		return;
	info->si_owner_lid = owner_tid(i32_in(bytes, MUTEX_OWNER));
	if ((kind & MUTEX_KIND_TYPE_MASK) == PTHREAD_MUTEX_RECURSIVE) {
		info->si_recursion = u32_in(bytes, MUTEX_COUNT);
		info->si_rcount = saturate_u8(info->si_recursion);
	}
}

/* An rwlock's state: readers, or the writer. */
static void rwlock_decode(const unsigned char *bytes, td_syncinfo_t *info)
{
	uint32_t readers = u32_in(bytes, RWLOCK_READERS);

	info->si_shared_type = i32_in(bytes, RWLOCK_SHARED) != 0 ? TD_SYNC_SHARED : TD_SYNC_PRIVATE;
	info->si_has_waiters = (readers & RWLOCK_RWAITING) != 0 ||
			       (u32_in(bytes, RWLOCK_WRPHASE_FUTEX) & RWLOCK_FUTEX_USED) != 0 ||
			       (u32_in(bytes, RWLOCK_WRITERS_FUTEX) & RWLOCK_FUTEX_USED) != 0;
	if ((readers & RWLOCK_WRPHASE) && (readers & RWLOCK_WRLOCKED)) {
		info->si_is_wlock = 1;
		info->si_state.nreaders = -1;
		info->si_owner_lid = owner_tid(i32_in(bytes, RWLOCK_CUR_WRITER));
	} else if (!(readers & RWLOCK_WRPHASE)) {
		info->si_state.nreaders = (int32_t)(readers >> RWLOCK_READER_SHIFT);
	}
}

static void cond_decode(const unsigned char *bytes, td_syncinfo_t *info)
{
	uint32_t wrefs = u32_in(bytes, COND_WREFS);

	info->si_shared_type = (wrefs & COND_WREFS_SHARED) ? TD_SYNC_SHARED : TD_SYNC_PRIVATE;
	info->si_has_waiters = (wrefs >> COND_WREFS_SHIFT) != 0;
}

static void sem_decode(const unsigned char *bytes, td_syncinfo_t *info)
{
	uint64_t data;
	uint32_t value;

	memcpy(&data, bytes + SEM_DATA, sizeof(data));
	value = (uint32_t)(data & SEM_VALUE_BITS);
	info->si_shared_type = i32_in(bytes, SEM_PRIVATE) == 0 ? TD_SYNC_SHARED : TD_SYNC_PRIVATE;
	info->si_state.sem_count = value > INT32_MAX ? INT32_MAX : (int32_t)value;
	info->si_has_waiters = (data >> SEM_WAITERS_SHIFT) != 0;
}

static size_t type_size(uint32_t type)
{
	switch (type) {
	case TD_SYNC_MUTEX:
		return sizeof(pthread_mutex_t);
	case TD_SYNC_RWLOCK:
		return sizeof(pthread_rwlock_t);
	case TD_SYNC_COND:
		return sizeof(pthread_cond_t);
	case TD_SYNC_SEMA:
		return sizeof(sem_t);
	default:
		return 0;
	}
}

td_err_e tddb_sync_info(const struct td_thragent *agent, uint64_t address, uint32_t type,
			const struct tddb_thread_now *threads, uint32_t count, td_syncinfo_t *info)
{
	unsigned char bytes[64];
	size_t size = type_size(type);

	_Static_assert(sizeof(pthread_mutex_t) <= sizeof(bytes) && sizeof(pthread_rwlock_t) <= sizeof(bytes) &&
			       sizeof(pthread_cond_t) <= sizeof(bytes) && sizeof(sem_t) <= sizeof(bytes),
		       "every object fits the buffer");
	memset(info, 0, sizeof(*info));
	info->si_ta_p = (td_thragent_t *)agent;
	info->si_sv_addr = (psaddr_t)(uintptr_t)address;
	info->si_type = type;
	for (uint32_t i = 0; i < count; i++)
		if (threads[i].object == address && tddb_thread_sync_type(&threads[i]) != TD_SYNC_UNKNOWN)
			info->si_nwaiters++;
	if (size == 0) {
		info->si_has_waiters = info->si_nwaiters != 0;
		return TD_OK;
	}
	info->si_size = (int32_t)size;
	if (address > UINTPTR_MAX - size || ps_pdread(agent->ph, (psaddr_t)(uintptr_t)address, bytes, size) != PS_OK)
		return TD_DBERR;
	switch (type) {
	case TD_SYNC_MUTEX:
		mutex_decode(bytes, info);
		break;
	case TD_SYNC_RWLOCK:
		rwlock_decode(bytes, info);
		break;
	case TD_SYNC_COND:
		cond_decode(bytes, info);
		break;
	case TD_SYNC_SEMA:
		sem_decode(bytes, info);
		break;
	}
	if (info->si_nwaiters)
		info->si_has_waiters = 1;
	/* The owner as a thread handle, when a tracked thread it is. */
	if (info->si_owner_lid > 0)
		for (uint32_t i = 0; i < count; i++)
			if (threads[i].tid == info->si_owner_lid) {
				info->si_owner.th_ta_p = (td_thragent_t *)agent;
				info->si_owner.th_unique = tddb_thread_unique(agent, threads[i].index);
				break;
			}
	return TD_OK;
}
