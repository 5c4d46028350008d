/* SPDX-License-Identifier: MIT */
/* break5 probe: errno of waits while the credit samples fail (argument given: a seccomp filter refusing clock_gettime(CLOCK_THREAD_CPUTIME_ID) with EPERM).  Under the shim, prints "bad 0" and exits 0 when every ETIMEDOUT and EAGAIN came through. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static sem_t a, b; static volatile int stop; static int bad;
static void pin(int c) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(c, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
static void *p(void *x) { int me = (int)(long)x; pin(me);
	for (int i = 0; i < 2000; i++) {
		if (me) { sem_wait(&a); sem_post(&b); } else { sem_post(&a); sem_wait(&b); }
		if (me && i % 100 == 0) {
			struct timespec t; clock_gettime(CLOCK_REALTIME, &t); t.tv_nsec += 100000; if (t.tv_nsec >= 1000000000) { t.tv_sec++; t.tv_nsec -= 1000000000; }
			sem_t z; sem_init(&z, 0, 0); errno = 0; int r = sem_timedwait(&z, &t); if (r != -1 || errno != ETIMEDOUT) { bad++; printf("timedwait %d errno %d\n", r, errno); }
			int w = 1; errno = 0; long q = syscall(SYS_futex, &w, FUTEX_WAIT_PRIVATE, 0, NULL); if (q != -1 || errno != EAGAIN) { bad++; printf("futex %ld errno %d\n", q, errno); }
		}
	}
	return NULL; }
int main(int argc, char **argv) {
	if (argc > 1) {
		struct sock_filter code[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clock_gettime, 0, 3),
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CLOCK_THREAD_CPUTIME_ID, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
		struct sock_fprog pr = { .len = 6, .filter = code };
		prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &pr);
	}
	sem_init(&a, 0, 0); sem_init(&b, 0, 0); pthread_t t[2];
	for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, p, (void *)i);
	for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
	printf("bad %d\n", bad); return bad != 0;
}
