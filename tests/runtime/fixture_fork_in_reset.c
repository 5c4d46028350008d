/* SPDX-License-Identifier: MIT */
/*
 * rt_fork_in_reset ROUNDS: a fork made from a signal handler (_Fork, as
 * async-signal-safe as fork gets) in a fork child while the shim resets
 * that child, once the reset has written the child's pid into the
 * header.  The grandchild finishes the reset, and must end with its own
 * pid in the header and one live record, under its own tid (it kept the
 * child's pid, and sometimes a record under the child's tid, whose
 * thread readers then listed: helper-62, session 21).  Prints landed=N
 * (the forks that came at that point) and wrong=M (grandchildren whose
 * region said otherwise).
 */
#include "fixture.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

pid_t _Fork(void);

static volatile sig_atomic_t in_child, returned, forked, grandchild;

static void on_signal(int signal_number)
{
	(void)signal_number;
	if (!in_child || returned || forked || fx_region()->header.status.pid != getpid())
		return;
	forked = 1;
	if (_Fork() == 0)
		grandchild = 1;
}

/* The grandchild, after a wrapper (the first one finds a wiped process
 * page, if the fork came after the reset's end). */
static int grandchild_verdict(void)
{
	struct timespec pause = { 0, 1000 };
	pid_t tid = fx_gettid();

	nanosleep(&pause, NULL);
	bool own_pid = fx_region()->header.status.pid == getpid();
	bool own_record = fx_find_record(tid) >= 0 && fx_live_records() == 1;

	return own_pid && own_record ? 0 : 3;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 60, landed = 0, wrong = 0;
	volatile int *child_running = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (child_running == MAP_FAILED)
		fx_die("mmap");
	fx_region();
	signal(SIGUSR1, on_signal);
	for (int round = 0; round < rounds; round++) {
		int status;

		*child_running = 0;
		in_child = 1; /* the child's copy; the parent's is cleared below */
		pid_t child = fork();
		if (child < 0)
			fx_die("fork");
		if (child == 0) {
			returned = 1;
			if (grandchild)
				_exit(grandchild_verdict());
			*child_running = 1;
			int verdict = forked ? 4 : 0;
			while (wait(&status) > 0)
				if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
					verdict = 3;
			_exit(verdict);
		}
		in_child = 0;
		for (int i = 0; i < 20000 && !*child_running; i++)
			kill(child, SIGUSR1);
		if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
			fx_die("the child did not exit");
		landed += WEXITSTATUS(status) == 3 || WEXITSTATUS(status) == 4;
		wrong += WEXITSTATUS(status) == 3;
	}
	printf("landed=%d\nwrong=%d\n", landed, wrong);
	return 0;
}
