/* SPDX-License-Identifier: MIT */
/*
 * The exported region, its initialisation, and the one routine that
 * changes a record's state.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

/* In .bss: the 2 MiB of records cost nothing until threads touch them.
 * The header is filled by tdshim_init(), magic last. */
TDSHIM_EXPORT struct tdstat_region tdstat_region __attribute__((aligned(64)));

__thread struct tdshim_thread tdshim_self TDSHIM_TLS;
int tdshim_initialised;
bool tdshim_track_reads;

enum { INIT_NONE, INIT_RUNNING, INIT_DONE };
static int init_state;
static __thread bool initialising TDSHIM_TLS;

uint64_t tdshim_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t process_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/*
 * Why the clock is read only sometimes: an interval matters to a window
 * only if it can overlap it.  While gathering is on it always can; while
 * off, only an interval that began before the window's end.  So a process
 * with gathering off never reads the clock, and a stale since_ns is
 * harmless: the next window starts after it, and readers take
 * max(since_ns, window_start_ns).
 *
 * An empty window (end <= start) is also what a reader sees between the
 * two writes of an enable (start first, then end = OPEN): there the
 * record's since_ns must not move, or the time from the new start to this
 * change would be lost once the enable completes.
 */
void tdshim_record_set_state(struct tdstat_record *record, uint32_t new_state)
{
	const struct tdstat_control *control = &tdstat_region.header.control;
	uint64_t window_start = CMM_LOAD_SHARED(control->window_start_ns);
	uint64_t window_end = CMM_LOAD_SHARED(control->window_end_ns);
	bool clocked = window_end == TDSTAT_WINDOW_OPEN ||
		       (window_start < window_end && record->since_ns < window_end);
	uint64_t now = clocked ? tdshim_now_ns() : 0;

	CMM_STORE_SHARED(record->seq, record->seq + 1);
	cmm_smp_wmb();
	if (clocked) {
		/* A record still on an older window has not changed state since
		 * this window was published, except in the gap between the
		 * controller reading its clock (window_start) and its write
		 * landing: a change made then set since_ns past window_start
		 * while reading the old window.  Counting from window_start
		 * keeps that gap's time (in the current state). */
		uint64_t from = max_u64(record->since_ns, window_start);
		if (record->epoch_ns != window_start) {
			record->epoch_ns = window_start;
			record->acc_tracked_ns = 0;
			record->acc_runnable_ns = 0;
			from = window_start;
		}
		uint64_t to = min_u64(now, window_end);
		if (to > from && record->state != TDSTAT_STATE_FREE) {
			record->acc_tracked_ns += to - from;
			if (record->state == TDSTAT_STATE_RUNNABLE)
				record->acc_runnable_ns += to - from;
		}
		record->since_ns = now;
	}
	record->state = new_state;
	cmm_smp_wmb();
	CMM_STORE_SHARED(record->seq, record->seq + 1);
}

/* Identity changes (who owns the record) go under the same sequence rule
 * so a reader never pairs one thread's tid with another's times. */
void tdshim_record_set_owner(struct tdstat_record *record, pid_t tid, bool new_claim)
{
	CMM_STORE_SHARED(record->seq, record->seq + 1);
	cmm_smp_wmb();
	record->tid = tid;
	if (new_claim)
		record->generation++;
	cmm_smp_wmb();
	CMM_STORE_SHARED(record->seq, record->seq + 1);
}

/* A claim whose thread never came to exist (pthread_create failed): the
 * slot goes back to FREE and the instant it was RUNNABLE is not counted. */
void tdshim_record_abandon(struct tdstat_record *record)
{
	CMM_STORE_SHARED(record->seq, record->seq + 1);
	cmm_smp_wmb();
	record->state = TDSTAT_STATE_FREE;
	record->tid = 0;
	cmm_smp_wmb();
	CMM_STORE_SHARED(record->seq, record->seq + 1);
}

static uint32_t capacity_from_environment(void)
{
	const char *text = getenv("TDSTAT_MAX_THREADS");
	char *end;
	unsigned long value;

	if (!text || !*text)
		return TDSTAT_RECORD_CAPACITY;
	value = strtoul(text, &end, 10);
	if (*end != '\0' || value == 0 || value > TDSTAT_RECORD_CAPACITY)
		return TDSTAT_RECORD_CAPACITY;
	return (uint32_t)value;
}

static bool flag_from_environment(const char *name)
{
	const char *text = getenv(name);

	return text && (strcmp(text, "1") == 0 || strcmp(text, "yes") == 0 ||
			strcmp(text, "on") == 0 || strcmp(text, "true") == 0);
}

/* Starts a window now if `enable`, else leaves an empty one.  Used when
 * the shim itself starts a window: at process start and in a fork child. */
static void start_window(bool enable)
{
	struct tdstat_control *control = &tdstat_region.header.control;
	uint64_t now = tdshim_now_ns();

	CMM_STORE_SHARED(control->window_start_ns, now);
	if (enable) {
		CMM_STORE_SHARED(control->cpu_start_ns, process_cpu_ns());
		cmm_smp_wmb();
		CMM_STORE_SHARED(control->window_end_ns, TDSTAT_WINDOW_OPEN);
	} else {
		cmm_smp_wmb();
		CMM_STORE_SHARED(control->window_end_ns, now);
	}
	uatomic_inc(&control->generation);
}

static void fill_header(void)
{
	struct tdstat_region_header *header = &tdstat_region.header;

	tdstat_region_header_describe(header, TDSTAT_RECORD_CAPACITY);
	header->status.capacity = capacity_from_environment();
	header->status.pid = getpid();
	header->status.start_ns = tdshim_now_ns();
}

#define TDSHIM_REAL_FUNCTION(ret, name, params, version) ret(*tdshim_real_##name) params;
#include "real.def"
#undef TDSHIM_REAL_FUNCTION

static void *resolve(const char *name, const char *version)
{
	return version ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
}

static void resolve_real_functions(void)
{
#define TDSHIM_REAL_FUNCTION(ret, name, params, version) \
	tdshim_real_##name = (ret(*) params)resolve(#name, version);
#include "real.def"
#undef TDSHIM_REAL_FUNCTION
}

static void after_fork_in_child(void)
{
	struct tdstat_region_header *header = &tdstat_region.header;
	bool was_enabled = header->control.window_end_ns == TDSTAT_WINDOW_OPEN;

	tdshim_slots_reset_after_fork();
	header->status.pid = getpid();
	header->status.start_ns = tdshim_now_ns();
	header->status.exit_ns = 0;
	start_window(was_enabled);

	/* Only the forking thread exists here: it keeps its TLS but needs a
	 * record of the new region copy and its new tid. */
	tdshim_self.record = NULL;
	tdshim_self.overflow = false;
	tdshim_self.exited = false;
	tdshim_self.tid = 0;
	tdshim_thread_adopt();
}

/*
 * Called from the constructor and, lazily, from any wrapper that runs
 * before it (another library's constructor may create threads or wait
 * first).  Allocates nothing.  A thread that re-enters while it is
 * initialising (dlsym calling back into a wrapper) proceeds; other threads
 * wait the few microseconds it takes.
 *
 * `caller_is_main`: the constructor's thread is tracked before the window
 * opens, so the main thread counts from the very start of the window.
 */
static void initialise_once(bool caller_is_main)
{
	int state = uatomic_cmpxchg(&init_state, INIT_NONE, INIT_RUNNING);

	if (state == INIT_DONE || initialising)
		return;
	if (state == INIT_RUNNING) {
		while (CMM_LOAD_SHARED(init_state) != INIT_DONE)
			caa_cpu_relax();
		return;
	}
	initialising = true;
	resolve_real_functions();
	fill_header();
	tdshim_track_reads = flag_from_environment("TDSTAT_TRACK_READS");
	tdshim_thread_key_init();
	tdshim_probe_semaphore_layout();
	tdshim_probe_rwlock_layout();
	pthread_atfork(NULL, NULL, after_fork_in_child);
	if (caller_is_main)
		tdshim_thread_adopt();
	start_window(flag_from_environment("TDSTAT_ENABLE"));
	cmm_smp_wmb();
	CMM_STORE_SHARED(tdstat_region.header.magic, TDSTAT_REGION_MAGIC);
	CMM_STORE_SHARED(tdshim_initialised, 1);
	CMM_STORE_SHARED(init_state, INIT_DONE);
	initialising = false;
}

void tdshim_init(void)
{
	initialise_once(false);
}

/* The thread that runs constructors is the main thread (or a dlopen
 * caller): tracked from the shim's start. */
__attribute__((constructor)) static void tdshim_constructor(void)
{
	initialise_once(true);
	if (!tdshim_self.record && !tdshim_self.overflow)
		tdshim_thread_adopt();
}

/* exit() ends tracking of every thread at once: readers clip the window
 * here.  (A process killed by a signal or _exit has no such stamp; its
 * last reader sees it until then.) */
__attribute__((destructor)) static void tdshim_destructor(void)
{
	CMM_STORE_SHARED(tdstat_region.header.status.exit_ns, tdshim_now_ns());
}
