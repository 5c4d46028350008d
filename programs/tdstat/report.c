/* SPDX-License-Identifier: MIT */
/*
 * The three ways a line of statistics is printed: a row under a header
 * (live mode), a JSON object on one line (--json), and the summary that
 * `tdstat run` prints when its command ends.
 */
#include "tdstat.h"

#include <time.h>

void tdstat_report_header(FILE *out)
{
	fprintf(out, "%-8s %8s %8s %6s %9s %8s %8s %8s %9s  %s\n",
		"TIME", "PID", "NTHREADS", "RCONC", "RUNNABLE", "RUNNING",
		"LWPS", "IDLE", "WINDOW", "IDLE BY KIND");
}

/* Below this average a kind, or the untracked figure, is left out of a
 * text row: it would only be noise. */
#define SHOWN_MIN 0.005

/* "cond 2.00 mutex 0.98 sleep 1.00": the kinds with idle time, heaviest
 * first. */
static void idle_by_text(char *text, size_t size, const struct tdstat_interval *interval)
{
	bool shown[TDSTAT_WAIT_KIND_COUNT] = { false };
	size_t used = 0;

	text[0] = '\0';
	if (!interval->has_kinds) {
		snprintf(text, size, "-");
		return;
	}
	for (;;) {
		int heaviest = -1;

		for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
			if (!shown[k] && interval->idle_by[k] >= SHOWN_MIN &&
			    (heaviest < 0 || interval->idle_by[k] > interval->idle_by[heaviest]))
				heaviest = k;
		if (heaviest < 0 || used >= size)
			break;
		shown[heaviest] = true;
		used += (size_t)snprintf(text + used, size - used, "%s%s %.2f", used ? " " : "",
					 td_wait_kind_name((unsigned)heaviest), interval->idle_by[heaviest]);
	}
}

void tdstat_report_row(FILE *out, const struct tdstat_interval *interval)
{
	char clock[16] = "-";
	time_t now = time(NULL);
	struct tm local;

	if (localtime_r(&now, &local))
		strftime(clock, sizeof(clock), "%H:%M:%S", &local);
	/* A stopped target's threads keep the states they had when it
	 * stopped: the note says why the row does not move. */
	char kinds[256], untracked[160] = "";

	idle_by_text(kinds, sizeof(kinds), interval);
	/* docs/CONTRACT.md §7: a wait the shim cannot see passes for work; the kernel
	 * tells, and the row says so. */
	if (interval->untracked >= 0.05)
		snprintf(untracked, sizeof(untracked),
			 "  untracked %.2f (asleep in waits the shim cannot see: an inline syscall, "
			 "a read; tdstat(1))", interval->untracked);
	fprintf(out, "%-8s %8d %8d %6d %9.2f %8.2f %8.2f %8.2f %8.2fs  %s%s%s\n",
		clock, (int)interval->pid, interval->nthreads,
		interval->r_concurrency, interval->runnable, interval->running,
		interval->lwps, interval->idle, interval->window_s, kinds[0] ? kinds : "-",
		untracked, interval->stopped == TDSTAT_STOPPED ? "  stopped" : "");
}

void tdstat_report_json(FILE *out, const struct tdstat_interval *interval)
{
	fprintf(out,
		"{\"pid\":%d,\"nthreads\":%d,\"r_concurrency\":%d,"
		"\"nrunnable_num\":%d,\"nrunnable_den\":%d,"
		"\"a_concurrency_num\":%d,\"a_concurrency_den\":%d,"
		"\"nlwps_num\":%d,\"nlwps_den\":%d,"
		"\"nidle_num\":%d,\"nidle_den\":%d,"
		"\"runnable\":%.6f,\"running\":%.6f,\"lwps\":%.6f,\"idle\":%.6f,"
		"\"window_s\":%.6f%s",
		(int)interval->pid, interval->nthreads, interval->r_concurrency,
		interval->nrunnable_num, interval->nrunnable_den,
		interval->a_concurrency_num, interval->a_concurrency_den,
		interval->nlwps_num, interval->nlwps_den,
		interval->nidle_num, interval->nidle_den,
		interval->runnable, interval->running, interval->lwps,
		interval->idle, interval->window_s,
		interval->stopped == TDSTAT_STOPPED_UNKNOWN ? ""
		: interval->stopped == TDSTAT_STOPPED ? ",\"stopped\":true"
						     : ",\"stopped\":false");
	/* idle_by: every kind of docs/CONTRACT.md §2, averages that sum to idle. */
	if (interval->has_kinds) {
		fputs(",\"idle_by\":{", out);
		for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
			fprintf(out, "%s\"%s\":%.6f", k ? "," : "", td_wait_kind_name((unsigned)k), interval->idle_by[k]);
		fputc('}', out);
	}
	if (interval->untracked >= 0)
		fprintf(out, ",\"untracked\":%.6f", interval->untracked);
	fputs("}\n", out);
}

static void summary_line(FILE *out, double value, const char *name,
			 int num, int den, const char *meaning)
{
	fprintf(out, "  %12.3f  %-15s %-34s (%d/%d)\n", value, name, meaning, num, den);
}

void tdstat_report_summary(FILE *out, const struct tdstat_interval *interval,
			   const char *command, bool enabled)
{
	fprintf(out, "\n Thread statistics of '%s' (pid %d), %.3f s%s:\n\n",
		command, (int)interval->pid, interval->window_s,
		enabled ? ", the whole run" : ", up to when gathering was turned off");
	fprintf(out, "  %12d  %-15s %s\n", interval->nthreads, "nthreads",
		"threads alive at exit");
	fprintf(out, "  %12d  %-15s %s\n", interval->r_concurrency, "r_concurrency",
		"requested concurrency");
	summary_line(out, interval->runnable, "nrunnable", interval->nrunnable_num,
		     interval->nrunnable_den, "runnable threads, on average");
	summary_line(out, interval->running, "a_concurrency", interval->a_concurrency_num,
		     interval->a_concurrency_den, "running threads (on a CPU)");
	summary_line(out, interval->lwps, "nlwps", interval->nlwps_num,
		     interval->nlwps_den, "LWPs (threads) in use");
	summary_line(out, interval->idle, "nidle", interval->nidle_num,
		     interval->nidle_den, "idle LWPs (waiting threads)");
	for (int k = 0; interval->has_kinds && k < TDSTAT_WAIT_KIND_COUNT; k++)
		if (interval->idle_by[k] >= SHOWN_MIN)
			fprintf(out, "  %12.3f    idle in %-10s %s\n", interval->idle_by[k],
				td_wait_kind_name((unsigned)k), "threads waiting, on average");
	fputc('\n', out);
}
