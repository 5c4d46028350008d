/* SPDX-License-Identifier: MIT */
/*
 * transparency: real multithreaded programs give byte-identical stdout and
 * the same exit status bare and under the shim (gathering on, so the
 * state-change paths run too).  CI=1 uses smaller inputs.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tdtest.h"

#define RUN_TIMEOUT_MS 120000

static char directory[] = "/tmp/tdstat-transparency-XXXXXX";
static char data_path[128];

static size_t data_size(void)
{
	return getenv("CI") ? (size_t)2 << 20 : (size_t)8 << 20;
}

/* Text lines of words and numbers from a fixed generator: compressible,
 * sortable, and the same on every run. */
static void make_data(void)
{
	static const char *const words[] = { "alpha", "bravo", "charlie", "delta", "echo",
					     "foxtrot", "golf", "hotel", "india", "juliet" };
	uint64_t state = 0x9e3779b97f4a7c15u;
	size_t written = 0;
	FILE *file;

	cr_assert_not_null(mkdtemp(directory));
	snprintf(data_path, sizeof(data_path), "%s/data.txt", directory);
	file = fopen(data_path, "w");
	cr_assert_not_null(file);
	while (written < data_size()) {
		int length;

		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		length = fprintf(file, "%s %s %llu\n", words[state % 10], words[(state >> 8) % 10],
				 (unsigned long long)(state >> 20) % 1000000);
		written += (size_t)length;
	}
	cr_assert_eq(fclose(file), 0);
}

static void remove_data(void)
{
	char command[256];

	snprintf(command, sizeof(command), "rm -rf '%s'", directory);
	if (system(command))
		fprintf(stderr, "could not remove %s\n", directory);
}

static char *path_in_data(const char *name)
{
	static char path[4][160];
	static int next;
	char *slot = path[next++ % 4];

	snprintf(slot, sizeof(path[0]), "%s/%s", directory, name);
	return slot;
}

static void write_file(const char *path, const char *bytes, size_t length)
{
	FILE *file = fopen(path, "w");

	cr_assert_not_null(file);
	cr_assert_eq(fwrite(bytes, 1, length, file), length);
	cr_assert_eq(fclose(file), 0);
}

/* Runs argv under the shim (with `env`) and expects what the bare run gave. */
static void expect_like_bare(const char *const argv[], const char *const env[],
			     int bare_status, const char *bare_out, size_t bare_length)
{
	struct tdtest_spawn_options shim = { .preload = tdtest_shim_path(), .env = env };
	char *shim_out;
	size_t shim_length;
	int shim_status = tdtest_run(argv, &shim, &shim_out, &shim_length, RUN_TIMEOUT_MS);

	cr_assert_neq(shim_status, -1, "%s: run under the shim (%s) did not finish", argv[0], env[1]);
	cr_expect_eq(shim_status, bare_status, "%s: exit status 0x%x bare, 0x%x under the shim (%s)",
		     argv[0], bare_status, shim_status, env[1]);
	cr_expect_eq(shim_length, bare_length, "%s: %zu bytes bare, %zu under the shim (%s)",
		     argv[0], bare_length, shim_length, env[1]);
	cr_expect(bare_length == shim_length && !memcmp(bare_out, shim_out, bare_length),
		  "%s: stdout differs under the shim (%s)", argv[0], env[1]);
	free(shim_out);
}

/* Runs argv bare, then under the shim with gathering on, and again with
 * read/readv interposed too; expects the same status and stdout each time.
 * Returns the bare stdout (caller frees) for further checks. */
static char *expect_same(const char *const argv[], size_t *length)
{
	const char *env[] = { "LC_ALL=C", NULL };
	const char *env_enabled[] = { "LC_ALL=C", "TDSTAT_ENABLE=1", NULL };
	const char *env_reads[] = { "LC_ALL=C", "TDSTAT_TRACK_READS=1", "TDSTAT_ENABLE=1", NULL };
	struct tdtest_spawn_options bare = { .env = env };
	char *bare_out;
	size_t bare_length;
	int bare_status = tdtest_run(argv, &bare, &bare_out, &bare_length, RUN_TIMEOUT_MS);

	cr_assert_neq(bare_status, -1, "%s: bare run did not finish", argv[0]);
	expect_like_bare(argv, env_enabled, bare_status, bare_out, bare_length);
	expect_like_bare(argv, env_reads, bare_status, bare_out, bare_length);
	*length = bare_length;
	return bare_out;
}

TestSuite(transparency, .init = make_data, .fini = remove_data, .timeout = 300);

Test(transparency, xz_threads)
{
	const char *compress[] = { "xz", "-T2", "--block-size=1MiB", "-3", "-c", data_path, NULL };
	const char *decompress[] = { "xz", "-T2", "-d", "-c", NULL, NULL };
	size_t length;
	char *packed = expect_same(compress, &length);
	char *unpacked;
	struct stat st;

	cr_assert_gt(length, 0);
	decompress[4] = path_in_data("data.txt.xz");
	write_file(decompress[4], packed, length);
	unpacked = expect_same(decompress, &length);
	cr_assert_eq(stat(data_path, &st), 0);
	cr_expect_eq(length, (size_t)st.st_size, "xz round trip lost bytes");
	free(packed);
	free(unpacked);
}

Test(transparency, zstd_threads)
{
	const char *compress[] = { "zstd", "-T2", "-q", "-3", "-c", data_path, NULL };
	const char *decompress[] = { "zstd", "-q", "-d", "-c", NULL, NULL };
	size_t length;
	char *packed = expect_same(compress, &length);
	char *unpacked;
	struct stat st;

	cr_assert_gt(length, 0);
	decompress[4] = path_in_data("data.txt.zst");
	write_file(decompress[4], packed, length);
	unpacked = expect_same(decompress, &length);
	cr_assert_eq(stat(data_path, &st), 0);
	cr_expect_eq(length, (size_t)st.st_size, "zstd round trip lost bytes");
	free(packed);
	free(unpacked);
}

Test(transparency, sort_parallel)
{
	const char *sort[] = { "sort", "--parallel=2", "-S", "1M", "-T", directory, data_path, NULL };
	size_t length;
	char *sorted = expect_same(sort, &length);

	cr_assert_gt(length, 0);
	free(sorted);
}

static const char python_script[] =
	"import hashlib, queue, threading\n"
	"jobs, results = queue.Queue(), queue.Queue()\n"
	"lock = threading.Lock()\n"
	"done = threading.Condition(lock)\n"
	"state = {'finished': 0, 'total': 0}\n"
	"def worker():\n"
	"    while True:\n"
	"        n = jobs.get()\n"
	"        if n is None:\n"
	"            break\n"
	"        digest = hashlib.sha256(str(n).encode() * 2000).hexdigest()\n"
	"        results.put((n, digest))\n"
	"        with lock:\n"
	"            state['total'] += n\n"
	"    with done:\n"
	"        state['finished'] += 1\n"
	"        done.notify_all()\n"
	"threads = [threading.Thread(target=worker) for _ in range(8)]\n"
	"for t in threads: t.start()\n"
	"for n in range(JOBS): jobs.put(n)\n"
	"for _ in threads: jobs.put(None)\n"
	"with done:\n"
	"    done.wait_for(lambda: state['finished'] == len(threads))\n"
	"for t in threads: t.join()\n"
	"out = sorted(results.get() for _ in range(JOBS))\n"
	"for n, digest in out: print(n, digest)\n"
	"print('total', state['total'])\n";

Test(transparency, python_threads)
{
	char script_path[160], jobs[64];
	const char *python = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
	const char *argv[] = { python, script_path, NULL };
	size_t length;
	char *script, *out;

	snprintf(script_path, sizeof(script_path), "%s", path_in_data("threads.py"));
	snprintf(jobs, sizeof(jobs), "JOBS = %d\n", getenv("CI") ? 500 : 5000);
	cr_assert_eq(asprintf(&script, "%s%s", jobs, python_script) > 0, 1);
	write_file(script_path, script, strlen(script));
	free(script);
	out = expect_same(argv, &length);
	cr_expect_neq(strstr(out, "total "), NULL, "the script did not finish its work");
	free(out);
}

/* The comparisons above mean something only if the shim was really in. */
Test(transparency, shim_is_loaded_in_the_children)
{
	const char *argv[] = { "grep", "-c", "libtdshim", "/proc/self/maps", NULL };
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	struct tdtest_spawn_options shim = { .preload = tdtest_shim_path(), .env = env };
	char *out;
	size_t length;
	int status = tdtest_run(argv, &shim, &out, &length, RUN_TIMEOUT_MS);

	cr_expect_eq(status, 0, "grep found no libtdshim mapping under LD_PRELOAD");
	cr_expect_gt(atoi(out ? out : "0"), 0);
	free(out);
}
