/* SPDX-License-Identifier: MIT */
/*
 * `tdstat run [--json] [-o FILE] -- CMD [ARG...]`
 *
 * CMD starts with the shim prepended to LD_PRELOAD and TDSTAT_ENABLE=1,
 * so its window is its whole life.  To read that window to its very end,
 * tdstat traces its own child (PTRACE_SEIZE, nothing else is traced): at
 * the PTRACE_EVENT_EXIT stop of CMD's main thread the process still has
 * its memory, and libc_db reads it like any live process.  Every other
 * stop is passed on unchanged, so CMD sees its signals and job control as
 * without tdstat.
 *
 * The child waits on a pipe until the parent has seized it: otherwise CMD
 * could exec, and even end, before it is traced.
 */
#include "tdstat.h"

#include <errno.h>
#include <fcntl.h>
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

struct run_state {
	pid_t pid;
	bool traced;
	bool exec_seen;       /* CMD replaced the child: the shim may be in it */
	bool stats_read;
	td_err_e read_error;  /* of the read at the exit stop, when it failed */
	struct tdstat_target target; /* kept to explain read_error */
	td_ta_stats_ns_t stats;
};

static char *preload_value(const char *shim)
{
	const char *existing = getenv("LD_PRELOAD");
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
	long options = PTRACE_O_TRACEEXIT | PTRACE_O_TRACEEXEC;

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

	if (!state->exec_seen || state->stats_read)
		return;
	err = tdstat_target_attach(&state->target, state->pid);
	if (err == TD_OK)
		err = tdstat_target_snapshot(&state->target, &state->stats);
	state->stats_read = err == TD_OK;
	state->read_error = err;
	if (err == TD_OK)
		tdstat_target_close(&state->target);
}

static bool is_stop_signal(int signo)
{
	return signo == SIGSTOP || signo == SIGTSTP || signo == SIGTTIN || signo == SIGTTOU;
}

/* Passes a ptrace stop on: the tracee goes on as if untraced. */
static void resume(struct run_state *state, int status)
{
	int event = (status >> 16) & 0xff;
	int signo = WSTOPSIG(status);

	switch (event) {
	case PTRACE_EVENT_EXEC:
		state->exec_seen = true;
		signo = 0;
		break;
	case PTRACE_EVENT_EXIT:
		read_final_statistics(state);
		signo = 0;
		break;
	case PTRACE_EVENT_STOP:
		/* A group stop (SIGSTOP, ^Z): stay stopped, but let SIGCONT in. */
		if (is_stop_signal(signo)) {
			ptrace(PTRACE_LISTEN, state->pid, NULL, NULL);
			return;
		}
		signo = 0;
		break;
	default:
		break; /* a signal-delivery stop: deliver the signal */
	}
	ptrace(PTRACE_CONT, state->pid, NULL, (void *)(long)signo);
}

/* Returns CMD's wait status, or -1. */
static int wait_for_command(struct run_state *state)
{
	int status;

	for (;;) {
		if (waitpid(state->pid, &status, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			tdstat_error("cannot wait for %d: %s", (int)state->pid, strerror(errno));
			return -1;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return status;
		if (WIFSTOPPED(status))
			resume(state, status);
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
	if (options->format == TDSTAT_FORMAT_JSON)
		tdstat_report_json(out, &interval);
	else
		tdstat_report_summary(out, &interval, options->argv[0], state->stats.enabled);
	fflush(out);
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

int tdstat_run(const struct tdstat_run_options *options)
{
	struct run_state state = { 0 };
	const char *expected;
	const char *shim = tdstat_shim_path(&expected);
	char *preload;
	FILE *out;
	int status;

	if (!shim) {
		tdstat_error("cannot find libtdshim.so (looked at %s): set "
			     "TDSTAT_SHIM=/path/to/libtdshim.so", expected);
		return TDSTAT_EXIT_FAILURE;
	}
	if (strpbrk(shim, " :")) {
		tdstat_error("the shim's path %s holds a space or colon, which "
			     "LD_PRELOAD takes as separators: set TDSTAT_SHIM to a "
			     "path without them", shim);
		return TDSTAT_EXIT_FAILURE;
	}
	preload = preload_value(shim);
	out = open_output(options->output_path);
	if (!preload || !out || launch(&state, options->argv, preload) < 0) {
		if (!preload)
			tdstat_error("out of memory");
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
	report(options, &state, out);
	if (out != stderr && fclose(out) != 0)
		tdstat_error("cannot write %s: %s", options->output_path, strerror(errno));
	return exit_status_of(status);
}
