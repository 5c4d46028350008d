/* SPDX-License-Identifier: MIT */
/*
 * `tdstat run [--format F] [-o FILE] -- CMD [ARG...]`
 *
 * CMD starts with the shim prepended to LD_PRELOAD (unless LD_PRELOAD
 * already names a copy) and TDSTAT_ENABLE=1, so its window is its whole
 * life.  To read that window to its very end, tdstat traces the threads
 * of its own child (PTRACE_SEIZE and PTRACE_O_TRACECLONE; the processes
 * CMD forks are not traced).  The end is the exit of the last thread, not
 * of the main thread: main may call pthread_exit while the others run on,
 * and a thread that execs kills the others, main included, before the new
 * image starts.  So at every PTRACE_EVENT_EXIT stop tdstat asks whether
 * any other thread of the process can still run code: if none can, the
 * process ends here, it still has its memory, and libc_db reads it like
 * any live process.  Every other stop is passed on unchanged, so CMD sees
 * its signals and job control as without tdstat.
 *
 * A setuid, setgid or file-capability CMD is refused: under ptrace the
 * kernel would run it without its privilege (and it would ignore
 * LD_PRELOAD anyway).
 *
 * The child waits on a pipe until the parent has seized it: otherwise CMD
 * could exec, and even end, before it is traced.
 */
#include "format.h"

#include <time.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

/* Exit statuses of a child that could not start CMD, as env(1) and the
 * shells use them. */
enum {
	RUN_EXIT_CANNOT_EXECUTE = 126,
	RUN_EXIT_NOT_FOUND = 127,
};

/* Threads that have passed their exit stop and not been reaped yet. */
struct exited_threads {
	pid_t *tids;
	size_t count, capacity;
};

struct run_state {
	pid_t pid;
	bool traced;
	bool exec_seen;       /* CMD replaced the child: the shim may be in it */
	bool stats_read;
	td_err_e read_error;  /* of the read at the exit stop, when it failed */
	struct tdstat_target target; /* kept to explain read_error */
	td_ta_stats_ns_t stats;
	char comm[TDSTAT_COMM_SIZE]; /* at the exit stop */
	struct exited_threads exited;
};

/* SIGKILL's bit in the SigPnd mask of /proc/PID/task/TID/status. */
#define SIGKILL_PENDING (1ull << (SIGKILL - 1))

/* An entry of LD_PRELOAD (separated by colons or spaces, as ld.so reads
 * it) that is a copy of the shim: its file name starts libtdshim.so. */
static bool preload_has_shim(const char *preload)
{
	while (preload && *preload) {
		size_t length = strcspn(preload, ": ");
		const char *base = preload;

		for (size_t i = 0; i < length; i++)
			if (preload[i] == '/')
				base = preload + i + 1;
		if ((size_t)(preload + length - base) >= 12 && !strncmp(base, "libtdshim.so", 12))
			return true;
		preload += length;
		preload += strspn(preload, ": ");
	}
	return false;
}

/* The shim first, then what the user preloads. */
static char *preload_value(const char *shim, const char *existing)
{
	size_t length = strlen(shim) + (existing ? strlen(existing) + 1 : 0) + 1;
	char *value = malloc(length);

	if (!value)
		return NULL;
	if (existing && *existing)
		snprintf(value, length, "%s:%s", shim, existing);
	else
		snprintf(value, length, "%s", shim);
	return value;
}

static bool exited_find(const struct exited_threads *exited, pid_t tid, size_t *at)
{
	for (size_t i = 0; i < exited->count; i++) {
		if (exited->tids[i] == tid) {
			if (at)
				*at = i;
			return true;
		}
	}
	return false;
}

/* Out of memory: the thread is not remembered, and counts as live until
 * it is a zombie; at worst no exit stop is found to be the last, and run
 * says it could not read the statistics. */
static void exited_add(struct exited_threads *exited, pid_t tid)
{
	if (exited_find(exited, tid, NULL))
		return;
	if (exited->count == exited->capacity) {
		size_t capacity = exited->capacity ? exited->capacity * 2 : 16;
		pid_t *tids = realloc(exited->tids, capacity * sizeof(*tids));

		if (!tids)
			return;
		exited->tids = tids;
		exited->capacity = capacity;
	}
	exited->tids[exited->count++] = tid;
}

static void exited_remove(struct exited_threads *exited, pid_t tid)
{
	size_t at;

	if (exited_find(exited, tid, &at))
		exited->tids[at] = exited->tids[--exited->count];
}

/* True when thread `tid` of the command will run no more code of its
 * own: gone, a zombie, or killed (SIGKILL pending: an exit_group, a fatal
 * signal or an exec elsewhere in the process is taking it down). */
static bool thread_finished(pid_t pid, pid_t tid)
{
	char path[64], buffer[4096], *line;
	unsigned long long pending;
	ssize_t length;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	length = read(fd, buffer, sizeof(buffer) - 1);
	close(fd);
	if (length <= 0)
		return true;
	buffer[length] = '\0';
	line = strstr(buffer, "\nState:\t"); /* "State:\tZ (zombie)" */
	if (line && (line[8] == 'Z' || line[8] == 'X'))
		return true;
	line = strstr(buffer, "\nSigPnd:");
	return line && sscanf(line + 9, "%llx", &pending) == 1 && (pending & SIGKILL_PENDING);
}

/* At the exit stop of `tid`: is it the last thread of the process to
 * run?  Every other thread must have passed its own exit stop already, or
 * be unable to run again. */
static bool process_ends_here(const struct run_state *state, pid_t tid)
{
	char path[64];
	struct dirent *entry;
	bool last = true;
	DIR *tasks;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)state->pid);
	tasks = opendir(path);
	if (!tasks)
		return true;
	while (last && (entry = readdir(tasks)) != NULL) {
		pid_t other = (pid_t)strtol(entry->d_name, NULL, 10);

		if (other <= 0 || other == tid || exited_find(&state->exited, other, NULL))
			continue;
		last = thread_finished(state->pid, other);
	}
	closedir(tasks);
	return last;
}

/* A stop from a process that a raw clone() of CMD created (no
 * CLONE_THREAD): PTRACE_O_TRACECLONE attached it, but it is not CMD. */
static bool thread_of_command(const struct run_state *state, pid_t tid)
{
	char path[64];

	if (tid == state->pid)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)state->pid, (int)tid);
	return access(path, F_OK) == 0;
}

static void wait_for_gate(int gate)
{
	char byte;

	while (read(gate, &byte, 1) < 0 && errno == EINTR)
		;
	close(gate);
}

/* In the child: never returns. */
static void start_command(char *const *argv, const char *preload, int gate)
{
	wait_for_gate(gate);
	if (setenv("LD_PRELOAD", preload, 1) < 0 || setenv("TDSTAT_ENABLE", "1", 1) < 0) {
		tdstat_error("cannot set the environment of %s: %s", argv[0], strerror(errno));
		_exit(RUN_EXIT_CANNOT_EXECUTE);
	}
	execvp(argv[0], argv);
	tdstat_error("cannot run %s: %s%s", argv[0], strerror(errno),
		     errno == ENOENT ? " (check the name and PATH)" : "");
	_exit(errno == ENOENT ? RUN_EXIT_NOT_FOUND : RUN_EXIT_CANNOT_EXECUTE);
}

static void seize(struct run_state *state)
{
	long options = PTRACE_O_TRACEEXIT | PTRACE_O_TRACEEXEC | PTRACE_O_TRACECLONE;

	if (ptrace(PTRACE_SEIZE, state->pid, NULL, (void *)options) == 0) {
		state->traced = true;
		return;
	}
	tdstat_error("cannot trace %d to read its statistics at its exit (%s): "
		     "the command runs, but no statistics will follow; is tdstat "
		     "itself being traced, or ptrace blocked by a seccomp policy?",
		     (int)state->pid, strerror(errno));
}

static void read_final_statistics(struct run_state *state)
{
	td_err_e err;

	/* Once per image: a thread killed with the others may still stop. */
	if (!state->exec_seen || state->stats_read || state->read_error != TD_OK)
		return;
	err = tdstat_target_attach(&state->target, state->pid);
	/* The last moments of a wait are final only commit_lag_ns after
	 * them (region.h): the process stopped at its exit, so reading that
	 * much later gives the run to its very end. */
	if (err == TD_OK)
		nanosleep(&(struct timespec){ .tv_nsec = (long)TDSTAT_COMMIT_LAG_NS + 1000000 }, NULL);
	if (err == TD_OK)
		err = tdstat_target_snapshot(&state->target, &state->stats);
	if (err == TD_OK)
		tdstat_kernel_comm(state->pid, state->comm);
	state->stats_read = err == TD_OK;
	state->read_error = err;
	if (err == TD_OK)
		tdstat_target_close(&state->target);
}

static bool is_stop_signal(int signo)
{
	return signo == SIGSTOP || signo == SIGTSTP || signo == SIGTTIN || signo == SIGTTOU;
}

/* Passes a ptrace stop of thread `tid` on: it goes on as if untraced. */
static void resume(struct run_state *state, pid_t tid, int status)
{
	int event = (status >> 16) & 0xff;
	int signo = WSTOPSIG(status);

	switch (event) {
	case PTRACE_EVENT_EXEC:
		/* A new image, its threads all gone but this one (which now
		 * has the process's PID): its end is the one to read. */
		state->exec_seen = true;
		state->stats_read = false;
		state->read_error = TD_OK;
		tdstat_target_close(&state->target);
		state->exited.count = 0;
		signo = 0;
		break;
	case PTRACE_EVENT_EXIT:
		if (process_ends_here(state, tid))
			read_final_statistics(state);
		exited_add(&state->exited, tid);
		signo = 0;
		break;
	case PTRACE_EVENT_CLONE:
		signo = 0; /* the new thread is traced and stops on its own */
		break;
	case PTRACE_EVENT_STOP:
		if (!thread_of_command(state, tid)) {
			ptrace(PTRACE_DETACH, tid, NULL, NULL);
			return;
		}
		/* A group stop (SIGSTOP, ^Z): stay stopped, but let SIGCONT in. */
		if (is_stop_signal(signo)) {
			ptrace(PTRACE_LISTEN, tid, NULL, NULL);
			return;
		}
		signo = 0; /* a new thread's first stop */
		break;
	default:
		break; /* a signal-delivery stop: deliver the signal */
	}
	ptrace(PTRACE_CONT, tid, NULL, (void *)(long)signo);
}

/* Returns CMD's wait status (its process's, when the last thread is
 * gone), or -1. */
static int wait_for_command(struct run_state *state)
{
	int status;

	for (;;) {
		pid_t tid = waitpid(state->traced ? -1 : state->pid, &status, __WALL);

		if (tid < 0) {
			if (errno == EINTR)
				continue;
			tdstat_error("cannot wait for %d: %s", (int)state->pid, strerror(errno));
			return -1;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (tid == state->pid)
				return status;
			exited_remove(&state->exited, tid);
			continue;
		}
		if (WIFSTOPPED(status))
			resume(state, tid, status);
	}
}

static int launch(struct run_state *state, char *const *argv, const char *preload)
{
	int gate[2];

	if (pipe2(gate, O_CLOEXEC) < 0) {
		tdstat_error("cannot create a pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	state->pid = fork();
	if (state->pid < 0) {
		tdstat_error("cannot fork: %s", strerror(errno));
		close(gate[0]);
		close(gate[1]);
		return -1;
	}
	if (state->pid == 0) {
		close(gate[1]);
		start_command(argv, preload, gate[0]);
	}
	close(gate[0]);
	seize(state);
	close(gate[1]); /* opens the gate: the child execs */
	return 0;
}

static void report(const struct tdstat_run_options *options, struct run_state *state,
		   FILE *out)
{
	struct tdstat_interval interval;
	struct tdstat_output output;

	if (!state->stats_read) {
		if (!state->traced || !state->exec_seen)
			return;
		if (state->read_error == TD_NOLIBTHREAD)
			tdstat_error("%s did not load libtdshim.so, so it kept no "
				     "statistics (static and setuid programs "
				     "ignore LD_PRELOAD)", options->argv[0]);
		else if (state->read_error == TD_OK)
			tdstat_error("%s ended before tdstat could read its "
				     "statistics (killed with SIGKILL?)", options->argv[0]);
		else
			tdstat_target_explain(&state->target, state->read_error);
		tdstat_target_close(&state->target);
		return;
	}
	tdstat_interval_compute(&interval, state->pid, NULL, &state->stats);
	memcpy(interval.comm, state->comm, sizeof(interval.comm));
	tdstat_output_init(&output, options->format, out, TDSTAT_OUTPUT_RUN);
	output.command = options->argv[0];
	tdstat_output_start(&output);
	tdstat_output_begin(&output);
	tdstat_output_summary(&output, &interval);
	tdstat_output_end(&output);
	tdstat_output_close(&output);
	if (output.failed)
		tdstat_error("out of memory while writing the statistics");
}

static int exit_status_of(int status)
{
	if (status < 0)
		return TDSTAT_EXIT_FAILURE;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

static FILE *open_output(const char *path)
{
	FILE *out;

	if (!path)
		return stderr;
	out = fopen(path, "we");
	if (!out)
		tdstat_error("cannot write %s: %s", path, strerror(errno));
	return out;
}

/* LD_PRELOAD for CMD (malloc'd), or NULL after saying why not. */
static char *command_preload(void)
{
	const char *existing = getenv("LD_PRELOAD");
	const char *expected, *shim;
	char *preload;

	/* The user's copy of the shim is the one to use: a second would
	 * interpose every call again. */
	if (preload_has_shim(existing))
		preload = strdup(existing);
	else {
		shim = tdstat_shim_path(&expected);
		if (!shim) {
			tdstat_error("cannot find libtdshim.so (looked at %s): set "
				     "TDSTAT_SHIM=/path/to/libtdshim.so", expected);
			return NULL;
		}
		if (strpbrk(shim, " :")) {
			tdstat_error("the shim's path %s holds a space or colon, which "
				     "LD_PRELOAD takes as separators: set TDSTAT_SHIM to a "
				     "path without them", shim);
			return NULL;
		}
		preload = preload_value(shim, existing);
	}
	if (!preload)
		tdstat_error("out of memory");
	return preload;
}

int tdstat_run(const struct tdstat_run_options *options)
{
	struct run_state state = { 0 };
	char reason[PATH_MAX + 128];
	char *preload;
	FILE *out;
	int status;

	if (tdstat_command_privileged(options->argv[0], reason, sizeof(reason))) {
		tdstat_error("%s: under tdstat run the kernel would run it without "
			     "that privilege (it is traced), and it would ignore "
			     "LD_PRELOAD, so it is not run; run it without tdstat",
			     reason);
		return TDSTAT_EXIT_FAILURE;
	}
	preload = command_preload();
	if (!preload)
		return TDSTAT_EXIT_FAILURE;
	out = open_output(options->output_path);
	if (!out || launch(&state, options->argv, preload) < 0) {
		free(preload);
		if (out && out != stderr)
			fclose(out);
		return TDSTAT_EXIT_FAILURE;
	}
	free(preload);
	/* Like time(1): ^C and ^\ are for CMD, which decides what they do. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	status = wait_for_command(&state);
	free(state.exited.tids);
	report(options, &state, out);
	if (out != stderr && fclose(out) != 0)
		tdstat_error("cannot write %s: %s", options->output_path, strerror(errno));
	return exit_status_of(status);
}
