/* SPDX-License-Identifier: MIT */
/*
 * rt_overflow N: N threads alive at once (all waiting at a barrier, with
 * small stacks), more than status.capacity when run with a low
 * TDSTAT_MAX_THREADS.  Prints the status block while they are all alive
 * and after they are joined, and a checksum of the work the threads did,
 * so a test can see the program's own results are unharmed.
 */
#define _GNU_SOURCE
#include "fixture.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_barrier_t all_alive, may_end;
static uint64_t *results;

static void *worker(void *arg)
{
	uint64_t index = (uint64_t)(uintptr_t)arg, value = index + 1;

	for (int i = 0; i < 1000; i++)
		value = value * 6364136223846793005u + 1442695040888963407u;
	results[index] = value;
	pthread_barrier_wait(&all_alive);
	pthread_barrier_wait(&may_end);
	return NULL;
}

static uint64_t expected_checksum(unsigned n)
{
	uint64_t sum = 0;

	for (uint64_t index = 0; index < n; index++) {
		uint64_t value = index + 1;

		for (int i = 0; i < 1000; i++)
			value = value * 6364136223846793005u + 1442695040888963407u;
		sum ^= value + index;
	}
	return sum;
}

static void print_status(const char *name)
{
	const struct tdstat_status *status = &fx_region()->header.status;

	printf("%s.capacity=%u\n", name, status->capacity);
	printf("%s.live=%d\n", name, fx_live_records());
	printf("%s.overflow_live=%u\n", name, status->overflow_live);
	printf("%s.overflow_total=%llu\n", name, (unsigned long long)status->overflow_total);
	printf("%s.high_water=%u\n", name, status->high_water);
}

int main(int argc, char **argv)
{
	unsigned n = argc == 2 ? (unsigned)strtoul(argv[1], NULL, 10) : 0;
	pthread_t *threads = calloc(n ? n : 1, sizeof(*threads));
	pthread_attr_t attr;
	uint64_t sum = 0;
	unsigned created = 0;

	results = calloc(n ? n : 1, sizeof(*results));
	if (!n || !threads || !results)
		fx_die("usage: rt_overflow N");
	fx_region();
	print_status("start");
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN > 65536 ? PTHREAD_STACK_MIN : 65536);
	pthread_barrier_init(&all_alive, NULL, n + 1);
	pthread_barrier_init(&may_end, NULL, n + 1);
	for (; created < n; created++)
		if (pthread_create(&threads[created], &attr, worker, (void *)(uintptr_t)created))
			break;
	printf("created=%u\n", created);
	if (created < n)
		fx_die("only %u of %u threads could be created", created, n);
	pthread_barrier_wait(&all_alive);
	print_status("alive");
	pthread_barrier_wait(&may_end);
	for (unsigned i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	print_status("joined");
	for (uint64_t i = 0; i < n; i++)
		sum ^= results[i] + i;
	printf("checksum_ok=%d\n", sum == expected_checksum(n));
	return 0;
}
