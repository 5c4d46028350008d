/* SPDX-License-Identifier: MIT */
/*
 * The fast paths of runtime/announce.c, inline where they are used (the
 * record change and the wake-up stamp): one time stamp counter read each,
 * no call.  announce.c says why and holds the slow paths.
 */
#ifndef TDSHIM_COUNTER_CLOCK_H
#define TDSHIM_COUNTER_CLOCK_H

#include <stddef.h>

#include "shim.h"

#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#define TDSHIM_ANNOUNCE_RSEQ 1
#endif
#endif

/* The slow paths (runtime/announce.c). */
uint64_t tdshim_announce_slow(struct tdstat_record *record, uint64_t since);
uint64_t tdshim_stamp_ns_slow(void);

#ifdef TDSHIM_ANNOUNCE_RSEQ

/* How long an anchor serves, in counter cycles (2 ms); 0 while the
 * counter clock is off. */
extern uint64_t tdshim_anchor_cycles;

static inline uint64_t tdshim_read_counter(void)
{
	uint32_t low, high;

	__asm__ __volatile__("rdtsc" : "=a"(low), "=d"(high));
	return (uint64_t)high << 32 | low;
}

static inline struct rseq *tdshim_thread_rseq(void)
{
	char *thread_pointer;

	__asm__("mov %%fs:0, %0" : "=r"(thread_pointer));
	return (struct rseq *)(thread_pointer + __rseq_offset);
}

static inline const struct tdshim_anchor *tdshim_current_anchor(const struct tdshim_thread *self)
{
	return &self->anchors[CMM_LOAD_SHARED(self->anchor) & 1];
}

/* The counter clock at `counter`, if this thread's anchor serves it. */
static inline bool tdshim_anchored_time(const struct tdshim_anchor *anchor, uint64_t counter, uint64_t *ns)
{
	uint64_t elapsed = counter - anchor->counter;

	if (elapsed > tdshim_anchor_cycles || (anchor->counter ^ anchor->ns ^ anchor->scale) != anchor->check)
		return false;
	*ns = anchor->ns + ((elapsed * anchor->scale) >> 32);
	return true;
}

/*
 * The restartable sequence with T from the counter: read the counter,
 * scale it by `anchor` into T (no earlier than since + 1), store T into
 * *pending.  Returns false, having stored nothing, when the anchor no
 * longer serves or is not whole (renew it) or the kernel aborted the
 * sequence (try again).  The anchor is checked inside the sequence: a
 * signal handler that renews it meanwhile restarts the sequence.
 * *moment is T when it returns true.
 *
 * A late store: the kernel restarts the sequence when it takes the CPU
 * from the thread, but a hypervisor that takes the virtual CPU between
 * the counter read and the store is seen by nobody, and the store lands
 * milliseconds after T; readers that extended the old state past T
 * meanwhile would see it cut back.  So right after the store the counter
 * is read again, and when it moved more than limit / 2048 (about a
 * microsecond) since the read, the value the store replaced goes back at
 * once (no announcement: readers extend the old state to their clock
 * less the margin, as before the store), and it returns false: the
 * caller announces again with a new T.  Only a reader that reads the
 * record in the few nanoseconds between the two stores (one counter
 * read) sees the late T.  A thread preempted just after a prompt store
 * withdraws it for nothing, which costs nothing but the retry.  Before
 * this, the withdrawal was a new announcement made by the caller, after
 * an anchor renewal (a late store is one after a stale anchor): the late
 * T stayed visible for hundreds of nanoseconds, and stalled-store saw 11
 * decreases in 12 runs, where it now sees none.
 *
 * A plain store: nothing after it waits for it to be visible (the
 * fallbacks read their clock again after the store, and need a barrier
 * for that); the stores of the change that follow become visible after
 * it (x86 keeps stores in order), and the store buffer drains in far less
 * than the readers' margin.
 */
/*
 * A test build only (tests/reliability, reliability.regression.review.stalled-store):
 * TDSHIM_TEST_STALL_EVERY (a power of 2) makes one announcement in that
 * many, chosen by the counter's low bits, spin for the anchor's 2 ms
 * between the counter read and the store, inside the sequence: what a
 * hypervisor that takes the virtual CPU there does, unseen by the kernel
 * as long as nothing preempts the spin.  Never in the shipped library.
 */
#ifdef TDSHIM_TEST_STALL_EVERY
#define TDSHIM_TEST_STALL_STRING_(x) #x
#define TDSHIM_TEST_STALL_STRING(x) TDSHIM_TEST_STALL_STRING_(x)
#define TDSHIM_TEST_STALL_ASM                                                          \
	"testl $(" TDSHIM_TEST_STALL_STRING(TDSHIM_TEST_STALL_EVERY) " - 1), %%eax\n\t" \
	"jnz 88f\n\t"                                                                \
	"movq %%rax, %%rcx\n\t"                                                      \
	"addq %[limit], %%rcx\n\t"                                                   \
	"89:\n\t"                                                                    \
	"rdtsc\n\t"                                                                  \
	"shlq $32, %%rdx\n\t"                                                        \
	"orq %%rdx, %%rax\n\t"                                                       \
	"cmpq %%rcx, %%rax\n\t"                                                      \
	"jb 89b\n\t"                                                                 \
	"movq %[read], %%rax\n\t"                                                    \
	"88:\n\t"
#else
#define TDSHIM_TEST_STALL_ASM ""
#endif

static inline bool tdshim_store_counter_time(uint64_t *pending, const struct tdshim_anchor *anchor, uint64_t limit,
				      uint64_t since, struct rseq *area, uint64_t *moment, bool *stale)
{
	uint64_t time, read, old;
	unsigned int stored, fresh;

	__asm__ __volatile__(
		".pushsection __rseq_cs, \"aw\"\n\t"
		".balign 32\n\t"
		"87:\n\t"
		".long 0x0, 0x0\n\t"
		".quad 81f, (82f - 81f), 84f\n\t"
		".popsection\n\t"
		"xorl %[stored], %[stored]\n\t"
		"movl $1, %[fresh]\n\t"
		"movq %[pending], %%rax\n\t"
		"movq %%rax, %[old]\n\t"
		"leaq 87b(%%rip), %%rax\n\t"
		"movq %%rax, %[cs]\n\t"
		"81:\n\t"
		"movq %[base], %%rdx\n\t"
		"xorq %[at], %%rdx\n\t"
		"xorq %[scale], %%rdx\n\t"
		"cmpq %[check], %%rdx\n\t"
		"jne 85f\n\t"
		"rdtsc\n\t"
		"shlq $32, %%rdx\n\t"
		"orq %%rdx, %%rax\n\t"
		"movq %%rax, %[read]\n\t"
		TDSHIM_TEST_STALL_ASM
		"subq %[base], %%rax\n\t"
		"cmpq %[limit], %%rax\n\t"
		"ja 85f\n\t"
		"imulq %[scale], %%rax\n\t"
		"shrq $32, %%rax\n\t"
		"addq %[at], %%rax\n\t"
		"cmpq %[since], %%rax\n\t"
		"ja 86f\n\t"
		"leaq 1(%[since]), %%rax\n\t"
		"86:\n\t"
		"movq %%rax, %[time]\n\t"
		"movq %%rax, %[pending]\n\t"
		"82:\n\t"
		"movl $1, %[stored]\n\t"
		/* Late (the counter moved more than limit / 2048, about a
		 * microsecond, since the read): the old value back at once. */
		"rdtsc\n\t"
		"shlq $32, %%rdx\n\t"
		"orq %%rdx, %%rax\n\t"
		"subq %[read], %%rax\n\t"
		"movq %[limit], %%rcx\n\t"
		"shrq $11, %%rcx\n\t"
		"cmpq %%rcx, %%rax\n\t"
		"jbe 83f\n\t"
		"movq %[old], %%rax\n\t"
		"movq %%rax, %[pending]\n\t"
		"xorl %[stored], %[stored]\n\t"
		"jmp 83f\n\t"
		"85:\n\t"
		"xorl %[fresh], %[fresh]\n\t"
		"jmp 83f\n\t"
		/* The abort handler, in this function's own text (see
		 * announce.c: store_if_prompt). */
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long 0x53053053\n\t"
		"84:\n\t"
		"83:\n\t"
		: [time] "=&r"(time), [read] "=&r"(read), [stored] "=&r"(stored), [fresh] "=&r"(fresh),
		  [cs] "=m"(area->rseq_cs), [old] "=m"(old),
		  [pending] "+m"(*pending)
		: [base] "m"(anchor->counter), [scale] "m"(anchor->scale), [at] "m"(anchor->ns),
		  [check] "m"(anchor->check), [limit] "r"(limit),
		  [since] "r"(since)
		: "rax", "rdx", "rcx", "memory", "cc");
	*moment = time;
	*stale = !fresh;
	return stored;
}

/* Step 1 of region.h's latch: announce a change of `record` after `since`
 * and return its moment T. */
static inline uint64_t tdshim_announce(struct tdstat_record *record, uint64_t since)
{
	uint64_t limit = CMM_LOAD_SHARED(tdshim_anchor_cycles);

	struct rseq *area = tdshim_thread_rseq();

	/* cpu_id < 0: glibc's registration failed for this thread, and the
	 * kernel would restart nothing. */
	if (caa_likely(limit) && caa_likely((int32_t)CMM_LOAD_SHARED(area->cpu_id) >= 0)) {
		uint64_t moment;
		bool stale;
		bool stored = tdshim_store_counter_time(&record->pending_ns, tdshim_current_anchor(&tdshim_self), limit,
						       since, area, &moment, &stale);

		/* The kernel would clear it lazily, at the cost of reading
		 * the descriptor on the thread's next preemption. */
		CMM_STORE_SHARED(area->rseq_cs, 0);
		if (caa_likely(stored))
			return moment;
	}
	return tdshim_announce_slow(record, since);
}

/* The CPU this thread runs on, from glibc's rseq area; -1 where the
 * kernel does not keep it (registration failed).  One load through %fs
 * (whose base is the thread pointer), not the thread pointer first: a
 * waker's stamp and a woken waiter read it just after a context switch. */
static inline int tdshim_current_cpu(void)
{
	int32_t cpu;

	__asm__ __volatile__("movl %%fs:%c1(%2), %0"
			     : "=r"(cpu)
			     : "i"(offsetof(struct rseq, cpu_id)), "r"((long)__rseq_offset));
	return cpu >= 0 ? cpu : -1;
}

/* CLOCK_MONOTONIC for stamps (see shim.h). */
static inline uint64_t tdshim_stamp_ns(void)
{
	uint64_t ns;

	if (caa_likely(CMM_LOAD_SHARED(tdshim_anchor_cycles)) &&
	    caa_likely(tdshim_anchored_time(tdshim_current_anchor(&tdshim_self), tdshim_read_counter(), &ns)))
		return ns;
	return tdshim_stamp_ns_slow();
}

#else

static inline uint64_t tdshim_announce(struct tdstat_record *record, uint64_t since)
{
	return tdshim_announce_slow(record, since);
}

static inline uint64_t tdshim_stamp_ns(void)
{
	return tdshim_now_ns();
}

static inline int tdshim_current_cpu(void)
{
	return -1;
}

#endif

/*
 * The last few record changes made on each CPU (their moments, and
 * whether the thread went on running), by the CPU's number: a CPU whose
 * latest change at or before a wake-up's moment left a thread of ours
 * running was awake then, so the woken thread queued for it from that
 * moment (late_wake, thread.c, tells a halted CPU's late interrupt from
 * a wait in its run queue by it).  Not the latest change alone: several
 * timers that a halted CPU fires late at once wake several threads, and
 * the first to run changes state after every other's expiry (helper-74:
 * four such sleepers read 1.3-4.3x the kernel).  A line per CPU, written
 * by the threads on that CPU; a change preempted halfway may leave a
 * note out or one late, which only moves a wake to the other reading.
 */
#define TDSHIM_BUSY_CPUS 1024
#define TDSHIM_BUSY_NOTES 7u
struct tdshim_cpu_busy {
	uint32_t next;
	uint32_t unused;
	uint64_t notes[TDSHIM_BUSY_NOTES]; /* moment << 1 | still running */
};
extern struct tdshim_cpu_busy tdshim_cpu_busy[TDSHIM_BUSY_CPUS];

static inline void tdshim_cpu_busy_note(uint64_t now, bool running)
{
	int cpu = tdshim_current_cpu();

	if (cpu < 0 || cpu >= TDSHIM_BUSY_CPUS)
		return;
	struct tdshim_cpu_busy *line = &tdshim_cpu_busy[cpu];
	uint32_t at = CMM_LOAD_SHARED(line->next);

	CMM_STORE_SHARED(line->next, at + 1);
	CMM_STORE_SHARED(line->notes[at % TDSHIM_BUSY_NOTES], now << 1 | (running ? 1u : 0u));
}

/* Whether this thread's CPU ran a thread of ours at `moment`: the latest
 * change noted there at or before it left one running (none kept: not
 * known).  Not a change after it: a halted CPU that fires several timers
 * late at once lets the first thread to run change state after every
 * other's expiry (helper-74); and a first change after it that left one
 * running (an awake CPU takes a timer's interrupt at once) moved the
 * pools of tests/accuracy from 1.02-1.04 to 1.05-1.07 of the kernel. */
static inline bool tdshim_cpu_busy_at(uint64_t moment)
{
	int cpu = tdshim_current_cpu();
	uint64_t latest = 0;

	if (cpu < 0 || cpu >= TDSHIM_BUSY_CPUS)
		return false;
	for (unsigned int i = 0; i < TDSHIM_BUSY_NOTES; i++) {
		uint64_t note = CMM_LOAD_SHARED(tdshim_cpu_busy[cpu].notes[i]);

		if (note >> 1 <= moment && note > latest)
			latest = note;
	}
	return latest & 1;
}

#endif /* TDSHIM_COUNTER_CLOCK_H */
