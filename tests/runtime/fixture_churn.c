/* SPDX-License-Identifier: MIT */
/*
 * rt_churn N: four creator threads create and join N short threads in
 * all, while main keeps taking snapshots (gathering on).  Prints how many
 * snapshots were taken, the most live records seen (never above the
 * threads that can exist at once: main, 4 creators, 4 children), records
 * with impossible values, and the live count once all is joined.
 */
#define _GNU_SOURCE
#include "fixture.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define CREATORS 4

static unsigned per_creator;
static int finished;

static void *short_lived(void *arg)
{
	return arg;
}

static void *creator(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < per_creator; i++) {
		pthread_t thread;
		void *result;

		if (pthread_create(&thread, NULL, short_lived, (void *)(uintptr_t)i))
			fx_die("pthread_create");
		pthread_join(thread, &result);
		if (result != (void *)(uintptr_t)i)
			fx_die("wrong thread result");
	}
	__atomic_add_fetch(&finished, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned n = argc == 2 ? (unsigned)strtoul(argv[1], NULL, 10) : 0;
	pthread_t creators[CREATORS];
	int most_live = 0, impossible = 0, snapshots = 0;

	if (!n)
		fx_die("usage: rt_churn N");
	fx_region();
	fx_enable();
	per_creator = n / CREATORS;
	for (int i = 0; i < CREATORS; i++)
		pthread_create(&creators[i], NULL, creator, NULL);
	while (__atomic_load_n(&finished, __ATOMIC_SEQ_CST) < CREATORS) {
		struct fx_snapshot snapshot = fx_snapshot();

		snapshots++;
		impossible += snapshot.impossible;
		if (snapshot.live > most_live)
			most_live = snapshot.live;
		if (snapshot.tracked_ns > (uint64_t)(1 + 2 * CREATORS) * snapshot.window_ns ||
		    snapshot.runnable_ns > snapshot.tracked_ns)
			impossible++;
	}
	for (int i = 0; i < CREATORS; i++)
		pthread_join(creators[i], NULL);
	printf("snapshots=%d\n", snapshots);
	printf("most_live=%d\n", most_live);
	printf("impossible=%d\n", impossible);
	printf("live_end=%d\n", fx_live_records());
	printf("high_water=%u\n", fx_region()->header.status.high_water);
	printf("overflow_total=%llu\n",
	       (unsigned long long)fx_region()->header.status.overflow_total);
	return 0;
}
