/* SPDX-License-Identifier: MIT */
/*
 * C11's <threads.h> calls give the same results with the shim preloaded
 * as without (the shim runs them on its pthread paths: runtime/
 * wrap_mutex.c).  Prints each result; tests/break11/transparency_test.py
 * compares the output bare and preloaded (session 17's review, helper-58,
 * compared these and more by hand).
 */
#include <errno.h>
#include <stdio.h>
#include <threads.h>
#include <time.h>

static mtx_t held;

static int hold(void *argument)
{
	(void)argument;
	return mtx_lock(&held) == thrd_success ? 0 : 1;
}

static int returns(void *argument)
{
	return (int)(long)argument;
}

int main(void)
{
	const struct timespec past = { 0, 0 };
	struct timespec bad = { 0, 2000000000L }, left = { 0, 0 };
	mtx_t recursive;
	cnd_t cond;
	thrd_t thread;
	int result = 7;

	int code = thrd_join(thrd_current(), &result);

	/* glibc writes *result from an uninitialized variable here: only
	 * the code compares. */
	printf("join self: %d\n", code);
	for (long value = -2; value <= 256; value += 129) {
		result = 0;
		thrd_create(&thread, returns, (void *)value);
		code = thrd_join(thread, &result);
		printf("join %ld: %d, result %d\n", value, code, result);
	}
	mtx_init(&held, mtx_timed);
	thrd_create(&thread, hold, NULL);
	thrd_join(thread, NULL);
	printf("timedlock held, past: %d\n", mtx_timedlock(&held, &past));
	printf("trylock held: %d\n", mtx_trylock(&held));
	mtx_init(&recursive, mtx_plain | mtx_recursive);
	int codes[6];
	codes[0] = mtx_lock(&recursive);
	codes[1] = mtx_lock(&recursive);
	codes[2] = mtx_trylock(&recursive);
	codes[3] = mtx_unlock(&recursive);
	codes[4] = mtx_unlock(&recursive);
	codes[5] = mtx_unlock(&recursive);
	printf("recursive: %d %d %d %d %d %d\n", codes[0], codes[1], codes[2], codes[3], codes[4], codes[5]);
	cnd_init(&cond);
	mtx_lock(&recursive);
	printf("cnd_timedwait past: %d\n", cnd_timedwait(&cond, &recursive, &past));
	code = cnd_signal(&cond);
	printf("cnd_signal: %d\n", code);
	code = cnd_broadcast(&cond);
	printf("cnd_broadcast: %d\n", code);
	mtx_unlock(&recursive);
	errno = 0;
	printf("thrd_sleep invalid: %d, errno %d\n", thrd_sleep(&bad, &left), errno);
	bad.tv_nsec = 1000;
	printf("thrd_sleep 1 us: %d\n", thrd_sleep(&bad, NULL));
	return 0;
}
