/* SPDX-License-Identifier: MIT */
/*
 * What threads.c and the formats call for names, call sites, sync rows
 * and deadlocks, for the tests that print hand-made rows without a
 * target (thread_rows_test.c, steal_test.c): the rest of tdstat stays out
 * of them.
 */
#include <stdio.h>

#include "tdstat.h"

void tdstat_object_name(struct tdstat_symbolizer *symbolizer, pid_t pid, int kind, uint64_t object, char *name,
			size_t size)
{
	(void)symbolizer, (void)pid, (void)kind, (void)object;
	snprintf(name, size, "-");
}
bool tdstat_symbolize_caller(struct tdstat_symbolizer *symbolizer, uint64_t return_address, char *name, size_t size,
			     uint64_t *function)
{
	(void)symbolizer, (void)return_address, (void)name, (void)size, (void)function;
	return false;
}
const char *tdstat_sync_type_name(uint32_t type)
{
	(void)type;
	return "-";
}
void tdstat_thread_text(char *text, size_t size, pid_t tid, const char *name)
{
	snprintf(text, size, "%d (%s)", (int)tid, name);
}
void tdstat_deadlock_text(const struct tdstat_deadlock *cycle, char *text, size_t size)
{
	(void)cycle;
	snprintf(text, size, "-");
}
