/* SPDX-License-Identifier: MIT */
/*
 * `tdstat serve [--listen ADDR:PORT]`: GET /metrics answers the families
 * of every process `ps` lists (fleet.c), for Prometheus; / is a short
 * page that links it.
 *
 * HTTP is libmicrohttpd's (docs/DESIGN.md says why): a pool of threads
 * over epoll, a limit on connections in all and per address, a timeout
 * on idle connections, and a cap on the memory of each, so a slow or
 * hostile client cannot hold the server.  The listening socket is ours
 * (bound before the daemon starts) so a bad address is one clear error
 * and port 0 tells the port it got.
 *
 * A thread of its own surveys the machine once a second (fleet.c): it
 * walks /proc and attaches new processes without the fleet's lock, and
 * takes it only to merge.  A scrape takes the lock to snapshot each
 * member through libc_db, which never stops a target, and writes the
 * text after releasing it: scrapes wait on each other only for the
 * snapshots, never for a survey.  A process started since the last
 * survey appears within a second.
 *
 * Content negotiation as the official client libraries do it:
 * OpenMetrics 1.0 when the Accept header lists
 * application/openmetrics-text, the Prometheus text format 0.0.4
 * otherwise.
 */
#include "fleet.h"
#include "format.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#define DEFAULT_LISTEN "127.0.0.1:9464"
#define SERVE_THREADS 4
#define CONNECTION_LIMIT 64
#define CONNECTIONS_PER_ADDRESS 16
#define IDLE_TIMEOUT_S 10
#define CONNECTION_MEMORY_BYTES (32 * 1024)
#define SURVEY_PERIOD_S 1

#define OPENMETRICS_TYPE "application/openmetrics-text; version=1.0.0; charset=utf-8"
#define PROMETHEUS_TEXT_TYPE "text/plain; version=0.0.4; charset=utf-8"

static const char index_page[] =
	"<!DOCTYPE html>\n"
	"<html><head><meta charset=\"utf-8\"><title>tdstat</title></head>\n"
	"<body><h1>tdstat</h1>\n"
	"<p>Thread concurrency statistics of the processes on this machine that run "
	"with libtdshim.so, read through libc_db.</p>\n"
	"<p><a href=\"/metrics\">/metrics</a>: the <code>tdstat_</code> families "
	"(OpenMetrics, or the Prometheus text format), one sample set per process.</p>\n"
	"</body></html>\n";

struct server {
	pthread_mutex_t lock; /* guards fleet and stop */
	pthread_cond_t wakeup; /* the surveyor's, signalled to stop it */
	struct tdstat_fleet *fleet;
	bool stop;
	pthread_t surveyor;
};

static void survey(struct server *server)
{
	struct tdstat_fleet_survey *survey;

	pthread_mutex_lock(&server->lock);
	survey = tdstat_fleet_survey_begin(server->fleet);
	pthread_mutex_unlock(&server->lock);
	if (!survey)
		return;
	tdstat_fleet_survey_run(survey);
	pthread_mutex_lock(&server->lock);
	tdstat_fleet_survey_apply(server->fleet, survey);
	pthread_mutex_unlock(&server->lock);
}

static void *run_surveyor(void *argument)
{
	struct server *server = argument;
	struct timespec deadline;

	pthread_mutex_lock(&server->lock);
	while (!server->stop) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += SURVEY_PERIOD_S;
		while (!server->stop &&
		       pthread_cond_timedwait(&server->wakeup, &server->lock, &deadline) != ETIMEDOUT)
			;
		if (server->stop)
			break;
		pthread_mutex_unlock(&server->lock);
		survey(server);
		pthread_mutex_lock(&server->lock);
	}
	pthread_mutex_unlock(&server->lock);
	return NULL;
}

static int start_surveyor(struct server *server)
{
	pthread_condattr_t attributes;

	pthread_condattr_init(&attributes);
	pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
	pthread_cond_init(&server->wakeup, &attributes);
	pthread_condattr_destroy(&attributes);
	survey(server); /* the first scrape finds them all */
	if (pthread_create(&server->surveyor, NULL, run_surveyor, server) != 0) {
		pthread_cond_destroy(&server->wakeup);
		return -1;
	}
	return 0;
}

static void stop_surveyor(struct server *server)
{
	pthread_mutex_lock(&server->lock);
	server->stop = true;
	pthread_cond_signal(&server->wakeup);
	pthread_mutex_unlock(&server->lock);
	pthread_join(server->surveyor, NULL);
	pthread_cond_destroy(&server->wakeup);
}

/* "application/openmetrics-text" among the media ranges of Accept. */
static bool accepts_openmetrics(const char *accept)
{
	static const char type[] = "application/openmetrics-text";

	while (accept && *accept) {
		size_t length = strcspn(accept, ",");
		const char *range = accept;
		size_t end;

		while (range < accept + length && (*range == ' ' || *range == '\t'))
			range++;
		end = strcspn(range, ";,");
		while (end > 0 && (range[end - 1] == ' ' || range[end - 1] == '\t'))
			end--;
		if (end == sizeof(type) - 1 && !strncasecmp(range, type, end))
			return true;
		accept += length;
		if (*accept == ',')
			accept++;
	}
	return false;
}

/* Per process with per-object tracking on, its heaviest objects (by
 * sleep time), at most this many: the families stay bounded however many
 * objects a process has (tdstat(1), Serving Prometheus). */
#define SERVE_SYNC_TOP 10

struct scrape_context {
	struct tdstat_output *output;
	const struct tdstat_fleet *fleet;
};

static void keep_sync_rows(struct tdstat_output *output, const td_thragent_t *agent, pid_t pid)
{
	struct tdstat_sync_stats_row *rows = NULL;
	struct tdstat_sync_table_row table;
	struct tdstat_symbolizer *symbolizer;
	size_t count = 0;

	/* Off, or no table: nothing, at the cost of one read.  Only the rows
	 * shown are named (the order does not depend on names). */
	if (!agent || tdstat_sync_rows(agent, pid, NULL, &rows, &count) != TD_OK || count == 0) {
		free(rows);
		return;
	}
	symbolizer = tdstat_symbolizer_open(pid);
	for (size_t i = 0; i < count && i < SERVE_SYNC_TOP; i++) {
		tdstat_object_name(symbolizer, pid, tdstat_sync_wait_kind(rows[i].type), rows[i].object,
				   rows[i].object_name, sizeof(rows[i].object_name));
		tdstat_output_sync_stats(output, &rows[i]);
	}
	free(rows);
	tdstat_symbolizer_close(symbolizer);
	/* The table's use and overflow: every object, not only the top. */
	if (tdstat_sync_table(agent, pid, &table) == TD_OK)
		tdstat_output_sync_table(output, &table);
}

static void keep_line(const struct tdstat_interval *line, void *context)
{
	struct scrape_context *scrape = context;

	tdstat_output_process(scrape->output, line);
	keep_sync_rows(scrape->output, tdstat_fleet_agent(scrape->fleet, line->pid), line->pid);
}

/* The body of /metrics (malloc'd), or NULL when out of memory. */
static char *scrape(struct server *server, bool openmetrics, size_t *size)
{
	struct tdstat_output output;
	char *text = NULL;
	bool failed;
	FILE *out = open_memstream(&text, size);

	if (!out)
		return NULL;
	tdstat_output_init(&output, tdstat_format_find("openmetrics"), out, TDSTAT_OUTPUT_SCRAPE);
	output.prometheus_text = !openmetrics;
	tdstat_output_begin(&output);
	pthread_mutex_lock(&server->lock);
	struct scrape_context context = { &output, server->fleet };

	tdstat_fleet_collect(server->fleet, false, keep_line, &context);
	pthread_mutex_unlock(&server->lock);
	tdstat_output_end(&output);
	tdstat_output_close(&output);
	failed = output.failed | (fclose(out) != 0);
	if (failed) {
		free(text);
		return NULL;
	}
	return text;
}

static enum MHD_Result respond(struct MHD_Connection *connection, unsigned int status,
			       const char *type, void *body, size_t size, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *response = MHD_create_response_from_buffer(size, body, mode);
	enum MHD_Result result;

	if (!response) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	result = MHD_queue_response(connection, status, response);
	MHD_destroy_response(response);
	return result;
}

static enum MHD_Result respond_text(struct MHD_Connection *connection, unsigned int status,
				    const char *text)
{
	return respond(connection, status, "text/plain; charset=utf-8", (void *)text, strlen(text),
		       MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result handle(void *context, struct MHD_Connection *connection, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **request)
{
	static int request_started;
	struct server *server = context;
	bool openmetrics;
	size_t size;
	char *body;

	(void)version;
	(void)upload_data;
	/* The first call only announces the request (its headers): answer
	 * on the second, and refuse a body outright. */
	if (!*request) {
		*request = &request_started;
		return MHD_YES;
	}
	if (*upload_data_size)
		return MHD_NO;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return respond_text(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	if (!strcmp(url, "/"))
		return respond(connection, MHD_HTTP_OK, "text/html; charset=utf-8", (void *)index_page,
			       sizeof(index_page) - 1, MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics"))
		return respond_text(connection, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
	openmetrics = accepts_openmetrics(MHD_lookup_connection_value(connection, MHD_HEADER_KIND,
								      MHD_HTTP_HEADER_ACCEPT));
	body = scrape(server, openmetrics, &size);
	if (!body)
		return respond_text(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	return respond(connection, MHD_HTTP_OK, openmetrics ? OPENMETRICS_TYPE : PROMETHEUS_TEXT_TYPE,
		       body, size, MHD_RESPMEM_MUST_FREE);
}

/* Splits "HOST:PORT", "[V6]:PORT" or ":PORT" (all addresses). */
static int split_listen(const char *listen, char *host, size_t host_size, const char **port)
{
	const char *colon;
	size_t length;

	if (listen[0] == '[') {
		const char *close = strchr(listen, ']');

		if (!close || close[1] != ':')
			return -1;
		length = (size_t)(close - listen - 1);
		colon = close + 1;
		listen++;
	} else {
		colon = strrchr(listen, ':');
		if (!colon)
			return -1;
		length = (size_t)(colon - listen);
	}
	if (length >= host_size || !colon[1])
		return -1;
	/* getaddrinfo takes 99999 as 99999 % 65536: a port nobody asked for. */
	if (strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
		const char *digit = colon + 1;
		unsigned long value = 0;

		for (; *digit; digit++)
			if ((value = value * 10 + (unsigned long)(*digit - '0')) > 65535)
				return -1;
	}
	memcpy(host, listen, length);
	host[length] = '\0';
	*port = colon + 1;
	return 0;
}

/* A listening socket on `listen`; prints the error and returns -1. */
static int open_listener(const char *where, char *bound, size_t bound_size)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *addresses, *address;
	char host[256], service[32];
	struct sockaddr_storage name;
	socklen_t name_length = sizeof(name);
	const char *port;
	int fd = -1, err, saved = 0;

	if (split_listen(where, host, sizeof(host), &port) < 0) {
		tdstat_error("bad --listen %s: give ADDR:PORT, [IPV6]:PORT or :PORT", where);
		return -1;
	}
	err = getaddrinfo(host[0] ? host : NULL, port, &hints, &addresses);
	if (err) {
		tdstat_error("cannot listen on %s: %s", where, gai_strerror(err));
		return -1;
	}
	for (address = addresses; address && fd < 0; address = address->ai_next) {
		fd = socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC, address->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int));
		if (bind(fd, address->ai_addr, address->ai_addrlen) < 0 || listen(fd, 128) < 0) {
			saved = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(addresses);
	if (fd < 0) {
		tdstat_error("cannot listen on %s: %s%s", where, strerror(saved),
			     saved == EADDRINUSE ? " (another server has that port: pick another with --listen)"
			     : saved == EACCES ? " (ports below 1024 need privilege)" : "");
		return -1;
	}
	bound[0] = '\0';
	if (getsockname(fd, (struct sockaddr *)&name, &name_length) == 0 &&
	    getnameinfo((struct sockaddr *)&name, name_length, host, sizeof(host), service,
			sizeof(service), NI_NUMERICHOST | NI_NUMERICSERV) == 0)
		snprintf(bound, bound_size, name.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, service);
	return fd;
}

/* SIGINT and SIGTERM are blocked in every thread (the daemon's inherit
 * the mask) and taken by sigwait in the main thread. */
static void block_stop_signals(sigset_t *signals)
{
	sigemptyset(signals);
	sigaddset(signals, SIGINT);
	sigaddset(signals, SIGTERM);
	pthread_sigmask(SIG_BLOCK, signals, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int tdstat_serve(const struct tdstat_serve_options *options)
{
	const char *where = options->listen ? options->listen : DEFAULT_LISTEN;
	struct server server = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct MHD_Daemon *daemon;
	char bound[300];
	sigset_t signals;
	int fd, signo;

	block_stop_signals(&signals);
	server.fleet = tdstat_fleet_new();
	if (!server.fleet) {
		tdstat_error("out of memory");
		return TDSTAT_EXIT_FAILURE;
	}
	fd = open_listener(where, bound, sizeof(bound));
	if (fd < 0) {
		tdstat_fleet_free(server.fleet);
		return TDSTAT_EXIT_FAILURE;
	}
	if (start_surveyor(&server) < 0) {
		tdstat_error("cannot start a thread: %s", strerror(errno));
		close(fd);
		tdstat_fleet_free(server.fleet);
		return TDSTAT_EXIT_FAILURE;
	}
	daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL,
				  handle, &server,
				  MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
				  MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)SERVE_THREADS,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)CONNECTION_LIMIT,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)CONNECTIONS_PER_ADDRESS,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)IDLE_TIMEOUT_S,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY_BYTES,
				  MHD_OPTION_END);
	if (!daemon) {
		tdstat_error("cannot start the HTTP server on %s", where);
		stop_surveyor(&server);
		close(fd);
		tdstat_fleet_free(server.fleet);
		return TDSTAT_EXIT_FAILURE;
	}
	fprintf(stderr, "tdstat: serving http://%s/metrics\n", bound[0] ? bound : where);
	fflush(stderr);
	while (sigwait(&signals, &signo) != 0)
		;
	MHD_stop_daemon(daemon);
	stop_surveyor(&server);
	close(fd);
	tdstat_fleet_free(server.fleet);
	pthread_mutex_destroy(&server.lock);
	return TDSTAT_EXIT_OK;
}
