/* SPDX-License-Identifier: MIT */
/*
 * rel_target: the target process of the fault and soak tests (run with the
 * shim preloaded).  It prints "ready" when set up, then obeys one command
 * per stdin line and answers each with one line:
 *
 *   rel_target churn N       N threads alive at any time, each waiting a
 *                            little (mutex, condvar, sleep) and replacing
 *                            itself; "stop" ends the churn ("stopped")
 *   rel_target overflow N    N threads waiting; "release" joins them
 *   rel_target scribble      "magic", "abi", "record_size", "capacity",
 *                            "records_offset", "control_offset", "state",
 *                            "high_water", "acc", "since", "window",
 *                            "random": corrupt the region in place
 *   rel_target fork-storm T F  T threads fork F children each, at once
 *   rel_target exec          "exec": exec itself as "after-exec"
 *   rel_target cancel-waits  threads waiting in many calls; "cancel"
 *   rel_target early         threads from a constructor that ran before
 *                            the shim's; "load" dlopens a module that
 *                            starts more; "release" ends them all
 * "exit" (or end of input) ends the process with status 0.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tdstat/region.h>

int rel_early_threads(void);
void rel_early_release(void);

static char line[256];

static bool next_command(void)
{
	if (!fgets(line, sizeof(line), stdin))
		return false;
	line[strcspn(line, "\n")] = '\0';
	return true;
}

static void answer(const char *text)
{
	printf("%s\n", text);
	fflush(stdout);
}

/* ---- churn ---- */

static atomic_int alive, stop_churn;
static pthread_mutex_t churn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t churn_cond = PTHREAD_COND_INITIALIZER;

static void *churn_main(void *argument)
{
	uintptr_t seed = (uintptr_t)argument;
	struct timespec t;
	pthread_attr_t attr;
	pthread_t next;

	seed = seed * 6364136223846793005u + 1442695040888963407u;
	switch ((seed >> 33) % 3) {
	case 0:
		pthread_mutex_lock(&churn_lock);
		usleep(50);
		pthread_mutex_unlock(&churn_lock);
		break;
	case 1:
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += 500000;
		if (t.tv_nsec >= 1000000000) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&churn_lock);
		pthread_cond_timedwait(&churn_cond, &churn_lock, &t);
		pthread_mutex_unlock(&churn_lock);
		break;
	default:
		usleep((useconds_t)((seed >> 40) % 2000));
		for (volatile int i = 0; i < 20000; i++)
			;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	if (!atomic_load(&stop_churn) && pthread_create(&next, &attr, churn_main, (void *)seed) == 0) {
		pthread_attr_destroy(&attr);
		return NULL; /* the replacement keeps the count */
	}
	pthread_attr_destroy(&attr);
	atomic_fetch_sub(&alive, 1);
	return NULL;
}

static int churn(int threads)
{
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (int i = 0; i < threads; i++) {
		pthread_t t;

		atomic_fetch_add(&alive, 1);
		if (pthread_create(&t, &attr, churn_main, (void *)(uintptr_t)(i + 1)) != 0)
			atomic_fetch_sub(&alive, 1);
	}
	answer("ready");
	while (next_command()) {
		if (!strcmp(line, "stop")) {
			atomic_store(&stop_churn, 1);
			while (atomic_load(&alive) > 0)
				usleep(1000);
			answer("stopped");
		} else if (!strcmp(line, "exit")) {
			break;
		} else {
			answer("?");
		}
	}
	atomic_store(&stop_churn, 1);
	while (atomic_load(&alive) > 0)
		usleep(1000);
	return 0;
}

/* ---- overflow ---- */

static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static int held = 1;

static void *held_main(void *argument)
{
	pthread_mutex_lock(&hold_lock);
	while (held)
		pthread_cond_wait(&hold_cond, &hold_lock);
	pthread_mutex_unlock(&hold_lock);
	return argument;
}

static int overflow(int threads)
{
	pthread_t *t = calloc((size_t)threads, sizeof(*t));

	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, held_main, NULL) != 0)
			return 1;
	answer("ready");
	while (next_command()) {
		if (!strcmp(line, "release")) {
			pthread_mutex_lock(&hold_lock);
			held = 0;
			pthread_cond_broadcast(&hold_cond);
			pthread_mutex_unlock(&hold_lock);
			for (int i = 0; i < threads; i++)
				pthread_join(t[i], NULL);
			answer("released");
		} else if (!strcmp(line, "exit")) {
			break;
		}
	}
	free(t);
	return 0;
}

/* ---- scribble ---- */

static int scribble(void)
{
	struct tdstat_region *region = dlsym(RTLD_DEFAULT, TDSTAT_REGION_SYMBOL);
	struct tdstat_region_header *h;

	if (!region) {
		answer("no region");
		return 1;
	}
	h = &region->header;
	answer("ready");
	while (next_command()) {
		if (!strcmp(line, "magic"))
			h->magic ^= 0xff;
		else if (!strcmp(line, "abi"))
			h->abi_major = 99;
		else if (!strcmp(line, "record_size"))
			h->record_size = 8;
		else if (!strcmp(line, "capacity"))
			h->record_capacity = 0xffffffffu;
		else if (!strcmp(line, "records_offset"))
			h->records_offset = 0;
		else if (!strcmp(line, "control_offset"))
			h->layout.control_offset = 0xfff0;
		else if (!strcmp(line, "state"))
			region->records[0].copy[region->records[0].seq & 1].state = 7;
		else if (!strcmp(line, "high_water"))
			h->status.high_water = 0xffffffffu;
		else if (!strcmp(line, "acc")) {
			region->records[0].copy[region->records[0].seq & 1].epoch_ns = h->control.window_start_ns;
			region->records[0].copy[region->records[0].seq & 1].acc_tracked_ns = UINT64_MAX - 5;
			region->records[0].copy[region->records[0].seq & 1].acc_runnable_ns = UINT64_MAX;
		} else if (!strcmp(line, "since"))
			region->records[0].copy[region->records[0].seq & 1].since_ns = UINT64_MAX - 1;
		else if (!strcmp(line, "window"))
			h->control.window_start_ns = UINT64_MAX - 10;
		else if (!strcmp(line, "random")) {
			unsigned int seed = 42;

			for (size_t i = 0; i < sizeof(*h); i++)
				((unsigned char *)h)[i] = (unsigned char)rand_r(&seed);
		} else if (!strcmp(line, "exit"))
			break;
		else {
			answer("?");
			continue;
		}
		answer("done");
	}
	return 0;
}

/* ---- fork storm ---- */

static pthread_barrier_t storm_barrier;
static int forks_per_thread;
static atomic_int storm_failures;

static void *child_thread(void *argument)
{
	return argument;
}

static void *storm_main(void *argument)
{
	int base = (int)(intptr_t)argument;

	pthread_barrier_wait(&storm_barrier);
	for (int i = 0; i < forks_per_thread; i++) {
		pid_t child = fork();
		int status;

		if (child == 0) {
			pthread_t t;
			void *value = NULL;

			/* The child is single-threaded now; its shim restarted. */
			if (pthread_create(&t, NULL, child_thread, (void *)(intptr_t)5) || pthread_join(t, &value))
				_exit(101);
			pthread_mutex_lock(&churn_lock);
			pthread_mutex_unlock(&churn_lock);
			_exit((base + i + (int)(intptr_t)value) % 100);
		}
		if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != (base + i + 5) % 100)
			atomic_fetch_add(&storm_failures, 1);
	}
	return NULL;
}

static int fork_storm(int threads, int forks)
{
	pthread_t *t = calloc((size_t)threads, sizeof(*t));
	char text[64];

	forks_per_thread = forks;
	pthread_barrier_init(&storm_barrier, NULL, (unsigned)threads);
	answer("ready");
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, storm_main, (void *)(intptr_t)(i * 1000));
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	snprintf(text, sizeof(text), "forks %d failures %d", threads * forks, atomic_load(&storm_failures));
	answer(text);
	while (next_command() && strcmp(line, "exit"))
		;
	free(t);
	return 0;
}

/* ---- cancellation inside waits ---- */

static sem_t never_posted;
static int never_written[2];
static pthread_t join_target;
static pthread_mutex_t wait_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wait_cond = PTHREAD_COND_INITIALIZER;

static void unlock_wait_lock(void *argument) { pthread_mutex_unlock(argument); }

static void *waiter_main(void *argument)
{
	int kind = (int)(intptr_t)argument;
	char byte;
	struct pollfd p = { .fd = never_written[0], .events = POLLIN };
	sigset_t usr2;

	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	switch (kind) {
	case 0: sem_wait(&never_posted); break;
	case 1:
		pthread_mutex_lock(&wait_lock);
		pthread_cleanup_push(unlock_wait_lock, &wait_lock);
		for (;;)
			pthread_cond_wait(&wait_cond, &wait_lock);
		pthread_cleanup_pop(1);
		break;
	case 2: pthread_join(join_target, NULL); break;
	case 3: sleep(600); break;
	case 4: poll(&p, 1, -1); break;
	case 5: if (read(never_written[0], &byte, 1) < 0) break; break;
	case 6: { int number; sigwait(&usr2, &number); } break;
	case 7: pause(); break;
	case 8: { struct timespec t = { 600, 0 }; nanosleep(&t, NULL); } break;
	default: {
		struct sockaddr_un address = { .sun_family = AF_UNIX };
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);

		/* abstract name, unique per thread */
		snprintf(address.sun_path + 1, sizeof(address.sun_path) - 1, "rel_target.%d.%p", (int)getpid(),
			 (void *)&address);
		if (bind(fd, (struct sockaddr *)&address, sizeof(address)) == 0 && listen(fd, 1) == 0)
			accept(fd, NULL, NULL);
	} break;
	}
	return NULL;
}

static void *forever(void *argument)
{
	for (;;)
		pause();
	return argument;
}

static int cancel_waits(void)
{
	enum { KINDS = 10, EACH = 3 };
	pthread_t t[KINDS * EACH];
	sigset_t usr2;
	char text[64];

	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &usr2, NULL);
	sem_init(&never_posted, 0, 0);
	if (pipe(never_written))
		return 1;
	pthread_create(&join_target, NULL, forever, NULL);
	for (int i = 0; i < KINDS * EACH; i++)
		pthread_create(&t[i], NULL, waiter_main, (void *)(intptr_t)(i % KINDS));
	snprintf(text, sizeof(text), "ready %d", KINDS * EACH + 1);
	answer(text);
	while (next_command()) {
		if (!strcmp(line, "cancel")) {
			int cancelled = 0;

			for (int i = 0; i < KINDS * EACH; i++)
				pthread_cancel(t[i]);
			for (int i = 0; i < KINDS * EACH; i++) {
				void *value;

				pthread_join(t[i], &value);
				cancelled += value == PTHREAD_CANCELED;
			}
			pthread_cancel(join_target);
			pthread_join(join_target, NULL);
			snprintf(text, sizeof(text), "cancelled %d", cancelled);
			answer(text);
		} else if (!strcmp(line, "exit")) {
			break;
		}
	}
	return 0;
}

/* ---- early threads and a dlopen'ed module ---- */

static int early(void)
{
	void *module = NULL;
	char text[64];

	snprintf(text, sizeof(text), "ready %d", 1 + rel_early_threads());
	answer(text);
	while (next_command()) {
		if (!strcmp(line, "load")) {
			int (*count)(void);

			module = dlopen(REL_PLUGIN_PATH, RTLD_NOW);
			count = module ? (int (*)(void))dlsym(module, "rel_plugin_threads") : NULL;
			snprintf(text, sizeof(text), "loaded %d", count ? 1 + rel_early_threads() + count() : -1);
			answer(text);
		} else if (!strcmp(line, "release")) {
			void (*release)(void) = module ? (void (*)(void))dlsym(module, "rel_plugin_release") : NULL;

			if (release)
				release();
			rel_early_release();
			answer("released");
		} else if (!strcmp(line, "exit")) {
			break;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "churn") && argc > 2)
		return churn(atoi(argv[2]));
	if (!strcmp(mode, "overflow") && argc > 2)
		return overflow(atoi(argv[2]));
	if (!strcmp(mode, "scribble"))
		return scribble();
	if (!strcmp(mode, "fork-storm") && argc > 3)
		return fork_storm(atoi(argv[2]), atoi(argv[3]));
	if (!strcmp(mode, "exec")) {
		answer("ready");
		while (next_command())
			if (!strcmp(line, "exec"))
				execl("/proc/self/exe", argv[0], "after-exec", (char *)NULL);
		return 0;
	}
	if (!strcmp(mode, "after-exec")) {
		answer("exec'd");
		while (next_command() && strcmp(line, "exit"))
			;
		return 0;
	}
	if (!strcmp(mode, "cancel-waits"))
		return cancel_waits();
	if (!strcmp(mode, "early"))
		return early();
	fprintf(stderr, "rel_target: unknown mode or missing argument\n");
	return 2;
}
