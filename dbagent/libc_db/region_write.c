/* SPDX-License-Identifier: MIT */
/*
 * Control writes (docs/READER.md): 8-byte ps_pdwrite calls in the order
 * the region's readers expect, so every intermediate state is a valid
 * window.  The agent writes nothing else.  If a write fails, the fields
 * already written get their old values back (best effort): an error leaves
 * nothing half done.
 */
#include "thread_db_private.h"

#define CONTROL_WRITES_MAX 8

struct control_write {
	uint32_t field;      /* offset in struct tdstat_control */
	uint64_t value;
	uint64_t old_value;
};

struct control_plan {
	struct control_write writes[CONTROL_WRITES_MAX];
	int count;
};

static void plan_add(struct control_plan *plan, uint32_t field, uint64_t value, uint64_t old_value)
{
	plan->writes[plan->count++] = (struct control_write){ field, value, old_value };
}

static ps_err_e control_write_u64(struct td_thragent *agent, uint32_t field, uint64_t value)
{
	uintptr_t address = (uintptr_t)agent->region + agent->geometry.layout.control_offset + field;

	return ps_pdwrite(agent->ph, (psaddr_t)address, &value, sizeof(value));
}

static td_err_e plan_run(struct td_thragent *agent, const struct control_plan *plan)
{
	int done;

	for (done = 0; done < plan->count; done++) {
		const struct control_write *write = &plan->writes[done];

		if (control_write_u64(agent, write->field, write->value) != PS_OK)
			break;
	}
	if (done == plan->count)
		return TD_OK;
	while (done-- > 0)
		control_write_u64(agent, plan->writes[done].field, plan->writes[done].old_value);
	return TD_DBERR;
}

/*
 * A window's end: the controller's clock less the region's commit lag.
 * A wait's last commit_lag_ns are not final (a thread may date its
 * wake-up back into them, region.h); readers leave them out until they
 * are, so ending the window that much earlier makes it final, and frozen
 * for every reader, at once.
 */
static uint64_t window_end_now(const struct td_thragent *agent)
{
	uint64_t now = tddb_monotonic_ns();

	return now > agent->geometry.commit_lag_ns ? now - agent->geometry.commit_lag_ns : 0;
}

/* A new window start: now, but strictly after the old one, since the start
 * is also the epoch that tells current accumulators from stale ones. */
static td_err_e next_window_start(const struct tdstat_control *control, uint64_t *start)
{
	if (control->window_start_ns >= UINT64_MAX - 1)
		return TD_DBERR;
	*start = tddb_max_u64(tddb_monotonic_ns(), control->window_start_ns + 1);
	return TD_OK;
}

#define FIELD(name) ((uint32_t)offsetof(struct tdstat_control, name))

static td_err_e plan_change(struct td_thragent *agent, const struct tdstat_control *old,
			    enum tddb_control_change change, struct control_plan *plan)
{
	bool enabled = old->window_end_ns == TDSTAT_WINDOW_OPEN;
	uint64_t start = 0, cpu = 0;
	td_err_e err;

	if (change == TDDB_CONTROL_DISABLE && !enabled)
		return TD_OK;
	if (change != TDDB_CONTROL_DISABLE) {
		err = next_window_start(old, &start);
		if (err != TD_OK)
			return err;
	}
	if (change == TDDB_CONTROL_ENABLE || enabled) {
		err = tddb_target_cpu_ns(agent, &cpu);
		if (err != TD_OK)
			return err;
	}
	plan_add(plan, FIELD(rewriting), 1, old->rewriting);
	/* A new window gets a new wall-clock anchor (ABI 2.1; in 2.0 the
	 * word is reserved and stays untouched). */
	if (change != TDDB_CONTROL_DISABLE && agent->geometry.abi_minor >= 1) {
		uint64_t at;
		int64_t offset = tdstat_realtime_offset_ns(&at);

		plan_add(plan, FIELD(realtime_offset_ns), (uint64_t)offset, (uint64_t)old->realtime_offset_ns);
	}
	switch (change) {
	case TDDB_CONTROL_ENABLE:
		plan_add(plan, FIELD(window_start_ns), start, old->window_start_ns);
		plan_add(plan, FIELD(cpu_start_ns), cpu, old->cpu_start_ns);
		plan_add(plan, FIELD(window_end_ns), TDSTAT_WINDOW_OPEN, old->window_end_ns);
		break;
	case TDDB_CONTROL_DISABLE:
		plan_add(plan, FIELD(cpu_end_ns), cpu, old->cpu_end_ns);
		plan_add(plan, FIELD(window_end_ns), tddb_max_u64(window_end_now(agent), old->window_start_ns),
			 old->window_end_ns);
		break;
	case TDDB_CONTROL_RESET:
		if (enabled) {
			plan_add(plan, FIELD(cpu_start_ns), cpu, old->cpu_start_ns);
			plan_add(plan, FIELD(window_start_ns), start, old->window_start_ns);
		} else {
			plan_add(plan, FIELD(window_start_ns), start, old->window_start_ns);
			plan_add(plan, FIELD(window_end_ns), start, old->window_end_ns);
		}
		break;
	}
	plan_add(plan, FIELD(generation), old->generation + 1, old->generation);
	plan_add(plan, FIELD(rewriting), 0, old->rewriting);
	return TD_OK;
}

td_err_e tddb_control_change(struct td_thragent *agent, enum tddb_control_change change)
{
	struct tddb_header_view view;
	struct control_plan plan = { .count = 0 };
	td_err_e err;

	pthread_mutex_lock(&agent->control_lock);
	err = tddb_read_header(agent, &view);
	if (err == TD_OK)
		err = plan_change(agent, &view.control, change, &plan);
	if (err == TD_OK)
		err = plan_run(agent, &plan);
	pthread_mutex_unlock(&agent->control_lock);
	return err;
}

td_err_e tddb_control_set_concurrency(struct td_thragent *agent, int level)
{
	uintptr_t address = (uintptr_t)agent->region + agent->geometry.layout.control_offset +
			    offsetof(struct tdstat_control, r_concurrency);
	int32_t value = level;
	ps_err_e status;

	pthread_mutex_lock(&agent->control_lock);
	status = ps_pdwrite(agent->ph, (psaddr_t)address, &value, sizeof(value));
	pthread_mutex_unlock(&agent->control_lock);
	return status == PS_OK ? TD_OK : TD_DBERR;
}
