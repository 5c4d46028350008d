/* SPDX-License-Identifier: MIT */
/*
 * A library whose constructor waits: the program that links it
 * (slow_start.c) is a target whose preloaded shim has not finished
 * starting, since the constructors of a program's own libraries run
 * before those of LD_PRELOAD's.  It prints "constructing PID", then waits
 * for an exclusive flock(2) on $SLOW_INIT_LOCK, which the test holds:
 * flock is no call the shim interposes, so the wait does not start it.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

int slow_init_done(void);

__attribute__((constructor)) static void slow_init(void)
{
	const char *path = getenv("SLOW_INIT_LOCK");
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;

	printf("constructing %d\n", (int)getpid());
	fflush(stdout);
	if (fd >= 0) {
		flock(fd, LOCK_EX);
		close(fd);
	}
}

int slow_init_done(void)
{
	return 0;
}
