/* SPDX-License-Identifier: MIT */
/*
 * A user of the installed libc_db: reads its own statistics through
 * libtdstat_ps, as a monitor reads another process's.
 *
 *   consumer shim      expects the shim preloaded with gathering on
 *   consumer no-shim   expects td_ta_new to say TD_NOLIBTHREAD
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <proc_service.h>
#include <thread_db.h>
#include <tdstat/ps_live.h>
#include <tdstat/thread_db_stats.h>

static int read_statistics(td_thragent_t *agent)
{
	td_ta_stats_ns_t nanoseconds = { .size = sizeof(nanoseconds) };
	td_ta_stats_t stats;

	if (td_ta_get_stats(agent, &stats) != TD_OK ||
	    td_ta_get_stats_ns(agent, &nanoseconds) != TD_OK) {
		fprintf(stderr, "consumer: reading the statistics failed\n");
		return 1;
	}
	printf("consumer: nthreads %d, enabled %u, lwps %d/%d\n", stats.nthreads,
	       nanoseconds.enabled, stats.nlwps_num, stats.nlwps_den);
	return stats.nthreads == 1 && nanoseconds.enabled == 1 ? 0 : 1;
}

int main(int argc, char **argv)
{
	int expect_shim = argc > 1 && !strcmp(argv[1], "shim");
	struct ps_prochandle *process;
	td_thragent_t *agent;
	td_err_e err;
	int status;

	if (td_init() != TD_OK || tdps_open(getpid(), &process) != TDPS_OK) {
		fprintf(stderr, "consumer: cannot open myself\n");
		return 1;
	}
	err = td_ta_new(process, &agent);
	if (!expect_shim) {
		tdps_close(process);
		printf("consumer: td_ta_new gave %d without the shim\n", (int)err);
		return err == TD_NOLIBTHREAD ? 0 : 1;
	}
	if (err != TD_OK) {
		fprintf(stderr, "consumer: td_ta_new failed: %d\n", (int)err);
		return 1;
	}
	status = read_statistics(agent);
	td_ta_delete(agent);
	tdps_close(process);
	return status;
}
