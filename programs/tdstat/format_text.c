/* SPDX-License-Identifier: MIT */
/*
 * --format text, the default: rows under a header (live mode, ps) and
 * the summary that `tdstat run` prints when its command ends.
 */
#include "format.h"

#include <tdstat/thread_db_sync.h>

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Below this average a kind, or the untracked figure, is left out of a
 * text row: it would only be noise. */
#define SHOWN_MIN 0.005

/* With -t or -w each moment is a block: the line under its header, the
 * tables under theirs, a blank line.  What the block printed last. */
enum printed { PRINTED_NOTHING, PRINTED_LINE, PRINTED_THREAD, PRINTED_OBJECT, PRINTED_SYNC };

/* The rows of -t of one line, as printed (struct row_key): sorted by tid,
 * their texts one after another in `text`. */
struct row_key;
struct kept_rows {
	struct kept_row *rows;
	size_t count, capacity;
	char *text;
	size_t used, room;
};

struct text_state {
	enum printed last;
	/* The last line's rows and this line's, for reuse (thread()). */
	struct kept_rows before, now;
	size_t before_at; /* the merge's place in `before` */
	/* The rows of `now` are written in runs, not one by one (rows_flush):
	 * how much of now.text is written already. */
	size_t written;
};

static void rows_next_line(struct text_state *state);
static void rows_flush(struct tdstat_output *output);

static bool tables(const struct tdstat_output *output)
{
	return output->mode == TDSTAT_OUTPUT_LIVE && (output->threads || output->objects);
}

static void live_header(FILE *out)
{
	fprintf(out, "%-8s %8s %8s %6s %9s %8s %8s %8s %9s  %s\n", "TIME", "PID", "NTHREADS", "RCONC",
		"RUNNABLE", "RUNNING", "LWPS", "IDLE", "WINDOW", "IDLE BY KIND");
}

static void start(struct tdstat_output *output)
{
	if (output->sync) {
		fprintf(output->out, "%-32s %-6s %12s  %s\n", "OBJECT", "TYPE", "SLEEP_MS", "STATISTICS");
		return;
	}
	if (tables(output)) {
		output->state = calloc(1, sizeof(struct text_state));
		if (!output->state)
			output->failed = true;
		return;
	}
	if (output->mode == TDSTAT_OUTPUT_LIVE)
		live_header(output->out);
	else if (output->mode == TDSTAT_OUTPUT_LIST)
		fprintf(output->out, "%8s %-16s %-9s %8s %9s %8s  %s\n",
			"PID", "COMMAND", "GATHERING", "NTHREADS", "RUNNABLE", "IDLE",
			"IDLE BY KIND");
}

/*
 * -t prints a row per thread on every line: a thousand rows a line at 100
 * lines a second.  printf took most of tdstat's time there, so a row is
 * put together by hand (the same text as the printf formats below would
 * give: a share as "%.2f", rounded to nearest, ties to even, as printf
 * rounds the exact binary value, which rint of the scaled value matches
 * but for values within an ulp of a tie).
 */
struct row_text {
	char *at, *end;
};

static void put_bytes(struct row_text *text, const char *bytes, size_t length)
{
	if (length > (size_t)(text->end - text->at))
		length = (size_t)(text->end - text->at);
	memcpy(text->at, bytes, length);
	text->at += length;
}

static void put_spaces(struct row_text *text, size_t count)
{
	if (count > (size_t)(text->end - text->at))
		count = (size_t)(text->end - text->at);
	memset(text->at, ' ', count);
	text->at += count;
}

/* `length` bytes padded to `width`: on the left (right-aligned) or the
 * right. */
static void put_padded_length(struct row_text *text, const char *bytes, size_t length, size_t width,
			      bool right_align)
{
	if (right_align && length < width)
		put_spaces(text, width - length);
	put_bytes(text, bytes, length);
	if (!right_align && length < width)
		put_spaces(text, width - length);
}

static void put_padded(struct row_text *text, const char *bytes, size_t width, bool right_align)
{
	put_padded_length(text, bytes, strlen(bytes), width, right_align);
}

/* "%.2f" of the shares a row mostly has, 0.00 to 9.99, made once. */
#define SHARE_TABLE 1000
static char share_table[SHARE_TABLE][5];

static void share_table_fill(void)
{
	static bool filled;

	if (filled)
		return;
	for (int i = 0; i < SHARE_TABLE; i++) {
		share_table[i][0] = (char)('0' + i / 100);
		share_table[i][1] = '.';
		share_table[i][2] = (char)('0' + i / 10 % 10);
		share_table[i][3] = (char)('0' + i % 10);
		share_table[i][4] = '\0';
	}
	filled = true;
}

/* "%.2f" of a share (0 <= share < 1e15), or "-" when unknown; returns
 * its length. */
static size_t share_text(char *text, size_t size, bool known, double share)
{
	char digits[24];
	int n = 0;

	if (!known || size < 24) {
		memcpy(text, "-", 2);
		return 1;
	}
	if (!(share >= 0 && share < 1e15))
		return (size_t)snprintf(text, size, "%.2f", share);
	unsigned long long hundredths = (unsigned long long)rint(share * 100);
	if (hundredths < SHARE_TABLE) {
		share_table_fill();
		memcpy(text, share_table[hundredths], 5);
		return 4;
	}
	do {
		digits[n++] = (char)('0' + hundredths % 10);
		hundredths /= 10;
	} while (hundredths || n < 3);
	size_t at = 0;
	for (int i = n - 1; i >= 0; i--) {
		text[at++] = digits[i];
		if (i == 2)
			text[at++] = '.';
	}
	text[at] = '\0';
	return at;
}

/* The kinds' names and their lengths, once. */
static const char *kind_name[TDSTAT_WAIT_KIND_COUNT];
static size_t kind_name_length[TDSTAT_WAIT_KIND_COUNT];

static void kind_names_fill(void)
{
	if (kind_name[0])
		return;
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++) {
		kind_name_length[k] = strlen(td_wait_kind_name((unsigned)k));
		kind_name[k] = td_wait_kind_name((unsigned)k);
	}
}

/* The kinds shown (at least SHOWN_MIN), heaviest first, the first kind
 * on a tie, into `order`; returns how many.  One pass picks them out,
 * then an insertion sort (stable) orders the few there are: most threads
 * wait in one kind, and a selection over every kind for each shown one
 * was a tenth of a -t row's cost. */
static int kinds_order(const double *idle_by, uint8_t order[TDSTAT_WAIT_KIND_COUNT])
{
	int count = 0;

	/* Unrolled: the loop's own counting was half of it. */
#pragma GCC unroll 16
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		if (idle_by[k] >= SHOWN_MIN)
			order[count++] = (uint8_t)k;
	for (int i = 1; i < count; i++) {
		uint8_t kind = order[i];
		int at = i;

		for (; at > 0 && idle_by[order[at - 1]] < idle_by[kind]; at--)
			order[at] = order[at - 1];
		order[at] = kind;
	}
	return count;
}

/* "cond 2.00 mutex 0.98 sleep 1.00": the kinds with idle time, heaviest
 * first (of a line or of a thread); returns its length. */
static size_t idle_by_text(char *text, size_t size, bool has_kinds, const double *idle_by)
{
	uint8_t order[TDSTAT_WAIT_KIND_COUNT];
	int shown;
	size_t used = 0;

	text[0] = '\0';
	if (!has_kinds) {
		memcpy(text, "-", 2);
		return 1;
	}
	kind_names_fill();
	shown = kinds_order(idle_by, order);
	for (int i = 0; i < shown && used < size; i++) {
		int heaviest = order[i];
		char share[24];
		size_t name_length = kind_name_length[heaviest];
		size_t share_length = share_text(share, sizeof(share), true, idle_by[heaviest]);

		/* "%s%s %s", by hand (a row per thread per line) */
		if (used + 1 + name_length + 1 + share_length + 1 > size)
			break;
		if (used)
			text[used++] = ' ';
		memcpy(text + used, kind_name[heaviest], name_length);
		used += name_length;
		text[used++] = ' ';
		memcpy(text + used, share, share_length + 1);
		used += share_length;
	}
	if (!used) {
		memcpy(text, "-", 2);
		return 1;
	}
	return used;
}

/* Steal the hint names: at least this many CPUs, on average, surely
 * taken (less the one tick /proc/stat's rounding may add).  Below it a
 * line's steal is a tick or two of rounding at a second's interval, and
 * could not be half of an untracked figure worth showing (0.05). */
#define STEAL_SHOWN_MIN 0.02

/*
 * docs/CONTRACT.md §7: a wait the shim cannot see passes for work; the
 * kernel tells, and the row says so.  On a virtual machine a running
 * thread's stolen time (the hypervisor ran something else on its vCPU)
 * is missing from the kernel's figures too, and shows the same way: it
 * hides at most one thread per CPU stolen, so steal bounds how much of
 * untracked it explains.  When it can explain half or more, it is named
 * the likely cause; less, and the rest is escaped waits, with steal's
 * share said.
 */
static void untracked_text(char *text, size_t size, const struct tdstat_interval *line)
{
	bool steal = line->steal >= 0 && line->steal - line->steal_resolution >= STEAL_SHOWN_MIN;

	text[0] = '\0';
	if (line->untracked < 0.05)
		return;
	if (steal && line->steal >= line->untracked / 2)
		snprintf(text, size,
			 "  untracked %.2f (the hypervisor took %.2f CPUs from this machine (steal): the kernel "
			 "does not count a running thread's stolen time, tdstat does; tdstat(1))",
			 line->untracked, line->steal);
	else if (steal)
		snprintf(text, size,
			 "  untracked %.2f (asleep in waits the shim cannot see: an inline syscall, a read; "
			 "up to %.2f of it the hypervisor's steal; tdstat(1))",
			 line->untracked, line->steal);
	else
		snprintf(text, size,
			 "  untracked %.2f (asleep in waits the shim cannot see: an inline syscall, "
			 "a read; tdstat(1))", line->untracked);
}

static void live_row(FILE *out, const struct tdstat_interval *line)
{
	char clock[16] = "-", kinds[256], untracked[256];
	time_t now = time(NULL);
	struct tm local;

	if (localtime_r(&now, &local))
		strftime(clock, sizeof(clock), "%H:%M:%S", &local);
	idle_by_text(kinds, sizeof(kinds), line->has_kinds, line->idle_by);
	untracked_text(untracked, sizeof(untracked), line);
	/* A stopped target's threads keep the states they had when it
	 * stopped: the note says why the row does not move. */
	fprintf(out, "%-8s %8d %8d %6d %9.2f %8.2f %8.2f %8.2f %8.2fs  %s%s%s\n",
		clock, (int)line->pid, line->nthreads, line->r_concurrency,
		line->runnable, line->running, line->lwps, line->idle, line->window_s,
		kinds, untracked, line->stopped == TDSTAT_STOPPED ? "  stopped" : "");
}

/* ps: the averages only while gathering is on (off, there are none). */
static void list_row(FILE *out, const struct tdstat_interval *line)
{
	char kinds[256];

	if (!line->totals.enabled) {
		fprintf(out, "%8d %-16s %-9s %8d %9s %8s  %s\n", (int)line->pid,
			line->comm, "off", line->nthreads, "-", "-", "-");
		return;
	}
	idle_by_text(kinds, sizeof(kinds), line->has_kinds, line->idle_by);
	fprintf(out, "%8d %-16s %-9s %8d %9.2f %8.2f  %s\n", (int)line->pid, line->comm,
		"on", line->nthreads, line->runnable, line->idle, kinds);
}

static void process(struct tdstat_output *output, const struct tdstat_interval *line)
{
	struct text_state *state = output->state;

	rows_flush(output);
	if (output->mode == TDSTAT_OUTPUT_LIST) {
		list_row(output->out, line);
		return;
	}
	if (tables(output))
		live_header(output->out);
	if (state)
		rows_next_line(state);
	live_row(output->out, line);
	if (state)
		state->last = PRINTED_LINE;
}

/* Prints `header` unless the block's last row was of the same table. */
static void table_header(struct tdstat_output *output, enum printed table, const char *header)
{
	struct text_state *state = output->state;

	if ((!state || state->last != table) && header)
		fputs(header, output->out);
	if (state)
		state->last = table;
}

/* "%d" of a tid; returns its length. */
static size_t tid_text(char *text, pid_t tid)
{
	char digits[16];
	unsigned int value = tid < 0 ? 0u - (unsigned int)tid : (unsigned int)tid;
	int n = 0;
	size_t at = 0;

	do {
		digits[n++] = (char)('0' + value % 10);
		value /= 10;
	} while (value);
	if (tid < 0)
		text[at++] = '-';
	while (n)
		text[at++] = digits[--n];
	text[at] = '\0';
	return at;
}

/*
 * Everything a row of -t prints, as the text shows it: the shares in
 * hundredths (-1: "-"), the kinds shown in their order, the names (the
 * interned strings of threads.c, the same pointer for the same text
 * while their generation holds).  Two rows with equal keys print the
 * same bytes, so a row whose key is the one its thread had at the last
 * line is copied from that line's text rather than formatted: at 100
 * lines a second on a thousand sleeping threads, most rows.  Zeroed
 * whole before it is filled: compared with memcmp.
 */
struct row_key {
	pid_t tid;
	int32_t wait_kind;
	uint64_t names_generation;
	const char *name, *object_name, *site_name;
	uint64_t site;
	int16_t shares[5];      /* runnable, cpu, run queue, idle, untracked */
	uint8_t tracked;
	uint8_t kinds_shown;    /* UINT8_MAX: "-" (not its own) */
	uint8_t kind_order[TDSTAT_WAIT_KIND_COUNT];
	int16_t kind_share[TDSTAT_WAIT_KIND_COUNT];
};

struct kept_row {
	struct row_key key;
	size_t text_at, length;
};

/* share_text's hundredths, when it prints them from its table; false
 * for what it prints otherwise (not cached). */
static bool share_key(bool known, double share, int16_t *key)
{
	if (!known) {
		*key = -1;
		return true;
	}
	if (!(share >= 0 && share < 1e15))
		return false;
	double hundredths = rint(share * 100);

	if (hundredths >= SHARE_TABLE)
		return false;
	*key = (int16_t)hundredths;
	return true;
}

/* The key of a row; false when it has something the key does not hold
 * (such a row is formatted every time). */
static bool row_key_of(const struct tdstat_thread_row *row, struct row_key *key)
{
	bool own = row->tracked && row->shim_known;

	memset(key, 0, sizeof(*key));
	key->tid = row->tid;
	key->wait_kind = row->wait_kind;
	key->names_generation = row->names_generation;
	key->name = row->name;
	key->object_name = row->object_name;
	key->site_name = row->site_name;
	key->site = row->site;
	key->tracked = row->tracked;
	if (!share_key(own, row->runnable, &key->shares[0]) || !share_key(row->has_kernel, row->cpu, &key->shares[1]) ||
	    !share_key(row->has_kernel, row->run_queue, &key->shares[2]) || !share_key(own, row->idle, &key->shares[3]) ||
	    !share_key(row->untracked >= 0, row->untracked, &key->shares[4]))
		return false;
	if (!own || !row->has_kinds) {
		key->kinds_shown = UINT8_MAX;
		return true;
	}
	/* idle_by_text's order: heaviest first, the first kind on a tie. */
	key->kinds_shown = (uint8_t)kinds_order(row->idle_by, key->kind_order);
	for (int i = 0; i < key->kinds_shown; i++)
		if (!share_key(true, row->idle_by[key->kind_order[i]], &key->kind_share[i]))
			return false;
	return true;
}

/* The last line's text of this row, when its key is the same. */
static const struct kept_row *row_before(struct text_state *state, const struct row_key *key)
{
	struct kept_rows *before = &state->before;

	while (state->before_at < before->count && before->rows[state->before_at].key.tid < key->tid)
		state->before_at++;
	if (state->before_at < before->count && memcmp(&before->rows[state->before_at].key, key, sizeof(*key)) == 0)
		return &before->rows[state->before_at];
	return NULL;
}

/* Kept for the next line (rows in increasing tid order only), and to be
 * written with the rows next to it (rows_flush); false when it is not
 * kept (the caller writes it itself). */
static bool row_keep(struct text_state *state, const struct row_key *key, const char *text, size_t length)
{
	struct kept_rows *now = &state->now;

	if (now->count && now->rows[now->count - 1].key.tid >= key->tid)
		return false;
	if (now->count == now->capacity) {
		size_t grown = now->capacity ? 2 * now->capacity : 256;
		struct kept_row *rows = realloc(now->rows, grown * sizeof(*rows));

		if (!rows)
			return false;
		now->rows = rows;
		now->capacity = grown;
	}
	if (now->used + length > now->room) {
		size_t grown = now->room ? 2 * now->room : 64 * 1024;
		char *text_room;

		while (grown < now->used + length)
			grown *= 2;
		text_room = realloc(now->text, grown);
		if (!text_room)
			return false;
		now->text = text_room;
		now->room = grown;
	}
	memcpy(now->text + now->used, text, length);
	now->rows[now->count++] = (struct kept_row){ .key = *key, .text_at = now->used, .length = length };
	now->used += length;
	return true;
}

/*
 * The kept rows not yet written, in one write.  A row kept is written
 * from its copy in now.text, with the rows after it, when something else
 * is about to be written: every callback but thread() starts here, and
 * thread() before a row or header of its own.  An fwrite per row (its
 * locking and bookkeeping) cost as much as copying the row.
 */
static void rows_flush(struct tdstat_output *output)
{
	struct text_state *state = output->state;

	if (!state || state->now.used <= state->written)
		return;
	fwrite(state->now.text + state->written, 1, state->now.used - state->written, output->out);
	state->written = state->now.used;
}

/* A new line: its rows are compared with the last line's (the last
 * line's all written: process() flushed them). */
static void rows_next_line(struct text_state *state)
{
	struct kept_rows done = state->before;

	state->before = state->now;
	state->now = done;
	state->now.count = 0;
	state->now.used = 0;
	state->before_at = 0;
	state->written = 0;
}

/* -t: the columns of tdstat(1), "Threads". */
static void thread(struct tdstat_output *output, const struct tdstat_thread_row *row)
{
	char runnable[24], idle[24], cpu[24], run_queue[24], untracked[24], kinds[256], tid[16];
	char line[2048];
	struct row_text text = { line, line + sizeof(line) - 1 };
	bool own = row->tracked && row->shim_known;

	/* The kernel's columns over a longer interval than the line's
	 * (tdstat.h, TDSTAT_KERNEL_COST_FACTOR): said in the header. */
	struct text_state *state = output->state;

	/* (The header is made only when it is printed: once a table.) */
	if (state && state->last == PRINTED_THREAD) {
		table_header(output, PRINTED_THREAD, NULL);
	} else if (row->has_kernel && row->kernel_window_s > row->window_s * 1.5) {
		char header[256];

		snprintf(header, sizeof(header),
			 "     TID NAME             RUNNABLE    CPU   RUNQ   IDLE UNTRACKED  IDLE BY KIND"
			 "                   WAITING NOW IN  (CPU RUNQ UNTRACKED: last %.2fs)\n",
			 row->kernel_window_s);
		table_header(output, PRINTED_THREAD, header);
	} else
		table_header(output, PRINTED_THREAD,
			     "     TID NAME             RUNNABLE    CPU   RUNQ   IDLE UNTRACKED  IDLE BY KIND"
			     "                   WAITING NOW IN\n");
	struct row_key key;
	bool keyed = state && row_key_of(row, &key);

	if (keyed) {
		const struct kept_row *before = row_before(state, &key);

		/* now.text is another buffer than before.text: the copy's
		 * source stays where it is. */
		if (before && row_keep(state, &key, state->before.text + before->text_at, before->length))
			return;
		if (before) {
			rows_flush(output);
			fwrite(state->before.text + before->text_at, 1, before->length, output->out);
			return;
		}
	}
	/* "%8d %-16s %8s %6s %6s %6s %9s  %-30s %s\n" */
	put_padded_length(&text, tid, tid_text(tid, row->tid), 8, true);
	put_spaces(&text, 1);
	put_padded(&text, row->name, 16, false);
	put_spaces(&text, 1);
	put_padded_length(&text, runnable, share_text(runnable, sizeof(runnable), own, row->runnable), 8, true);
	put_spaces(&text, 1);
	put_padded_length(&text, cpu, share_text(cpu, sizeof(cpu), row->has_kernel, row->cpu), 6, true);
	put_spaces(&text, 1);
	put_padded_length(&text, run_queue, share_text(run_queue, sizeof(run_queue), row->has_kernel, row->run_queue),
			  6, true);
	put_spaces(&text, 1);
	put_padded_length(&text, idle, share_text(idle, sizeof(idle), own, row->idle), 6, true);
	put_spaces(&text, 1);
	put_padded_length(&text, untracked,
			  share_text(untracked, sizeof(untracked), row->untracked >= 0, row->untracked), 9, true);
	put_spaces(&text, 2);
	put_padded_length(&text, kinds, idle_by_text(kinds, sizeof(kinds), own && row->has_kinds, row->idle_by), 30, false);
	put_spaces(&text, 1);
	if (!row->tracked) {
		put_padded(&text, "(no record: not tracked)", 0, false);
	} else if (row->wait_kind < 0) {
		put_bytes(&text, "-", 1);
	} else {
		kind_names_fill();
		/* A kind of a newer shim than this command: no name here. */
		if (row->wait_kind < TDSTAT_WAIT_KIND_COUNT)
			put_bytes(&text, kind_name[row->wait_kind], kind_name_length[row->wait_kind]);
		else
			put_bytes(&text, "?", 1);
		put_spaces(&text, 1);
		put_padded(&text, row->object_name, 0, false);
		if (row->site_name[0]) {
			put_bytes(&text, " in ", 4);
			put_padded(&text, row->site_name, 0, false);
		} else {
			char site[32];
			snprintf(site, sizeof(site), " at 0x%" PRIx64, row->site);
			put_padded(&text, site, 0, false);
		}
	}
	*text.at++ = '\n';
	if (keyed && row_keep(state, &key, line, (size_t)(text.at - line)))
		return;
	rows_flush(output);
	fwrite(line, 1, (size_t)(text.at - line), output->out);
}

/* -w: the columns of tdstat(1), "Objects"; rows under SHOWN_MIN left out. */
static void object(struct tdstat_output *output, const struct tdstat_object_row *row)
{
	char name[TDSTAT_NAME_SIZE * (TDSTAT_SEEN_MAX + 1)], caller[TDSTAT_NAME_SIZE];
	size_t used = 0;

	rows_flush(output);
	table_header(output, PRINTED_OBJECT, "KIND      WAITING  OBJECT                                   CALLER\n");
	if (row->waiting < SHOWN_MIN)
		return;
	if (!row->ended) {
		snprintf(name, sizeof(name), "%s", row->object_name);
	} else {
		used = (size_t)snprintf(name, sizeof(name), "(waits that ended");
		for (int i = 0; i < row->seen_count && used < sizeof(name); i++)
			used += (size_t)snprintf(name + used, sizeof(name) - used, "%s%s", i ? ", " : ": ",
						 row->seen_names[i]);
		if (used < sizeof(name))
			snprintf(name + used, sizeof(name) - used, "%s)", row->seen_more ? ", ..." : "");
	}
	if (row->ended)
		snprintf(caller, sizeof(caller), "-");
	else if (row->site_name[0])
		snprintf(caller, sizeof(caller), "%s", row->site_name);
	else
		snprintf(caller, sizeof(caller), "0x%" PRIx64, row->site);
	fprintf(output->out, "%-8s %8.2f  %-40s %s\n", td_wait_kind_name((unsigned)row->kind), row->waiting, name,
		caller);
}

/* -w, the wait-for graph: the columns of tdstat(1), "Owners and waiters". */
static void sync_row(struct tdstat_output *output, const struct tdstat_sync_row *row)
{
	char state[32], owner[TDSTAT_COMM_SIZE + 16], waiters[1024];
	size_t used = 0;

	rows_flush(output);
	table_header(output, PRINTED_SYNC,
		     "SYNC     OBJECT                                   STATE         OWNER                    WAITERS\n");
	switch (row->type) {
	case TD_SYNC_MUTEX:
		snprintf(state, sizeof(state), "%s", row->locked ? "locked" : "free");
		break;
	case TD_SYNC_RWLOCK:
		if (row->write_locked)
			snprintf(state, sizeof(state), "write-locked");
		else
			snprintf(state, sizeof(state), "readers %d", (int)row->readers);
		break;
	case TD_SYNC_SEMA:
		snprintf(state, sizeof(state), "count %d", (int)row->count);
		break;
	default:
		snprintf(state, sizeof(state), "-");
	}
	if (row->owner > 0)
		tdstat_thread_text(owner, sizeof(owner), row->owner, row->owner_name);
	else
		snprintf(owner, sizeof(owner), "-");
	waiters[0] = '\0';
	for (size_t i = 0; i < row->waiter_count && used < sizeof(waiters); i++) {
		if (i)
			used += (size_t)snprintf(waiters + used, sizeof(waiters) - used, ", ");
		if (used < sizeof(waiters))
			tdstat_thread_text(waiters + used, sizeof(waiters) - used, row->waiters[i].tid,
					   row->waiters[i].name);
		used += strlen(waiters + used);
	}
	fprintf(output->out, "%-8s %-40s %-13s %-24s %s\n", tdstat_sync_type_name(row->type), row->object_name, state,
		owner, waiters);
}

/* One line per cycle, starting "deadlock:" (tdstat(1)). */
static void deadlocks(struct tdstat_output *output, pid_t pid, const struct tdstat_deadlock *cycles, size_t count)
{
	char text[4096];

	rows_flush(output);
	(void)pid;
	for (size_t i = 0; i < count; i++) {
		tdstat_deadlock_text(&cycles[i], text, sizeof(text));
		fprintf(output->out, "deadlock: %s\n", text);
	}
}

static void end(struct tdstat_output *output)
{
	rows_flush(output);
	if (tables(output))
		fputc('\n', output->out);
}

static void kept_rows_free(struct kept_rows *kept)
{
	free(kept->rows);
	free(kept->text);
	memset(kept, 0, sizeof(*kept));
}

static void close_output(struct tdstat_output *output)
{
	struct text_state *state = output->state;

	rows_flush(output);
	if (state) {
		kept_rows_free(&state->before);
		kept_rows_free(&state->now);
	}
	free(output->state);
}

static void summary_line(FILE *out, double value, const char *name,
			 int num, int den, const char *meaning)
{
	fprintf(out, "  %12.3f  %-15s %-34s (%d/%d)\n", value, name, meaning, num, den);
}

static void summary(struct tdstat_output *output, const struct tdstat_interval *line)
{
	FILE *out = output->out;

	rows_flush(output);
	fprintf(out, "\n Thread statistics of '%s' (pid %d), %.3f s%s:\n\n",
		output->command ? output->command : line->comm, (int)line->pid, line->window_s,
		line->totals.enabled ? ", the whole run" : ", up to when gathering was turned off");
	fprintf(out, "  %12d  %-15s %s\n", line->nthreads, "nthreads",
		"threads alive at exit");
	fprintf(out, "  %12d  %-15s %s\n", line->r_concurrency, "r_concurrency",
		"requested concurrency");
	summary_line(out, line->runnable, "nrunnable", line->nrunnable_num,
		     line->nrunnable_den, "runnable threads, on average");
	summary_line(out, line->running, "a_concurrency", line->a_concurrency_num,
		     line->a_concurrency_den, "running threads (on a CPU)");
	summary_line(out, line->lwps, "nlwps", line->nlwps_num,
		     line->nlwps_den, "LWPs (threads) in use");
	summary_line(out, line->idle, "nidle", line->nidle_num,
		     line->nidle_den, "idle LWPs (waiting threads)");
	for (int k = 0; line->has_kinds && k < TDSTAT_WAIT_KIND_COUNT; k++)
		if (line->idle_by[k] >= SHOWN_MIN)
			fprintf(out, "  %12.3f    idle in %-10s %s\n", line->idle_by[k],
				td_wait_kind_name((unsigned)k), "threads waiting, on average");
	fputc('\n', out);
}

/* -s: the object, its type, its sleep time, then its type's fields by
 * their Solaris names (times in ns). */
static void sync_stats_row(struct tdstat_output *output, const struct tdstat_sync_stats_row *row)
{
	FILE *out = output->out;
	const char *separator = "";

	rows_flush(output);
	fprintf(out, "%-32s %-6s %12.3f  ", row->object_name, tdstat_sync_type_name(row->type), row->sleep_ns / 1e6);
#define FIELD(type_, member, name)                                                               \
	if (row->type == TD_SYNC_##type_) {                                                       \
		fprintf(out, "%s" #name "=%" PRIu64, separator, row->stats.ss_un.member.name);    \
		separator = " ";                                                                \
	}
	TDSTAT_SYNC_FIELDS(FIELD)
#undef FIELD
	fputc('\n', out);
}

/* -s: one line when the table overflowed, with what to do (nothing
 * otherwise: a full table is not news until an object found no room). */
static void sync_table_row(struct tdstat_output *output, const struct tdstat_sync_table_row *row)
{
	const td_sync_table_t *table = &row->table;

	rows_flush(output);
	if (table->st_overflow == 0)
		return;
	fprintf(output->out,
		"overflow: %" PRIu64 " lookups found no room in the table (%" PRIu32 " entries, %" PRIu64
		" used): those objects are not tracked (a thread counts each once, again when it comes back "
		"to one after another); entries are never freed: start the program again and turn tracking "
		"on (tdstat sync enable PID) only for the part to study\n",
		table->st_overflow, table->st_capacity, table->st_used);
}

const struct tdstat_format tdstat_format_text_row = {
	.name = "text",
	.start = start,
	.process = process,
	.thread = thread,
	.object = object,
	.sync = sync_row,
	.sync_stats = sync_stats_row,
	.sync_table = sync_table_row,
	.deadlocks = deadlocks,
	.end = end,
	.summary = summary,
	.close = close_output,
};
