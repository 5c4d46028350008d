/* SPDX-License-Identifier: MIT */
/*
 * libc_db with libtdstat_ps against live children running the shim:
 * finding the region (through a symlink, after the file is deleted, or not
 * at all), exact thread counts, enable/disable/reset, setconcurrency, a
 * target that exits, and the provider's own diagnostics.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tdstat/clock.h>
#include <tdstat/ps_live.h>
#include <tdstat/region.h>
#include <tdstat/thread_db_stats.h>

#include "live_target.h"

TestSuite(live, .timeout = 30);

struct session {
	struct live_target target;
	struct ps_prochandle *ph;
	td_thragent_t *ta;
};

static void session_start(struct session *s, const char *mode, int threads, long param,
			  const struct live_options *options)
{
	cr_assert(live_start(&s->target, mode, threads, param, options));
	cr_assert_eq(tdps_open(s->target.pid, &s->ph), TDPS_OK);
	cr_assert_eq(td_ta_new(s->ph, &s->ta), TD_OK);
}

static void session_stop(struct session *s)
{
	cr_assert_eq(td_ta_delete(s->ta), TD_OK);
	tdps_close(s->ph);
	cr_assert_eq(live_stop(&s->target), 0);
}

/* Steady threads: the counts are exact, and every thread was tracked for
 * the whole window, so nlwps is nthreads, short only by the snapshot's
 * edge (tdtest.h) for each thread blocked at the snapshot: here all six;
 * between two snapshots the edges cancel. */
Test(live, steady_counts_are_exact)
{
	struct session s;
	td_ta_stats_t stats;
	td_ta_stats_ns_t settled = { .size = sizeof(settled) }, later = { .size = sizeof(later) };
	double runnable;
	int n = 0;

	session_start(&s, "condvar", 5, 0, NULL);
	cr_assert_eq(td_ta_get_nthreads(s.ta, &n), TD_OK);
	cr_assert_eq(n, 6);
	cr_assert_eq(kernel_task_count(s.target.pid), 6);
	cr_assert_eq(td_ta_enable_stats(s.ta, 1), TD_OK);
	tdtest_sleep_ms(50);
	cr_assert_eq(td_ta_get_stats_ns(s.ta, &settled), TD_OK);
	tdtest_sleep_ms(100);
	cr_assert_eq(td_ta_get_stats(s.ta, &stats), TD_OK);
	cr_assert_eq(td_ta_get_stats_ns(s.ta, &later), TD_OK);
	cr_assert_eq(stats.nthreads, 6);
	cr_assert_leq(stats.nlwps_num, 6 * stats.nlwps_den, "nlwps %d/%d", stats.nlwps_num, stats.nlwps_den);
	cr_assert_geq(later.lwps_ns, 6 * (later.window_ns - TDTEST_SNAPSHOT_EDGE_NS), "lwps %llu over %llu ns",
		      (unsigned long long)later.lwps_ns, (unsigned long long)later.window_ns);
	cr_assert_leq(later.lwps_ns, 6 * later.window_ns);
	cr_assert_eq(stats.nidle_num, stats.nlwps_num - stats.nrunnable_num);
	/* Everyone waits.  The first snapshot is past the main thread's way
	 * from "ready" into poll() (long on a loaded machine): the interval
	 * between the two snapshots, from the 64-bit call, is all idle. */
	cr_assert_eq(later.window_start_ns, settled.window_start_ns);
	cr_assert_leq(llabs((long long)(later.lwps_ns - settled.lwps_ns) -
			    6 * (long long)(later.window_ns - settled.window_ns)),
		      6 * 2000000ll, "the edges of two snapshots cancel, up to their read times");
	cr_assert_eq(later.runnable_ns, settled.runnable_ns, "all idle between the snapshots");
	runnable = (double)(later.runnable_ns - settled.runnable_ns) / (double)(later.window_ns - settled.window_ns);
	cr_assert_leq(runnable, 0.01, "runnable %.4f between the snapshots", runnable);
	session_stop(&s);
}

Test(live, target_without_shim_is_no_libthread)
{
	struct live_target target;
	struct live_options options = { .preload = "" };
	struct ps_prochandle *ph;
	td_thragent_t *ta = NULL;

	cr_assert(live_start(&target, "condvar", 1, 0, &options));
	cr_assert_eq(tdps_open(target.pid, &ph), TDPS_OK);
	cr_assert_eq(td_ta_new(ph, &ta), TD_NOLIBTHREAD);
	cr_assert_null(ta);
	cr_assert_eq(tdps_last_status(ph), TDPS_OK);
	tdps_close(ph);
	cr_assert_eq(live_stop(&target), 0);
}

/* Makes a private directory holding a copy of the shim or a symlink to it. */
static void shim_alias(char *directory, char *path, size_t size, const char *name, bool copy)
{
	strcpy(directory, "/tmp/tdstat-dbagent-XXXXXX");
	cr_assert_not_null(mkdtemp(directory));
	snprintf(path, size, "%s/%s", directory, name);
	if (!copy) {
		cr_assert_eq(symlink(tdtest_shim_path(), path), 0);
		return;
	}
	char command[PATH_MAX * 2 + 16];
	snprintf(command, sizeof(command), "cp '%s' '%s'", tdtest_shim_path(), path);
	cr_assert_eq(system(command), 0);
}

Test(live, shim_through_symlink_is_found)
{
	char directory[64], path[PATH_MAX];
	struct live_options options = { .enable = true };
	struct session s;
	int n;

	shim_alias(directory, path, sizeof(path), "libsomething-else.so", false);
	options.preload = path;
	session_start(&s, "condvar", 2, 0, &options);
	cr_assert_eq(td_ta_get_nthreads(s.ta, &n), TD_OK);
	cr_assert_eq(n, 3);
	session_stop(&s);
	unlink(path);
	rmdir(directory);
}

/* The file is gone (replaced by an upgrade, say): the symbol is read from
 * the target's memory all the same. */
Test(live, deleted_shim_is_found)
{
	char directory[64], path[PATH_MAX];
	struct live_options options = { .enable = true };
	struct session s;
	int n;

	shim_alias(directory, path, sizeof(path), "libtdshim-renamed.so", true);
	options.preload = path;
	cr_assert(live_start(&s.target, "condvar", 3, 0, &options));
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(rmdir(directory), 0);
	cr_assert_eq(tdps_open(s.target.pid, &s.ph), TDPS_OK);
	cr_assert_eq(td_ta_new(s.ph, &s.ta), TD_OK);
	cr_assert_eq(td_ta_get_nthreads(s.ta, &n), TD_OK);
	cr_assert_eq(n, 4);
	session_stop(&s);
}

static bool same_averages(const td_ta_stats_t *a, const td_ta_stats_t *b)
{
	return a->nlwps_num == b->nlwps_num && a->nlwps_den == b->nlwps_den && a->nrunnable_num == b->nrunnable_num &&
	       a->a_concurrency_num == b->a_concurrency_num && a->nidle_num == b->nidle_num;
}

Test(live, disable_freezes_enable_and_reset_start_windows)
{
	struct live_options options = { .enable = false };
	td_ta_stats_ns_t ns = { .size = sizeof(ns) }, later = { .size = sizeof(later) };
	td_ta_stats_t frozen, again;
	struct session s;
	char reply[64];

	session_start(&s, "sleep", 2, 5, &options);
	cr_assert_eq(td_ta_get_stats_ns(s.ta, &ns), TD_OK);
	cr_assert_eq(ns.enabled, 0);
	cr_assert_eq(ns.window_ns, 0, "off from the start: empty window");

	cr_assert_eq(td_ta_enable_stats(s.ta, 1), TD_OK);
	tdtest_sleep_ms(60);
	cr_assert_eq(td_ta_enable_stats(s.ta, 0), TD_OK);
	cr_assert_eq(td_ta_get_stats(s.ta, &frozen), TD_OK);
	cr_assert_eq(frozen.nthreads, 3);
	cr_assert_eq(frozen.nlwps_num, 3 * frozen.nlwps_den);
	tdtest_sleep_ms(30);
	cr_assert(live_command(&s.target, "spawn 2", reply, sizeof(reply)));
	cr_assert_str_eq(reply, "spawned");
	cr_assert_eq(td_ta_get_stats(s.ta, &again), TD_OK);
	cr_assert_eq(again.nthreads, 5, "nthreads stays live while off");
	cr_assert(same_averages(&frozen, &again), "averages frozen while off");

	/* Reset while off: a new, empty window. */
	cr_assert_eq(td_ta_get_stats_ns(s.ta, &ns), TD_OK);
	cr_assert_eq(td_ta_reset_stats(s.ta), TD_OK);
	cr_assert_eq(td_ta_get_stats_ns(s.ta, &later), TD_OK);
	cr_assert_gt(later.window_start_ns, ns.window_start_ns);
	cr_assert_eq(later.window_ns, 0);

	/* Enable: a new window from now, with the five threads in it. */
	cr_assert_eq(td_ta_enable_stats(s.ta, 1), TD_OK);
	tdtest_sleep_ms(30);
	cr_assert_eq(td_ta_get_stats_ns(s.ta, &ns), TD_OK);
	cr_assert_eq(ns.enabled, 1);
	cr_assert_gt(ns.window_start_ns, later.window_start_ns);
	cr_assert_leq(ns.lwps_ns, 5 * ns.window_ns);
	cr_assert_geq(ns.lwps_ns, 5 * (ns.window_ns - TDTEST_SNAPSHOT_EDGE_NS));

	/* Reset while on: the window restarts, gathering stays on. */
	cr_assert_eq(td_ta_reset_stats(s.ta), TD_OK);
	cr_assert_eq(td_ta_get_stats_ns(s.ta, &later), TD_OK);
	cr_assert_eq(later.enabled, 1);
	cr_assert_gt(later.window_start_ns, ns.window_start_ns);
	cr_assert_lt(later.window_ns, ns.window_ns);
	session_stop(&s);
}

/*
 * Across a disable nothing a reader took from the open window is lost
 * (CONTRACT.md §4), with the shim's own threads changing state all the
 * time (a mutex handed around every millisecond): windows of 0 to 33 ms,
 * some younger than the commit lag.  The window once ended at the
 * controller's clock less the lag and took back up to 9 ms of each
 * running thread, and all of a younger window.  (That reads after the
 * disable give the same values is pinned on the fake target, where no
 * writer can be preempted in the middle of a change.)
 */
Test(live, disable_keeps_what_was_read)
{
	struct session s;

	session_start(&s, "mutex", 3, 1, NULL);
	for (int round = 0; round < 12; round++) {
		td_ta_stats_ns_t before = { .size = sizeof(before) }, after = { .size = sizeof(after) };

		cr_assert_eq(td_ta_enable_stats(s.ta, 1), TD_OK);
		tdtest_sleep_ms(3 * round);
		cr_assert_eq(td_ta_get_stats_ns(s.ta, &before), TD_OK);
		cr_assert_eq(td_ta_enable_stats(s.ta, 0), TD_OK);
		cr_assert_eq(td_ta_get_stats_ns(s.ta, &after), TD_OK);
		cr_assert_eq(after.window_start_ns, before.window_start_ns);
		cr_assert_eq(after.enabled, 0);
		cr_assert_geq(after.lwps_ns, before.lwps_ns, "round %d: lwps %llu -> %llu", round,
			      (unsigned long long)before.lwps_ns, (unsigned long long)after.lwps_ns);
		cr_assert_geq(after.runnable_ns, before.runnable_ns, "round %d: runnable %llu -> %llu", round,
			      (unsigned long long)before.runnable_ns, (unsigned long long)after.runnable_ns);
		cr_assert_geq(after.idle_ns, before.idle_ns, "round %d: idle %llu -> %llu", round,
			      (unsigned long long)before.idle_ns, (unsigned long long)after.idle_ns);
		cr_assert_geq(after.counted_ns, before.counted_ns, "round %d", round);
		cr_assert_geq(after.window_ns, before.window_ns, "round %d", round);
		for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
			cr_assert_geq(after.idle_by_kind_ns[k], before.idle_by_kind_ns[k], "round %d kind %d", round, k);
	}
	session_stop(&s);
}

/* ABI 2.1's wall-clock anchor, written by the shim itself when it starts
 * its first window: the window's start converts to this machine's wall
 * clock (within a second: the test compares with its own reading). */
Test(live, shim_writes_wall_clock_anchor)
{
	struct live_options options = { .enable = false };
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	struct timespec wall, mono;
	struct session s;

	session_start(&s, "sleep", 1, 5, &options);
	cr_assert_eq(td_ta_get_stats_ns(s.ta, &ns), TD_OK);
	clock_gettime(CLOCK_REALTIME, &wall);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	cr_assert_eq(ns.abi_minor, TDSTAT_ABI_MINOR);
	cr_assert_neq(ns.window_start_realtime_ns, 0, "no anchor from a shim of minor %u", ns.abi_minor);
	long long offset = (long long)(wall.tv_sec - mono.tv_sec) * 1000000000ll + (wall.tv_nsec - mono.tv_nsec);
	long long expected = (long long)ns.window_start_ns + offset;
	cr_assert_leq(llabs((long long)ns.window_start_realtime_ns - expected), 1000000000ll,
		      "anchor %llu, expected about %lld", (unsigned long long)ns.window_start_realtime_ns, expected);
	session_stop(&s);
}

/*
 * The agent reuses its last reading of the process CPU clock when the
 * region proves no thread ran since (stats.c).  A thread the shim never
 * saw (a raw clone) proves nothing: it burns CPU while every record holds
 * still, and the figures must show it.  An agent that trusted the records
 * alone reports the same cpu_ns twice.
 */
Test(live, cpu_of_an_untracked_thread_is_counted)
{
	td_ta_stats_ns_t a = { .size = sizeof(a) }, b = { .size = sizeof(b) };
	struct session s;
	char reply[64];
	uint64_t kernel_before;

	session_start(&s, "condvar", 2, 0, NULL);
	tdtest_sleep_ms(30);
	cr_assert(live_command(&s.target, "untracked 400", reply, sizeof(reply)));
	if (strcmp(reply, "unsupported") == 0) {
		session_stop(&s);
		cr_skip_test("no raw clone thread on this architecture");
	}
	cr_assert_str_eq(reply, "untracked");
	/* Main is back in poll() for longer than the commit lag: from here
	 * on no record changes. */
	tdtest_sleep_ms(30);
	cr_assert_eq(td_ta_get_stats_ns(s.ta, &a), TD_OK);
	kernel_before = kernel_cpu_ns(s.target.pid);
	/* Until the kernel has seen the clone burn 50 ms (bounded: 15 s on
	 * a loaded machine). */
	for (int i = 0; i < 1500 && kernel_cpu_ns(s.target.pid) < kernel_before + 50000000u; i++)
		tdtest_sleep_ms(10);
	cr_assert_geq(kernel_cpu_ns(s.target.pid), kernel_before + 50000000u, "the clone never ran");
	cr_assert_eq(td_ta_get_stats_ns(s.ta, &b), TD_OK);
	cr_assert_eq(b.window_start_ns, a.window_start_ns);
	cr_assert_geq(b.cpu_ns, a.cpu_ns + 50000000u, "cpu %llu then %llu: the clone's CPU is missing",
		      (unsigned long long)a.cpu_ns, (unsigned long long)b.cpu_ns);
	session_stop(&s);
}

/* A visitor that takes its time: a walk of a few milliseconds. */
static int slow_visitor(const td_thr_stats_ns_t *thread, void *data)
{
	uint64_t until = tdstat_monotonic_ns() + 20000;

	(void)thread;
	(void)data;
	while (tdstat_monotonic_ns() < until)
		;
	return 0;
}

/*
 * counted_ns (the fourth version of td_ta_stats_ns_t): a snapshot counts
 * each thread up to its clock before the reads and ends its window at
 * the clock after them.  With every thread asleep, LWPs between two
 * snapshots is the thread count exactly when divided by the growth of
 * counted_ns; the growth of window_ns differs by how much longer one
 * snapshot's reads took than the other's (here a slow visitor makes
 * every other one take milliseconds longer), which made the command
 * show more LWPs than threads.
 */
Test(live, lwps_between_snapshots_divide_by_counted_time)
{
	td_ta_stats_ns_t snapshots[8];
	struct session s;

	session_start(&s, "condvar", 100, 0, NULL);
	tdtest_sleep_ms(50);
	for (int i = 0; i < 8; i++) {
		snapshots[i] = (td_ta_stats_ns_t){ .size = sizeof(snapshots[i]) };
		if (i % 2)
			cr_assert_eq(td_ta_thr_stats_iter(s.ta, slow_visitor, NULL, &snapshots[i]), TD_OK);
		else
			cr_assert_eq(td_ta_get_stats_ns(s.ta, &snapshots[i]), TD_OK);
		cr_assert_eq(snapshots[i].size, sizeof(snapshots[i]));
		cr_assert_leq(snapshots[i].counted_ns, snapshots[i].window_ns);
		cr_assert_eq(snapshots[i].nthreads, 101);
		tdtest_sleep_ms(5);
	}
	for (int i = 1; i < 8; i++) {
		const td_ta_stats_ns_t *a = &snapshots[i - 1], *b = &snapshots[i];

		cr_assert_eq(b->window_start_ns, a->window_start_ns);
		/* counted_ns is a mean, rounded down: within 1 ns a thread at
		 * each end. */
		cr_assert_leq(llabs((long long)(b->lwps_ns - a->lwps_ns) - 101 * (long long)(b->counted_ns - a->counted_ns)),
			      2 * 101,
			     "snapshots %d and %d: lwps grew %llu, counted %llu", i - 1, i,
			     (unsigned long long)(b->lwps_ns - a->lwps_ns),
			     (unsigned long long)(b->counted_ns - a->counted_ns));
	}
	/* The slow walks do end their windows later than they count. */
	cr_assert_geq(snapshots[1].window_ns - snapshots[1].counted_ns, 2000000u);
	session_stop(&s);
}

/* The POSIX timers of this process on `clock`: /proc/self/timers lists
 * each with its "ClockID:". */
static int timers_on_clock(clockid_t clock)
{
	FILE *timers = fopen("/proc/self/timers", "r");
	char line[128];
	int count = 0;

	cr_assert_not_null(timers, "/proc/self/timers: %s", strerror(errno));
	while (fgets(line, sizeof(line), timers)) {
		long id;
		if (sscanf(line, "ClockID: %ld", &id) == 1 && id == (long)clock)
			count++;
	}
	fclose(timers);
	return count;
}

/*
 * On a large target (libc_db's TDDB_CPU_TIMER_THREADS: 1,000 threads) an
 * agent arms a timer on the target's process CPU clock, so the kernel
 * keeps the total instead of walking every thread on each read
 * (docs/READER.md "The process CPU clock").  The timer is the agent's:
 * one per agent, none on a small target, gone at td_ta_delete (a leak
 * would keep the target paying for it).
 */
Test(live, cpu_timer_is_per_agent_and_released)
{
	td_ta_stats_ns_t a = { .size = sizeof(a) }, b = { .size = sizeof(b) };
	struct session s, small;
	struct ps_prochandle *ph2;
	td_thragent_t *ta2;
	clockid_t clock;

	session_start(&small, "condvar", 3, 0, NULL);
	cr_assert_eq(td_ta_get_stats_ns(small.ta, &a), TD_OK);
	cr_assert_eq(timers_on_clock(tdstat_process_cpu_clock(small.target.pid)), 0, "a small target has none");
	session_stop(&small);

	session_start(&s, "condvar", 1000, 0, NULL);
	clock = tdstat_process_cpu_clock(s.target.pid);
	cr_assert_eq(tdps_open(s.target.pid, &ph2), TDPS_OK);
	cr_assert_eq(td_ta_new(ph2, &ta2), TD_OK);
	cr_assert_eq(timers_on_clock(clock), 0, "no timer before a snapshot needs the clock");
	cr_assert_eq(td_ta_get_stats_ns(s.ta, &a), TD_OK);
	cr_assert_eq(a.nthreads, 1001);
	cr_assert_eq(timers_on_clock(clock), 1, "the first agent's");
	cr_assert_eq(td_ta_get_stats_ns(ta2, &b), TD_OK);
	cr_assert_eq(timers_on_clock(clock), 2, "one per agent");
	cr_assert_eq(td_ta_get_stats_ns(s.ta, &a), TD_OK);
	cr_assert_eq(timers_on_clock(clock), 2, "armed once");
	cr_assert_eq(td_ta_delete(ta2), TD_OK);
	tdps_close(ph2);
	cr_assert_eq(timers_on_clock(clock), 1, "td_ta_delete releases the agent's timer");
	cr_assert_eq(td_ta_delete(s.ta), TD_OK);
	cr_assert_eq(timers_on_clock(clock), 0, "td_ta_delete releases the agent's timer");
	tdps_close(s.ph);
	cr_assert_eq(live_stop(&s.target), 0);
}

Test(live, setconcurrency_both_ways)
{
	td_ta_stats_t stats;
	struct session s;
	char reply[64];

	session_start(&s, "setconc", 1, 4, NULL);
	cr_assert_eq(td_ta_get_stats(s.ta, &stats), TD_OK);
	cr_assert_eq(stats.r_concurrency, 4);
	cr_assert_eq(td_ta_setconcurrency(s.ta, 9), TD_OK);
	cr_assert_eq(td_ta_get_stats(s.ta, &stats), TD_OK);
	cr_assert_eq(stats.r_concurrency, 9);
	cr_assert(live_command(&s.target, "getconc", reply, sizeof(reply)));
	cr_assert_str_eq(reply, "9", "the target's pthread_getconcurrency sees it");
	session_stop(&s);
}

Test(live, exited_target_is_dberr_and_no_process)
{
	struct session s;
	td_ta_stats_t stats;
	char buffer[512];

	session_start(&s, "condvar", 1, 0, NULL);
	cr_assert_eq(live_stop(&s.target), 0);
	cr_assert_eq(td_ta_get_stats(s.ta, &stats), TD_DBERR);
	cr_assert_eq(tdps_last_status(s.ph), TDPS_NO_PROCESS);
	tdps_explain(tdps_last_status(s.ph), s.target.pid, buffer, sizeof(buffer));
	cr_assert(strstr(buffer, "no such process"), "%s", buffer);
	cr_assert_eq(td_ta_delete(s.ta), TD_OK);
	tdps_close(s.ph);
}

Test(live, open_reports_missing_process)
{
	struct ps_prochandle *ph = (struct ps_prochandle *)1;
	pid_t child = fork();

	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	cr_assert_eq(tdps_open(child, &ph), TDPS_NO_PROCESS);
	cr_assert_null(ph);
	cr_assert_eq(tdps_open(0, &ph), TDPS_NO_PROCESS);
	cr_assert_eq(tdps_open(-5, &ph), TDPS_NO_PROCESS);
}

/* An unprivileged user may not read another user's process. */
Test(live, open_reports_permission)
{
	int status;
	pid_t child;

	if (geteuid() != 0)
		cr_skip_test("needs root to become another user");
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		struct ps_prochandle *ph;

		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(3);
		_exit(tdps_open(getppid(), &ph) == TDPS_PERMISSION ? 0 : 1);
	}
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
}

Test(live, explain_names_cause_and_fix)
{
	char buffer[512];

	tdps_explain(TDPS_PERMISSION, 42, buffer, sizeof(buffer));
	cr_assert(strstr(buffer, "42") && strstr(buffer, "ptrace") && strstr(buffer, "CAP_SYS_PTRACE"), "%s", buffer);
	tdps_explain(TDPS_NOT_DYNAMIC, 42, buffer, sizeof(buffer));
	cr_assert(strstr(buffer, "static"), "%s", buffer);
	tdps_explain(TDPS_NO_PROCESS, 42, buffer, sizeof(buffer));
	cr_assert(strstr(buffer, "no such process"), "%s", buffer);
	cr_assert_null(strchr(buffer, '\n'));
	tdps_explain(TDPS_IO, 42, buffer, 8);
	cr_assert_eq(strlen(buffer), 7);
}

/* A static program has no dynamic symbol tables: the shim cannot be in it,
 * and the provider says why. */
Test(live, static_target_is_not_dynamic)
{
	struct tdtest_child child;
	const char *argv[] = { STATIC_TARGET_PATH, NULL };
	struct tdtest_spawn_options spawn = { .pipe_stdin = true };
	struct ps_prochandle *ph;
	td_thragent_t *ta = NULL;
	char line[64];

	cr_assert_eq(tdtest_spawn(&child, argv, &spawn), 0);
	cr_assert_geq(tdtest_read_line(&child, line, sizeof(line), 10000), 0);
	cr_assert_eq(tdps_open(child.pid, &ph), TDPS_OK);
	cr_assert_eq(td_ta_new(ph, &ta), TD_NOLIBTHREAD);
	cr_assert_eq(tdps_last_status(ph), TDPS_NOT_DYNAMIC);
	tdps_close(ph);
	cr_assert_eq(tdtest_wait(&child, 10000), 0);
}

/* The provider's own routines on a live target. */
Test(live, provider_reads_writes_and_refuses_to_stop)
{
	struct session s;
	psaddr_t region;
	uint64_t magic = 0;
	int32_t concurrency = 11, back = 0;
	uintptr_t field;

	session_start(&s, "condvar", 1, 0, NULL);
	cr_assert_eq(ps_pglobal_lookup(s.ph, NULL, TDSTAT_REGION_SYMBOL, &region), PS_OK);
	cr_assert_eq(ps_pdread(s.ph, region, &magic, sizeof(magic)), PS_OK);
	cr_assert_eq(magic, TDSTAT_REGION_MAGIC);
	field = (uintptr_t)region + offsetof(struct tdstat_region_header, control.r_concurrency);
	cr_assert_eq(ps_ptwrite(s.ph, (psaddr_t)field, &concurrency, sizeof(concurrency)), PS_OK);
	cr_assert_eq(ps_ptread(s.ph, (psaddr_t)field, &back, sizeof(back)), PS_OK);
	cr_assert_eq(back, 11);
	cr_assert_eq(ps_pglobal_lookup(s.ph, "libc.so.6", "no_such_symbol_anywhere", &region), PS_NOSYM);
	cr_assert_eq(ps_pglobal_lookup(s.ph, "libc.so.6", "malloc", &region), PS_OK);
	cr_assert_eq(ps_pdread(s.ph, (psaddr_t)8, &magic, sizeof(magic)), PS_BADADDR);
	cr_assert_eq(tdps_last_status(s.ph), TDPS_IO);
	cr_assert_eq(ps_getpid(s.ph), s.target.pid);
	cr_assert_eq(ps_pstop(s.ph), PS_ERR);
	cr_assert_eq(ps_pcontinue(s.ph), PS_ERR);
	cr_assert_eq(ps_lstop(s.ph, s.target.pid), PS_ERR);
	cr_assert_eq(ps_lcontinue(s.ph, s.target.pid), PS_ERR);
	session_stop(&s);
}

/* TDSTAT_MAX_THREADS lowers the record capacity: the threads past it are
 * counted in the overflow figure, and in nthreads. */
Test(live, overflow_threads_are_counted)
{
	struct live_options options = { .enable = true, .max_threads = "4" };
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	struct session s;
	int n;

	session_start(&s, "condvar", 6, 0, &options);
	cr_assert_eq(td_ta_get_nthreads(s.ta, &n), TD_OK);
	cr_assert_eq(n, 7);
	cr_assert_eq(td_ta_get_stats_ns(s.ta, &ns), TD_OK);
	cr_assert_eq(ns.nthreads, 7);
	cr_assert_eq(ns.overflow_threads, 3);
	session_stop(&s);
}
