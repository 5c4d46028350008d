/* SPDX-License-Identifier: MIT */
/*
 * From a snapshot to the numbers of docs/CONTRACT.md §2: the 64-bit integrals and the
 * integer fractions of td_ta_stats_t.
 */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tdstat/fraction.h>

#include "thread_db_private.h"

td_err_e tddb_target_cpu_ns(const struct td_thragent *agent, uint64_t *cpu_ns)
{
	pid_t pid = ps_getpid(agent->ph);
	struct timespec cpu;

	if (pid <= 0)
		return TD_DBERR;
	/* Not tdstat_clock_ns: a process CPU clock may read 0 ns. */
	if (clock_gettime(tdstat_process_cpu_clock(pid), &cpu) != 0)
		return TD_DBERR;
	*cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
	return TD_OK;
}

/*
 * The kernel sums a process's CPU clock over its threads on every read,
 * unless some CPU-time timer is armed on the process: it then keeps the
 * total as it goes (every thread adds its run time to one shared counter
 * at each scheduler accounting update) and a read is one load.  Any
 * process may arm a timer on another's process CPU clock (the kernel
 * checks no more than for reading it); it belongs to the reader, not to
 * the target: the target sees no timer, no limit and no signal, and the
 * kernel drops it when the reader deletes it or exits.  It never
 * expires (its signal would go to the reader: SIGURG, ignored by
 * default, after 292 years of the target's CPU time).  SIGEV_NONE would
 * be the natural notification, but the kernel does not arm such timers
 * (Linux 6.18), and an unarmed timer stops the total at the target's next
 * tick.  What it costs the target, and why only large targets get it:
 * docs/READER.md "The process CPU clock".  Called with control_lock held.
 */
static void cpu_timer_arm(struct td_thragent *agent, pid_t pid)
{
	struct tddb_cpu_timer *timer = &agent->cpu_timer;
	struct sigevent event = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGURG };
	/* KTIME_MAX is the kernel's latest expiry; it clamps a later one. */
	struct itimerspec never = { .it_value = { .tv_sec = (time_t)1 << 40 } };

	timer->tried = true;
	if (timer_create(tdstat_process_cpu_clock(pid), &event, &timer->id) != 0)
		return;
	if (timer_settime(timer->id, TIMER_ABSTIME, &never, NULL) != 0) {
		timer_delete(timer->id);
		return;
	}
	timer->owner = getpid();
	timer->armed = true;
}

void tddb_cpu_timer_release(struct td_thragent *agent)
{
	struct tddb_cpu_timer *timer = &agent->cpu_timer;

	/* A fork child of the reader has no such timer (and may have one of
	 * its own by that id). */
	if (timer->armed && timer->owner == getpid())
		timer_delete(timer->id);
	timer->armed = false;
}

/* Threads the kernel has in the process now: /proc/PID/task links each
 * one, and the kernel counts them without walking them (2 + threads).
 * The directory stays open: fstat of it asks the kernel for the count
 * without the path walk a stat of its name costs (half of a 100-thread
 * snapshot's fixed part).  An fd kept past the process's end counts no
 * thread (2 links), never another process's.  0 if unknown. */
static uint32_t kernel_thread_count(struct td_thragent *agent, pid_t pid)
{
	struct stat task;
	int fd;

	pthread_mutex_lock(&agent->control_lock);
	if (agent->task_fd < 0) {
		char path[32];

		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		agent->task_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	fd = agent->task_fd;
	pthread_mutex_unlock(&agent->control_lock);
	/* The agent is pinned (tddb_agent_enter): fd stays open meanwhile. */
	if (fd < 0 || fstat(fd, &task) != 0 || task.st_nlink < 3 || task.st_nlink - 2 > UINT32_MAX)
		return 0;
	return (uint32_t)(task.st_nlink - 2);
}

/*
 * Whether the agent's last reading of the process CPU clock still holds
 * at a snapshot, for a live target with gathering on (docs/READER.md
 * "The process CPU clock").  The kernel's process CPU clock is the only
 * exact total of another process, and it sums every thread to answer
 * (about 33 ns a thread: 330 us at 10,000).  It can only have grown
 * since an earlier reading if some thread ran since, and the region
 * proves that none of its threads did when, between the snapshot of the
 * reading and this one, no record changed (same seq sum over the same
 * records), none is RUNNABLE, every one blocked at least commit_lag_ns
 * before the reading (its way into the sleep was over by then), no
 * thread overflowed the records, and the kernel counts exactly as many
 * threads as the region has live records (no thread the shim does not
 * track).  The reading may come before its snapshot's reads
 * (tddb_cpu_ahead): a thread that ran between the two changed its
 * record, or blocked after the reading, which the snapshot shows.
 * *cpu_ns: the last reading.
 */
static bool last_reading_holds(struct td_thragent *agent, const struct tddb_snapshot *snapshot, pid_t pid,
			       uint64_t *cpu_ns)
{
	const struct tddb_cpu_reading *last = &agent->cpu;
	bool holds;

	pthread_mutex_lock(&agent->control_lock);
	/* With the agent's timer armed a read is one load in the kernel,
	 * cheaper than the thread count the reuse needs. */
	holds = !agent->cpu_timer.armed && last->valid && last->window_start_ns == snapshot->control.window_start_ns &&
		last->cpu_start_ns == snapshot->control.cpu_start_ns && last->generation == snapshot->control.generation &&
		last->seq_sum == snapshot->seq_sum && last->visited == snapshot->visited && last->live == snapshot->live &&
		snapshot->runnable_live == 0 && snapshot->overflow_live == 0 &&
		snapshot->latest_since_ns <= last->taken_ns - tddb_min_u64(agent->geometry.commit_lag_ns, last->taken_ns);
	*cpu_ns = last->cpu_ns;
	pthread_mutex_unlock(&agent->control_lock);
	/* The thread count last: it costs a system call, the rest nothing. */
	return holds && pid > 0 && kernel_thread_count(agent, pid) == snapshot->live;
}

/*
 * A snapshot's last check of the control block came before a reading of
 * the CPU clock taken after its reads: a disable that landed in between
 * froze the window's CPU time at a reading of its own, earlier than this
 * one, and every snapshot of the frozen window reports that.  One copy of
 * the header says whether the control block held since (any
 * controller's first write, `rewriting = 1`, changes it): then every
 * controller to come reads its clock after this reading.  If it did not,
 * the header once a controller is done with it: the snapshot's window,
 * closed, caps the reading at its frozen end.  A window begun since does
 * not end the question: another reader may have read the snapshot's
 * window frozen in between (the disable, its snapshot, then an enable,
 * all while this one was under way).  cpu_end_ns, if it changed (only
 * a disable writes it), is a reading taken after the snapshot's check,
 * so at least every CPU time reported before, and the frozen one
 * itself unless a second disable came since.  *moved_on: a window begun
 * since; a caller that can read again does (tddb_stats_ns), the clock
 * read first.
 */
static td_err_e cpu_checked_after(const struct td_thragent *agent, const struct tddb_snapshot *snapshot,
				  uint64_t *cpu_ns, bool *moved_on)
{
	const struct tdstat_control *then = &snapshot->control;
	struct tddb_header_view view;
	bool held;
	td_err_e err = tddb_control_held(agent, then, &held);

	if (err != TD_OK || held)
		return err;
	err = tddb_read_header(agent, &view);
	if (err != TD_OK)
		return err;
	if (view.control.window_start_ns == then->window_start_ns) {
		if (view.control.window_end_ns != TDSTAT_WINDOW_OPEN)
			*cpu_ns = tddb_min_u64(*cpu_ns, tddb_max_u64(view.control.cpu_end_ns, then->cpu_start_ns));
		return TD_OK;
	}
	*moved_on = true;
	if (view.control.cpu_end_ns != then->cpu_end_ns)
		*cpu_ns = tddb_min_u64(*cpu_ns, tddb_max_u64(view.control.cpu_end_ns, then->cpu_start_ns));
	return TD_OK;
}

/*
 * Called before a snapshot's reads.  A reading taken now precedes the
 * snapshot's last check of the control block, so a disable the snapshot
 * does not see reads the clock later: the CPU time it freezes is at
 * least this (docs/CONTRACT.md §4, "Monotonic").  Taken when the last
 * snapshot needed a new reading (a busy target, or a large one with the
 * timer armed): the snapshot then reads nothing more.  Not taken when
 * the last reading held (a sleeping target) or gathering was off: a
 * snapshot that needs a reading after all reads the header once more
 * (cpu_checked_after).  A wrong guess costs that read, or a reading
 * not used.  `surely`: taken whatever the last snapshot needed.
 */
void tddb_cpu_ahead(struct td_thragent *agent, bool surely, struct tddb_cpu_ahead *ahead)
{
	struct tddb_image image;
	bool spared;

	ahead->taken = false;
	ahead->moved_on = false;
	tddb_image_query(agent, &image);
	if (image.frozen)
		return;
	pthread_mutex_lock(&agent->control_lock);
	spared = agent->cpu_spared;
	pthread_mutex_unlock(&agent->control_lock);
	if (spared && !surely)
		return;
	ahead->taken_ns = tddb_monotonic_ns();
	/* A failure is the later reading's to report, if one is needed. */
	ahead->taken = tddb_target_cpu_ns(agent, &ahead->cpu_ns) == TD_OK;
}

/* The process CPU time at a snapshot, for a live target with gathering
 * on: the reading taken before it, the last one if it still holds, or a
 * new one. */
static td_err_e snapshot_cpu_ns(struct td_thragent *agent, const struct tddb_snapshot *snapshot,
				struct tddb_cpu_ahead *ahead, uint64_t *cpu_ns)
{
	pid_t pid = ps_getpid(agent->ph);
	struct tddb_cpu_reading now = {
		.valid = true,
		.window_start_ns = snapshot->control.window_start_ns,
		.cpu_start_ns = snapshot->control.cpu_start_ns,
		.generation = snapshot->control.generation,
		.seq_sum = snapshot->seq_sum,
		.visited = snapshot->visited,
		.live = snapshot->live,
	};
	/* One below the window's CPU start was taken before a controller
	 * began the window: not this window's. */
	bool early = ahead->taken && ahead->cpu_ns >= snapshot->control.cpu_start_ns;
	bool holds = last_reading_holds(agent, snapshot, pid, cpu_ns);
	td_err_e err;

	/* What the next snapshot may expect: the target sleeps on (and
	 * needs no reading), or not. */
	pthread_mutex_lock(&agent->control_lock);
	agent->cpu_spared = holds;
	pthread_mutex_unlock(&agent->control_lock);
	if (holds && !early)
		return TD_OK;

	/* A large target whose clock must be read: from now on the kernel
	 * keeps its total (arming costs one walk, as a read does). */
	if (!holds && pid > 0 && (uint64_t)snapshot->live + snapshot->overflow_live >= TDDB_CPU_TIMER_THREADS) {
		pthread_mutex_lock(&agent->control_lock);
		if (!agent->cpu_timer.tried)
			cpu_timer_arm(agent, pid);
		pthread_mutex_unlock(&agent->control_lock);
	}
	if (early) {
		now.taken_ns = ahead->taken_ns;
		now.cpu_ns = ahead->cpu_ns;
	} else {
		now.taken_ns = tddb_monotonic_ns();
		err = tddb_target_cpu_ns(agent, &now.cpu_ns);
		if (err != TD_OK)
			return err;
	}
	*cpu_ns = now.cpu_ns;
	pthread_mutex_lock(&agent->control_lock);
	/* Keep the latest reading (calls may race; any one is right). */
	if (!agent->cpu.valid || agent->cpu.taken_ns <= now.taken_ns)
		agent->cpu = now;
	pthread_mutex_unlock(&agent->control_lock);
	return early ? TD_OK : cpu_checked_after(agent, snapshot, cpu_ns, &ahead->moved_on);
}

static int32_t saturate_int(uint64_t value)
{
	return value > INT32_MAX ? INT32_MAX : (int32_t)value;
}

td_err_e tddb_stats_ns(struct td_thragent *agent, bool kinds, td_ta_stats_ns_t *stats)
{
	struct tddb_snapshot snapshot;
	struct tddb_cpu_ahead ahead;
	td_err_e err;

	/* A window begun between the snapshot's last check of the control
	 * block and its reading of the CPU clock: read again, the clock
	 * first (cpu_checked_after).  Once: the second reading comes
	 * before its reads. */
	for (int attempt = 0;; attempt++) {
		tddb_cpu_ahead(agent, attempt > 0, &ahead);
		err = tddb_snapshot(agent, kinds, &snapshot);
		if (err != TD_OK)
			return err;
		err = tddb_stats_from_snapshot(agent, &snapshot, &ahead, stats);
		if (err != TD_OK || !ahead.moved_on || attempt > 0)
			return err;
	}
}

/*
 * A reset while gathering is on writes the new CPU start first, then the
 * new window start (docs/READER.md, "Control writes").  A reader that
 * stops waiting for `rewriting` (a controller held up or killed between
 * the two) finds the old window with the new window's CPU start, and
 * would count that window's CPU time from it: from 45 ms down to nothing
 * within one window.  Until the generation moves (the change's last
 * write but `rewriting = 0`), nothing but this change in progress has
 * touched the block since this agent last read it whole: that block's
 * CPU start is the window's.  A controller that never finishes leaves
 * the old window as this agent last saw it, growing.  A reader with no
 * whole block read yet has nothing to go down from.
 */
static void settled_cpu_start(struct td_thragent *agent, struct tdstat_control *control)
{
	pthread_mutex_lock(&agent->control_lock);
	if (control->rewriting == 0) {
		agent->settled.valid = true;
		agent->settled.window_start_ns = control->window_start_ns;
		agent->settled.cpu_start_ns = control->cpu_start_ns;
		agent->settled.generation = control->generation;
	} else if (agent->settled.valid && agent->settled.window_start_ns == control->window_start_ns &&
		   agent->settled.generation == control->generation) {
		control->cpu_start_ns = agent->settled.cpu_start_ns;
	}
	pthread_mutex_unlock(&agent->control_lock);
}

td_err_e tddb_stats_from_snapshot(struct td_thragent *agent, const struct tddb_snapshot *snapshot_in,
				  struct tddb_cpu_ahead *ahead, td_ta_stats_ns_t *stats)
{
	struct tddb_snapshot snapshot = *snapshot_in;
	struct tddb_image image;
	uint64_t cpu_end, cpu = 0;
	td_err_e err;

	tddb_image_query(agent, &image);
	if (!image.frozen)
		settled_cpu_start(agent, &snapshot.control);
	if (!snapshot.enabled) {
		cpu_end = snapshot.control.cpu_end_ns;
		/* No reading needed, nor, most likely, by the next snapshot. */
		pthread_mutex_lock(&agent->control_lock);
		agent->cpu_spared = true;
		pthread_mutex_unlock(&agent->control_lock);
	} else if (image.frozen) {
		/* A core: its own notes, if it has them (ps_image.h). */
		cpu_end = image.cpu_known ? image.cpu_ns : 0;
	} else {
		err = snapshot_cpu_ns(agent, &snapshot, ahead, &cpu_end);
		if (err != TD_OK)
			return err;
	}
	/* An empty window holds no CPU time: a reset while gathering is off
	 * writes one and leaves cpu_start_ns and cpu_end_ns as the disable
	 * froze them, the old window's (docs/READER.md, "Control writes"). */
	if (snapshot.window_ns != 0 && cpu_end > snapshot.control.cpu_start_ns)
		cpu = cpu_end - snapshot.control.cpu_start_ns;

	memset(stats, 0, sizeof(*stats));
	stats->size = sizeof(*stats);
	stats->enabled = snapshot.enabled;
	stats->nthreads = saturate_int((uint64_t)snapshot.live + snapshot.overflow_live);
	stats->r_concurrency = snapshot.control.r_concurrency;
	stats->overflow_threads = snapshot.overflow_live;
	stats->abi_minor = agent->geometry.abi_minor;
	stats->window_start_ns = snapshot.window_start_ns;
	stats->window_ns = snapshot.window_ns;
	stats->counted_ns = snapshot.counted_ns;
	stats->lwps_ns = snapshot.tracked_ns;
	stats->runnable_ns = snapshot.runnable_ns;
	stats->idle_ns = snapshot.tracked_ns - snapshot.runnable_ns;
	stats->cpu_ns = cpu;
	stats->running_ns = tddb_min_u64(cpu, snapshot.runnable_ns);
	stats->snapshot_ns = snapshot.now_ns;
	/* The anchor is in the region since ABI 2.1; in 2.0 its word is
	 * reserved, whatever it holds: absent (0). */
	if (agent->geometry.abi_minor >= 1 && snapshot.control.realtime_offset_ns != 0)
		stats->window_start_realtime_ns = snapshot.window_start_ns +
						  (uint64_t)snapshot.control.realtime_offset_ns;
	if (snapshot.detail) {
		stats->kinds = TDSTAT_WAIT_KIND_COUNT;
		memcpy(stats->idle_by_kind_ns, snapshot.idle_by_kind_ns, sizeof(stats->idle_by_kind_ns));
	}
	return TD_OK;
}

/* The rule of docs/CONTRACT.md §2, shared with the command (include/tdstat/fraction.h). */
void tddb_stats_fractions(const td_ta_stats_ns_t *stats, td_ta_stats_t *fractions)
{
	struct tdstat_fractions rule;

	tdstat_fractions_of(stats->window_ns, stats->lwps_ns, stats->runnable_ns, stats->running_ns, &rule);
	fractions->nthreads = stats->nthreads;
	fractions->r_concurrency = stats->r_concurrency;
	fractions->nlwps_num = rule.lwps_num;
	fractions->nrunnable_num = rule.runnable_num;
	fractions->a_concurrency_num = rule.running_num;
	fractions->nidle_num = rule.idle_num;
	fractions->nlwps_den = rule.den;
	fractions->nrunnable_den = rule.den;
	fractions->a_concurrency_den = rule.den;
	fractions->nidle_den = rule.den;
}
