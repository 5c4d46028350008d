/* SPDX-License-Identifier: MIT */
/*
 * Wake-up stamps and deadlines: how a waiter learns when it was woken.
 *
 * The kernel counts a woken thread as runnable from the wake-up (it waits
 * in the run queue until a CPU is free); the waiter itself learns of it
 * only when it runs again.  Wakers stamp the object they wake waiters of
 * (the slot of its address in a fixed table) just before the wake; a
 * waiter reads its objects' slots when its wait returns, and a timed wait
 * that ran its course was woken at its deadline plus the timer's slack.
 *
 * A slot is one 64-bit word, written and read whole, so it never tears:
 * the time (16 ns units, its low 50 bits), the waker's CPU (8 bits) and
 * a tag of the object (6 bits); two objects that share a slot are told
 * apart by the tag, or cost one wake-up's precision when the tag
 * collides too.
 *
 * Why before the wake: a stamp written after it lands late when the
 * woken thread preempts its waker inside the wake (the usual case when
 * both share a CPU), and a late stamp is newer than the start of the
 * woken thread's next wait, which then counts as woken a whole turn too
 * early.  Written before, a stamp is late only when its waker is
 * preempted in the few instructions between the stamp and the system
 * call.  A wake that reaches an idle CPU is another matter (the kernel
 * counts the thread runnable only when that CPU takes the wake, 15 us or
 * more later on a halted virtual CPU): the waiter sees the stamp's CPU
 * and runtime/thread.c dates such a wake from its own return.  A waiter
 * reading a stamp from a wake that was not its own only ever gets a time
 * inside its wait (it checks).
 */
#include <string.h>

#include "shim.h"
#include "profile.h"
#include "counter_clock.h"

#define WAKE_SLOTS 4096u
#define TAG_BITS 6u
#define CPU_BITS 8u
#define CLAIMED_BIT (UINT64_C(1) << (TAG_BITS + CPU_BITS))
#define TIME_SHIFT 4u
#define TIME_BITS (64u - 1u - CPU_BITS - TAG_BITS)
#define TIME_MASK ((UINT64_C(1) << TIME_BITS) - 1)
#define TIME_AT (1u + CPU_BITS + TAG_BITS)

static uint64_t wake_slots[WAKE_SLOTS];

/*
 * Wakes of exactly one waiter (a semaphore post whose FUTEX_WAKE woke
 * one) are kept apart, several per object: in a contended lock the
 * waker, still running, takes the unit again and posts again while the
 * waiter it woke waits for a CPU, and each post wakes the next sleeper.
 * One slot would hand every woken waiter the newest of those stamps; a
 * ring of the last RING_ENTRIES (one cache line) lets each waiter claim
 * the earliest stamp after the start of its sleep that no other waiter
 * claimed (the claimed bit), which is its own when waiters return in the
 * order they were woken, and one of its neighbours' otherwise: the sum
 * stays right.
 *
 * The waker writes the entry at its ring's cursor (the oldest, as the
 * ring is written in turn) and moves the cursor on; a withdrawn stamp
 * gives its entry back (the cursor moves back when nobody wrote after
 * it), so a wake that woke nobody costs no other waiter its stamp.  The
 * waiter walks from the newest entry back and stops at the first of its
 * object's stamps from before its sleep: in a ping-pong, two entries
 * instead of the whole ring, and no scan for the oldest in the waker
 * (stamp and claim: 320 instructions a one-CPU semaphore round trip,
 * against 770 with the scans).
 * A stamp withdrawn after another waker wrote the next entry (posts on
 * two CPUs, each inside its FUTEX_WAKE) cannot give its entry back: the
 * entry's earlier content is the oldest stamp, and between newer ones it
 * would stop the walk before the stamps behind it (a waiter woken, still
 * waiting for a CPU, then found no stamp and counted its run-queue wait
 * blocked: tests/reliability racing-posts).  It is left WITHDRAWN, which
 * the walk passes, until the ring comes round to it.
 * Cursor and entries are written without a lock, as before them the scan
 * was: two wakers of one ring at once may write one entry, and the later
 * one's stamp stands; a waker between its load and store of the cursor
 * when a withdrawal moves it back leaves the entry given back behind its
 * own (a window of two instructions, against a system call's above).
 */
#define CLAIM_RINGS 512u
#define RING_ENTRIES 8u
static uint64_t claim_rings[CLAIM_RINGS][RING_ENTRIES] __attribute__((aligned(64)));
static uint8_t ring_cursors[CLAIM_RINGS];
/* An entry whose stamp was withdrawn out of turn, which the walk passes.
 * A claimed stamp of time, CPU and tag 0 is the same word (16 ns in 104
 * days, of an object of tag 0 stamped on an unknown CPU): passed too. */
#define WITHDRAWN CLAIMED_BIT

/*
 * The ring serves a default mutex only while every waiter its unlock can
 * wake claims an entry: its own lock's sleeps do (runtime/wrap_mutex.c),
 * but a timed lock and a condvar's relock sleep on the same word inside
 * glibc and claim nothing.  An entry their wake left unclaimed was taken
 * later by a plain waiter that slept after it was written, as its own: a
 * plain locker among six timed ones read 0.92 runnable against the
 * kernel's 0.20-0.27 (session 16).  So such waits count themselves in,
 * per ring, while in progress, and the unlock stamps the slot while any
 * is: the plain waiter then takes the later of a claimed entry and the
 * slot.  A counter shared by the objects of one ring only makes the
 * fallback more frequent.  One per cache line: condvar waits on all CPUs
 * count here.
 */
static struct {
	unsigned int waits;
} __attribute__((aligned(64))) unclaimed[CLAIM_RINGS];

static uint64_t mix(const void *object)
{
	uint64_t x = (uint64_t)(uintptr_t)object;

	x ^= x >> 29;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 32;
	return x;
}

static uint64_t tag_of(uint64_t hash)
{
	return hash >> (64u - TAG_BITS);
}

TDSHIM_BLOCKING_PATH void tdshim_wake_stamp(const void *object)
{
	struct tdshim_stamp kept;

	tdshim_wake_stamp_keep(object, &kept);
}

static void withdraw_entry(const struct tdshim_stamp *kept)
{
	if (!kept->slot)
		return;
	uintptr_t offset = (uintptr_t)kept->slot - (uintptr_t)&claim_rings[0][0];
	if (offset >= sizeof(claim_rings)) {
		uatomic_cmpxchg(kept->slot, kept->written, kept->before);
		return;
	}
	/* A ring's entry: out of the walk first; then, if nobody wrote
	 * after it (the cursor still just past it), the next stamp takes it
	 * again and it holds what it held.  Otherwise it stays WITHDRAWN:
	 * its earlier content, the ring's oldest stamp, between newer ones
	 * would end the walk there. */
	size_t ring = offset / sizeof(claim_rings[0]), at = offset % sizeof(claim_rings[0]) / sizeof(uint64_t);

	if (uatomic_cmpxchg(kept->slot, kept->written, WITHDRAWN) != kept->written)
		return;
	if (uatomic_cmpxchg(&ring_cursors[ring], (uint8_t)(at + 1), (uint8_t)at) == (uint8_t)(at + 1))
		uatomic_cmpxchg(kept->slot, WITHDRAWN, kept->before);
}

TDSHIM_BLOCKING_PATH void tdshim_wake_withdraw(const struct tdshim_stamp *kept)
{
	if (kept->slot2)
		uatomic_cmpxchg(kept->slot2, kept->written2, kept->before2);
	withdraw_entry(kept);
}

/* A stamp of now, by this CPU, for the object of `hash`. */
static uint64_t stamp_word(uint64_t hash, uint64_t now)
{
	int cpu = tdshim_current_cpu();
	/* 0: the waker's CPU is not known; else 1 + the CPU modulo 255. */
	uint64_t cpu_field = cpu < 0 ? 0 : 1 + (uint64_t)cpu % ((1u << CPU_BITS) - 1);

	return ((now >> TIME_SHIFT) & TIME_MASK) << TIME_AT | cpu_field << TAG_BITS | tag_of(hash);
}

TDSHIM_BLOCKING_PATH void tdshim_wake_stamp_keep(const void *object, struct tdshim_stamp *kept)
{
	TDSHIM_PROFILE_START(stamp);
	uint64_t hash = mix(object);

	kept->slot = &wake_slots[hash % WAKE_SLOTS];
	kept->before = CMM_LOAD_SHARED(*kept->slot);
	kept->written = stamp_word(hash, tdshim_stamp_ns());
	CMM_STORE_SHARED(*kept->slot, kept->written);
	TDSHIM_PROFILE_END(stamp, TDSHIM_PROFILE_STAMP);
}

static unsigned int ring_index(uint64_t hash)
{
	return (unsigned int)((hash >> 32) % CLAIM_RINGS);
}

TDSHIM_BLOCKING_PATH void tdshim_wake_stamp_one_keep(const void *object, struct tdshim_stamp *kept)
{
	TDSHIM_PROFILE_START(stamp);
	uint64_t hash = mix(object);
	unsigned int ring = ring_index(hash);
	/* The cursor holds 1 + the entry written last (0 before any):
	 * modulo RING_ENTRIES, the next one to write. */
	unsigned int at = CMM_LOAD_SHARED(ring_cursors[ring]) % RING_ENTRIES;

	CMM_STORE_SHARED(ring_cursors[ring], (uint8_t)(at + 1));
	kept->slot = &claim_rings[ring][at];
	kept->before = CMM_LOAD_SHARED(*kept->slot);
	kept->written = stamp_word(hash, tdshim_stamp_ns());
	CMM_STORE_SHARED(*kept->slot, kept->written);
	TDSHIM_PROFILE_END(stamp, TDSHIM_PROFILE_STAMP);
}

/* A slot's word written by a wake of one (a ring entry's copy): the bit
 * that marks a ring's entry claimed, which slots do not use otherwise. */
#define ONE_BIT CLAIMED_BIT

TDSHIM_BLOCKING_PATH void tdshim_wake_stamp_one_and_slot_keep(const void *object, struct tdshim_stamp *kept)
{
	uint64_t hash = mix(object);

	tdshim_wake_stamp_one_keep(object, kept);
	kept->slot2 = &wake_slots[hash % WAKE_SLOTS];
	kept->before2 = CMM_LOAD_SHARED(*kept->slot2);
	kept->written2 = kept->written | ONE_BIT;
	CMM_STORE_SHARED(*kept->slot2, kept->written2);
}

/* The slot keeps the time's low TIME_BITS (16 ns units, 104 days since
 * the claimed bit took one); the rest comes from `since`, the start of
 * the wait: a stamp of this wait is after it.  One older than `since`
 * (another wait's) lands about 104 days later and is refused with
 * anything past half of that (52 days; an older one, read as later than
 * the wait's end, is clamped to it by the change). */
/* How long after `since` (in time units) the stamp `word` of the object
 * of `hash` is; 0 when it is another object's, or before `since`. */
static uint64_t units_after(uint64_t word, uint64_t hash, uint64_t since)
{
	if (word == 0 || (word & ((1u << TAG_BITS) - 1)) != tag_of(hash))
		return 0;
	uint64_t after = ((word >> TIME_AT) - (since >> TIME_SHIFT)) & TIME_MASK;

	return after > TIME_MASK / 2 ? 0 : after;
}

static uint64_t stamp_time(uint64_t word, uint64_t since, unsigned int *waker_cpu)
{
	*waker_cpu = (unsigned int)(word >> TAG_BITS & ((1u << CPU_BITS) - 1));
	return ((since >> TIME_SHIFT) + (((word >> TIME_AT) - (since >> TIME_SHIFT)) & TIME_MASK)) << TIME_SHIFT;
}

TDSHIM_BLOCKING_PATH void tdshim_wake_unclaimed_begin(const void *object)
{
	if (object)
		uatomic_inc(&unclaimed[ring_index(mix(object))].waits);
}

TDSHIM_BLOCKING_PATH void tdshim_wake_unclaimed_end(const void *const *object)
{
	if (*object)
		uatomic_dec(&unclaimed[ring_index(mix(*object))].waits);
}

TDSHIM_BLOCKING_PATH bool tdshim_wake_all_claim(const void *object)
{
	return CMM_LOAD_SHARED(unclaimed[ring_index(mix(object))].waits) == 0;
}

TDSHIM_BLOCKING_PATH uint64_t tdshim_wake_lookup(const void *object, uint64_t since, unsigned int *waker_cpu,
					      bool *one)
{
	uint64_t hash = mix(object);
	uint64_t slot = CMM_LOAD_SHARED(wake_slots[hash % WAKE_SLOTS]);

	if (!units_after(slot, hash, since))
		return 0;
	*one = (slot & ONE_BIT) != 0;
	return stamp_time(slot, since, waker_cpu);
}

TDSHIM_BLOCKING_PATH uint64_t tdshim_wake_claim(const void *object, uint64_t since, unsigned int *waker_cpu)
{
	uint64_t hash = mix(object);
	unsigned int ring = ring_index(hash);
	uint64_t *entries = claim_rings[ring];

	/* A claim lost to another waiter looks again, a few times. */
	for (int tries = 0; tries < 4; tries++) {
		unsigned int newest = CMM_LOAD_SHARED(ring_cursors[ring]) + RING_ENTRIES - 1;
		uint64_t earliest = 0, latest = 0;
		unsigned int at = 0;

		/* Newest first; the earliest unclaimed one is the last seen. */
		for (unsigned int back = 0; back < RING_ENTRIES; back++) {
			unsigned int i = (newest - back) % RING_ENTRIES;
			uint64_t entry = CMM_LOAD_SHARED(entries[i]);

			if (entry == 0)
				break;
			if (entry == WITHDRAWN || (entry & ((1u << TAG_BITS) - 1)) != tag_of(hash))
				continue;
			if (!units_after(entry, hash, since))
				break;
			if (!latest)
				latest = entry;
			if (!(entry & CLAIMED_BIT)) {
				earliest = entry;
				at = i;
			}
		}
		if (!earliest)
			return latest ? stamp_time(latest, since, waker_cpu) : 0;
		if (uatomic_cmpxchg(&entries[at], earliest, earliest | CLAIMED_BIT) == earliest)
			return stamp_time(earliest, since, waker_cpu);
	}
	return 0;
}

/*
 * The earliest stamp of `object` after `since`, claimed or not, from its
 * ring (else the slot's copy): a write to a wake descriptor wakes every
 * thread asleep in a readiness wait on it (runtime/wrap_fd.c), so the
 * first write after a waiter went to sleep is what woke it, whoever else
 * it woke or read the data (helper-77: four threads polling one eventfd
 * claimed one write each, the others older stamps their neighbours had
 * left unclaimed: 3x the kernel).  Entries other wakes of the ring wrote
 * over leave a later one: dated late, never early.
 */
TDSHIM_BLOCKING_PATH uint64_t tdshim_wake_earliest(const void *object, uint64_t since, unsigned int *waker_cpu)
{
	uint64_t hash = mix(object);
	unsigned int ring = ring_index(hash);
	const uint64_t *entries = claim_rings[ring];
	unsigned int newest = CMM_LOAD_SHARED(ring_cursors[ring]) + RING_ENTRIES - 1;
	uint64_t earliest = 0;

	for (unsigned int back = 0; back < RING_ENTRIES; back++) {
		uint64_t entry = CMM_LOAD_SHARED(entries[(newest - back) % RING_ENTRIES]);

		if (entry == 0)
			break;
		if (entry == WITHDRAWN || (entry & ((1u << TAG_BITS) - 1)) != tag_of(hash))
			continue;
		if (!units_after(entry, hash, since))
			break;
		earliest = entry;
	}
	if (!earliest) {
		uint64_t slot = CMM_LOAD_SHARED(wake_slots[hash % WAKE_SLOTS]);

		if (!units_after(slot, hash, since))
			return 0;
		earliest = slot;
	}
	return stamp_time(earliest & ~CLAIMED_BIT, since, waker_cpu);
}

TDSHIM_BLOCKING_PATH bool tdshim_wake_from_other_cpu(unsigned int waker_cpu)
{
	int cpu = tdshim_current_cpu();

	return waker_cpu != 0 && cpu >= 0 && waker_cpu != 1 + (unsigned int)cpu % ((1u << CPU_BITS) - 1);
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
 * where process_vm_readv is not allowed (a seccomp policy), or may not be
 * (tdshim_sandboxed), a plain load, as before. */
bool tdshim_copy_in(const void *from, void *to, size_t size)
{
	struct iovec local = { to, size }, remote = { (void *)from, size };

	if (tdshim_in_sandbox()) {
		memcpy(to, from, size);
		return true;
	}
	TDSHIM_SAVE_ERRNO();
	ssize_t copied = process_vm_readv(tdshim_cached_tid(), &local, 1, &remote, 1, 0);
	int failure = errno;

	TDSHIM_RESTORE_ERRNO();
	if (copied == (ssize_t)size)
		return true;
	if (copied < 0 && (failure == ENOSYS || failure == EPERM)) {
		memcpy(to, from, size);
		return true;
	}
	return false;
}

bool tdshim_copy_timespec(const struct timespec *from, struct timespec *to)
{
	return tdshim_copy_in(from, to, sizeof(*to));
}

uint64_t tdshim_deadline_after(const struct timespec *timeout)
{
	if (!timeout || timeout->tv_sec < 0 || timeout->tv_nsec < 0 || timeout->tv_nsec >= 1000000000L)
		return 0;
	return tdshim_now_ns() + timespec_ns(timeout);
}

/* An absolute time on CLOCK_REALTIME is moved to CLOCK_MONOTONIC with the
 * clocks' offset now (a clock step during the wait moves the deadline).
 * The callers ask once the wait timed out, when the deadline is past: it
 * is moved back as far (helper-72: moved to now, every timed wait on
 * CLOCK_REALTIME counted BLOCKED from its timer's expiry to its return,
 * the way out of the kernel, the wait for a CPU and the mutex taken
 * back: 0.68-0.75 of the kernel's figures). */
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
	if (at > real)
		return monotonic + (at - real);
	return real - at < monotonic ? monotonic - (real - at) : 0;
}

struct tdshim_cpu_busy tdshim_cpu_busy[TDSHIM_BUSY_CPUS] __attribute__((aligned(64)));

void tdshim_wake_hide_from_race_detectors(void)
{
	tdshim_hide_from_race_detectors(tdshim_cpu_busy, sizeof(tdshim_cpu_busy));
	tdshim_hide_from_race_detectors(wake_slots, sizeof(wake_slots));
	tdshim_hide_from_race_detectors(claim_rings, sizeof(claim_rings));
	tdshim_hide_from_race_detectors(ring_cursors, sizeof(ring_cursors));
}
