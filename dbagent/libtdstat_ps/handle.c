/* SPDX-License-Identifier: MIT */
/*
 * Opening and closing a handle on a live process, what the kernel says of
 * that process, and what went wrong.
 *
 * A process lives while any of its threads does: when main() calls
 * pthread_exit the leader is a zombie (no memory, an empty maps file) but
 * the other threads run on.  Everything that needs the address space goes
 * through a live thread (tdps_live_thread), never the leader's PID alone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ps_live_private.h"

/* PF_KTHREAD of <linux/sched.h>, in the flags field of /proc/PID/stat. */
#define KERNEL_THREAD_FLAG 0x00200000ul

/* Reads a small /proc file whole; returns its length, or -1 with errno. */
static ssize_t proc_read(const char *path, char *buffer, size_t size)
{
	ssize_t length;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	length = read(fd, buffer, size - 1);
	close(fd);
	if (length < 0)
		return -1;
	buffer[length] = '\0';
	return length;
}

/* "pid (comm) S ppid ...": comm may hold spaces and parentheses, so the
 * fields after it start past the last ')'.  Returns the text from the
 * state letter on, or NULL. */
static const char *stat_fields(const char *path, char *buffer, size_t size)
{
	const char *close_paren;

	if (proc_read(path, buffer, size) <= 0)
		return NULL;
	close_paren = strrchr(buffer, ')');
	if (!close_paren || close_paren[1] != ' ' || close_paren[2] == '\0')
		return NULL;
	return close_paren + 2;
}

/* State letter of thread `tid` of process `pid`, 0 when it is gone. */
static char thread_state(pid_t pid, pid_t tid)
{
	char path[64], buffer[512];
	const char *fields;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	fields = stat_fields(path, buffer, sizeof(buffer));
	return fields ? fields[0] : 0;
}

static bool state_live(char state)
{
	return state != 0 && state != 'Z' && state != 'X' && state != 'x';
}

/* The first thread of `pid`, the leader first, whose state `wanted`
 * accepts; 0 if none. */
static pid_t threads_find(pid_t pid, bool (*wanted)(char state))
{
	char path[64];
	struct dirent *entry;
	pid_t found = 0;
	DIR *tasks;

	if (wanted(thread_state(pid, pid)))
		return pid;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	tasks = opendir(path);
	if (!tasks)
		return 0;
	while (!found && (entry = readdir(tasks)) != NULL) {
		pid_t tid = (pid_t)strtol(entry->d_name, NULL, 10);

		if (tid > 0 && tid != pid && wanted(thread_state(pid, tid)))
			found = tid;
	}
	closedir(tasks);
	return found;
}

pid_t tdps_live_thread(pid_t pid)
{
	return threads_find(pid, state_live);
}

bool tdps_process_gone(pid_t pid)
{
	return tdps_live_thread(pid) == 0;
}

TDPS_EXPORT char tdps_process_state(pid_t pid)
{
	pid_t tid;

	if (pid <= 0)
		return 0;
	tid = tdps_live_thread(pid);
	if (tid == 0)
		return thread_state(pid, pid) ? 'Z' : 0;
	return thread_state(pid, tid);
}

pid_t tdps_process_of(pid_t pid)
{
	char path[64], buffer[2048];
	const char *line;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (proc_read(path, buffer, sizeof(buffer)) <= 0)
		return 0;
	line = strstr(buffer, "\nTgid:");
	return line ? (pid_t)strtol(line + 6, NULL, 10) : 0;
}

static bool kernel_thread(pid_t pid)
{
	char path[64], buffer[512];
	unsigned long flags;
	const char *fields;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fields = stat_fields(path, buffer, sizeof(buffer));
	/* state ppid pgrp session tty_nr tpgid flags */
	return fields && sscanf(fields, "%*c %*d %*d %*d %*d %*d %lu", &flags) == 1 &&
	       (flags & KERNEL_THREAD_FLAG) != 0;
}

enum tdps_status tdps_status_from_errno(pid_t pid, int error)
{
	switch (error) {
	case ESRCH:
	case ENOENT:
		return TDPS_NO_PROCESS;
	case EPERM:
	case EACCES:
		return TDPS_PERMISSION;
	case ENOMEM:
		return tdps_process_gone(pid) ? TDPS_NO_PROCESS : TDPS_NO_MEMORY;
	default:
		return tdps_process_gone(pid) ? TDPS_NO_PROCESS : TDPS_IO;
	}
}

void tdps_set_status(struct ps_prochandle *ph, enum tdps_status status)
{
	atomic_store_explicit(&ph->last_status, (int)status, memory_order_relaxed);
}

/* The descriptor pins the address space, not a thread: it stays good
 * after the thread it was opened through exits, while any other lives. */
static enum tdps_status open_memory(pid_t pid, pid_t tid, int *fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/mem", (int)pid, (int)tid);
	*fd = open(path, O_RDWR | O_CLOEXEC);
	if (*fd < 0 && errno != ENOENT && errno != ESRCH && errno != EACCES && errno != EPERM)
		*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd >= 0)
		return TDPS_OK;
	return tdps_status_from_errno(pid, errno);
}

/* What `pid` is, before we try its memory. */
static enum tdps_status process_check(pid_t pid)
{
	pid_t process = tdps_process_of(pid);

	if (process == 0)
		return TDPS_NO_PROCESS;
	if (process != pid)
		return TDPS_NOT_A_PROCESS;
	if (kernel_thread(pid))
		return TDPS_KERNEL_THREAD;
	return TDPS_OK;
}

TDPS_EXPORT enum tdps_status tdps_open(pid_t pid, struct ps_prochandle **out)
{
	struct ps_prochandle *ph;
	enum tdps_status status;
	pid_t tid;
	int fd;

	if (!out)
		return TDPS_IO;
	*out = NULL;
	if (pid <= 0)
		return TDPS_NO_PROCESS;
	status = process_check(pid);
	if (status != TDPS_OK)
		return status;
	tid = tdps_live_thread(pid);
	if (tid == 0)
		return TDPS_NO_PROCESS;
	/* Opening /proc/PID/mem makes the kernel's ptrace access check now,
	 * so a permission problem is reported here, not at the first read. */
	status = open_memory(pid, tid, &fd);
	if (status != TDPS_OK)
		return status;
	if (tdps_process_gone(pid)) {
		close(fd);
		return TDPS_NO_PROCESS;
	}
	ph = malloc(sizeof(*ph));
	if (!ph) {
		close(fd);
		return TDPS_NO_MEMORY;
	}
	ph->pid = pid;
	ph->mem_fd = fd;
	atomic_init(&ph->access_tid, tid);
	atomic_init(&ph->last_status, TDPS_OK);
	*out = ph;
	return TDPS_OK;
}

TDPS_EXPORT void tdps_close(struct ps_prochandle *ph)
{
	if (!ph)
		return;
	if (ph->mem_fd >= 0)
		close(ph->mem_fd);
	free(ph);
}

TDPS_EXPORT enum tdps_status tdps_last_status(const struct ps_prochandle *ph)
{
	if (!ph)
		return TDPS_OK;
	return (enum tdps_status)atomic_load_explicit(&ph->last_status, memory_order_relaxed);
}
