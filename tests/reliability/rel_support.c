/* SPDX-License-Identifier: MIT */
#include "rel_support.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tdstat/ps_live.h>

int rel_failures;

void rel_fail(const char *format, ...)
{
	va_list arguments;

	rel_failures++;
	fputs("FAIL: ", stderr);
	va_start(arguments, format);
	vfprintf(stderr, format, arguments);
	va_end(arguments);
	fputc('\n', stderr);
}

bool rel_ci(void)
{
	const char *ci = getenv("CI");

	return ci && *ci && strcmp(ci, "0") != 0 && strcmp(ci, "false") != 0;
}

double rel_seconds(const char *name, double ci_default, double local_default)
{
	const char *text = getenv(name);

	if (text && *text)
		return atof(text);
	return rel_ci() ? ci_default : local_default;
}



const char *rel_check_fractions(const td_ta_stats_t *s)
{
	static __thread char why[256];
	int den = s->nlwps_den;

	if (den <= 0 || s->nrunnable_den != den || s->a_concurrency_den != den || s->nidle_den != den)
		snprintf(why, sizeof(why), "denominators %d %d %d %d", s->nlwps_den, s->nrunnable_den,
			 s->a_concurrency_den, s->nidle_den);
	else if (s->a_concurrency_num < 0 || s->a_concurrency_num > s->nrunnable_num ||
		 s->nrunnable_num > s->nlwps_num)
		snprintf(why, sizeof(why), "order a_concurrency %d <= nrunnable %d <= nlwps %d broken",
			 s->a_concurrency_num, s->nrunnable_num, s->nlwps_num);
	else if (s->nidle_num != s->nlwps_num - s->nrunnable_num)
		snprintf(why, sizeof(why), "nidle %d != nlwps %d - nrunnable %d", s->nidle_num, s->nlwps_num,
			 s->nrunnable_num);
	else if (s->nthreads < 0)
		snprintf(why, sizeof(why), "nthreads %d", s->nthreads);
	else
		return NULL;
	return why;
}

const char *rel_check_integrals(const td_ta_stats_ns_t *s)
{
	static __thread char why[256];

	if (s->running_ns > s->runnable_ns || s->runnable_ns > s->lwps_ns)
		snprintf(why, sizeof(why), "order running %llu <= runnable %llu <= lwps %llu broken",
			 (unsigned long long)s->running_ns, (unsigned long long)s->runnable_ns,
			 (unsigned long long)s->lwps_ns);
	else if (s->idle_ns != s->lwps_ns - s->runnable_ns)
		snprintf(why, sizeof(why), "idle %llu != lwps - runnable", (unsigned long long)s->idle_ns);
	else if (s->running_ns > s->cpu_ns)
		snprintf(why, sizeof(why), "running %llu > cpu %llu", (unsigned long long)s->running_ns,
			 (unsigned long long)s->cpu_ns);
	else if (s->nthreads < 0)
		snprintf(why, sizeof(why), "nthreads %d", s->nthreads);
	else if (!s->enabled && s->window_ns == 0 && (s->lwps_ns || s->runnable_ns))
		snprintf(why, sizeof(why), "empty window with integrals");
	else
		return NULL;
	return why;
}

long rel_vm_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t length = strlen(field);
	long value = -1;
	FILE *file;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	file = fopen(path, "r");
	if (!file)
		return -1;
	while (fgets(line, sizeof(line), file))
		if (!strncmp(line, field, length) && line[length] == ':') {
			value = atol(line + length + 1);
			break;
		}
	fclose(file);
	return value;
}

bool rel_maps_contain(pid_t pid, const char *needle)
{
	char path[64], line[512];
	bool found = false;
	FILE *file;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	file = fopen(path, "r");
	if (!file)
		return false;
	while (!found && fgets(line, sizeof(line), file))
		found = strstr(line, needle) != NULL;
	fclose(file);
	return found;
}

td_err_e rel_agent_open(struct rel_agent *agent, pid_t pid, int timeout_ms)
{
	uint64_t deadline = tdtest_monotonic_ns() + (uint64_t)timeout_ms * 1000000u;
	td_err_e err = TD_DBERR;

	agent->ph = NULL;
	agent->ta = NULL;
	for (;;) {
		if (tdps_open(pid, &agent->ph) == TDPS_OK) {
			err = td_ta_new(agent->ph, &agent->ta);
			if (err == TD_OK)
				return TD_OK;
			tdps_close(agent->ph);
			agent->ph = NULL;
		}
		if (tdtest_monotonic_ns() > deadline)
			return err;
		tdtest_sleep_ms(5);
	}
}

void rel_agent_close(struct rel_agent *agent)
{
	if (agent->ta)
		td_ta_delete(agent->ta);
	if (agent->ph)
		tdps_close(agent->ph);
	agent->ta = NULL;
	agent->ph = NULL;
}

const char *rel_td_name(td_err_e err)
{
	switch (err) {
	case TD_OK: return "TD_OK";
	case TD_ERR: return "TD_ERR";
	case TD_BADTA: return "TD_BADTA";
	case TD_BADPH: return "TD_BADPH";
	case TD_NOLIBTHREAD: return "TD_NOLIBTHREAD";
	case TD_VERSION: return "TD_VERSION";
	case TD_DBERR: return "TD_DBERR";
	case TD_MALLOC: return "TD_MALLOC";
	case TD_NOCAPAB: return "TD_NOCAPAB";
	default: return "TD_other";
	}
}
