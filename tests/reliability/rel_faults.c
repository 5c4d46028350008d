/* SPDX-License-Identifier: MIT */
/*
 * rel_faults: the controller side of the fault and soak tests.  Each mode
 * starts rel_target (the shim preloaded in its environment only), reads it
 * through libc_db and libtdstat_ps, and checks what docs/CONTRACT.md §5 promises: no
 * crash, no hang, the documented errors, and the invariants of docs/CONTRACT.md §2 in
 * every snapshot.
 *
 *   rel_faults target-death | corrupt-region | overflow | fork-storm |
 *              exec | cancel-waits | early-threads | controllers | soak
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rel_support.h"
#include "tdtest.h"

#ifndef REL_TARGET_PATH
#error "REL_TARGET_PATH must name rel_target"
#endif

#define LINE_TIMEOUT_MS 60000

struct target {
	struct tdtest_child child;
	struct rel_agent agent;
};

/* Starts rel_target MODE ARGS with the shim and opens an agent on it. */
static bool target_start(struct target *target, const char *const *arguments, const char *max_threads,
			 bool enable, char *ready, size_t size)
{
	const char *argv[8] = { REL_TARGET_PATH };
	const char *env[4] = { enable ? "TDSTAT_ENABLE=1" : "TDSTAT_ENABLE=0",
			       !strcmp(arguments[0], "early") ? "REL_EARLY=1" : "REL_EARLY=0" };
	struct tdtest_spawn_options spawn = { .preload = tdtest_shim_path(), .env = env, .pipe_stdin = true };
	char limit[64], scratch[256];
	td_err_e err;
	int n = 1;

	for (int i = 0; arguments[i] && n < 7; i++)
		argv[n++] = arguments[i];
	if (max_threads) {
		snprintf(limit, sizeof(limit), "TDSTAT_MAX_THREADS=%s", max_threads);
		env[2] = limit;
	}
	if (!ready) {
		ready = scratch;
		size = sizeof(scratch);
	}
	if (tdtest_spawn(&target->child, argv, &spawn) != 0) {
		rel_fail("cannot start rel_target: %s", strerror(errno));
		return false;
	}
	if (tdtest_read_line(&target->child, ready, size, LINE_TIMEOUT_MS) < 0 || strncmp(ready, "ready", 5)) {
		rel_fail("rel_target %s: no ready line", arguments[0]);
		tdtest_wait(&target->child, 1000);
		return false;
	}
	err = rel_agent_open(&target->agent, target->child.pid, 10000);
	if (err != TD_OK) {
		rel_fail("rel_target %s: td_ta_new: %s", arguments[0], rel_td_name(err));
		tdtest_wait(&target->child, 1000);
		return false;
	}
	return true;
}

/* Sends a command; returns its answer line (static) or NULL. */
static const char *target_say(struct target *target, const char *command)
{
	static char reply[256];
	size_t length = strlen(command);

	if (write(target->child.stdin_fd, command, length) != (ssize_t)length ||
	    write(target->child.stdin_fd, "\n", 1) != 1)
		return NULL;
	if (tdtest_read_line(&target->child, reply, sizeof(reply), LINE_TIMEOUT_MS) < 0)
		return NULL;
	return reply;
}

static int target_stop(struct target *target)
{
	int status;

	if (target->child.stdin_fd >= 0 && write(target->child.stdin_fd, "exit\n", 5) != 5)
		rel_fail("cannot tell rel_target to exit");
	status = tdtest_wait(&target->child, 60000);
	rel_agent_close(&target->agent);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		rel_fail("rel_target ended with status 0x%x", status);
	return status;
}

/* One snapshot through every reading call; checks the invariants.
 * Returns the first error, TD_OK if all calls succeeded. */
static td_err_e snapshot(td_thragent_t *ta, td_ta_stats_ns_t *ns_out, int *nthreads_out)
{
	td_ta_stats_t stats;
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	const char *why;
	td_err_e err;
	int n;

	err = td_ta_get_stats(ta, &stats);
	if (err != TD_OK)
		return err;
	if ((why = rel_check_fractions(&stats)))
		rel_fail("td_ta_get_stats: %s", why);
	err = td_ta_get_stats_ns(ta, &ns);
	if (err != TD_OK)
		return err;
	if ((why = rel_check_integrals(&ns)))
		rel_fail("td_ta_get_stats_ns: %s", why);
	err = td_ta_get_nthreads(ta, &n);
	if (err != TD_OK)
		return err;
	if (ns_out)
		*ns_out = ns;
	if (nthreads_out)
		*nthreads_out = n;
	return TD_OK;
}

/* Polls until nthreads == want (threads finish their exit a little after
 * the target says they are done). */
static bool nthreads_becomes(td_thragent_t *ta, int want, int *last)
{
	for (int i = 0; i < 2000; i++) {
		if (td_ta_get_nthreads(ta, last) == TD_OK && *last == want)
			return true;
		tdtest_sleep_ms(5);
	}
	return false;
}

/* ---- the target dies while being read ---- */

struct reader {
	td_thragent_t *ta;
	atomic_int stop;
	/* Shared by the two reader threads and polled by the main one. */
	atomic_long ok, dberr, other, after_death;
	atomic_int dead;
	_Atomic td_err_e other_err;
};

static void *reader_main(void *argument)
{
	struct reader *reader = argument;

	while (!atomic_load(&reader->stop)) {
		bool dead = atomic_load(&reader->dead);
		td_err_e err = snapshot(reader->ta, NULL, NULL);

		if (err == TD_OK)
			reader->ok++;
		else if (err == TD_DBERR)
			reader->dberr++;
		else {
			reader->other++;
			reader->other_err = err;
		}
		if (dead && ++reader->after_death >= 50)
			break;
	}
	return NULL;
}

static void target_death(void)
{
	static const char *const ways[] = { "SIGKILL", "exit", "SIGKILL-unreaped" };

	for (int w = 0; w < 3; w++) {
		const char *args[] = { "churn", "32", NULL };
		struct reader reader = { 0 };
		struct target target;
		pthread_t readers[2];
		td_err_e err;
		int status;

		if (!target_start(&target, args, NULL, true, NULL, 0))
			return;
		reader.ta = target.agent.ta;
		for (int i = 0; i < 2; i++)
			pthread_create(&readers[i], NULL, reader_main, &reader);
		while (reader.ok < 100)
			tdtest_sleep_ms(1);
		if (w == 1) {
			target_say(&target, "stop");
			if (write(target.child.stdin_fd, "exit\n", 5) != 5)
				rel_fail("write");
		} else {
			kill(target.child.pid, SIGKILL);
		}
		if (w != 2) {
			status = tdtest_wait(&target.child, 60000);
			if (status == -1)
				rel_fail("%s: target did not end", ways[w]);
		} else {
			/* a zombie: killed, not reaped yet */
			siginfo_t info;

			waitid(P_PID, (id_t)target.child.pid, &info, WEXITED | WNOWAIT);
		}
		atomic_store(&reader.dead, 1);
		for (int i = 0; i < 2; i++)
			pthread_join(readers[i], NULL);
		/* After death: every call fails with TD_DBERR, at once. */
		err = snapshot(target.agent.ta, NULL, NULL);
		if (err != TD_DBERR)
			rel_fail("%s: snapshot of a dead target gave %s", ways[w], rel_td_name(err));
		err = td_ta_enable_stats(target.agent.ta, 1);
		if (err != TD_DBERR)
			rel_fail("%s: enable on a dead target gave %s", ways[w], rel_td_name(err));
		err = td_ta_reset_stats(target.agent.ta);
		if (err != TD_DBERR)
			rel_fail("%s: reset on a dead target gave %s", ways[w], rel_td_name(err));
		if (reader.other)
			rel_fail("%s: %ld reads gave %s (only TD_OK or TD_DBERR allowed)", ways[w], reader.other,
				 rel_td_name(reader.other_err));
		printf("target-death %s: %ld snapshots ok, %ld TD_DBERR, %ld other\n", ways[w], reader.ok,
		       reader.dberr, reader.other);
		if (w == 2)
			tdtest_wait(&target.child, 60000);
		rel_agent_close(&target.agent);
	}
}

/* ---- a region corrupted in place ---- */

struct corruption {
	const char *command;
	td_err_e new_agent;  /* td_ta_new on the corrupted region (class: OK, or DBERR/VERSION) */
	td_err_e old_agent;  /* snapshots through any agent; TD_OK: must hold invariants */
};

static bool allowed(td_err_e err, td_err_e expected)
{
	if (expected == TD_OK)
		return err == TD_OK;
	return err == TD_DBERR || err == TD_VERSION;
}

static void corrupt_region(void)
{
	static const struct corruption corruptions[] = {
		{ "magic", TD_VERSION, TD_DBERR },
		{ "abi", TD_VERSION, TD_DBERR },
		{ "record_size", TD_VERSION, TD_DBERR },
		{ "capacity", TD_DBERR, TD_DBERR },
		{ "records_offset", TD_DBERR, TD_DBERR },
		{ "control_offset", TD_DBERR, TD_DBERR },
		{ "state", TD_OK, TD_DBERR },
		{ "high_water", TD_OK, TD_OK },
		{ "acc", TD_OK, TD_OK },
		{ "since", TD_OK, TD_OK },
		{ "window", TD_OK, TD_OK },
		{ "random", TD_VERSION, TD_DBERR },
	};

	for (size_t i = 0; i < sizeof(corruptions) / sizeof(corruptions[0]); i++) {
		const struct corruption *c = &corruptions[i];
		const char *args[] = { "scribble", NULL };
		struct rel_agent fresh;
		struct target target;
		const char *reply;
		td_err_e err, old_snapshot, enable, reset;

		if (!target_start(&target, args, NULL, true, NULL, 0))
			return;
		reply = target_say(&target, c->command);
		if (!reply || strcmp(reply, "done")) {
			rel_fail("scribble %s: target answered %s", c->command, reply ? reply : "nothing");
			target_stop(&target);
			continue;
		}
		err = snapshot(target.agent.ta, NULL, NULL);
		old_snapshot = err;
		enable = td_ta_enable_stats(target.agent.ta, 1);
		reset = td_ta_reset_stats(target.agent.ta);
		/* enable and reset read only the header: either answer, no crash */
		if (!allowed(err, c->old_agent) || !(allowed(enable, TD_OK) || allowed(enable, TD_DBERR)) ||
		    !(allowed(reset, TD_OK) || allowed(reset, TD_DBERR)))
			rel_fail("scribble %s: old agent gave %s / enable %s / reset %s", c->command, rel_td_name(err),
				 rel_td_name(enable), rel_td_name(reset));
		err = rel_agent_open(&fresh, target.child.pid, 0);
		if (err == TD_OK) {
			td_err_e again = snapshot(fresh.ta, NULL, NULL);

			if (!allowed(again, c->old_agent))
				rel_fail("scribble %s: new agent's snapshot gave %s", c->command, rel_td_name(again));
		}
		if (!allowed(err, c->new_agent))
			rel_fail("scribble %s: td_ta_new gave %s", c->command, rel_td_name(err));
		printf("corrupt-region %s: td_ta_new %s, old agent's snapshot %s, its enable %s\n", c->command,
		       rel_td_name(err), rel_td_name(old_snapshot), rel_td_name(enable));
		rel_agent_close(&fresh);
		target_stop(&target);
	}
}

/* ---- more threads than records ---- */

static void overflow(void)
{
	const char *args[] = { "overflow", "40", NULL };
	td_ta_stats_ns_t ns;
	struct target target;
	int n = 0;

	if (!target_start(&target, args, "8", true, NULL, 0))
		return;
	if (snapshot(target.agent.ta, &ns, &n) != TD_OK || n != 41)
		rel_fail("overflow: nthreads %d with 40 threads + main and 8 records", n);
	if (ns.overflow_threads != 33)
		rel_fail("overflow: %u threads counted as overflow, want 33", ns.overflow_threads);
	if (!target_say(&target, "release"))
		rel_fail("overflow: no answer to release");
	if (!nthreads_becomes(target.agent.ta, 1, &n))
		rel_fail("overflow: nthreads %d after the threads ended, want 1", n);
	if (snapshot(target.agent.ta, &ns, &n) != TD_OK || ns.overflow_threads != 0)
		rel_fail("overflow: %u overflow threads after they ended", ns.overflow_threads);
	printf("overflow: 41 threads on 8 records: counted, then back to %d\n", n);
	target_stop(&target);
}

/* ---- fork storms ---- */

static void fork_storm(void)
{
	const char *forks = rel_ci() ? "20" : "100";
	const char *args[] = { "fork-storm", "8", forks, NULL };
	struct target target;
	char expected[64];
	long snapshots = 0;

	if (!target_start(&target, args, NULL, true, NULL, 0))
		return;
	snprintf(expected, sizeof(expected), "forks %d failures 0", 8 * atoi(forks));
	for (;;) {
		char reply[128];
		int got = tdtest_read_line(&target.child, reply, sizeof(reply), 0);
		td_err_e err;

		if (got >= 0) {
			if (strcmp(reply, expected))
				rel_fail("fork-storm: target says '%s', want '%s'", reply, expected);
			break;
		}
		if (got == -1) {
			rel_fail("fork-storm: the target ended early");
			break;
		}
		err = snapshot(target.agent.ta, NULL, NULL);
		if (err != TD_OK)
			rel_fail("fork-storm: snapshot gave %s", rel_td_name(err));
		snapshots++;
		tdtest_sleep_ms(2);
	}
	printf("fork-storm: %s, %ld snapshots during the storm\n", expected, snapshots);
	target_stop(&target);
}

/* ---- exec ---- */

static void exec_target(void)
{
	const char *args[] = { "exec", NULL };
	td_ta_stats_ns_t ns = { .size = sizeof(ns) };
	struct rel_agent after;
	struct target target;
	const char *reply;
	td_err_e err;
	int n = 0;

	if (!target_start(&target, args, NULL, true, NULL, 0))
		return;
	reply = target_say(&target, "exec");
	if (!reply || strcmp(reply, "exec'd"))
		rel_fail("exec: target answered %s", reply ? reply : "nothing");
	/* The old agent describes an image that is gone: an error, or (if
	 * the new image put an identical region at the same address) the
	 * new process's numbers.  Never a crash. */
	err = snapshot(target.agent.ta, NULL, NULL);
	if (err != TD_OK && err != TD_DBERR)
		rel_fail("exec: old agent gave %s", rel_td_name(err));
	printf("exec: old agent after exec: %s\n", rel_td_name(err));
	err = rel_agent_open(&after, target.child.pid, 10000);
	if (err != TD_OK) {
		rel_fail("exec: td_ta_new after exec gave %s", rel_td_name(err));
	} else {
		err = td_ta_get_stats_ns(after.ta, &ns);
		if (err != TD_OK || !nthreads_becomes(after.ta, 1, &n) || !ns.enabled)
			rel_fail("exec: after exec %s, nthreads %d, enabled %u", rel_td_name(err), n, ns.enabled);
		rel_agent_close(&after);
	}
	target_stop(&target);
}

/* ---- cancellation in every wait ---- */

static void cancel_waits(void)
{
	const char *args[] = { "cancel-waits", NULL };
	char ready[64];
	struct target target;
	const char *reply;
	int n = 0, want;

	if (!target_start(&target, args, NULL, true, ready, sizeof(ready)))
		return;
	want = 1 + atoi(ready + 6);
	if (!nthreads_becomes(target.agent.ta, want, &n))
		rel_fail("cancel-waits: nthreads %d, want %d", n, want);
	reply = target_say(&target, "cancel");
	if (!reply || strcmp(reply, "cancelled 30"))
		rel_fail("cancel-waits: target answered %s", reply ? reply : "nothing");
	if (!nthreads_becomes(target.agent.ta, 1, &n))
		rel_fail("cancel-waits: nthreads %d after cancelling every waiter, want 1", n);
	if (snapshot(target.agent.ta, NULL, NULL) != TD_OK)
		rel_fail("cancel-waits: snapshot failed");
	printf("cancel-waits: %d threads in 10 kinds of wait cancelled, nthreads back to %d\n", want - 1, n);
	target_stop(&target);
}

/* ---- threads the shim did not see start ---- */

static void early_threads(void)
{
	const char *args[] = { "early", NULL };
	char ready[64];
	struct target target;
	const char *reply;
	int n = 0, want;

	if (!target_start(&target, args, NULL, true, ready, sizeof(ready)))
		return;
	want = atoi(ready + 6);
	if (!nthreads_becomes(target.agent.ta, want, &n))
		rel_fail("early: nthreads %d with constructor threads, want %d", n, want);
	reply = target_say(&target, "load");
	want = reply && !strncmp(reply, "loaded ", 7) ? atoi(reply + 7) : -1;
	if (want < 0 || !nthreads_becomes(target.agent.ta, want, &n))
		rel_fail("early: nthreads %d after dlopen, want %d", n, want);
	reply = target_say(&target, "release");
	if (!reply || !nthreads_becomes(target.agent.ta, 1, &n))
		rel_fail("early: nthreads %d after release, want 1", n);
	printf("early-threads: constructor and dlopen'ed threads counted (%d), back to %d\n", want, n);
	target_stop(&target);
}

/* ---- controllers poking while threads churn ---- */

struct control_run {
	pid_t pid;
	double seconds;
	atomic_int stop;
	atomic_long changes, snapshots, failures;
};

static void *controller_main(void *argument)
{
	struct control_run *run = argument;
	struct rel_agent agent;
	unsigned int seed = (unsigned int)(uintptr_t)&agent;

	if (rel_agent_open(&agent, run->pid, 10000) != TD_OK) {
		atomic_fetch_add(&run->failures, 1);
		return NULL;
	}
	while (!atomic_load(&run->stop)) {
		int action = rand_r(&seed) % 4;
		td_err_e err = action == 0 ? td_ta_enable_stats(agent.ta, 1)
			     : action == 1 ? td_ta_enable_stats(agent.ta, 0)
			     : action == 2 ? td_ta_reset_stats(agent.ta)
					   : td_ta_setconcurrency(agent.ta, rand_r(&seed) % 16);

		if (err != TD_OK) {
			rel_fail("controller: action %d gave %s", action, rel_td_name(err));
			atomic_fetch_add(&run->failures, 1);
		}
		atomic_fetch_add(&run->changes, 1);
		tdtest_sleep_ms(rand_r(&seed) % 3);
	}
	rel_agent_close(&agent);
	return NULL;
}

static void *snapshot_main(void *argument)
{
	struct control_run *run = argument;
	struct rel_agent agent;

	if (rel_agent_open(&agent, run->pid, 10000) != TD_OK) {
		atomic_fetch_add(&run->failures, 1);
		return NULL;
	}
	while (!atomic_load(&run->stop)) {
		int before = rel_failures;
		td_err_e err = snapshot(agent.ta, NULL, NULL);

		if (err != TD_OK) {
			rel_fail("snapshot under controllers gave %s", rel_td_name(err));
			atomic_fetch_add(&run->failures, 1);
		}
		if (rel_failures != before)
			atomic_fetch_add(&run->failures, 1);
		atomic_fetch_add(&run->snapshots, 1);
	}
	rel_agent_close(&agent);
	return NULL;
}

static void controllers(void)
{
	const char *args[] = { "churn", "1000", NULL };
	struct control_run run = { .seconds = rel_seconds("TDSTAT_CONTROL_SECONDS", 5, 20) };
	pthread_t threads[6];
	struct target target;
	int n = 0;

	if (!target_start(&target, args, NULL, true, NULL, 0))
		return;
	run.pid = target.child.pid;
	for (int i = 0; i < 6; i++)
		pthread_create(&threads[i], NULL, i < 4 ? controller_main : snapshot_main, &run);
	tdtest_sleep_ms((long)(run.seconds * 1000));
	atomic_store(&run.stop, 1);
	for (int i = 0; i < 6; i++)
		pthread_join(threads[i], NULL);
	if (!target_say(&target, "stop"))
		rel_fail("controllers: no answer to stop");
	if (!nthreads_becomes(target.agent.ta, 1, &n))
		rel_fail("controllers: nthreads %d after the churn, want 1", n);
	printf("controllers: 4 controllers made %ld changes, 2 readers %ld snapshots, %ld failures, "
	       "1000 threads churning for %.0f s; nthreads back to %d\n",
	       atomic_load(&run.changes), atomic_load(&run.snapshots), atomic_load(&run.failures), run.seconds, n);
	target_stop(&target);
}

/* ---- soak ---- */

static void soak(void)
{
	const char *args[] = { "churn", "64", NULL };
	double seconds = rel_seconds("TDSTAT_SOAK_SECONDS", 10, 60);
	long samples = 0, errors = 0, target_rss_early = -1, reader_rss_early = -1;
	long target_rss, target_hwm, reader_rss, max_threads = 0;
	uint64_t start, warm, end;
	struct target target;
	int n = 0;

	if (!target_start(&target, args, NULL, true, NULL, 0))
		return;
	start = tdtest_monotonic_ns();
	warm = start + (uint64_t)(seconds * 0.25e9);
	end = start + (uint64_t)(seconds * 1e9);
	for (uint64_t next = start; tdtest_monotonic_ns() < end; next += 10000000u) {
		int before = rel_failures;
		td_err_e err = snapshot(target.agent.ta, NULL, &n);
		uint64_t now;

		if (err != TD_OK && errors++ < 5)
			rel_fail("soak: snapshot %ld gave %s", samples, rel_td_name(err));
		if (rel_failures != before && errors++ > 20)
			break;
		if (n > max_threads)
			max_threads = n;
		samples++;
		if (target_rss_early < 0 && tdtest_monotonic_ns() >= warm) {
			target_rss_early = rel_vm_kb(target.child.pid, "VmRSS");
			reader_rss_early = rel_vm_kb(getpid(), "VmRSS");
		}
		now = tdtest_monotonic_ns();
		if (next > now)
			tdtest_sleep_ms((long)((next - now) / 1000000u));
	}
	target_rss = rel_vm_kb(target.child.pid, "VmRSS");
	target_hwm = rel_vm_kb(target.child.pid, "VmHWM");
	reader_rss = rel_vm_kb(getpid(), "VmRSS");
	if (!target_say(&target, "stop"))
		rel_fail("soak: no answer to stop");
	if (!nthreads_becomes(target.agent.ta, 1, &n))
		rel_fail("soak: nthreads %d at the end, want 1", n);
	/* Growth allowances: the target's thread stacks come and go from
	 * glibc's cache; anything steady past a few MB is a leak. */
	if (target_rss - target_rss_early > 8192 + target_rss_early / 10)
		rel_fail("soak: target VmRSS grew from %ld to %ld kB", target_rss_early, target_rss);
	if (reader_rss - reader_rss_early > 2048)
		rel_fail("soak: reader VmRSS grew from %ld to %ld kB", reader_rss_early, reader_rss);
	printf("soak: %.0f s, %ld samples at 100 Hz, %ld errors, up to %ld threads; target VmRSS %ld -> %ld kB "
	       "(VmHWM %ld), reader VmRSS %ld -> %ld kB; nthreads at the end %d\n",
	       seconds, samples, errors, max_threads, target_rss_early, target_rss, target_hwm, reader_rss_early,
	       reader_rss, n);
	target_stop(&target);
}

static void on_alarm(int number)
{
	static const char message[] = "rel_faults: still running after the watchdog's limit: a hang\n";

	if (write(2, message, sizeof(message) - 1) < 0)
		_exit(4);
	_exit(4);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*run)(void);
	} modes[] = {
		{ "target-death", target_death }, { "corrupt-region", corrupt_region }, { "overflow", overflow },
		{ "fork-storm", fork_storm }, { "exec", exec_target }, { "cancel-waits", cancel_waits },
		{ "early-threads", early_threads }, { "controllers", controllers }, { "soak", soak },
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	for (size_t i = 0; argc == 2 && i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (strcmp(argv[1], modes[i].name))
			continue;
		alarm((unsigned)rel_seconds("TDSTAT_SOAK_SECONDS", 10, 60) + 300);
		modes[i].run();
		printf("%s: %d failures\n", argv[1], rel_failures);
		return rel_failures ? 1 : 0;
	}
	fprintf(stderr, "usage: rel_faults target-death|corrupt-region|overflow|fork-storm|exec|cancel-waits|"
			"early-threads|controllers|soak\n");
	return 2;
}
