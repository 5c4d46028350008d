/* SPDX-License-Identifier: MIT */
/*
 * The kernel's side of the picture, for the `untracked` figure: what the
 * scheduler says the target's threads did (schedstat: time on a CPU and
 * time waiting in the run queue), to compare with what the shim counted
 * runnable.  Only adds to what libc_db reports (SPEC §6).  Also the
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

/* text made printable UTF-8 in place: every byte that starts no valid
 * sequence, and every control character, becomes '?' (same length). */
void tdstat_printable(char *text)
{
	unsigned char *bytes = (unsigned char *)text;
	size_t length = strlen(text), at = 0;

	while (at < length) {
		size_t sequence = utf8_sequence(bytes + at, length - at);

		if (sequence == 0 || (sequence == 1 && (bytes[at] < 0x20 || bytes[at] == 0x7f))) {
			bytes[at++] = '?';
			continue;
		}
		at += sequence;
	}
}

/* A program names itself and its threads (prctl PR_SET_NAME) with any
 * bytes; every output takes names as printable UTF-8, so they are made
 * so here once. */
static bool comm_at(const char *path, char comm[TDSTAT_COMM_SIZE])
{
	size_t length;
	FILE *file;

	comm[0] = '\0';
	file = fopen(path, "re");
	if (!file)
		return false;
	length = fread(comm, 1, TDSTAT_COMM_SIZE - 1, file);
	fclose(file);
	comm[length] = '\0';
	if (length > 0 && comm[length - 1] == '\n')
		comm[--length] = '\0';
	/* A NUL inside ends the name there. */
	tdstat_printable(comm);
	return length > 0;
}

bool tdstat_kernel_comm(pid_t pid, char comm[TDSTAT_COMM_SIZE])
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	return comm_at(path, comm);
}

bool tdstat_kernel_thread_comm(pid_t pid, pid_t tid, char comm[TDSTAT_COMM_SIZE])
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	return comm_at(path, comm);
}
