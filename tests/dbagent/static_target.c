/* SPDX-License-Identifier: MIT */
/* A statically linked program: prints "ready", exits at EOF on stdin. */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	char buffer[64];

	printf("ready\n");
	fflush(stdout);
	while (read(0, buffer, sizeof(buffer)) > 0)
		;
	return 0;
}
