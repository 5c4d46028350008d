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
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <tdstat/clock.h>

/* include/tdstat/clock.h's, as everywhere. */
static uint64_t monotonic_ns(void)
{
	return tdstat_monotonic_ns();
}

/*
 * Reading schedstat of every thread at every line costs an open and a
 * close per thread, most of a line's cost at 100 lines a second with a
 * thousand threads.  The files stay open between samples instead: a
 * proc seq file read again from offset 0 gives the figures of now.  One
 * process's files at a time (the command watches one); a file whose
 * thread ended reads nothing and is closed; past the descriptor limit,
 * files are opened and closed each time.
 */
struct open_file {
	pid_t tid;
	int fd;      /* schedstat */
	int comm_fd; /* comm, opened when a name is first asked for; -1 */
	uint64_t comm_read_ns;       /* when comm was last read */
	char comm[TDSTAT_COMM_SIZE]; /* as then */
};

/* A thread renames itself seldom, mostly once as it starts: its name is
 * read again at most this often, not at every line. */
#define COMM_REREAD_NS TDSTAT_COMM_REREAD_NS

static struct {
	pid_t pid;
	struct open_file *files; /* sorted by tid */
	size_t count;
} schedstat_files;

static void close_files(struct open_file *files, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		if (files[i].fd >= 0)
			close(files[i].fd);
		if (files[i].comm_fd >= 0)
			close(files[i].comm_fd);
	}
}

static int file_by_tid(const void *a, const void *b)
{
	const struct open_file *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Threads whose files stay open: two descriptors each (schedstat and
 * comm), within the limit less what the rest of the command needs (the
 * task directory, /proc/PID/mem, libdwfl's ELF files, outputs). */
static size_t kept_threads_max;

#define DESCRIPTORS_SPARE 256

/* More descriptors than the default 1024, once: a file per thread. */
static void raise_file_limit(void)
{
	static bool raised;
	struct rlimit limit;

	if (raised)
		return;
	raised = true;
	if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
		return;
	if (limit.rlim_cur < limit.rlim_max) {
		struct rlimit wanted = limit;

		wanted.rlim_cur = limit.rlim_max < 65536 ? limit.rlim_max : 65536;
		if (setrlimit(RLIMIT_NOFILE, &wanted) == 0)
			limit = wanted;
	}
	if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > 65536)
		limit.rlim_cur = 65536;
	kept_threads_max = limit.rlim_cur > 2 * DESCRIPTORS_SPARE ? (limit.rlim_cur - DESCRIPTORS_SPARE) / 2
								    : limit.rlim_cur / 4;
}

static struct open_file *kept_file(pid_t tid)
{
	struct open_file key = { .tid = tid };

	return schedstat_files.count ? bsearch(&key, schedstat_files.files, schedstat_files.count, sizeof(key),
					       file_by_tid)
				     : NULL;
}

/* The open files of tid (the ones kept from the last sample, else a new
 * schedstat); fd -1 when it cannot be opened. */
static struct open_file task_files(pid_t pid, pid_t tid)
{
	struct open_file *kept = kept_file(tid), files = { .tid = tid, .fd = -1, .comm_fd = -1 };
	char path[64];

	if (kept && kept->fd >= 0) {
		files = *kept;
		kept->fd = kept->comm_fd = -1; /* taken over by this sample */
		return files;
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	files.fd = open(path, O_RDONLY | O_CLOEXEC);
	return files;
}

static bool read_schedstat(int fd, uint64_t *on_cpu_ns, uint64_t *run_queue_ns)
{
	char text[128];
	ssize_t length = pread(fd, text, sizeof(text) - 1, 0);

	if (length <= 0)
		return false;
	text[length] = '\0';
	return sscanf(text, "%" SCNu64 " %" SCNu64, on_cpu_ns, run_queue_ns) == 2;
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
	size_t capacity = 0, kept_count = 0, kept_capacity = 0;
	struct open_file *kept = NULL;
	DIR *tasks;

	uint64_t begun = monotonic_ns();

	sample->count = 0;
	sample->threads = NULL;
	raise_file_limit();
	if (schedstat_files.pid != pid) {
		close_files(schedstat_files.files, schedstat_files.count);
		free(schedstat_files.files);
		schedstat_files.files = NULL;
		schedstat_files.count = 0;
		schedstat_files.pid = pid;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	tasks = opendir(path);
	if (!tasks)
		return false;
	while ((entry = readdir(tasks))) {
		pid_t tid = (pid_t)atoi(entry->d_name);
		uint64_t on_cpu, run_queue;
		struct open_file files;
		bool read;

		if (tid <= 0)
			continue;
		files = task_files(pid, tid);
		if (files.fd < 0)
			continue;
		/* A thread that ends between the listing and the read is
		 * simply left out. */
		read = read_schedstat(files.fd, &on_cpu, &run_queue);
		/* Past what may stay open, a file is opened and closed each
		 * time. */
		if (read && kept_count == kept_capacity && kept_count < kept_threads_max) {
			size_t grown = kept_capacity ? 2 * kept_capacity : 64;
			void *more = realloc(kept, grown * sizeof(*kept));
			if (more) {
				kept = more;
				kept_capacity = grown;
			}
		}
		if (read && kept_count < kept_capacity && kept_count < kept_threads_max)
			kept[kept_count++] = files;
		else
			close_files(&files, 1);
		if (!read)
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
	sample->cost_ns = sample->taken_ns - begun;
	/* The files of threads that are gone; the others stay open. */
	close_files(schedstat_files.files, schedstat_files.count);
	free(schedstat_files.files);
	if (kept_count)
		qsort(kept, kept_count, sizeof(*kept), file_by_tid);
	schedstat_files.files = kept;
	schedstat_files.count = kept_count;
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

/* A thread's name now, through the file kept open beside its schedstat
 * when there is one (opened the first time). */
bool tdstat_kernel_thread_comm_read(pid_t pid, pid_t tid, char comm[TDSTAT_COMM_SIZE])
{
	struct open_file *kept = schedstat_files.pid == pid ? kept_file(tid) : NULL;
	char path[64];
	ssize_t length;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	if (!kept)
		return comm_at(path, comm);
	if (kept->comm_fd < 0)
		kept->comm_fd = open(path, O_RDONLY | O_CLOEXEC);
	length = kept->comm_fd >= 0 ? pread(kept->comm_fd, comm, TDSTAT_COMM_SIZE - 1, 0) : -1;
	if (length <= 0) {
		comm[0] = '\0';
		return false;
	}
	comm[length] = '\0';
	if (comm[length - 1] == '\n')
		comm[--length] = '\0';
	tdstat_printable(comm);
	memcpy(kept->comm, comm, TDSTAT_COMM_SIZE);
	kept->comm_read_ns = monotonic_ns();
	return length > 0;
}

/* A thread's name, read again once a second (a thread may rename
 * itself). */
bool tdstat_kernel_thread_comm(pid_t pid, pid_t tid, char comm[TDSTAT_COMM_SIZE])
{
	struct open_file *kept = schedstat_files.pid == pid ? kept_file(tid) : NULL;

	/* The path is formatted only when a file is opened: a row per
	 * thread per line asks for names mostly kept. */
	if (kept && kept->comm_fd >= 0 && monotonic_ns() - kept->comm_read_ns < COMM_REREAD_NS) {
		memcpy(comm, kept->comm, TDSTAT_COMM_SIZE);
		return comm[0] != '\0';
	}
	return tdstat_kernel_thread_comm_read(pid, tid, comm);
}
