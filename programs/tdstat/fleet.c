/* SPDX-License-Identifier: MIT */
/*
 * The fleet: every process on this machine that has the shim loaded and
 * that we may read, for `ps` and `serve`.
 *
 * Discovery reads /proc/PID/maps (readable only where ptrace's read
 * check lets us, which is the same rule libtdstat_ps meets) for a mapping
 * of a file named libtdshim.so*, then confirms the process through
 * libc_db: an agent that td_ta_new accepts.  A process that vanishes or
 * denies access on the way is left out without a word: a listing of
 * other people's processes is a snapshot of a moving system, not an
 * error.
 *
 * Members keep their agents between collections (serve scrapes the same
 * processes again and again, and td_ta_new searches the target's symbol
 * tables); a member is known by its PID, its start time (a reused PID
 * is another process) and the address of its shim (an exec maps a new
 * image).  Nothing here is thread-safe: serve serializes its calls.
 */
#include "fleet.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct member {
	pid_t pid;
	uint64_t start_time;    /* field 22 of /proc/PID/stat, clock ticks */
	uint64_t shim_address;  /* start of its first libtdshim.so mapping */
	bool seen;              /* found by the latest discovery */
	bool has_previous;
	td_ta_stats_ns_t previous;
	char comm[TDSTAT_COMM_SIZE]; /* the latest name read */
	struct tdstat_target target;
};

struct tdstat_fleet {
	struct member *members; /* sorted by pid */
	size_t count, capacity;
	pid_t self;
};

struct tdstat_fleet *tdstat_fleet_new(void)
{
	struct tdstat_fleet *fleet = calloc(1, sizeof(*fleet));

	if (fleet)
		fleet->self = getpid();
	return fleet;
}

static void member_release(struct member *member)
{
	tdstat_target_close(&member->target);
}

void tdstat_fleet_free(struct tdstat_fleet *fleet)
{
	if (!fleet)
		return;
	for (size_t i = 0; i < fleet->count; i++)
		member_release(&fleet->members[i]);
	free(fleet->members);
	free(fleet);
}

size_t tdstat_fleet_size(const struct tdstat_fleet *fleet)
{
	return fleet->count;
}

/* The start time of pid (after the command name, which may hold spaces
 * and parentheses: parse from the last ')'); 0 when unreadable. */
static uint64_t process_start_time(pid_t pid)
{
	char path[64], buffer[1024], *field;
	uint64_t start = 0;
	ssize_t length;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	length = read(fd, buffer, sizeof(buffer) - 1);
	close(fd);
	if (length <= 0)
		return 0;
	buffer[length] = '\0';
	field = strrchr(buffer, ')');
	/* After ") ": state is field 3; starttime is field 22. */
	for (int number = 2; field && number < 22; number++)
		field = strchr(field + 1, ' ');
	if (field)
		start = strtoull(field + 1, NULL, 10);
	return start;
}

/* True when a path's last component names the shim (any version
 * suffix, a deleted file included). */
static bool path_is_shim(const char *path)
{
	const char *base = strrchr(path, '/');

	return base && !strncmp(base + 1, "libtdshim.so", 12);
}

/* The address of pid's first mapping of the shim; false when it has
 * none or its maps cannot be read. */
static bool find_shim_mapping(pid_t pid, uint64_t *address)
{
	char path[64], line[4096];
	bool found = false;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	if (!maps)
		return false;
	while (!found && fgets(line, sizeof(line), maps)) {
		char *file = strchr(line, '/');
		size_t length;

		if (!file)
			continue;
		length = strlen(file);
		if (length && file[length - 1] == '\n')
			file[--length] = '\0';
		if (path_is_shim(file))
			found = sscanf(line, "%" SCNx64, address) == 1;
	}
	fclose(maps);
	return found;
}

/* Among the first `count` members, which are sorted. */
static struct member *find_member(struct tdstat_fleet *fleet, pid_t pid, size_t count)
{
	size_t low = 0, high = count;

	while (low < high) {
		size_t middle = (low + high) / 2;

		if (fleet->members[middle].pid == pid)
			return &fleet->members[middle];
		if (fleet->members[middle].pid < pid)
			low = middle + 1;
		else
			high = middle;
	}
	return NULL;
}

static int compare_members(const void *a, const void *b)
{
	pid_t x = ((const struct member *)a)->pid, y = ((const struct member *)b)->pid;

	return (x > y) - (x < y);
}

/* Confirms pid through libc_db and adds it; false when it does not
 * answer (no region, not started yet, gone, denied). */
static bool add_member(struct tdstat_fleet *fleet, pid_t pid, uint64_t start_time,
		       uint64_t shim_address)
{
	struct member member = { .pid = pid, .start_time = start_time,
				 .shim_address = shim_address, .seen = true };

	if (fleet->count == fleet->capacity) {
		size_t capacity = fleet->capacity ? fleet->capacity * 2 : 16;
		struct member *members = realloc(fleet->members, capacity * sizeof(*members));

		if (!members)
			return false;
		fleet->members = members;
		fleet->capacity = capacity;
	}
	tdstat_kernel_comm(pid, member.comm);
	if (tdstat_target_attach(&member.target, pid) != TD_OK) {
		tdstat_target_close(&member.target);
		return false;
	}
	fleet->members[fleet->count++] = member;
	return true;
}

/* Drops the members that discovery did not see again. */
static void drop_unseen(struct tdstat_fleet *fleet)
{
	size_t kept = 0;

	for (size_t i = 0; i < fleet->count; i++) {
		if (!fleet->members[i].seen) {
			member_release(&fleet->members[i]);
			continue;
		}
		fleet->members[kept++] = fleet->members[i];
	}
	fleet->count = kept;
}

static void consider(struct tdstat_fleet *fleet, pid_t pid, size_t known)
{
	uint64_t shim_address, start_time;
	struct member *member;

	if (pid == fleet->self || !find_shim_mapping(pid, &shim_address))
		return;
	start_time = process_start_time(pid);
	if (start_time == 0)
		return;
	/* Only the members known before this discovery are searched: the
	 * ones it adds are appended unsorted until it ends. */
	member = find_member(fleet, pid, known);
	if (member && member->start_time == start_time && member->shim_address == shim_address) {
		member->seen = true;
		return;
	}
	/* A reused PID or a new image: the old agent reads nothing valid. */
	if (member)
		member->seen = false;
	add_member(fleet, pid, start_time, shim_address);
}

void tdstat_fleet_discover(struct tdstat_fleet *fleet)
{
	size_t known = fleet->count;
	struct dirent *entry;
	DIR *proc;

	for (size_t i = 0; i < known; i++)
		fleet->members[i].seen = false;
	proc = opendir("/proc");
	if (!proc)
		return;
	while ((entry = readdir(proc))) {
		char *end;
		long pid;

		if (!isdigit((unsigned char)entry->d_name[0]))
			continue;
		pid = strtol(entry->d_name, &end, 10);
		if (*end || pid <= 0 || pid > INT32_MAX)
			continue;
		consider(fleet, (pid_t)pid, known);
	}
	closedir(proc);
	drop_unseen(fleet);
	if (fleet->count > 1)
		qsort(fleet->members, fleet->count, sizeof(*fleet->members), compare_members);
}

void tdstat_fleet_collect(struct tdstat_fleet *fleet, bool since_previous,
			  tdstat_fleet_visit visit, void *context)
{
	bool dropped = false;

	for (size_t i = 0; i < fleet->count; i++) {
		struct member *member = &fleet->members[i];
		struct tdstat_interval line;
		td_ta_stats_ns_t now;
		td_err_e err = tdstat_target_snapshot(&member->target, &now);

		if (err != TD_OK) {
			/* Gone: forget it; anything else may pass, try again
			 * next time. */
			if (tdstat_target_vanished(&member->target, err)) {
				member->seen = false;
				dropped = true;
			}
			continue;
		}
		if (since_previous && member->has_previous && now.enabled && member->previous.enabled &&
		    tdstat_same_window(&member->previous, &now))
			tdstat_interval_compute(&line, member->pid, &member->previous, &now);
		else
			tdstat_interval_compute(&line, member->pid, NULL, &now);
		member->previous = now;
		member->has_previous = true;
		/* The name may have changed (prctl); a process that is gone by
		 * now still gets its line, with the name it had. */
		tdstat_kernel_comm(member->pid, line.comm);
		if (line.comm[0])
			memcpy(member->comm, line.comm, sizeof(member->comm));
		else
			memcpy(line.comm, member->comm, sizeof(line.comm));
		visit(&line, context);
	}
	if (dropped)
		drop_unseen(fleet);
}
