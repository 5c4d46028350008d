/* SPDX-License-Identifier: MIT */
/*
 * Reading and writing a live target: process_vm_readv/writev first (one
 * syscall, no file position), then /proc/PID/mem, which also reaches pages
 * the first path cannot (a read-only page, for instance) and still works
 * through the descriptor opened when access was granted.
 */
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include <proc_service.h>

#include "ps_live_private.h"

/* Returns 0, or the errno of the failure that ended the transfer. */
static int transfer_vm(pid_t tid, uintptr_t address, void *buffer, size_t size, bool write)
{
	size_t done = 0;

	while (done < size) {
		struct iovec local = { (char *)buffer + done, size - done };
		struct iovec remote = { (void *)(address + done), size - done };
		ssize_t moved = write ? process_vm_writev(tid, &local, 1, &remote, 1, 0)
				      : process_vm_readv(tid, &local, 1, &remote, 1, 0);

		if (moved > 0)
			done += (size_t)moved;
		else if (moved < 0 && errno == EINTR)
			continue;
		else
			return moved < 0 ? errno : EFAULT;
	}
	return 0;
}

static int transfer_mem(int fd, uintptr_t address, void *buffer, size_t size, bool write)
{
	size_t done = 0;

	if (fd < 0)
		return EBADF;
	/* off_t is signed: higher addresses are not user memory anyway. */
	if (address > (uintptr_t)INT64_MAX - size)
		return EFAULT;
	while (done < size) {
		off_t offset = (off_t)(address + done);
		ssize_t moved = write ? pwrite(fd, (const char *)buffer + done, size - done, offset)
				      : pread(fd, (char *)buffer + done, size - done, offset);

		if (moved > 0)
			done += (size_t)moved;
		else if (moved < 0 && errno == EINTR)
			continue;
		else
			return moved < 0 ? errno : EIO;
	}
	return 0;
}

/* How many threads a transfer tries before it believes the process gone:
 * each one we pick may exit before we use it. */
#define THREAD_RETRIES 8

static ps_err_e transfer(struct ps_prochandle *ph, uintptr_t address, void *buffer, size_t size, bool write)
{
	int error, retries = THREAD_RETRIES;
	pid_t tid;

	if (!ph)
		return PS_BADPID;
	if (size == 0)
		return PS_OK;
	if (!buffer || address > UINTPTR_MAX - size) {
		tdps_set_status(ph, TDPS_IO);
		return PS_BADADDR;
	}
	tid = atomic_load_explicit(&ph->access_tid, memory_order_relaxed);
	error = transfer_vm(tid, address, buffer, size, write);
	/* The thread we went through has exited (the leader of a process
	 * whose main called pthread_exit, say): go through another. */
	while (error == ESRCH && retries-- > 0) {
		pid_t next = tdps_live_thread(ph->pid);

		if (next == 0 || next == tid)
			break;
		atomic_store_explicit(&ph->access_tid, next, memory_order_relaxed);
		tid = next;
		error = transfer_vm(tid, address, buffer, size, write);
	}
	if (error == 0)
		return PS_OK;
	/* A vanished process gives no second chance; anything else might
	 * be a page only /proc/PID/mem can reach, or a kernel without
	 * process_vm_readv. */
	if (error != ESRCH) {
		int mem_error = transfer_mem(ph->mem_fd, address, buffer, size, write);

		if (mem_error == 0)
			return PS_OK;
		if (error == ENOSYS || error == EFAULT)
			error = mem_error;
	}
	tdps_set_status(ph, tdps_status_from_errno(ph->pid, error));
	return error == EFAULT || error == EIO ? PS_BADADDR : PS_ERR;
}

ps_err_e tdps_memory_read(struct ps_prochandle *ph, uintptr_t address, void *buffer, size_t size)
{
	return transfer(ph, address, buffer, size, false);
}

ps_err_e tdps_memory_write(struct ps_prochandle *ph, uintptr_t address, const void *buffer, size_t size)
{
	/* transfer() does not write through `buffer` when writing. */
	return transfer(ph, address, (void *)buffer, size, true);
}
