/* SPDX-License-Identifier: MIT */
/* From the adversarial review (branch `break`): preloaded before the shim by
 * rel_review slow-clock.  */
/* LD_PRELOAD this before libtdshim.so to get what a machine whose clock
 * source has no vDSO support (hpet, acpi_pm; some VMs) gives: every
 * clock_gettime is a system call.  SLOWCLOCK_NS adds a busy delay to model
 * a slow clock read (an HPET read costs ~0.5-2 us). */
/* LATECLOCK_NS instead models a thread preempted right after its clock
 * read: the monotonic clock is read for real (the vDSO), then two reads
 * of every three per thread spin LATECLOCK_NS before returning the time
 * they read, so consecutive reads of one thread are late together (what
 * a loaded machine does now and then, here every time). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long extra = -1, late = -1;
static __thread unsigned reads;

static int late_clock(clockid_t clock, struct timespec *ts)
{
	static int (*real)(clockid_t, struct timespec *);
	if (!real)
		real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
	int r = real(clock, ts);
	if (clock == CLOCK_MONOTONIC && ++reads % 3 != 0) {
		struct timespec a, b;
		real(CLOCK_MONOTONIC, &a);
		do real(CLOCK_MONOTONIC, &b);
		while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < late);
	}
	return r;
}

int clock_gettime(clockid_t clock, struct timespec *ts)
{
	if (late < 0) { const char *e = getenv("LATECLOCK_NS"); late = e ? atol(e) : 0; }
	if (late > 0)
		return late_clock(clock, ts);
	int r = (int)syscall(SYS_clock_gettime, clock, ts);
	if (extra < 0) { const char *e = getenv("SLOWCLOCK_NS"); extra = e ? atol(e) : 0; }
	if (extra > 0) {
		struct timespec a, b;
		syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &a);
		do syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &b);
		while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < extra);
		*ts = b.tv_sec == ts->tv_sec || clock != CLOCK_MONOTONIC ? *ts : b;
		if (clock == CLOCK_MONOTONIC) *ts = b;
	}
	return r;
}
