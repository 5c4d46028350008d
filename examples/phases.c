/* SPDX-License-Identifier: MIT */
/*
 * phases: a program whose concurrency changes in visible steps, to watch
 * with tdstat.
 *
 *   phases [SECONDS_PER_PHASE [THREADS]]
 *
 *   spin  THREADS threads compute: runnable = THREADS, running = the CPUs
 *   lock  THREADS threads take turns on one mutex: about one runnable
 *   idle  THREADS threads wait on a condition variable: none runnable
 *
 * The main thread waits in pthread_join (or sleeps) throughout, so it
 * counts as an idle LWP.  Defaults: 1.5 s per phase, one thread per CPU
 * (at least two).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256

struct phase {
	const char *name;
	const char *description;
	void *(*body)(void *);
};

static double phase_seconds = 1.5;
static struct timespec phase_end;

static pthread_mutex_t the_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long lock_turns;

static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_wakeup = PTHREAD_COND_INITIALIZER;
static bool idle_over;

static double seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) / 1e9;
}

static bool phase_over(void)
{
	return seconds_since(&phase_end) >= 0.0;
}

/* Computation that the compiler cannot drop. */
static unsigned long long compute(unsigned long long seed, int rounds)
{
	for (int i = 0; i < rounds; i++)
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
	return seed;
}

static void *spin(void *argument)
{
	unsigned long long value = (unsigned long long)(size_t)argument;

	while (!phase_over())
		value = compute(value, 10000);
	return (void *)(size_t)(value & 1);
}

/* Each turn holds the mutex while it computes: the others wait for it. */
static void *take_turns(void *argument)
{
	unsigned long long value = (unsigned long long)(size_t)argument;

	while (!phase_over()) {
		pthread_mutex_lock(&the_lock);
		value = compute(value, 50000);
		lock_turns++;
		pthread_mutex_unlock(&the_lock);
	}
	return (void *)(size_t)(value & 1);
}

static void *wait_idle(void *argument)
{
	(void)argument;
	pthread_mutex_lock(&idle_lock);
	while (!idle_over)
		pthread_cond_wait(&idle_wakeup, &idle_lock);
	pthread_mutex_unlock(&idle_lock);
	return NULL;
}

/* The idle phase ends when the main thread says so, after sleeping. */
static void end_idle_phase(void)
{
	struct timespec pause = {
		.tv_sec = (time_t)phase_seconds,
		.tv_nsec = (long)((phase_seconds - (time_t)phase_seconds) * 1e9),
	};

	nanosleep(&pause, NULL);
	pthread_mutex_lock(&idle_lock);
	idle_over = true;
	pthread_cond_broadcast(&idle_wakeup);
	pthread_mutex_unlock(&idle_lock);
}

static void set_phase_end(void)
{
	long long nanoseconds = (long long)(phase_seconds * 1e9);

	clock_gettime(CLOCK_MONOTONIC, &phase_end);
	phase_end.tv_sec += nanoseconds / 1000000000;
	phase_end.tv_nsec += nanoseconds % 1000000000;
	if (phase_end.tv_nsec >= 1000000000) {
		phase_end.tv_sec++;
		phase_end.tv_nsec -= 1000000000;
	}
}

static int run_phase(const struct phase *phase, int threads, const struct timespec *start)
{
	pthread_t workers[MAX_THREADS];
	int started = 0;

	printf("%7.2f s  phase %-4s  %d threads %s\n", seconds_since(start),
	       phase->name, threads, phase->description);
	fflush(stdout);
	set_phase_end();
	for (; started < threads; started++)
		if (pthread_create(&workers[started], NULL, phase->body,
				   (void *)(size_t)(started + 1)) != 0)
			break;
	if (phase->body == wait_idle)
		end_idle_phase();
	for (int i = 0; i < started; i++)
		pthread_join(workers[i], NULL);
	if (started < threads) {
		fprintf(stderr, "phases: could only start %d threads\n", started);
		return -1;
	}
	return 0;
}

static int parse_arguments(int argc, char **argv, int *threads)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	*threads = cpus > 2 ? (int)cpus : 2;
	if (argc > 1)
		phase_seconds = atof(argv[1]);
	if (argc > 2)
		*threads = atoi(argv[2]);
	if (argc > 3 || phase_seconds <= 0 || phase_seconds > 3600 ||
	    *threads < 1 || *threads > MAX_THREADS) {
		fprintf(stderr, "usage: phases [SECONDS_PER_PHASE [THREADS (1-%d)]]\n",
			MAX_THREADS);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct phase phases[] = {
		{ "spin", "compute on every CPU", spin },
		{ "lock", "take turns on one mutex", take_turns },
		{ "idle", "wait on a condition variable", wait_idle },
	};
	struct timespec start;
	int threads;

	if (parse_arguments(argc, argv, &threads) < 0)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &start);
	printf("phases: pid %d, %d threads, %.2f s per phase\n", (int)getpid(),
	       threads, phase_seconds);
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
		if (run_phase(&phases[i], threads, &start) < 0)
			return 1;
	printf("%7.2f s  done (%llu turns on the lock)\n", seconds_since(&start), lock_turns);
	return 0;
}
