/* SPDX-License-Identifier: MIT */
/*
 * Each interposed call changes the caller's record only when it waits:
 * nowait (it can finish at once) -> seq unchanged, still RUNNABLE;
 * wait -> BLOCKED while it waits (seen from another thread), in the wait
 * kind runtime/calls.def gives the call, RUNNABLE after, and the call's
 * own result intact.  One nowait and one wait test per waiting call of
 * runtime/calls.def: a call added there without a case in
 * tests/runtime/fixture_calls.c fails here.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <tdstat/region.h>

#include "rt_test.h"

/* read and readv are interposed only on request (bench cost, see
 * runtime/wrap_read.c); the tests of them ask for it. */
static const char *const track_reads[] = { "TDSTAT_TRACK_READS=1", NULL };

static const char *const *environment_for(const char *call)
{
	call += strspn(call, "_"); /* the fortified __read_chk, __recv_chk, ... */
	return strncmp(call, "read", 4) && strncmp(call, "recv", 4) ? NULL : track_reads;
}

static const char *kind_name(enum tdstat_wait_kind kind)
{
	static const char *const names[] = {
#define KIND_NAME(suffix, name) name,
		TDSTAT_WAIT_KINDS(KIND_NAME)
#undef KIND_NAME
	};

	return names[kind];
}

/* A call with no such form (it always waits, or never does). */
static bool no_such_form(struct rt_output *out, const char *call, const char *form)
{
	const char *at = out->text ? strstr(out->text, "form=none\n") : NULL;

	if (!at || (at != out->text && at[-1] != '\n'))
		return false;
	rt_free(out);
	cr_skip_test("%s has no %s form", call, form);
	return true;
}

static void expect_no_write(const char *call)
{
	const char *args[] = { "nowait", call, NULL };
	struct rt_output out = rt_run("rt_calls", args, environment_for(call));

	if (no_such_form(&out, call, "nowait"))
		return;
	unsigned long long before = rt_u64(&out, "before_seq"), after = rt_u64(&out, "after_seq");

	rt_expect_string(&out, "result", "ok");
	rt_expect_string(&out, "before_state", "RUNNABLE");
	rt_expect_string(&out, "after_state", "RUNNABLE");
	cr_expect_eq(rt_u64(&out, "before_settled"), 1, "%s: a change of the record is under way outside a write", call);
	cr_expect_eq(after, before, "%s finished without waiting but wrote its record: seq %llu -> %llu",
		     call, before, after);
	rt_free(&out);
}

static void expect_blocked_then_runnable(const char *call, enum tdstat_wait_kind kind)
{
	const char *args[] = { "wait", call, NULL };
	struct rt_output out = rt_run("rt_calls", args, environment_for(call));

	if (no_such_form(&out, call, "wait"))
		return;
	unsigned long long before = rt_u64(&out, "before_seq"), after = rt_u64(&out, "after_seq");

	rt_expect_string(&out, "observed", "BLOCKED");
	rt_expect_string(&out, "observed_kind", kind_name(kind));
	rt_expect_string(&out, "result", "ok");
	rt_expect_string(&out, "before_state", "RUNNABLE");
	rt_expect_string(&out, "after_state", "RUNNABLE");
	cr_expect_eq(rt_u64(&out, "after_settled"), 1, "%s: a change of the record is under way outside a write",
		     call);
	/* region.h's latch: one seq step per published change. */
	cr_expect_geq(after, before + 2, "%s waited: expected two changes at least, seq %llu -> %llu",
		      call, before, after);
	rt_free(&out);
}

/* Without the request a pipe read is no transition, even when it waits. */
Test(nowait, read_untracked_by_default)
{
	const char *args[] = { "nowait", "read", NULL };
	struct rt_output out = rt_run("rt_calls", args, NULL);

	rt_expect_string(&out, "result", "ok");
	cr_expect_eq(rt_u64(&out, "after_seq"), rt_u64(&out, "before_seq"));
	rt_free(&out);
}

/* Every waiting call of the table. */
#define TDSHIM_CALL_GROUP(id, title)
#define TDSHIM_CALL(name, group, real, ret, params)
#define TDSHIM_WAIT_CALL(name, kind, group, real, ret, params)                       \
	Test(nowait, name) { expect_no_write(#name); }                               \
	Test(wait, name) { expect_blocked_then_runnable(#name, TDSTAT_WAIT_##kind); }
#include "calls.def"
#undef TDSHIM_WAIT_CALL
#undef TDSHIM_CALL
#undef TDSHIM_CALL_GROUP

/* Variants the table does not tell apart: other mutex types, a read of a
 * regular file (never a wait). */
Test(nowait, mutex_recursive) { expect_no_write("mutex_recursive"); }
Test(wait, mutex_recursive) { expect_blocked_then_runnable("mutex_recursive", TDSTAT_WAIT_MUTEX); }
Test(nowait, mutex_errorcheck) { expect_no_write("mutex_errorcheck"); }
Test(wait, mutex_errorcheck) { expect_blocked_then_runnable("mutex_errorcheck", TDSTAT_WAIT_MUTEX); }
Test(nowait, read_file) { expect_no_write("read_file"); }
