/* SPDX-License-Identifier: MIT */
/*
 * The kernel's side of the picture, for the `untracked` figure: what the
 * scheduler says the target's threads did (schedstat: time on a CPU and
 * time waiting in the run queue), to compare with what the shim counted
 * runnable.  Only adds to what libc_db reports (SPEC §6).
 */
#include "tdstat.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

static uint64_t monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static bool read_schedstat(pid_t pid, pid_t tid, uint64_t *on_cpu_ns, uint64_t *run_queue_ns)
{
	char path[64];
	uint64_t on_cpu, waiting;
	FILE *file;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	file = fopen(path, "re");
	if (!file)
		return false;
	ok = fscanf(file, "%" SCNu64 " %" SCNu64, &on_cpu, &waiting) == 2;
	fclose(file);
	*on_cpu_ns = on_cpu;
	*run_queue_ns = waiting;
	return ok;
}

static int by_tid(const void *a, const void *b)
{
	const struct tdstat_kernel_thread *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

bool tdstat_kernel_sample(pid_t pid, struct tdstat_kernel_sample *sample)
{
	char path[64];
	struct dirent *entry;
	size_t capacity = 0;
	DIR *tasks;

	sample->count = 0;
	sample->threads = NULL;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	tasks = opendir(path);
	if (!tasks)
		return false;
	while ((entry = readdir(tasks))) {
		pid_t tid = (pid_t)atoi(entry->d_name);
		uint64_t on_cpu, run_queue;

		/* A thread that ends between the listing and the read is
		 * simply left out. */
		if (tid <= 0 || !read_schedstat(pid, tid, &on_cpu, &run_queue))
			continue;
		if (sample->count == capacity) {
			size_t grown = capacity ? 2 * capacity : 64;
			void *more = realloc(sample->threads, grown * sizeof(*sample->threads));
			if (!more)
				break;
			sample->threads = more;
			capacity = grown;
		}
		sample->threads[sample->count++] =
			(struct tdstat_kernel_thread){ tid, on_cpu + run_queue, on_cpu, run_queue };
	}
	closedir(tasks);
	sample->taken_ns = monotonic_ns();
	if (sample->count)
		qsort(sample->threads, sample->count, sizeof(*sample->threads), by_tid);
	return sample->count > 0;
}

void tdstat_kernel_sample_free(struct tdstat_kernel_sample *sample)
{
	free(sample->threads);
	sample->threads = NULL;
	sample->count = 0;
}

const struct tdstat_kernel_thread *tdstat_kernel_thread_find(const struct tdstat_kernel_sample *sample, pid_t tid)
{
	const struct tdstat_kernel_thread key = { .tid = tid };

	return sample->count ? bsearch(&key, sample->threads, sample->count, sizeof(key), by_tid) : NULL;
}
