/* SPDX-License-Identifier: MIT */
/*
 * libaccuracy_hide_syscall.so: preloaded ahead of the shim, it turns the
 * shim's interposition of syscall() off, so the suite can show that it
 * catches a shim that misses futex waits (the broken-shim case in
 * CMakeLists.txt).
 *
 * Its syscall() is found first, and calls libc's own definition, looked
 * up in libc itself: RTLD_NEXT would find the shim's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

typedef long syscall_function(long, ...);

/* Threads that race here all store the same pointer: relaxed is enough. */
static syscall_function *libc_syscall(void)
{
	static syscall_function *real;
	syscall_function *found = __atomic_load_n(&real, __ATOMIC_RELAXED);

	if (!found) {
		void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);

		found = libc ? (syscall_function *)dlsym(libc, "syscall") : NULL;
		if (!found)
			abort();
		__atomic_store_n(&real, found, __ATOMIC_RELAXED);
	}
	return found;
}

/* Six arguments: the most any Linux system call takes; reading unused
 * ones is harmless, as in glibc's own syscall(). */
__attribute__((visibility("default"))) long syscall(long number, ...)
{
	long argument[6];
	va_list list;

	va_start(list, number);
	for (int i = 0; i < 6; i++)
		argument[i] = va_arg(list, long);
	va_end(list);
	return libc_syscall()(number, argument[0], argument[1], argument[2], argument[3], argument[4],
			      argument[5]);
}
