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
 * tables); a member is known by its PID and start time (a reused PID is
 * another process), and is not surveyed again while its agent answers.
 *
 * A survey runs in three steps so that a server can do the slow one, the
 * walk through /proc and the attaching, without holding the lock its
 * scrapes take: begin copies what the fleet knows (under the lock), run
 * looks (without it: it touches only the survey), apply merges (under
 * it).  Apart from that, nothing here is thread-safe.
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
	bool stale;             /* its agent failed: attach again */
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

static int compare_members(const void *a, const void *b)
{
	pid_t x = ((const struct member *)a)->pid, y = ((const struct member *)b)->pid;

	return (x > y) - (x < y);
}

/* A member as the survey knows it: who it is, and whether its agent
 * still answers. */
struct known {
	pid_t pid;
	uint64_t start_time;
	bool stale;
};

struct tdstat_fleet_survey {
	pid_t self;
	struct known *known;      /* sorted by pid */
	size_t known_count;
	struct known *kept;       /* members still there, unchanged */
	size_t kept_count, kept_capacity;
	struct member *found;     /* new processes, attached */
	size_t found_count, found_capacity;
	bool failed;              /* out of memory: apply changes nothing */
};

static const struct known *find_known(const struct tdstat_fleet_survey *survey, pid_t pid)
{
	size_t low = 0, high = survey->known_count;

	while (low < high) {
		size_t middle = (low + high) / 2;

		if (survey->known[middle].pid == pid)
			return &survey->known[middle];
		if (survey->known[middle].pid < pid)
			low = middle + 1;
		else
			high = middle;
	}
	return NULL;
}

/* Grows *array (of `size`-byte items) to hold one more. */
static bool make_room(void **array, size_t count, size_t *capacity, size_t size)
{
	void *bigger;

	if (count < *capacity)
		return true;
	bigger = realloc(*array, (*capacity ? *capacity * 2 : 16) * size);
	if (!bigger)
		return false;
	*array = bigger;
	*capacity = *capacity ? *capacity * 2 : 16;
	return true;
}

struct tdstat_fleet_survey *tdstat_fleet_survey_begin(const struct tdstat_fleet *fleet)
{
	struct tdstat_fleet_survey *survey = calloc(1, sizeof(*survey));

	if (!survey)
		return NULL;
	survey->self = fleet->self;
	survey->known = calloc(fleet->count ? fleet->count : 1, sizeof(*survey->known));
	if (!survey->known) {
		free(survey);
		return NULL;
	}
	for (size_t i = 0; i < fleet->count; i++)
		survey->known[i] = (struct known){ fleet->members[i].pid, fleet->members[i].start_time,
						   fleet->members[i].stale };
	survey->known_count = fleet->count;
	return survey;
}

/* Confirms pid through libc_db and keeps it for apply; nothing when it
 * does not answer (no region, not started yet, gone, denied). */
static void attach_new(struct tdstat_fleet_survey *survey, pid_t pid, uint64_t start_time)
{
	struct member member = { .pid = pid, .start_time = start_time };

	if (!make_room((void **)&survey->found, survey->found_count, &survey->found_capacity,
		       sizeof(*survey->found))) {
		survey->failed = true;
		return;
	}
	tdstat_kernel_comm(pid, member.comm);
	if (tdstat_target_attach(&member.target, pid) != TD_OK) {
		tdstat_target_close(&member.target);
		return;
	}
	survey->found[survey->found_count++] = member;
}

/* A member whose agent answers and whose process is the same one (same
 * start time) is not looked at again: its maps are the costly part of a
 * survey.  An exec keeps PID and start time; the agent then either fails
 * (the old region's address is gone), which marks the member stale, or
 * reads the new image's shim at the same address, which is just as good. */
static void consider(struct tdstat_fleet_survey *survey, pid_t pid)
{
	const struct known *known = find_known(survey, pid);
	uint64_t start_time, shim_address;

	if (pid == survey->self)
		return;
	start_time = process_start_time(pid);
	if (start_time == 0)
		return;
	if (known && known->start_time == start_time && !known->stale) {
		if (make_room((void **)&survey->kept, survey->kept_count, &survey->kept_capacity,
			      sizeof(*survey->kept)))
			survey->kept[survey->kept_count++] = *known;
		else
			survey->failed = true;
		return;
	}
	if (find_shim_mapping(pid, &shim_address))
		attach_new(survey, pid, start_time);
}

void tdstat_fleet_survey_run(struct tdstat_fleet_survey *survey)
{
	struct dirent *entry;
	DIR *proc = opendir("/proc");

	if (!proc) {
		survey->failed = true;
		return;
	}
	while ((entry = readdir(proc))) {
		char *end;
		long pid;

		if (!isdigit((unsigned char)entry->d_name[0]))
			continue;
		pid = strtol(entry->d_name, &end, 10);
		if (*end || pid <= 0 || pid > INT32_MAX)
			continue;
		consider(survey, (pid_t)pid);
	}
	closedir(proc);
}

static bool was_kept(const struct tdstat_fleet_survey *survey, const struct member *member)
{
	for (size_t i = 0; i < survey->kept_count; i++)
		if (survey->kept[i].pid == member->pid && survey->kept[i].start_time == member->start_time)
			return true;
	return false;
}

/* Room for `needed` members; false when out of memory. */
static bool reserve(struct tdstat_fleet *fleet, size_t needed)
{
	struct member *members;

	if (needed <= fleet->capacity)
		return true;
	members = realloc(fleet->members, needed * sizeof(*members));
	if (!members)
		return false;
	fleet->members = members;
	fleet->capacity = needed;
	return true;
}

void tdstat_fleet_survey_apply(struct tdstat_fleet *fleet, struct tdstat_fleet_survey *survey)
{
	size_t kept = 0;

	if (!survey)
		return;
	/* Out of memory: keep what we have, and release what was found. */
	if (!survey->failed && reserve(fleet, fleet->count + survey->found_count)) {
		for (size_t i = 0; i < fleet->count; i++) {
			if (was_kept(survey, &fleet->members[i]))
				fleet->members[kept++] = fleet->members[i];
			else
				member_release(&fleet->members[i]);
		}
		for (size_t i = 0; i < survey->found_count; i++)
			fleet->members[kept++] = survey->found[i];
		fleet->count = kept;
		survey->found_count = 0;
		if (fleet->count > 1)
			qsort(fleet->members, fleet->count, sizeof(*fleet->members), compare_members);
	}
	for (size_t i = 0; i < survey->found_count; i++)
		member_release(&survey->found[i]);
	free(survey->found);
	free(survey->kept);
	free(survey->known);
	free(survey);
}

void tdstat_fleet_discover(struct tdstat_fleet *fleet)
{
	struct tdstat_fleet_survey *survey = tdstat_fleet_survey_begin(fleet);

	if (!survey)
		return;
	tdstat_fleet_survey_run(survey);
	tdstat_fleet_survey_apply(fleet, survey);
}

void tdstat_fleet_collect(struct tdstat_fleet *fleet, bool since_previous,
			  tdstat_fleet_visit visit, void *context)
{
	for (size_t i = 0; i < fleet->count; i++) {
		struct member *member = &fleet->members[i];
		struct tdstat_interval line;
		td_ta_stats_ns_t now;
		td_err_e err = tdstat_target_snapshot(&member->target, &now);

		/* Gone, or another image: the next survey looks again. */
		if (err != TD_OK) {
			member->stale = true;
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
}

const td_thragent_t *tdstat_fleet_agent(const struct tdstat_fleet *fleet, pid_t pid)
{
	for (size_t i = 0; i < fleet->count; i++)
		if (fleet->members[i].pid == pid && !fleet->members[i].stale)
			return fleet->members[i].target.agent;
	return NULL;
}
