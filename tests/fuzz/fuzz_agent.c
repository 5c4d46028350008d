/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: libc_db against a hostile target.  The fuzzer's input
 * is a fake process: a 16-byte script (how ps_pglobal_lookup answers, which
 * ps_* calls fail, the td_* calls to make: op % 8 picks the call, 7 with
 * the high bit set the thread iteration, 7 with bits 0xc0 == 0x40 the
 * owner and waiter calls of <tdstat/thread_db_sync.h>, 7 with both high
 * bits set the per-object tracking calls: td_ta_sync_iter and
 * td_sync_get_stats of every object it hands out, or
 * td_ta_sync_tracking_enable) followed by
 * the bytes of the "region" that ps_pdread serves at the address the
 * lookup gave.  With WILD_READS, every other address reads the same bytes
 * (cyclically): the objects the records name (mutexes, rwlocks,
 * semaphores, condvars) are then hostile bytes too.
 *
 * The library must never crash, hang, leak or allocate without bound
 * (-malloc_limit_mb catches a size taken from the region); every TD_OK
 * result must keep docs/CONTRACT.md §2's invariants; every write must fall on a
 * control field (docs/CONTRACT.md §5: the agent writes only what enable, reset and
 * setconcurrency need) or, for td_ta_sync_tracking_enable, on the tracking
 * block's control word or a gate's tracking half (region.h, ABI 2.2).
 * Any breach aborts, which libFuzzer reports.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <proc_service.h>
#include <thread_db.h>
#include <tdstat/region.h>
#include <tdstat/thread_db_stats.h>
#include <tdstat/thread_db_sync.h>

#define SCRIPT_SIZE 16
#define REGION_ADDRESS ((uintptr_t)0x7f0000100000u)

enum flag {
	FAIL_WRITES = 1,       /* ps_pdwrite fails */
	ZEROS_PAST_END = 2,    /* reads past the image give zeros instead of PS_BADADDR */
	BAD_PID = 4,           /* ps_getpid answers -1 */
	FAIL_AFTER = 8,        /* reads fail after script[2] successful ones */
	ODD_SEQ_READS = 16,    /* every other record read sees an odd seq */
	WILD_READS = 32,       /* addresses outside the image read its bytes, cyclically */
};

struct ps_prochandle {
	unsigned char *image;
	size_t size;
	uint8_t lookup, flags, fail_after;
	unsigned long reads;
	uintptr_t region;        /* where td_ta_new found the region (resolve_region) */
	uint16_t control_offset; /* from the header td_ta_new accepted */
	uint32_t sync_offset;    /* of the tracking block, from the same header */
	bool have_agent;
};

ps_err_e ps_pglobal_lookup(struct ps_prochandle *ph, const char *object, const char *name, psaddr_t *address)
{
	if (!name || strcmp(name, TDSTAT_REGION_SYMBOL) != 0)
		return PS_NOSYM;
	switch (ph->lookup % 5) {
	case 1: return PS_NOSYM;
	case 2: return PS_ERR;
	case 3: *address = 0; return PS_OK;
	case 4: *address = (psaddr_t)(REGION_ADDRESS + 1); return PS_OK; /* misaligned */
	default: *address = (psaddr_t)REGION_ADDRESS; return PS_OK;
	}
}

ps_err_e ps_pdread(struct ps_prochandle *ph, psaddr_t address, void *buffer, size_t size)
{
	uintptr_t at = (uintptr_t)address;
	size_t offset, available;

	ph->reads++;
	if ((ph->flags & FAIL_AFTER) && ph->reads > ph->fail_after)
		return PS_ERR;
	if ((ph->flags & WILD_READS) && ph->size &&
	    (at < REGION_ADDRESS || at - REGION_ADDRESS >= ph->size || size > ph->size - (at - REGION_ADDRESS))) {
		for (size_t i = 0; i < size; i++)
			((unsigned char *)buffer)[i] = ph->image[(at + i) % ph->size];
		return PS_OK;
	}
	if (at < REGION_ADDRESS)
		return PS_BADADDR;
	offset = at - REGION_ADDRESS;
	available = offset < ph->size ? ph->size - offset : 0;
	if (size > available && !(ph->flags & ZEROS_PAST_END))
		return PS_BADADDR;
	memset(buffer, 0, size);
	memcpy(buffer, ph->image + (offset < ph->size ? offset : 0), size < available ? size : available);
	if ((ph->flags & ODD_SEQ_READS) && offset >= 256 && (ph->reads & 1))
		((unsigned char *)buffer)[0] |= 1;
	return PS_OK;
}

/* td_ta_sync_tracking_enable's writes: the tracking block's control word
 * and the gates' tracking halves. */
static bool sync_write(const struct ps_prochandle *ph, uintptr_t at, size_t size)
{
	size_t in_block;

	if (!ph->have_agent || !ph->sync_offset || at < ph->region + ph->sync_offset)
		return false;
	in_block = at - ph->region - ph->sync_offset;
	return (size == 8 && in_block == offsetof(struct tdstat_sync_header, control)) ||
	       (size == 2 && (in_block == offsetof(struct tdstat_sync_header, gate_mutex.half.tracking) ||
			      in_block == offsetof(struct tdstat_sync_header, gate_rwlock.half.tracking) ||
			      in_block == offsetof(struct tdstat_sync_header, gate_sem_wait.half.tracking) ||
			      in_block == offsetof(struct tdstat_sync_header, gate_sem_post.half.tracking)));
}

/* A write lands in the image only where reads would serve it from there. */
static void store(struct ps_prochandle *ph, uintptr_t at, const void *buffer, size_t size)
{
	if (at >= REGION_ADDRESS && at - REGION_ADDRESS <= ph->size && size <= ph->size - (at - REGION_ADDRESS))
		memcpy(ph->image + (at - REGION_ADDRESS), buffer, size);
}

ps_err_e ps_pdwrite(struct ps_prochandle *ph, psaddr_t address, const void *buffer, size_t size)
{
	uintptr_t at = (uintptr_t)address;
	size_t field;

	if (sync_write(ph, at, size)) {
		if (ph->flags & FAIL_WRITES)
			return PS_ERR;
		store(ph, at, buffer, size);
		return PS_OK;
	}
	if (!ph->have_agent || at < ph->region + ph->control_offset) {
		fprintf(stderr, "fuzz_agent: write outside the control block\n");
		abort();
	}
	field = at - ph->region - ph->control_offset;
	if (!((size == 8 && field % 8 == 0 && field <= offsetof(struct tdstat_control, generation)) ||
	      (size == 8 && field == offsetof(struct tdstat_control, rewriting)) ||
	      /* ABI 2.1: enable and reset write the wall-clock anchor too. */
	      (size == 8 && field == offsetof(struct tdstat_control, realtime_offset_ns)) ||
	      (size == 4 && field == offsetof(struct tdstat_control, r_concurrency)))) {
		fprintf(stderr, "fuzz_agent: write of %zu bytes at control+%zu\n", size, field);
		abort();
	}
	if (ph->flags & FAIL_WRITES)
		return PS_ERR;
	store(ph, at, buffer, size);
	return PS_OK;
}

ps_err_e ps_ptread(struct ps_prochandle *ph, psaddr_t address, void *buffer, size_t size)
{
	return ps_pdread(ph, address, buffer, size);
}

ps_err_e ps_ptwrite(struct ps_prochandle *ph, psaddr_t address, const void *buffer, size_t size)
{
	return ps_pdwrite(ph, address, buffer, size);
}

pid_t ps_getpid(struct ps_prochandle *ph)
{
	return (ph->flags & BAD_PID) ? -1 : getpid();
}

static void check_fractions(const td_ta_stats_t *s)
{
	int den = s->nlwps_den;

	if (den <= 0 || s->nrunnable_den != den || s->a_concurrency_den != den || s->nidle_den != den ||
	    s->a_concurrency_num < 0 || s->a_concurrency_num > s->nrunnable_num || s->nrunnable_num > s->nlwps_num ||
	    s->nidle_num != s->nlwps_num - s->nrunnable_num || s->nthreads < 0) {
		fprintf(stderr, "fuzz_agent: fractions break the invariants: %d/%d %d/%d %d/%d %d/%d\n",
			s->a_concurrency_num, s->a_concurrency_den, s->nrunnable_num, s->nrunnable_den, s->nlwps_num,
			s->nlwps_den, s->nidle_num, s->nidle_den);
		abort();
	}
}

static void check_integrals(const td_ta_stats_ns_t *s)
{
	if (s->running_ns > s->runnable_ns || s->runnable_ns > s->lwps_ns || s->idle_ns != s->lwps_ns - s->runnable_ns ||
	    s->running_ns > s->cpu_ns || s->nthreads < 0 || s->size != sizeof(*s)) {
		fprintf(stderr, "fuzz_agent: integrals break the invariants\n");
		abort();
	}
}

/* td_ta_thr_stats_iter: each record keeps the invariants, and the
 * records add up to the process figures of the same call: by kind too,
 * unless some record had no breakdown (`kinds` 0: time in a newer
 * minor's kind, which the process figures share out, thread_db_stats.h). */
struct thread_sums {
	uint64_t lwps, runnable, by_kind[TDSTAT_WAIT_KIND_COUNT];
	bool without_kinds;
};

static int add_thread(const td_thr_stats_ns_t *t, void *data)
{
	struct thread_sums *sums = data;
	uint64_t kinds = 0;

	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++) {
		kinds += t->idle_by_kind_ns[k];
		sums->by_kind[k] += t->idle_by_kind_ns[k];
	}
	/* A BLOCKED thread's kind is one this library names, or
	 * TDSTAT_WAIT_KIND_COUNT for a newer minor's; never a number past. */
	if (t->runnable_ns > t->lwps_ns || t->idle_ns != t->lwps_ns - t->runnable_ns || t->state > TDSTAT_STATE_BLOCKED ||
	    (t->kinds && kinds != t->idle_ns) || (!t->kinds && kinds != 0) || t->kind > TDSTAT_WAIT_KIND_COUNT ||
	    (t->state == TDSTAT_STATE_BLOCKED ? false : t->object != 0 || t->kind != TDSTAT_WAIT_KIND_COUNT)) {
		fprintf(stderr, "fuzz_agent: a thread breaks the invariants\n");
		abort();
	}
	sums->without_kinds |= t->kinds == 0;
	sums->lwps += t->lwps_ns;
	sums->runnable += t->runnable_ns;
	return 0;
}

static void check_thread_sums(const struct thread_sums *sums, const td_ta_stats_ns_t *s)
{
	bool kinds_within = true;

	/* A record without a breakdown still took part in the process's
	 * kinds (its named time, and the share of the rest): the records
	 * with one never add up to more than the process in any kind. */
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		kinds_within = kinds_within && sums->by_kind[k] <= s->idle_by_kind_ns[k];
	check_integrals(s);
	if (sums->lwps != s->lwps_ns || sums->runnable != s->runnable_ns || !kinds_within ||
	    (!sums->without_kinds && memcmp(sums->by_kind, s->idle_by_kind_ns, sizeof(sums->by_kind)) != 0)) {
		fprintf(stderr, "fuzz_agent: threads do not add up to the process\n");
		abort();
	}
}

/*
 * The synchronization-object calls from every thread handle the
 * iteration gives: handles of this agent only, types and counts within
 * their ranges, errors from the documented set.
 */
struct sync_walk {
	td_thragent_t *ta;
	unsigned threads, calls;
};

static void sync_error(td_err_e err)
{
	if (err != TD_OK && err != TD_DBERR && err != TD_MALLOC && err != TD_NOTHR && err != TD_ERR) {
		fprintf(stderr, "fuzz_agent: unexpected sync error %d\n", (int)err);
		abort();
	}
}

static int count_handle(const td_thrhandle_t *th, void *data)
{
	struct sync_walk *walk = data;

	if (th->th_ta_p != walk->ta) {
		fprintf(stderr, "fuzz_agent: a thread handle of another agent\n");
		abort();
	}
	walk->calls++;
	return 0;
}

static int count_object(const td_synchandle_t *sh, void *data)
{
	struct sync_walk *walk = data;

	if (sh->sh_ta_p != walk->ta || !sh->sh_unique) {
		fprintf(stderr, "fuzz_agent: a sync handle of another agent\n");
		abort();
	}
	walk->calls++;
	return 0;
}

static int sync_thread(const td_thrhandle_t *th, void *data)
{
	struct sync_walk *walk = data;
	td_thrinfo_t info;
	td_synchandle_t sh;
	td_syncinfo_t si;
	td_err_e err;

	count_handle(th, data);
	walk->threads++;
	err = td_thr_get_info(th, &info);
	sync_error(err);
	if (err == TD_OK && info.ti_state != TD_THR_SLEEP && info.ti_state != TD_THR_ACTIVE)
		abort();
	sync_error(td_thr_lockowner(th, count_object, walk));
	err = td_thr_sleepinfo(th, &sh);
	sync_error(err);
	if (err != TD_OK) {
		if (sh.sh_unique || sh.sh_ta_p)
			abort(); /* Solaris': no handle unless TD_OK */
		return 0;
	}
	err = td_sync_get_info(&sh, &si);
	sync_error(err);
	if (err == TD_OK && (si.si_type > TD_SYNC_RWLOCK || si.si_sv_addr != sh.sh_unique || si.si_ta_p != walk->ta ||
			     (si.si_owner.th_unique && si.si_owner.th_ta_p != walk->ta))) {
		fprintf(stderr, "fuzz_agent: sync info out of range\n");
		abort();
	}
	sync_error(td_sync_waiters(&sh, count_handle, walk));
	return 0;
}

static td_err_e sync_calls(td_thragent_t *ta, uint8_t op)
{
	struct sync_walk walk = { .ta = ta };
	td_thrhandle_t th = { .th_ta_p = ta, .th_unique = (psaddr_t)(REGION_ADDRESS + op * 8u) };
	td_thrinfo_t info;
	td_err_e err;

	err = td_ta_thr_iter(ta, sync_thread, &walk, TD_THR_ANY_STATE, TD_THR_LOWEST_PRIORITY, TD_SIGNO_MASK,
			     TD_THR_ANY_USER_FLAGS);
	if (err != TD_OK && err != TD_DBERR && err != TD_MALLOC)
		abort();
	/* A handle the script makes up: a record's, or none. */
	err = td_thr_get_info(&th, &info);
	if (err != TD_OK && err != TD_BADTH && err != TD_NOTHR && err != TD_DBERR && err != TD_MALLOC)
		abort();
	if (td_ta_map_lwp2thr(ta, op, &th) == TD_OK && th.th_ta_p != ta)
		abort();
	return TD_OK;
}

static void check_error(td_err_e err)
{
	/* What a hostile or failing target may produce; never TD_BADTA etc. */
	if (err != TD_OK && err != TD_DBERR && err != TD_VERSION && err != TD_MALLOC) {
		fprintf(stderr, "fuzz_agent: unexpected error %d\n", (int)err);
		abort();
	}
}

/* The per-object calls: every object td_ta_sync_iter hands out, its
 * statistics (bounded: a hostile table may claim many). */
struct sync_visit {
	td_thragent_t *ta;
	unsigned visited;
};

static int visit_object(const td_synchandle_t *handle, void *context)
{
	struct sync_visit *visit = context;
	td_syncstats_t stats;
	td_err_e err;

	if (handle->sh_ta_p != visit->ta || handle->sh_unique == 0)
		abort();
	err = td_sync_get_stats(handle, &stats);
	if (err == TD_OK && (stats.ss_info.si_sv_addr != handle->sh_unique || stats.ss_info.si_type > TD_SYNC_RWLOCK))
		abort();
	if (err != TD_NOSV && err != TD_NOCAPAB)
		check_error(err);
	return ++visit->visited >= 64;
}

static td_err_e tracking_calls(td_thragent_t *ta, uint8_t op)
{
	struct sync_visit visit = { ta, 0 };

	td_sync_table_t table;
	td_err_e err;

	if (op & 0x20)
		return td_ta_sync_tracking_enable(ta, op & 1);
	err = td_ta_sync_table(ta, &table);
	if (err == TD_OK && table.st_used > table.st_capacity)
		abort();
	if (err != TD_NOCAPAB)
		check_error(err);
	return td_ta_sync_iter(ta, visit_object, &visit);
}

/*
 * The region and header td_ta_new will accept, found the way it finds
 * them (docs/CONTRACT.md: the symbol's address, or one hop through a
 * stood-down copy's `elsewhere`), with the same reads in the same order
 * on a copy of the process, so that the read counter (FAIL_AFTER,
 * ODD_SEQ_READS) and the cyclic bytes of WILD_READS give the agent and
 * this check the same header.  Whatever the agent refuses writes nothing.
 */
static void resolve_region(struct ps_prochandle *ph)
{
	struct ps_prochandle copy = *ph;
	struct tdstat_region_header header = { 0 };
	psaddr_t region;

	ph->region = REGION_ADDRESS;
	if (ps_pglobal_lookup(&copy, NULL, TDSTAT_REGION_SYMBOL, &region) != PS_OK ||
	    ps_pdread(&copy, region, &header, sizeof(header)) != PS_OK)
		return;
	if (header.magic == TDSTAT_REGION_MAGIC_ELSEWHERE) {
		region = (psaddr_t)(uintptr_t)header.elsewhere;
		memset(&header, 0, sizeof(header));
		if (ps_pdread(&copy, region, &header, sizeof(header)) != PS_OK)
			return;
	}
	ph->region = (uintptr_t)region;
	ph->control_offset = header.layout.control_offset;
	ph->sync_offset = header.abi_minor >= 2 ? header.sync_offset : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ps_prochandle ph = { 0 };
	td_thragent_t *ta = NULL;
	td_err_e err;
	uint8_t script[SCRIPT_SIZE] = { 0 };

	memcpy(script, data, size < SCRIPT_SIZE ? size : SCRIPT_SIZE);
	ph.size = size > SCRIPT_SIZE ? size - SCRIPT_SIZE : 0;
	ph.image = malloc(ph.size ? ph.size : 1);
	if (!ph.image)
		return 0;
	if (ph.size)
		memcpy(ph.image, data + SCRIPT_SIZE, ph.size);
	ph.lookup = script[0];
	ph.flags = script[1];
	ph.fail_after = script[2];
	resolve_region(&ph);
	ph.have_agent = true;

	err = td_ta_new(&ph, &ta);
	if (err == TD_OK) {
		unsigned operations = script[3] % 13;

		for (unsigned i = 0; i < operations; i++) {
			uint8_t op = script[4 + i % 12];
			td_ta_stats_t stats;
			td_ta_stats_ns_t ns = { .size = sizeof(ns) };
			int n;

			switch (op % 8) {
			case 0:
				err = td_ta_get_stats(ta, &stats);
				if (err == TD_OK)
					check_fractions(&stats);
				break;
			case 1:
				err = td_ta_get_stats_ns(ta, &ns);
				if (err == TD_OK)
					check_integrals(&ns);
				break;
			case 2:
				err = td_ta_get_nthreads(ta, &n);
				if (err == TD_OK && n < 0)
					abort();
				break;
			case 3: err = td_ta_enable_stats(ta, 1); break;
			case 4: err = td_ta_enable_stats(ta, 0); break;
			case 5: err = td_ta_reset_stats(ta); break;
			case 6: err = td_ta_setconcurrency(ta, op); break;
			default:
				if ((op & 0xc0) == 0xc0) {
					err = tracking_calls(ta, op);
					if (err == TD_NOCAPAB)
						err = TD_OK;
					break;
				}
				if ((op & 0xc0) == 0x40) {
					err = sync_calls(ta, op);
					break;
				}
				if (op & 0x80) {
					struct thread_sums sums = { 0 };

					err = td_ta_thr_stats_iter(ta, add_thread, &sums, &ns);
					if (err == TD_OK)
						check_thread_sums(&sums, &ns);
					break;
				}
				/* the target changes under the reader */
				if (ph.size)
					ph.image[(op * 131u + i * 17u) % ph.size] ^= (uint8_t)(op | 1);
				err = TD_OK;
			}
			check_error(err);
		}
		if (td_ta_delete(ta) != TD_OK)
			abort();
	} else if (err != TD_NOLIBTHREAD) {
		check_error(err);
	}
	free(ph.image);
	return 0;
}
