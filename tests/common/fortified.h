/* SPDX-License-Identifier: MIT */
/*
 * The calls glibc's _FORTIFY_SOURCE headers make instead of read, recv,
 * recvfrom, poll and ppoll.  glibc declares them only inside its fortify
 * wrappers; the call tests make them directly, as a fortified program
 * does.
 */
#ifndef TDTEST_FORTIFIED_H
#define TDTEST_FORTIFIED_H

#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

ssize_t __read_chk(int fd, void *buffer, size_t size, size_t buffer_size);
ssize_t __recv_chk(int fd, void *buffer, size_t size, size_t buffer_size, int flags);
ssize_t __recvfrom_chk(int fd, void *buffer, size_t size, size_t buffer_size, int flags, struct sockaddr *from,
		       socklen_t *from_size);
int __poll_chk(struct pollfd *fds, nfds_t count, int timeout_ms, size_t fds_size);
int __ppoll_chk(struct pollfd *fds, nfds_t count, const struct timespec *timeout, const sigset_t *mask,
		size_t fds_size);

#endif /* TDTEST_FORTIFIED_H */
