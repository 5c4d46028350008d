/* SPDX-License-Identifier: MIT */
/*
 * A system call without libc, for test threads started by a raw clone:
 * they share the main thread's thread-local data, so they must not call
 * anything in libc that touches it (errno included; the shim's syscall()
 * wrapper too).  x86-64 only; callers guard with __x86_64__.
 */
#ifndef TDTEST_RAW_SYSCALL_H
#define TDTEST_RAW_SYSCALL_H

#if defined(__x86_64__)
static inline long tdtest_raw_syscall4(long number, long a, long b, long c, long d)
{
	long result;
	register long r10 __asm__("r10") = d;

	__asm__ volatile("syscall"
			 : "=a"(result)
			 : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return result;
}
#endif

#endif /* TDTEST_RAW_SYSCALL_H */
