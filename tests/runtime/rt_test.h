/* SPDX-License-Identifier: MIT */
/*
 * The Criterion side of the runtime tests: run a fixture program under
 * the shim and look up the key=value lines it printed.
 */
#ifndef RT_TEST_H
#define RT_TEST_H

#include <stdbool.h>

/* A fixture's stdout, owned by the caller. */
struct rt_output {
	char *text;
};

/* Runs fixture RT_FIXTURE_DIR/name with args (NULL-terminated) under the
 * shim, plus env entries (NULL-terminated, or NULL); asserts it exits 0. */
struct rt_output rt_run(const char *name, const char *const *args, const char *const *env);
/* The same with another LD_PRELOAD (a colon-separated list). */
struct rt_output rt_run_preloaded(const char *name, const char *const *args, const char *const *env,
				  const char *preload);
void rt_free(struct rt_output *output);

/* The value printed for key (asserts it was printed), valid until the
 * next call. */
const char *rt_string(const struct rt_output *output, const char *key);
long long rt_int(const struct rt_output *output, const char *key);
unsigned long long rt_u64(const struct rt_output *output, const char *key);

/* Shorthands for the common assertions, naming the key on failure. */
void rt_expect_string(const struct rt_output *output, const char *key, const char *expected);
void rt_expect_int(const struct rt_output *output, const char *key, long long expected);

#endif /* RT_TEST_H */
