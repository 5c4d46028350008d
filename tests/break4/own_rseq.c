/* SPDX-License-Identifier: MIT */
/*
 * break4 probe (held): a program with its own restartable sequences on
 * glibc's registration (librseq style: per-CPU counters, load / add /
 * store with the store as the commit), 4 threads on 2 CPUs, a timer
 * signal every 200 us whose handler sleeps (nanosleep, wrapped: the shim
 * announces inside its own sequence and clears rseq_cs), and 2 more
 * threads contending a mutex.  Every increment must be counted: a lost
 * one means a preemption inside the program's sequence was not aborted
 * (its rseq_cs clobbered).  Exit 0 when the sum is exact.
 *
 * Usage: own_rseq [seconds].  With TDSHIM set (as under CTest) and not
 * preloaded, it runs itself as a child with LD_PRELOAD=$TDSHIM and
 * TDSTAT_ENABLE=1 in that child's environment only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/rseq.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CPUS_MAX 256
#define WORKERS 4

static struct { uint64_t value; char pad[56]; } counters[CPUS_MAX];
static atomic_long done_total, aborts;
static atomic_int stop;
static pthread_mutex_t contended = PTHREAD_MUTEX_INITIALIZER;

/* counters[cpu]++ on the current CPU, or false when the sequence aborted. */
static int percpu_inc(void)
{
	struct rseq *area = (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
	uint32_t cpu = __atomic_load_n(&area->cpu_id_start, __ATOMIC_RELAXED);
	uint64_t *slot = &counters[cpu % CPUS_MAX].value;

	__asm__ __volatile__ goto(
		".pushsection __rseq_cs, \"aw\"\n\t"
		".balign 32\n\t"
		"67:\n\t"
		".long 0x0, 0x0\n\t"
		".quad 61f, (62f - 61f), 64f\n\t"
		".popsection\n\t"
		"leaq 67b(%%rip), %%rax\n\t"
		"movq %%rax, %[cs]\n\t"
		"61:\n\t"
		"cmpl %[cpu], %[cpu_id]\n\t"
		"jne %l[abort]\n\t"
		"movq %[slot], %%rcx\n\t"
		"pause\n\tpause\n\tpause\n\tpause\n\t"
		"addq $1, %%rcx\n\t"
		"movq %%rcx, %[slot]\n\t"
		"62:\n\t"
		".pushsection __rseq_failure, \"ax\"\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long 0x53053053\n\t"
		"64:\n\t"
		"jmp %l[abort]\n\t"
		".popsection\n\t"
		:
		: [cs] "m"(area->rseq_cs), [cpu_id] "m"(area->cpu_id), [cpu] "r"(cpu), [slot] "m"(*slot)
		: "rax", "rcx", "memory", "cc"
		: abort);
	return 1;
abort:
	return 0;
}

static void *worker(void *arg)
{
	long mine = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (percpu_inc())
			mine++;
		else
			atomic_fetch_add_explicit(&aborts, 1, memory_order_relaxed);
	}
	atomic_fetch_add(&done_total, mine);
	return NULL;
}

static void *locker(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		pthread_mutex_lock(&contended);
		for (volatile int i = 0; i < 200; i++)
			;
		pthread_mutex_unlock(&contended);
	}
	return NULL;
}

static void on_timer(int signo)
{
	struct timespec tiny = { 0, 1 };

	(void)signo;
	nanosleep(&tiny, NULL);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3;
	pthread_t workers[WORKERS], lockers[2];
	struct sigaction action;
	struct itimerval every = { { 0, 200 }, { 0, 200 } };
	uint64_t sum = 0;

	const char *shim = getenv("TDSHIM");

	if (shim && !dlsym(RTLD_DEFAULT, "tdstat_region")) {
		pid_t pid = fork();
		int status = 0;

		if (pid == 0) {
			setenv("LD_PRELOAD", shim, 1);
			setenv("TDSTAT_ENABLE", "1", 1);
			execv("/proc/self/exe", argv);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			return 2;
		return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	}
	if (__rseq_size == 0) {
		printf("glibc did not register rseq: skipped\n");
		return 77;
	}
	memset(&action, 0, sizeof action);
	action.sa_handler = on_timer;
	action.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &action, NULL);
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&workers[i], NULL, worker, NULL);
	for (int i = 0; i < 2; i++)
		pthread_create(&lockers[i], NULL, locker, NULL);
	setitimer(ITIMER_REAL, &every, NULL);
	struct timespec run = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };
	while (nanosleep(&run, &run) != 0)
		;
	atomic_store(&stop, 1);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(workers[i], NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(lockers[i], NULL);
	for (int i = 0; i < CPUS_MAX; i++)
		sum += counters[i].value;
	printf("increments %ld, counted %llu, aborts %ld\n", (long)done_total, (unsigned long long)sum, (long)aborts);
	return sum == (uint64_t)done_total ? 0 : 1;
}
