/* SPDX-License-Identifier: MIT */
/*
 * Regressions from the adversarial review (branch `break`,
 * tests/reliability/break; README.md there numbers the findings).  Every
 * target is a child (rel_review_target, rel_review_stress) with the shim
 * in its own environment only; this program is never preloaded.
 *
 *   bad-pointers       unreadable timeout pointers (futex through
 *                      syscall(), epoll_pwait2, nanosleep, clock_nanosleep
 *                      relative and absolute, sigtimedwait): the same exit
 *                      and result/errno per call bare and under the shim,
 *                      gathering off and on (were SIGSEGV in the shim)
 *   slow-clock         a clock read of ~1 us (rel_slowclock preloaded
 *                      before the shim) must not hang a program that
 *                      changes state (announce_change spun forever)
 *   signal-start       a waiting handler run at each thread's start: after
 *                      the threads end, 1 thread and runnable ~0 (leaked
 *                      records counted RUNNABLE)
 *   requeue            a futex waiter requeued then woken 8 ms later:
 *                      runnable ~0 (was 0.875)
 *   fast-fail          futex waits that fail at once (EAGAIN) in 2
 *                      threads: idle in futex no more than the kernel's
 *                      run-queue wait (was 1.6 of 2 threads, runnable 0.32)
 *   sys-exit           a thread ended by syscall(SYS_exit): 1 thread and
 *                      runnable ~0 afterwards
 *   resets-monotonic   resets racing back-to-back snapshots: no integral
 *                      goes down within one window
 *   stamps-on-clock    the shim dates changes by the time stamp counter
 *                      (runtime/announce.c): no record's last change is
 *                      dated after the reader's clock, by more than 50 us,
 *                      in 3 s of snapshots of the churning target
 *   preempting-wakee   a waiter that preempts its waker inside the wake
 *                      and waits again before the waker could stamp:
 *                      runnable ~0 (a stamp written after the wake landed
 *                      in the next wait, which counted as woken up to the
 *                      commit lag early: 0.5 of 20 ms turns)
 *   remote-busy        a waiter woken from another CPU onto a CPU busy
 *                      with a higher-priority spinner for 5 ms of each
 *                      20 ms turn: runnable ~0.5 (spinner 0.25, the
 *                      waiter's run-queue wait 0.25), not 0.25 (a wake
 *                      from another CPU dated at the waiter's return
 *                      whatever its delay); needs SCHED_FIFO (root)
 *   remote-idle        ping-pong with 20 us turns between two CPUs that
 *                      idle in between: runnable time within 15% of the
 *                      threads' kernel CPU + run-queue time (the waker's
 *                      stamp counted the ~15 us a halted virtual CPU takes
 *                      to take the wake: 1.4x); needs SCHED_FIFO (root)
 *   futex-queue        mutex-queue on a lock of Rust std's kind (a futex
 *                      word; waits and wakes through libc's syscall()):
 *                      within 5% (one stamp slot per word gave each
 *                      woken waiter the newest wake's stamp, made while
 *                      it waited for a CPU: 0.89-0.92; a wake of one
 *                      waiter claimed from the word's ring: 0.99)
 *   futex-waitv-mix    a futex_waitv waiter and a plain FUTEX_WAIT waiter
 *                      of one word, woken in turn every 5 ms: runnable
 *                      <= 0.15 (the plain waiter claimed the ring entry
 *                      the waitv one left: 0.51-0.57; helper-60)
 *   futex-ring-collide 24 words of one claim ring woken in bursts: within
 *                      10% (entries written over by the other words'
 *                      wakes, and no slot copy: 0.56-0.58; helper-60)
 *   timer-idle         a thread that spins 100 us and sleeps 400 us in
 *                      nanosleep, alone on its CPU: runnable time within
 *                      15% of its kernel CPU + run-queue time (dated at the
 *                      deadline plus the slack, a timer that a halted
 *                      virtual CPU takes ~140 us late counted the delay:
 *                      1.3-1.7x)
 *   timer-idle-realtime-cond, -sem, -clock  timer-idle sleeping to a
 *                      CLOCK_REALTIME deadline (pthread_cond_timedwait on a
 *                      default condvar, sem_timedwait, clock_nanosleep
 *                      TIMER_ABSTIME): the same (the deadline moved to
 *                      the return: 0.68-0.75; helper-72)
 *   timer-queued       four threads on one CPU, 40 us of work and a 100 us
 *                      nanosleep each: within 25% (their timers' wake-ups
 *                      taken for a halted CPU's: 0.62-0.64; helper-72)
 *   timer-herd         four threads on one CPU asleep to one deadline
 *                      every 1 ms: not above 1.3x (1.3-4.3x; helper-74)
 *   timer-slack        timer-idle with the thread's timer slack set to
 *                      1 ms by prctl() in the thread; and
 *   timer-slack-inherited  by main through syscall(SYS_prctl) before it
 *                      creates the thread: within 15% (the slack read at
 *                      start, 50 us, dated each wake 950 us early)
 *   timer-realtime     timer-idle's thread (spinning 50 us) made
 *                      SCHED_FIFO by itself after a slack of 1 ms and
 *                      before one of 5 ms; timer-realtime-other: by main;
 *                      timer-realtime-left: a thread that set 50 us taken
 *                      into real time and out by main (its default slack,
 *                      its creator's 2 ms, again); timer-realtime-syscall:
 *                      the same by itself through syscall(): within
 *                      0.85-1.5x, as the round trips below (slack dated
 *                      as set: 0.74-0.76x, 4.5x)
 *   timer-realtime-keep-params, -vfork, -reuse, -reset  a SCHED_OTHER
 *                      thread with its own 2 ms slack the shim took for
 *                      real time (helper-66): within 0.5-1.5x (taken for
 *                      real time, dated with no slack: 15-25x)
 *   timer-realtime-adopted  the same for a SIGEV_THREAD timer's thread
 *                      in a process started real time whose main left it
 *                      (helper-67: 20-24x)
 *   timer-realtime-round-trips, -vfork-parent  a thread whose slack the
 *                      kernel set (its default after 32 round trips
 *                      through real time; none, made real time by its
 *                      vfork child): within 0.85-1.5x (helper-67:
 *                      0.66-0.84)
 *   sampled-elsewhere  a thread that spins 20 us and sleeps 2 ms in
 *                      nanosleep (timer slack 200 us, set unseen by an
 *                      inline system call), beside another whose
 *                      sleeps of the same kind are light at one call site
 *                      and hold a 150 us signal handler at another: the
 *                      first one's runnable share (tdstat -t) at most 1.6x
 *                      its kernel CPU + run-queue share (the CPU a sleep
 *                      costs sampled at the next sleep of the kind, which
 *                      the other thread's handler filled, read 2.9-3.9x;
 *                      helper-64)
 *   timer-busy         a thread sleeping 1 ms at a time in nanosleep on a
 *                      CPU busy with a higher-priority spinner for 5 ms of
 *                      each 20 ms: runnable ~0.5 (spinner 0.25, the
 *                      sleeper's run-queue wait after its timer ~0.25),
 *                      not 0.25 (every late return dated at the return);
 *                      needs SCHED_FIFO (root)
 *   mutex-queue        four threads queueing on one default mutex
 *                      (10 us held, 30 us outside, two CPUs): runnable
 *                      time within 5% of their kernel CPU + run-queue
 *                      time (one stamp slot gave each woken waiter the
 *                      newest unlock's stamp, made while it waited for a
 *                      CPU: 0.85-0.93 where a system call takes a
 *                      microsecond; the ring 1.000-1.007)
 *   mutex-queue-c11    four threads queueing on one default mutex (200 us
 *                      held, 100 us asleep outside), three locking through
 *                      C11's mtx_lock, which glibc runs inside libc:
 *                      within 15% (1.06-1.08: a wake onto the idle CPU
 *                      dated at its stamp; C11 waits unseen, and the plain
 *                      locker claiming the stamps of wakes that went to
 *                      them: 2.5-2.7)
 *   queued-posts       two semaphore waiters on the poster's CPU, woken
 *                      by two posts 4 ms apart, wait for the CPU 8 and
 *                      4 ms: runnable time within 10% of the threads'
 *                      kernel CPU + run-queue time (one stamp slot gave
 *                      both waiters the second post's stamp: 0.8); needs
 *                      SCHED_FIFO (root)
 *   racing-posts       a semaphore waiter woken by a post, waiting for the
 *                      CPU 4 ms while posts that wake nobody race on both
 *                      CPUs: runnable time within 10% of the threads'
 *                      kernel CPU + run-queue time (a withdrawn post's
 *                      entry given back behind a newer one stopped the
 *                      waiter's walk of the claim ring before its own
 *                      stamp: 0.53-0.62); needs SCHED_FIFO (root)
 *   stalled-store      the shim built to stall one announcement in 256
 *                      for 2 ms between its counter read and its store,
 *                      inside the restartable sequence (what a hypervisor
 *                      taking the virtual CPU there does, which the kernel
 *                      cannot see): at most 1 decrease in 4 s (the late
 *                      store cut back what readers had reported: 14-33;
 *                      announced again only after an anchor renewal, the
 *                      late T visible for hundreds of ns: 0-4 a run, 4 and
 *                      10 in CI; withdrawn at once: 0 in 24 runs)
 *   late-announcement  writers whose clock reads return late (preempted
 *                      right after reading, LATECLOCK_NS with rel_slowclock
 *                      preloaded before the shim): no integral goes down
 *                      (an announcement stored late was visible to readers
 *                      with a time before what earlier snapshots reported)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rel_support.h"

#define TARGET REL_REVIEW_TARGET_PATH

static char *shim_env(void)
{
	static char entry[4096];
	snprintf(entry, sizeof entry, "TDSTAT_SHIM=%s", tdtest_shim_path());
	return entry;
}

static const char *status_text(int status)
{
	static char text[64];
	if (status == -1)
		return "timed out or failed";
	if (WIFSIGNALED(status))
		snprintf(text, sizeof text, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(text, sizeof text, "exit %d", WEXITSTATUS(status));
	return text;
}

/* ---- bad-pointers ---- */
static int bad_pointers(void)
{
	const char *argv[] = { TARGET, "bad-pointers", NULL };
	char *bare = NULL, *shim = NULL;
	size_t length;
	int status = tdtest_run(argv, NULL, &bare, &length, 20000);

	if (status != 0 || !bare) {
		fprintf(stderr, "bare run: %s\n", status_text(status));
		return 1;
	}
	printf("bare:\n%s", bare);
	/* The kernel's answer, checked once so that a change of the target
	 * cannot make the comparison vacuous. */
	if (!strstr(bare, "nanosleep ret -1 errno 14") || !strstr(bare, "clock_nanosleep_abs ret 14 errno 0"))
		rel_fail("the bare run did not give EFAULT: is the target right?");
	for (int enable = 0; enable <= 1; enable++) {
		const char *env[] = { enable ? "TDSTAT_ENABLE=1" : "TDSTAT_ENABLE=0", NULL };
		struct tdtest_spawn_options options = { .preload = tdtest_shim_path(), .env = env };
		status = tdtest_run(argv, &options, &shim, &length, 20000);
		if (status != 0 || !shim) {
			rel_fail("under the shim (TDSTAT_ENABLE=%d): %s", enable, status_text(status));
		} else if (strcmp(bare, shim)) {
			rel_fail("under the shim (TDSTAT_ENABLE=%d) the calls answer differently:\n%s", enable, shim);
		} else
			printf("shim, TDSTAT_ENABLE=%d: same\n", enable);
		free(shim);
		shim = NULL;
	}
	free(bare);
	return rel_failures ? 1 : 0;
}

/* ---- slow-clock ---- */
static int slow_clock(void)
{
	const char *argv[] = { TARGET, "tiny-wait", NULL };
	const char *env[] = { "TDSTAT_ENABLE=1", "SLOWCLOCK_NS=700", NULL };
	char preload[8192];
	char *output = NULL;
	size_t length;
	uint64_t start = tdtest_monotonic_ns();

	snprintf(preload, sizeof preload, "%s %s", REL_SLOWCLOCK_PATH, tdtest_shim_path());
	struct tdtest_spawn_options options = { .preload = preload, .env = env };
	int status = tdtest_run(argv, &options, &output, &length, 10000);
	double took = (tdtest_monotonic_ns() - start) / 1e9;

	printf("tiny-wait with a ~1 us clock read: %s after %.2f s, output %s", status_text(status), took,
	       output ? output : "(none)\n");
	if (status != 0 || !output || strcmp(output, "done\n"))
		rel_fail("tiny-wait did not finish within 10 s under a slow clock (a hang in announce_change?)");
	free(output);
	return rel_failures ? 1 : 0;
}

/* ---- the tdstat run modes ---- */
static double json_number(const char *json, const char *key, bool *ok)
{
	char pattern[64];
	snprintf(pattern, sizeof pattern, "\"%s\":", key);
	const char *at = strstr(json, pattern);
	if (!at) {
		*ok = false;
		return 0;
	}
	return strtod(at + strlen(pattern), NULL);
}

/* Runs `tdstat run --json -o FILE -- TARGET args...` and reads the line. */
static bool tdstat_run_json(const char *const target_args[], double *nthreads, double *runnable, double *window,
			    double *futex, double *cpu, double *wait)
{
	char path[] = "/tmp/rel_review_XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) {
		rel_fail("mkstemp: %s", strerror(errno));
		return false;
	}
	close(fd);
	const char *argv[16] = { REL_TDSTAT_PATH, "run", "--json", "-o", path, "--", TARGET };
	int n = 7;
	for (int i = 0; target_args[i] && n < 15; i++)
		argv[n++] = target_args[i];
	argv[n] = NULL;
	const char *env[] = { shim_env(), NULL };
	struct tdtest_spawn_options options = { .env = env };
	char *output = NULL;
	size_t length;
	int status = tdtest_run(argv, &options, &output, &length, 30000);
	printf("target output: %s", output ? output : "(none)\n");
	const char *cpu_at = output ? strstr(output, "cpu ") : NULL;
	const char *wait_at = output ? strstr(output, "wait ") : NULL;
	if (cpu)
		*cpu = cpu_at ? strtod(cpu_at + 4, NULL) : -1;
	if (wait)
		*wait = wait_at ? strtod(wait_at + 5, NULL) : -1;
	free(output);

	char line[4096] = "";
	FILE *f = fopen(path, "r");
	if (f) {
		if (!fgets(line, sizeof line, f))
			line[0] = 0;
		fclose(f);
	}
	unlink(path);
	printf("tdstat run --json: %s: %s", status_text(status), line[0] ? line : "(no line)\n");
	if (status != 0) {
		rel_fail("tdstat run: %s", status_text(status));
		return false;
	}
	bool ok = true;
	*nthreads = json_number(line, "nthreads", &ok);
	*runnable = json_number(line, "runnable", &ok);
	if (window)
		*window = json_number(line, "window_s", &ok);
	if (futex)
		*futex = json_number(line, "futex", &ok);
	if (!ok)
		rel_fail("no nthreads/runnable in tdstat's JSON line");
	return ok;
}

static int expect(const char *const args[], int want_threads, double runnable_min, double runnable_max)
{
	double nthreads, runnable;
	if (!tdstat_run_json(args, &nthreads, &runnable, NULL, NULL, NULL, NULL))
		return 1;
	if (want_threads > 0 && (int)nthreads != want_threads)
		rel_fail("nthreads %d at the end, expected %d (a record leaked)", (int)nthreads, want_threads);
	if (runnable < runnable_min || runnable > runnable_max)
		rel_fail("runnable %.3f, expected within [%.2f, %.2f]", runnable, runnable_min, runnable_max);
	return rel_failures ? 1 : 0;
}

/*
 * Two threads that never sleep, in futex waits that fail at once.  Such a
 * wait counts blocked only while preempted for longer than the commit lag
 * (region.c close_interval), so the time idle in futex is at most the
 * kernel's run-queue wait of the threads (schedstat), whatever the load.
 * The defect counted every whole call blocked, on a CPU too: idle in futex
 * 1.6 of 2 threads unloaded (runnable 0.32), 70-80% of the threads' life
 * (CPU + run-queue wait) at a load of 12 on 2 CPUs, where the fix gave
 * 15-37%: at most half is allowed as well.
 */
static int fast_fail(void)
{
	const char *const args[] = { "fast-fail", "2", "2", NULL };
	double nthreads, runnable, window, futex, cpu, wait;

	if (!tdstat_run_json(args, &nthreads, &runnable, &window, &futex, &cpu, &wait))
		return 1;
	double idle = futex * window;
	printf("idle in futex %.3f s; the threads' kernel figures: on a CPU %.3f s, waiting for one %.3f s\n",
	       idle, cpu, wait);
	if (cpu <= 0.05)
		rel_fail("no CPU time from schedstat (%.3f s): nothing to compare with", cpu);
	else if (idle > wait + 0.1 * cpu + 0.02)
		rel_fail("idle in futex %.3f s, more than the threads ever waited for a CPU (%.3f s) plus 10%% of "
			 "their CPU time: failed futex waits counted as blocked", idle, wait);
	else if (idle > 0.5 * (cpu + wait))
		rel_fail("idle in futex %.3f s, more than half the threads' life (%.3f s): failed futex waits "
			 "counted as blocked", idle, cpu + wait);
	return rel_failures ? 1 : 0;
}

/* The runnable time of target MODE within `tolerance` of its threads'
 * kernel CPU + run-queue time (the target prints them), in one of three
 * tries (a loaded machine moves one run; the defects moved every run). */
static int runnable_within(const char *mode, double low, double high);
static int runnable_between(const char *mode, double low, bool low_of_cpu, double high);

static int runnable_as_kernel(const char *mode, double tolerance)
{
	return runnable_within(mode, 1 - tolerance, 1 + tolerance);
}

/* Within [low, high] times the kernel's figure. */
static int runnable_within(const char *mode, double low, double high)
{
	return runnable_between(mode, low, false, high);
}

/* At least `low` times the kernel's figure, or of its CPU time alone with
 * `low_of_cpu`, and at most `high` times the kernel's figure. */
static int runnable_between(const char *mode, double low, bool low_of_cpu, double high)
{
	const char *const args[] = { mode, NULL };
	double nthreads, runnable, window, cpu, wait;

	if (geteuid() != 0 || sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("skipped: needs root (SCHED_FIFO) and 2 CPUs\n");
		return 77;
	}
	/* The kernel leaves out what the hypervisor steals from a CPU a
	 * thread wanted (tdtest.h): a try with steal does not count, and
	 * after three such the last one allows tdstat above the kernel by
	 * the steal. */
	for (int attempt = 1, stolen_tries = 0; attempt <= 3 + stolen_tries; attempt++) {
		uint64_t start = tdtest_monotonic_ns();
		double steal0 = tdtest_steal_s();
		if (!tdstat_run_json(args, &nthreads, &runnable, &window, NULL, &cpu, &wait))
			return 1;
		double steal1 = tdtest_steal_s(), span = (double)(tdtest_monotonic_ns() - start) / 1e9;
		double steal = steal0 >= 0 && steal1 >= steal0 ? steal1 - steal0 : 0;
		bool stolen = steal / span >= TDTEST_STEAL_SIGNIFICANT;
		double counted = runnable * window, kernel = cpu + wait;
		printf("runnable %.3f s; the threads' kernel figures: on a CPU %.3f s, waiting for one %.3f s; "
		       "ratio %.3f; the machine's steal %.3f s over %.3f s\n",
		       counted, cpu, wait, kernel > 0 ? counted / kernel : 0, steal, span);
		if (kernel <= 0.1) {
			rel_fail("no kernel figures (%.3f s): nothing to compare with", kernel);
			break;
		}
		bool last = attempt == 3 + stolen_tries;
		if (stolen && !last && stolen_tries < 3) {
			stolen_tries++;
			continue;
		}
		double allowed = high * (kernel + (stolen ? steal : 0));
		if (counted >= low * (low_of_cpu ? cpu : kernel) && counted <= allowed)
			return 0;
		if (last)
			rel_fail("runnable %.3f s against the kernel's %.3f s (on a CPU %.3f s; steal %.3f s): "
				 "outside %.2f (of the %s)-%.2fx in %d tries",
				 counted, kernel, cpu, steal, low, low_of_cpu ? "CPU time" : "whole", high, attempt);
	}
	return rel_failures ? 1 : 0;
}

/* ---- resets-monotonic ---- */
/* Back-to-back snapshots of the churning target for `seconds`, while a
 * second agent resets `resets` times: no integral goes down within one
 * window. */
/* `allowed`: decreases tolerated (a window known to be left open). */
static int monotonic_under(const char *preload, const char *const *env, int resets, long allowed)
{
	const char *argv[] = { REL_REVIEW_STRESS_PATH, "6", NULL };
	struct tdtest_spawn_options options = { .preload = preload, .env = env };
	struct tdtest_child child;
	struct rel_agent agent;
	const double seconds = 4.0;

	if (tdtest_spawn(&child, argv, &options) != 0) {
		fprintf(stderr, "cannot start the stress target: %s\n", strerror(errno));
		return 1;
	}
	td_err_e err = rel_agent_open(&agent, child.pid, 5000);
	if (err != TD_OK) {
		rel_fail("agent on the stress target: %s", rel_td_name(err));
		kill(child.pid, SIGKILL);
		tdtest_wait(&child, 5000);
		return 1;
	}
	fflush(stdout);
	fflush(stderr);
	pid_t resetter = fork();
	if (resetter == 0) {
		struct rel_agent own;
		if (rel_agent_open(&own, child.pid, 5000) != TD_OK)
			_exit(3);
		int failed = 0;
		for (int i = 0; i < resets; i++) {
			td_err_e reset = td_ta_reset_stats(own.ta);
			if (reset != TD_OK && failed++ < 5)
				fprintf(stderr, "reset %d: %s\n", i, rel_td_name(reset));
			tdtest_sleep_ms((long)(seconds * 1000 / resets));
		}
		rel_agent_close(&own);
		/* A reset may fail now and then (reported above); most must not. */
		_exit(failed > resets / 2 ? 4 : 0);
	}

	td_ta_stats_ns_t prev = { 0 }, cur;
	bool have = false;
	long snapshots = 0, failed = 0, decreases = 0, windows = 0;
	uint64_t largest = 0; /* the largest decrease, ns */
	uint64_t end = tdtest_monotonic_ns() + (uint64_t)(seconds * 1e9);
	while (tdtest_monotonic_ns() < end) {
		memset(&cur, 0, sizeof cur);
		cur.size = sizeof cur;
		err = td_ta_get_stats_ns(agent.ta, &cur);
		snapshots++;
		if (err != TD_OK) {
			failed++;
			have = false;
			continue;
		}
		if (have && prev.window_start_ns == cur.window_start_ns) {
			const char *what = NULL;
			uint64_t a = 0, b = 0;
#define CHECK(f) if (!what && cur.f < prev.f) { what = #f; a = prev.f; b = cur.f; }
			CHECK(lwps_ns) CHECK(runnable_ns) CHECK(idle_ns) CHECK(window_ns) CHECK(cpu_ns) CHECK(running_ns)
#undef CHECK
			for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT && !what; k++)
				if (cur.idle_by_kind_ns[k] < prev.idle_by_kind_ns[k]) {
					what = td_wait_kind_name((unsigned)k);
					a = prev.idle_by_kind_ns[k];
					b = cur.idle_by_kind_ns[k];
				}
			if (what && a - b > largest)
				largest = a - b;
			if (what && decreases++ < 10)
				fprintf(stderr, "decrease of %s within one window: %llu -> %llu ns\n", what,
					(unsigned long long)a, (unsigned long long)b);
		} else if (have)
			windows++;
		prev = cur;
		have = true;
	}
	int rstatus = -1;
	waitpid(resetter, &rstatus, 0);
	rel_agent_close(&agent);
	kill(child.pid, SIGKILL);
	tdtest_wait(&child, 5000);
	printf("snapshots %ld failed %ld, new windows seen %ld, decreases %ld; resetter %s\n", snapshots, failed,
	       windows, decreases, status_text(rstatus));
	if (rstatus != 0)
		rel_fail("the resetter: %s", status_text(rstatus));
	/* One decrease of a few milliseconds is the hole docs/READER.md
	 * leaves: a host that deschedules the virtual CPU between a writer's
	 * counter read and its store makes a late announcement, visible until
	 * the writer's next store (CI once: lwps_ns 3.8 ms down in 122,146
	 * snapshots; stalled-store shows the rate, 1 in 12 runs at one
	 * stall in 256 announcements).  With resets only: what that test is
	 * for, a reset racing the snapshots, is not one such in a run, and
	 * late-announcement keeps holding the writer's side to none. */
	bool host_hole = resets > 0 && decreases == allowed + 1 && largest <= 5000000;
	if (host_hole)
		printf("one decrease of %.3f ms: the late announcement of a descheduled writer (READER.md)\n",
		       largest / 1e6);
	if (decreases > allowed && !host_hole)
		rel_fail("%ld integrals went down within one window (at most %ld allowed)", decreases, allowed);
	if (resets && windows < 10)
		rel_fail("only %ld new windows seen: the resets did not race the snapshots", windows);
	if (failed > snapshots / 2)
		rel_fail("%ld of %ld snapshots failed", failed, snapshots);
	return rel_failures ? 1 : 0;
}

static int resets_monotonic(void)
{
	static const char *const env[] = { "TDSTAT_ENABLE=1", NULL };

	return monotonic_under(tdtest_shim_path(), env, 100, 0);
}

/* ---- stamps-on-clock ---- */
struct latest_change {
	uint64_t since_ns;
	long records;
};

static int note_since(const td_thr_stats_ns_t *thread, void *data)
{
	struct latest_change *latest = data;

	if (thread->state != TDSTAT_STATE_FREE) {
		latest->records++;
		if (thread->since_ns > latest->since_ns)
			latest->since_ns = thread->since_ns;
	}
	return 0;
}

static int stamps_on_clock(void)
{
	const char *argv[] = { REL_REVIEW_STRESS_PATH, "5", NULL };
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	struct tdtest_spawn_options options = { .preload = tdtest_shim_path(), .env = env };
	struct tdtest_child child;
	struct rel_agent agent;
	long snapshots = 0, ahead = 0, seen = 0;
	uint64_t worst = 0;

	if (tdtest_spawn(&child, argv, &options) != 0) {
		fprintf(stderr, "cannot start the stress target: %s\n", strerror(errno));
		return 1;
	}
	if (rel_agent_open(&agent, child.pid, 5000) != TD_OK) {
		rel_fail("agent on the stress target");
		kill(child.pid, SIGKILL);
		tdtest_wait(&child, 5000);
		return 1;
	}
	for (uint64_t end = tdtest_monotonic_ns() + 3000000000u; tdtest_monotonic_ns() < end;) {
		struct latest_change latest = { 0, 0 };

		if (td_ta_thr_stats_iter(agent.ta, note_since, &latest, NULL) != TD_OK)
			continue;
		uint64_t now = tdtest_monotonic_ns();
		snapshots++;
		seen += latest.records;
		if (latest.since_ns > now && latest.since_ns - now > worst)
			worst = latest.since_ns - now;
		if (latest.since_ns > now + 50000 && ahead++ < 5)
			fprintf(stderr, "a change dated %llu ns after the reader's clock\n",
				(unsigned long long)(latest.since_ns - now));
	}
	rel_agent_close(&agent);
	kill(child.pid, SIGKILL);
	tdtest_wait(&child, 5000);
	printf("snapshots %ld, records seen %ld, dated after the clock by more than 50 us: %ld (most %llu ns)\n",
	       snapshots, seen, ahead, (unsigned long long)worst);
	if (snapshots < 10 || seen < snapshots)
		rel_fail("too few snapshots (%ld) or records (%ld)", snapshots, seen);
	if (ahead)
		rel_fail("%ld snapshots showed a change dated in their future", ahead);
	return rel_failures ? 1 : 0;
}

/*
 * The shim built to hold one announcement in 256 up for 2 ms between its
 * counter read and its store, unseen by the kernel (runtime/
 * CMakeLists.txt, tdshim_stalled): a hypervisor's stall at that point,
 * far more often than any host does it.  Without anything done after a
 * late store, 4 s gave 14 and 33 decreases.  With a new announcement made
 * after it (which first renewed the anchor the stall had made stale), the
 * late value stayed visible for hundreds of nanoseconds: 11 decreases in
 * 12 runs here, one run with 4, and 10 in one CI run.  Now the store is
 * withdrawn right after it, one counter read later (counter_clock.h):
 * 0 in 24 runs.  One is allowed: the hole of that counter read is left.
 */
static int stalled_store(void)
{
	static const char *const env[] = { "TDSTAT_ENABLE=1", NULL };

	return monotonic_under(REL_STALLED_SHIM_PATH, env, 0, 1);
}

static int late_announcement(void)
{
	static const char *const env[] = { "TDSTAT_ENABLE=1", "LATECLOCK_NS=150000", NULL };
	char preload[8192];

	snprintf(preload, sizeof preload, "%s %s", REL_SLOWCLOCK_PATH, tdtest_shim_path());
	return monotonic_under(preload, env, 0, 0);
}

/* ---- sampled-elsewhere ---- */
/* From the last row of the thread named `name` in `tdstat --json -t`
 * output (the last interval's): its runnable share and the kernel's CPU
 * plus run-queue share beside it. */
static bool thread_row(const char *output, const char *name, double *runnable, double *kernel)
{
	char pattern[64], line[4096];
	const char *last = NULL;
	bool ok = true;

	snprintf(pattern, sizeof pattern, "\"name\":\"%s\"", name);
	for (const char *at = output; (at = strstr(at, pattern)); at++)
		last = at;
	if (!last)
		return false;
	while (last > output && last[-1] != '\n')
		last--;
	size_t length = strcspn(last, "\n");
	if (length >= sizeof line)
		return false;
	memcpy(line, last, length);
	line[length] = 0;
	*runnable = json_number(line, "runnable", &ok);
	*kernel = json_number(line, "cpu", &ok) + json_number(line, "run_queue", &ok);
	return ok && strstr(line, "\"cpu\":null") == NULL;
}

static int sampled_elsewhere(void)
{
	const char *argv[] = { TARGET, "sampled-elsewhere", "4", NULL };
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	struct tdtest_spawn_options options = { .preload = tdtest_shim_path(), .env = env };

	for (int attempt = 1; attempt <= 3; attempt++) {
		struct tdtest_child child;
		char line[64], pid[16], *output = NULL;
		size_t length;
		double runnable = 0, kernel = 0;

		if (tdtest_spawn(&child, argv, &options) != 0 || tdtest_read_line(&child, line, sizeof line, 10000) < 0) {
			rel_fail("cannot start the target: %s", strerror(errno));
			return 1;
		}
		snprintf(pid, sizeof pid, "%d", (int)child.pid);
		/* Past the first batches of samples. */
		tdtest_sleep_ms(1500);
		const char *tdstat[] = { REL_TDSTAT_PATH, "--json", "-t", "-i", "1", "-c", "2", pid, NULL };
		uint64_t start = tdtest_monotonic_ns();
		double steal0 = tdtest_steal_s();
		int status = tdtest_run(tdstat, NULL, &output, &length, 10000);
		double steal1 = tdtest_steal_s(), span = (double)(tdtest_monotonic_ns() - start) / 1e9;
		double steal = steal0 >= 0 && steal1 >= steal0 ? (steal1 - steal0) / span : 0;
		tdtest_wait(&child, 10000);
		bool found = status == 0 && output && thread_row(output, "sleeper", &runnable, &kernel);
		free(output);
		printf("sleeper: runnable %.4f, the kernel's CPU + run queue %.4f: ratio %.2f; the machine's steal "
		       "%.3f CPUs\n",
		       runnable, kernel, kernel > 0 ? runnable / kernel : 0, steal);
		if (!found || kernel <= 0.002) {
			rel_fail("no sleeper row with kernel figures in tdstat -t (%s)", status_text(status));
			return 1;
		}
		/* A window with steal allows its share per CPU above. */
		if (runnable <= 1.6 * kernel + (steal >= TDTEST_STEAL_SIGNIFICANT ? steal / 2 : 0))
			return 0;
	}
	rel_fail("the sleeper counted above 1.6x the kernel in 3 tries: a credit sampled from the other "
		 "thread's handler-filled sleeps");
	return 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "bad-pointers"))
		return bad_pointers();
	if (!strcmp(mode, "slow-clock"))
		return slow_clock();
	/* Bounds with room for a loaded machine, where a thread waiting for a
	 * CPU is rightly runnable (0.38 seen for signal-start at a load of 12
	 * on 2 CPUs); the defects gave 72-99 and 0.875. */
	if (!strcmp(mode, "signal-start"))
		return expect((const char *const[]){ "signal-start", NULL }, 1, 0, 0.6);
	if (!strcmp(mode, "requeue"))
		return expect((const char *const[]){ "requeue", NULL }, 0, 0, 0.4);
	if (!strcmp(mode, "fast-fail"))
		return fast_fail();
	if (!strcmp(mode, "sys-exit"))
		return expect((const char *const[]){ "sys-exit", NULL }, 1, 0, 0.2);
	if (!strcmp(mode, "resets-monotonic"))
		return resets_monotonic();
	if (!strcmp(mode, "stalled-store"))
		return stalled_store();
	if (!strcmp(mode, "stamps-on-clock"))
		return stamps_on_clock();
	if (!strcmp(mode, "late-announcement"))
		return late_announcement();
	if (!strcmp(mode, "preempting-wakee"))
		return expect((const char *const[]){ "preempting-wakee", NULL }, 1, 0, 0.2);
	if (!strcmp(mode, "remote-idle"))
		return runnable_as_kernel("remote-idle", 0.15);
	if (!strcmp(mode, "futex-queue"))
		return runnable_as_kernel("futex-queue", 0.05);
	if (!strcmp(mode, "futex-waitv-mix"))
		return expect((const char *const[]){ "futex-waitv-mix", NULL }, 0, 0, 0.15);
	if (!strcmp(mode, "futex-ring-collide"))
		return runnable_as_kernel("futex-ring-collide", 0.10);
	if (!strcmp(mode, "queued-posts"))
		return runnable_as_kernel("queued-posts", 0.10);
	if (!strcmp(mode, "racing-posts"))
		return runnable_as_kernel("racing-posts", 0.10);
	if (!strcmp(mode, "mutex-queue"))
		return runnable_as_kernel("mutex-queue", 0.05);
	if (!strcmp(mode, "mutex-queue-c11"))
		return runnable_as_kernel("mutex-queue-c11", 0.15);
	if (!strcmp(mode, "timer-idle"))
		return runnable_as_kernel("timer-idle", 0.15);
	/* A deadline on CLOCK_REALTIME is moved to CLOCK_MONOTONIC after the
	 * wait timed out, when it is past: helper-72's shim moved every such
	 * deadline to the moment of the return, and the thread counted
	 * BLOCKED from the timer's expiry to its return (its way out of the
	 * kernel, its wait for a CPU, the mutex taken back): 0.68-0.75 of
	 * the kernel's figures. */
	if (!strncmp(mode, "timer-idle-realtime-", strlen("timer-idle-realtime-")))
		return runnable_as_kernel(mode, 0.15);
	/* A timer's wake-up within TDSHIM_LATE_TIMER_NS of its expiry was
	 * taken for a halted CPU's late interrupt: on a CPU busy with the
	 * process's other threads it waited in the run queue (helper-72:
	 * 0.57-0.81 of the kernel with short bursts on busy CPUs; here
	 * 0.62-0.64 before, 0.82-0.90 with it: a wake whose CPU was between
	 * two of our threads, the last change a sleep, is still taken for
	 * a halted CPU's). */
	if (!strcmp(mode, "timer-queued"))
		return runnable_as_kernel(mode, 0.25);
	/* Not above the kernel where a halted CPU fires several timers late
	 * at once: the first thread to run changed state after the others'
	 * expiries, and they counted from them (helper-74: 1.3-4.3x; the
	 * figures are small, the kernel's part of each wake-up: the shim
	 * reads 0.4-1.0 of them). */
	if (!strcmp(mode, "timer-herd"))
		return runnable_between(mode, 0, false, 1.3);
	/* An event loop woken by another thread's write to its wake
	 * descriptor counted its wait for a CPU blocked: it had no stamp
	 * (helper-72: 0.52-0.66 of the kernel's figures on busy CPUs; here
	 * 0.74 before runtime/wrap_fd.c, 0.79 with one stamp per key, 1.00
	 * with each write a stamp that one waiter claims). */
	if (!strncmp(mode, "wake-ring-", strlen("wake-ring-")))
		return runnable_as_kernel(mode, 0.15);
	/* Writes that do not wake the loop (helper-77: a disarmed one-shot
	 * registration, an epoll number reused, a number fclose freed) were
	 * taken for its wakes: 2.2x the kernel here. */
	if (!strncmp(mode, "wake-decoy-", strlen("wake-decoy-")))
		return runnable_as_kernel(mode, 0.15);
	if (!strcmp(mode, "timer-slack"))
		return runnable_as_kernel("timer-slack", 0.15);
	if (!strcmp(mode, "timer-slack-inherited"))
		return runnable_as_kernel("timer-slack-inherited", 0.15);
	if (!strcmp(mode, "sampled-elsewhere"))
		return sampled_elsewhere();
	if (!strcmp(mode, "timer-realtime-keep-params") || !strcmp(mode, "timer-realtime-vfork") ||
	    !strcmp(mode, "timer-realtime-reuse") || !strcmp(mode, "timer-realtime-reset") ||
	    !strcmp(mode, "timer-realtime-adopted"))
		return runnable_within(mode, 0.5, 1.5);
	/* A handler that runs inside a wait counts as running (before
	 * wrap_handler.c: 0.08-0.13 of the kernel's figures, the handler's
	 * CPU counted in the wait); nested, the handler's own sleep counts
	 * as one (counted running: about 1.9x).  0.88-0.94 with it: the
	 * kernel's part of each signal (its delivery to a thread asleep on
	 * an idle CPU, the wait's re-entry after the handler) counts in the
	 * wait, as a wake from an idle CPU does before the shim has a figure
	 * for the CPU a sleep takes.  The lower bound is of the CPU time
	 * alone: a handler's wait for a CPU before it starts counts in the
	 * wait (a documented limit), and with other programs busy on the
	 * machine that wait was a third of the kernel's figures (0.70-0.79
	 * of them, 0.98-1.10 of the CPU time; on b3c4e60's shim as on
	 * later ones). */
	if (!strncmp(mode, "handler-in-wait-", strlen("handler-in-wait-")))
		return runnable_between(mode, 0.8, true, 1.15);
	/* helper-67's two read low (0.66-0.84: the thread taken for one
	 * without slack).  Above, a timer that fires late on a loaded
	 * machine counts from the deadline plus the slack (README, "A timer
	 * that fires late"): 1.08 here alone, 0.95-1.18 beside ctest -j2,
	 * 1.29-1.32 in three tries of one fresh-clone CI run; this VM shows
	 * no steal to allow for.  1.5x above, as for the modes above it,
	 * still catches a thread dated as real time (15-25x).  The other
	 * timer-realtime modes sleep on the same timers and read the same
	 * way (1.117 and 1.131 in a passing CI run, against 1.15 then): 1.5x
	 * still catches the slack dated as set (4.5x), 0.85x below the
	 * other way (0.74-0.76x). */
	if (!strncmp(mode, "timer-realtime", strlen("timer-realtime")))
		return runnable_within(mode, 0.85, 1.5);
	if (!strcmp(mode, "timer-busy")) {
		if (geteuid() != 0 || sysconf(_SC_NPROCESSORS_ONLN) < 2) {
			printf("skipped: needs root (SCHED_FIFO) and 2 CPUs\n");
			return 77;
		}
		return expect((const char *const[]){ "timer-busy", NULL }, 1, 0.4, 0.8);
	}
	if (!strcmp(mode, "remote-busy")) {
		if (geteuid() != 0 || sysconf(_SC_NPROCESSORS_ONLN) < 2) {
			printf("skipped: needs root (SCHED_FIFO) and 2 CPUs\n");
			return 77;
		}
		return expect((const char *const[]){ "remote-busy", NULL }, 1, 0.4, 0.8);
	}
	fprintf(stderr, "usage: rel_review bad-pointers|slow-clock|signal-start|requeue|fast-fail|sys-exit|resets-monotonic|late-announcement|stalled-store|stamps-on-clock|preempting-wakee|remote-busy|remote-idle|futex-queue|futex-waitv-mix|futex-ring-collide|queued-posts|racing-posts|timer-idle|timer-idle-realtime-cond|timer-idle-realtime-sem|timer-idle-realtime-clock|timer-queued|timer-herd|wake-ring-eventfd|wake-ring-pipe|wake-ring-socket|wake-decoy-oneshot|wake-decoy-epoll-reused|wake-decoy-fclose|timer-busy|mutex-queue|mutex-queue-c11|sampled-elsewhere|timer-slack|timer-slack-inherited|timer-realtime|timer-realtime-other|timer-realtime-left|timer-realtime-syscall|timer-realtime-keep-params|timer-realtime-vfork|timer-realtime-reuse|timer-realtime-reset|timer-realtime-round-trips|timer-realtime-vfork-parent|timer-realtime-adopted\n");
	return 2;
}
