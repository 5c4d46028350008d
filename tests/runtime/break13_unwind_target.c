/* SPDX-License-Identifier: MIT */
/*
 * break13_unwind_target: async_unwind_target (same calls, same gdb drive
 * by async_unwind_test.py), which also checks what each forced unwinding
 * left behind, after every join:
 *
 * BREAK13_CHECK=records (default): no record of a thread that began its
 * tracking (its tid in the record) stays live once the thread is joined.
 * A pthread_exit from a handler that interrupted the trampoline's own
 * instructions passed its frame without the cleanup that ends tracking
 * (personality.c runs none in an interrupted frame; before it, only the
 * instructions after the start routine's return leaked), and nothing
 * else ended it.  A record still unowned (tid 0: the thread died before
 * begin_tracking took its creator's claim) is reported, not failed: no
 * code of the thread's can know that claim yet.
 *
 * BREAK13_CHECK=waiters: the semaphore's waiter count (the high half of
 * glibc's word) is back to 0.  semaphore_wait_sleeping registers as a
 * waiter and unregisters in a cleanup, which an interrupted frame skips:
 * each such unwinding leaves a waiter that never was, for good.
 *
 * Exits 5 when a check fails (async_unwind_test.py: "the target ended
 * with 5"), with one line per leak on stderr: the interrupted
 * instruction, as an offset in the object that holds it.
 */
#define _GNU_SOURCE
#include "fixture.h"

#include <dlfcn.h>
#include <string.h>
#include <ucontext.h>

#include "unwind_rounds.h"

/* The instruction the last SIGUSR2 interrupted (0: none). */
static volatile unsigned long interrupted_at;

static void on_usr2(int number, siginfo_t *info, void *context)
{
	(void)number;
	(void)info;
	interrupted_at = (unsigned long)((ucontext_t *)context)->uc_mcontext.gregs[REG_RIP];
	pthread_exit(NULL);
}

static bool check_waiters;
static int leaks, unowned;
static uint64_t waiters_before;
/* A leaked record stays live: each is counted once. */
static bool reported[TDSTAT_RECORD_CAPACITY];

static void where(char *buffer, size_t size)
{
	Dl_info object = { 0 };

	if (interrupted_at && dladdr((void *)interrupted_at, &object) && object.dli_fname)
		snprintf(buffer, size, "%s+0x%lx", object.dli_fname, interrupted_at - (unsigned long)object.dli_fbase);
	else
		snprintf(buffer, size, "0x%lx", interrupted_at);
}

/* After each join: what the thread's end left behind. */
static void check_after_join(void)
{
	pid_t self = fx_gettid();
	char at[512];
	uint64_t word;

	where(at, sizeof(at));
	if (check_waiters) {
		memcpy(&word, &semaphore, sizeof(word));
		if (word >> 32 != waiters_before) {
			fprintf(stderr, "leak: semaphore waiters %llu -> %llu, unwound at %s\n",
				(unsigned long long)waiters_before, (unsigned long long)(word >> 32), at);
			waiters_before = word >> 32;
			leaks++;
		}
	} else {
		struct tdstat_region *region = fx_region();
		uint32_t high = __atomic_load_n(&region->header.status.high_water, __ATOMIC_ACQUIRE);

		for (uint32_t i = 0; i < high && i < TDSTAT_RECORD_CAPACITY; i++) {
			struct fx_record record = fx_read_record(i);

			if (record.state == TDSTAT_STATE_FREE || record.tid == self || reported[i])
				continue;
			reported[i] = true;
			fprintf(stderr, "leak: record %u (tid %d, %s) live, unwound at %s\n", i, (int)record.tid,
				fx_state_name(record.state), at);
			if (record.tid)
				leaks++;
			else
				unowned++;
		}
	}
	interrupted_at = 0;
}

int main(void)
{
	const char *check = getenv("BREAK13_CHECK");
	int threads;

	check_waiters = check && !strcmp(check, "waiters");
	unwind_rounds_setup("break13_unwind_target", on_usr2);
	threads = unwind_rounds_run("break13_unwind_target", check_after_join);
	printf("done %d\n", threads);
	fprintf(stderr, "break13_unwind_target: %s: %d leaks, %d records never owned\n",
		check_waiters ? "waiters" : "records", leaks, unowned);
	if (leaks)
		return 5;
	return 0;
}
