/* SPDX-License-Identifier: MIT */
/*
 * rt_lazy_fork (TDTEST_LAZY_FORK=fork|atfork|vfork, lazy_fork_hook.c): a
 * fork or vfork while another thread runs the shim's lazy start-up.
 * Prints landed=0|1 and, when it landed, child=0 (the region, the child's
 * or after a vfork the parent's, is its process's own, started and
 * gathering), 3 (it is not) or -1 (the child hung).
 */
#include <stdio.h>

extern int lazy_fork_landed, lazy_fork_child;

int main(void)
{
	printf("landed=%d\nchild=%d\n", lazy_fork_landed, lazy_fork_child);
	return 0;
}
