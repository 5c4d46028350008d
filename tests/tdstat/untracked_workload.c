/* SPDX-License-Identifier: MIT */
/*
 * An OpenMP program whose threads wait at a barrier in libgomp's own
 * futex wait (an inline system call the shim cannot interpose) while
 * thread 0 sleeps: the shim counts them runnable, the kernel asleep.
 * Run with OMP_WAIT_POLICY=passive.  Prints "ready", then runs for
 * argv[1] seconds.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned seconds = argc > 1 ? (unsigned)atoi(argv[1]) : 5;

#pragma omp parallel num_threads(3)
	{
		if (omp_get_thread_num() == 0) {
			printf("ready\n");
			fflush(stdout);
			sleep(seconds);
		}
#pragma omp barrier
	}
	return 0;
}
