/* SPDX-License-Identifier: MIT */
/*
 * A pthread_cancel that reaches a thread at any instruction of a
 * semaphore wait's asynchronous-cancellation window must cancel it
 * cleanly: no crash, and the waiter it registered in glibc's word (the
 * high half) unregistered.  glibc keeps that window to its system call
 * alone; a shim that turns asynchronous cancellation on around its own
 * code gets the cancel at instructions where the unwinder enters its
 * cleanups with the stack pointer off (an argument pushed for the call),
 * and crashes or writes beside its frame.
 *
 * Hitting those few instructions by chance takes thousands of cancels,
 * so this steps onto each of them: a tracer single-steps the waiting
 * thread through one turn of its loop (sem_timedwait with a past
 * deadline: the futex call returns at once) and, in turn for every
 * instruction of that turn that lies in the shim (every instruction,
 * bare), stops a fresh waiter there and hands it the signal
 * pthread_cancel sends (SIGCANCEL, SI_TKILL from the process itself).
 *
 *   sem_cancel_window           bare, then with $TDSHIM preloaded
 *   sem_cancel_window --child   the traced program
 *
 * Exit 0: every cancel ended the thread with PTHREAD_CANCELED and left no
 * waiter registered; 1: a failure (named); 77: ptrace not permitted.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GLIBC_SIGCANCEL 32 /* __SIGRTMIN: what pthread_cancel sends */
#define MAX_TURN 20000     /* instructions in one turn of the loop, at most */

/* ---- the traced program ---- */

static sem_t sem;
static volatile sig_atomic_t done;

static void on_usr1(int signal_number)
{
	(void)signal_number;
	done = 1;
}

/* Each turn starts with SIGUSR2 (the tracer's mark, never delivered);
 * SIGUSR1 in its place ends the loop. */
static void *waiter(void *argument)
{
	const struct timespec past = { 0, 0 };

	(void)argument;
	for (;;) {
		raise(SIGUSR2);
		if (done)
			return NULL;
		if (sem_timedwait(&sem, &past) == 0 || errno != ETIMEDOUT)
			abort();
	}
}

static void *sleeper(void *argument)
{
	(void)argument;
	for (;;)
		pause();
	return NULL;
}

static int child_main(void)
{
	const struct timespec past = { 0, 0 };
	long rounds = 0, bad = 0;

	signal(SIGUSR1, on_usr1);
	sem_init(&sem, 0, 0);
	/* glibc installs its SIGCANCEL handler at the first pthread_cancel. */
	pthread_t first;
	if (pthread_create(&first, NULL, sleeper, NULL) != 0 || pthread_cancel(first) != 0 ||
	    pthread_join(first, NULL) != 0)
		return 3;
	/* Warm: the first call binds and initialises. */
	if (sem_timedwait(&sem, &past) == 0 || errno != ETIMEDOUT)
		return 3;
	for (;;) {
		pthread_t thread;
		void *result;
		uint64_t word;

		if (pthread_create(&thread, NULL, waiter, NULL) != 0 || pthread_join(thread, &result) != 0)
			return 3;
		memcpy(&word, &sem, sizeof(word));
		if (word >> 32) {
			printf("round %ld: %u waiter(s) left registered after the cancel\n", rounds,
			       (unsigned int)(word >> 32));
			bad++;
			sem_destroy(&sem);
			sem_init(&sem, 0, 0);
		}
		if (result != PTHREAD_CANCELED)
			break;
		rounds++;
	}
	printf("%ld cancels, %ld bad\n", rounds, bad);
	return bad ? 1 : 0;
}

/* ---- the tracer ---- */

struct range {
	unsigned long start, end;
};

/* The executable mappings of the preloaded shim, if any. */
static int shim_text(pid_t pid, const char *shim, struct range *ranges, int max)
{
	char path[64], line[4096];
	int count = 0;
	const char *base = shim ? strrchr(shim, '/') : NULL;

	if (!shim)
		return 0;
	base = base ? base + 1 : shim;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *maps = fopen(path, "r");
	if (!maps)
		return 0;
	while (count < max && fgets(line, sizeof(line), maps)) {
		unsigned long start, end;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) == 3 && perms[2] == 'x' && strstr(line, base)) {
			ranges[count].start = start;
			ranges[count].end = end;
			count++;
		}
	}
	fclose(maps);
	return count;
}

/* Whether `rip` lies in the shim's text; with no shim (bare), every
 * instruction counts. */
static bool in_text(unsigned long rip, const struct range *ranges, int nranges)
{
	if (nranges == 0)
		return true;
	for (int i = 0; i < nranges; i++)
		if (rip >= ranges[i].start && rip < ranges[i].end)
			return true;
	return false;
}

static unsigned long rip_of(pid_t tid)
{
	struct user_regs_struct regs;

	if (ptrace(PTRACE_GETREGS, tid, NULL, &regs) != 0)
		return 0;
	return regs.rip;
}

/* Waits for a stop of `tid`, passing other threads' stops on (their
 * signals delivered, new threads and clone events resumed).  Returns the
 * status of tid's stop, or -1 when the process ended (*status_out). */
static int wait_for(pid_t pid, pid_t tid, int *ended)
{
	for (;;) {
		int status;
		pid_t who = waitpid(-1, &status, __WALL);

		if (who < 0)
			return -1;
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (who == pid) {
				*ended = status;
				return -1;
			}
			if (who == tid)
				return status;
			continue;
		}
		if (who == tid)
			return status;
		int signal_number = WSTOPSIG(status);
		if (status >> 16 || signal_number == SIGSTOP || signal_number == SIGTRAP)
			signal_number = 0;
		ptrace(PTRACE_CONT, who, NULL, (void *)(long)signal_number);
	}
}

/* The next waiter's tid, stopped at its SIGUSR2 mark; `spent`, a waiter
 * already handed its cancel (deferred: it runs on to the next
 * cancellation point, past its mark), is let go on. */
static pid_t next_mark(pid_t pid, pid_t spent, int *ended)
{
	for (;;) {
		int status;
		pid_t who = waitpid(-1, &status, __WALL);

		if (who < 0)
			return -1;
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (who == pid) {
				*ended = status;
				return -1;
			}
			continue;
		}
		int signal_number = WSTOPSIG(status);
		if (!(status >> 16) && signal_number == SIGUSR2 && who != spent)
			return who;
		if (signal_number == SIGUSR2)
			signal_number = 0;
		if (status >> 16 || signal_number == SIGSTOP || signal_number == SIGTRAP)
			signal_number = 0;
		ptrace(PTRACE_CONT, who, NULL, (void *)(long)signal_number);
	}
}

static int describe_end(int status, const char *mode, long position, unsigned long rip)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFSIGNALED(status))
		printf("FAIL %s: the program died of signal %d (%s); last cancel at instruction %ld of the turn, "
		       "rip %#lx\n",
		       mode, WTERMSIG(status), strsignal(WTERMSIG(status)), position, rip);
	else
		printf("FAIL %s: the program exited %d (last cancel at instruction %ld, rip %#lx)\n", mode,
		       WEXITSTATUS(status), position, rip);
	return 1;
}

static int trace_run(const char *self, const char *shim)
{
	static unsigned long turn[MAX_TURN];
	const char *mode = shim ? "shim" : "bare";
	struct range ranges[8];
	int nranges = 0, ended = 0;
	long length = 0, injected = 0, position = -1, shorter_turns = 0, unreached = 0, elsewhere = 0;
	bool at_mark = false; /* the waiter `tid` is stopped at its mark, unspent */
	unsigned long last_rip = 0;

	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 3;
	if (pid == 0) {
		if (shim)
			setenv("LD_PRELOAD", shim, 1);
		else
			unsetenv("LD_PRELOAD");
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
			_exit(77);
		execl(self, self, "--child", (char *)NULL);
		_exit(3);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
		if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
			return 77;
		return 3;
	}
	ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)(PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL));
	ptrace(PTRACE_CONT, pid, NULL, NULL);

	/* One turn, stepped through: its length and where each step is. */
	pid_t tid = next_mark(pid, 0, &ended);
	if (tid < 0)
		return describe_end(ended, mode, -1, 0) ? 1 : 3;
	nranges = shim_text(pid, shim, ranges, 8);
	if (shim && nranges == 0) {
		printf("FAIL shim: %s is not mapped in the traced program\n", shim);
		kill(pid, SIGKILL);
		return 1;
	}
	ptrace(PTRACE_SINGLESTEP, tid, NULL, NULL);
	for (long steps = 0;; steps++) {
		status = wait_for(pid, tid, &ended);
		if (status < 0 || !WIFSTOPPED(status) || length == MAX_TURN || steps == 4 * MAX_TURN) {
			printf("FAIL %s: the traced turn did not come back to its mark\n", mode);
			kill(pid, SIGKILL);
			return 1;
		}
		if (WSTOPSIG(status) == SIGUSR2)
			break;
		unsigned long rip = rip_of(tid);
		if (in_text(rip, ranges, nranges))
			turn[length++] = rip;
		ptrace(PTRACE_SINGLESTEP, tid, NULL, NULL);
	}

	/* Every position of the turn in the shim (bare: every one) gets a
	 * cancel, each on a fresh waiter stopped at the mark; the one now at
	 * its mark takes the first. */
	for (position = 0; position <= length; position++) {
		if (injected && !at_mark)
			tid = next_mark(pid, tid, &ended);
		at_mark = false;
		if (tid < 0)
			break;
		if (position == length) {
			/* Done: SIGUSR1 for the mark ends the loop. */
			ptrace(PTRACE_CONT, tid, NULL, (void *)(long)SIGUSR1);
			break;
		}
		bool alive = true;
		/* Positions count the shim's instructions only: outside it a
		 * turn's length depends on time (the vDSO's clock read loops
		 * again when the kernel updated the clock during the read,
		 * which single-stepping, at tens of microseconds a step, makes
		 * happen a varying number of times: a turn took 1,155 to 1,594
		 * instructions, 623 of them in the shim every time).  A waiter
		 * whose turn came back to its mark before the position was
		 * reached is stepped again from there, a few times. */
		for (int tries = 0;; tries++) {
			alive = true;
			for (long seen = 0; seen <= position && alive;) {
				ptrace(PTRACE_SINGLESTEP, tid, NULL, NULL);
				status = wait_for(pid, tid, &ended);
				alive = status >= 0 && WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP;
				if (alive && in_text(rip_of(tid), ranges, nranges))
					seen++;
			}
			if (alive || tries == 3 || status < 0 || !WIFSTOPPED(status) || WSTOPSIG(status) != SIGUSR2)
				break;
			shorter_turns++;
		}
		/* Still short after the tries: the traced turn took a path of
		 * its own there (a clock renewal, a first-call branch) that
		 * the waiters do not take again.  The position is left, the
		 * waiter at its mark takes the next one; a few such are
		 * allowed (below). */
		if (!alive && status >= 0 && WIFSTOPPED(status) && WSTOPSIG(status) == SIGUSR2) {
			unreached++;
			at_mark = true;
			continue;
		}
		if (!alive) {
			printf("FAIL %s: the waiter stopped otherwise while stepped to instruction %ld (status %#x)\n",
			       mode, position, status);
			kill(pid, SIGKILL);
			return 1;
		}
		last_rip = rip_of(tid);
		if (last_rip != turn[position])
			elsewhere++;
		siginfo_t info;
		memset(&info, 0, sizeof(info));
		info.si_signo = GLIBC_SIGCANCEL;
		info.si_code = SI_TKILL;
		info.si_pid = pid;
		info.si_uid = getuid();
		ptrace(PTRACE_SETSIGINFO, tid, NULL, &info);
		ptrace(PTRACE_CONT, tid, NULL, (void *)(long)GLIBC_SIGCANCEL);
		injected++;
	}
	if (position == length || ended == 0) {
		/* The rest runs untraced to its end. */
		while (ended == 0) {
			pid_t who = waitpid(-1, &status, __WALL);
			if (who < 0)
				break;
			if (WIFEXITED(status) || WIFSIGNALED(status)) {
				if (who == pid)
					ended = status;
				continue;
			}
			int signal_number = WSTOPSIG(status);
			if (status >> 16 || signal_number == SIGSTOP || signal_number == SIGTRAP)
				signal_number = 0;
			ptrace(PTRACE_CONT, who, NULL, (void *)(long)signal_number);
		}
	}
	if (describe_end(ended, mode, position, last_rip))
		return 1;
	printf("%s: %ld instructions a turn%s, %ld cancels, each at its own instruction, clean (%ld turns came back "
	       "short and were stepped again; %ld positions no waiter reached; %ld cancels landed off the traced "
	       "instruction)\n",
	       mode, length, shim ? " in the shim" : "", injected, shorter_turns, unreached, elsewhere);
	if ((unreached + elsewhere) * 10 > length) {
		printf("FAIL %s: %ld of %ld positions not reached again: the turns do not repeat\n", mode,
		       unreached + elsewhere, length);
		return 1;
	}
	return injected ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child_main();
	const char *shim = getenv("TDSHIM");
	int bare = trace_run("/proc/self/exe", NULL);
	if (bare == 77) {
		printf("SKIP: ptrace not permitted\n");
		return 77;
	}
	if (bare != 0 || !shim)
		return bare ? 1 : 0;
	return trace_run("/proc/self/exe", shim) ? 1 : 0;
}
