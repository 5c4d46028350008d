/* SPDX-License-Identifier: MIT */
/*
 * profile.h's counts, written at process exit to the file named by
 * TDSHIM_PROFILE_OUT (appended; else standard error): one line a section
 * that ran, "section calls mean-cycles", then the counter's rate
 * ("counter_mhz") and the measurement's own cost ("empty").  Built into
 * libtdshim_profiled.so only.
 */
#include "profile.h"

#if defined(TDSHIM_PROFILE) && defined(__x86_64__)
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct tdshim_profile_slot tdshim_profile[TDSHIM_PROFILE_SECTIONS];

static const char *const section_names[TDSHIM_PROFILE_SECTIONS] = {
	"wait_begin", "wait_end", "change", "announce", "stamp", "woken", "empty",
};

static uint64_t monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* Counter cycles per microsecond, over 5 ms. */
static double counter_mhz(void)
{
	uint64_t ns0 = monotonic_ns(), c0 = tdshim_profile_counter(), ns1, c1;

	do {
		ns1 = monotonic_ns();
	} while (ns1 - ns0 < 5000000);
	c1 = tdshim_profile_counter();
	return (double)(c1 - c0) * 1000.0 / (double)(ns1 - ns0);
}

__attribute__((destructor)) static void profile_write(void)
{
	const char *path = getenv("TDSHIM_PROFILE_OUT");
	int fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : 2;
	char line[128];

	if (fd < 0)
		return;
	/* The measurement's own cost: empty pairs, the median-free mean of
	 * many (the first ones warm the counter's path). */
	for (int i = 0; i < 10000; i++) {
		TDSHIM_PROFILE_START(empty);
		TDSHIM_PROFILE_END(empty, TDSHIM_PROFILE_EMPTY);
	}
	for (int i = 0; i < TDSHIM_PROFILE_SECTIONS; i++) {
		const struct tdshim_profile_slot *slot = &tdshim_profile[i];
		int n;

		if (!slot->calls)
			continue;
		n = snprintf(line, sizeof(line), "%s %llu %.1f\n", section_names[i], (unsigned long long)slot->calls,
			     (double)slot->cycles / (double)slot->calls);
		if (n > 0 && write(fd, line, (size_t)n) < 0)
			break;
	}
	int n = snprintf(line, sizeof(line), "counter_mhz %.1f\n", counter_mhz());
	if (n > 0 && write(fd, line, (size_t)n) < 0)
		n = 0;
	if (fd != 2)
		close(fd);
}
#endif
