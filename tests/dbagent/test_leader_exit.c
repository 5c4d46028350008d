/* SPDX-License-Identifier: MIT */
/*
 * libtdstat_ps on a process whose main thread calls pthread_exit while a
 * handle is open: the leader becomes a zombie (no memory, an empty maps
 * file) and the process runs on in its other thread.  The handle must go
 * on reading through that thread: memory, symbols and state.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tdstat/ps_live.h>

#include "tdtest.h"

TestSuite(leader_exit, .timeout = 30);

/* The same address in the forked child: its value there is the child's. */
static volatile unsigned long marker;

static int go_pipe[2], ready_pipe[2];

static void *worker(void *argument)
{
	char byte = 'r';

	/* Says it runs, then that main has gone, then lives until killed. */
	if (write(ready_pipe[1], &byte, 1) != 1)
		_exit(3);
	for (;;) {
		char path[64], buffer[512], *close_paren;
		FILE *stat;
		size_t length;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)getpid());
		stat = fopen(path, "r");
		length = stat ? fread(buffer, 1, sizeof(buffer) - 1, stat) : 0;
		if (stat)
			fclose(stat);
		buffer[length] = '\0';
		close_paren = strrchr(buffer, ')');
		if (close_paren && close_paren[2] == 'Z')
			break;
		tdtest_sleep_ms(5);
	}
	if (write(ready_pipe[1], &byte, 1) != 1)
		_exit(3);
	for (;;)
		pause();
	return argument;
}

static pid_t child_start(void)
{
	pid_t pid;
	char byte;

	cr_assert_eq(pipe(go_pipe), 0);
	cr_assert_eq(pipe(ready_pipe), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		pthread_t thread;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		marker = 0x7d57a7;
		if (pthread_create(&thread, NULL, worker, NULL) != 0)
			_exit(1);
		if (read(go_pipe[0], &byte, 1) != 1)
			_exit(2);
		pthread_exit(NULL);
	}
	return pid;
}

Test(leader_exit, handle_goes_on_through_another_thread)
{
	struct ps_prochandle *ph;
	unsigned long value = 0;
	psaddr_t address = 0;
	char byte;
	pid_t pid = child_start();

	cr_assert_eq(read(ready_pipe[0], &byte, 1), 1);
	cr_assert_eq(tdps_open(pid, &ph), TDPS_OK);
	cr_assert_eq(ps_pdread(ph, (psaddr_t)&marker, &value, sizeof(value)), PS_OK);
	cr_assert_eq(value, 0x7d57a7);
	/* Main calls pthread_exit; the worker says when it is a zombie. */
	byte = 'g';
	cr_assert_eq(write(go_pipe[1], &byte, 1), 1);
	cr_assert_eq(read(ready_pipe[0], &byte, 1), 1);

	value = 0;
	cr_assert_eq(ps_pdread(ph, (psaddr_t)&marker, &value, sizeof(value)), PS_OK,
		     "status %d", (int)tdps_last_status(ph));
	cr_assert_eq(value, 0x7d57a7);
	value = 0x5eed;
	cr_assert_eq(ps_pdwrite(ph, (psaddr_t)&marker, &value, sizeof(value)), PS_OK);
	cr_assert_eq(ps_pglobal_lookup(ph, "libc.so", "malloc", &address), PS_OK,
		     "the zombie leader's maps file is empty: status %d", (int)tdps_last_status(ph));
	cr_assert_neq(address, 0);
	cr_assert_eq(ps_getpid(ph), pid, "still the process's PID");
	cr_assert_neq(tdps_process_state(pid), 'Z', "the process lives");
	cr_assert_neq(tdps_process_state(pid), 0);
	tdps_close(ph);

	/* A new handle, opened while the leader is a zombie. */
	cr_assert_eq(tdps_open(pid, &ph), TDPS_OK);
	value = 0;
	cr_assert_eq(ps_pdread(ph, (psaddr_t)&marker, &value, sizeof(value)), PS_OK);
	cr_assert_eq(value, 0x5eed, "the write landed");
	tdps_close(ph);

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cr_assert_eq(tdps_open(pid, &ph), TDPS_NO_PROCESS);
}
