/* SPDX-License-Identifier: MIT */
/* What rt_lifecycle's two files share (fixture_lifecycle.c). */
#ifndef TDSTAT_FIXTURE_LIFECYCLE_H
#define TDSTAT_FIXTURE_LIFECYCLE_H

#include <semaphore.h>

extern sem_t start_gate, hold_gate;
void publish_self(void);

void *lifecycle_exits_without_unwind_tables(void *arg);
void *lifecycle_thrd_exits_without_unwind_tables(void *arg);
void *lifecycle_cancel_without_unwind_tables(void *arg);
void *lifecycle_async_cancel_without_unwind_tables(void *arg);
void lifecycle_exit_now_without_unwind_tables(void);

#endif
