/* SPDX-License-Identifier: MIT */
#include "rt_test.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tdtest.h"

#define RT_RUN_TIMEOUT_MS 60000

struct rt_output rt_run(const char *name, const char *const *args, const char *const *env)
{
	return rt_run_preloaded(name, args, env, tdtest_shim_path());
}

struct rt_output rt_run_preloaded(const char *name, const char *const *args, const char *const *env,
				  const char *preload)
{
	struct tdtest_spawn_options options = { .preload = preload, .env = env };
	const char *argv[16];
	char path[4096];
	struct rt_output output = { 0 };
	size_t length, n = 0;
	int status;

	snprintf(path, sizeof(path), "%s/%s", RT_FIXTURE_DIR, name);
	argv[n++] = path;
	for (size_t i = 0; args && args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	status = tdtest_run(argv, &options, &output.text, &length, RT_RUN_TIMEOUT_MS);
	cr_assert(status != -1, "%s %s: did not finish (timeout or spawn failure)", name,
		  args && args[0] ? args[0] : "");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "%s %s: ended with status 0x%x; output:\n%s", name, args && args[0] ? args[0] : "",
		  status, output.text ? output.text : "");
	return output;
}

void rt_free(struct rt_output *output)
{
	free(output->text);
	output->text = NULL;
}

const char *rt_string(const struct rt_output *output, const char *key)
{
	static char value[256];
	size_t key_length = strlen(key);
	const char *line = output->text;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t length = end ? (size_t)(end - line) : strlen(line);

		if (length > key_length && !strncmp(line, key, key_length) && line[key_length] == '=') {
			size_t value_length = length - key_length - 1;

			if (value_length >= sizeof(value))
				value_length = sizeof(value) - 1;
			memcpy(value, line + key_length + 1, value_length);
			value[value_length] = '\0';
			return value;
		}
		line = end ? end + 1 : NULL;
	}
	cr_assert_fail("the fixture printed no %s; its output:\n%s", key, output->text);
	return NULL;
}

long long rt_int(const struct rt_output *output, const char *key)
{
	return strtoll(rt_string(output, key), NULL, 10);
}

unsigned long long rt_u64(const struct rt_output *output, const char *key)
{
	return strtoull(rt_string(output, key), NULL, 10);
}

void rt_expect_string(const struct rt_output *output, const char *key, const char *expected)
{
	const char *value = rt_string(output, key);

	cr_expect_str_eq(value, expected, "%s: expected %s, observed %s", key, expected, value);
}

void rt_expect_int(const struct rt_output *output, const char *key, long long expected)
{
	long long value = rt_int(output, key);

	cr_expect_eq(value, expected, "%s: expected %lld, observed %lld", key, expected, value);
}
