/* SPDX-License-Identifier: MIT */
/*
 * tdstat, the command: private declarations shared by its files.
 *
 *   main.c      arguments, dispatch, usage
 *   target.c    a PID -> a libc_db agent (through libtdstat_ps), errors
 *   interval.c  two 64-bit snapshots -> averages and int fractions
 *   format*.c   the output formats: one table, one file per format (format.h)
 *   watch.c     live mode
 *   reading.c   the threads one by one and the kernel's view (-t, -w)
 *   threads.c   -t: a row per thread over an interval
 *   objects.c   -w: the objects idle time went to
 *   sync.c      -s: per-object statistics (tracking); sync enable|disable
 *   waitfor.c   -w: the objects waited on now, owners, waiters, deadlocks
 *   symbolize.c names from the target's symbol tables (elfutils)
 *   control.c   enable, disable, reset
 *   run.c       run CMD under the shim, read it at its exit stop
 *   fleet.c     every process here with the shim loaded (ps, serve)
 *   ps.c        tdstat ps
 *   serve.c     tdstat serve: /metrics over HTTP (libmicrohttpd)
 *   plot.c      --plot: the lines drawn over time (cairo); sampler.c
 *               samples `run`'s command for it
 *   privilege.c does CMD gain privileges (setuid...) when it starts
 *   shim_path.c where libtdshim.so is, built or installed
 *   core.c      tdstat core: a core file through libtdstat_core
 *
 * Everything read from a target goes through libc_db (td_ta_*); the
 * command never looks at the target's memory itself.
 */
#ifndef TDSTAT_COMMAND_H
#define TDSTAT_COMMAND_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <tdstat/thread_db_stats.h>
#include <tdstat/thread_db_sync.h>

/* Exit statuses (docs/CONTRACT.md §6). */
enum {
	TDSTAT_EXIT_OK = 0,
	TDSTAT_EXIT_FAILURE = 1,
	TDSTAT_EXIT_USAGE = 2,
};

/* A PID with an agent attached to it. */
struct tdstat_target {
	pid_t pid;
	int open_status; /* enum tdps_status of tdps_open */
	struct ps_prochandle *process;
	td_thragent_t *agent;
};

/* /proc/PID/comm holds at most 15 bytes; room for them made printable. */
#define TDSTAT_COMM_SIZE 64

/* What one printed line covers: an interval of one window. */
struct tdstat_interval {
	pid_t pid;
	int nthreads;
	int r_concurrency;
	/* Fractions as td_ta_stats_t holds them (docs/CONTRACT.md §2). */
	int nrunnable_num, nrunnable_den;
	int a_concurrency_num, a_concurrency_den;
	int nlwps_num, nlwps_den;
	int nidle_num, nidle_den;
	/* The same averages as floating point, from the nanosecond integrals. */
	double runnable, running, lwps, idle;
	double window_s;
	/* What the kernel says of the target when the line is printed:
	 * TDSTAT_STOPPED_UNKNOWN where the command does not ask (run). */
	enum { TDSTAT_STOPPED_UNKNOWN, TDSTAT_RUNNING, TDSTAT_STOPPED } stopped;
	/* The idle average by wait kind (enum tdstat_wait_kind); they sum
	 * to idle.  has_kinds: the shim reported them. */
	bool has_kinds;
	double idle_by[TDSTAT_WAIT_KIND_COUNT];
	/* Threads the shim counted runnable while the kernel saw them
	 * asleep, on average; negative: not known (docs/CONTRACT.md §6). */
	double untracked;
	/* CPUs the hypervisor took from the whole machine (steal, from
	 * /proc/stat), on average over the interval `untracked` covers;
	 * negative: not known.  steal_resolution: one USER_HZ tick over
	 * that interval, in CPUs, what steal may be off by. */
	double steal, steal_resolution;
	/* The process's name (/proc/PID/comm, made printable UTF-8); empty
	 * when not known. */
	char comm[TDSTAT_COMM_SIZE];
	/* The snapshot at the end of the line: the window so far, whose
	 * integrals are the counters of OpenMetrics. */
	td_ta_stats_ns_t totals;
};

/* The kernel's own runnable time of a process's threads: on a CPU plus
 * in the run queue (/proc/PID/task/TID/schedstat), sorted by tid. */
struct tdstat_kernel_sample {
	uint64_t taken_ns;   /* CLOCK_MONOTONIC */
	uint64_t cost_ns;    /* what taking it took */
	/* The whole machine's steal (/proc/stat, USER_HZ ticks): time the
	 * hypervisor ran something else on our vCPUs.  Read about once a
	 * second (kernel.c): the last reading, at steal_taken_ns (0: at
	 * taken_ns), and the one before it. */
	bool steal_known, steal_before_known;
	uint64_t steal_ticks, steal_taken_ns;
	uint64_t steal_before_ticks, steal_before_taken_ns;
	size_t count;
	struct tdstat_kernel_thread {
		pid_t tid;
		uint64_t runnable_ns;  /* on_cpu_ns + run_queue_ns */
		uint64_t on_cpu_ns;
		uint64_t run_queue_ns; /* runnable, waiting for a CPU */
	} *threads;
};

struct tdstat_format; /* format.h */
struct tdstat_symbolizer; /* symbolize.c */

/* One reading of a live target (reading.c): the threads one by one and
 * the process from the same walk, the kernel's figures after it. */
struct tdstat_reading {
	td_ta_stats_ns_t stats;
	size_t count;
	td_thr_stats_ns_t *threads; /* in record order */
	struct tdstat_kernel_sample kernel;
	bool kernel_valid;
};

/* Room for a name made for people: a symbol, "fd 3 pipe:[123]". */
#define TDSTAT_NAME_SIZE 256

/* A row of -t (threads.c): one thread over an interval.  Shares are
 * averages over the interval, 0 to 1; names are printable UTF-8. */
struct tdstat_thread_row {
	pid_t pid;
	pid_t tid;
	/* The names (never NULL; "" until tdstat_thread_rows_name, or when
	 * unknown) are kept by threads.c until the next naming. */
	const char *name;       /* /proc/PID/task/TID/comm */
	bool tracked;           /* the shim has a record of it */
	bool shim_known;        /* runnable, idle and idle_by are its own (threads.c) */
	uint32_t state;         /* enum tdstat_thread_state, now */
	int wait_kind;          /* enum tdstat_wait_kind it waits in now, or -1 */
	uint64_t object, site;  /* of that wait */
	uint64_t since_ns;      /* when it began (the record's last change) */
	const char *object_name; /* tdstat_object_name */
	const char *site_name;   /* the caller's function, "" if unknown */
	/* Of the names' strings (threads.c): the same pointer is the same
	 * text within one generation. */
	uint64_t names_generation;
	double runnable, idle, idle_by[TDSTAT_WAIT_KIND_COUNT];
	/* idle_by known: the record had a breakdown at both readings (not
	 * `kinds` 0, time in a newer shim's kind: thread_db_stats.h) */
	bool has_kinds;
	bool has_kernel;        /* cpu and run_queue known */
	double cpu, run_queue;  /* schedstat: on a CPU, waiting for one */
	double untracked;       /* runnable - (cpu + run_queue), at least 0; < 0: unknown */
	double window_s;
	double kernel_window_s; /* what cpu, run_queue and untracked cover: window_s,
				 * or the last kernel interval (TDSTAT_KERNEL_COST_FACTOR) */
};

/* A row of -w (objects.c): where idle time went over an interval. */
struct tdstat_object_row {
	pid_t pid;
	int kind;               /* enum tdstat_wait_kind */
	bool ended;             /* the kind's waits that no reading saw current */
	uint64_t object;
	uint64_t site;          /* a return address of a wait on it */
	uint64_t function;      /* start of the caller's function (site if unknown) */
	char object_name[TDSTAT_NAME_SIZE]; /* tdstat_object_name; "" when ended */
	char site_name[TDSTAT_NAME_SIZE];   /* the caller's function, "" if unknown */
	uint64_t idle_ns;
	double waiting;         /* threads waiting on it, on average */
	double window_s;
	/* ended: objects of waits current at the first reading that ended
	 * in the interval (some of the row's time is theirs). */
#define TDSTAT_SEEN_MAX 3
	int seen_count;
	bool seen_more;
	uint64_t seen[TDSTAT_SEEN_MAX];
	char seen_names[TDSTAT_SEEN_MAX][TDSTAT_NAME_SIZE];
};

/* A thread by tid and name (name "" when not known: a core). */
struct tdstat_sync_thread {
	pid_t tid;
	char name[TDSTAT_COMM_SIZE];
};

/* -w, the wait-for graph (waitfor.c): an object some thread waits on
 * now, with its state, owner and waiters. */
struct tdstat_sync_row {
	pid_t pid;
	uint32_t type;          /* td_sync_type_e */
	uint64_t object;
	char object_name[TDSTAT_NAME_SIZE]; /* as -w names objects */
	bool locked;            /* a mutex */
	bool write_locked;      /* an rwlock */
	int32_t readers;        /* an rwlock's readers */
	int32_t count;          /* a semaphore's value */
	pid_t owner;            /* the holder's tid (mutex, write-locked rwlock); 0: none */
	char owner_name[TDSTAT_COMM_SIZE];
	bool in_deadlock;       /* on a cycle */
	size_t waiter_count;
	struct tdstat_sync_thread *waiters; /* by tid */
};

/* A cycle: steps[i] waits for steps[i].object, held by steps[i + 1]
 * (the last by steps[0]); it starts at its lowest tid. */
struct tdstat_deadlock_step {
	pid_t tid;
	char name[TDSTAT_COMM_SIZE];
	uint32_t type;          /* of the object it waits for */
	uint64_t object;
	char object_name[TDSTAT_NAME_SIZE];
};
struct tdstat_deadlock {
	size_t length;
	struct tdstat_deadlock_step *steps;
};

struct tdstat_waitfor {
	pid_t pid;
	struct tdstat_sync_row *rows;   /* by address */
	size_t count;
	struct tdstat_deadlock *deadlocks;
	size_t deadlock_count;
};

/*
 * A row of -s (sync.c): one tracked object, its statistics by Solaris'
 * names.  The fields of every type, listed once, in td_*_stats_t's order:
 * X(type suffix of TD_SYNC_*, member of td_syncstats_t's ss_un, field).
 */
#define TDSTAT_SYNC_FIELDS(X)                                              \
	X(MUTEX, mutex, mutex_lock) X(MUTEX, mutex, mutex_sleep)              \
	X(MUTEX, mutex, mutex_sleep_time) X(MUTEX, mutex, mutex_hold_time)    \
	X(MUTEX, mutex, mutex_try) X(MUTEX, mutex, mutex_try_fail)            \
	X(COND, cond, cond_wait) X(COND, cond, cond_timedwait)                \
	X(COND, cond, cond_wait_sleep_time) X(COND, cond, cond_timedwait_sleep_time) \
	X(COND, cond, cond_timedwait_timeout) X(COND, cond, cond_signal)      \
	X(COND, cond, cond_broadcast)                                         \
	X(RWLOCK, rwlock, rw_rdlock) X(RWLOCK, rwlock, rw_rdlock_sleep)       \
	X(RWLOCK, rwlock, rw_rdlock_sleep_time) X(RWLOCK, rwlock, rw_rdlock_try) \
	X(RWLOCK, rwlock, rw_rdlock_try_fail) X(RWLOCK, rwlock, rw_wrlock)    \
	X(RWLOCK, rwlock, rw_wrlock_sleep) X(RWLOCK, rwlock, rw_wrlock_sleep_time) \
	X(RWLOCK, rwlock, rw_wrlock_hold_time) X(RWLOCK, rwlock, rw_wrlock_try) \
	X(RWLOCK, rwlock, rw_wrlock_try_fail)                                 \
	X(SEMA, sema, sema_wait) X(SEMA, sema, sema_wait_sleep)               \
	X(SEMA, sema, sema_wait_sleep_time) X(SEMA, sema, sema_trywait)       \
	X(SEMA, sema, sema_trywait_fail) X(SEMA, sema, sema_post)             \
	X(SEMA, sema, sema_max_count) X(SEMA, sema, sema_min_count)

struct tdstat_sync_stats_row {
	pid_t pid;
	uint32_t type;          /* td_sync_type_e */
	uint64_t object;
	char object_name[TDSTAT_NAME_SIZE]; /* named as -w names it */
	uint64_t sleep_ns;      /* every sleep time of the object: the order */
	td_syncstats_t stats;
};

/* -s and serve, after the rows: the tracking table as a whole
 * (td_ta_sync_table): its capacity, use and overflow. */
struct tdstat_sync_table_row {
	pid_t pid;
	td_sync_table_t table;
};

/* Prints "tdstat: <message>\n" on stderr: every error is one such line. */
void tdstat_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* target.c */
/* Attaches an agent to pid; prints nothing.  TD_DBERR when the process
 * could not be opened (tdstat_target_explain says why). */
td_err_e tdstat_target_attach(struct tdstat_target *target, pid_t pid);
/* tdstat_target_attach, and on failure the explanation: returns 0 or -1. */
int tdstat_target_open(struct tdstat_target *target, pid_t pid);
void tdstat_target_close(struct tdstat_target *target);
/* Takes a snapshot; on failure returns the td_err_e and leaves *stats
 * unspecified. */
td_err_e tdstat_target_snapshot(const struct tdstat_target *target, td_ta_stats_ns_t *stats);
/* Prints the one-line explanation of err (from a call on target). */
void tdstat_target_explain(const struct tdstat_target *target, td_err_e err);
/* True when err says the target is gone (it exited while we watched). */
bool tdstat_target_vanished(const struct tdstat_target *target, td_err_e err);

/* interval.c */
/* The interval [from, to] of one window; from == NULL means the window's
 * start (the window so far). */
void tdstat_interval_compute(struct tdstat_interval *out, pid_t pid,
			     const td_ta_stats_ns_t *from, const td_ta_stats_ns_t *to);
/* True when both snapshots belong to the same window. */
bool tdstat_same_window(const td_ta_stats_ns_t *a, const td_ta_stats_ns_t *b);
/* Whether the library filled counted_ns (its fourth version). */
bool tdstat_stats_counted(const td_ta_stats_ns_t *stats);
/* What a line's averages over [from, to] divide by: the growth of
 * counted_ns between two snapshots, the window so far when from is NULL. */
uint64_t tdstat_interval_span_ns(const td_ta_stats_ns_t *from, const td_ta_stats_ns_t *to);
/* Whether the library filled counted_ns (its fourth version). */
bool tdstat_stats_counted(const td_ta_stats_ns_t *stats);
/* What a line's averages over [from, to] divide by: the growth of
 * counted_ns between two snapshots, the window so far when from is NULL. */
uint64_t tdstat_interval_span_ns(const td_ta_stats_ns_t *from, const td_ta_stats_ns_t *to);

/* kernel.c */
/* Samples pid's threads; false when /proc does not let us.  With
 * `previous` (the last sample of pid), the threads of `asleep` (sorted
 * tids: blocked in the same wait since before `previous` was taken, so
 * their figures have not moved) take their figures from it instead of
 * their files; and while the kernel counts as many threads as
 * `previous` had, the task directory is listed again only once every
 * TDSTAT_KERNEL_LIST_NS. */
bool tdstat_kernel_sample(pid_t pid, struct tdstat_kernel_sample *sample, const struct tdstat_kernel_sample *previous,
			  const pid_t *asleep, size_t asleep_count);
#define TDSTAT_KERNEL_LIST_NS UINT64_C(1000000000)
void tdstat_kernel_sample_free(struct tdstat_kernel_sample *sample);
/* The steal of the first line of /proc/stat ("cpu  user nice system idle
 * iowait irq softirq steal ..."): false when the line has fewer than
 * eight values (kernels before 2.6.11: steal unknown, not 0). */
bool tdstat_steal_parse(const char *text, uint64_t *steal_ticks);
/* A thread's schedstat (/proc/PID/task/TID/schedstat): its time on a
 * CPU and in the run queue, in ns; false when the text is not one. */
bool tdstat_schedstat_parse(const char *text, uint64_t *on_cpu_ns, uint64_t *run_queue_ns);
/* The thread tid of a sample, or NULL. */
const struct tdstat_kernel_thread *tdstat_kernel_thread_find(const struct tdstat_kernel_sample *sample, pid_t tid);
/* pid's name from /proc/PID/comm, invalid UTF-8 and control characters
 * replaced by '?'; false (and "" in comm) when it cannot be read. */
bool tdstat_kernel_comm(pid_t pid, char comm[TDSTAT_COMM_SIZE]);
/* The same for one thread, /proc/PID/task/TID/comm, read again at most
 * once every TDSTAT_COMM_REREAD_NS (a thread renames itself seldom). */
bool tdstat_kernel_thread_comm(pid_t pid, pid_t tid, char comm[TDSTAT_COMM_SIZE]);
#define TDSTAT_COMM_REREAD_NS UINT64_C(1000000000)
/* -t: a thread the shim shows asleep in the same wait since its name was
 * last read cannot have renamed itself (another thread may have), so its
 * name is read again only this often (threads.c). */
#define TDSTAT_COMM_ASLEEP_REREAD_NS UINT64_C(10000000000)
/* The same, read now. */
bool tdstat_kernel_thread_comm_read(pid_t pid, pid_t tid, char comm[TDSTAT_COMM_SIZE]);
/* text made printable UTF-8 in place, as tdstat_kernel_comm does. */
void tdstat_printable(char *text);

/* reading.c */
/* On failure returns the td_err_e and leaves nothing to free.  With
 * `kernel`, the kernel's per-thread figures too (kernel_valid): with
 * `kernel_base` (the last reading that had them), not read again for
 * the threads asleep in the same wait since then (reading.c). */
td_err_e tdstat_reading_take(const struct tdstat_target *target, struct tdstat_reading *reading, bool kernel,
			     const struct tdstat_reading *kernel_base);
/* The threads and the process only, no kernel figures (a core). */
td_err_e tdstat_reading_threads(const td_thragent_t *agent, struct tdstat_reading *reading);
void tdstat_reading_free(struct tdstat_reading *reading);
/* The thread of a record in a reading (NULL reading, or none: NULL). */
const td_thr_stats_ns_t *tdstat_reading_record(const struct tdstat_reading *reading, uint32_t record);
/* Whether a record's kinds grew as its idle time did between two
 * readings (before NULL: none earlier): it had a breakdown at both, not
 * `kinds` 0 (time in a newer shim's kind, thread_db_stats.h).  Without
 * one at either, the growth of its kinds is not its idle time's (zeros,
 * or one reading's whole breakdown), as for the process line (interval.c). */
static inline bool tdstat_record_kinds_known(const td_thr_stats_ns_t *before, const td_thr_stats_ns_t *now)
{
	return now->kinds >= TDSTAT_WAIT_KIND_COUNT && (!before || before->kinds >= TDSTAT_WAIT_KIND_COUNT);
}
/* CLOCK_MONOTONIC end of the reading's window. */
uint64_t tdstat_reading_end_ns(const struct tdstat_reading *reading);

/* threads.c: the rows of -t over [from, to] (from NULL: the window so
 * far), sorted by tid, without names; *rows is malloc'd. */
size_t tdstat_thread_rows(pid_t pid, const struct tdstat_reading *from, const struct tdstat_reading *to,
			  struct tdstat_thread_row **rows);
/* Their names (the thread's, its wait's object and caller), to print:
 * valid until the next call, or tdstat_thread_names_forget. */
void tdstat_thread_rows_name(struct tdstat_symbolizer *symbolizer, struct tdstat_thread_row *rows, size_t count);
/* Drops the names kept between lines (a new image: names may differ). */
void tdstat_thread_names_forget(void);
/* The process's untracked average from the rows over an interval; < 0
 * when not known. */
double tdstat_untracked(const struct tdstat_thread_row *rows, size_t count);

/*
 * The kernel's figures (schedstat of every thread: the CPU, RUNQ and
 * UNTRACKED columns and the process's untracked) are read for every
 * line at intervals of TDSTAT_KERNEL_EVERY_LINE_S or more; at shorter
 * ones, again only once TDSTAT_KERNEL_COST_FACTOR times what the last
 * reading of them took has passed (at most 1% of a CPU goes to them).
 * At 100 lines a second on a thousand threads, reading them for every
 * line cost tdstat about 40% of a CPU; now every 20th line or so reads
 * them.  A line between two kernel readings shows those of the last
 * kernel interval (row.kernel_window_s), carried here.
 */
#define TDSTAT_KERNEL_EVERY_LINE_S 0.1
#define TDSTAT_KERNEL_COST_FACTOR 100
/* What the kernel says of a line as a whole, over the kernel's interval. */
struct tdstat_kernel_line {
	double untracked;        /* the process's; < 0: unknown */
	double steal;            /* the machine's, in CPUs; < 0: unknown */
	double steal_resolution; /* one USER_HZ tick over the interval, in CPUs */
};
struct tdstat_kernel_carry {
	bool valid;
	bool awaiting;                  /* the rows of the line just made, once printed */
	struct tdstat_kernel_line line;
	size_t count;
	struct tdstat_thread_row *rows; /* sorted by tid; only the kernel's columns matter */
};
/* The rows of [from, to] as tdstat_thread_rows, with the kernel's columns
 * over [kernel_from, to] when `to` has kernel figures and `from` has
 * none (kernel_from: the last reading that had them), else from the
 * carry; updates the carry and sets *line (the process's untracked, the
 * machine's steal). */
size_t tdstat_thread_rows_carried(pid_t pid, const struct tdstat_reading *from,
				  const struct tdstat_reading *kernel_from, const struct tdstat_reading *to,
				  struct tdstat_kernel_carry *carry, struct tdstat_thread_row **rows,
				  struct tdstat_kernel_line *line);
/* The rows of the line tdstat_thread_rows_carried made last, once
 * printed: kept (true: the carry owns them now) when that line had the
 * kernel's figures. */
bool tdstat_kernel_carry_take(struct tdstat_kernel_carry *carry, struct tdstat_thread_row *rows);
void tdstat_kernel_carry_free(struct tdstat_kernel_carry *carry);

/* objects.c: the rows of -w over [from, to], heaviest first, names
 * resolved; *rows is malloc'd. */
size_t tdstat_object_rows(pid_t pid, struct tdstat_symbolizer *symbolizer, const struct tdstat_reading *from,
			  const struct tdstat_reading *to, struct tdstat_object_row **rows);
/* The object of a wait of `kind`, named for people. */
void tdstat_object_name(struct tdstat_symbolizer *symbolizer, pid_t pid, int kind, uint64_t object, char *name,
			size_t size);

/* waitfor.c: the wait-for graph of agent now (docs/CONTRACT.md §9);
 * thread names from /proc/names_pid (0: none, a core).  On failure
 * nothing is left to free. */
td_err_e tdstat_waitfor_read(const td_thragent_t *agent, pid_t pid, pid_t names_pid,
			     struct tdstat_symbolizer *symbolizer, struct tdstat_waitfor *graph);
void tdstat_waitfor_free(struct tdstat_waitfor *graph);
/* "mutex", "rwlock", "cond", "sem" (td_sync_type_e). */
const char *tdstat_sync_type_name(uint32_t type);
/* "1234 (name)", or "1234" without a name. */
void tdstat_thread_text(char *text, size_t size, pid_t tid, const char *name);
/* "thread 1 (a) waits for mutex m held by thread 2 (b), which waits for
 * ... held by thread 1 (a)": a cycle for people. */
void tdstat_deadlock_text(const struct tdstat_deadlock *cycle, char *text, size_t size);

/* sync.c: the rows of -s, heaviest (by sleep time) first, named;
 * *rows is malloc'd.  TD_NOCAPAB: tracking off or no table. */
td_err_e tdstat_sync_rows(const td_thragent_t *agent, pid_t pid, struct tdstat_symbolizer *symbolizer,
			  struct tdstat_sync_stats_row **rows, size_t *count);
/* The table's capacity, use and overflow (td_ta_sync_table). */
td_err_e tdstat_sync_table(const td_thragent_t *agent, pid_t pid, struct tdstat_sync_table_row *row);
/* The wait kind an object of td_sync_type_e `type` is named as (-w's
 * names, tdstat_object_name). */
int tdstat_sync_wait_kind(uint32_t type);
/* Prints the rows of a target (-s), in `format`, then the table's line;
 * the exit status.  A failure is explain()ed, by the caller, who knows
 * whether a live process or a core was read (the cause and the fix
 * differ: tracking off is turned on in a live process, not in a core). */
int tdstat_sync_print(const td_thragent_t *agent, pid_t pid, struct tdstat_symbolizer *symbolizer,
		      const struct tdstat_format *format, void (*explain)(td_err_e err, const void *context),
		      const void *context);
/* tdstat sync enable|disable PID. */
int tdstat_sync_control(bool on, pid_t pid);

/* symbolize.c: names from the target's symbol tables (elfutils). */
struct tdstat_symbolizer *tdstat_symbolizer_open(pid_t pid); /* NULL: no names */
/* The same over a core file and the files it names (executable: NULL, or
 * the program if it moved). */
struct tdstat_symbolizer *tdstat_symbolizer_open_core(const char *core_path, const char *executable);
void tdstat_symbolizer_close(struct tdstat_symbolizer *symbolizer);
/* A new window (a reset, or the target exec'd: a fresh region): the
 * modules are reported again and the cached names dropped. */
void tdstat_symbolizer_renew(struct tdstat_symbolizer *symbolizer);
/* The symbol holding address ("name" or "name+OFFSET"); false if none. */
bool tdstat_symbolize_object(struct tdstat_symbolizer *symbolizer, uint64_t address, char *name, size_t size);
/* The function a return address returns into, and its start. */
bool tdstat_symbolize_caller(struct tdstat_symbolizer *symbolizer, uint64_t return_address, char *name, size_t size,
			     uint64_t *function);


/* privilege.c */
/* True when running `command` (found in PATH as execvp would) changes the
 * credentials of the process: setuid, setgid or file capabilities.  Then
 * reason holds one phrase naming the file and why. */
bool tdstat_command_privileged(const char *command, char *reason, size_t size);

/* shim_path.c */
/* The shim to preload: $TDSTAT_SHIM, else the one built beside this
 * binary (in the build tree) or installed with it.  Returns NULL when that
 * file does not exist; *expected then names where it was looked for. */
const char *tdstat_shim_path(const char **expected);

/* Subcommands; each returns the process's exit status. */
struct tdstat_watch_options {
	pid_t pid;
	double interval_s;
	long count; /* rows to print; 0: until interrupted */
	const struct tdstat_format *format;
	bool threads; /* -t: a row per thread */
	bool objects; /* -w: the objects waited on */
	bool sync; /* -s: per-object statistics, once */
	const char *plot_path; /* --plot: draw the lines into this image */
};
int tdstat_watch(const struct tdstat_watch_options *options);

enum tdstat_control_action {
	TDSTAT_CONTROL_ENABLE,
	TDSTAT_CONTROL_DISABLE,
	TDSTAT_CONTROL_RESET,
};
int tdstat_control(enum tdstat_control_action action, pid_t pid);

struct tdstat_run_options {
	const struct tdstat_format *format;
	const char *output_path; /* NULL: stderr */
	const char *plot_path;   /* --plot: draw the run into this image */
	double interval_s;       /* between the samples of the plot */
	char *const *argv;       /* CMD [ARG...], NULL-terminated */
};
int tdstat_run(const struct tdstat_run_options *options);

struct tdstat_ps_options {
	double interval_s; /* between the two snapshots of each process */
	const struct tdstat_format *format;
};
int tdstat_ps(const struct tdstat_ps_options *options);

struct tdstat_serve_options {
	const char *listen; /* ADDR:PORT; NULL: 127.0.0.1:9464 */
};
int tdstat_serve(const struct tdstat_serve_options *options);

struct tdstat_core_options {
	const struct tdstat_format *format;
	bool threads; /* -t: a row per thread */
	bool objects; /* -w: the objects waited on */
	bool sync; /* -s: per-object statistics */
	const char *core_path;
	const char *executable_path; /* NULL: the one the core names */
};
int tdstat_core(const struct tdstat_core_options *options);

#endif /* TDSTAT_COMMAND_H */
