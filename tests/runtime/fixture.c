/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "fixture.h"

#include <dlfcn.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FX_READ_TRIES 100000

#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)
#define STORE(field, value) __atomic_store_n(&(field), (value), __ATOMIC_SEQ_CST)

void fx_die(const char *format, ...)
{
	va_list args;

	fflush(stdout);
	va_start(args, format);
	fputs("fixture: ", stderr);
	vfprintf(stderr, format, args);
	fputc('\n', stderr);
	va_end(args);
	_exit(99);
}

struct tdstat_region *fx_region(void)
{
	static struct tdstat_region *region;

	if (!region) {
		region = dlsym(RTLD_DEFAULT, TDSTAT_REGION_SYMBOL);
		if (!region)
			fx_die("no %s symbol: is the shim preloaded?", TDSTAT_REGION_SYMBOL);
	}
	return region;
}

pid_t fx_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

uint64_t fx_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void fx_spin_ns(uint64_t ns)
{
	uint64_t end = fx_now_ns() + ns;

	while (fx_now_ns() < end)
		;
}

static uint32_t records_in_use(void)
{
	struct tdstat_region *region = fx_region();
	uint32_t high_water = LOAD(region->header.status.high_water);

	return high_water < TDSTAT_RECORD_CAPACITY ? high_water : TDSTAT_RECORD_CAPACITY;
}

struct fx_record fx_read_record(uint32_t index)
{
	struct tdstat_record *record = &fx_region()->records[index];

	for (int i = 0; i < FX_READ_TRIES; i++) {
		struct fx_record copy;
		uint32_t seq = __atomic_load_n(&record->seq, __ATOMIC_ACQUIRE);
		const struct tdstat_record_copy *published = &record->copy[seq & 1];

		/* region.h's latch: the published copy, then seq unchanged. */
		copy.seq = seq;
#define FX_LOAD_FIELD(type, name, dims) copy.name = LOAD(published->name);
		TDSTAT_RECORD_COPY_FIELDS(FX_LOAD_FIELD)
#undef FX_LOAD_FIELD
		copy.settled = LOAD(record->pending_ns) <= copy.since_ns;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (LOAD(record->seq) == seq)
			return copy;
		sched_yield();
	}
	fx_die("record %u: no consistent copy in %d tries", index, FX_READ_TRIES);
}

int fx_find_record(pid_t tid)
{
	uint32_t n = records_in_use();

	for (uint32_t i = 0; i < n; i++) {
		struct fx_record copy = fx_read_record(i);

		if (copy.state != TDSTAT_STATE_FREE && copy.tid == tid)
			return (int)i;
	}
	return -1;
}

struct fx_record fx_record_of(pid_t tid)
{
	int index = fx_find_record(tid);
	struct fx_record none = { .state = TDSTAT_STATE_FREE };

	return index < 0 ? none : fx_read_record((uint32_t)index);
}

int fx_live_records(void)
{
	uint32_t n = records_in_use();
	int live = 0;

	for (uint32_t i = 0; i < n; i++)
		live += fx_read_record(i).state != TDSTAT_STATE_FREE;
	return live;
}

bool fx_wait_state(pid_t tid, uint32_t state)
{
	uint64_t deadline = fx_now_ns() + FX_TIMEOUT_MS * 1000000ull;

	while (fx_record_of(tid).state != state) {
		if (fx_now_ns() > deadline)
			return false;
		sched_yield();
	}
	return true;
}

bool fx_wait_live(int count)
{
	uint64_t deadline = fx_now_ns() + FX_TIMEOUT_MS * 1000000ull;

	while (fx_live_records() != count) {
		if (fx_now_ns() > deadline)
			return false;
		sched_yield();
	}
	return true;
}

const char *fx_state_name(uint32_t state)
{
	switch (state) {
	case TDSTAT_STATE_FREE:
		return "FREE";
	case TDSTAT_STATE_RUNNABLE:
		return "RUNNABLE";
	case TDSTAT_STATE_BLOCKED:
		return "BLOCKED";
	}
	return "INVALID";
}

const char *fx_kind_name(uint32_t kind)
{
	static const char *const names[] = {
#define FX_KIND_NAME(suffix, name) name,
		TDSTAT_WAIT_KINDS(FX_KIND_NAME)
#undef FX_KIND_NAME
	};

	return kind < TDSTAT_WAIT_KIND_COUNT ? names[kind] : "?";
}

static uint64_t process_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A new window start: now, and strictly after the old one (it is the epoch). */
static uint64_t next_window_start(void)
{
	uint64_t old = LOAD(fx_region()->header.control.window_start_ns);
	uint64_t now = fx_now_ns();

	return now > old ? now : old + 1;
}

static void bump_generation(struct tdstat_control *control)
{
	STORE(control->generation, LOAD(control->generation) + 1);
}

void fx_enable(void)
{
	struct tdstat_control *control = &fx_region()->header.control;

	STORE(control->window_start_ns, next_window_start());
	STORE(control->cpu_start_ns, process_cpu_ns());
	STORE(control->window_end_ns, TDSTAT_WINDOW_OPEN);
	bump_generation(control);
}

void fx_disable(void)
{
	struct tdstat_control *control = &fx_region()->header.control;

	if (LOAD(control->window_end_ns) != TDSTAT_WINDOW_OPEN)
		return;
	STORE(control->cpu_end_ns, process_cpu_ns());
	STORE(control->window_end_ns, fx_now_ns());
	bump_generation(control);
}

void fx_reset(void)
{
	struct tdstat_control *control = &fx_region()->header.control;
	uint64_t start = next_window_start();

	if (LOAD(control->window_end_ns) == TDSTAT_WINDOW_OPEN) {
		STORE(control->cpu_start_ns, process_cpu_ns());
		STORE(control->window_start_ns, start);
	} else {
		STORE(control->window_start_ns, start);
		STORE(control->window_end_ns, start);
	}
	bump_generation(control);
}

struct fx_snapshot fx_snapshot(void)
{
	struct tdstat_region *region = fx_region();
	struct fx_snapshot snapshot = { 0 };
	uint64_t start, end, exit_ns, now;
	uint32_t n = records_in_use();
	struct fx_record *copies = calloc(n ? n : 1, sizeof(*copies));

	if (!copies)
		fx_die("out of memory");
	start = LOAD(region->header.control.window_start_ns);
	end = LOAD(region->header.control.window_end_ns);
	exit_ns = LOAD(region->header.status.exit_ns);
	for (uint32_t i = 0; i < n; i++)
		copies[i] = fx_read_record(i);
	now = fx_now_ns();
	snapshot.enabled = end == TDSTAT_WINDOW_OPEN;
	if (snapshot.enabled || end > now)
		end = now;
	if (exit_ns && exit_ns < end)
		end = exit_ns;
	snapshot.window_ns = end > start ? end - start : 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct fx_record *r = &copies[i];
		uint64_t open_from = r->epoch_ns != start ? start : r->since_ns > start ? r->since_ns : start;
		uint64_t open = end > open_from ? end - open_from : 0;

		if (r->state > TDSTAT_STATE_BLOCKED) {
			snapshot.impossible++;
			continue;
		}
		if (r->epoch_ns == start) {
			/* READER.md's clamp: a thread that changed state while a
			 * disable was being written may have counted up to that
			 * instant past the window's end. */
			uint64_t tracked = r->acc_tracked_ns < snapshot.window_ns ? r->acc_tracked_ns
										 : snapshot.window_ns;
			if (r->acc_runnable_ns > r->acc_tracked_ns)
				snapshot.impossible++;
			snapshot.tracked_ns += tracked;
			snapshot.runnable_ns += r->acc_runnable_ns < tracked ? r->acc_runnable_ns : tracked;
		}
		if (r->state == TDSTAT_STATE_FREE)
			continue;
		snapshot.live++;
		snapshot.tracked_ns += open;
		if (r->state == TDSTAT_STATE_RUNNABLE)
			snapshot.runnable_ns += open;
	}
	free(copies);
	snapshot.idle_ns = snapshot.tracked_ns - snapshot.runnable_ns;
	return snapshot;
}

void fx_print_snapshot(const char *name, const struct fx_snapshot *s)
{
	printf("%s.enabled=%d\n", name, s->enabled);
	printf("%s.window_ns=%llu\n", name, (unsigned long long)s->window_ns);
	printf("%s.tracked_ns=%llu\n", name, (unsigned long long)s->tracked_ns);
	printf("%s.runnable_ns=%llu\n", name, (unsigned long long)s->runnable_ns);
	printf("%s.idle_ns=%llu\n", name, (unsigned long long)s->idle_ns);
	printf("%s.live=%d\n", name, s->live);
	printf("%s.impossible=%d\n", name, s->impossible);
}
