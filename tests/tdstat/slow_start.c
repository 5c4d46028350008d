/* SPDX-License-Identifier: MIT */
/* A program linked with slow_init.c's library: see there. */
int slow_init_done(void);

int main(void)
{
	return slow_init_done();
}
