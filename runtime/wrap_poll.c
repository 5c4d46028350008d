/* SPDX-License-Identifier: MIT */
/*
 * Readiness waits: poll, ppoll, select, pselect and the epoll waits.
 * A zero timeout never waits and makes no transition, and neither does an
 * invalid one (the call fails with EINVAL).  Otherwise a try with a zero
 * timeout comes first: only when nothing is ready does the
 * thread turn BLOCKED around the real, waiting call.
 */
#include <string.h>

#include "shim.h"

static const struct timespec zero_timespec;

static bool is_zero(const struct timespec *timeout)
{
	return timeout && timeout->tv_sec == 0 && timeout->tv_nsec == 0;
}

/*
 * A readiness wait that returns with a descriptor ready whose writes the
 * shim stamps (runtime/wrap_fd.c: an eventfd, a pipe's read end, a socket
 * pair's end, or an epoll instance holding one) was woken by the write:
 * its keys go into the scope, at most two: the first's earliest stamp
 * after the wait began that no other waiter claimed, or the second's
 * latest if later, dates the wake-up (runtime/thread.c).
 */
#define READABLE (POLLIN | POLLRDNORM | POLLPRI | POLLHUP | POLLERR)

static void poll_wake_keys(struct tdshim_wait_scope *scope, const struct pollfd *fds, nfds_t count, int ready)
{
	unsigned int found = 0;

	if (ready <= 0 || !tdshim_wake_fds_exist())
		return;
	for (nfds_t i = 0; i < count && found < 2; i++) {
		if (!(fds[i].revents & READABLE))
			continue;
		const void *key = tdshim_wake_fd_key(fds[i].fd);
		if (key)
			scope->wake_keys[found++] = key;
	}
	scope->earliest_stamp = found > 0;
}

static void select_wake_keys(struct tdshim_wait_scope *scope, int nfds, const fd_set *r, int ready)
{
	size_t bits_per_word = 8 * sizeof(long);
	unsigned int found = 0;

	if (ready <= 0 || !r || nfds <= 0 || nfds > FD_SETSIZE || !tdshim_wake_fds_exist())
		return;
	const unsigned long *bits = (const unsigned long *)(const void *)r;
	for (size_t i = 0; i * bits_per_word < (size_t)nfds && found < 2; i++) {
		unsigned long word = bits[i];

		while (word && found < 2) {
			int fd = (int)(i * bits_per_word) + __builtin_ctzl(word);
			word &= word - 1;
			if (fd >= nfds)
				break;
			const void *key = tdshim_wake_fd_key(fd);
			if (key)
				scope->wake_keys[found++] = key;
		}
	}
	scope->earliest_stamp = found > 0;
}

/* Only when the events it returns hold the wake descriptor's (the data
 * it was registered with): a one-shot registration that fired, or one
 * without EPOLLIN, is not woken by the write, and a wait woken by
 * something else took the write's stamp (helper-77: 0.50 runnable, the
 * kernel 0.003). */
static void epoll_wake_key(struct tdshim_wait_scope *scope, int epfd, const struct epoll_event *events, int ready)
{
	uint64_t data;
	const void *key = ready > 0 ? tdshim_wake_epoll_key(epfd, &data) : NULL;

	for (int i = 0; key && i < ready; i++) {
		if (events[i].data.u64 == data) {
			scope->wake_keys[0] = key;
			scope->earliest_stamp = true;
			return;
		}
	}
}

TDSHIM_EXPORT int poll(struct pollfd *fds, nfds_t count, int timeout_ms)
{
	TDSHIM_REQUIRE_LIBC(poll);
	if (timeout_ms == 0)
		return tdshim_real_poll(fds, count, 0);
	int ready = tdshim_real_poll(fds, count, 0);
	if (ready != 0)
		return ready;
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(poll), count ? fds[0].fd : -1, TDSHIM_CALL_SITE());
	if (timeout_ms > 0)
		tdshim_scope_.deadline_ns = tdshim_now_ns() + (uint64_t)timeout_ms * 1000000u;
	ready = tdshim_real_poll(fds, count, timeout_ms);
	tdshim_scope_.timed_out = ready == 0;
	poll_wake_keys(&tdshim_scope_, fds, count, ready);
	return ready;
}

TDSHIM_EXPORT int __poll_chk(struct pollfd *fds, nfds_t count, int timeout_ms, size_t fds_size)
{
	TDSHIM_REQUIRE_LIBC(__poll_chk);
	if (count > fds_size / sizeof(*fds))
		return tdshim_real___poll_chk(fds, count, timeout_ms, fds_size);
	return poll(fds, count, timeout_ms);
}

TDSHIM_EXPORT int ppoll(struct pollfd *fds, nfds_t count, const struct timespec *timeout,
			const sigset_t *mask)
{
	TDSHIM_REQUIRE_LIBC(ppoll);
	if (is_zero(timeout) || !tdshim_timeout_valid(timeout))
		return tdshim_real_ppoll(fds, count, timeout, mask);
	int ready = tdshim_real_ppoll(fds, count, &zero_timespec, mask);
	if (ready != 0)
		return ready;
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(ppoll), count ? fds[0].fd : -1, TDSHIM_CALL_SITE());
	tdshim_scope_.deadline_ns = tdshim_deadline_after(timeout);
	ready = tdshim_real_ppoll(fds, count, timeout, mask);
	tdshim_scope_.timed_out = ready == 0;
	poll_wake_keys(&tdshim_scope_, fds, count, ready);
	return ready;
}

TDSHIM_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t count, const struct timespec *timeout,
			      const sigset_t *mask, size_t fds_size)
{
	TDSHIM_REQUIRE_LIBC(__ppoll_chk);
	if (count > fds_size / sizeof(*fds))
		return tdshim_real___ppoll_chk(fds, count, timeout, mask, fds_size);
	return ppoll(fds, count, timeout, mask);
}

/*
 * select overwrites its sets, so the try works on copies of the first
 * `nfds` bits and hands its result back only when something was ready;
 * a try that finds nothing leaves the caller's sets as they were for the
 * real call.
 */
struct fd_sets {
	fd_set read, write, except;
};

static size_t set_bytes(int nfds)
{
	size_t bits_per_word = 8 * sizeof(long);

	return (((size_t)nfds + bits_per_word - 1) / bits_per_word) * sizeof(long);
}

static void copy_sets(struct fd_sets *copy, fd_set *r, fd_set *w, fd_set *e, size_t bytes)
{
	if (r)
		memcpy(&copy->read, r, bytes);
	if (w)
		memcpy(&copy->write, w, bytes);
	if (e)
		memcpy(&copy->except, e, bytes);
}

static void return_sets(const struct fd_sets *copy, fd_set *r, fd_set *w, fd_set *e, size_t bytes)
{
	if (r)
		memcpy(r, &copy->read, bytes);
	if (w)
		memcpy(w, &copy->write, bytes);
	if (e)
		memcpy(e, &copy->except, bytes);
}

/* The label of a select's wait: its lowest descriptor in any of the
 * sets (docs/CONTRACT.md §2: the fd waited on, as poll's first), -1 when
 * it has none or its sets are past what the try copied (nfds above
 * FD_SETSIZE: the wrapper reads no further than the kernel did).  nfds
 * itself is no descriptor of the wait. */
static long first_descriptor(int nfds, const fd_set *r, const fd_set *w, const fd_set *e)
{
	const fd_set *sets[3] = { r, w, e };
	size_t words, bits_per_word = 8 * sizeof(long);
	long first = -1;

	if (nfds <= 0 || nfds > FD_SETSIZE)
		return -1;
	words = set_bytes(nfds) / sizeof(long);
	for (int s = 0; s < 3; s++) {
		const unsigned long *bits = (const unsigned long *)(const void *)sets[s];

		for (size_t i = 0; bits && i < words; i++) {
			unsigned long word = bits[i];

			if (i == words - 1 && nfds % bits_per_word)
				word &= (1UL << (nfds % bits_per_word)) - 1;
			if (word) {
				long fd = (long)(i * bits_per_word) + __builtin_ctzl(word);

				if (first < 0 || fd < first)
					first = fd;
				break;
			}
		}
	}
	return first;
}

/* Returns the try's result: > 0 ready (sets updated), < 0 error, 0 none. */
static int try_select(int nfds, fd_set *r, fd_set *w, fd_set *e, const sigset_t *mask, bool with_mask)
{
	struct fd_sets copy;
	size_t bytes;
	int ready;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return -2;
	bytes = set_bytes(nfds);
	copy_sets(&copy, r, w, e, bytes);
	if (with_mask)
		ready = tdshim_real_pselect(nfds, r ? &copy.read : NULL, w ? &copy.write : NULL,
					    e ? &copy.except : NULL, &zero_timespec, mask);
	else {
		struct timeval zero = { 0, 0 };
		ready = tdshim_real_select(nfds, r ? &copy.read : NULL, w ? &copy.write : NULL,
					   e ? &copy.except : NULL, &zero);
	}
	if (ready > 0)
		return_sets(&copy, r, w, e, bytes);
	return ready;
}

/*
 * Linux writes the time left into select's timeval whenever the timeout
 * is not zero, on success and on error alike (glibc converts it from
 * pselect6's timespec, truncating to microseconds).  The try's zero
 * timeout leaves it alone, so when the try is the answer the wrapper
 * writes what the kernel would have: the timeout less the call's time.
 */
static void subtract_elapsed(struct timeval *timeout, uint64_t elapsed_ns)
{
	time_t seconds = timeout->tv_sec - (time_t)(elapsed_ns / 1000000000u);
	long nanoseconds = timeout->tv_usec * 1000L - (long)(elapsed_ns % 1000000000u);

	if (nanoseconds < 0) {
		nanoseconds += 1000000000L;
		seconds--;
	}
	if (seconds < 0)
		seconds = nanoseconds = 0;
	timeout->tv_sec = seconds;
	timeout->tv_usec = nanoseconds / 1000;
}

TDSHIM_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout)
{
	TDSHIM_REQUIRE_LIBC(select);
	TDSHIM_REQUIRE_LIBC(pselect);
	if (timeout && ((timeout->tv_sec == 0 && timeout->tv_usec == 0) || timeout->tv_sec < 0 ||
			timeout->tv_usec < 0 || timeout->tv_usec >= 1000000))
		return tdshim_real_select(nfds, r, w, e, timeout);
	uint64_t start_ns = timeout ? tdshim_now_ns() : 0;
	int ready = try_select(nfds, r, w, e, NULL, false);
	if (ready > 0 || ready == -1) {
		if (timeout)
			subtract_elapsed(timeout, tdshim_now_ns() - start_ns);
		return ready;
	}
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(select), first_descriptor(nfds, r, w, e), TDSHIM_CALL_SITE());
	ready = tdshim_real_select(nfds, r, w, e, timeout);
	select_wake_keys(&tdshim_scope_, nfds, r, ready);
	return ready;
}

TDSHIM_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
			  const sigset_t *mask)
{
	TDSHIM_REQUIRE_LIBC(pselect);
	if (is_zero(timeout) || !tdshim_timeout_valid(timeout))
		return tdshim_real_pselect(nfds, r, w, e, timeout, mask);
	int ready = try_select(nfds, r, w, e, mask, true);
	if (ready > 0 || ready == -1)
		return ready;
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(pselect), first_descriptor(nfds, r, w, e), TDSHIM_CALL_SITE());
	ready = tdshim_real_pselect(nfds, r, w, e, timeout, mask);
	select_wake_keys(&tdshim_scope_, nfds, r, ready);
	return ready;
}

TDSHIM_EXPORT int epoll_wait(int epfd, struct epoll_event *events, int max_events, int timeout_ms)
{
	TDSHIM_REQUIRE_LIBC(epoll_wait);
	if (timeout_ms == 0)
		return tdshim_real_epoll_wait(epfd, events, max_events, 0);
	int ready = tdshim_real_epoll_wait(epfd, events, max_events, 0);
	if (ready != 0)
		return ready;
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(epoll_wait), epfd, TDSHIM_CALL_SITE());
	if (timeout_ms > 0)
		tdshim_scope_.deadline_ns = tdshim_now_ns() + (uint64_t)timeout_ms * 1000000u;
	ready = tdshim_real_epoll_wait(epfd, events, max_events, timeout_ms);
	tdshim_scope_.timed_out = ready == 0;
	epoll_wake_key(&tdshim_scope_, epfd, events, ready);
	return ready;
}

TDSHIM_EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int max_events, int timeout_ms,
			      const sigset_t *mask)
{
	TDSHIM_REQUIRE_LIBC(epoll_pwait);
	if (timeout_ms == 0)
		return tdshim_real_epoll_pwait(epfd, events, max_events, 0, mask);
	int ready = tdshim_real_epoll_pwait(epfd, events, max_events, 0, mask);
	if (ready != 0)
		return ready;
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(epoll_pwait), epfd, TDSHIM_CALL_SITE());
	if (timeout_ms > 0)
		tdshim_scope_.deadline_ns = tdshim_now_ns() + (uint64_t)timeout_ms * 1000000u;
	ready = tdshim_real_epoll_pwait(epfd, events, max_events, timeout_ms, mask);
	tdshim_scope_.timed_out = ready == 0;
	epoll_wake_key(&tdshim_scope_, epfd, events, ready);
	return ready;
}

TDSHIM_EXPORT int epoll_pwait2(int epfd, struct epoll_event *events, int max_events,
			       const struct timespec *timeout, const sigset_t *mask)
{
	struct timespec copy;

	TDSHIM_REQUIRE_LIBC(epoll_pwait2);
	/* glibc hands the pointer to the kernel as it is: read it the way
	 * the kernel would, an unreadable one gets its EFAULT. */
	if (timeout && !tdshim_copy_timespec(timeout, &copy))
		return tdshim_real_epoll_pwait2(epfd, events, max_events, timeout, mask);
	if (timeout)
		timeout = &copy;
	if (is_zero(timeout) || !tdshim_timeout_valid(timeout))
		return tdshim_real_epoll_pwait2(epfd, events, max_events, timeout, mask);
	int ready = tdshim_real_epoll_pwait2(epfd, events, max_events, &zero_timespec, mask);
	if (ready != 0)
		return ready;
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(epoll_pwait2), epfd, TDSHIM_CALL_SITE());
	tdshim_scope_.deadline_ns = tdshim_deadline_after(timeout);
	ready = tdshim_real_epoll_pwait2(epfd, events, max_events, timeout, mask);
	tdshim_scope_.timed_out = ready == 0;
	epoll_wake_key(&tdshim_scope_, epfd, events, ready);
	return ready;
}
