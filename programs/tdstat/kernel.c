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
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
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
	return tdstat_schedstat_parse(text, on_cpu_ns, run_queue_ns);
}

/* The next decimal field of a /proc line at *at (the spaces before it
 * skipped), ending at a space, a newline or the text's end; *at moves
 * past it.  strtoull, not sscanf: sscanf cost 1,660 instructions a
 * schedstat line (callgrind), strtoull's two fields about 500, and
 * sscanf took "1 2x" and "-1 2" for figures. */
static bool next_field(const char **at, uint64_t *value)
{
	unsigned long long number;
	char *end;

	while (**at == ' ')
		(*at)++;
	if (**at < '0' || **at > '9')
		return false;
	errno = 0;
	number = strtoull(*at, &end, 10);
	if (errno || (*end != ' ' && *end != '\n' && *end != '\0'))
		return false;
	*value = number;
	*at = end;
	return true;
}

bool tdstat_schedstat_parse(const char *text, uint64_t *on_cpu_ns, uint64_t *run_queue_ns)
{
	uint64_t on_cpu, run_queue;

	if (!next_field(&text, &on_cpu) || !next_field(&text, &run_queue))
		return false;
	*on_cpu_ns = on_cpu;
	*run_queue_ns = run_queue;
	return true;
}

bool tdstat_steal_parse(const char *text, uint64_t *steal_ticks)
{
	const char *at = text;
	uint64_t number = 0;

	if (strncmp(at, "cpu ", 4) != 0)
		return false;
	at += 4;
	/* The eighth value; the line's end before it: an older kernel. */
	for (int value = 1; value <= 8; value++)
		if (!next_field(&at, &number))
			return false;
	*steal_ticks = number;
	return true;
}

/*
 * The machine's steal: /proc/stat stays open, read again from offset 0.
 * The kernel formats the whole file at every read (a line per CPU, every
 * interrupt's count: 20-27 us cold on this project's 2-CPU VM, as much as
 * the rest of a plain line's kernel reading), so it is read about once
 * in STEAL_EVERY_NS (STEAL_EARLY_NS below); a sample in between carries the last two readings,
 * and a line shorter than that gets the steal over the last of them
 * (steal_between in threads.c).  Only the first line is copied out:
 * "cpu " and eight values of at most 20 digits fit in 256 bytes.
 */
#define STEAL_EVERY_NS UINT64_C(1000000000)
/* Lines of -i 1 are a second apart only give or take the wakeup's and
 * the reading's jitter (absolute deadlines, watch.c): read again a tenth
 * early rather than a line late, which skipped every other read at
 * -i 1, giving one line the steal of the second wholly before it and
 * the next that of two seconds. */
#define STEAL_EARLY_NS (STEAL_EVERY_NS / 10)

static struct {
	int fd;
	bool opened;
	bool known[2];             /* [0] the last reading, [1] the one before */
	uint64_t ticks[2], taken_ns[2];
} proc_stat = { .fd = -1 };

static bool machine_steal_read(uint64_t *steal_ticks)
{
	char text[256];
	ssize_t length;

	if (!proc_stat.opened) {
		proc_stat.opened = true;
		proc_stat.fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	}
	if (proc_stat.fd < 0)
		return false;
	length = pread(proc_stat.fd, text, sizeof(text) - 1, 0);
	if (length <= 0)
		return false;
	text[length] = '\0';
	return tdstat_steal_parse(text, steal_ticks);
}

static void machine_steal(struct tdstat_kernel_sample *sample, uint64_t now_ns)
{
	uint64_t ticks;

	if (!proc_stat.known[0] || now_ns - proc_stat.taken_ns[0] >= STEAL_EVERY_NS - STEAL_EARLY_NS) {
		bool known = machine_steal_read(&ticks);

		proc_stat.known[1] = proc_stat.known[0];
		proc_stat.ticks[1] = proc_stat.ticks[0];
		proc_stat.taken_ns[1] = proc_stat.taken_ns[0];
		proc_stat.known[0] = known;
		proc_stat.ticks[0] = known ? ticks : 0;
		proc_stat.taken_ns[0] = now_ns;
	}
	sample->steal_known = proc_stat.known[0];
	sample->steal_ticks = proc_stat.ticks[0];
	sample->steal_taken_ns = proc_stat.taken_ns[0];
	sample->steal_before_known = proc_stat.known[1];
	sample->steal_before_ticks = proc_stat.ticks[1];
	sample->steal_before_taken_ns = proc_stat.taken_ns[1];
}

static int by_tid(const void *a, const void *b)
{
	const struct tdstat_kernel_thread *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* The task directory of the sampled process, kept open: the kernel
 * counts its threads in the directory's link count (st_nlink - 2)
 * without walking them, which a listing does. */
static struct {
	pid_t pid;
	int fd;
	size_t listed;       /* threads the last listing found */
	uint64_t listed_ns;  /* when */
} task_directory = { .fd = -1 };

/* Threads the kernel counts in pid now; -1 when it cannot be asked. */
static long task_count(pid_t pid)
{
	struct stat status;

	if (task_directory.fd >= 0 && task_directory.pid != pid) {
		close(task_directory.fd);
		task_directory.fd = -1;
	}
	if (task_directory.fd < 0) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		task_directory.fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		task_directory.pid = pid;
		task_directory.listed_ns = 0;
	}
	if (task_directory.fd < 0 || fstat(task_directory.fd, &status) != 0 || status.st_nlink < 2)
		return -1;
	return (long)status.st_nlink - 2;
}

/* One thread of a sample being taken: its figures, from `copy` (not
 * NULL: asleep since it) or from its schedstat file, which stays open
 * for the next sample when there is room. */
struct sampling {
	pid_t pid;
	struct tdstat_kernel_sample *sample;
	size_t capacity;
	struct open_file *kept;
	size_t kept_count, kept_capacity;
	bool failed; /* no memory */
};

/* false: the thread could not be read (it ended). */
static bool sample_thread(struct sampling *sampling, pid_t tid, const struct tdstat_kernel_thread *copy)
{
	struct open_file files = task_files(sampling->pid, tid);
	uint64_t on_cpu, run_queue;
	bool read;

	if (files.fd < 0)
		return false;
	/* A thread that ends between the listing and the read is simply
	 * left out. */
	if (copy) {
		read = true;
		on_cpu = copy->on_cpu_ns;
		run_queue = copy->run_queue_ns;
	} else {
		read = read_schedstat(files.fd, &on_cpu, &run_queue);
	}
	/* Past what may stay open, a file is opened and closed each
	 * time. */
	if (read && sampling->kept_count == sampling->kept_capacity && sampling->kept_count < kept_threads_max) {
		size_t grown = sampling->kept_capacity ? 2 * sampling->kept_capacity : 64;
		void *more = realloc(sampling->kept, grown * sizeof(*sampling->kept));
		if (more) {
			sampling->kept = more;
			sampling->kept_capacity = grown;
		}
	}
	if (read && sampling->kept_count < sampling->kept_capacity && sampling->kept_count < kept_threads_max)
		sampling->kept[sampling->kept_count++] = files;
	else
		close_files(&files, 1);
	if (!read)
		return false;
	struct tdstat_kernel_sample *sample = sampling->sample;
	if (sample->count == sampling->capacity) {
		size_t grown = sampling->capacity ? 2 * sampling->capacity : 64;
		void *more = realloc(sample->threads, grown * sizeof(*sample->threads));
		if (!more) {
			sampling->failed = true;
			return true;
		}
		sample->threads = more;
		sampling->capacity = grown;
	}
	sample->threads[sample->count++] = (struct tdstat_kernel_thread){ tid, on_cpu + run_queue, on_cpu, run_queue };
	return true;
}

static bool tid_in(const pid_t *tids, size_t count, pid_t tid)
{
	size_t low = 0, high = count;

	while (low < high) {
		size_t middle = low + (high - low) / 2;

		if (tids[middle] == tid)
			return true;
		if (tids[middle] < tid)
			low = middle + 1;
		else
			high = middle;
	}
	return false;
}

/* Sorted by tid, as most samples come already: no sort then. */
static void sort_unless_sorted(void *items, size_t count, size_t size, int (*compare)(const void *, const void *))
{
	for (size_t i = 1; i < count; i++)
		if (compare((char *)items + (i - 1) * size, (char *)items + i * size) > 0) {
			qsort(items, count, size, compare);
			return;
		}
}

/* The threads of `previous` again, without listing the directory: its
 * threads are those of the files kept open (both sorted by tid), merged
 * with the sorted `asleep` tids.  false when they are not the same
 * threads, or one of them could not be read (it ended): the caller
 * lists the directory. */
static bool sample_known(struct sampling *sampling, const struct tdstat_kernel_sample *previous, const pid_t *asleep,
			 size_t asleep_count)
{
	struct tdstat_kernel_sample *sample = sampling->sample;
	size_t count = previous->count, a = 0;

	if (schedstat_files.count != count || count == 0)
		return false;
	sampling->kept = malloc(count * sizeof(*sampling->kept));
	sample->threads = malloc(count * sizeof(*sample->threads));
	if (!sampling->kept || !sample->threads)
		return false;
	sampling->kept_capacity = sampling->capacity = count;
	for (size_t i = 0; i < count; i++) {
		struct open_file *file = &schedstat_files.files[i];
		const struct tdstat_kernel_thread *then = &previous->threads[i];
		uint64_t on_cpu, run_queue;

		if (file->tid != then->tid || file->fd < 0)
			return false;
		while (a < asleep_count && asleep[a] < then->tid)
			a++;
		if (a < asleep_count && asleep[a] == then->tid) {
			on_cpu = then->on_cpu_ns;
			run_queue = then->run_queue_ns;
		} else if (!read_schedstat(file->fd, &on_cpu, &run_queue)) {
			return false;
		}
		sampling->kept[sampling->kept_count++] = *file;
		file->fd = file->comm_fd = -1; /* taken over by this sample */
		sample->threads[sample->count++] =
			(struct tdstat_kernel_thread){ then->tid, on_cpu + run_queue, on_cpu, run_queue };
	}
	return true;
}

bool tdstat_kernel_sample(pid_t pid, struct tdstat_kernel_sample *sample, const struct tdstat_kernel_sample *previous,
			  const pid_t *asleep, size_t asleep_count)
{
	struct sampling sampling = { .pid = pid, .sample = sample };
	struct dirent *entry;
	DIR *tasks;
	uint64_t begun = monotonic_ns();
	long threads;

	sample->count = 0;
	sample->threads = NULL;
	sample->steal_known = sample->steal_before_known = false;
	raise_file_limit();
	if (schedstat_files.pid != pid) {
		close_files(schedstat_files.files, schedstat_files.count);
		free(schedstat_files.files);
		schedstat_files.files = NULL;
		schedstat_files.count = 0;
		schedstat_files.pid = pid;
		previous = NULL;
	}
	threads = task_count(pid);
	/* As many threads as the last listing found, and as the last sample
	 * read: the same threads (a thread the shim tracks shows in its
	 * records first; one it does not, that started as another ended,
	 * waits for the next listing). */
	if (previous && threads >= 0 && (size_t)threads == task_directory.listed && previous->count == (size_t)threads &&
	    begun - task_directory.listed_ns < TDSTAT_KERNEL_LIST_NS &&
	    sample_known(&sampling, previous, asleep, asleep_count) && !sampling.failed)
		goto done;
	/* Listed: the files taken so far go back where the listing finds
	 * them. */
	for (size_t i = 0; i < sampling.kept_count; i++) {
		struct open_file *kept = kept_file(sampling.kept[i].tid);

		if (kept && kept->fd < 0 && kept->comm_fd < 0)
			*kept = sampling.kept[i];
		else
			close_files(&sampling.kept[i], 1);
	}
	sampling.kept_count = 0;
	sample->count = 0;
	sampling.failed = false;
	{
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		tasks = opendir(path);
	}
	if (!tasks) {
		free(sampling.kept);
		return false;
	}
	while ((entry = readdir(tasks)) && !sampling.failed) {
		pid_t tid = (pid_t)atoi(entry->d_name);
		const struct tdstat_kernel_thread *copy = NULL;

		if (tid <= 0)
			continue;
		if (previous && tid_in(asleep, asleep_count, tid))
			copy = tdstat_kernel_thread_find(previous, tid);
		sample_thread(&sampling, tid, copy);
	}
	closedir(tasks);
	task_directory.listed = (size_t)(threads >= 0 ? threads : 0);
	task_directory.listed_ns = begun;
	/* Counted before the listing: one that changed meanwhile is listed
	 * again next time. */
	if (threads < 0 || (size_t)threads != sample->count)
		task_directory.listed_ns = 0;
done:
	/* Nothing from /proc/stat when nothing of the target could be read:
	 * untracked is unknown then, and steal would explain nothing. */
	sample->taken_ns = monotonic_ns();
	if (sample->count > 0)
		machine_steal(sample, sample->taken_ns);
	sample->cost_ns = sample->taken_ns - begun;
	/* The files of threads that are gone; the others stay open. */
	close_files(schedstat_files.files, schedstat_files.count);
	free(schedstat_files.files);
	sort_unless_sorted(sampling.kept, sampling.kept_count, sizeof(*sampling.kept), file_by_tid);
	schedstat_files.files = sampling.kept;
	schedstat_files.count = sampling.kept_count;
	sort_unless_sorted(sample->threads, sample->count, sizeof(*sample->threads), by_tid);
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
