/* SPDX-License-Identifier: MIT */
/*
 * Control writes (docs/READER.md): 8-byte ps_pdwrite calls in the order
 * the region's readers expect, so every intermediate state is a valid
 * window.  The agent writes nothing else.  If a write fails, the fields
 * already written get their old values back (best effort): an error leaves
 * nothing half done.
 */
#include <time.h>

#include "thread_db_private.h"

#define CONTROL_WRITES_MAX 8

/* A value read only when its write comes (after `rewriting = 1`). */
enum control_late {
	CONTROL_VALUE,      /* `value` as planned */
	CONTROL_END_NOW,    /* the controller's clock, at least `value` */
	CONTROL_CPU_NOW,    /* the target's CPU clock */
};

struct control_write {
	uint32_t field;      /* offset in struct tdstat_control */
	enum control_late late;
	uint64_t value;      /* as written, once plan_run ran */
	uint64_t old_value;
};

struct control_plan {
	struct control_write writes[CONTROL_WRITES_MAX];
	int count;
};

static void plan_add_late(struct control_plan *plan, uint32_t field, enum control_late late, uint64_t value,
			  uint64_t old_value)
{
	plan->writes[plan->count++] = (struct control_write){ field, late, value, old_value };
}

static void plan_add(struct control_plan *plan, uint32_t field, uint64_t value, uint64_t old_value)
{
	plan_add_late(plan, field, CONTROL_VALUE, value, old_value);
}

static ps_err_e control_write_u64(struct td_thragent *agent, uint32_t field, uint64_t value)
{
	uintptr_t address = (uintptr_t)agent->region + agent->geometry.layout.control_offset + field;

	return ps_pdwrite(agent->ph, (psaddr_t)address, &value, sizeof(value));
}

static td_err_e plan_run(struct td_thragent *agent, struct control_plan *plan)
{
	int done;

	for (done = 0; done < plan->count; done++) {
		struct control_write *write = &plan->writes[done];

		if (write->late == CONTROL_END_NOW)
			write->value = tddb_max_u64(tddb_monotonic_ns(), write->value);
		if (write->late == CONTROL_CPU_NOW && tddb_target_cpu_ns(agent, &write->value) != TD_OK)
			break;
		if (control_write_u64(agent, write->field, write->value) != PS_OK)
			break;
	}
	if (done == plan->count)
		return TD_OK;
	while (done-- > 0)
		control_write_u64(agent, plan->writes[done].field, plan->writes[done].old_value);
	return TD_DBERR;
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
	if (change == TDDB_CONTROL_ENABLE || (enabled && change == TDDB_CONTROL_RESET)) {
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
		/* Both clocks read once `rewriting = 1` is in place
		 * (disable_settle, below). */
		plan_add_late(plan, FIELD(cpu_end_ns), CONTROL_CPU_NOW, 0, old->cpu_end_ns);
		plan_add_late(plan, FIELD(window_end_ns), CONTROL_END_NOW, old->window_start_ns, old->window_end_ns);
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

/*
 * The end of a window a disable closes: the controller's clock, read once
 * `rewriting = 1` is in place.  Every figure a reader took from the open
 * window stops before it: such a reader read the control block before
 * that store, so its clock (open intervals) and the commits it saw
 * (closed intervals) precede this clock, however long this controller
 * was held up before its writes.  An end at the
 * clock less commit_lag_ns, as this once was, took back what readers had
 * counted in those last commit_lag_ns (9 ms of every running thread's
 * time, every interval a thread closed in them, and all of a younger
 * window: docs/READER.md, "Control writes").
 *
 * A wait's last commit_lag_ns before that end are final only
 * commit_lag_ns later (a thread woken in them may yet date its wake-up
 * back there, region.h), and readers count a wait only up to their clock
 * less their margin and the lag.  So the disable returns only once the
 * end plus both is past: from then on every reader reads the frozen
 * figures at once, and none waits (region_read.c, reader_clock_for).  A reader that reads
 * in between sees the window closed and its figures still growing, never
 * going down.  The wait is the disabling caller's, about 11 ms, and
 * nobody else's.
 */
/* The longest a disable waits: ten times the shim's commit lag.  A
 * region that claims a longer lag (up to TDDB_COMMIT_LAG_MAX, a second:
 * hostile, or another writer) has its figures final somewhat after the
 * call returns; until then they still grow, never go down.  Without the
 * bound a hostile region held every disable for a second (the fuzzer's
 * inputs make up to twelve calls, under a 10 s limit each). */
#define DISABLE_SETTLE_MAX_NS (10 * TDSTAT_COMMIT_LAG_NS)

static void disable_settle(const struct td_thragent *agent, uint64_t end)
{
	/* Bounded whatever the region says: a start in the future (and so
	 * an end there) is an empty window, nothing to settle. */
	uint64_t now = tddb_monotonic_ns();
	uint64_t settled = tddb_min_u64(tddb_min_u64(end, now) + agent->geometry.commit_lag_ns +
						tddb_reader_margin(&agent->geometry),
					now + DISABLE_SETTLE_MAX_NS);

	for (; now < settled; now = tddb_monotonic_ns()) {
		uint64_t left = settled - now;
		struct timespec pause = { (time_t)(left / 1000000000u), (long)(left % 1000000000u) };

		nanosleep(&pause, NULL);
	}
}

td_err_e tddb_control_change(struct td_thragent *agent, enum tddb_control_change change)
{
	struct tddb_header_view view;
	struct control_plan plan = { .count = 0 };
	uint64_t end = 0;
	td_err_e err;

	pthread_mutex_lock(&agent->control_lock);
	err = tddb_read_header(agent, &view);
	if (err == TD_OK)
		err = plan_change(agent, &view.control, change, &plan);
	if (err == TD_OK)
		err = plan_run(agent, &plan);
	for (int i = 0; err == TD_OK && i < plan.count; i++)
		if (plan.writes[i].late == CONTROL_END_NOW)
			end = plan.writes[i].value;
	/* Off already, maybe by another controller a moment ago whose own
	 * disable is still waiting: this caller, too, may read the frozen
	 * figures as soon as the call returns (an empty window has none). */
	if (err == TD_OK && change == TDDB_CONTROL_DISABLE && plan.count == 0 &&
	    view.control.window_end_ns > view.control.window_start_ns)
		end = view.control.window_end_ns;
	pthread_mutex_unlock(&agent->control_lock);
	if (end != 0)
		disable_settle(agent, end);
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
