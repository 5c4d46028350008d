/* SPDX-License-Identifier: MIT */
/*
 * Where libtdshim.so is.  The build gives two answers at compile time: the
 * shim's file in the build tree (for the tdstat of the same build tree)
 * and its installed place relative to the installed tdstat, so an
 * installed tree can be moved as a whole.  $TDSTAT_SHIM overrides both.
 */
#include "tdstat.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef TDSTAT_BUILD_FILE
#error "TDSTAT_BUILD_FILE must name this program in the build tree"
#endif
#ifndef TDSTAT_SHIM_BUILD_FILE
#error "TDSTAT_SHIM_BUILD_FILE must name libtdshim.so in the build tree"
#endif
#ifndef TDSTAT_SHIM_FROM_BINDIR
#error "TDSTAT_SHIM_FROM_BINDIR must give the installed shim relative to bindir"
#endif

static char found[PATH_MAX];

static bool same_file(const char *a, const char *b)
{
	char real_a[PATH_MAX], real_b[PATH_MAX];

	return realpath(a, real_a) && realpath(b, real_b) && !strcmp(real_a, real_b);
}

/* The installed shim: <directory of this program>/TDSTAT_SHIM_FROM_BINDIR. */
static const char *installed_shim(const char *self)
{
	char directory[PATH_MAX], joined[PATH_MAX];
	char *slash;

	if (snprintf(directory, sizeof(directory), "%s", self) >= (int)sizeof(directory))
		return NULL;
	slash = strrchr(directory, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	if (snprintf(joined, sizeof(joined), "%s/%s", directory,
		     TDSTAT_SHIM_FROM_BINDIR) >= (int)sizeof(joined))
		return NULL;
	/* Canonical when it exists: LD_PRELOAD and messages read better. */
	if (!realpath(joined, found))
		snprintf(found, sizeof(found), "%s", joined);
	return found;
}

static const char *expected_shim(void)
{
	const char *override = getenv("TDSTAT_SHIM");
	char self[PATH_MAX];
	ssize_t length;

	if (override && *override)
		return override;
	length = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (length <= 0)
		return TDSTAT_SHIM_BUILD_FILE;
	self[length] = '\0';
	if (same_file(self, TDSTAT_BUILD_FILE))
		return TDSTAT_SHIM_BUILD_FILE;
	return installed_shim(self);
}

const char *tdstat_shim_path(const char **expected)
{
	const char *path = expected_shim();

	if (!path)
		path = TDSTAT_SHIM_BUILD_FILE;
	if (expected)
		*expected = path;
	return access(path, R_OK) == 0 ? path : NULL;
}
