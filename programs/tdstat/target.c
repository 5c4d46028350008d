/* SPDX-License-Identifier: MIT */
/*
 * A PID -> a libc_db agent, with libtdstat_ps as the proc_service
 * provider, and the one-line explanation of every way that can fail.
 */
#include "tdstat.h"

#include <string.h>

#include <tdstat/ps_live.h>
#include <tdstat/region.h>

static void explain_process_status(enum tdps_status status, pid_t pid)
{
	char line[512];

	tdstat_error("%s", tdps_explain(status, pid, line, sizeof(line)));
}

static void explain_no_shim(pid_t pid)
{
	const char *expected;
	const char *shim = tdstat_shim_path(&expected);

	tdstat_error("process %d has not loaded libtdshim.so, so it keeps no "
		     "statistics: start it with `tdstat run -- CMD` or "
		     "`LD_PRELOAD=%s CMD` (static and setuid programs ignore "
		     "LD_PRELOAD)", (int)pid, shim ? shim : expected);
}

/* TD_VERSION also covers a region whose magic is not written yet: the
 * shim writes it last, when its constructor has run, and a library
 * constructor that runs before it (or blocks) leaves it 0.  Reading those
 * 8 bytes is all the command interprets of the region itself. */
static bool shim_starting(const struct tdstat_target *target)
{
	psaddr_t region;
	uint64_t magic;

	if (!target->process ||
	    ps_pglobal_lookup(target->process, "libtdshim.so", TDSTAT_REGION_SYMBOL, &region) != PS_OK ||
	    ps_pdread(target->process, region, &magic, sizeof(magic)) != PS_OK)
		return false;
	return magic == 0;
}

void tdstat_target_explain(const struct tdstat_target *target, td_err_e err)
{
	pid_t pid = target->pid;
	enum tdps_status status;

	switch (err) {
	case TD_NOLIBTHREAD:
		explain_no_shim(pid);
		return;
	case TD_VERSION:
		if (shim_starting(target)) {
			tdstat_error("the shim in process %d has not finished "
				     "starting (library constructors are still "
				     "running): try again in a moment", (int)pid);
			return;
		}
		tdstat_error("process %d runs a libtdshim.so of another ABI "
			     "version: use the tdstat installed with that shim",
			     (int)pid);
		return;
	case TD_MALLOC:
		tdstat_error("out of memory reading process %d", (int)pid);
		return;
	case TD_DBERR:
		status = target->process ? tdps_last_status(target->process)
					 : (enum tdps_status)target->open_status;
		if (status != TDPS_OK) {
			explain_process_status(status, pid);
			return;
		}
		tdstat_error("the statistics region of process %d is damaged or "
			     "keeps changing; try again", (int)pid);
		return;
	default:
		tdstat_error("libc_db failed on process %d (td_err_e %d)",
			     (int)pid, (int)err);
		return;
	}
}

bool tdstat_target_vanished(const struct tdstat_target *target, td_err_e err)
{
	enum tdps_status status;

	if (err != TD_DBERR)
		return false;
	status = target->process ? tdps_last_status(target->process)
				 : (enum tdps_status)target->open_status;
	return status == TDPS_NO_PROCESS;
}

td_err_e tdstat_target_attach(struct tdstat_target *target, pid_t pid)
{
	enum tdps_status status;
	td_err_e err;

	memset(target, 0, sizeof(*target));
	target->pid = pid;
	err = td_init();
	if (err != TD_OK)
		return err;
	status = tdps_open(pid, &target->process);
	if (status != TDPS_OK) {
		target->open_status = (int)status;
		target->process = NULL;
		return TD_DBERR;
	}
	err = td_ta_new(target->process, &target->agent);
	if (err != TD_OK) {
		target->agent = NULL;
		return err;
	}
	return TD_OK;
}

int tdstat_target_open(struct tdstat_target *target, pid_t pid)
{
	td_err_e err = tdstat_target_attach(target, pid);

	if (err == TD_OK)
		return 0;
	tdstat_target_explain(target, err);
	tdstat_target_close(target);
	return -1;
}

/* Keeps pid and open_status: a failed open can still be explained. */
void tdstat_target_close(struct tdstat_target *target)
{
	if (target->agent)
		td_ta_delete(target->agent);
	if (target->process)
		tdps_close(target->process);
	target->agent = NULL;
	target->process = NULL;
}

td_err_e tdstat_target_snapshot(const struct tdstat_target *target, td_ta_stats_ns_t *stats)
{
	memset(stats, 0, sizeof(*stats));
	stats->size = sizeof(*stats);
	return td_ta_get_stats_ns(target->agent, stats);
}
