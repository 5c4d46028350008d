/* SPDX-License-Identifier: MIT */
/*
 * Would CMD gain privileges when it starts?  A setuid or setgid file, or
 * one with file capabilities, changes the credentials of the process that
 * execs it, except where the kernel (under ptrace, PTRACE_SEIZE included)
 * drops that change because the tracer could not trace the result.  So
 * `tdstat run` would run such a program differently from how it runs
 * alone, and without statistics anyway: ld.so ignores LD_PRELOAD in a
 * secure exec.  CMD is found in PATH the way execvp(3) finds it.
 */
#include "tdstat.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* The file execvp would run for `command`, into path; false if none. */
static bool command_file(const char *command, char *path, size_t size, struct stat *status)
{
	const char *search = getenv("PATH");
	char fallback[256];

	if (strchr(command, '/')) {
		snprintf(path, size, "%s", command);
		return stat(path, status) == 0;
	}
	if (!search) {
		if (confstr(_CS_PATH, fallback, sizeof(fallback)) == 0)
			return false;
		search = fallback;
	}
	while (search) {
		const char *end = strchr(search, ':');
		int length = end ? (int)(end - search) : (int)strlen(search);

		/* An empty entry is the current directory, as for execvp. */
		if (length == 0)
			snprintf(path, size, "%s", command);
		else
			snprintf(path, size, "%.*s/%s", length, search, command);
		if (stat(path, status) == 0 && S_ISREG(status->st_mode) && access(path, X_OK) == 0)
			return true;
		search = end ? end + 1 : NULL;
	}
	return false;
}

bool tdstat_command_privileged(const char *command, char *reason, size_t size)
{
	char path[PATH_MAX];
	struct stat status;

	if (!command_file(command, path, sizeof(path), &status) || !S_ISREG(status.st_mode))
		return false;
	if ((status.st_mode & S_ISUID) && status.st_uid != getuid()) {
		snprintf(reason, size, "%s is setuid (it runs as user %u)", path, (unsigned)status.st_uid);
		return true;
	}
	if ((status.st_mode & S_ISGID) && (status.st_mode & S_IXGRP) && status.st_gid != getgid()) {
		snprintf(reason, size, "%s is setgid (it runs as group %u)", path, (unsigned)status.st_gid);
		return true;
	}
	/* root already holds every capability a file can grant. */
	if (getuid() != 0 && getxattr(path, "security.capability", NULL, 0) > 0) {
		snprintf(reason, size, "%s has file capabilities (security.capability)", path);
		return true;
	}
	return false;
}
