/* SPDX-License-Identifier: MIT */
/*
 * The core's notes: who the process was (NT_PRPSINFO), its threads and
 * their CPU time (NT_PRSTATUS).  libelf checks that each note lies inside
 * the file; sizes are checked here before a note's descriptor is used.
 *
 * CPU time.  The kernel writes into the thread group leader's
 * NT_PRSTATUS the whole process's user and system time (its
 * thread_group_cputime, exited threads included: the process CPU clock
 * the shim reads at a window's start), and into every other thread's
 * note that thread's own.  So the process's CPU time is the leader's
 * note; when the leader is not in the core (main returned through
 * pthread_exit) it is the sum over the threads present, which misses
 * the threads that had exited.  gdb's gcore (bfd's elfcore_write_prstatus)
 * fills in only the TID, the signal and the registers: zero parent,
 * group and session too, which the kernel never writes for a process it
 * dumps.  That tells the two apart: a kernel core's zero CPU time is a
 * process that ran less than a clock tick, gcore's means none is known.
 */
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>
#include <sys/stat.h>

#include <tdstat/region.h>

#include "core_private.h"

/* Adds time to *ns; false when it is no time the kernel writes (negative,
 * microseconds out of range) or the sum does not fit: the kernel's
 * figures are 64-bit nanoseconds, so a note past that was not its. */
static bool timeval_add_ns(struct timeval time, uint64_t *ns)
{
	uint64_t value;

	if (time.tv_sec < 0 || time.tv_usec < 0 || time.tv_usec >= 1000000)
		return false;
	return !__builtin_mul_overflow((uint64_t)time.tv_sec, UINT64_C(1000000000), &value) &&
	       !__builtin_add_overflow(value, (uint64_t)time.tv_usec * 1000u, &value) &&
	       !__builtin_add_overflow(*ns, value, ns);
}

struct notes {
	bool have_psinfo;
	bool file_replaced;
	bool maps_shim;
	pid_t psinfo_pid;
	char command[17];
	int first_signal;
	size_t count, capacity;
	struct tdcore_thread *threads;
};

static enum tdcore_status thread_add(struct notes *notes, const prstatus_t *status)
{
	uint64_t cpu = 0;
	bool from_kernel = status->pr_ppid != 0 || status->pr_pgrp != 0 || status->pr_sid != 0;

	/* A CPU time that wrapped would be printed as measured: refused. */
	if (from_kernel && !(timeval_add_ns(status->pr_utime, &cpu) && timeval_add_ns(status->pr_stime, &cpu)))
		return TDCORE_DAMAGED;
	if (notes->count == notes->capacity) {
		size_t capacity = notes->capacity ? 2 * notes->capacity : 16;
		struct tdcore_thread *threads;

		if (notes->count >= TDCORE_THREADS_MAX)
			return TDCORE_DAMAGED;
		threads = realloc(notes->threads, capacity * sizeof(*threads));
		if (!threads)
			return TDCORE_NO_MEMORY;
		notes->threads = threads;
		notes->capacity = capacity;
	}
	if (notes->count == 0)
		notes->first_signal = status->pr_cursig;
	notes->threads[notes->count++] = (struct tdcore_thread){
		.tid = status->pr_pid, .cpu_known = from_kernel, .cpu_ns = cpu,
	};
	return TDCORE_OK;
}

/* NT_FILE: a count, the page size, count (start, end, offset) triples,
 * then count NUL-terminated names.  libdwfl open()s the names that hold
 * an ELF image, blocking: a name that is now a FIFO (nobody can map
 * one, so it was replaced since the dump) would wait for a writer
 * forever.  Such a core's files have changed: say so before libdwfl
 * opens them.  And a name that is the shim's says the process had
 * loaded it, whatever becomes of the symbol lookup (symbols.c). */
static void file_note_read(const char *desc, size_t size, struct notes *notes)
{
	unsigned long count;
	size_t at;
	const char *end = desc + size;

	if (size < 2 * sizeof(unsigned long))
		return;
	memcpy(&count, desc, sizeof(count)); /* notes are only 4-aligned */
	if (count > (size - 2 * sizeof(unsigned long)) / (3 * sizeof(unsigned long)))
		return;
	at = 2 * sizeof(unsigned long) + (size_t)count * 3 * sizeof(unsigned long);
	for (unsigned long i = 0; i < count && at < size; i++) {
		const char *name = desc + at, *nul = memchr(name, '\0', (size_t)(end - name)), *base;
		struct stat info;

		if (!nul)
			return;
		if (stat(name, &info) == 0 && S_ISFIFO(info.st_mode))
			notes->file_replaced = true;
		base = strrchr(name, '/');
		if (strncmp(base ? base + 1 : name, TDSTAT_SHIM_SONAME, strlen(TDSTAT_SHIM_SONAME)) == 0)
			notes->maps_shim = true;
		at += (size_t)(nul - name) + 1;
	}
}

/* Notes are read as libdwfl's dwfl_core_file_report reads them: 8-byte
 * aligned when the segment says so.  Read otherwise, a segment laid out
 * to parse both ways showed this file one NT_FILE and libdwfl another,
 * whose FIFO it then opened (file_note_read).  libdwfl reads NT_FILE in
 * the first PT_NOTE only (`first`), so only there are its names
 * checked: a core whose PT_NOTEs all named one big NT_FILE again cost
 * a stat() per name per copy, 25 s for 1000 copies of 1 MB. */
static enum tdcore_status note_segment(struct ps_prochandle *ph, const GElf_Phdr *phdr, bool first,
				       struct notes *notes)
{
	Elf_Data *data = elf_getdata_rawchunk(ph->elf, (int64_t)phdr->p_offset, phdr->p_filesz,
					      phdr->p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
	size_t offset = 0, name_at, desc_at;
	GElf_Nhdr note;

	if (!data)
		return TDCORE_DAMAGED;
	while (offset < data->d_size) {
		size_t next = gelf_getnote(data, offset, &note, &name_at, &desc_at);
		const char *name = (const char *)data->d_buf + name_at;
		const void *desc = (const char *)data->d_buf + desc_at;
		enum tdcore_status status = TDCORE_OK;

		if (next == 0 || next <= offset)
			return TDCORE_DAMAGED;
		offset = next;
		if (note.n_namesz != sizeof("CORE") || memcmp(name, "CORE", sizeof("CORE")) != 0)
			continue;
		if (note.n_type == NT_PRSTATUS && note.n_descsz >= sizeof(prstatus_t)) {
			prstatus_t prstatus;

			memcpy(&prstatus, desc, sizeof(prstatus));
			status = thread_add(notes, &prstatus);
		} else if (note.n_type == NT_FILE && first) {
			file_note_read(desc, note.n_descsz, notes);
		} else if (note.n_type == NT_PRPSINFO && note.n_descsz >= sizeof(prpsinfo_t) && !notes->have_psinfo) {
			prpsinfo_t psinfo;

			memcpy(&psinfo, desc, sizeof(psinfo));
			notes->have_psinfo = true;
			notes->psinfo_pid = psinfo.pr_pid;
			/* Printable ASCII only: callers print it, and a
			 * hostile core must not write to their terminal. */
			for (size_t i = 0; i < sizeof(psinfo.pr_fname) && psinfo.pr_fname[i]; i++) {
				unsigned char c = (unsigned char)psinfo.pr_fname[i];

				notes->command[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
			}
		}
		if (status != TDCORE_OK)
			return status;
	}
	return TDCORE_OK;
}

static int compare_tids(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return x < y ? -1 : x > y;
}

/* Whether every thread has its own TID, as in any process: a note
 * repeated would count a thread twice ("6 threads in the core" of five)
 * and add its CPU time twice when the leader is absent. */
static enum tdcore_status tids_distinct(const struct tdcore_thread *threads, size_t count)
{
	pid_t *tids = malloc(count * sizeof(*tids));
	enum tdcore_status status = TDCORE_OK;

	if (!tids)
		return TDCORE_NO_MEMORY;
	for (size_t i = 0; i < count; i++)
		tids[i] = threads[i].tid;
	qsort(tids, count, sizeof(*tids), compare_tids);
	for (size_t i = 0; i < count && status == TDCORE_OK; i++) {
		if (tids[i] <= 0 || (i > 0 && tids[i] == tids[i - 1]))
			status = TDCORE_DAMAGED;
	}
	free(tids);
	return status;
}

/* The process's CPU time by the rule at the top of this file; DAMAGED
 * when the threads' times add up past 64 bits (no kernel's). */
static enum tdcore_status process_cpu(struct tdcore_process *process, struct tdcore_thread *threads, size_t count)
{
	uint64_t sum = 0;
	bool any = false;

	for (size_t i = 0; i < count; i++) {
		if (threads[i].tid == process->pid && threads[i].cpu_known) {
			process->cpu_known = 1;
			process->cpu_ns = threads[i].cpu_ns;
			/* The leader's own share is not in the core. */
			threads[i].cpu_known = 0;
			threads[i].cpu_ns = 0;
			return TDCORE_OK;
		}
		if (__builtin_add_overflow(sum, threads[i].cpu_ns, &sum))
			return TDCORE_DAMAGED;
		any = any || threads[i].cpu_known;
	}
	process->cpu_known = any;
	process->cpu_ns = sum;
	return TDCORE_OK;
}

enum tdcore_status tdcore_notes_read(struct ps_prochandle *ph)
{
	struct notes notes = { 0 };
	enum tdcore_status status = TDCORE_OK;
	uint64_t note_bytes = 0;
	size_t phdr_count;
	bool first = true;

	if (elf_getphdrnum(ph->elf, &phdr_count) != 0)
		return TDCORE_DAMAGED;
	for (size_t i = 0; i < phdr_count && status == TDCORE_OK; i++) {
		GElf_Phdr phdr;

		if (!gelf_getphdr(ph->elf, (int)i, &phdr))
			status = TDCORE_DAMAGED;
		else if (phdr.p_type == PT_NOTE && (note_bytes += phdr.p_filesz) > TDCORE_NOTES_BYTES_MAX)
			status = TDCORE_DAMAGED;
		else if (phdr.p_type == PT_NOTE) {
			status = note_segment(ph, &phdr, first, &notes);
			first = false;
		}
	}
	/* A core without a thread is not a process's core. */
	if (status == TDCORE_OK && notes.count == 0)
		status = TDCORE_DAMAGED;
	if (status == TDCORE_OK)
		status = tids_distinct(notes.threads, notes.count);
	if (status == TDCORE_OK && notes.file_replaced)
		status = TDCORE_FILES_MISSING;
	if (status == TDCORE_OK) {
		ph->process.pid = notes.have_psinfo ? notes.psinfo_pid : notes.threads[0].tid;
		status = process_cpu(&ph->process, notes.threads, notes.count);
	}
	if (status != TDCORE_OK) {
		free(notes.threads);
		return status;
	}
	ph->threads = notes.threads;
	ph->maps_shim = notes.maps_shim;
	memcpy(ph->process.command, notes.command, sizeof(notes.command));
	ph->process.signal = notes.first_signal;
	ph->process.threads = notes.count;
	return TDCORE_OK;
}
