/* SPDX-License-Identifier: MIT */
/*
 * tdtest: the one way the test suites run a program as a child.
 *
 * A child gets the shim only through its own environment (LD_PRELOAD set
 * in the envp given to the child); the test runner itself is never
 * preloaded and its environment is never changed.
 *
 * Timeouts are generous safety nets against hangs, never measurements:
 * a test asserts order and state, not durations.
 */
#ifndef TDTEST_H
#define TDTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tdstat/region.h>
#include <sys/types.h>

struct tdtest_spawn_options {
	const char *preload;         /* LD_PRELOAD for the child, or NULL */
	const char *const *env;      /* extra "K=V" entries, NULL-terminated, or NULL */
	bool pipe_stdin;             /* give the test a writable end of the child's stdin */
};

struct tdtest_child {
	pid_t pid;
	int stdout_fd;               /* read end of the child's stdout */
	int stdin_fd;                /* write end of its stdin, -1 unless piped */
	size_t buffered;             /* bytes of buffer not yet returned */
	char buffer[4096];
};

/* The shim to preload: the TDTEST_SHIM_PATH given at compile time. */
const char *tdtest_shim_path(void);

/* CLOCK_MONOTONIC in ns, and a sleep that resumes after signals: the
 * timing helpers every suite needs. */
uint64_t tdtest_monotonic_ns(void);

/*
 * How far a snapshot's thread count may fall short of exact (docs/READER.md):
 * a thread blocked at the snapshot counts only up to the commit lag
 * before it, and the window ends at the reader's clock after its reads,
 * open intervals at its clock less its 1 ms margin before them (the reads
 * take a few hundred microseconds on a loaded machine; 2 ms allowed).
 * Per thread, in nanoseconds.
 */
#define TDTEST_SNAPSHOT_EDGE_NS (TDSTAT_COMMIT_LAG_NS + 3000000u)
void tdtest_sleep_ms(long ms);

/*
 * The machine's steal time so far, in seconds over all CPUs (/proc/stat):
 * time the hypervisor ran other guests while this machine's CPUs wanted
 * to run.  The kernel's per-thread figures leave it out (a thread on a
 * stolen CPU is neither on a CPU nor waiting for one), the shim counts it
 * runnable, so an accuracy test allows tdstat above the kernel by at most
 * the steal over its window, and measures again while the host steals.
 * -1 where /proc/stat does not say.
 */
double tdtest_steal_s(void);
/* Steal over a window at or above which the kernel's figures are not
 * comparable as they stand: 0.02 CPUs (tdstat's own hint uses the same). */
#define TDTEST_STEAL_SIGNIFICANT 0.02

/* How late past its expiry a timer's wake may return and still count as
 * the CPU taking the interrupt late (runtime/shim.h's
 * TDSHIM_LATE_TIMER_NS, which tests cannot include): later, the shim
 * counts the thread runnable from the expiry on. */
#define TDTEST_LATE_TIMER_NS 250000u

/* Starts argv[0] (searched in PATH) with stdout piped to the test, its own
 * environment plus opts->env, stderr inherited.  The child leads its own
 * process group so a timeout can kill what it started.  opts may be NULL.
 * Returns 0, or -1 with errno set. */
int tdtest_spawn(struct tdtest_child *child, const char *const argv[],
		 const struct tdtest_spawn_options *opts);

/* Reads the next stdout line into line (no '\n', NUL-terminated, cut to
 * size - 1 bytes).  Returns its length, -1 at end of output, -2 when
 * timeout_ms passed without a whole line. */
int tdtest_read_line(struct tdtest_child *child, char *line, size_t size, int timeout_ms);

/* Reads stdout to its end into a malloc'd buffer (NUL-terminated; *length
 * excludes the NUL).  Returns NULL on timeout or error. */
char *tdtest_read_all(struct tdtest_child *child, size_t *length, int timeout_ms);

/* Closes the child's stdin, waits for it to end and closes its stdout.
 * Returns the wait status, or -1 when timeout_ms passed: then the child's
 * process group was killed (SIGKILL), reaped, and a line says so on stderr. */
int tdtest_wait(struct tdtest_child *child, int timeout_ms);

/* Spawns, reads all stdout and waits: the whole life of a short child.
 * Returns the wait status, or -1 (timeout or error); *output (malloc'd, may
 * be NULL on error) receives stdout.  */
int tdtest_run(const char *const argv[], const struct tdtest_spawn_options *opts,
	       char **output, size_t *length, int timeout_ms);

#endif /* TDTEST_H */
