/* SPDX-License-Identifier: MIT */
/*
 * Step 1 of region.h's latch: the announcement of a change, pending_ns = T.
 *
 * What it must guarantee: the store of T lands within the stall bound
 * (header.stall_ns) of the clock reading T.  A reader that saw no
 * announcement extended the open interval to no later than its own clock
 * less the margin (docs/READER.md), so T is then after everything such a
 * reader reported; and a reader that sees the announcement stops the
 * interval at T.  If the store lands late (the writer was preempted,
 * stopped or interrupted between its clock read and the store), readers
 * before the store may have reported past T, readers after it stop at T:
 * the integral would go down between the two.  Checking the clock again
 * after the store and moving on to a later T is not enough, because the
 * late T was visible in between.
 *
 * So the store is made only when it is provably prompt: in a restartable
 * sequence (rseq, which glibc registers for every thread), the store
 * happens only if the time stamp counter, read inside the sequence, is
 * within the bound of the counter read just before the clock.  The kernel
 * restarts the sequence (at its abort handler, which retries) whenever
 * the thread is preempted, migrated or given a signal inside it, so
 * nothing can come between that last counter read and the store.  A late
 * clock reading is never stored; it is read again.
 *
 * This needs x86-64, glibc's rseq registration (not under valgrind, not
 * with the tunable glibc.pthread.rseq=0, not on kernels before 4.18) and
 * a counter that runs at a constant rate.
 *
 * Where the counters of all CPUs agree (the kernel keeps time by the
 * counter, clock source "tsc", or reads kvm-clock in user space:
 * counters_agree), T is read from the counter too, inside
 * the sequence: one counter read, scaled by the thread's own anchor (a
 * pairing of the counter with CLOCK_MONOTONIC, renewed every 2 ms of use,
 * its rate measured between two anchors), is T, and the store follows it
 * with nothing in between that the kernel would not restart.  A clock
 * read through the vDSO costs 25 ns here, most of it the fence that
 * orders its counter read; the counter alone costs 10.  The same clock
 * dates wake-up stamps (tdshim_stamp_ns).  It stays within a few
 * microseconds of CLOCK_MONOTONIC (the first 2 ms of a thread use the
 * rate calibrated at start, good to 0.3%; later ones the rate of the
 * last 2 ms), far inside the readers' 1 ms margin.  Elsewhere the
 * announcement falls back to the store, clock-again-and-retry protocol,
 * whose one hole (the late T visible between the store and the retry) is
 * documented in docs/READER.md.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "counter_clock.h"

#ifdef TDSHIM_ANNOUNCE_RSEQ
#include <cpuid.h>
#endif

/* Bounded: a writer never loops on its own clock.  Each try fails only
 * if the thread was preempted, migrated or signalled in a window of a
 * few tens of nanoseconds, or its clock read is slower than the bound. */
#define FALLBACK_TRIES_MAX 8
#define RSEQ_TRIES_MAX 32

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* The fallback: store, read the clock again, and move T on when the two
 * are further apart than the bound.  The exchange is the store and a
 * full barrier in one (on x86 a locked instruction, 2 ns here where
 * mfence takes 16): the store is visible before the clock is read again
 * (the vDSO orders its counter read after earlier instructions). */
static uint64_t announce_by_retry(uint64_t *pending, uint64_t since, uint64_t stall)
{
	uint64_t moment = tdshim_now_ns();

	for (int tries = 1;; tries++) {
		/* After the published state's start, so readers see the
		 * announcement (pending_ns > since_ns) even when this CPU's
		 * clock is a little behind the one that dated that start (a
		 * waker's stamp, or this thread before it moved). */
		if (moment <= since)
			moment = since + 1;
		uatomic_xchg(pending, moment);
		uint64_t again = tdshim_now_ns();
		if (again <= moment || again - moment <= stall || tries == FALLBACK_TRIES_MAX)
			return moment;
		moment = again;
	}
}

#ifdef TDSHIM_ANNOUNCE_RSEQ

/* The counter cycles the stall bound allows; 0 while the rseq way is off. */
static uint64_t prompt_cycles;
/* How long an anchor serves, in counter cycles (2 ms); 0 while the
 * counter clock is off.  The rate calibrated at start, 32.32 ns/cycle. */
uint64_t tdshim_anchor_cycles;
static uint64_t start_scale;

/*
 * The restartable sequence: on the CPU the counter `start` was read on,
 * with no more than `cycles` since, exchange `value` into *pending.
 * Returns false, having stored nothing, when any of that fails or the
 * kernel aborted the sequence; the caller reads its clock again.
 *
 * The descriptor (struct rseq_cs: version, flags, start_ip,
 * post_commit_offset, abort_ip) goes in its own section, 32-byte
 * aligned; the abort handler is preceded by glibc's signature for x86
 * (RSEQ_SIG, encoded in an undefined instruction), which the kernel
 * checks before it jumps there.  The handler stays in the function's own
 * text, jumped over: a signal inside the sequence is delivered at the
 * handler, and a pthread_exit or asynchronous cancellation from there
 * unwinds by the function's call frame information.  In a section of its
 * own it had none: the unwinding stopped at it and glibc ended the thread
 * by its longjmp, past every cleanup and destructor of the program's
 * frames (runtime.break13, exit_in_wait).
 */
static inline bool store_if_prompt(uint64_t *pending, uint64_t value, uint64_t start, uint32_t cpu,
				   uint64_t cycles, struct rseq *area)
{
	__asm__ __volatile__ goto(
		".pushsection __rseq_cs, \"aw\"\n\t"
		".balign 32\n\t"
		"77:\n\t"
		".long 0x0, 0x0\n\t"
		".quad 71f, (72f - 71f), 74f\n\t"
		".popsection\n\t"
		"leaq 77b(%%rip), %%rax\n\t"
		"movq %%rax, %[cs]\n\t"
		"71:\n\t"
		"cmpl %[cpu], %[cpu_id]\n\t"
		"jne %l[retry]\n\t"
		"rdtsc\n\t"
		"shlq $32, %%rdx\n\t"
		"orq %%rdx, %%rax\n\t"
		"subq %[start], %%rax\n\t"
		"cmpq %[cycles], %%rax\n\t"
		"ja %l[retry]\n\t"
		"movq %[value], %%rax\n\t"
		"xchgq %%rax, %[pending]\n\t"
		"72:\n\t"
		"jmp 76f\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long 0x53053053\n\t"
		"74:\n\t"
		"jmp %l[retry]\n\t"
		/* Late (a hypervisor took the CPU between the counter read
		 * and the store, which the kernel cannot see): the old value
		 * back at once, and the caller announces again. */
		"76:\n\t"
		"movq %%rax, %%rcx\n\t"
		"rdtsc\n\t"
		"shlq $32, %%rdx\n\t"
		"orq %%rdx, %%rax\n\t"
		"subq %[start], %%rax\n\t"
		"cmpq %[cycles], %%rax\n\t"
		"jbe 75f\n\t"
		"movq %%rcx, %[pending]\n\t"
		"jmp %l[retry]\n\t"
		"75:\n\t"
		:
		: [cs] "m"(area->rseq_cs), [cpu_id] "m"(area->cpu_id), [cpu] "r"(cpu), [start] "r"(start),
		  [cycles] "r"(cycles), [value] "r"(value), [pending] "m"(*pending)
		: "rax", "rcx", "rdx", "memory", "cc"
		: retry);
	return true;
retry:
	return false;
}

/* A (counter, clock) pair read close together: the tightest of a few.
 * Returns the counter cycles the tightest one spanned. */
static uint64_t counter_and_clock(uint64_t *counter, uint64_t *clock)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 3; i++) {
		uint64_t before = tdshim_read_counter(), now = tdshim_now_ns(), after = tdshim_read_counter();

		if (after - before < best) {
			best = after - before;
			*counter = before + (after - before) / 2;
			*clock = now;
		}
	}
	return best;
}

/* A new anchor for this thread: the next one written whole, then
 * published by one store (a handler that interrupts this sees the old
 * one).  The rate is the one between the old anchor and the new, when
 * they are far enough apart to measure it and it is within 1% of the
 * calibrated one (else the calibrated one). */
static void anchor_renew(struct tdshim_thread *self)
{
	unsigned int index = CMM_LOAD_SHARED(self->anchor);
	const struct tdshim_anchor *old = &self->anchors[index & 1];
	struct tdshim_anchor *next = &self->anchors[(index + 1) & 1];
	uint64_t counter = 0, ns = 0, scale = start_scale;

	/* A pair spanning more than 2 us was preempted: not an anchor. */
	if (counter_and_clock(&counter, &ns) > tdshim_anchor_cycles / 1000)
		return;
	if (old->counter && counter > old->counter && ns > old->ns && counter - old->counter >= tdshim_anchor_cycles / 2 &&
	    ns - old->ns < (UINT64_C(1) << 31)) {
		uint64_t measured = ((ns - old->ns) << 32) / (counter - old->counter);

		if (measured > start_scale - start_scale / 100 && measured < start_scale + start_scale / 100)
			scale = measured;
	}
	next->counter = counter;
	next->ns = ns;
	next->scale = scale;
	next->check = counter ^ ns ^ scale;
	cmm_barrier();
	CMM_STORE_SHARED(self->anchor, index + 1);
}

uint64_t tdshim_stamp_ns_slow(void)
{
	struct tdshim_thread *self = &tdshim_self;
	uint64_t ns;

	if (!CMM_LOAD_SHARED(tdshim_anchor_cycles))
		return tdshim_now_ns();
	anchor_renew(self);
	if (tdshim_anchored_time(tdshim_current_anchor(self), tdshim_read_counter(), &ns))
		return ns;
	return tdshim_now_ns();
}

static uint64_t announce_by_counter(uint64_t *pending, uint64_t since, bool *done)
{
	struct tdshim_thread *self = &tdshim_self;
	struct rseq *area = tdshim_thread_rseq();
	uint64_t limit = CMM_LOAD_SHARED(tdshim_anchor_cycles), moment = 0;

	for (int tries = 0; tries < RSEQ_TRIES_MAX && (int32_t)CMM_LOAD_SHARED(area->cpu_id) >= 0; tries++) {
		bool stale = false;
		bool stored = tdshim_store_counter_time(pending, tdshim_current_anchor(self), limit, since, area, &moment,
							&stale);

		CMM_STORE_SHARED(area->rseq_cs, 0);
		if (stored) {
			*done = true;
			return moment;
		}
		if (stale)
			anchor_renew(self);
	}
	*done = false;
	return 0;
}

static uint64_t announce_by_rseq(uint64_t *pending, uint64_t since, uint64_t cycles, bool *done)
{
	struct rseq *area = tdshim_thread_rseq();

	for (int tries = 0; tries < RSEQ_TRIES_MAX; tries++) {
		uint32_t cpu = CMM_LOAD_SHARED(area->cpu_id);

		/* Not registered for this thread (a raw clone, a failed
		 * registration): the fallback. */
		if ((int32_t)cpu < 0)
			break;
		/* Before the clock: the vDSO's ordered counter read comes
		 * after this one, so `start` is no later than the reading. */
		uint64_t start = tdshim_read_counter();
		uint64_t moment = tdshim_now_ns();

		if (moment <= since)
			moment = since + 1;
		bool stored = store_if_prompt(pending, moment, start, cpu, cycles, area);

		/* The kernel would clear it lazily, at the cost of reading the
		 * descriptor on the thread's next preemption: a plain store
		 * here is cheaper. */
		CMM_STORE_SHARED(area->rseq_cs, 0);
		if (stored) {
			*done = true;
			return moment;
		}
	}
	*done = false;
	return 0;
}

/* The counter runs at a constant rate in every power state: CPUID says
 * so (invariant TSC), or the kernel uses it as its clock source ("tsc"),
 * which it does only then (or reads kvm-clock, made from it, in user
 * space: counters_agree).  The sequence compares two readings on one
 * CPU only, so the counters of different CPUs need not agree. */
static bool counter_is_invariant(void)
{
	unsigned int eax, ebx, ecx, edx;

	return __get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) && (edx & (1u << 8));
}

/* The kernel's clock source (a name of /sys/devices/system/clocksource,
 * its newline dropped), or "" where it cannot be read. */
static void read_clock_source(char name[static 16])
{
	static const char path[] = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
	int saved_errno = errno;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got = fd < 0 ? -1 : read(fd, name, 15);

	if (fd >= 0)
		close(fd);
	errno = saved_errno;
	name[got > 0 ? got : 0] = 0;
	if (got > 0 && name[got - 1] == '\n')
		name[got - 1] = 0;
}

/*
 * Whether the counters of all CPUs agree, so that one thread's anchor
 * serves on every CPU and stamps made on different CPUs compare:
 *
 * - clock source "tsc": the kernel keeps time by the counter only then;
 * - clock source "kvm-clock" (a KVM guest, also one booted with
 *   tsc=unstable), the counter invariant, and the clock read in user
 *   space: the vDSO reads kvm-clock without a system call only while
 *   the host sets PVCLOCK_TSC_STABLE_BIT, its promise that the guest's
 *   counters are synchronized (the vDSO then reads the first virtual
 *   CPU's parameters on every CPU).  Without the bit every clock read is
 *   a system call, which takes far more than CLOCK_READ_IN_USER_SPACE_MAX
 *   cycles (a microsecond here; at least a few hundred cycles on any
 *   virtual machine); a vDSO read of kvm-clock takes about 60.
 */
#define CLOCK_READ_IN_USER_SPACE_MAX 160

static bool counters_agree(void)
{
	uint64_t fastest = UINT64_MAX;
	char source[16];

	read_clock_source(source);
	if (!strcmp(source, "tsc"))
		return true;
	if (strcmp(source, "kvm-clock") != 0 || !counter_is_invariant())
		return false;
	for (int i = 0; i < 8; i++) {
		uint64_t before = tdshim_read_counter();
		(void)tdshim_now_ns();
		uint64_t spent = tdshim_read_counter() - before;

		if (spent < fastest)
			fastest = spent;
	}
	return fastest <= CLOCK_READ_IN_USER_SPACE_MAX;
}

/* Counter cycles per microsecond, over ~20 us of the clock. */
static uint64_t counter_cycles_per_us(void)
{
	uint64_t counter0 = 0, clock0 = 0, counter1 = 0, clock1 = 0;

	counter_and_clock(&counter0, &clock0);
	while (tdshim_now_ns() - clock0 < 20000)
		caa_cpu_relax();
	counter_and_clock(&counter1, &clock1);
	if (clock1 <= clock0 || counter1 <= counter0)
		return 0;
	return (counter1 - counter0) * 1000 / (clock1 - clock0);
}

void tdshim_announce_init(uint64_t stall_ns)
{
	uint64_t per_us;

	prompt_cycles = 0;
	tdshim_anchor_cycles = 0;
	bool agree = counters_agree();

	if (__rseq_size == 0 || !(counter_is_invariant() || agree))
		return;
	per_us = counter_cycles_per_us();
	/* Nine tenths of the bound: the calibration's own error stays
	 * on the safe side. */
	if (per_us < 100)
		return;
	prompt_cycles = stall_ns * per_us / 1000 * 9 / 10;
	/* The counter as the clock: only where all CPUs' counters agree. */
	if (agree) {
		start_scale = (UINT64_C(1000) << 32) / per_us;
		tdshim_anchor_cycles = 2000 * per_us;
	}
}

bool tdshim_announce_uses_rseq(void)
{
	return prompt_cycles != 0;
}

#else /* no rseq */

void tdshim_announce_init(uint64_t stall_ns)
{
	(void)stall_ns;
}

uint64_t tdshim_stamp_ns_slow(void)
{
	return tdshim_now_ns();
}

bool tdshim_announce_uses_rseq(void)
{
	return false;
}

#endif

uint64_t tdshim_announce_slow(struct tdstat_record *record, uint64_t since)
{
	uint64_t stall = CMM_LOAD_SHARED(tdstat_region.header.stall_ns);

#ifdef TDSHIM_ANNOUNCE_RSEQ
	uint64_t cycles = CMM_LOAD_SHARED(prompt_cycles);

	if (CMM_LOAD_SHARED(tdshim_anchor_cycles)) {
		bool done;
		uint64_t moment = announce_by_counter(&record->pending_ns, since, &done);

		if (done)
			return moment;
	}
	if (cycles) {
		bool done;
		uint64_t moment = announce_by_rseq(&record->pending_ns, since, cycles, &done);

		if (done)
			return moment;
	}
#endif
	return announce_by_retry(&record->pending_ns, since, max_u64(stall, 1));
}
