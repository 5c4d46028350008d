/* SPDX-License-Identifier: MIT */
/*
 * Opening and closing a handle on a live process, and what went wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ps_live_private.h"

bool tdps_process_gone(pid_t pid)
{
	char path[64], buffer[512], *state;
	ssize_t length;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH;
	length = read(fd, buffer, sizeof(buffer) - 1);
	close(fd);
	if (length <= 0)
		return true;
	buffer[length] = '\0';
	/* "pid (comm) S ...": comm may hold spaces and parentheses, so the
	 * state follows the last ')'. */
	for (state = buffer + length; state > buffer && state[-1] != ')'; state--)
		;
	if (state == buffer || state[0] != ' ')
		return false;
	return state[1] == 'Z' || state[1] == 'X';
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

static enum tdps_status open_memory(pid_t pid, int *fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	*fd = open(path, O_RDWR | O_CLOEXEC);
	if (*fd < 0 && errno != ENOENT && errno != ESRCH && errno != EACCES && errno != EPERM)
		*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd >= 0)
		return TDPS_OK;
	return tdps_status_from_errno(pid, errno);
}

TDPS_EXPORT enum tdps_status tdps_open(pid_t pid, struct ps_prochandle **out)
{
	struct ps_prochandle *ph;
	enum tdps_status status;
	int fd;

	if (!out)
		return TDPS_IO;
	*out = NULL;
	if (pid <= 0)
		return TDPS_NO_PROCESS;
	/* Opening /proc/PID/mem makes the kernel's ptrace access check now,
	 * so a permission problem is reported here, not at the first read. */
	status = open_memory(pid, &fd);
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
