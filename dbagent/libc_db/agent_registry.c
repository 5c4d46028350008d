/* SPDX-License-Identifier: MIT */
/*
 * The live agents, as glibc's nptl_db keeps them: a handle is valid while
 * it is in this list.  Each call pins its agent (users) so that a
 * td_ta_delete racing with it unlinks the agent at once but frees it only
 * when the last call in progress leaves.
 */
#include <stdlib.h>
#include <unistd.h>

#include "thread_db_private.h"

/* Protects registry_head and every agent's registry_next, users, deleted. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct td_thragent *registry_head;

static void agent_free(struct td_thragent *agent)
{
	tddb_cpu_timer_release(agent);
	if (agent->task_fd >= 0)
		close(agent->task_fd);
	tddb_cache_free(agent);
	pthread_mutex_destroy(&agent->control_lock);
	free(agent);
}

static struct td_thragent *registry_find(const td_thragent_t *ta)
{
	struct td_thragent *agent;

	for (agent = registry_head; agent; agent = agent->registry_next)
		if (agent == ta)
			return agent;
	return NULL;
}

td_err_e tddb_agent_enter(const td_thragent_t *ta, struct td_thragent **out)
{
	struct td_thragent *agent;

	if (!ta)
		return TD_BADTA;
	pthread_mutex_lock(&registry_lock);
	agent = registry_find(ta);
	if (agent)
		agent->users++;
	pthread_mutex_unlock(&registry_lock);
	if (!agent)
		return TD_BADTA;
	*out = agent;
	return TD_OK;
}

void tddb_agent_leave(struct td_thragent *agent)
{
	bool last;

	pthread_mutex_lock(&registry_lock);
	agent->users--;
	last = agent->deleted && agent->users == 0;
	pthread_mutex_unlock(&registry_lock);
	if (last)
		agent_free(agent);
}

void tddb_registry_add(struct td_thragent *agent)
{
	pthread_mutex_lock(&registry_lock);
	agent->registry_next = registry_head;
	registry_head = agent;
	pthread_mutex_unlock(&registry_lock);
}

td_err_e tddb_registry_remove(const td_thragent_t *ta)
{
	struct td_thragent **link;
	struct td_thragent *agent = NULL;
	bool unused = false;

	if (!ta)
		return TD_BADTA;
	pthread_mutex_lock(&registry_lock);
	for (link = &registry_head; *link; link = &(*link)->registry_next) {
		if (*link == ta) {
			agent = *link;
			*link = agent->registry_next;
			agent->deleted = true;
			unused = agent->users == 0;
			break;
		}
	}
	pthread_mutex_unlock(&registry_lock);
	if (!agent)
		return TD_BADTA;
	if (unused)
		agent_free(agent);
	return TD_OK;
}
