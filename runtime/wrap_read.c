/* SPDX-License-Identifier: MIT */
/*
 * accept and the blocking reads of pipes and sockets.
 *
 * The try must not change what the call returns:
 *   - read/readv try preadv2(..., RWF_NOWAIT) (offset -1: the file
 *     position, as read uses).  On a pipe or socket it returns what is
 *     there or EAGAIN.  On a regular file a short result can come from the
 *     page cache alone, where read would have returned the whole count:
 *     the rest is then read for real, so callers that treat a short read
 *     of a file as its end see no difference.  File types without
 *     RWF_NOWAIT support fail the try with EOPNOTSUPP/EINVAL: the real
 *     call runs with no transition (such waits are not counted).
 *   - recv* probe with poll(POLLIN, 0) (see below).
 *   - accept tries poll(POLLIN, 0).
 * A descriptor in O_NONBLOCK mode never waits: its EAGAIN try is followed
 * by the real call with no transition.
 *
 * read, readv and recv* take part only with TDSTAT_TRACK_READS=1: preadv2
 * costs the kernel about 10-20% more than read for a pipe read that finds
 * data (bench/microbench pipe: 1.18x bare), and the recv probe is a
 * second syscall, both above the shim's 5% budget on calls that many
 * programs make most.  A socket read through read/readv with
 * SO_RCVLOWAT set can return early when tracked (RWF_NOWAIT acts as
 * MSG_DONTWAIT there): another reason it is opt-in.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "shim.h"

static bool is_nonblocking(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	return flags >= 0 && (flags & O_NONBLOCK);
}

enum try_outcome { TRY_DONE, TRY_WOULD_WAIT, TRY_UNSUPPORTED };

static enum try_outcome classify_failure(int fd, int try_errno)
{
	if (try_errno == EAGAIN)
		return is_nonblocking(fd) ? TRY_UNSUPPORTED : TRY_WOULD_WAIT;
	return TRY_UNSUPPORTED;
}

static bool is_regular_file(int fd)
{
	struct stat status;

	return fstat(fd, &status) == 0 && (S_ISREG(status.st_mode) || S_ISBLK(status.st_mode));
}

static size_t iovec_total(const struct iovec *iov, int count)
{
	size_t total = 0;

	for (int i = 0; i < count; i++)
		total += iov[i].iov_len;
	return total;
}

/* iovecs per readv when finishing a read: few, so that the frame fits a
 * PTHREAD_STACK_MIN thread stack or a SIGSTKSZ signal stack. */
#define FINISH_WINDOW 8

/* A short read of a regular file from the page cache: finish it the way
 * read would have, waiting for the disk.  The rest goes to readv a window
 * of iovecs at a time; a window that comes back short is the end of the
 * file, as a single readv would have stopped there too. */
static ssize_t finish_file_read(int fd, const struct iovec *iov, int count, size_t done)
{
	struct iovec window[FINISH_WINDOW];
	size_t skip = done, more = 0;
	ssize_t got = 0;
	int i = 0;

	TDSHIM_SAVE_ERRNO();
	{
		TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(readv), fd, NULL);
		while (i < count) {
			size_t wanted = 0;
			int n = 0;

			for (; i < count && n < FINISH_WINDOW; i++) {
				if (skip >= iov[i].iov_len) {
					skip -= iov[i].iov_len;
					continue;
				}
				window[n].iov_base = (char *)iov[i].iov_base + skip;
				window[n].iov_len = iov[i].iov_len - skip;
				wanted += window[n].iov_len;
				skip = 0;
				n++;
			}
			if (n == 0)
				break;
			got = tdshim_real_readv(fd, window, n);
			if (got < 0)
				break;
			more += (size_t)got;
			if ((size_t)got < wanted)
				break;
		}
	}
	/* What was read stays read; an error will recur on the next call. */
	if (got < 0)
		TDSHIM_RESTORE_ERRNO();
	return (ssize_t)(done + more);
}

static enum try_outcome try_readv(int fd, const struct iovec *iov, int count, ssize_t *result)
{
	TDSHIM_SAVE_ERRNO();
	ssize_t got = preadv2(fd, iov, count, -1, RWF_NOWAIT);

	if (got >= 0) {
		size_t wanted = iovec_total(iov, count);
		if (got > 0 && (size_t)got < wanted && is_regular_file(fd))
			got = finish_file_read(fd, iov, count, (size_t)got);
		*result = got;
		TDSHIM_RESTORE_ERRNO();
		return TRY_DONE;
	}
	enum try_outcome outcome = classify_failure(fd, errno);
	TDSHIM_RESTORE_ERRNO();
	return outcome;
}

__attribute__((noinline)) static ssize_t tracked_readv(int fd, const struct iovec *iov, int count,
							 const void *site)
{
	ssize_t result;

	if (count <= 0 || count > UIO_MAXIOV)
		return tdshim_real_readv(fd, iov, count);
	switch (try_readv(fd, iov, count, &result)) {
	case TRY_DONE:
		return result;
	case TRY_UNSUPPORTED:
		return tdshim_real_readv(fd, iov, count);
	case TRY_WOULD_WAIT:
		break;
	}
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(readv), fd, site);
	/* A pipe's, socket pair's or eventfd's writer stamps its readers
	 * (runtime/wrap_fd.c); a pipe's write wakes one reader asleep in
	 * read, which claims its stamp (a poll's wakes every poller). */
	tdshim_scope_.wake_keys[0] = tdshim_wake_fd_key(fd);
	tdshim_scope_.claims_stamp = tdshim_scope_.wake_keys[0] != NULL;
	return tdshim_real_readv(fd, iov, count);
}

/* With read tracking off (the default) the wrappers only forward. */
TDSHIM_EXPORT ssize_t readv(int fd, const struct iovec *iov, int count)
{
	ssize_t got;

	TDSHIM_REQUIRE_LIBC(readv);
	if (caa_likely(!tdshim_track_reads))
		got = tdshim_real_readv(fd, iov, count);
	else
		got = tracked_readv(fd, iov, count, TDSHIM_CALL_SITE());
	tdshim_wake_fd_read(fd, got);
	return got;
}

__attribute__((noinline)) static ssize_t tracked_read(int fd, void *buffer, size_t size, const void *site)
{
	struct iovec iov = { buffer, size };
	ssize_t result;

	if (size == 0 || !tdshim_real_readv)
		return tdshim_real_read(fd, buffer, size);
	switch (try_readv(fd, &iov, 1, &result)) {
	case TRY_DONE:
		return result;
	case TRY_UNSUPPORTED:
		return tdshim_real_read(fd, buffer, size);
	case TRY_WOULD_WAIT:
		break;
	}
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(read), fd, site);
	tdshim_scope_.wake_keys[0] = tdshim_wake_fd_key(fd);
	tdshim_scope_.claims_stamp = tdshim_scope_.wake_keys[0] != NULL;
	return tdshim_real_read(fd, buffer, size);
}

TDSHIM_EXPORT ssize_t read(int fd, void *buffer, size_t size)
{
	ssize_t got;

	TDSHIM_REQUIRE_LIBC(read);
	if (caa_likely(!tdshim_track_reads))
		got = tdshim_real_read(fd, buffer, size);
	else
		got = tracked_read(fd, buffer, size, TDSHIM_CALL_SITE());
	tdshim_wake_fd_read(fd, got);
	return got;
}

TDSHIM_EXPORT ssize_t __read_chk(int fd, void *buffer, size_t size, size_t buffer_size)
{
	TDSHIM_REQUIRE_LIBC(__read_chk);
	if (size > buffer_size)
		return tdshim_real___read_chk(fd, buffer, size, buffer_size);
	return read(fd, buffer, size);
}

/*
 * recv, recvfrom, recvmsg: with read tracking on, a poll(POLLIN, 0) probe
 * decides, and the real call always runs unchanged.  A consuming try
 * (MSG_DONTWAIT) would change what the call returns on a stream socket
 * with SO_RCVLOWAT: the non-blocking path hands over whatever is queued,
 * below the low-water mark, where the blocking call would have waited
 * for more.  poll honours the mark.  The probe is a second syscall on
 * every receive, hence opt-in like read.
 */
static bool receive_would_wait(int fd, int flags)
{
	if (flags & (MSG_DONTWAIT | MSG_ERRQUEUE))
		return false;
	if (flags & MSG_WAITALL)
		return true;

	TDSHIM_SAVE_ERRNO();
	struct pollfd probe = { .fd = fd, .events = POLLIN };
	bool would_wait = tdshim_real_poll(&probe, 1, 0) == 0 && !is_nonblocking(fd);

	TDSHIM_RESTORE_ERRNO();
	return would_wait;
}

#define RECEIVE_BODY(name, call, fd, flags)                                       \
	do {                                                                      \
		if (caa_likely(!tdshim_track_reads) || !tdshim_real_poll ||        \
		    !receive_would_wait(fd, flags)) {                              \
			ssize_t got_ = call;                                       \
			tdshim_wake_fd_read(fd, got_);                             \
			return got_;                                               \
		}                                                                  \
		ssize_t got_;                                                      \
		{                                                                  \
			TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(name), fd, TDSHIM_CALL_SITE()); \
			got_ = call;                                               \
		}                                                                  \
		tdshim_wake_fd_read(fd, got_);                                     \
		return got_;                                                       \
	} while (0)

TDSHIM_EXPORT ssize_t recv(int fd, void *buffer, size_t size, int flags)
{
	TDSHIM_REQUIRE_LIBC(recv);
	RECEIVE_BODY(recv, tdshim_real_recv(fd, buffer, size, flags), fd, flags);
}

TDSHIM_EXPORT ssize_t __recv_chk(int fd, void *buffer, size_t size, size_t buffer_size, int flags)
{
	TDSHIM_REQUIRE_LIBC(__recv_chk);
	if (size > buffer_size)
		return tdshim_real___recv_chk(fd, buffer, size, buffer_size, flags);
	return recv(fd, buffer, size, flags);
}

TDSHIM_EXPORT ssize_t recvfrom(int fd, void *buffer, size_t size, int flags, struct sockaddr *from,
			       socklen_t *from_size)
{
	TDSHIM_REQUIRE_LIBC(recvfrom);
	RECEIVE_BODY(recvfrom, tdshim_real_recvfrom(fd, buffer, size, flags, from, from_size), fd, flags);
}

TDSHIM_EXPORT ssize_t __recvfrom_chk(int fd, void *buffer, size_t size, size_t buffer_size, int flags,
				     struct sockaddr *from, socklen_t *from_size)
{
	TDSHIM_REQUIRE_LIBC(__recvfrom_chk);
	if (size > buffer_size)
		return tdshim_real___recvfrom_chk(fd, buffer, size, buffer_size, flags, from, from_size);
	return recvfrom(fd, buffer, size, flags, from, from_size);
}

TDSHIM_EXPORT ssize_t recvmsg(int fd, struct msghdr *message, int flags)
{
	TDSHIM_REQUIRE_LIBC(recvmsg);
	RECEIVE_BODY(recvmsg, tdshim_real_recvmsg(fd, message, flags), fd, flags);
}

static bool accept_would_wait(int fd)
{
	TDSHIM_SAVE_ERRNO();
	struct pollfd probe = { .fd = fd, .events = POLLIN };
	bool would_wait = tdshim_real_poll(&probe, 1, 0) == 0 && !is_nonblocking(fd);

	TDSHIM_RESTORE_ERRNO();
	return would_wait;
}

TDSHIM_EXPORT int accept(int fd, struct sockaddr *address, socklen_t *address_size)
{
	TDSHIM_REQUIRE_LIBC(accept);
	TDSHIM_REQUIRE_LIBC(poll);
	if (!accept_would_wait(fd))
		return tdshim_real_accept(fd, address, address_size);
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(accept), fd, TDSHIM_CALL_SITE());
	return tdshim_real_accept(fd, address, address_size);
}

TDSHIM_EXPORT int accept4(int fd, struct sockaddr *address, socklen_t *address_size, int flags)
{
	TDSHIM_REQUIRE_LIBC(accept4);
	TDSHIM_REQUIRE_LIBC(poll);
	if (!accept_would_wait(fd))
		return tdshim_real_accept4(fd, address, address_size, flags);
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(accept4), fd, TDSHIM_CALL_SITE());
	return tdshim_real_accept4(fd, address, address_size, flags);
}
