/* SPDX-License-Identifier: MIT */
/*
 * rt_lazy_fork (TDTEST_LAZY_FORK=1, lazy_fork_hook.c): a fork while
 * another thread runs the shim's lazy start-up.  Prints landed=0|1 and,
 * when it landed, child=0 (the child's first wrapped call returned, its
 * region its own), 3 (returned, region not its own) or -1 (hung).
 */
#include <stdio.h>

extern int lazy_fork_landed, lazy_fork_child;

int main(void)
{
	printf("landed=%d\nchild=%d\n", lazy_fork_landed, lazy_fork_child);
	return 0;
}
