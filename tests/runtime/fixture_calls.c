/* SPDX-License-Identifier: MIT */
/*
 * rt_calls MODE CALL: one interposed call, observed through the region.
 *
 *   nowait: the call can finish at once (set up by `ready`); the main
 *           thread makes it and prints its record's seq before and after:
 *           a call that does not wait must not write the record.
 *   wait:   a thread makes the call when it must wait; the main thread
 *           waits until that thread's record says BLOCKED, then releases
 *           it; the thread prints its own state before and after.
 *
 * CALL is the interposed call's name (runtime/calls.def), or a variant
 * (mutex_recursive, mutex_errorcheck, read_file).
 *
 * Output: seq_before, seq_after, state_before, observed, observed_kind
 * (the wait kind the record says while BLOCKED), state_after, result (ok
 * when the call returned what it must), all as key=value; form=none when
 * the call has no such form (it always waits, or never does).
 */
#define _GNU_SOURCE
#include "fixture.h"
#include "fortified.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

/* Everything a case may need, set up once. */
static struct {
	pthread_mutex_t mutex;
	pthread_mutex_t recursive;
	pthread_mutex_t errorcheck;
	pthread_rwlock_t rwlock;
	pthread_cond_t cond;
	pthread_barrier_t barrier;
	sem_t sem;
	sem_t gate;          /* keeps a join target alive until released */
	int pipe[2];
	int sockets[2];
	int listener;
	struct sockaddr_un address;
	int epoll;
	pthread_t target;    /* a thread to join */
	pid_t child;         /* a process to wait for */
	int child_pipe[2];   /* the child exits when this gets a byte */
	bool flag;
	int futex_word;       /* syscall: a futex word (0: wait) */
	pid_t caller_tid;    /* thread making the call in wait mode */
	pthread_t caller;
	int done;            /* the call returned (wait mode) */
	volatile sig_atomic_t interrupted;
} fx;

static struct timespec far_future(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	ts.tv_sec += 3600;
	return ts;
}

static void on_sigusr1(int signal)
{
	(void)signal;
	fx.interrupted = 1;
}

/* ---- readiness and release actions ---- */

static void none(void)
{
}

static void lock_mutex(void)
{
	pthread_mutex_lock(&fx.mutex);
}

static void unlock_mutex(void)
{
	pthread_mutex_unlock(&fx.mutex);
}

static void lock_recursive(void)
{
	pthread_mutex_lock(&fx.recursive);
}

static void unlock_recursive(void)
{
	pthread_mutex_unlock(&fx.recursive);
}

static void lock_errorcheck(void)
{
	pthread_mutex_lock(&fx.errorcheck);
}

static void unlock_errorcheck(void)
{
	pthread_mutex_unlock(&fx.errorcheck);
}

static void write_lock(void)
{
	pthread_rwlock_wrlock(&fx.rwlock);
}

static void read_lock(void)
{
	pthread_rwlock_rdlock(&fx.rwlock);
}

static void unlock_rwlock(void)
{
	pthread_rwlock_unlock(&fx.rwlock);
}

static void post_sem(void)
{
	sem_post(&fx.sem);
}

static void write_pipe(void)
{
	if (write(fx.pipe[1], "x", 1) != 1)
		fx_die("write pipe");
}

static void send_socket(void)
{
	if (send(fx.sockets[1], "x", 1, 0) != 1)
		fx_die("send");
}

static void connect_listener(void)
{
	int client = socket(AF_UNIX, SOCK_STREAM, 0);

	if (client < 0 || connect(client, (struct sockaddr *)&fx.address, sizeof(fx.address)))
		fx_die("connect: %s", strerror(errno));
	/* left open: the accepted end must see a live peer */
}

static void *join_target_body(void *arg)
{
	(void)arg;
	sem_wait(&fx.gate);
	return (void *)7;
}

static bool task_exists(pid_t tid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
	return stat(path, &st) == 0;
}

static void *finished_target_body(void *arg)
{
	*(pid_t *)arg = fx_gettid();
	return (void *)7;
}

/* A thread that has ended: the kernel dropped its task, so a join of it
 * cannot wait. */
static void finished_target(void)
{
	static pid_t tid;
	uint64_t deadline = fx_now_ns() + FX_TIMEOUT_MS * 1000000ull;

	__atomic_store_n(&tid, 0, __ATOMIC_SEQ_CST);
	pthread_create(&fx.target, NULL, finished_target_body, &tid);
	while (!__atomic_load_n(&tid, __ATOMIC_SEQ_CST) || task_exists(tid)) {
		if (fx_now_ns() > deadline)
			fx_die("joined thread did not end");
		sched_yield();
	}
}

static void blocked_target(void)
{
	pthread_create(&fx.target, NULL, join_target_body, NULL);
}

static void open_gate(void)
{
	sem_post(&fx.gate);
}

static char process_state(pid_t pid)
{
	char path[64], text[512], *paren;
	int fd;
	ssize_t got;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return '?';
	got = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	if (got <= 0)
		return '?';
	text[got] = '\0';
	paren = strrchr(text, ')');
	return paren && paren[1] ? paren[2] : '?';
}

static void start_child(bool exit_now)
{
	if (pipe(fx.child_pipe))
		fx_die("pipe");
	fx.child = fork();
	if (fx.child < 0)
		fx_die("fork");
	if (fx.child == 0) {
		char byte;

		if (!exit_now)
			while (read(fx.child_pipe[0], &byte, 1) < 0 && errno == EINTR)
				;
		_exit(7);
	}
}

/* A child that has exited and not been reaped: a zombie. */
static void exited_child(void)
{
	uint64_t deadline = fx_now_ns() + FX_TIMEOUT_MS * 1000000ull;

	start_child(true);
	while (process_state(fx.child) != 'Z') {
		if (fx_now_ns() > deadline)
			fx_die("child did not exit");
		sched_yield();
	}
}

static void waiting_child(void)
{
	start_child(false);
}

static void release_child(void)
{
	if (write(fx.child_pipe[1], "x", 1) != 1)
		fx_die("write child pipe");
}

static void pending_signal(void)
{
	kill(getpid(), SIGUSR2);
}

static void set_flag(void)
{
	pthread_mutex_lock(&fx.mutex);
	fx.flag = true;
	pthread_cond_signal(&fx.cond);
	pthread_mutex_unlock(&fx.mutex);
}

static void meet_barrier(void)
{
	pthread_barrier_wait(&fx.barrier);
}

/* Signals the caller until its call returns: a signal that lands just
 * before the call starts would otherwise be lost. */
static void interrupt_caller(void)
{
	uint64_t deadline = fx_now_ns() + FX_TIMEOUT_MS * 1000000ull;

	while (!__atomic_load_n(&fx.done, __ATOMIC_SEQ_CST)) {
		if (fx_now_ns() > deadline)
			fx_die("interrupted call did not return");
		pthread_kill(fx.caller, SIGUSR1);
		fx_spin_ns(20 * 1000000ull);
	}
}

/* ---- the calls: true when the result is what it must be ---- */

static bool call_mutex_lock(void)
{
	return pthread_mutex_lock(&fx.mutex) == 0 && pthread_mutex_unlock(&fx.mutex) == 0;
}

static bool call_mutex_timedlock(void)
{
	struct timespec at = far_future(CLOCK_REALTIME);

	return pthread_mutex_timedlock(&fx.mutex, &at) == 0 && pthread_mutex_unlock(&fx.mutex) == 0;
}

static bool call_mutex_clocklock(void)
{
	struct timespec at = far_future(CLOCK_MONOTONIC);

	return pthread_mutex_clocklock(&fx.mutex, CLOCK_MONOTONIC, &at) == 0 &&
	       pthread_mutex_unlock(&fx.mutex) == 0;
}

static bool call_mutex_recursive(void)
{
	return pthread_mutex_lock(&fx.recursive) == 0 && pthread_mutex_lock(&fx.recursive) == 0 &&
	       pthread_mutex_unlock(&fx.recursive) == 0 && pthread_mutex_unlock(&fx.recursive) == 0;
}

/* The second lock fails at once with EDEADLK: it must not wait. */
static bool call_mutex_errorcheck(void)
{
	return pthread_mutex_lock(&fx.errorcheck) == 0 &&
	       pthread_mutex_lock(&fx.errorcheck) == EDEADLK &&
	       pthread_mutex_unlock(&fx.errorcheck) == 0;
}

static bool call_rwlock_rdlock(void)
{
	return pthread_rwlock_rdlock(&fx.rwlock) == 0 && pthread_rwlock_unlock(&fx.rwlock) == 0;
}

static bool call_rwlock_wrlock(void)
{
	return pthread_rwlock_wrlock(&fx.rwlock) == 0 && pthread_rwlock_unlock(&fx.rwlock) == 0;
}

static bool call_rwlock_timedrdlock(void)
{
	struct timespec at = far_future(CLOCK_REALTIME);

	return pthread_rwlock_timedrdlock(&fx.rwlock, &at) == 0 &&
	       pthread_rwlock_unlock(&fx.rwlock) == 0;
}

static bool call_rwlock_timedwrlock(void)
{
	struct timespec at = far_future(CLOCK_REALTIME);

	return pthread_rwlock_timedwrlock(&fx.rwlock, &at) == 0 &&
	       pthread_rwlock_unlock(&fx.rwlock) == 0;
}

static bool call_rwlock_clockrdlock(void)
{
	struct timespec at = far_future(CLOCK_MONOTONIC);

	return pthread_rwlock_clockrdlock(&fx.rwlock, CLOCK_MONOTONIC, &at) == 0 &&
	       pthread_rwlock_unlock(&fx.rwlock) == 0;
}

static bool call_rwlock_clockwrlock(void)
{
	struct timespec at = far_future(CLOCK_MONOTONIC);

	return pthread_rwlock_clockwrlock(&fx.rwlock, CLOCK_MONOTONIC, &at) == 0 &&
	       pthread_rwlock_unlock(&fx.rwlock) == 0;
}

static bool call_cond_wait(void)
{
	bool ok = true;

	pthread_mutex_lock(&fx.mutex);
	while (!fx.flag && ok)
		ok = pthread_cond_wait(&fx.cond, &fx.mutex) == 0;
	pthread_mutex_unlock(&fx.mutex);
	return ok;
}

static bool call_cond_timedwait(void)
{
	struct timespec at = far_future(CLOCK_REALTIME);
	bool ok = true;

	pthread_mutex_lock(&fx.mutex);
	while (!fx.flag && ok)
		ok = pthread_cond_timedwait(&fx.cond, &fx.mutex, &at) == 0;
	pthread_mutex_unlock(&fx.mutex);
	return ok;
}

/* C11's calls on the same objects: glibc's mtx_t and cnd_t are its
 * pthread mutex and condvar. */
static bool call_mtx_lock(void)
{
	return mtx_lock((mtx_t *)&fx.mutex) == thrd_success && mtx_unlock((mtx_t *)&fx.mutex) == thrd_success;
}

static bool call_mtx_timedlock(void)
{
	struct timespec at = far_future(CLOCK_REALTIME);

	return mtx_timedlock((mtx_t *)&fx.mutex, &at) == thrd_success && mtx_unlock((mtx_t *)&fx.mutex) == thrd_success;
}

static bool call_cnd_wait(void)
{
	bool ok = true;

	mtx_lock((mtx_t *)&fx.mutex);
	while (!fx.flag && ok)
		ok = cnd_wait((cnd_t *)&fx.cond, (mtx_t *)&fx.mutex) == thrd_success;
	mtx_unlock((mtx_t *)&fx.mutex);
	return ok;
}

static bool call_cnd_timedwait(void)
{
	struct timespec at = far_future(CLOCK_REALTIME);
	bool ok = true;

	mtx_lock((mtx_t *)&fx.mutex);
	while (!fx.flag && ok)
		ok = cnd_timedwait((cnd_t *)&fx.cond, (mtx_t *)&fx.mutex, &at) == thrd_success;
	mtx_unlock((mtx_t *)&fx.mutex);
	return ok;
}

static bool call_cond_clockwait(void)
{
	struct timespec at = far_future(CLOCK_MONOTONIC);
	bool ok = true;

	pthread_mutex_lock(&fx.mutex);
	while (!fx.flag && ok)
		ok = pthread_cond_clockwait(&fx.cond, &fx.mutex, CLOCK_MONOTONIC, &at) == 0;
	pthread_mutex_unlock(&fx.mutex);
	return ok;
}

static bool call_barrier_wait(void)
{
	int result = pthread_barrier_wait(&fx.barrier);

	return result == 0 || result == PTHREAD_BARRIER_SERIAL_THREAD;
}

static bool call_sem_wait(void)
{
	return sem_wait(&fx.sem) == 0;
}

static bool call_sem_timedwait(void)
{
	struct timespec at = far_future(CLOCK_REALTIME);

	return sem_timedwait(&fx.sem, &at) == 0;
}

static bool call_sem_clockwait(void)
{
	struct timespec at = far_future(CLOCK_MONOTONIC);

	return sem_clockwait(&fx.sem, CLOCK_MONOTONIC, &at) == 0;
}

static bool call_join(void)
{
	void *result;

	return pthread_join(fx.target, &result) == 0 && result == (void *)7;
}

static bool call_thrd_join(void)
{
	int result;

	return thrd_join((thrd_t)fx.target, &result) == thrd_success && result == 7;
}

static bool call_timedjoin(void)
{
	struct timespec at = far_future(CLOCK_REALTIME);
	void *result;

	return pthread_timedjoin_np(fx.target, &result, &at) == 0 && result == (void *)7;
}

static bool call_clockjoin(void)
{
	struct timespec at = far_future(CLOCK_MONOTONIC);
	void *result;

	return pthread_clockjoin_np(fx.target, &result, CLOCK_MONOTONIC, &at) == 0 &&
	       result == (void *)7;
}

static bool call_poll(void)
{
	struct pollfd pfd = { .fd = fx.pipe[0], .events = POLLIN };

	return poll(&pfd, 1, -1) == 1 && (pfd.revents & POLLIN);
}

static bool call_ppoll(void)
{
	struct pollfd pfd = { .fd = fx.pipe[0], .events = POLLIN };

	return ppoll(&pfd, 1, NULL, NULL) == 1 && (pfd.revents & POLLIN);
}

static bool call_select(void)
{
	fd_set set;

	FD_ZERO(&set);
	FD_SET(fx.pipe[0], &set);
	return select(fx.pipe[0] + 1, &set, NULL, NULL, NULL) == 1 && FD_ISSET(fx.pipe[0], &set);
}

static bool call_pselect(void)
{
	fd_set set;

	FD_ZERO(&set);
	FD_SET(fx.pipe[0], &set);
	return pselect(fx.pipe[0] + 1, &set, NULL, NULL, NULL, NULL) == 1 &&
	       FD_ISSET(fx.pipe[0], &set);
}

static bool call_epoll_wait(void)
{
	struct epoll_event event;

	return epoll_wait(fx.epoll, &event, 1, -1) == 1 && event.data.fd == fx.pipe[0];
}

static bool call_epoll_pwait(void)
{
	struct epoll_event event;

	return epoll_pwait(fx.epoll, &event, 1, -1, NULL) == 1 && event.data.fd == fx.pipe[0];
}

static bool call_read(void)
{
	char byte;

	return read(fx.pipe[0], &byte, 1) == 1 && byte == 'x';
}

static bool call_readv(void)
{
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };

	return readv(fx.pipe[0], &iov, 1) == 1 && byte == 'x';
}

static bool call_read_file(void)
{
	char text[16];
	int fd = open("/proc/self/stat", O_RDONLY);
	bool ok = read(fd, text, sizeof(text)) > 0;

	close(fd);
	return ok;
}

static bool call_recv(void)
{
	char byte;

	return recv(fx.sockets[0], &byte, 1, 0) == 1 && byte == 'x';
}

static bool call_recvfrom(void)
{
	char byte;

	return recvfrom(fx.sockets[0], &byte, 1, 0, NULL, NULL) == 1 && byte == 'x';
}

static bool call_recvmsg(void)
{
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr message = { .msg_iov = &iov, .msg_iovlen = 1 };

	return recvmsg(fx.sockets[0], &message, 0) == 1 && byte == 'x';
}

static bool call_accept(void)
{
	int fd = accept(fx.listener, NULL, NULL);

	return fd >= 0 && close(fd) == 0;
}

static bool call_accept4(void)
{
	int fd = accept4(fx.listener, NULL, NULL, SOCK_CLOEXEC);

	return fd >= 0 && close(fd) == 0;
}

static bool call_waitpid(void)
{
	int status;

	return waitpid(fx.child, &status, 0) == fx.child && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 7;
}

static bool call_wait(void)
{
	int status;

	return wait(&status) == fx.child && WIFEXITED(status) && WEXITSTATUS(status) == 7;
}

static bool call_waitid(void)
{
	siginfo_t info = { 0 };

	return waitid(P_PID, (id_t)fx.child, &info, WEXITED) == 0 && info.si_pid == fx.child &&
	       info.si_status == 7;
}

static sigset_t sigusr2_set(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	return set;
}

static bool call_sigwait(void)
{
	sigset_t set = sigusr2_set();
	int signal = 0;

	return sigwait(&set, &signal) == 0 && signal == SIGUSR2;
}

static bool call_sigwaitinfo(void)
{
	sigset_t set = sigusr2_set();

	return sigwaitinfo(&set, NULL) == SIGUSR2;
}

static bool call_sigtimedwait(void)
{
	sigset_t set = sigusr2_set();
	struct timespec timeout = { .tv_sec = 3600 };

	return sigtimedwait(&set, NULL, &timeout) == SIGUSR2;
}

/* The interruptible waits: SIGUSR1 is unblocked only in the caller. */
static bool call_sigsuspend(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR2);
	return sigsuspend(&mask) == -1 && errno == EINTR && fx.interrupted;
}

static bool call_pause(void)
{
	return pause() == -1 && errno == EINTR && fx.interrupted;
}

static bool call_sleep(void)
{
	return sleep(3600) > 0 && fx.interrupted;
}

static bool call_usleep(void)
{
	return usleep(3600u * 1000000u) == -1 && errno == EINTR && fx.interrupted;
}

static bool call_nanosleep(void)
{
	struct timespec length = { .tv_sec = 3600 };

	return nanosleep(&length, NULL) == -1 && errno == EINTR && fx.interrupted;
}

static bool call_thrd_sleep(void)
{
	struct timespec length = { .tv_sec = 3600 };

	return thrd_sleep(&length, NULL) == -1 && fx.interrupted;
}

static bool call_clock_nanosleep(void)
{
	struct timespec length = { .tv_sec = 3600 };

	return clock_nanosleep(CLOCK_MONOTONIC, 0, &length, NULL) == EINTR && fx.interrupted;
}

static bool call_poll_chk(void)
{
	struct pollfd pfd = { .fd = fx.pipe[0], .events = POLLIN };

	return __poll_chk(&pfd, 1, -1, sizeof(pfd)) == 1 && (pfd.revents & POLLIN);
}

static bool call_ppoll_chk(void)
{
	struct pollfd pfd = { .fd = fx.pipe[0], .events = POLLIN };

	return __ppoll_chk(&pfd, 1, NULL, NULL, sizeof(pfd)) == 1 && (pfd.revents & POLLIN);
}

static bool call_epoll_pwait2(void)
{
	struct epoll_event event;

	return epoll_pwait2(fx.epoll, &event, 1, NULL, NULL) == 1 && event.data.fd == fx.pipe[0];
}

static bool call_read_chk(void)
{
	char byte;

	return __read_chk(fx.pipe[0], &byte, 1, sizeof(byte)) == 1 && byte == 'x';
}

static bool call_recv_chk(void)
{
	char byte;

	return __recv_chk(fx.sockets[0], &byte, 1, sizeof(byte), 0) == 1 && byte == 'x';
}

static bool call_recvfrom_chk(void)
{
	char byte;

	return __recvfrom_chk(fx.sockets[0], &byte, 1, sizeof(byte), 0, NULL, NULL) == 1 && byte == 'x';
}

static bool call_wait3(void)
{
	int status;

	return wait3(&status, 0, NULL) == fx.child && WIFEXITED(status) && WEXITSTATUS(status) == 7;
}

static bool call_wait4(void)
{
	int status;

	return wait4(fx.child, &status, 0, NULL) == fx.child && WIFEXITED(status) && WEXITSTATUS(status) == 7;
}

/* A futex wait through syscall(), as C++20's atomic wait and Rust's std
 * make it: the word stays 0 until the release sets it and wakes. */
static bool call_syscall(void)
{
	while (!__atomic_load_n(&fx.futex_word, __ATOMIC_ACQUIRE))
		if (syscall(SYS_futex, &fx.futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0) == -1 &&
		    errno != EAGAIN && errno != EINTR)
			return false;
	return true;
}

static void wake_futex(void)
{
	__atomic_store_n(&fx.futex_word, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &fx.futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

struct call_case {
	const char *name;
	void (*ready)(void);    /* nowait: make the call able to finish at once (NULL: it never can) */
	void (*blocking)(void); /* wait: make the call wait */
	bool (*call)(void);
	void (*release)(void);  /* wait: end the wait */
	bool interruptible;     /* the caller unblocks SIGUSR1 */
};

static const struct call_case cases[] = {
	{ "pthread_mutex_lock", none, lock_mutex, call_mutex_lock, unlock_mutex, false },
	{ "pthread_mutex_timedlock", none, lock_mutex, call_mutex_timedlock, unlock_mutex, false },
	{ "pthread_mutex_clocklock", none, lock_mutex, call_mutex_clocklock, unlock_mutex, false },
	{ "mtx_lock", none, lock_mutex, call_mtx_lock, unlock_mutex, false },
	{ "mtx_timedlock", none, lock_mutex, call_mtx_timedlock, unlock_mutex, false },
	{ "mutex_recursive", none, lock_recursive, call_mutex_recursive, unlock_recursive, false },
	{ "mutex_errorcheck", none, lock_errorcheck, call_mutex_errorcheck, unlock_errorcheck, false },
	{ "pthread_rwlock_rdlock", none, write_lock, call_rwlock_rdlock, unlock_rwlock, false },
	{ "pthread_rwlock_wrlock", none, read_lock, call_rwlock_wrlock, unlock_rwlock, false },
	{ "pthread_rwlock_timedrdlock", none, write_lock, call_rwlock_timedrdlock, unlock_rwlock, false },
	{ "pthread_rwlock_timedwrlock", none, read_lock, call_rwlock_timedwrlock, unlock_rwlock, false },
	{ "pthread_rwlock_clockrdlock", none, write_lock, call_rwlock_clockrdlock, unlock_rwlock, false },
	{ "pthread_rwlock_clockwrlock", none, read_lock, call_rwlock_clockwrlock, unlock_rwlock, false },
	{ "pthread_cond_wait", NULL, none, call_cond_wait, set_flag, false },
	{ "pthread_cond_timedwait", NULL, none, call_cond_timedwait, set_flag, false },
	{ "pthread_cond_clockwait", NULL, none, call_cond_clockwait, set_flag, false },
	{ "cnd_wait", NULL, none, call_cnd_wait, set_flag, false },
	{ "cnd_timedwait", NULL, none, call_cnd_timedwait, set_flag, false },
	{ "pthread_barrier_wait", NULL, none, call_barrier_wait, meet_barrier, false },
	{ "sem_wait", post_sem, none, call_sem_wait, post_sem, false },
	{ "sem_timedwait", post_sem, none, call_sem_timedwait, post_sem, false },
	{ "sem_clockwait", post_sem, none, call_sem_clockwait, post_sem, false },
	{ "pthread_join", finished_target, blocked_target, call_join, open_gate, false },
	{ "thrd_join", finished_target, blocked_target, call_thrd_join, open_gate, false },
	{ "pthread_timedjoin_np", finished_target, blocked_target, call_timedjoin, open_gate, false },
	{ "pthread_clockjoin_np", finished_target, blocked_target, call_clockjoin, open_gate, false },
	{ "poll", write_pipe, none, call_poll, write_pipe, false },
	{ "ppoll", write_pipe, none, call_ppoll, write_pipe, false },
	{ "select", write_pipe, none, call_select, write_pipe, false },
	{ "pselect", write_pipe, none, call_pselect, write_pipe, false },
	{ "epoll_wait", write_pipe, none, call_epoll_wait, write_pipe, false },
	{ "epoll_pwait", write_pipe, none, call_epoll_pwait, write_pipe, false },
	{ "epoll_pwait2", write_pipe, none, call_epoll_pwait2, write_pipe, false },
	{ "read", write_pipe, none, call_read, write_pipe, false },
	{ "readv", write_pipe, none, call_readv, write_pipe, false },
	{ "read_file", none, NULL, call_read_file, NULL, false },
	{ "recv", send_socket, none, call_recv, send_socket, false },
	{ "recvfrom", send_socket, none, call_recvfrom, send_socket, false },
	{ "recvmsg", send_socket, none, call_recvmsg, send_socket, false },
	{ "accept", connect_listener, none, call_accept, connect_listener, false },
	{ "accept4", connect_listener, none, call_accept4, connect_listener, false },
	{ "__poll_chk", write_pipe, none, call_poll_chk, write_pipe, false },
	{ "__ppoll_chk", write_pipe, none, call_ppoll_chk, write_pipe, false },
	{ "__read_chk", write_pipe, none, call_read_chk, write_pipe, false },
	{ "__recv_chk", send_socket, none, call_recv_chk, send_socket, false },
	{ "__recvfrom_chk", send_socket, none, call_recvfrom_chk, send_socket, false },
	{ "waitpid", exited_child, waiting_child, call_waitpid, release_child, false },
	{ "wait", exited_child, waiting_child, call_wait, release_child, false },
	{ "waitid", exited_child, waiting_child, call_waitid, release_child, false },
	{ "wait3", exited_child, waiting_child, call_wait3, release_child, false },
	{ "wait4", exited_child, waiting_child, call_wait4, release_child, false },
	{ "sigwait", pending_signal, none, call_sigwait, pending_signal, false },
	{ "sigwaitinfo", pending_signal, none, call_sigwaitinfo, pending_signal, false },
	{ "sigtimedwait", pending_signal, none, call_sigtimedwait, pending_signal, false },
	{ "sigsuspend", NULL, none, call_sigsuspend, interrupt_caller, true },
	{ "pause", NULL, none, call_pause, interrupt_caller, true },
	{ "sleep", NULL, none, call_sleep, interrupt_caller, true },
	{ "usleep", NULL, none, call_usleep, interrupt_caller, true },
	{ "nanosleep", NULL, none, call_nanosleep, interrupt_caller, true },
	{ "clock_nanosleep", NULL, none, call_clock_nanosleep, interrupt_caller, true },
	{ "thrd_sleep", NULL, none, call_thrd_sleep, interrupt_caller, true },
	{ "syscall", NULL, none, call_syscall, wake_futex, false },
};

static void set_up(void)
{
	struct epoll_event event = { .events = EPOLLIN };
	struct sigaction action = { .sa_handler = on_sigusr1 };
	pthread_mutexattr_t attr;
	sigset_t blocked;

	pthread_mutex_init(&fx.mutex, NULL);
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&fx.recursive, &attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&fx.errorcheck, &attr);
	pthread_rwlock_init(&fx.rwlock, NULL);
	pthread_cond_init(&fx.cond, NULL);
	pthread_barrier_init(&fx.barrier, NULL, 2);
	sem_init(&fx.sem, 0, 0);
	sem_init(&fx.gate, 0, 0);
	if (pipe(fx.pipe) || socketpair(AF_UNIX, SOCK_STREAM, 0, fx.sockets))
		fx_die("pipe/socketpair");
	fx.listener = socket(AF_UNIX, SOCK_STREAM, 0);
	fx.address.sun_family = AF_UNIX;
	/* abstract namespace: nothing to clean up */
	snprintf(fx.address.sun_path + 1, sizeof(fx.address.sun_path) - 1, "tdstat-rt-%d",
		 (int)getpid());
	if (fx.listener < 0 ||
	    bind(fx.listener, (struct sockaddr *)&fx.address, sizeof(fx.address)) ||
	    listen(fx.listener, 8))
		fx_die("listen: %s", strerror(errno));
	fx.epoll = epoll_create1(0);
	event.data.fd = fx.pipe[0];
	if (fx.epoll < 0 || epoll_ctl(fx.epoll, EPOLL_CTL_ADD, fx.pipe[0], &event))
		fx_die("epoll");
	sigaction(SIGUSR1, &action, NULL); /* no SA_RESTART: waits return EINTR */
	sigemptyset(&blocked);
	sigaddset(&blocked, SIGUSR1);
	sigaddset(&blocked, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &blocked, NULL);
}

static void print_record(const char *key, const struct fx_record *record)
{
	printf("%s_seq=%u\n", key, record->seq);
	printf("%s_settled=%d\n", key, record->settled);
	printf("%s_state=%s\n", key, fx_state_name(record->state));
}

static int run_nowait(const struct call_case *c)
{
	struct fx_record before, after;
	bool ok;

	if (!c->ready) {
		printf("form=none\n"); /* it always waits */
		return 0;
	}
	c->ready();
	if (c->interruptible)
		fx_die("no nowait form");
	/* SIGUSR2 pending for sigwait: let it be taken only by the call */
	before = fx_record_of(getpid());
	ok = c->call();
	after = fx_record_of(getpid());
	print_record("before", &before);
	print_record("after", &after);
	printf("result=%s\n", ok ? "ok" : "wrong");
	return 0;
}

static const struct call_case *current;

static void *caller_body(void *arg)
{
	struct fx_record before, after;
	bool ok;

	(void)arg;
	if (current->interruptible) {
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
	before = fx_record_of(fx_gettid());
	__atomic_store_n(&fx.caller_tid, fx_gettid(), __ATOMIC_SEQ_CST);
	ok = current->call();
	__atomic_store_n(&fx.done, 1, __ATOMIC_SEQ_CST);
	after = fx_record_of(fx_gettid());
	print_record("before", &before);
	print_record("after", &after);
	printf("result=%s\n", ok ? "ok" : "wrong");
	return NULL;
}

static int run_wait(const struct call_case *c)
{
	uint64_t deadline = fx_now_ns() + FX_TIMEOUT_MS * 1000000ull;
	pid_t tid;
	bool blocked;

	if (!c->blocking) {
		printf("form=none\n"); /* it never waits */
		return 0;
	}
	current = c;
	c->blocking();
	pthread_create(&fx.caller, NULL, caller_body, NULL);
	while (!(tid = __atomic_load_n(&fx.caller_tid, __ATOMIC_SEQ_CST))) {
		if (fx_now_ns() > deadline)
			fx_die("caller did not start");
		sched_yield();
	}
	blocked = fx_wait_state(tid, TDSTAT_STATE_BLOCKED);
	printf("observed=%s\n", blocked ? "BLOCKED" : "never-BLOCKED");
	if (blocked) {
		struct fx_record record = fx_record_of(tid);

		printf("observed_kind=%s\n", record.state == TDSTAT_STATE_BLOCKED ? fx_kind_name(record.kind) : "none");
	}
	fflush(stdout);
	c->release();
	pthread_join(fx.caller, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		fx_die("usage: rt_calls nowait|wait CALL");
	fx_region();
	set_up();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strcmp(cases[i].name, argv[2]))
			continue;
		if (!strcmp(argv[1], "nowait"))
			return run_nowait(&cases[i]);
		if (!strcmp(argv[1], "wait"))
			return run_wait(&cases[i]);
		fx_die("unknown mode %s", argv[1]);
	}
	fx_die("no case for the call %s: add one to tests/runtime/fixture_calls.c", argv[2]);
}
