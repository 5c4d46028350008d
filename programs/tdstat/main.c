/* SPDX-License-Identifier: MIT */
/*
 * tdstat: concurrency statistics of a live process (docs/CONTRACT.md §6).
 *
 *   tdstat [-i SECS] [-c COUNT] [-t] [-w] [--format F] [--plot IMAGE] PID
 *   tdstat -s [--format F] PID
 *   tdstat enable|disable|reset PID
 *   tdstat sync enable|disable PID
 *   tdstat run [--format F] [-o FILE] [--plot IMAGE [-i SECS]] -- CMD [ARG...]
 *   tdstat ps [-i SECS] [--format F]
 *   tdstat serve [--listen ADDR:PORT]
 *   tdstat core [--format F] [-t] [-w] COREFILE [EXECUTABLE]
 */
#include "format.h"
#include "plot.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#ifndef TDSTAT_VERSION
#error "TDSTAT_VERSION must be the project's version"
#endif

enum { OPTION_JSON = 256, OPTION_FORMAT, OPTION_PLOT };

/* Every subcommand that prints statistics takes these two. */
#define FORMAT_LONG_OPTIONS                                        \
	{ "format", required_argument, NULL, OPTION_FORMAT },      \
	{ "json", no_argument, NULL, OPTION_JSON }

static const char usage_text[] =
	"Usage: tdstat [-i SECS] [-c COUNT] [-t] [-w] [--format F] [--plot IMAGE] PID\n"
	"       tdstat -s [--format F] PID\n"
	"       tdstat enable|disable|reset PID\n"
	"       tdstat sync enable|disable PID\n"
	"       tdstat run [--format F] [-o FILE] [--plot IMAGE [-i SECS]] -- CMD [ARG...]\n"
	"       tdstat ps [-i SECS] [--format F]\n"
	"       tdstat serve [--listen ADDR:PORT]\n"
	"       tdstat core [--format F] [-t] [-w] [-s] COREFILE [EXECUTABLE]\n"
	"\n"
	"Thread-concurrency statistics (Solaris's td_ta_get_stats) of a process\n"
	"running with libtdshim.so preloaded, read through libc_db.\n"
	"\n"
	"  PID              print a line every interval: the first covers the\n"
	"                   window so far, each later one the last interval\n"
	"  -i, --interval SECS  seconds between lines (default 1)\n"
	"  -c, --count COUNT    print COUNT lines, then exit (default: until ^C)\n"
	"  -t, --threads    a row per thread under each line: its runnable, CPU,\n"
	"                   run-queue, idle by kind and untracked shares\n"
	"  -w, --objects    the objects idle time went to, heaviest first, named\n"
	"                   from the target's symbol tables, with their callers\n"
	"  -s, --sync       per-object statistics (per-object tracking on), one row\n"
	"                   per mutex, condvar, rwlock or semaphore, heaviest (by\n"
	"                   sleep time) first, named as -w names objects; once\n"
	"  --format F       text (default), json (one object per line), csv,\n"
	"                   openmetrics (one exposition per line, # EOF ended)\n"
	"  --json           the same as --format json\n"
	"  --plot IMAGE     also draw the lines over time into IMAGE (.png or .svg):\n"
	"                   running, runnable and idle by kind, stacked\n"
	"  enable PID       start a new window (gathering on)\n"
	"  disable PID      stop gathering; the averages freeze\n"
	"  reset PID        start a new window now\n"
	"  sync enable|disable PID  per-object tracking on or off (-s)\n"
	"  run -- CMD       run CMD under the shim, print its statistics on stderr\n"
	"                   when it ends; exit with its status (128+N for signal N)\n"
	"  -o, --output FILE    (run) write the statistics to FILE\n"
	"  -i SECS          (run --plot) seconds between samples (default 0.1)\n"
	"  ps               the processes here with the shim loaded: pid, command,\n"
	"                   gathering, threads, runnable and idle over -i SECS\n"
	"                   (default 0.2)\n"
	"  serve            answer GET /metrics (OpenMetrics, for Prometheus) with\n"
	"                   the processes ps lists, until SIGINT or SIGTERM\n"
	"  --listen ADDR:PORT   (serve) where (default 127.0.0.1:9464)\n"
	"  core COREFILE    the statistics at the moment of a core dump (kernel\n"
	"                   or gcore); EXECUTABLE: the program, if moved\n"
	"  -h, --help       this text\n"
	"  -V, --version    the version\n"
	"\n"
	"Environment: TDSTAT_SHIM overrides the libtdshim.so that `run` preloads.\n"
	"See tdstat(1), libtdshim(7), td_ta_enable_stats(3).\n";

void tdstat_error(const char *format, ...)
{
	va_list arguments;

	fputs("tdstat: ", stderr);
	va_start(arguments, format);
	vfprintf(stderr, format, arguments);
	va_end(arguments);
	fputc('\n', stderr);
}

static int usage_error(const char *message, const char *detail)
{
	tdstat_error("%s%s; see `tdstat --help`", message, detail ? detail : "");
	return TDSTAT_EXIT_USAGE;
}

static int parse_pid(const char *text, pid_t *pid)
{
	char *end;
	long value;

	errno = 0;
	value = strtol(text, &end, 10);
	if (errno || end == text || *end || value <= 0 || value > INT_MAX)
		return -1;
	*pid = (pid_t)value;
	return 0;
}

static int parse_interval(const char *text, double *seconds)
{
	char *end;
	double value = strtod(text, &end);

	if (end == text || *end || !isfinite(value) || value < 0.001 || value > 86400.0)
		return -1;
	*seconds = value;
	return 0;
}

static int parse_count(const char *text, long *count)
{
	char *end;
	long value;

	errno = 0;
	value = strtol(text, &end, 10);
	if (errno || end == text || *end || value <= 0)
		return -1;
	*count = value;
	return 0;
}

/* --format F or --json: true when `option` was one of them, with
 * *format set; false when it was another, or a format we do not know
 * (*status is then the usage error). */
static bool format_option(int option, const char *argument,
			  const struct tdstat_format **format, int *status)
{
	*status = TDSTAT_EXIT_OK;
	if (option == OPTION_JSON)
		*format = tdstat_format_find("json");
	else if (option != OPTION_FORMAT)
		return false;
	else if (!(*format = tdstat_format_find(argument))) {
		char detail[160];

		snprintf(detail, sizeof(detail), "%s (one of %s)", argument, tdstat_format_names());
		*status = usage_error("unknown format ", detail);
		return false;
	}
	return true;
}

static int parse_plot(const char *path, const char **plot_path)
{
	if (!tdstat_plot_path_valid(path))
		return usage_error("--plot takes a .png or .svg file name: ", path);
	*plot_path = path;
	return TDSTAT_EXIT_OK;
}

/* Options given to a subcommand it does not take, or unknown ones. */
static int option_error(int option, const char *argument)
{
	if (option == ':')
		return usage_error("missing argument to ", argument);
	return usage_error("unknown option ", argument);
}

/* -s PID: the rows once (the other options of live mode do not apply). */
static void explain_sync(td_err_e err, const void *context)
{
	const struct tdstat_target *target = context;

	if (err == TD_NOCAPAB)
		tdstat_error("process %d: per-object tracking is off (turn it on with `tdstat sync enable PID` or "
			     "TDSTAT_SYNC_TRACKING=1), or its shim has none",
			     (int)target->pid);
	else
		tdstat_target_explain(target, err);
}

static int main_sync_show(const struct tdstat_watch_options *options)
{
	struct tdstat_symbolizer *symbolizer;
	struct tdstat_target target;
	int status;

	if (options->threads || options->objects || options->plot_path || options->count ||
	    options->interval_s != 1.0)
		return usage_error("-s prints the objects once: it takes --format only", NULL);
	if (tdstat_target_open(&target, options->pid) < 0)
		return TDSTAT_EXIT_FAILURE;
	symbolizer = tdstat_symbolizer_open(options->pid);
	status = tdstat_sync_print(target.agent, options->pid, symbolizer, options->format, explain_sync, &target);
	tdstat_symbolizer_close(symbolizer);
	tdstat_target_close(&target);
	return status;
}

static int main_sync_control(int argc, char **argv)
{
	pid_t pid;

	if (argc != 4 || (strcmp(argv[2], "enable") && strcmp(argv[2], "disable")))
		return usage_error("usage: tdstat sync enable|disable PID", NULL);
	if (parse_pid(argv[3], &pid) < 0)
		return usage_error("not a process ID: ", argv[3]);
	return tdstat_sync_control(!strcmp(argv[2], "enable"), pid);
}

static int main_watch(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'c' },
		{ "threads", no_argument, NULL, 't' },
		{ "objects", no_argument, NULL, 'w' },
		{ "sync", no_argument, NULL, 's' },
		{ "plot", required_argument, NULL, OPTION_PLOT },
		FORMAT_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct tdstat_watch_options options = { .interval_s = 1.0 };
	int option, status;

	while ((option = getopt_long(argc, argv, "+:i:c:tws", long_options, NULL)) != -1) {
		if (format_option(option, optarg, &options.format, &status))
			continue;
		if (status != TDSTAT_EXIT_OK)
			return status;
		switch (option) {
		case 't':
			options.threads = true;
			break;
		case 'w':
			options.objects = true;
			break;
		case 's':
			options.sync = true;
			break;
		case 'i':
			if (parse_interval(optarg, &options.interval_s) < 0)
				return usage_error("bad interval: ", optarg);
			break;
		case 'c':
			if (parse_count(optarg, &options.count) < 0)
				return usage_error("bad count: ", optarg);
			break;
		case OPTION_PLOT:
			if (parse_plot(optarg, &options.plot_path) != TDSTAT_EXIT_OK)
				return TDSTAT_EXIT_USAGE;
			break;
		default:
			return option_error(option, argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		return usage_error(argc == optind ? "no PID given" : "more than one PID given", NULL);
	if (parse_pid(argv[optind], &options.pid) < 0)
		return usage_error("not a process ID: ", argv[optind]);
	if (options.sync)
		return main_sync_show(&options);
	return tdstat_watch(&options);
}

static int main_control(enum tdstat_control_action action, int argc, char **argv)
{
	pid_t pid;

	if (argc != 3)
		return usage_error(argc < 3 ? "no PID given to " : "too many arguments to ", argv[1]);
	if (parse_pid(argv[2], &pid) < 0)
		return usage_error("not a process ID: ", argv[2]);
	return tdstat_control(action, pid);
}

static int main_run(int argc, char **argv)
{
	static const struct option long_options[] = {
		FORMAT_LONG_OPTIONS,
		{ "output", required_argument, NULL, 'o' },
		{ "plot", required_argument, NULL, OPTION_PLOT },
		{ "interval", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	struct tdstat_run_options options = { .interval_s = 0.1 };
	bool interval_given = false;
	int option, status;

	/* Parse after "run"; '+' stops at CMD so its options stay its own. */
	argc--;
	argv++;
	optind = 1;
	while ((option = getopt_long(argc, argv, "+:o:i:", long_options, NULL)) != -1) {
		if (format_option(option, optarg, &options.format, &status))
			continue;
		if (status != TDSTAT_EXIT_OK)
			return status;
		switch (option) {
		case 'o':
			options.output_path = optarg;
			break;
		case OPTION_PLOT:
			if (parse_plot(optarg, &options.plot_path) != TDSTAT_EXIT_OK)
				return TDSTAT_EXIT_USAGE;
			break;
		case 'i':
			if (parse_interval(optarg, &options.interval_s) < 0)
				return usage_error("bad interval: ", optarg);
			interval_given = true;
			break;
		default:
			return option_error(option, argv[optind - 1]);
		}
	}
	if (optind == argc)
		return usage_error("no command given to run", NULL);
	if (interval_given && !options.plot_path)
		return usage_error("-i is the interval of --plot: give --plot IMAGE too", NULL);
	options.argv = argv + optind;
	return tdstat_run(&options);
}

static int main_ps(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "interval", required_argument, NULL, 'i' },
		FORMAT_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct tdstat_ps_options options = { .interval_s = 0.2 };
	int option, status;

	argc--;
	argv++;
	optind = 1;
	while ((option = getopt_long(argc, argv, "+:i:", long_options, NULL)) != -1) {
		if (format_option(option, optarg, &options.format, &status))
			continue;
		if (status != TDSTAT_EXIT_OK)
			return status;
		if (option != 'i')
			return option_error(option, argv[optind - 1]);
		if (parse_interval(optarg, &options.interval_s) < 0)
			return usage_error("bad interval: ", optarg);
	}
	if (optind != argc)
		return usage_error("ps takes no argument: ", argv[optind]);
	return tdstat_ps(&options);
}

static int main_serve(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	struct tdstat_serve_options options = { 0 };
	int option;

	argc--;
	argv++;
	optind = 1;
	while ((option = getopt_long(argc, argv, "+:", long_options, NULL)) != -1) {
		if (option != 'l')
			return option_error(option, argv[optind - 1]);
		options.listen = optarg;
	}
	if (optind != argc)
		return usage_error("serve takes no argument: ", argv[optind]);
	return tdstat_serve(&options);
}

static int main_core(int argc, char **argv)
{
	static const struct option long_options[] = {
		FORMAT_LONG_OPTIONS,
		{ "threads", no_argument, NULL, 't' },
		{ "objects", no_argument, NULL, 'w' },
		{ "sync", no_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct tdstat_core_options options = { 0 };
	int option, status;

	argc--;
	argv++;
	optind = 1;
	while ((option = getopt_long(argc, argv, ":tws", long_options, NULL)) != -1) {
		if (format_option(option, optarg, &options.format, &status))
			continue;
		if (status != TDSTAT_EXIT_OK)
			return status;
		switch (option) {
		case 't':
			options.threads = true;
			break;
		case 'w':
			options.objects = true;
			break;
		case 's':
			options.sync = true;
			break;
		default:
			return option_error(option, argv[optind - 1]);
		}
	}
	if (options.sync && (options.threads || options.objects))
		return usage_error("core -s prints the objects alone: not with -t or -w", NULL);
	if (argc - optind < 1 || argc - optind > 2)
		return usage_error(argc == optind ? "no core file given" : "too many arguments to core", NULL);
	options.core_path = argv[optind];
	options.executable_path = argc - optind == 2 ? argv[optind + 1] : NULL;
	return tdstat_core(&options);
}

static int main_information(const char *argument)
{
	if (!strcmp(argument, "--help") || !strcmp(argument, "-h")) {
		fputs(usage_text, stdout);
		return TDSTAT_EXIT_OK;
	}
	printf("tdstat %s\n", TDSTAT_VERSION);
	return TDSTAT_EXIT_OK;
}

static bool is_information(const char *argument)
{
	static const char *const names[] = { "--help", "-h", "--version", "-V" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(argument, names[i]))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	const char *command = argc > 1 ? argv[1] : "";

	opterr = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		return usage_error("no PID or subcommand given", NULL);
	if (is_information(command))
		return main_information(command);
	if (!strcmp(command, "enable"))
		return main_control(TDSTAT_CONTROL_ENABLE, argc, argv);
	if (!strcmp(command, "disable"))
		return main_control(TDSTAT_CONTROL_DISABLE, argc, argv);
	if (!strcmp(command, "reset"))
		return main_control(TDSTAT_CONTROL_RESET, argc, argv);
	if (!strcmp(command, "sync"))
		return main_sync_control(argc, argv);
	if (!strcmp(command, "run"))
		return main_run(argc, argv);
	if (!strcmp(command, "ps"))
		return main_ps(argc, argv);
	if (!strcmp(command, "serve"))
		return main_serve(argc, argv);
	if (!strcmp(command, "core"))
		return main_core(argc, argv);
	return main_watch(argc, argv);
}
