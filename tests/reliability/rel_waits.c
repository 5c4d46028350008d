/* SPDX-License-Identifier: MIT */
/*
 * rel_waits: every interposed waiting call, in a thread, under five
 * treatments, one line per (treatment, call) on stdout:
 *
 *   cancel-blocked   the call waits; pthread_cancel
 *   cancel-pending   a cancel is pending when the call starts, and it
 *                    would wait
 *   cancel-ready     a cancel is pending and the call need not wait
 *                    (sem_wait with a count, join of a finished thread...)
 *   eintr            the call waits; SIGUSR1 (handler without SA_RESTART)
 *   eintr-restart    the same with SA_RESTART
 *
 * after which the call is released (unlock, post, write, connect...) if it
 * still waits.  Run bare and under the shim (rel_compare): every line must
 * be the same, since the shim must not change what any call returns, how
 * it reacts to cancellation or what a signal does to it.
 *
 * The cases are named like the calls of runtime/calls.def (plus variants);
 * `rel_waits --cases` fails, naming it, for a waiting call of the table
 * that has no case here.
 *
 *   rel_waits [TREATMENT [CALL]]     (default: all of them)
 *   rel_waits --cases
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include <linux/futex.h>

#include "fortified.h"

#define LONG_WAIT_S 60
#define GLIBC_SIGCANCEL 32 /* __SIGRTMIN: what pthread_cancel sends */

struct fixture {
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	pthread_rwlock_t rwlock;
	pthread_barrier_t barrier;
	sem_t sem;
	int pipe[2];
	int sock[2];
	int listener;
	struct sockaddr_un address;
	int epoll;
	pid_t child;
	int child_pipe[2];
	pthread_t helper;
	_Atomic pid_t helper_tid;
	bool helper_joinable;
	int holds;           /* the main thread holds: 1 the mutex, 2 the rwlock */
	int helper_pipe[2];
	pthread_t waiter;
	int cond_flag;
	int futex_word;      /* syscall: a futex wait while it is 0 */
};

struct wait_case {
	const char *name;
	void (*setup)(struct fixture *);   /* make the call wait */
	long (*call)(struct fixture *, int *error);
	void (*release)(struct fixture *); /* make a waiting call return; NULL: none */
	void (*ready)(struct fixture *);   /* instead of setup: the call need not wait; NULL: no such state */
};

static volatile sig_atomic_t handled;

static void on_signal(int signal_number)
{
	handled = signal_number;
}

static struct timespec in_seconds(clockid_t clock, int seconds)
{
	struct timespec t;

	clock_gettime(clock, &t);
	t.tv_sec += seconds;
	return t;
}

static void die(const char *what)
{
	fprintf(stderr, "rel_waits: %s: %s\n", what, strerror(errno));
	exit(3);
}

/* ---- the fixture ---- */

static void *helper_main(void *argument)
{
	struct fixture *f = argument;
	char byte;

	atomic_store(&f->helper_tid, gettid());
	while (read(f->helper_pipe[0], &byte, 1) < 0 && errno == EINTR)
		;
	return (void *)7;
}

static void fixture_init(struct fixture *f)
{
	static int serial;

	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mutex, NULL);
	pthread_cond_init(&f->cond, NULL);
	pthread_rwlock_init(&f->rwlock, NULL);
	pthread_barrier_init(&f->barrier, NULL, 2);
	sem_init(&f->sem, 0, 0);
	if (pipe(f->pipe) || socketpair(AF_UNIX, SOCK_STREAM, 0, f->sock) || pipe(f->helper_pipe) ||
	    pipe(f->child_pipe))
		die("pipe");
	f->listener = socket(AF_UNIX, SOCK_STREAM, 0);
	f->address.sun_family = AF_UNIX;
	/* abstract name: nothing to clean up on disk */
	snprintf(f->address.sun_path + 1, sizeof(f->address.sun_path) - 1, "rel_waits.%d.%d", (int)getpid(),
		 serial++);
	if (bind(f->listener, (struct sockaddr *)&f->address, sizeof(f->address)) || listen(f->listener, 8))
		die("listen");
	f->epoll = epoll_create1(0);
	struct epoll_event event = { .events = EPOLLIN, .data.fd = f->pipe[0] };
	if (epoll_ctl(f->epoll, EPOLL_CTL_ADD, f->pipe[0], &event))
		die("epoll_ctl");
	f->child = -1;
}

static void fixture_destroy(struct fixture *f)
{
	if (f->child > 0) {
		kill(f->child, SIGKILL);
		waitpid(f->child, NULL, 0);
	}
	if (f->helper_joinable) {
		if (write(f->helper_pipe[1], "x", 1) != 1)
			die("write");
		pthread_join(f->helper, NULL);
	}
	close(f->pipe[0]);
	close(f->pipe[1]);
	close(f->sock[0]);
	close(f->sock[1]);
	close(f->helper_pipe[0]);
	close(f->helper_pipe[1]);
	close(f->child_pipe[0]);
	close(f->child_pipe[1]);
	close(f->listener);
	close(f->epoll);
	/* Objects a cancelled waiter may have left in use are not destroyed
	 * (destroying them is undefined); the fixture is not reused. */
}

static void write_byte(int fd)
{
	if (write(fd, "x", 1) != 1)
		die("write");
}

/* ---- setups, releases, ready states ---- */

static void hold_mutex(struct fixture *f) { pthread_mutex_lock(&f->mutex); f->holds = 1; }
static void free_mutex(struct fixture *f) { pthread_mutex_unlock(&f->mutex); f->holds = 0; }
static void hold_write(struct fixture *f) { pthread_rwlock_wrlock(&f->rwlock); f->holds = 2; }
static void hold_read(struct fixture *f) { pthread_rwlock_rdlock(&f->rwlock); f->holds = 2; }
static void free_rwlock(struct fixture *f) { pthread_rwlock_unlock(&f->rwlock); f->holds = 0; }
static void nothing(struct fixture *f) { (void)f; }
static void signal_cond(struct fixture *f)
{
	pthread_mutex_lock(&f->mutex);
	f->cond_flag = 1;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->mutex);
}
static void barrier_arrive(struct fixture *f) { pthread_barrier_wait(&f->barrier); }
static void post_sem(struct fixture *f) { sem_post(&f->sem); }
static void fill_pipe(struct fixture *f) { write_byte(f->pipe[1]); }
static void fill_socket(struct fixture *f) { write_byte(f->sock[1]); }
static void connect_listener(struct fixture *f)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	if (connect(fd, (struct sockaddr *)&f->address, sizeof(f->address)))
		die("connect");
	/* the accepted end stays queued even once this one is closed */
	close(fd);
}
static void start_helper(struct fixture *f)
{
	if (pthread_create(&f->helper, NULL, helper_main, f))
		die("pthread_create");
	f->helper_joinable = true;
}
static void end_helper(struct fixture *f) { write_byte(f->helper_pipe[1]); }
static bool task_alive(pid_t tid);
/* A helper that has ended, as a kernel task too: a join need not wait. */
static void finished_helper(struct fixture *f)
{
	start_helper(f);
	end_helper(f);
	while (!atomic_load(&f->helper_tid) || task_alive(atomic_load(&f->helper_tid)))
		usleep(1000);
}
static void child_waiting(struct fixture *f)
{
	f->child = fork();
	if (f->child < 0)
		die("fork");
	if (f->child == 0) {
		char byte;

		close(f->child_pipe[1]);
		while (read(f->child_pipe[0], &byte, 1) < 0 && errno == EINTR)
			;
		_exit(3);
	}
}
static void end_child(struct fixture *f) { close(f->child_pipe[1]); f->child_pipe[1] = open("/dev/null", O_WRONLY); }
static void child_exited(struct fixture *f)
{
	char path[64], line[256];

	child_waiting(f);
	end_child(f);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)f->child);
	for (int i = 0; i < 10000; i++) {
		FILE *file = fopen(path, "r");
		char *paren;
		bool zombie = false;

		if (file && fgets(line, sizeof(line), file) && (paren = strrchr(line, ')')))
			zombie = paren[2] == 'Z';
		if (file)
			fclose(file);
		if (zombie)
			return;
		usleep(1000);
	}
}
static void signal_usr2(struct fixture *f) { pthread_kill(f->waiter, SIGUSR2); }
static void pending_usr2(struct fixture *f) { (void)f; kill(getpid(), SIGUSR2); }
static void signal_usr1(struct fixture *f) { pthread_kill(f->waiter, SIGUSR1); }
static void half_message(struct fixture *f) { if (write(f->sock[1], "ab", 2) != 2) die("write"); }
static void rest_of_message(struct fixture *f) { if (write(f->sock[1], "cd", 2) != 2) die("write"); }
static void whole_message(struct fixture *f) { half_message(f); rest_of_message(f); }
static void futex_set(struct fixture *f) { __atomic_store_n(&f->futex_word, 1, __ATOMIC_RELEASE); }
static void futex_wake(struct fixture *f)
{
	futex_set(f);
	syscall(SYS_futex, &f->futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* ---- the calls ---- */

#define ERRNO_RESULT(expression)        \
	do {                            \
		long r_ = (expression); \
		*error = r_ < 0 ? errno : 0; \
		return r_;              \
	} while (0)
#define PTHREAD_RESULT(expression)       \
	do {                             \
		volatile int r_ = (expression); \
		*error = r_;             \
		return r_;               \
	} while (0)

static long call_mutex_lock(struct fixture *f, int *error)
{
	int r = pthread_mutex_lock(&f->mutex);

	if (r == 0)
		pthread_mutex_unlock(&f->mutex);
	PTHREAD_RESULT(r);
}
static long call_mutex_timedlock(struct fixture *f, int *error)
{
	struct timespec t = in_seconds(CLOCK_REALTIME, LONG_WAIT_S);
	int r = pthread_mutex_timedlock(&f->mutex, &t);

	if (r == 0)
		pthread_mutex_unlock(&f->mutex);
	PTHREAD_RESULT(r);
}
static long call_mutex_clocklock(struct fixture *f, int *error)
{
	struct timespec t = in_seconds(CLOCK_MONOTONIC, LONG_WAIT_S);
	int r = pthread_mutex_clocklock(&f->mutex, CLOCK_MONOTONIC, &t);

	if (r == 0)
		pthread_mutex_unlock(&f->mutex);
	PTHREAD_RESULT(r);
}

/* C11's calls on the same objects (glibc's mtx_t and cnd_t are its
 * pthread mutex and condvar); their results are thrd_* codes. */
static long call_mtx_lock(struct fixture *f, int *error)
{
	int r = mtx_lock((mtx_t *)&f->mutex);

	if (r == thrd_success)
		mtx_unlock((mtx_t *)&f->mutex);
	PTHREAD_RESULT(r);
}
static long call_mtx_timedlock(struct fixture *f, int *error)
{
	struct timespec t = in_seconds(CLOCK_REALTIME, LONG_WAIT_S);
	int r = mtx_timedlock((mtx_t *)&f->mutex, &t);

	if (r == thrd_success)
		mtx_unlock((mtx_t *)&f->mutex);
	PTHREAD_RESULT(r);
}

#define RWLOCK_CALL(name, expression)                               \
	static long call_##name(struct fixture *f, int *error)      \
	{                                                           \
		struct timespec rt = in_seconds(CLOCK_REALTIME, LONG_WAIT_S);  \
		struct timespec mt = in_seconds(CLOCK_MONOTONIC, LONG_WAIT_S); \
		int r = (expression);                               \
		(void)rt;                                           \
		(void)mt;                                           \
		if (r == 0)                                         \
			pthread_rwlock_unlock(&f->rwlock);          \
		PTHREAD_RESULT(r);                                  \
	}
RWLOCK_CALL(rdlock, pthread_rwlock_rdlock(&f->rwlock))
RWLOCK_CALL(wrlock, pthread_rwlock_wrlock(&f->rwlock))
RWLOCK_CALL(timedrdlock, pthread_rwlock_timedrdlock(&f->rwlock, &rt))
RWLOCK_CALL(timedwrlock, pthread_rwlock_timedwrlock(&f->rwlock, &rt))
RWLOCK_CALL(clockrdlock, pthread_rwlock_clockrdlock(&f->rwlock, CLOCK_MONOTONIC, &mt))
RWLOCK_CALL(clockwrlock, pthread_rwlock_clockwrlock(&f->rwlock, CLOCK_MONOTONIC, &mt))

static void unlock_cleanup(void *mutex)
{
	pthread_mutex_unlock(mutex);
}

#define COND_CALL(name, expression)                                        \
	static long call_##name(struct fixture *f, int *error)             \
	{                                                                  \
		struct timespec rt = in_seconds(CLOCK_REALTIME, LONG_WAIT_S);  \
		struct timespec mt = in_seconds(CLOCK_MONOTONIC, LONG_WAIT_S); \
		volatile int r = 0;                                        \
		(void)rt;                                                  \
		(void)mt;                                                  \
		pthread_mutex_lock(&f->mutex);                             \
		pthread_cleanup_push(unlock_cleanup, &f->mutex);           \
		if (!f->cond_flag)                                         \
			r = (expression);                                  \
		pthread_cleanup_pop(1);                                    \
		PTHREAD_RESULT(r);                                         \
	}
COND_CALL(cond_wait, pthread_cond_wait(&f->cond, &f->mutex))
COND_CALL(cond_timedwait, pthread_cond_timedwait(&f->cond, &f->mutex, &rt))
COND_CALL(cond_clockwait, pthread_cond_clockwait(&f->cond, &f->mutex, CLOCK_MONOTONIC, &mt))
COND_CALL(cnd_wait, cnd_wait((cnd_t *)&f->cond, (mtx_t *)&f->mutex))
COND_CALL(cnd_timedwait, cnd_timedwait((cnd_t *)&f->cond, (mtx_t *)&f->mutex, &rt))

static long call_barrier(struct fixture *f, int *error)
{
	int r = pthread_barrier_wait(&f->barrier);

	PTHREAD_RESULT(r == PTHREAD_BARRIER_SERIAL_THREAD ? 0 : r);
}

static long joined(struct fixture *f, int r, void *value, int *error)
{
	if (r == 0)
		f->helper_joinable = false;
	*error = r;
	return r == 0 ? (long)value : -r;
}
static long call_join(struct fixture *f, int *error)
{
	void *value = NULL;
	int r = pthread_join(f->helper, &value);

	return joined(f, r, value, error);
}
static long call_thrd_join(struct fixture *f, int *error)
{
	int value = 0;
	int r = thrd_join((thrd_t)f->helper, &value);

	return joined(f, r == thrd_success ? 0 : r, (void *)(long)value, error);
}
static long call_timedjoin(struct fixture *f, int *error)
{
	struct timespec t = in_seconds(CLOCK_REALTIME, LONG_WAIT_S);
	void *value = NULL;
	int r = pthread_timedjoin_np(f->helper, &value, &t);

	return joined(f, r, value, error);
}
static long call_clockjoin(struct fixture *f, int *error)
{
	struct timespec t = in_seconds(CLOCK_MONOTONIC, LONG_WAIT_S);
	void *value = NULL;
	int r = pthread_clockjoin_np(f->helper, &value, CLOCK_MONOTONIC, &t);

	return joined(f, r, value, error);
}

static long call_sem_wait(struct fixture *f, int *error) { ERRNO_RESULT(sem_wait(&f->sem)); }
static long call_sem_timedwait(struct fixture *f, int *error)
{
	struct timespec t = in_seconds(CLOCK_REALTIME, LONG_WAIT_S);

	ERRNO_RESULT(sem_timedwait(&f->sem, &t));
}
static long call_sem_clockwait(struct fixture *f, int *error)
{
	struct timespec t = in_seconds(CLOCK_MONOTONIC, LONG_WAIT_S);

	ERRNO_RESULT(sem_clockwait(&f->sem, CLOCK_MONOTONIC, &t));
}

/* Sleeps: "ready" means a zero duration.  Results say whether time
 * remained, not how much (that depends on timing). */
static int sleep_seconds;
static void zero_sleep(struct fixture *f) { (void)f; sleep_seconds = 0; }
static void long_sleep(struct fixture *f) { (void)f; sleep_seconds = LONG_WAIT_S; }
static long call_sleep(struct fixture *f, int *error)
{
	unsigned int left = sleep(sleep_seconds);

	*error = 0;
	return left > 0;
}
static long call_usleep(struct fixture *f, int *error) { ERRNO_RESULT(usleep((useconds_t)sleep_seconds * 1000000u)); }
static long call_nanosleep(struct fixture *f, int *error)
{
	struct timespec t = { sleep_seconds, 0 }, left = { 0, 0 };
	int r = nanosleep(&t, &left);

	*error = r < 0 ? errno : 0;
	return r < 0 ? (left.tv_sec > 0 || left.tv_nsec > 0 ? -100 : -101) : r;
}
static long call_thrd_sleep(struct fixture *f, int *error)
{
	struct timespec t = { sleep_seconds, 0 }, left = { 0, 0 };
	int r = thrd_sleep(&t, &left);

	*error = r;
	return r ? (left.tv_sec > 0 || left.tv_nsec > 0 ? 100 : 101) : 0;
}
static long call_clock_nanosleep(struct fixture *f, int *error)
{
	struct timespec t = { sleep_seconds, 0 }, left = { 0, 0 };
	int r = clock_nanosleep(CLOCK_MONOTONIC, 0, &t, &left);

	*error = r;
	return r ? (left.tv_sec > 0 || left.tv_nsec > 0 ? 100 : 101) : 0;
}
static long call_clock_nanosleep_abs(struct fixture *f, int *error)
{
	struct timespec t = in_seconds(CLOCK_MONOTONIC, sleep_seconds);

	if (sleep_seconds == 0)
		t.tv_sec -= 1;
	PTHREAD_RESULT(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL));
}

static long call_poll(struct fixture *f, int *error)
{
	struct pollfd p = { .fd = f->pipe[0], .events = POLLIN };
	int r = poll(&p, 1, -1);

	*error = r < 0 ? errno : 0;
	return r > 0 ? r * 1000 + p.revents : r;
}
static long call_ppoll(struct fixture *f, int *error)
{
	struct pollfd p = { .fd = f->pipe[0], .events = POLLIN };
	int r = ppoll(&p, 1, NULL, NULL);

	*error = r < 0 ? errno : 0;
	return r > 0 ? r * 1000 + p.revents : r;
}
static long call_select(struct fixture *f, int *error)
{
	fd_set set;

	FD_ZERO(&set);
	FD_SET(f->pipe[0], &set);
	ERRNO_RESULT(select(f->pipe[0] + 1, &set, NULL, NULL, NULL));
}
static long call_pselect(struct fixture *f, int *error)
{
	fd_set set;

	FD_ZERO(&set);
	FD_SET(f->pipe[0], &set);
	ERRNO_RESULT(pselect(f->pipe[0] + 1, &set, NULL, NULL, NULL, NULL));
}
static long call_epoll_wait(struct fixture *f, int *error)
{
	struct epoll_event e;

	ERRNO_RESULT(epoll_wait(f->epoll, &e, 1, -1));
}
static long call_epoll_pwait(struct fixture *f, int *error)
{
	struct epoll_event e;

	ERRNO_RESULT(epoll_pwait(f->epoll, &e, 1, -1, NULL));
}
static long call_epoll_pwait2(struct fixture *f, int *error)
{
	struct epoll_event e;

	ERRNO_RESULT(epoll_pwait2(f->epoll, &e, 1, NULL, NULL));
}

static sigset_t usr2_set(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	return set;
}
static long call_sigwait(struct fixture *f, int *error)
{
	sigset_t set = usr2_set();
	int number = 0, r = sigwait(&set, &number);

	*error = r;
	return r ? -r : number;
}
static long call_sigwaitinfo(struct fixture *f, int *error)
{
	sigset_t set = usr2_set();

	ERRNO_RESULT(sigwaitinfo(&set, NULL));
}
static long call_sigtimedwait(struct fixture *f, int *error)
{
	sigset_t set = usr2_set();
	struct timespec t = { LONG_WAIT_S, 0 };

	ERRNO_RESULT(sigtimedwait(&set, NULL, &t));
}
static long call_sigsuspend(struct fixture *f, int *error)
{
	sigset_t mask;

	sigfillset(&mask);
	sigdelset(&mask, SIGUSR1);
	ERRNO_RESULT(sigsuspend(&mask));
}
static long call_pause(struct fixture *f, int *error) { ERRNO_RESULT(pause()); }

static long child_result(struct fixture *f, pid_t r, int status, int *error)
{
	*error = r < 0 ? errno : 0;
	if (r == f->child) {
		f->child = -1;
		return 1000 + (WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status));
	}
	return r;
}
static long call_wait(struct fixture *f, int *error)
{
	int status = 0;
	pid_t r = wait(&status);

	return child_result(f, r, status, error);
}
static long call_waitpid(struct fixture *f, int *error)
{
	int status = 0;
	pid_t r = waitpid(f->child, &status, 0);

	return child_result(f, r, status, error);
}
static long call_waitid(struct fixture *f, int *error)
{
	siginfo_t info;
	int r;

	memset(&info, 0, sizeof(info));
	r = waitid(P_PID, (id_t)f->child, &info, WEXITED);
	*error = r < 0 ? errno : 0;
	if (r == 0 && info.si_pid == f->child) {
		f->child = -1;
		return 1000 + info.si_status;
	}
	return r;
}
static long call_wait4(struct fixture *f, int *error)
{
	struct rusage usage;
	int status = 0;
	pid_t r = wait4(f->child, &status, 0, &usage);

	return child_result(f, r, status, error);
}
static long call_wait3(struct fixture *f, int *error)
{
	int status = 0;
	pid_t r = wait3(&status, 0, NULL);

	return child_result(f, r, status, error);
}

static long fd_result(long r, int *error)
{
	*error = r < 0 ? errno : 0;
	if (r >= 0)
		close((int)r);
	return r >= 0 ? 0 : r;
}
static long call_poll_chk(struct fixture *f, int *error)
{
	struct pollfd p = { .fd = f->pipe[0], .events = POLLIN };
	int r = __poll_chk(&p, 1, -1, sizeof(p));

	*error = r < 0 ? errno : 0;
	return r > 0 ? r * 1000 + p.revents : r;
}
static long call_ppoll_chk(struct fixture *f, int *error)
{
	struct pollfd p = { .fd = f->pipe[0], .events = POLLIN };
	int r = __ppoll_chk(&p, 1, NULL, NULL, sizeof(p));

	*error = r < 0 ? errno : 0;
	return r > 0 ? r * 1000 + p.revents : r;
}
/* A futex wait through syscall(), as C++20's atomic wait and Rust's std
 * make it. */
static long call_syscall(struct fixture *f, int *error)
{
	ERRNO_RESULT(syscall(SYS_futex, &f->futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0));
}
static long call_accept(struct fixture *f, int *error) { return fd_result(accept(f->listener, NULL, NULL), error); }
static long call_accept4(struct fixture *f, int *error)
{
	return fd_result(accept4(f->listener, NULL, NULL, SOCK_CLOEXEC), error);
}
static long call_read(struct fixture *f, int *error)
{
	char buffer[8];

	ERRNO_RESULT(read(f->pipe[0], buffer, sizeof(buffer)));
}
static long call_readv(struct fixture *f, int *error)
{
	char buffer[8];
	struct iovec v = { buffer, sizeof(buffer) };

	ERRNO_RESULT(readv(f->pipe[0], &v, 1));
}
static long call_read_chk(struct fixture *f, int *error)
{
	char buffer[8];

	ERRNO_RESULT(__read_chk(f->pipe[0], buffer, sizeof(buffer), sizeof(buffer)));
}
static long call_recv_chk(struct fixture *f, int *error)
{
	char buffer[8];

	ERRNO_RESULT(__recv_chk(f->sock[0], buffer, sizeof(buffer), sizeof(buffer), 0));
}
static long call_recvfrom_chk(struct fixture *f, int *error)
{
	char buffer[8];

	ERRNO_RESULT(__recvfrom_chk(f->sock[0], buffer, sizeof(buffer), sizeof(buffer), 0, NULL, NULL));
}
static long call_recv(struct fixture *f, int *error)
{
	char buffer[8];

	ERRNO_RESULT(recv(f->sock[0], buffer, sizeof(buffer), 0));
}
static long call_recv_waitall(struct fixture *f, int *error)
{
	char buffer[4];

	ERRNO_RESULT(recv(f->sock[0], buffer, sizeof(buffer), MSG_WAITALL));
}
static long call_recvfrom(struct fixture *f, int *error)
{
	char buffer[8];

	ERRNO_RESULT(recvfrom(f->sock[0], buffer, sizeof(buffer), 0, NULL, NULL));
}
static long call_recvmsg(struct fixture *f, int *error)
{
	char buffer[8];
	struct iovec v = { buffer, sizeof(buffer) };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };

	ERRNO_RESULT(recvmsg(f->sock[0], &m, 0));
}

static const struct wait_case cases[] = {
	{ "pthread_mutex_lock", hold_mutex, call_mutex_lock, free_mutex, nothing },
	{ "pthread_mutex_timedlock", hold_mutex, call_mutex_timedlock, free_mutex, nothing },
	{ "pthread_mutex_clocklock", hold_mutex, call_mutex_clocklock, free_mutex, nothing },
	{ "mtx_lock", hold_mutex, call_mtx_lock, free_mutex, nothing },
	{ "mtx_timedlock", hold_mutex, call_mtx_timedlock, free_mutex, nothing },
	{ "pthread_rwlock_rdlock", hold_write, call_rdlock, free_rwlock, hold_read },
	{ "pthread_rwlock_wrlock", hold_read, call_wrlock, free_rwlock, nothing },
	{ "pthread_rwlock_timedrdlock", hold_write, call_timedrdlock, free_rwlock, hold_read },
	{ "pthread_rwlock_timedwrlock", hold_read, call_timedwrlock, free_rwlock, nothing },
	{ "pthread_rwlock_clockrdlock", hold_write, call_clockrdlock, free_rwlock, hold_read },
	{ "pthread_rwlock_clockwrlock", hold_read, call_clockwrlock, free_rwlock, nothing },
	{ "pthread_cond_wait", nothing, call_cond_wait, signal_cond, NULL },
	{ "pthread_cond_timedwait", nothing, call_cond_timedwait, signal_cond, NULL },
	{ "pthread_cond_clockwait", nothing, call_cond_clockwait, signal_cond, NULL },
	{ "cnd_wait", nothing, call_cnd_wait, signal_cond, NULL },
	{ "cnd_timedwait", nothing, call_cnd_timedwait, signal_cond, NULL },
	{ "pthread_barrier_wait", nothing, call_barrier, barrier_arrive, NULL },
	{ "pthread_join", start_helper, call_join, end_helper, finished_helper },
	{ "thrd_join", start_helper, call_thrd_join, end_helper, finished_helper },
	{ "pthread_timedjoin_np", start_helper, call_timedjoin, end_helper, finished_helper },
	{ "pthread_clockjoin_np", start_helper, call_clockjoin, end_helper, finished_helper },
	{ "sem_wait", nothing, call_sem_wait, post_sem, post_sem },
	{ "sem_timedwait", nothing, call_sem_timedwait, post_sem, post_sem },
	{ "sem_clockwait", nothing, call_sem_clockwait, post_sem, post_sem },
	{ "sleep", long_sleep, call_sleep, NULL, zero_sleep },
	{ "usleep", long_sleep, call_usleep, NULL, zero_sleep },
	{ "nanosleep", long_sleep, call_nanosleep, NULL, zero_sleep },
	{ "clock_nanosleep", long_sleep, call_clock_nanosleep, NULL, zero_sleep },
	{ "thrd_sleep", long_sleep, call_thrd_sleep, NULL, zero_sleep },
	{ "clock_nanosleep_abstime", long_sleep, call_clock_nanosleep_abs, NULL, zero_sleep },
	{ "poll", nothing, call_poll, fill_pipe, fill_pipe },
	{ "ppoll", nothing, call_ppoll, fill_pipe, fill_pipe },
	{ "select", nothing, call_select, fill_pipe, fill_pipe },
	{ "pselect", nothing, call_pselect, fill_pipe, fill_pipe },
	{ "epoll_wait", nothing, call_epoll_wait, fill_pipe, fill_pipe },
	{ "epoll_pwait", nothing, call_epoll_pwait, fill_pipe, fill_pipe },
	{ "epoll_pwait2", nothing, call_epoll_pwait2, fill_pipe, fill_pipe },
	{ "sigwait", nothing, call_sigwait, signal_usr2, pending_usr2 },
	{ "sigwaitinfo", nothing, call_sigwaitinfo, signal_usr2, pending_usr2 },
	{ "sigtimedwait", nothing, call_sigtimedwait, signal_usr2, pending_usr2 },
	{ "sigsuspend", nothing, call_sigsuspend, signal_usr1, NULL },
	{ "pause", nothing, call_pause, signal_usr1, NULL },
	{ "wait", child_waiting, call_wait, end_child, child_exited },
	{ "waitpid", child_waiting, call_waitpid, end_child, child_exited },
	{ "waitid", child_waiting, call_waitid, end_child, child_exited },
	{ "wait3", child_waiting, call_wait3, end_child, child_exited },
	{ "wait4", child_waiting, call_wait4, end_child, child_exited },
	{ "accept", nothing, call_accept, connect_listener, connect_listener },
	{ "accept4", nothing, call_accept4, connect_listener, connect_listener },
	{ "read", nothing, call_read, fill_pipe, fill_pipe },
	{ "readv", nothing, call_readv, fill_pipe, fill_pipe },
	{ "recv", nothing, call_recv, fill_socket, fill_socket },
	{ "recv_waitall", half_message, call_recv_waitall, rest_of_message, whole_message },
	{ "recvfrom", nothing, call_recvfrom, fill_socket, fill_socket },
	{ "recvmsg", nothing, call_recvmsg, fill_socket, fill_socket },
	{ "__poll_chk", nothing, call_poll_chk, fill_pipe, fill_pipe },
	{ "__ppoll_chk", nothing, call_ppoll_chk, fill_pipe, fill_pipe },
	{ "__read_chk", nothing, call_read_chk, fill_pipe, fill_pipe },
	{ "__recv_chk", nothing, call_recv_chk, fill_socket, fill_socket },
	{ "__recvfrom_chk", nothing, call_recvfrom_chk, fill_socket, fill_socket },
	{ "syscall", nothing, call_syscall, futex_wake, futex_set },
};

/* ---- watching the waiting thread from outside ---- */

struct run {
	const struct wait_case *wait_case;
	struct fixture fixture;
	bool pending_cancel;
	_Atomic pid_t tid;
	atomic_int done;
	long result;
	int error;
};

static char task_state(pid_t tid)
{
	char path[64], line[512];
	char state = 0;
	FILE *file;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	file = fopen(path, "r");
	if (!file)
		return 0;
	if (fgets(line, sizeof(line), file)) {
		char *paren = strrchr(line, ')');

		if (paren && paren[1] == ' ')
			state = paren[2];
	}
	fclose(file);
	return state;
}

static bool task_alive(pid_t tid)
{
	char state = task_state(tid);

	return state != 0 && state != 'Z' && state != 'X';
}

/* Whether signal `number` is pending for the task itself. */
static bool task_signal_pending(pid_t tid, int number)
{
	char path[64], line[256];
	bool pending = false;
	FILE *file;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	file = fopen(path, "r");
	if (!file)
		return false;
	while (fgets(line, sizeof(line), file))
		if (!strncmp(line, "SigPnd:", 7)) {
			unsigned long long mask = strtoull(line + 7, NULL, 16);

			pending = (mask >> (number - 1)) & 1;
		}
	fclose(file);
	return pending;
}

/* Waits until the call returned, the thread ended, or it sleeps in the
 * kernel (seen twice, a few ms apart).  Returns true when it still waits. */
static bool settle(struct run *run)
{
	pid_t tid = atomic_load(&run->tid);
	int asleep = 0;

	for (int i = 0; i < 20000; i++) {
		char state;

		if (atomic_load(&run->done) || (tid && !task_alive(tid)))
			return false;
		state = tid ? task_state(tid) : 0;
		asleep = state == 'S' ? asleep + 1 : 0;
		if (asleep >= 3)
			return true;
		usleep(2000);
	}
	fprintf(stderr, "rel_waits: %s: the thread neither waits nor returns\n", run->wait_case->name);
	exit(3);
}

static void *waiter_main(void *argument)
{
	struct run *run = argument;

	atomic_store(&run->tid, gettid());
	if (run->pending_cancel) {
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		pthread_cancel(pthread_self());
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	}
	run->result = run->wait_case->call(&run->fixture, &run->error);
	atomic_store(&run->done, 1);
	return NULL;
}

enum treatment { CANCEL_BLOCKED, CANCEL_PENDING, CANCEL_READY, EINTR_PLAIN, EINTR_RESTART, TREATMENTS };
static const char *const treatment_names[] = { "cancel-blocked", "cancel-pending", "cancel-ready", "eintr",
					       "eintr-restart" };

static void install_handler(bool restart)
{
	struct sigaction action;

	memset(&action, 0, sizeof(action));
	action.sa_handler = on_signal;
	action.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&action.sa_mask);
	sigaction(SIGUSR1, &action, NULL);
}

/* A SIGUSR2 a cancelled sigwait left pending would change the next case. */
static void drain_usr2(void)
{
	sigset_t set = usr2_set();
	struct timespec zero = { 0, 0 };

	while (sigtimedwait(&set, NULL, &zero) > 0)
		;
}

static void run_case(const struct wait_case *wait_case, enum treatment treatment)
{
	struct run *run = calloc(1, sizeof(*run));
	const char *before = "";
	void *value = NULL;
	bool waits;

	if (treatment == CANCEL_READY && !wait_case->ready) {
		free(run);
		return;
	}
	run->wait_case = wait_case;
	run->pending_cancel = treatment == CANCEL_PENDING || treatment == CANCEL_READY;
	install_handler(treatment == EINTR_RESTART);
	handled = 0;
	fixture_init(&run->fixture);
	if (treatment == CANCEL_READY)
		wait_case->ready(&run->fixture);
	else
		wait_case->setup(&run->fixture);
	if (pthread_create(&run->fixture.waiter, NULL, waiter_main, run))
		die("pthread_create");
	while (!atomic_load(&run->tid))
		sched_yield();
	waits = settle(run);
	if (waits && treatment == CANCEL_BLOCKED) {
		pthread_cancel(run->fixture.waiter);
		while (task_alive(run->tid) && task_signal_pending(run->tid, GLIBC_SIGCANCEL))
			usleep(1000);
		waits = settle(run);
	} else if (waits && (treatment == EINTR_PLAIN || treatment == EINTR_RESTART)) {
		pthread_kill(run->fixture.waiter, SIGUSR1);
		while (!handled)
			usleep(1000);
		waits = settle(run);
	}
	if (waits) {
		before = " after release";
		if (wait_case->release)
			wait_case->release(&run->fixture);
		else
			pthread_cancel(run->fixture.waiter);
	}
	pthread_join(run->fixture.waiter, &value);
	/* A semaphore's waiter count (glibc's word, high half): a waiter
	 * that left (cancelled, interrupted, timed out) unregistered itself. */
	char after[64] = "";
	if (!strncmp(wait_case->name, "sem_", 4)) {
		uint64_t word;
		memcpy(&word, &run->fixture.sem, sizeof(word));
		snprintf(after, sizeof(after), ", semaphore waiters %u", (unsigned int)(word >> 32));
	}
	if (value == PTHREAD_CANCELED)
		printf("%s %s: cancelled%s%s\n", treatment_names[treatment], wait_case->name, before, after);
	else
		printf("%s %s: returned %ld error %s%s%s\n", treatment_names[treatment], wait_case->name, run->result,
		       run->error ? strerrorname_np(run->error) : "0", before, after);
	fflush(stdout);
	/* A waiter cancelled in a condvar wait re-took the mutex and its
	 * cleanup handler released it; one still holding something leaves it
	 * to the next fixture, which is fresh. */
	if (run->fixture.holds == 1)
		free_mutex(&run->fixture);
	else if (run->fixture.holds == 2)
		free_rwlock(&run->fixture);
	drain_usr2();
	fixture_destroy(&run->fixture);
	/* run (and the objects in it) is not freed: a cancelled waiter may
	 * have left a lock or condvar in use. */
}

/* Every waiting call of runtime/calls.def has a case (the table's
 * names, in its order). */
static const char *const waiting_calls[] = {
#define TDSHIM_CALL_GROUP(id, title)
#define TDSHIM_CALL(name, group, real, ret, params)
#define TDSHIM_WAIT_CALL(name, kind, group, real, ret, params) #name,
#include "calls.def"
#undef TDSHIM_WAIT_CALL
#undef TDSHIM_CALL
#undef TDSHIM_CALL_GROUP
};

static int check_cases(void)
{
	int missing = 0;

	for (size_t c = 0; c < sizeof(waiting_calls) / sizeof(waiting_calls[0]); c++) {
		size_t i = 0;

		while (i < sizeof(cases) / sizeof(cases[0]) && strcmp(cases[i].name, waiting_calls[c]))
			i++;
		if (i == sizeof(cases) / sizeof(cases[0])) {
			printf("rel_waits: no case for %s, a waiting call of runtime/calls.def\n", waiting_calls[c]);
			missing++;
		}
	}
	printf("%s: %zu waiting calls, %d without a case\n", missing ? "FAIL" : "ok",
	       sizeof(waiting_calls) / sizeof(waiting_calls[0]), missing);
	return missing ? 1 : 0;
}

int main(int argc, char **argv)
{
	sigset_t usr2 = usr2_set();
	int checks = 0;

	if (argc == 2 && !strcmp(argv[1], "--cases"))
		return check_cases();

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* SIGUSR2 is only ever taken by sigwait and friends. */
	pthread_sigmask(SIG_BLOCK, &usr2, NULL);
	for (int t = 0; t < TREATMENTS; t++) {
		if (argc > 1 && strcmp(argv[1], treatment_names[t]))
			continue;
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			if (argc > 2 && strcmp(argv[2], cases[i].name))
				continue;
			run_case(&cases[i], (enum treatment)t);
			checks++;
		}
	}
	printf("done: %d runs\n", checks);
	return 0;
}
