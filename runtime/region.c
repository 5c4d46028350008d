/* SPDX-License-Identifier: MIT */
/*
 * The exported region, its initialisation, and the one routine that
 * changes a record's state.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/drd.h>
#include <valgrind/helgrind.h>
#include <valgrind/valgrind.h>
#define TDSHIM_HAVE_VALGRIND_H 1
#endif
#endif

#include <tdstat/clock.h>

#include "shim.h"
#include "counter_clock.h"
#include "sync_track.h"
#include "profile.h"

/* In .bss: the 4 MiB of records and 8 MiB of details cost nothing until
 * threads touch them (a thread touches its record's two lines and its
 * detail's four: 384 bytes, so 32,768 threads touch 12 MiB).
 * The header is filled by tdshim_init(), magic last. */
TDSHIM_EXPORT struct tdstat_region tdstat_region __attribute__((aligned(64)));
/* This copy's own region, whatever the exported name is bound to: a
 * hidden alias always binds to this object. */
extern struct tdstat_region tdshim_own_region __attribute__((alias("tdstat_region"), visibility("hidden")));
bool tdshim_standing_down;

__thread struct tdshim_thread tdshim_self TDSHIM_TLS;
struct tdshim_process_page tdshim_process __attribute__((aligned(TDSHIM_PROCESS_PAGE_SIZE)));
bool tdshim_track_reads;
uint64_t tdshim_timer_slack_ns = TDSHIM_KERNEL_TIMER_SLACK_NS;
int tdshim_sandboxed;

/* INIT_NONE, INIT_DONE, or the pid of the process whose thread runs the
 * start-up (initialise_once). */
enum { INIT_NONE = 0, INIT_DONE = -1 };
static int init_state;
static __thread bool initialising TDSHIM_TLS;

/* The clocks are include/tdstat/clock.h's, shared with the readers. */
uint64_t tdshim_now_ns(void)
{
	return tdstat_monotonic_ns();
}

static uint64_t process_cpu_ns(void)
{
	return tdstat_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

struct tdstat_detail *tdshim_detail_of(const struct tdstat_record *record)
{
	return &tdstat_region.details[record - tdstat_region.records];
}

/* The stall bound of step 1: at least the default, and four times what
 * a clock read costs here (no vDSO clock source: a system call). */
static uint64_t measure_stall_bound(void)
{
	uint64_t fastest = UINT64_MAX;

	for (int i = 0; i < 8; i++) {
		uint64_t before = tdshim_now_ns(), after = tdshim_now_ns();
		if (after - before < fastest)
			fastest = after - before;
	}
	return max_u64(TDSTAT_STALL_NS, 4 * fastest);
}

/*
 * Closes the open interval [from, to) of the published state into the
 * next copies.  A BLOCKED interval that was woken before its end is split:
 * blocked up to the wake-up, runnable after it (the run-queue wait and
 * the call's own work after the wake), the split dated back no further
 * than TDSTAT_COMMIT_LAG_NS before `now`, the part readers have not
 * reported yet.
 */
static uint64_t close_interval(const struct tdstat_record_copy *old, struct tdstat_record_copy *next,
			       struct tdstat_detail_copy *next_detail, uint64_t from, uint64_t to, uint64_t now,
			       uint64_t woken)
{
	uint64_t wake = to;

	if (to <= from || old->state == TDSTAT_STATE_FREE)
		return 0;
	next->acc_tracked_ns += to - from;
	if (old->state == TDSTAT_STATE_RUNNABLE) {
		next->acc_runnable_ns += to - from;
		return 0;
	}
	if (woken) {
		uint64_t floor = max_u64(from, now > TDSTAT_COMMIT_LAG_NS ? now - TDSTAT_COMMIT_LAG_NS : 0);
		wake = min_u64(max_u64(woken, floor), to);
	}
	if (old->kind < TDSTAT_WAIT_KIND_COUNT)
		next_detail->acc_idle_ns[old->kind] += wake - from;
	next->acc_runnable_ns += to - wake;
	return wake;
}

/*
 * The one routine that changes a record, by region.h's latch: compute the
 * next copies from the published ones, then publish them with one store.
 *
 * Why the clock is read only sometimes: an interval matters to a window
 * only if it can overlap it.  While gathering is on it always can; while
 * off, only an interval that began before the window's end.  So a process
 * with gathering off never reads the clock, and a stale since_ns is
 * harmless: the next window starts after it, and readers take
 * max(since_ns, window_start_ns).
 *
 * An empty window (end <= start) is also what a reader sees between the
 * two writes of an enable (start first, then end = OPEN): there since_ns
 * must not move, or the time from the new start to this change would be
 * lost once the enable completes.
 *
 * A record still on an older window has not changed state since this
 * window was published, except in the gap between the controller reading
 * its clock (window_start) and its write landing: a change made then set
 * since_ns past window_start while reading the old window.  Counting from
 * window_start keeps that gap's time (in the current state).
 */
/* The record's change mark (region.h, ABI 2.3). */
static inline uint32_t *change_mark(const struct tdstat_record *record)
{
	return &tdstat_region.changes[tdstat_change_slot((uint32_t)(record - tdstat_region.records))];
}

TDSHIM_BLOCKING_PATH void tdshim_record_change(struct tdstat_record *record, const struct tdshim_change *change)
{
	TDSHIM_PROFILE_START(change);
	const struct tdstat_control *control = &tdstat_region.header.control;
	struct tdstat_detail *detail = tdshim_detail_of(record);
	uint32_t seq = CMM_LOAD_SHARED(record->seq);
	const struct tdstat_record_copy *old = &record->copy[seq & 1];
	struct tdstat_record_copy *next = &record->copy[(seq + 1) & 1];
	struct tdstat_detail_copy *next_detail = &detail->copy[(seq + 1) & 1];
	uint64_t window_start = CMM_LOAD_SHARED(control->window_start_ns);
	uint64_t window_end = CMM_LOAD_SHARED(control->window_end_ns);
	bool clocked = window_end == TDSTAT_WINDOW_OPEN ||
		       (window_start < window_end && old->since_ns < window_end);
	uint32_t *mark = change_mark(record);

	/* Odd before pending_ns may move: a reader that finds the mark as it
	 * kept it has not missed an announcement. */
	CMM_STORE_SHARED(*mark, 2 * seq + 1);
	cmm_smp_wmb();
	TDSHIM_PROFILE_START(announce);
	uint64_t now = clocked ? tdshim_announce(record, old->since_ns) : 0;
	TDSHIM_PROFILE_END(announce, TDSHIM_PROFILE_ANNOUNCE);
	if (clocked)
		tdshim_cpu_busy_note(now, change->state == TDSTAT_STATE_RUNNABLE);

	*next = *old;
	*next_detail = detail->copy[seq & 1];
	if (clocked) {
		uint64_t from = max_u64(old->since_ns, window_start);

		if (old->epoch_ns != window_start) {
			next->epoch_ns = window_start;
			next->acc_tracked_ns = 0;
			next->acc_runnable_ns = 0;
			memset(next_detail->acc_idle_ns, 0, sizeof(next_detail->acc_idle_ns));
			from = window_start;
		}
		uint64_t wake = close_interval(old, next, next_detail, from, min_u64(now, window_end), now,
					       change->woken_ns);
		if (old->state == TDSTAT_STATE_BLOCKED)
			next_detail->woken_ns = wake ? wake : now;
		next->since_ns = now;
	}
	next->state = change->state;
	if (change->state == TDSTAT_STATE_BLOCKED) {
		next->kind = change->kind;
		next_detail->object = (uint64_t)(uintptr_t)change->object;
		next_detail->site = (uint64_t)(uintptr_t)change->site;
	}
	/* Pairs with the reader's check of seq after its copy: the next
	 * copies are complete before they are published. */
	cmm_smp_wmb();
	CMM_STORE_SHARED(record->seq, seq + 1);
	cmm_smp_wmb();
	CMM_STORE_SHARED(*mark, 2 * seq + 2);
	TDSHIM_PROFILE_END(change, TDSHIM_PROFILE_CHANGE);
}

/* Identity changes (who owns the record) go through the latch too, so a
 * reader never pairs one thread's tid with another's times. */
void tdshim_record_set_owner(struct tdstat_record *record, pid_t tid, bool new_claim)
{
	uint32_t seq = CMM_LOAD_SHARED(record->seq);
	struct tdstat_record_copy *next = &record->copy[(seq + 1) & 1];
	struct tdstat_detail *detail = tdshim_detail_of(record);
	uint32_t *mark = change_mark(record);

	CMM_STORE_SHARED(*mark, 2 * seq + 1);
	cmm_smp_wmb();
	*next = record->copy[seq & 1];
	detail->copy[(seq + 1) & 1] = detail->copy[seq & 1];
	next->tid = tid;
	if (new_claim)
		next->generation++;
	cmm_smp_wmb();
	CMM_STORE_SHARED(record->seq, seq + 1);
	cmm_smp_wmb();
	CMM_STORE_SHARED(*mark, 2 * seq + 2);
}

/* A claim whose thread never came to exist (pthread_create failed): the
 * slot goes back to FREE.  The instant it was RUNNABLE stays counted:
 * readers may have counted it already, and integrals never go down. */
void tdshim_record_abandon(struct tdstat_record *record)
{
	tdshim_record_set_state(record, TDSTAT_STATE_FREE);
	tdshim_record_set_owner(record, 0, false);
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
 * the shim itself starts a window: at process start and in a fork child.
 * The wall-clock anchor (ABI 2.1) is read with the start and stored
 * before it, as a controller does (region.h). */
static void start_window(bool enable)
{
	struct tdstat_control *control = &tdstat_region.header.control;
	uint64_t now;
	int64_t realtime_offset = tdstat_realtime_offset_ns(&now);

	CMM_STORE_SHARED(control->realtime_offset_ns, realtime_offset);
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

/* The slack the kernel may add to this process's timed waits.  (The
 * real prctl: the shim's own is interposed.) */
static uint64_t timer_slack(void)
{
	int slack = tdshim_real_prctl ? tdshim_real_prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) : 0;

	return slack > 0 ? (uint64_t)slack : 0;
}

/* A seccomp filter this process started under (tdshim_sandboxed). */
static void note_inherited_sandbox(void)
{
	int saved = errno;

	if (tdshim_real_prctl && tdshim_real_prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 2)
		tdshim_note_sandbox();
	errno = saved;
}

static void fill_header(void)
{
	struct tdstat_region_header *header = &tdstat_region.header;

	tdstat_region_header_describe(header, TDSTAT_RECORD_CAPACITY);
	header->changes_offset = offsetof(struct tdstat_region, changes);
	header->region_size = sizeof(struct tdstat_region);
	header->stall_ns = measure_stall_bound();
	tdshim_announce_init(header->stall_ns);
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

/*
 * How a child finds out that it is a new process when no atfork handler
 * ran (_Fork, a raw clone system call): tdshim_process is a page of its
 * own, marked MADV_WIPEONFORK, which the kernel hands to the child of any
 * fork that copies the address space zeroed.  The child's first wrapper
 * finds `initialised` zero and starts the child's region, at no cost to
 * any call (the wrappers test that flag anyway).  vfork and CLONE_VM
 * children share the parent's memory and, rightly, see nothing.  Without
 * the advice (kernels before 4.14) only fork() is detected.
 */
static bool wipe_on_fork_active;

static void mark_process_page_wipe_on_fork(void)
{
	static int marking;
	void *page = &tdshim_process;
	int saved_errno = errno;

	/* Once, by the first thread here (a second replacement below would
	 * wipe what the first one's start-up wrote). */
	if (uatomic_cmpxchg(&marking, 0, 1) != 0)
		return;
	if (sysconf(_SC_PAGESIZE) != TDSHIM_PROCESS_PAGE_SIZE)
		return;
	wipe_on_fork_active = madvise(page, TDSHIM_PROCESS_PAGE_SIZE, MADV_WIPEONFORK) == 0;
	/* The advice needs anonymous memory; the page may be file-backed
	 * (the tail of .data).  It holds nothing yet: replace it. */
	if (!wipe_on_fork_active &&
	    mmap(page, TDSHIM_PROCESS_PAGE_SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == page)
		wipe_on_fork_active = madvise(page, TDSHIM_PROCESS_PAGE_SIZE, MADV_WIPEONFORK) == 0;
	errno = saved_errno;
}

/*
 * This process's id without a system call (a microsecond on a machine
 * with page-table isolation, and the shim asked at every thread's first
 * thread_local destructor: 1% of a Rust program that starts 12,000
 * threads a second).  It is kept in the process page, which a fork
 * hands to the child zeroed, and written once the process's start-up or
 * a child's reset is done: read, stored, read again until the two agree,
 * since a fork (from a signal handler) between the read and the store
 * leaves the child storing its parent's id, and one after the store
 * leaves it 0.  The region header's copy is not enough: a fork in the
 * middle of start-up leaves the child its parent's (helper-55).  Before
 * that, without the advice, or while standing down, ask the kernel.
 */
static void remember_process_id(void)
{
	pid_t pid;

	if (!wipe_on_fork_active)
		return;
	do {
		pid = getpid();
		CMM_STORE_SHARED(tdshim_process.pid, pid);
	} while (getpid() != pid);
}

pid_t tdshim_process_id(void)
{
	pid_t pid = CMM_LOAD_SHARED(tdshim_process.pid);

	if (pid <= 0 || !wipe_on_fork_active || tdshim_standing_down)
		return getpid();
	return pid;
}

/* The one reset for a new process, from the atfork child handler or from
 * the first wrapper a child runs: the forking thread is the only one. */
static void after_fork_in_child(void)
{
	struct tdstat_region_header *header = &tdstat_region.header;
	bool was_enabled = header->control.window_end_ns == TDSTAT_WINDOW_OPEN;

	tdshim_sched_after_fork();
	tdshim_slots_reset_after_fork();
	tdshim_sync_after_fork();
	header->status.pid = getpid();
	header->status.start_ns = tdshim_now_ns();
	header->status.exit_ns = 0;
	start_window(was_enabled);

	/* Only the forking thread exists here: it keeps its TLS but needs a
	 * record of the new region copy and its new tid. */
	tdshim_self.record = NULL;
	tdshim_self.overflow = false;
	tdshim_self.exited = false;
	/* The system call, not glibc's descriptor: a child of a raw fork
	 * (syscall(SYS_fork), clone without CLONE_CHILD_SETTID) still has
	 * the parent's tid there (tdshim_fetch_tid).  glibc goes on writing
	 * that one into its locks, and so does the shim (tdshim_lock_tid). */
	tdshim_self.tid = tdshim_kernel_tid();
	tdshim_self.lock_tid = tdshim_descriptor_tid();
	if (tdshim_self.lock_tid <= 0)
		tdshim_self.lock_tid = tdshim_self.tid;
	/* The child may be in a new time namespace (unshare(CLONE_NEWTIME)
	 * moves the children): the parent's counter-clock anchors pair the
	 * counter with the parent's CLOCK_MONOTONIC.  Zeroed, an anchor no
	 * longer serves (the counter is far past 0) and the next change
	 * renews it from this process's clock. */
	memset(tdshim_self.anchors, 0, sizeof(tdshim_self.anchors));
	tdshim_thread_adopt();
}

static void finish_start_up(void);

/* Once per child, whichever comes first: the atfork handler or a wrapper
 * (another library's atfork handler may run one before ours).  A signal
 * handler that interrupts the reset proceeds without it, as during
 * initialisation. */
static void start_forked_process(void)
{
	if (initialising)
		return;
	if (uatomic_cmpxchg(&tdshim_process.resetting, 0, 1) != 0) {
		while (!CMM_LOAD_SHARED(tdshim_process.initialised))
			caa_cpu_relax();
		return;
	}
	initialising = true;
	after_fork_in_child();
	finish_start_up();
	initialising = false;
}

static void initialise_once(bool caller_is_main);

static void atfork_child(void)
{
	/* Forked by a thread other than the one running the start-up: no
	 * thread here will finish it; this one takes it over (helper-63).
	 * (The start-up's own thread, forking from a handler, goes on with
	 * it and ends in finish_start_up.) */
	if (CMM_LOAD_SHARED(init_state) != INIT_DONE && wipe_on_fork_active) {
		initialise_once(false);
		return;
	}
	/* Without the wiped page nothing else tells the child apart. */
	if (!wipe_on_fork_active)
		CMM_STORE_SHARED(tdshim_process.resetting, 0);
	if (!wipe_on_fork_active || !CMM_LOAD_SHARED(tdshim_process.initialised))
		start_forked_process();
}

/*
 * Two copies of the shim preloaded (two files): the dynamic linker binds
 * the name tdstat_region, in both copies' code outside this file, to the
 * first copy's, and the first copy's wrappers forward to the second's.
 * The second copy stands down: it claims no record, writes no region,
 * registers nothing, and its wrappers pass every call on (their tries
 * change nothing the program sees).  Its own region holds only the magic
 * TDSTAT_REGION_MAGIC_ELSEWHERE and the address of the first copy's, so a
 * reader whose symbol lookup found this copy goes there.
 */
static bool another_copy_owns_region(void)
{
	void *first = dlsym(RTLD_DEFAULT, TDSTAT_REGION_SYMBOL);

	return first && first != (void *)&tdshim_own_region;
}

static void stand_down(void)
{
	/* The one thing it writes: where readers find the region in use. */
	tdshim_own_region.header.elsewhere = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, TDSTAT_REGION_SYMBOL);
	cmm_smp_wmb();
	CMM_STORE_SHARED(tdshim_own_region.header.magic, TDSTAT_REGION_MAGIC_ELSEWHERE);
	tdshim_standing_down = true;
	tdshim_inline_mutex_kind = TDSHIM_MUTEX_KIND_NEVER_INLINE;
}

/*
 * Another interposer of the pthread calls: valgrind's helgrind and drd
 * (which redirect libc's functions in place, so only a client request
 * tells), or a library loaded after the shim that defines them (a
 * sanitizer runtime, a tracer).  Such a tool must see every lock, so the
 * inline paths (default mutex lock and unlock, rwlock read lock and
 * unlock, semaphore take and post) are turned off, once, here: the
 * wrappers then try and call the next definition, as for any other mutex.
 */
static bool is_libc(const char *path)
{
	const char *name = strrchr(path, '/');

	name = name ? name + 1 : path;
	return !strncmp(name, "libc.so", 7) || !strncmp(name, "libc-", 5) ||
	       !strncmp(name, "libpthread.so", 13) || !strncmp(name, "libpthread-", 11);
}

/* The shim's own lock-free state (records handed from an exiting thread
 * to a creator through the slot stack, the launch pads, the wake-up
 * stamps, the flags pthread_cancel sets) is synchronised by atomics that
 * helgrind and drd do not follow: they would report it as the program's
 * races. */
void tdshim_hide_from_race_detectors(const void *start, size_t size)
{
#ifdef TDSHIM_HAVE_VALGRIND_H
	VALGRIND_HG_DISABLE_CHECKING(start, size);
	VALGRIND_DO_CLIENT_REQUEST_STMT(VG_USERREQ__DRD_START_SUPPRESSION, start, size, 0, 0, 0);
#else
	(void)start;
	(void)size;
#endif
}

static bool running_on_valgrind(void)
{
#ifdef TDSHIM_HAVE_VALGRIND_H
	return RUNNING_ON_VALGRIND;
#else
	return false;
#endif
}

static bool another_interposer_present(void)
{
	static const char *const watched[] = { "pthread_mutex_lock", "pthread_mutex_trylock",
					       "pthread_mutex_unlock", "pthread_rwlock_rdlock",
					       "pthread_rwlock_unlock", "sem_wait", "sem_post" };

	/* Only helgrind and drd need every lock, but valgrind does not say
	 * which tool runs: all of them count, unless told that this one
	 * follows no locks (TDSTAT_VALGRIND_INLINE=1, for callgrind's
	 * instruction counts of the inline paths: bench/README.md). */
	if (running_on_valgrind() && !flag_from_environment("TDSTAT_VALGRIND_INLINE"))
		return true;
	for (size_t i = 0; i < sizeof(watched) / sizeof(watched[0]); i++) {
		void *next = dlsym(RTLD_NEXT, watched[i]);
		Dl_info where;

		if (next && dladdr(next, &where) && where.dli_fname && !is_libc(where.dli_fname))
			return true;
	}
	return false;
}

/*
 * The end of the start-up, and of a fork child's reset.  A fork from a
 * signal handler in the middle of either (after the header's pid was
 * written) leaves the new child to finish it with the pid of the process
 * it forked from in the header, that process's tid cached for its one
 * thread and, if the fork came after the adoption, a record claimed
 * under that tid: the main thread's check then fails and a pthread_exit
 * of it leaves the record live for good, and readers list a thread that
 * is not there.  Such a child resets as any fork child.  Checked again
 * after the process page is written, so that a fork landing between the
 * check and the writes is also seen: one after them leaves the child a
 * wiped page, which its first wrapper finds (tdshim_init).  (helper-62:
 * a fork inside a child's reset, 14 of 100 grandchildren wrong.)
 */
static void finish_start_up(void)
{
	const volatile pid_t *header_pid = &tdstat_region.header.status.pid;

	do {
		while (!tdshim_standing_down && getpid() != *header_pid)
			after_fork_in_child();
		CMM_STORE_SHARED(tdshim_process.initialised, 1);
		remember_process_id();
	} while (!tdshim_standing_down && getpid() != *header_pid);
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
	if (initialising)
		return;
	/* Before the claim: a fork's copy of the process page then never
	 * holds the `starting` stored after it. */
	mark_process_page_wipe_on_fork();
	int self = getpid();
	int state = uatomic_cmpxchg(&init_state, INIT_NONE, self);

	while (state != INIT_NONE) {
		if (state == INIT_DONE)
			return;
		int seen = state;

		/* Its thread runs in this address space: this process's, or
		 * the parent's of a vfork or CLONE_VM child, which shares the
		 * process page.  Wait. */
		if (seen == self || CMM_LOAD_SHARED(tdshim_process.starting)) {
			while ((state = CMM_LOAD_SHARED(init_state)) == seen)
				caa_cpu_relax();
			continue;
		}
		/* A fork's copy (the page wiped): the thread that ran it when
		 * the fork came is not here to finish.  Take it over, from the
		 * start (every step may run again).  The first wrapper of such
		 * a child spun for ever (helper-62); a vfork child took over
		 * its parent's running start-up when only the pid was looked
		 * at (helper-63).  Without the page's advice a copy waits for
		 * ever, as before; so does one whose pid is its parent's (pid
		 * 1 forking into a new pid namespace). */
		state = uatomic_cmpxchg(&init_state, seen, self);
		if (state == seen)
			state = INIT_NONE;
	}
	CMM_STORE_SHARED(tdshim_process.starting, 1);
	initialising = true;
	resolve_real_functions();
	tdshim_personality_init();
	if (another_copy_owns_region()) {
		stand_down();
		goto done;
	}
	fill_header();
	tdshim_track_reads = flag_from_environment("TDSTAT_TRACK_READS");
	tdshim_timer_slack_ns = timer_slack();
	tdshim_sched_init();
	note_inherited_sandbox();
	tdshim_probe_semaphore_layout();
	tdshim_probe_rwlock_layout();
	tdshim_probe_mutex_elision();
	tdshim_probe_thread_tid();
	if (another_interposer_present()) {
		tdshim_inline_mutex_kind = TDSHIM_MUTEX_KIND_NEVER_INLINE;
		tdshim_sync_pass_through(running_on_valgrind());
		tdshim_hide_from_race_detectors(&tdshim_own_region, sizeof(tdshim_own_region));
		tdshim_hide_from_race_detectors(&tdshim_cancel_requested, sizeof(tdshim_cancel_requested));
		tdshim_hide_from_race_detectors(&tdshim_sem_wait_inline, sizeof(tdshim_sem_wait_inline));
		tdshim_slots_hide_from_race_detectors();
		tdshim_thread_hide_from_race_detectors();
		tdshim_wake_hide_from_race_detectors();
	}
	/* After the probes: their objects are the shim's, not the program's. */
	tdshim_sync_init();
	pthread_atfork(NULL, NULL, atfork_child);
	if (caller_is_main)
		tdshim_thread_adopt();
	start_window(flag_from_environment("TDSTAT_ENABLE"));
	cmm_smp_wmb();
	CMM_STORE_SHARED(tdstat_region.header.magic, TDSTAT_REGION_MAGIC);
done:
	finish_start_up();
	CMM_STORE_SHARED(init_state, INIT_DONE);
	initialising = false;
}

void tdshim_init(void)
{
	/* Initialised, yet the flag reads zero: a child whose fork ran no
	 * atfork handler. */
	if (CMM_LOAD_SHARED(init_state) == INIT_DONE) {
		start_forked_process();
		return;
	}
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
	if (tdshim_standing_down)
		return;
	CMM_STORE_SHARED(tdstat_region.header.status.exit_ns, tdshim_now_ns());
}
