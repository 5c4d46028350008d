/* SPDX-License-Identifier: MIT */
/*
 * rel_protocol_target: the target of the record-protocol regressions
 * (rel_protocol.c), run with the shim preloaded.  Each mode makes one way
 * a writer can be caught in the middle of a record write happen often.
 * It prints "ready ..." when set up, progress lines while it works, and
 * ends with status 0 on "exit" (or end of input).
 *
 *   jump-spin SIGNALS    a spinner thread loops in a wait the C library
 *                        rejects without a syscall (so it runs inside the
 *                        shim's wrapper almost all the time); another
 *                        thread sends it signals whose handler siglongjmps
 *                        back into the loop, 200 per spinner, then the
 *                        spinner parks and a new one starts, SIGNALS in
 *                        all.  "signals N" every 50, then "done signals N".
 *   async-cancel THREADS THREADS threads, one after another, with
 *                        asynchronous cancellation in short waits of
 *                        several kinds, each cancelled after a random
 *                        moment and joined; after every 100, a thread
 *                        that parks for good.  "cancelled N" every 10,
 *                        then "done cancelled N parked P".
 *   short-waits THREADS  THREADS threads doing very short waits at a high
 *                        rate, until "exit".
 *   jump-recovery deeper|level
 *                        one thread: siglongjmp out of pause() (alarm),
 *                        then "begin", 0.5 s spinning and 0.5 s waiting
 *                        alternately for 4 s, "end".  `deeper`: usleep
 *                        from a deeper frame than the pause; `level`: poll
 *                        and nanosleep from the pause's own frame.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/futex.h>

static void die(const char *what)
{
	fprintf(stderr, "rel_protocol_target: %s\n", what);
	exit(3);
}

static void say(const char *format, ...) __attribute__((format(printf, 1, 2)));
static pthread_mutex_t say_lock = PTHREAD_MUTEX_INITIALIZER;

static void say(const char *format, ...)
{
	va_list arguments;

	pthread_mutex_lock(&say_lock);
	va_start(arguments, format);
	vprintf(format, arguments);
	va_end(arguments);
	putchar('\n');
	fflush(stdout);
	pthread_mutex_unlock(&say_lock);
}

/* Blocks until "exit" or the end of input. */
static void wait_for_exit(void)
{
	char line[64];

	while (fgets(line, sizeof(line), stdin))
		if (!strncmp(line, "exit", 4))
			break;
}

static uint64_t monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static uint32_t next_random(uint64_t *state)
{
	*state = *state * 6364136223846793005u + 1442695040888963407u;
	return (uint32_t)(*state >> 33);
}

static void spin_ns(uint64_t ns)
{
	uint64_t end = monotonic_ns() + ns;

	while (monotonic_ns() < end)
		;
}

/*
 * The shortest wait there is: the shim opens and closes a wait around the
 * call (two record writes), and glibc rejects a sleep on the calling
 * thread's CPU clock with EINVAL before any syscall.  A loop of these
 * spends nearly all its time inside the shim's record writes.
 */
static void instant_wait(void)
{
	static const struct timespec past = { 0, 1 };

	clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &past, NULL);
}

/* ---- jump-spin ---- */

/*
 * Rounds of SIGNALS_PER_ROUND signals, each to a new spinner that then
 * parks for good in a long wait: a record torn in one round stays as its
 * round left it, whatever the later rounds do (a reused record could be
 * torn back into shape).
 */
#define SIGNALS_PER_ROUND 200

struct spinner {
	pthread_t thread;
	sigjmp_buf env;
	atomic_long jumps;
	atomic_int spinning, park;
};

static __thread struct spinner *jump_target;

static void jump_back(int number)
{
	(void)number;
	siglongjmp(jump_target->env, 1);
}

static void *spinner_main(void *argument)
{
	struct spinner *self = argument;

	jump_target = self;
	/* Taken once per jump, not per iteration: the loop stays in the shim. */
	if (sigsetjmp(self->env, 1))
		atomic_fetch_add(&self->jumps, 1);
	atomic_store(&self->spinning, 1);
	while (!atomic_load(&self->park))
		instant_wait();
	for (;;)
		sleep(1000);
	return NULL;
}

static long signals_wanted;

static void *signaller_main(void *unused)
{
	uint64_t seed = 12345;
	long sent = 0;

	(void)unused;
	while (sent < signals_wanted) {
		struct spinner *spinner = calloc(1, sizeof(*spinner));

		if (!spinner || pthread_create(&spinner->thread, NULL, spinner_main, spinner) != 0)
			die("cannot start a spinner");
		while (!atomic_load(&spinner->spinning))
			usleep(100);
		for (long i = 0; i < SIGNALS_PER_ROUND && sent < signals_wanted; i++, sent++) {
			uint64_t deadline = monotonic_ns() + 5000000000u;

			pthread_kill(spinner->thread, SIGUSR1);
			/* One signal at a time: each is delivered and jumps
			 * before the next. */
			while (atomic_load(&spinner->jumps) <= i)
				if (monotonic_ns() > deadline)
					die("the spinner did not take a signal for 5 s");
			if ((sent + 1) % 50 == 0)
				say("signals %ld", sent + 1);
			usleep(20 + next_random(&seed) % 200);
		}
		atomic_store(&spinner->park, 1);
	}
	say("done signals %ld", sent);
	return NULL;
}

static int jump_spin(long signals)
{
	struct sigaction action = { .sa_handler = jump_back };
	pthread_t signaller;

	sigemptyset(&action.sa_mask);
	if (sigaction(SIGUSR1, &action, NULL) != 0)
		die("sigaction");
	signals_wanted = signals;
	say("ready jump-spin %ld", signals);
	if (pthread_create(&signaller, NULL, signaller_main, NULL) != 0)
		die("pthread_create");
	wait_for_exit();
	return 0;
}

/* ---- async-cancel ---- */

static sem_t never_posted;
static atomic_int futex_word;

/* Only calls that take no lock: a thread cancelled asynchronously may be
 * anywhere in them. */
static void *victim_main(void *argument)
{
	uintptr_t kind = (uintptr_t)argument;
	int old;

	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	for (;;) {
		struct timespec t;

		switch (kind % 8) {
		case 0:
			usleep(1);
			break;
		case 1:
			clock_gettime(CLOCK_REALTIME, &t);
			t.tv_nsec += 2000;
			if (t.tv_nsec >= 1000000000) {
				t.tv_sec++;
				t.tv_nsec -= 1000000000;
			}
			sem_timedwait(&never_posted, &t);
			break;
		case 3:
			t.tv_sec = 0;
			t.tv_nsec = 1000;
			syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &t, NULL, 0);
			break;
		case 4:
			t.tv_sec = 0;
			t.tv_nsec = 1000;
			nanosleep(&t, NULL);
			break;
		default:
			/* Half of them: where a record write is most likely cut. */
			instant_wait();
		}
	}
	return NULL;
}

/* Parks for good: its record, claimed from the top of the free list,
 * is the one the victims before it used, and keeps what they left. */
static void *parker_main(void *unused)
{
	(void)unused;
	for (;;)
		sleep(1000);
	return NULL;
}

#define VICTIMS_PER_PARKER 100

static int async_cancel(long threads)
{
	uint64_t seed = 777;
	long parked = 0;

	if (sem_init(&never_posted, 0, 0) != 0)
		die("sem_init");
	say("ready async-cancel %ld", threads);
	for (long i = 0; i < threads; i++) {
		pthread_t victim;

		if (pthread_create(&victim, NULL, victim_main, (void *)(uintptr_t)i) != 0)
			die("pthread_create");
		/* A random moment into its loop. */
		spin_ns(20000 + next_random(&seed) % 300000);
		if (pthread_cancel(victim) != 0 || pthread_join(victim, NULL) != 0)
			die("cancel or join");
		if ((i + 1) % 10 == 0)
			say("cancelled %ld", i + 1);
		/* Victims one at a time all use one record: a parker takes it
		 * every so often, so that a record torn in one stretch stays
		 * as it was left, whatever the later victims do. */
		if ((i + 1) % VICTIMS_PER_PARKER == 0) {
			pthread_attr_t attr;
			pthread_t parker;

			pthread_attr_init(&attr);
			pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
			if (pthread_create(&parker, &attr, parker_main, NULL) != 0)
				die("pthread_create");
			pthread_attr_destroy(&attr);
			parked++;
		}
	}
	say("done cancelled %ld parked %ld", threads, parked);
	wait_for_exit();
	return 0;
}

/* ---- short-waits ---- */

static void *short_waiter_main(void *argument)
{
	uint64_t seed = (uintptr_t)argument;

	for (;;) {
		for (int i = 0; i < 200; i++)
			instant_wait();
		struct timespec microsecond = { 0, 1000 };

		if (next_random(&seed) % 2)
			usleep(1);
		else
			ppoll(NULL, 0, &microsecond, NULL);
	}
	return NULL;
}

static int short_waits(long threads)
{
	for (long i = 0; i < threads; i++) {
		pthread_attr_t attr;
		pthread_t thread;

		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&thread, &attr, short_waiter_main, (void *)(uintptr_t)(i + 1)) != 0)
			die("pthread_create");
		pthread_attr_destroy(&attr);
	}
	say("ready short-waits %ld", threads);
	wait_for_exit();
	return 0;
}

/* ---- jump-recovery ---- */

static sigjmp_buf alarm_env;

static void alarm_jump(int number)
{
	(void)number;
	siglongjmp(alarm_env, 1);
}

#define PHASE_NS 500000000u
#define ALTERNATION_NS 4000000000u

/* Half a period on a CPU, half waiting, from the caller's frame: in
 * usleep, or (`other_wrappers`) in poll and nanosleep, wrappers other than
 * the pause() that was left by siglongjmp. */
static inline __attribute__((always_inline)) void alternate(bool other_wrappers)
{
	static const struct timespec ten_ms = { 0, 10000000 };
	uint64_t start = monotonic_ns();
	unsigned int n = 0;

	for (uint64_t period = start; period < start + ALTERNATION_NS; period += 2 * PHASE_NS) {
		while (monotonic_ns() < period + PHASE_NS)
			;
		while (monotonic_ns() < period + 2 * PHASE_NS) {
			if (!other_wrappers)
				usleep(10000);
			else if (n++ % 2)
				poll(NULL, 0, 10);
			else
				nanosleep(&ten_ms, NULL);
		}
	}
}

/* A frame well below main's: its waits are deeper than the abandoned
 * pause() was. */
static __attribute__((noinline)) void alternate_deeper(int depth)
{
	volatile char pad[2048];

	pad[0] = (char)depth;
	if (depth > 0) {
		alternate_deeper(depth - 1);
		return;
	}
	alternate(false);
	(void)pad[0];
}

static int jump_recovery(const char *variant)
{
	struct sigaction action = { .sa_handler = alarm_jump };
	bool deeper = !strcmp(variant, "deeper");

	if (!deeper && strcmp(variant, "level"))
		die("jump-recovery: deeper or level");
	sigemptyset(&action.sa_mask);
	if (sigaction(SIGALRM, &action, NULL) != 0)
		die("sigaction");
	say("ready jump-recovery %s", variant);
	if (!sigsetjmp(alarm_env, 1)) {
		alarm(1);
		for (;;)
			pause();
	}
	say("begin");
	if (deeper)
		alternate_deeper(4);
	else
		alternate(true);
	say("end");
	wait_for_exit();
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOFBF, 4096);
	if (argc == 3 && !strcmp(argv[1], "jump-spin"))
		return jump_spin(atol(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "async-cancel"))
		return async_cancel(atol(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "short-waits"))
		return short_waits(atol(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "jump-recovery"))
		return jump_recovery(argv[2]);
	fprintf(stderr, "usage: rel_protocol_target jump-spin SIGNALS | async-cancel THREADS | "
			"short-waits THREADS | jump-recovery deeper|level\n");
	return 2;
}
