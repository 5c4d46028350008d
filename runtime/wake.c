/* SPDX-License-Identifier: MIT */
/*
 * Wake-up stamps and deadlines: how a waiter learns when it was woken.
 *
 * The kernel counts a woken thread as runnable from the wake-up (it waits
 * in the run queue until a CPU is free); the waiter itself learns of it
 * only when it runs again.  Wakers stamp the object they wake waiters of
 * (the slot of its address in a fixed table) just after the wake; a
 * waiter reads its objects' slots when its wait returns, and a timed wait
 * that ran its course was woken at its deadline plus half the timer slack.
 *
 * A slot is one 64-bit word: the time (16 ns units) above an 8-bit tag
 * of the object, written and read whole, so it never tears; two objects
 * that share a slot are told apart by the tag, or cost one wake-up's
 * precision when the tag collides too.  Memory ordering: the stamp is a
 * plain store right after the wake's syscall; a woken thread that runs
 * before it is written finds no newer stamp and counts from its return
 * (it did not wait for a CPU), one that waits in the run queue finds it
 * (the kernel counts the wake from when it reaches the thread, tens of
 * microseconds after the waker asked on an idle CPU of a virtual
 * machine: a stamp before the wake counted that as runnable).  A waiter
 * reading a stamp from a wake that was not its own only ever gets a time
 * inside its wait (it checks).
 */
#include "shim.h"
#include "counter_clock.h"

#define WAKE_SLOTS 4096u
#define TAG_BITS 8u
#define TIME_SHIFT 4u

static uint64_t wake_slots[WAKE_SLOTS];

static uint64_t mix(const void *object)
{
	uint64_t x = (uint64_t)(uintptr_t)object;

	x ^= x >> 29;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 32;
	return x;
}

void tdshim_wake_stamp(const void *object)
{
	uint64_t hash = mix(object);
	uint64_t now = tdshim_stamp_ns();

	CMM_STORE_SHARED(wake_slots[hash % WAKE_SLOTS],
			 (now >> TIME_SHIFT) << TAG_BITS | (hash >> 56));
}

uint64_t tdshim_wake_lookup(const void *object)
{
	uint64_t hash = mix(object);
	uint64_t slot = CMM_LOAD_SHARED(wake_slots[hash % WAKE_SLOTS]);

	if (slot == 0 || (slot & ((1u << TAG_BITS) - 1)) != hash >> 56)
		return 0;
	return (slot >> TAG_BITS) << TIME_SHIFT;
}

static uint64_t timespec_ns(const struct timespec *time)
{
	return (uint64_t)time->tv_sec * 1000000000u + (uint64_t)time->tv_nsec;
}

uint64_t tdshim_timespec_ns(const struct timespec *time)
{
	if (time->tv_sec < 0 || time->tv_nsec < 0 || time->tv_nsec >= 1000000000L)
		return 0;
	return timespec_ns(time);
}

/* Through the kernel, which answers EFAULT where a plain load would fault;
 * where process_vm_readv is not allowed (a seccomp policy), a plain load,
 * as before. */
bool tdshim_copy_timespec(const struct timespec *from, struct timespec *to)
{
	struct iovec local = { to, sizeof(*to) }, remote = { (void *)from, sizeof(*to) };
	TDSHIM_SAVE_ERRNO();
	ssize_t copied = process_vm_readv(tdshim_cached_tid(), &local, 1, &remote, 1, 0);
	int failure = errno;

	TDSHIM_RESTORE_ERRNO();
	if (copied == (ssize_t)sizeof(*to))
		return true;
	if (copied < 0 && (failure == ENOSYS || failure == EPERM)) {
		*to = *from;
		return true;
	}
	return false;
}

uint64_t tdshim_deadline_after(const struct timespec *timeout)
{
	if (!timeout || timeout->tv_sec < 0 || timeout->tv_nsec < 0 || timeout->tv_nsec >= 1000000000L)
		return 0;
	return tdshim_now_ns() + timespec_ns(timeout);
}

/* An absolute time on CLOCK_REALTIME is moved to CLOCK_MONOTONIC with the
 * clocks' offset now (a clock step during the wait moves the deadline). */
uint64_t tdshim_deadline_at(clockid_t clock, const struct timespec *abstime)
{
	struct timespec now;
	uint64_t at;

	if (!abstime || abstime->tv_sec < 0 || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
		return 0;
	at = timespec_ns(abstime);
	if (clock == CLOCK_MONOTONIC)
		return at;
	if (clock != CLOCK_REALTIME || clock_gettime(CLOCK_REALTIME, &now) != 0)
		return 0;
	uint64_t real = timespec_ns(&now), monotonic = tdshim_now_ns();
	return at > real ? monotonic + (at - real) : monotonic;
}

void tdshim_wake_hide_from_race_detectors(void)
{
	tdshim_hide_from_race_detectors(wake_slots, sizeof(wake_slots));
}
