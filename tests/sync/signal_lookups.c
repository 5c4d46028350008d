/* SPDX-License-Identifier: MIT */
/*
 * tests/sync: tracked calls on two mutexes while signal handlers make
 * tracked calls on a semaphore, many times a second (break review of
 * session 5).  The shim remembered its last lookup as a key and an entry
 * written one after the other; a handler's lookup in between left A's key
 * with C's entry, and A's failed tries were counted as C's.
 *
 *   signal_lookups N: N rounds of trylock, trylock (fails), unlock on A,
 *   then on B, while another thread sends SIGUSR1 to this one without
 *   pause, whose handler calls sem_trywait on C (at 0: fails); more
 *   rounds (up to 50 N) until 5,000 handlers ran, as the kicker may get
 *   little CPU on a loaded machine.  Prints
 *   "expected A_TRY A_FAIL B_TRY B_FAIL C_TRY" and waits to be killed.
 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

pthread_mutex_t lookup_a = PTHREAD_MUTEX_INITIALIZER, lookup_b = PTHREAD_MUTEX_INITIALIZER;
sem_t lookup_c;
static atomic_long handled;
static atomic_int done;
static pid_t main_tid;

static void on_signal(int signal_number)
{
	(void)signal_number;
	sem_trywait(&lookup_c);
	atomic_fetch_add(&handled, 1);
}

static void *kicker(void *unused)
{
	while (!atomic_load(&done))
		syscall(SYS_tgkill, getpid(), main_tid, SIGUSR1);
	return unused;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 1000000;
	struct sigaction action = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	pthread_t thread;

	sem_init(&lookup_c, 0, 0);
	main_tid = (pid_t)syscall(SYS_gettid);
	sigaction(SIGUSR1, &action, NULL);
	pthread_create(&thread, NULL, kicker, NULL);
	long done_rounds = 0;
	for (; done_rounds < rounds || (atomic_load(&handled) < 5000 && done_rounds < 50 * rounds); done_rounds++) {
		pthread_mutex_trylock(&lookup_a);
		pthread_mutex_trylock(&lookup_a);
		pthread_mutex_unlock(&lookup_a);
		pthread_mutex_trylock(&lookup_b);
		pthread_mutex_trylock(&lookup_b);
		pthread_mutex_unlock(&lookup_b);
	}
	atomic_store(&done, 1);
	pthread_join(thread, NULL);
	/* Handlers that run from here on are not counted: block them. */
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	printf("expected %ld %ld %ld %ld %ld\n", 2 * done_rounds, done_rounds, 2 * done_rounds, done_rounds,
	       atomic_load(&handled));
	fflush(stdout);
	for (;;)
		pause();
}
