/* SPDX-License-Identifier: MIT */
/*
 * Wake-ups through descriptors: an event loop's thread asleep in poll,
 * select or an epoll wait, woken by another thread's write to an
 * eventfd, a pipe or one end of a socket pair (libuv's and mio's
 * eventfd, glib's, Java's selector wake-up, asyncio's self-pipe).
 *
 * The kernel counts such a thread runnable from the write; without a
 * stamp the shim counted it woken at its return, its wait for a CPU
 * blocked (helper-72: event loops on busy CPUs read 0.52-0.66 of the
 * kernel's figures).  So the descriptors whose writes wake readers are
 * known from their creation (eventfd, pipe, pipe2, socketpair), their
 * writes (write, send, eventfd_write) stamp the reader's key, and the
 * key of the epoll instance the reader is registered in (epoll_ctl)
 * just before the write, as the other wakers do (runtime/wake.c); a
 * readiness wait that returns with such a descriptor ready, or an epoll
 * wait of such an instance with its event among those returned, counts
 * from the first write after its start and after the last read that took
 * the data (tdshim_wake_earliest, tdshim_wake_fd_drained; docs/DESIGN.md
 * says why each).  With one stamp per key a loop woken by one write and
 * still waiting for the CPU when the same writer wrote again took the
 * later write for its wake-up (tests/reliability wake-ring-*: 0.79).
 *
 * One table entry per descriptor number below WAKE_FDS, no lock, no
 * allocation: a close forgets it, a dup (dup, dup2, dup3, fcntl's
 * F_DUPFD) copies it (Rust's try_clone dups).  What escapes, counted
 * from the return as before: descriptors numbered WAKE_FDS or above, a
 * dup whose original is closed before it is used, writes through writev,
 * sendto, sendmsg or a raw system call, descriptors made by a raw system
 * call or received from another process, and readers in another
 * process.  A number closed by a raw system call or close_range keeps its
 * entry until it is reused through one of the calls above; until then a
 * write to its old peer may date a wait on the reused number (never
 * before that wait began).  A wake descriptor registered in two epoll
 * instances stamps the last one.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include "shim.h"

#define WAKE_FDS 16384u

/* Each field is a descriptor number plus one, 0 for none. */
struct wake_fd {
	int32_t peer;    /* a write here wakes the readers of this one */
	int32_t writer;  /* whose writes wake this one's readers */
	int32_t epoll;   /* the epoll instance this one is registered in */
	int32_t watches; /* (an epoll instance) 1: a wake descriptor is in it */
	int32_t alias;   /* a dup's: the descriptor whose readers' key it uses */
	/* Bumped when the number is forgotten: a peer, alias or epoll
	 * instance recorded with an older one names a closed descriptor,
	 * whose number may be another's now (a dup of a writer outlives its
	 * reader; an epoll instance closed and its number reused). */
	uint32_t generation;
	uint32_t peer_generation, alias_generation, epoll_generation;
	uint32_t unused;
	/* (An epoll instance) the event data its latest wake descriptor was
	 * registered with, which its waits' returned events must hold. */
	uint64_t wake_data;
};
static struct wake_fd wake_fds[WAKE_FDS];
/* A drain key is the wake key's next field (shim.h). */
_Static_assert(offsetof(struct wake_fd, writer) == offsetof(struct wake_fd, peer) + sizeof(int32_t), "drain key");
_Static_assert(offsetof(struct wake_fd, watches) == offsetof(struct wake_fd, epoll) + sizeof(int32_t), "drain key");
/* Any wake descriptor ever made: the readiness waits look only then. */
int tdshim_wake_fds_made;

/*
 * A wrapper called before the shim resolved the real function (a signal
 * handler that interrupts the shim's start-up, which then returns at
 * once: helper-77's handler writing to a pipe got ENOSYS) makes the
 * system call itself, as the C library's function would, cancellation
 * point aside.
 */
static long raw_syscall(long number, long a, long b, long c, long d, long e, long f)
{
	long result;
	register long fourth __asm__("r10") = d;
	register long fifth __asm__("r8") = e;
	register long sixth __asm__("r9") = f;

	__asm__ volatile("syscall"
			 : "=a"(result)
			 : "a"(number), "D"(a), "S"(b), "d"(c), "r"(fourth), "r"(fifth), "r"(sixth)
			 : "rcx", "r11", "memory");
	if (result < 0 && result > -4096) {
		*tdshim_errno() = (int)-result;
		return -1;
	}
	return result;
}

#define REAL_OR_RAW(name, ...)                                                                   \
	do {                                                                                     \
		tdshim_ensure_init();                                                            \
		if (caa_unlikely(!tdshim_real_##name))                                           \
			return raw_syscall(__VA_ARGS__);                                          \
	} while (0)

static inline bool in_table(int fd)
{
	return (unsigned int)fd < WAKE_FDS;
}

static void forget(int fd)
{
	struct wake_fd *entry = &wake_fds[fd];
	int32_t writer = CMM_LOAD_SHARED(entry->writer);

	/* The writer's stamps were for this number's readers. */
	if (writer > 0 && writer - 1 != fd && in_table(writer - 1) &&
	    CMM_LOAD_SHARED(wake_fds[writer - 1].peer) == fd + 1)
		CMM_STORE_SHARED(wake_fds[writer - 1].peer, 0);
	CMM_STORE_SHARED(entry->peer, 0);
	CMM_STORE_SHARED(entry->writer, 0);
	CMM_STORE_SHARED(entry->epoll, 0);
	CMM_STORE_SHARED(entry->watches, 0);
	CMM_STORE_SHARED(entry->alias, 0);
	CMM_STORE_SHARED(entry->generation, CMM_LOAD_SHARED(entry->generation) + 1);
}

static inline void forget_if_known(int fd)
{
	if (in_table(fd)) {
		const struct wake_fd *entry = &wake_fds[fd];

		if (CMM_LOAD_SHARED(entry->peer) | CMM_LOAD_SHARED(entry->writer) |
		    CMM_LOAD_SHARED(entry->epoll) | CMM_LOAD_SHARED(entry->watches) | CMM_LOAD_SHARED(entry->alias))
			forget(fd);
	}
}

/* Writes to `writer` wake the readers of `reader`. */
static void link_wake(int writer, int reader)
{
	if (!in_table(writer) || !in_table(reader))
		return;
	CMM_STORE_SHARED(wake_fds[reader].writer, writer + 1);
	CMM_STORE_SHARED(wake_fds[writer].peer_generation, CMM_LOAD_SHARED(wake_fds[reader].generation));
	CMM_STORE_SHARED(wake_fds[writer].peer, reader + 1);
	if (!CMM_LOAD_SHARED(tdshim_wake_fds_made))
		CMM_STORE_SHARED(tdshim_wake_fds_made, 1);
}

/* The descriptor whose readers' key `fd`'s readers use: its own, or the
 * one it is a dup of. */
static int key_owner(int fd)
{
	int32_t alias = CMM_LOAD_SHARED(wake_fds[fd].alias);

	if (alias <= 0 || !in_table(alias - 1))
		return fd;
	/* -1: the original is closed. */
	return CMM_LOAD_SHARED(wake_fds[alias - 1].generation) == CMM_LOAD_SHARED(wake_fds[fd].alias_generation)
		       ? alias - 1
		       : -1;
}

const void *tdshim_wake_fd_key(int fd)
{
	if (!CMM_LOAD_SHARED(tdshim_wake_fds_made) || !in_table(fd) || !CMM_LOAD_SHARED(wake_fds[fd].writer))
		return NULL;
	int owner = key_owner(fd);
	return owner >= 0 ? &wake_fds[owner].peer : NULL;
}

/* A dup of `fd` as `copy` (dup, dup2, dup3, fcntl's F_DUPFD): its writes
 * stamp what `fd`'s do, and its readers share `fd`'s key (and epoll
 * registration).  `copy`'s own entry is forgotten first: the number was
 * free, or closed by the dup. */
static void copy_wake(int fd, int copy)
{
	if (!in_table(copy))
		return;
	forget_if_known(copy);
	if (!in_table(fd) || !CMM_LOAD_SHARED(tdshim_wake_fds_made))
		return;
	const struct wake_fd *from = &wake_fds[fd];
	int32_t peer = CMM_LOAD_SHARED(from->peer), writer = CMM_LOAD_SHARED(from->writer);

	int owner = writer ? key_owner(fd) : fd;

	if ((!peer && !writer) || owner < 0)
		return;
	if (writer) {
		CMM_STORE_SHARED(wake_fds[copy].alias_generation, CMM_LOAD_SHARED(wake_fds[owner].generation));
		CMM_STORE_SHARED(wake_fds[copy].alias, owner + 1);
	}
	CMM_STORE_SHARED(wake_fds[copy].writer, writer);
	CMM_STORE_SHARED(wake_fds[copy].peer_generation, CMM_LOAD_SHARED(from->peer_generation));
	CMM_STORE_SHARED(wake_fds[copy].peer, peer);
}

const void *tdshim_wake_epoll_key(int epfd, uint64_t *data)
{
	if (!CMM_LOAD_SHARED(tdshim_wake_fds_made) || !in_table(epfd) || !CMM_LOAD_SHARED(wake_fds[epfd].watches))
		return NULL;
	*data = CMM_LOAD_SHARED(wake_fds[epfd].wake_data);
	return &wake_fds[epfd].epoll;
}

bool tdshim_wake_fds_exist(void)
{
	return CMM_LOAD_SHARED(tdshim_wake_fds_made) != 0;
}

/*
 * A read that took data from a wake descriptor: a poller woken by an
 * earlier write that found the data gone sleeps on inside its call, and
 * the write that then wakes it is the first after the last read (helper-77:
 * four threads polling one eventfd, each write read by one, dated their
 * wakes from a write that only woke them to sleep again: 5x the kernel).
 * Stamped under the key's drain key, and the epoll instance's.
 */
void tdshim_wake_fd_drained(int fd)
{
	if (!in_table(fd) || !CMM_LOAD_SHARED(wake_fds[fd].writer) || !tdshim_gathering())
		return;
	int owner = key_owner(fd);
	if (owner < 0)
		return;
	tdshim_wake_stamp(tdshim_wake_drain_key(&wake_fds[owner].peer));
	int32_t epoll = CMM_LOAD_SHARED(wake_fds[owner].epoll) - 1;
	if (in_table(epoll) &&
	    CMM_LOAD_SHARED(wake_fds[epoll].generation) == CMM_LOAD_SHARED(wake_fds[owner].epoll_generation))
		tdshim_wake_stamp(tdshim_wake_drain_key(&wake_fds[epoll].epoll));
}

/* glibc's eventfd_read reads through its own read, unseen. */
TDSHIM_EXPORT int eventfd_read(int fd, eventfd_t *value)
{
	tdshim_ensure_init();
	if (caa_unlikely(!tdshim_real_eventfd_read))
		return raw_syscall(SYS_read, fd, (long)value, sizeof(*value), 0, 0, 0) == sizeof(*value) ? 0 : -1;
	int result = tdshim_real_eventfd_read(fd, value);
	tdshim_wake_fd_read(fd, result == 0 ? 1 : 0);
	return result;
}

/* The stamps of a write to `fd`, before it (kept: a write that fails
 * withdraws them).  False when `fd` wakes nobody the shim knows. */
struct write_stamps {
	struct tdshim_stamp reader, epoll;
};

static inline bool wakes_readers(int fd)
{
	return in_table(fd) && CMM_LOAD_SHARED(wake_fds[fd].peer) != 0;
}

__attribute__((noinline)) static void stamp_write(int fd, struct write_stamps *kept)
{
	int32_t reader = CMM_LOAD_SHARED(wake_fds[fd].peer) - 1;

	/* A reader closed since (its number may be another's now). */
	if (!tdshim_gathering() || !in_table(reader) ||
	    CMM_LOAD_SHARED(wake_fds[reader].generation) != CMM_LOAD_SHARED(wake_fds[fd].peer_generation))
		return;
	tdshim_wake_stamp_one_and_slot_keep(&wake_fds[reader].peer, &kept->reader);
	int32_t epoll = CMM_LOAD_SHARED(wake_fds[reader].epoll) - 1;
	if (in_table(epoll) &&
	    CMM_LOAD_SHARED(wake_fds[epoll].generation) == CMM_LOAD_SHARED(wake_fds[reader].epoll_generation))
		tdshim_wake_stamp_one_and_slot_keep(&wake_fds[epoll].epoll, &kept->epoll);
}

static void withdraw_write(const struct write_stamps *kept)
{
	TDSHIM_SAVE_ERRNO();
	tdshim_wake_withdraw(&kept->epoll);
	tdshim_wake_withdraw(&kept->reader);
	TDSHIM_RESTORE_ERRNO();
}

TDSHIM_EXPORT ssize_t write(int fd, const void *buffer, size_t size)
{
	REAL_OR_RAW(write, SYS_write, fd, (long)buffer, (long)size, 0, 0, 0);
	if (caa_likely(!wakes_readers(fd)))
		return tdshim_real_write(fd, buffer, size);
	struct write_stamps kept = { 0 };
	stamp_write(fd, &kept);
	ssize_t result = tdshim_real_write(fd, buffer, size);
	if (result <= 0)
		withdraw_write(&kept);
	return result;
}

TDSHIM_EXPORT ssize_t send(int fd, const void *buffer, size_t size, int flags)
{
	REAL_OR_RAW(send, SYS_sendto, fd, (long)buffer, (long)size, flags, 0, 0);
	if (caa_likely(!wakes_readers(fd)))
		return tdshim_real_send(fd, buffer, size, flags);
	struct write_stamps kept = { 0 };
	stamp_write(fd, &kept);
	ssize_t result = tdshim_real_send(fd, buffer, size, flags);
	if (result <= 0)
		withdraw_write(&kept);
	return result;
}

/* glibc's eventfd_write calls its own write, unseen. */
TDSHIM_EXPORT int eventfd_write(int fd, eventfd_t value)
{
	tdshim_ensure_init();
	if (caa_unlikely(!tdshim_real_eventfd_write))
		return raw_syscall(SYS_write, fd, (long)&value, sizeof(value), 0, 0, 0) == sizeof(value) ? 0 : -1;
	if (caa_likely(!wakes_readers(fd)))
		return tdshim_real_eventfd_write(fd, value);
	struct write_stamps kept = { 0 };
	stamp_write(fd, &kept);
	int result = tdshim_real_eventfd_write(fd, value);
	if (result != 0)
		withdraw_write(&kept);
	return result;
}

TDSHIM_EXPORT int eventfd(unsigned int count, int flags)
{
	REAL_OR_RAW(eventfd, SYS_eventfd2, count, flags, 0, 0, 0, 0);
	int fd = tdshim_real_eventfd(count, flags);
	if (fd >= 0) {
		forget_if_known(fd);
		link_wake(fd, fd);
	}
	return fd;
}

static void link_pipe(const int fds[2])
{
	forget_if_known(fds[0]);
	forget_if_known(fds[1]);
	link_wake(fds[1], fds[0]);
}

TDSHIM_EXPORT int pipe(int fds[2])
{
	REAL_OR_RAW(pipe, SYS_pipe2, (long)fds, 0, 0, 0, 0, 0);
	int result = tdshim_real_pipe(fds);
	if (result == 0)
		link_pipe(fds);
	return result;
}

TDSHIM_EXPORT int pipe2(int fds[2], int flags)
{
	REAL_OR_RAW(pipe2, SYS_pipe2, (long)fds, flags, 0, 0, 0, 0);
	int result = tdshim_real_pipe2(fds, flags);
	if (result == 0)
		link_pipe(fds);
	return result;
}

TDSHIM_EXPORT int socketpair(int domain, int type, int protocol, int fds[2])
{
	REAL_OR_RAW(socketpair, SYS_socketpair, domain, type, protocol, (long)fds, 0, 0);
	int result = tdshim_real_socketpair(domain, type, protocol, fds);
	if (result == 0) {
		forget_if_known(fds[0]);
		forget_if_known(fds[1]);
		link_wake(fds[0], fds[1]);
		link_wake(fds[1], fds[0]);
	}
	return result;
}

TDSHIM_EXPORT int epoll_ctl(int epfd, int operation, int fd, struct epoll_event *event)
{
	REAL_OR_RAW(epoll_ctl, SYS_epoll_ctl, epfd, operation, fd, (long)event, 0, 0);
	int result = tdshim_real_epoll_ctl(epfd, operation, fd, event);
	if (result != 0 || !in_table(fd) || !in_table(epfd) || !CMM_LOAD_SHARED(wake_fds[fd].writer))
		return result;
	int owner = key_owner(fd);

	if (owner < 0)
		return result;
	/* Registered for reading: the kernel read the event, so may we. */
	if ((operation == EPOLL_CTL_ADD || operation == EPOLL_CTL_MOD) && event &&
	    (event->events & (EPOLLIN | EPOLLRDNORM | EPOLLPRI))) {
		CMM_STORE_SHARED(wake_fds[epfd].wake_data, event->data.u64);
		CMM_STORE_SHARED(wake_fds[epfd].watches, 1);
		CMM_STORE_SHARED(wake_fds[owner].epoll_generation, CMM_LOAD_SHARED(wake_fds[epfd].generation));
		CMM_STORE_SHARED(wake_fds[owner].epoll, epfd + 1);
	} else if (CMM_LOAD_SHARED(wake_fds[owner].epoll) == epfd + 1) {
		CMM_STORE_SHARED(wake_fds[owner].epoll, 0);
	}
	return result;
}

/* glibc's fclose closes the stream's descriptor inside libc, unseen
 * (helper-77: a pipe's read end closed by fclose(fdopen()) kept its
 * writer's stamps for the timerfd that took its number: 0.50 runnable,
 * the kernel 0.002).  closedir, close_range, closefrom and the close of
 * a spawned child's file actions are still unseen; a number they free is
 * forgotten only when an eventfd, pipe or socket pair takes it again. */
TDSHIM_EXPORT int fclose(FILE *stream)
{
	TDSHIM_REQUIRE_LIBC(fclose);
	if (stream)
		forget_if_known(fileno_unlocked(stream));
	return tdshim_real_fclose(stream);
}

/* Forgotten before the close: once closed, the number may be another
 * thread's new descriptor. */
TDSHIM_EXPORT int close(int fd)
{
	REAL_OR_RAW(close, SYS_close, fd, 0, 0, 0, 0, 0);
	forget_if_known(fd);
	return tdshim_real_close(fd);
}

TDSHIM_EXPORT int dup(int fd)
{
	REAL_OR_RAW(dup, SYS_dup, fd, 0, 0, 0, 0, 0);
	int result = tdshim_real_dup(fd);
	if (result >= 0)
		copy_wake(fd, result);
	return result;
}

TDSHIM_EXPORT int dup2(int fd, int target)
{
	REAL_OR_RAW(dup2, SYS_dup2, fd, target, 0, 0, 0, 0);
	int result = tdshim_real_dup2(fd, target);
	if (result >= 0 && target != fd)
		copy_wake(fd, target);
	return result;
}

TDSHIM_EXPORT int dup3(int fd, int target, int flags)
{
	REAL_OR_RAW(dup3, SYS_dup3, fd, target, flags, 0, 0, 0);
	int result = tdshim_real_dup3(fd, target, flags);
	if (result >= 0)
		copy_wake(fd, target);
	return result;
}

/*
 * fcntl is variadic: its one argument, when the command takes one, is an
 * int, a long or a pointer, each passed in the same register, so it is
 * read and forwarded as a pointer-sized word, as glibc's own fcntl does.
 * Only F_DUPFD and F_DUPFD_CLOEXEC (Rust's try_clone, for one) concern
 * the shim.  fcntl64 is the same function on x86-64, under the name
 * programs built for 64-bit file offsets call.
 */
#define FCNTL_BODY(real)                                                                \
	do {                                                                            \
		va_list arguments;                                                      \
		va_start(arguments, command);                                           \
		void *argument = va_arg(arguments, void *);                             \
		va_end(arguments);                                                      \
		REAL_OR_RAW(real, SYS_fcntl, fd, command, (long)argument, 0, 0, 0);    \
		int result = tdshim_real_##real(fd, command, argument);                 \
		if (caa_unlikely(command == F_DUPFD || command == F_DUPFD_CLOEXEC) && result >= 0) \
			copy_wake(fd, result);                                          \
		return result;                                                          \
	} while (0)

TDSHIM_EXPORT int fcntl(int fd, int command, ...)
{
	FCNTL_BODY(fcntl);
}

TDSHIM_EXPORT int fcntl64(int fd, int command, ...)
{
	FCNTL_BODY(fcntl64);
}
