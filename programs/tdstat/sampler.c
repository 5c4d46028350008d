/* SPDX-License-Identifier: MIT */
/*
 * The sampler of `tdstat run --plot`: a thread that reads the command
 * from outside every interval, through libc_db like any reader (it never
 * stops the command), and adds each interval to the plot.  Until the
 * shim in the command has started (or after an exec, until the new
 * image's has) the attach fails, and the sampler tries again at the next
 * tick.  The main thread, the command's tracer, goes on waiting for it
 * meanwhile; it stops the sampler at the end and adds the last interval,
 * up to the exit stop, itself.
 */
#include "plot.h"
#include "sampler.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct tdstat_sampler {
	pid_t pid;
	double interval_s;
	struct tdstat_plot *plot;
	pthread_t thread;
	pthread_mutex_t lock; /* guards stop */
	pthread_cond_t wakeup;
	bool stop;
	/* The sampler thread's own until it is joined, the caller's after. */
	struct tdstat_target target;
	bool attached, has_previous;
	td_ta_stats_ns_t previous;
};

/* An interval much shorter than the sampling interval is left to merge
 * into the next: the snapshot's window ends commit_lag before it is taken
 * (thread_db_stats.h), so over a few microseconds the averages are mostly
 * that edge's noise.  `final` takes whatever is left. */
static void add_interval(struct tdstat_sampler *sampler, const td_ta_stats_ns_t *now, bool final)
{
	struct tdstat_interval line;
	bool same = sampler->has_previous && tdstat_same_window(&sampler->previous, now);

	if (!now->enabled)
		return;
	if (same && !final &&
	    (double)(now->window_ns - sampler->previous.window_ns) < sampler->interval_s * 0.5e9)
		return;
	if (same)
		tdstat_interval_compute(&line, sampler->pid, &sampler->previous, now);
	else
		tdstat_interval_compute(&line, sampler->pid, NULL, now);
	tdstat_plot_add(sampler->plot, &line);
	sampler->previous = *now;
	sampler->has_previous = true;
}

static void sample(struct tdstat_sampler *sampler)
{
	td_ta_stats_ns_t now;

	if (!sampler->attached) {
		sampler->attached = tdstat_target_attach(&sampler->target, sampler->pid) == TD_OK;
		if (!sampler->attached) {
			tdstat_target_close(&sampler->target);
			return;
		}
	}
	if (tdstat_target_snapshot(&sampler->target, &now) != TD_OK) {
		/* Gone, or a new image: attach again next time. */
		tdstat_target_close(&sampler->target);
		sampler->attached = false;
		return;
	}
	add_interval(sampler, &now, false);
}

static void add_seconds(struct timespec *deadline, double seconds)
{
	long long nanoseconds = (long long)(seconds * 1e9);

	deadline->tv_sec += nanoseconds / 1000000000;
	deadline->tv_nsec += nanoseconds % 1000000000;
	if (deadline->tv_nsec >= 1000000000) {
		deadline->tv_sec++;
		deadline->tv_nsec -= 1000000000;
	}
}

static void *run_sampler(void *argument)
{
	struct tdstat_sampler *sampler = argument;
	struct timespec deadline;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	pthread_mutex_lock(&sampler->lock);
	while (!sampler->stop) {
		add_seconds(&deadline, sampler->interval_s);
		while (!sampler->stop &&
		       pthread_cond_timedwait(&sampler->wakeup, &sampler->lock, &deadline) != ETIMEDOUT)
			;
		if (sampler->stop)
			break;
		pthread_mutex_unlock(&sampler->lock);
		sample(sampler);
		pthread_mutex_lock(&sampler->lock);
	}
	pthread_mutex_unlock(&sampler->lock);
	return NULL;
}

struct tdstat_sampler *tdstat_sampler_start(pid_t pid, double interval_s, struct tdstat_plot *plot)
{
	struct tdstat_sampler *sampler = calloc(1, sizeof(*sampler));
	pthread_condattr_t attributes;

	if (!sampler)
		return NULL;
	sampler->pid = pid;
	sampler->interval_s = interval_s;
	sampler->plot = plot;
	pthread_mutex_init(&sampler->lock, NULL);
	pthread_condattr_init(&attributes);
	pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
	pthread_cond_init(&sampler->wakeup, &attributes);
	pthread_condattr_destroy(&attributes);
	if (pthread_create(&sampler->thread, NULL, run_sampler, sampler) != 0) {
		pthread_cond_destroy(&sampler->wakeup);
		pthread_mutex_destroy(&sampler->lock);
		free(sampler);
		return NULL;
	}
	return sampler;
}

void tdstat_sampler_stop(struct tdstat_sampler *sampler, const td_ta_stats_ns_t *last)
{
	if (!sampler)
		return;
	pthread_mutex_lock(&sampler->lock);
	sampler->stop = true;
	pthread_cond_signal(&sampler->wakeup);
	pthread_mutex_unlock(&sampler->lock);
	pthread_join(sampler->thread, NULL);
	/* A tick after the final read already covers the end. */
	if (last && !(sampler->has_previous && sampler->previous.window_start_ns == last->window_start_ns &&
		      sampler->previous.window_ns >= last->window_ns))
		add_interval(sampler, last, true);
	tdstat_target_close(&sampler->target);
	pthread_cond_destroy(&sampler->wakeup);
	pthread_mutex_destroy(&sampler->lock);
	free(sampler);
}
