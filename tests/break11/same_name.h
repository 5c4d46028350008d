/* SPDX-License-Identifier: MIT */
#include <pthread.h>

extern pthread_mutex_t same_name_lock;
extern pthread_cond_t same_name_cond;
void start_waiter_a(pthread_t *thread);
void start_waiter_b(pthread_t *thread);
