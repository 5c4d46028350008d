/* SPDX-License-Identifier: MIT */
/*
 * Known workloads for the tdstat tests.
 *
 *   workload stdin            print "ready PID", then wait (poll, read)
 *                             until stdin closes: a target that lives as long
 *                             as the test wants
 *   workload sleepers N MS    N threads sleep MS milliseconds; main joins
 *   workload spinners N MS    N threads compute MS milliseconds; main joins
 *   workload main-exits N MS  N threads sleep MS milliseconds; main calls
 *                             pthread_exit at once (the leader is a zombie
 *                             while the process runs on)
 *   workload main-exits-stdin as `stdin`, in a thread that prints "ready"
 *                             once main has called pthread_exit
 *   workload exec-thread CMD [ARG...]
 *                             a second thread execs CMD while main waits
 *   workload crowd            2,000 threads in pthread_cond_wait, then as
 *                             `stdin` (many threads: a snapshot's reads
 *                             take long enough to matter)
 *   workload shim-copies      print the number of different libtdshim.so*
 *                             files mapped in this process
 */
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64

static long duration_ms;

static double elapsed_ms(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) * 1e3 +
	       (double)(now.tv_nsec - start->tv_nsec) / 1e6;
}

static void *sleeper(void *argument)
{
	struct timespec pause = {
		.tv_sec = duration_ms / 1000,
		.tv_nsec = (duration_ms % 1000) * 1000000,
	};

	nanosleep(&pause, NULL);
	return argument;
}

static void *spinner(void *argument)
{
	volatile unsigned long long value = 1;
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (elapsed_ms(&start) < (double)duration_ms)
		for (int i = 0; i < 1000; i++)
			value = value * 6364136223846793005ULL + 1;
	return argument;
}

static int run_threads(void *(*body)(void *), int count)
{
	pthread_t threads[MAX_THREADS];

	for (int i = 0; i < count; i++)
		if (pthread_create(&threads[i], NULL, body, NULL) != 0)
			return 1;
	for (int i = 0; i < count; i++)
		pthread_join(threads[i], NULL);
	return 0;
}

/* The state letter of this process's leader. */
static char leader_state(void)
{
	char buffer[512], *close_paren;
	FILE *stat = fopen("/proc/self/stat", "r");
	size_t length = stat ? fread(buffer, 1, sizeof(buffer) - 1, stat) : 0;

	if (stat)
		fclose(stat);
	buffer[length] = '\0';
	close_paren = strrchr(buffer, ')');
	return close_paren && close_paren[1] == ' ' ? close_paren[2] : 0;
}

static int wait_for_stdin(void);

static void *stdin_after_main(void *argument)
{
	struct timespec pause = { .tv_nsec = 10000000 };

	while (leader_state() != 'Z')
		nanosleep(&pause, NULL);
	wait_for_stdin();
	return argument;
}

static int main_exits(void *(*body)(void *), int count)
{
	pthread_t thread;

	for (int i = 0; i < count; i++)
		if (pthread_create(&thread, NULL, body, NULL) != 0)
			return 1;
	pthread_exit(NULL);
}

static char *const *exec_argv;

static void *exec_command(void *argument)
{
	execvp(exec_argv[0], exec_argv);
	perror(exec_argv[0]);
	exit(127);
	return argument;
}

static int exec_from_thread(char *const *argv)
{
	pthread_t thread;

	exec_argv = argv;
	if (pthread_create(&thread, NULL, exec_command, NULL) != 0)
		return 1;
	for (;;)
		pause();
}

/* Different files, not mappings: one copy maps several segments. */
static int shim_copies(void)
{
	char line[PATH_MAX + 256], seen[8][PATH_MAX];
	int copies = 0;
	FILE *maps = fopen("/proc/self/maps", "r");

	while (maps && fgets(line, sizeof(line), maps)) {
		char *path = strchr(line, '/'), *base;
		bool known = false;

		if (!path)
			continue;
		path[strcspn(path, "\n")] = '\0';
		base = strrchr(path, '/') + 1;
		if (strncmp(base, "libtdshim.so", 12) != 0)
			continue;
		for (int i = 0; i < copies; i++)
			known = known || !strcmp(seen[i], path);
		if (!known && copies < 8)
			snprintf(seen[copies++], PATH_MAX, "%s", path);
	}
	if (maps)
		fclose(maps);
	printf("shim copies %d\n", copies);
	return 0;
}

static int wait_for_stdin(void)
{
	char buffer[64];

	struct pollfd input = { .fd = STDIN_FILENO, .events = POLLIN };

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	/* poll() waits in an interposed call whatever stdin is. */
	while (poll(&input, 1, -1) >= 0 && read(STDIN_FILENO, buffer, sizeof(buffer)) > 0)
		;
	return 0;
}

static pthread_mutex_t crowd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t crowd_wakeup = PTHREAD_COND_INITIALIZER;

static void *crowd_member(void *argument)
{
	pthread_mutex_lock(&crowd_lock);
	for (;;)
		pthread_cond_wait(&crowd_wakeup, &crowd_lock);
	return argument;
}

#define CROWD_THREADS 2000

static int crowd(void)
{
	pthread_attr_t attr;
	pthread_t thread;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (int i = 0; i < CROWD_THREADS; i++)
		if (pthread_create(&thread, &attr, crowd_member, NULL) != 0)
			return 1;
	pthread_attr_destroy(&attr);
	return wait_for_stdin();
}

int main(int argc, char **argv)
{
	int count;

	if (argc == 2 && !strcmp(argv[1], "stdin"))
		return wait_for_stdin();
	if (argc == 2 && !strcmp(argv[1], "main-exits-stdin"))
		return main_exits(stdin_after_main, 1);
	if (argc == 2 && !strcmp(argv[1], "crowd"))
		return crowd();
	if (argc == 2 && !strcmp(argv[1], "shim-copies"))
		return shim_copies();
	if (argc >= 3 && !strcmp(argv[1], "exec-thread"))
		return exec_from_thread(argv + 2);
	if (argc != 4)
		goto usage;
	count = atoi(argv[2]);
	duration_ms = atol(argv[3]);
	if (count < 1 || count > MAX_THREADS || duration_ms < 0)
		goto usage;
	if (!strcmp(argv[1], "sleepers"))
		return run_threads(sleeper, count);
	if (!strcmp(argv[1], "spinners"))
		return run_threads(spinner, count);
	if (!strcmp(argv[1], "main-exits"))
		return main_exits(sleeper, count);
usage:
	fprintf(stderr, "usage: workload stdin | main-exits-stdin | crowd | shim-copies | sleepers N MS | "
		"spinners N MS | main-exits N MS | exec-thread CMD [ARG...]\n");
	return 2;
}
