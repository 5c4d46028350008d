/* SPDX-License-Identifier: MIT */
/*
 * The kernel's side of the picture, for the `untracked` figure: what the
 * scheduler says the target's threads did (schedstat: time on a CPU and
 * time waiting in the run queue), to compare with what the shim counted
 * runnable.  Only adds to what libc_db reports (docs/CONTRACT.md §6).  Also the
 * process's name, for the outputs that label a line with it.
 */
#include "tdstat.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static bool read_schedstat(pid_t pid, pid_t tid, uint64_t *runnable_ns)
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
	*runnable_ns = on_cpu + waiting;
	return ok;
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
		uint64_t runnable;

		/* A thread that ends between the listing and the read is
		 * simply left out. */
		if (tid <= 0 || !read_schedstat(pid, tid, &runnable))
			continue;
		if (sample->count == capacity) {
			size_t grown = capacity ? 2 * capacity : 64;
			void *more = realloc(sample->threads, grown * sizeof(*sample->threads));
			if (!more)
				break;
			sample->threads = more;
			capacity = grown;
		}
		sample->threads[sample->count++] = (struct tdstat_kernel_thread){ tid, runnable };
	}
	closedir(tasks);
	sample->taken_ns = monotonic_ns();
	return sample->count > 0;
}

void tdstat_kernel_sample_free(struct tdstat_kernel_sample *sample)
{
	free(sample->threads);
	sample->threads = NULL;
	sample->count = 0;
}

static const struct tdstat_kernel_thread *find(const struct tdstat_kernel_sample *sample, pid_t tid)
{
	for (size_t i = 0; i < sample->count; i++)
		if (sample->threads[i].tid == tid)
			return &sample->threads[i];
	return NULL;
}

double tdstat_kernel_runnable(const struct tdstat_kernel_sample *from, const struct tdstat_kernel_sample *to)
{
	uint64_t total = 0;

	if (to->taken_ns <= from->taken_ns)
		return 0;
	for (size_t i = 0; i < to->count; i++) {
		const struct tdstat_kernel_thread *before = find(from, to->threads[i].tid);
		uint64_t now = to->threads[i].runnable_ns;

		total += before ? (now > before->runnable_ns ? now - before->runnable_ns : 0) : now;
	}
	return (double)total / (double)(to->taken_ns - from->taken_ns);
}

/* Length of the valid UTF-8 sequence at text (at most `left` bytes), 0
 * when it is not one: overlong forms, surrogates and code points past
 * U+10FFFF are not valid either. */
static size_t utf8_sequence(const unsigned char *text, size_t left)
{
	unsigned char lead = text[0];
	size_t length = lead < 0x80 ? 1 : lead >= 0xc2 && lead <= 0xdf ? 2
		      : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;

	if (length == 0 || length > left)
		return 0;
	for (size_t i = 1; i < length; i++)
		if ((text[i] & 0xc0) != 0x80)
			return 0;
	if ((lead == 0xe0 && text[1] < 0xa0) || (lead == 0xed && text[1] >= 0xa0) ||
	    (lead == 0xf0 && text[1] < 0x90) || (lead == 0xf4 && text[1] >= 0x90))
		return 0;
	return length;
}

/* A program names itself (prctl PR_SET_NAME) with any bytes; every
 * output takes the name as printable UTF-8, so it is made so here once. */
bool tdstat_kernel_comm(pid_t pid, char comm[TDSTAT_COMM_SIZE])
{
	char path[64];
	unsigned char raw[TDSTAT_COMM_SIZE];
	size_t length, at = 0;
	FILE *file;

	comm[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	file = fopen(path, "re");
	if (!file)
		return false;
	length = fread(raw, 1, sizeof(raw) - 1, file);
	fclose(file);
	if (length > 0 && raw[length - 1] == '\n')
		length--;
	while (at < length) {
		size_t sequence = utf8_sequence(raw + at, length - at);

		if (sequence == 0 || (sequence == 1 && (raw[at] < 0x20 || raw[at] == 0x7f))) {
			comm[at++] = '?';
			continue;
		}
		memcpy(comm + at, raw + at, sequence);
		at += sequence;
	}
	comm[at] = '\0';
	return length > 0;
}
