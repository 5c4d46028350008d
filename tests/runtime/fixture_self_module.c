/* SPDX-License-Identifier: MIT */
/*
 * A pthread_self that is not glibc's: thread numbers, from 1, as a test
 * double or a green-thread layer might hand out (fixture_self.c's
 * program defines it, or a library preloaded after the shim).
 */
#include <pthread.h>

static __thread unsigned long thread_number;
static unsigned long numbers_given;

pthread_t pthread_self(void)
{
	if (!thread_number)
		thread_number = __atomic_add_fetch(&numbers_given, 1, __ATOMIC_RELAXED);
	return (pthread_t)thread_number;
}
