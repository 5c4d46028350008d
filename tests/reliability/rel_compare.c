/* SPDX-License-Identifier: MIT */
/*
 * rel_compare: runs one program bare and then RUNS times under the shim
 * (LD_PRELOAD in the child's environment only) and requires the same
 * (normalised) stdout and the same exit status every time.
 *
 *   rel_compare [--runs N] [--normalize none|stress-ng|sysbench]
 *               [--timeout SECS] [--env K=V]... -- PROGRAM [ARG...]
 *
 * Shim runs cycle through four variants:
 *   0 gathering off                1 TDSTAT_ENABLE=1
 *   2 TDSTAT_ENABLE=1, sampled     3 off, `tdstat enable PID`, then sampled
 * A sampler is `tdstat -i 0.05 --json PID`; every line it prints must keep
 * the invariants of docs/CONTRACT.md §2, and it must end by itself or by our SIGINT,
 * never by a crash.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rel_support.h"
#include "tdtest.h"

#ifndef TDSTAT_PATH
#error "TDSTAT_PATH must name the tdstat command"
#endif

#define MAX_ENV 16

struct options {
	int runs;
	const char *normalize;
	int timeout_ms;
	const char *env[MAX_ENV];
	int nenv;
	const char *const *argv;
};

struct result {
	int status;
	char *output;
};

struct sampler {
	struct tdtest_child child;
	pthread_t reader;
	bool running;
	long lines, json_lines, broken;
	char first_break[1600];
};

static long total_samples, total_sampler_runs;

/* ---- normalisers: keep what must not change, drop timings and pids ---- */

static void append(char **out, size_t *used, size_t *capacity, const char *text, size_t length)
{
	if (*used + length + 2 > *capacity) {
		*capacity = (*used + length + 2) * 2;
		*out = realloc(*out, *capacity);
		if (!*out)
			abort();
	}
	memcpy(*out + *used, text, length);
	*used += length;
	(*out)[(*used)++] = '\n';
	(*out)[*used] = '\0';
}

/* stress-ng: the verdicts (fail/error lines and the final verdict), not
 * metrics or times; "[pid]" and "in N.NNs" removed. */
static void keep_stress_ng(const char *line, size_t length, char **out, size_t *used, size_t *capacity)
{
	char copy[1024], cleaned[1024];
	size_t n = length < sizeof(copy) - 1 ? length : sizeof(copy) - 1, j = 0;

	memcpy(copy, line, n);
	copy[n] = '\0';
	if (!strstr(copy, "successful run completed") && !strstr(copy, "fail") && !strstr(copy, "error") &&
	    !strstr(copy, "skipped") && !strstr(copy, "passed") && !strstr(copy, "untrustworthy"))
		return;
	if (strstr(copy, "metrc:"))
		return;
	for (size_t i = 0; copy[i]; i++) {
		if (copy[i] == '[') {
			while (copy[i] && copy[i] != ']')
				i++;
			continue;
		}
		cleaned[j++] = copy[i];
	}
	cleaned[j] = '\0';
	if (strstr(cleaned, "successful run completed"))
		strcpy(strstr(cleaned, "successful run completed"), "successful run completed");
	append(out, used, capacity, cleaned, strlen(cleaned));
}

/* sysbench: the thread count and the event count (fixed with --events and
 * --time=0), not the timings; zero events is a failure in itself. */
static void keep_sysbench(const char *line, size_t length, char **out, size_t *used, size_t *capacity)
{
	const char *events = memmem(line, length, "total number of events:", 23);
	const char *threads = memmem(line, length, "Number of threads:", 18);

	if (events && atol(events + 23) <= 0) {
		append(out, used, capacity, "no events", 9);
	} else if (events || threads) {
		append(out, used, capacity, line, length);
	}
}

/*
 * A race of the program's own, not the shim's: stress-ng 0.15's pthread
 * stressors (mutex, sem) test the timeout flag before they note their
 * first thread as created, so a stressor whose first pthread_create
 * returns after the timeout (its thread starved by the other instance's
 * SCHED_FIFO threads on a loaded 2-CPU machine) reports "could not
 * create any pthreads" and exits 3 (upstream later moved the note before
 * the test).  No failure of pthread_create gives that line: an error is
 * "pthread create failed", EAGAIN still counts as created.  A run that
 * shows it, when the bare run did not, is run again once.
 */
static bool own_race(const char *mode, const char *output, const char *bare_output)
{
	static const char signature[] = "could not create any pthreads";

	return !strcmp(mode, "stress-ng") && output && strstr(output, signature) &&
	       !(bare_output && strstr(bare_output, signature));
}

static char *normalise(const char *mode, const char *text)
{
	size_t used = 0, capacity = 256;
	char *out = malloc(capacity);

	if (!out)
		abort();
	out[0] = '\0';
	if (!strcmp(mode, "none")) {
		free(out);
		return strdup(text);
	}
	for (const char *line = text; *line;) {
		const char *end = strchr(line, '\n');
		size_t length = end ? (size_t)(end - line) : strlen(line);

		if (!strcmp(mode, "stress-ng"))
			keep_stress_ng(line, length, &out, &used, &capacity);
		else
			keep_sysbench(line, length, &out, &used, &capacity);
		line += length + (end ? 1 : 0);
	}
	return out;
}

/* ---- the sampler ---- */

static int json_int(const char *line, const char *key)
{
	char pattern[64];
	const char *at;

	snprintf(pattern, sizeof(pattern), "\"%s\":", key);
	at = strstr(line, pattern);
	return at ? atoi(at + strlen(pattern)) : -1;
}

static void *sampler_read(void *argument)
{
	struct sampler *sampler = argument;
	char line[1024];
	int got;

	while ((got = tdtest_read_line(&sampler->child, line, sizeof(line), 600000)) >= 0) {
		td_ta_stats_t stats;
		const char *why;

		sampler->lines++;
		if (strncmp(line, "{\"pid\":", 7) != 0)
			continue;
		sampler->json_lines++;
		stats.nthreads = json_int(line, "nthreads");
		stats.r_concurrency = json_int(line, "r_concurrency");
		stats.nrunnable_num = json_int(line, "nrunnable_num");
		stats.nrunnable_den = json_int(line, "nrunnable_den");
		stats.a_concurrency_num = json_int(line, "a_concurrency_num");
		stats.a_concurrency_den = json_int(line, "a_concurrency_den");
		stats.nlwps_num = json_int(line, "nlwps_num");
		stats.nlwps_den = json_int(line, "nlwps_den");
		stats.nidle_num = json_int(line, "nidle_num");
		stats.nidle_den = json_int(line, "nidle_den");
		why = rel_check_fractions(&stats);
		if (why && sampler->broken++ == 0)
			snprintf(sampler->first_break, sizeof(sampler->first_break), "%s in: %s", why, line);
	}
	return NULL;
}

static void sampler_start(struct sampler *sampler, pid_t pid, bool enable_first)
{
	char pid_text[16];
	const char *watch[] = { TDSTAT_PATH, "-i", "0.05", "--json", pid_text, NULL };
	uint64_t deadline = tdtest_monotonic_ns() + 5000000000u;

	memset(sampler, 0, sizeof(*sampler));
	snprintf(pid_text, sizeof(pid_text), "%d", (int)pid);
	/* The shim is mapped while the loader starts the program; before
	 * that, tdstat would rightly say it is not there. */
	while (!rel_maps_contain(pid, "libtdshim") && tdtest_monotonic_ns() < deadline)
		tdtest_sleep_ms(1);
	if (enable_first) {
		const char *enable[] = { TDSTAT_PATH, "enable", pid_text, NULL };
		char *ignored;
		size_t length;
		int status = tdtest_run(enable, NULL, &ignored, &length, 30000);

		free(ignored);
		/* 1: the target may already be gone; anything else is a bug. */
		if (!(WIFEXITED(status) && WEXITSTATUS(status) <= 1))
			rel_fail("tdstat enable %d ended with status 0x%x", (int)pid, status);
	}
	if (tdtest_spawn(&sampler->child, watch, NULL) != 0) {
		rel_fail("cannot start tdstat: %s", strerror(errno));
		return;
	}
	sampler->running = true;
	if (pthread_create(&sampler->reader, NULL, sampler_read, sampler) != 0)
		abort();
}

static void sampler_stop(struct sampler *sampler, const char *name, int run)
{
	int status;

	if (!sampler->running)
		return;
	kill(sampler->child.pid, SIGINT);
	pthread_join(sampler->reader, NULL);
	status = tdtest_wait(&sampler->child, 30000);
	total_sampler_runs++;
	total_samples += sampler->json_lines;
	if (status == -1 || WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) > 1))
		rel_fail("%s run %d: the sampler ended with status 0x%x", name, run, status);
	if (sampler->broken)
		rel_fail("%s run %d: %ld sampled lines break the invariants; first: %s", name, run, sampler->broken,
			 sampler->first_break);
}

/* ---- one run ---- */

static struct result run_once(const struct options *options, bool shim, int variant, int run)
{
	const char *env[MAX_ENV + 4];
	struct tdtest_spawn_options spawn = { .env = env };
	struct tdtest_child child;
	struct sampler sampler = { .running = false };
	struct result result = { -1, NULL };
	size_t length;
	int n = 0;

	for (int i = 0; i < options->nenv; i++)
		env[n++] = options->env[i];
	if (shim) {
		spawn.preload = tdtest_shim_path();
		env[n++] = variant == 1 || variant == 2 ? "TDSTAT_ENABLE=1" : "TDSTAT_ENABLE=0";
	}
	env[n] = NULL;
	if (tdtest_spawn(&child, options->argv, &spawn) != 0) {
		rel_fail("cannot start %s: %s", options->argv[0], strerror(errno));
		return result;
	}
	if (shim && variant >= 2)
		sampler_start(&sampler, child.pid, variant == 3);
	result.output = tdtest_read_all(&child, &length, options->timeout_ms);
	result.status = tdtest_wait(&child, result.output ? options->timeout_ms : 0);
	sampler_stop(&sampler, options->argv[0], run);
	if (!result.output)
		result.output = strdup("<no output: timeout or error>");
	return result;
}

static const char *variant_name(int variant)
{
	static const char *const names[] = { "shim, gathering off", "shim, TDSTAT_ENABLE=1",
					     "shim, enabled, sampled", "shim, enabled by tdstat, sampled" };
	return names[variant];
}

/* Prints the lines that differ (up to ten), side by side. */
static void show_difference(const char *expected, const char *got)
{
	int shown = 0;
	size_t line = 1;

	while ((*expected || *got) && shown < 10) {
		size_t a = strcspn(expected, "\n"), b = strcspn(got, "\n");

		if (a != b || memcmp(expected, got, a) != 0) {
			fprintf(stderr, "  line %zu\n    bare: %.*s\n    shim: %.*s\n", line, (int)(a < 300 ? a : 300),
				expected, (int)(b < 300 ? b : 300), got);
			shown++;
		}
		expected += a + (expected[a] ? 1 : 0);
		got += b + (got[b] ? 1 : 0);
		line++;
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: rel_compare [--runs N] [--normalize none|stress-ng|sysbench] "
			"[--timeout SECS] [--env K=V]... -- PROGRAM [ARG...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "normalize", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "env", required_argument, NULL, 'e' },
		{ "any-status", no_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	struct options options = { .runs = 0, .normalize = "none", .timeout_ms = 300000 };
	bool any_status = false;
	struct result bare;
	char *expected;
	int option;

	while ((option = getopt_long(argc, argv, "+", long_options, NULL)) != -1) {
		switch (option) {
		case 'r': options.runs = atoi(optarg); break;
		case 'n': options.normalize = optarg; break;
		case 't': options.timeout_ms = atoi(optarg) * 1000; break;
		case 'a': any_status = true; break;
		case 'e':
			if (options.nenv == MAX_ENV)
				usage();
			options.env[options.nenv++] = optarg;
			break;
		default: usage();
		}
	}
	if (optind >= argc)
		usage();
	if (strcmp(options.normalize, "none") && strcmp(options.normalize, "stress-ng") &&
	    strcmp(options.normalize, "sysbench"))
		usage();
	if (options.runs <= 0)
		options.runs = rel_ci() ? 2 : 4;
	/* "@T@" in an argument: the stressors' duration, short in CI. */
	for (int i = optind; i < argc; i++) {
		char *at = strstr(argv[i], "@T@");

		if (at) {
			char *expanded;

			if (asprintf(&expanded, "%.*s%g%s", (int)(at - argv[i]), argv[i],
				     rel_seconds("TDSTAT_STRESS_SECONDS", 2, 5), at + 3) < 0)
				abort();
			argv[i] = expanded;
		}
	}
	options.argv = (const char *const *)argv + optind;
	signal(SIGPIPE, SIG_IGN);

	bare = run_once(&options, false, 0, 0);
	expected = normalise(options.normalize, bare.output);
	/* A bare run that fails makes every comparison meaningless. */
	if (!any_status && !(bare.status != -1 && WIFEXITED(bare.status) && WEXITSTATUS(bare.status) == 0))
		rel_fail("%s: the bare run failed (status 0x%x):\n%.2000s", options.argv[0], bare.status, bare.output);
	if (!strcmp(options.normalize, "none") ? false : expected[0] == '\0')
		rel_fail("%s: nothing left after normalising the bare run:\n%s", options.argv[0], bare.output);
	for (int run = 0; run < options.runs; run++) {
		/* Two runs (CI) still cover gathering off and a sampled run. */
		int variant = options.runs == 2 ? run * 2 : run % 4;
		struct result shim = run_once(&options, true, variant, run);

		if (own_race(options.normalize, shim.output, bare.output)) {
			fprintf(stderr, "rel_compare: %s run %d (%s): the program's own start-up race (\"could not "
					"create any pthreads\"): run again once\n",
				options.argv[0], run, variant_name(variant));
			free(shim.output);
			shim = run_once(&options, true, variant, run);
		}
		char *got = normalise(options.normalize, shim.output);

		if (shim.status != bare.status)
			rel_fail("%s run %d (%s): exit status 0x%x, bare 0x%x", options.argv[0], run,
				 variant_name(variant), shim.status, bare.status);
		if (strcmp(expected, got) != 0) {
			struct result again = run_once(&options, false, 0, 0);
			char *again_normal = normalise(options.normalize, again.output);

			if (strcmp(again_normal, expected) != 0)
				rel_fail("%s: two bare runs differ: the program is not deterministic", options.argv[0]);
			else
				rel_fail("%s run %d (%s): stdout differs from the bare run (%zu vs %zu bytes)",
					 options.argv[0], run, variant_name(variant), strlen(got), strlen(expected));
			show_difference(expected, got);
			free(again.output);
			free(again_normal);
		}
		free(shim.output);
		free(got);
	}
	printf("rel_compare: %s: %d shim runs + 1 bare, %zu bytes of stdout compared per run, exit status 0x%x, "
	       "%ld sampler runs, %ld samples checked, %d failures\n",
	       options.argv[0], options.runs, strlen(expected), bare.status, total_sampler_runs, total_samples,
	       rel_failures);
	free(bare.output);
	free(expected);
	return rel_failures ? 1 : 0;
}
