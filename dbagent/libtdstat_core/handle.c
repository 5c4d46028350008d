/* SPDX-License-Identifier: MIT */
/*
 * Opening a core: its headers with libelf, its notes (notes.c), its
 * modules with libdwfl, which maps the files the core names (NT_FILE, the
 * dynamic linker's list) at their load addresses.  And the registry of
 * open handles, by which the ps_* routines tell theirs from a chained
 * provider's.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core_private.h"

#if defined(__x86_64__)
#define NATIVE_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define NATIVE_MACHINE EM_AARCH64
#elif defined(__i386__)
#define NATIVE_MACHINE EM_386
#else
#error "libtdstat_core: add this machine's ELF e_machine"
#endif

#if UINTPTR_MAX == UINT64_MAX
#define NATIVE_CLASS ELFCLASS64
#else
#define NATIVE_CLASS ELFCLASS32
#endif

/* The open handles.  open_handles lets a chained provider's calls pass
 * without taking the lock when no core is open (the live command's
 * case); the list answers otherwise. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ps_prochandle *registry;
static atomic_uint open_handles;

bool tdcore_handle_known(const struct ps_prochandle *ph)
{
	bool known = false;

	if (!ph || atomic_load_explicit(&open_handles, memory_order_acquire) == 0)
		return false;
	pthread_mutex_lock(&registry_lock);
	for (const struct ps_prochandle *h = registry; h && !known; h = h->registry_next)
		known = h == ph;
	pthread_mutex_unlock(&registry_lock);
	return known;
}

void tdcore_set_status(struct ps_prochandle *ph, enum tdcore_status status)
{
	atomic_store_explicit(&ph->last_status, (int)status, memory_order_relaxed);
}

TDCORE_EXPORT enum tdcore_status tdcore_last_status(const struct ps_prochandle *ph)
{
	return ph ? (enum tdcore_status)atomic_load_explicit(&ph->last_status, memory_order_relaxed) : TDCORE_OK;
}

static int compare_segments(const void *a, const void *b)
{
	const struct tdcore_segment *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

/* Whether the segment's bytes in the file start with an ELF header:
 * where libdwfl reports a module. */
static bool starts_elf(const struct ps_prochandle *ph, const GElf_Phdr *phdr)
{
	size_t size;
	const char *file = elf_rawfile(ph->elf, &size);

	return file && phdr->p_filesz >= SELFMAG && phdr->p_offset <= size &&
	       size - phdr->p_offset >= SELFMAG && memcmp(file + phdr->p_offset, ELFMAG, SELFMAG) == 0;
}

static enum tdcore_status segments_read(struct ps_prochandle *ph, size_t phdr_count)
{
	size_t elf_starts = 0;

	ph->segments = calloc(phdr_count ? phdr_count : 1, sizeof(*ph->segments));
	if (!ph->segments)
		return TDCORE_NO_MEMORY;
	for (size_t i = 0; i < phdr_count; i++) {
		GElf_Phdr phdr;

		if (!gelf_getphdr(ph->elf, (int)i, &phdr))
			return TDCORE_DAMAGED;
		if (phdr.p_type != PT_LOAD || phdr.p_memsz == 0)
			continue;
		if (phdr.p_filesz > phdr.p_memsz || phdr.p_vaddr > UINT64_MAX - phdr.p_memsz ||
		    phdr.p_offset > UINT64_MAX - phdr.p_filesz)
			return TDCORE_DAMAGED;
		/* More modules than the lookup searches: refused before
		 * libdwfl spends minutes reporting them (core_private.h). */
		if (starts_elf(ph, &phdr) && ++elf_starts > TDCORE_MODULES_MAX)
			return TDCORE_LOOKUP_LIMIT;
		ph->segments[ph->segment_count++] = (struct tdcore_segment){
			.vaddr = phdr.p_vaddr, .memsz = phdr.p_memsz, .filesz = phdr.p_filesz, .offset = phdr.p_offset,
		};
	}
	qsort(ph->segments, ph->segment_count, sizeof(*ph->segments), compare_segments);
	return TDCORE_OK;
}

/* Module files are searched for by build ID and by the names the core
 * gives (elfutils' standard lookup); separate debug information is never
 * wanted: .dynsym, or .symtab when the file has one, holds what we look up. */
static int no_debuginfo(Dwfl_Module *module, void **userdata, const char *name, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	return -1;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = no_debuginfo,
};

static enum tdcore_status modules_report(struct ps_prochandle *ph, const char *executable_path)
{
	ph->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!ph->dwfl)
		return TDCORE_NO_MEMORY;
	dwfl_report_begin(ph->dwfl);
	/* No module at all is not an error here: the lookup then answers
	 * PS_NOSYM, and the caller says the shim was not found. */
	if (dwfl_core_file_report(ph->dwfl, ph->elf, executable_path) < 0) {
		dwfl_report_end(ph->dwfl, NULL, NULL);
		return TDCORE_DAMAGED;
	}
	if (dwfl_report_end(ph->dwfl, NULL, NULL) != 0)
		return TDCORE_DAMAGED;
	return TDCORE_OK;
}

static enum tdcore_status core_open(struct ps_prochandle *ph, const char *core_path, const char *executable_path)
{
	GElf_Ehdr header;
	struct stat info;
	size_t phdr_count;
	enum tdcore_status status;

	/* O_NONBLOCK: a FIFO given as the core is refused below, not
	 * waited on for a writer. */
	ph->fd = open(core_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (ph->fd < 0)
		return TDCORE_CANNOT_OPEN;
	if (fstat(ph->fd, &info) != 0)
		return TDCORE_CANNOT_OPEN;
	if (!S_ISREG(info.st_mode)) {
		errno = EINVAL;
		return TDCORE_CANNOT_OPEN;
	}
	/* libdwfl open()s the executable blocking: no FIFO either. */
	if (executable_path && stat(executable_path, &info) == 0 && !S_ISREG(info.st_mode)) {
		errno = EINVAL;
		return TDCORE_CANNOT_OPEN;
	}
	if (fstat(ph->fd, &info) != 0)
		return TDCORE_CANNOT_OPEN;
	ph->file_size = (uint64_t)info.st_size;
	elf_version(EV_CURRENT);
	ph->elf = elf_begin(ph->fd, ELF_C_READ_MMAP, NULL);
	if (!ph->elf || elf_kind(ph->elf) != ELF_K_ELF)
		return TDCORE_NOT_A_CORE;
	if (!gelf_getehdr(ph->elf, &header))
		return TDCORE_DAMAGED;
	if (header.e_type != ET_CORE)
		return TDCORE_NOT_A_CORE;
	if (header.e_ident[EI_CLASS] != NATIVE_CLASS || header.e_machine != NATIVE_MACHINE)
		return TDCORE_FOREIGN;
	if (elf_getphdrnum(ph->elf, &phdr_count) != 0)
		return TDCORE_DAMAGED;
	if (phdr_count > TDCORE_SEGMENTS_MAX)
		return TDCORE_LOOKUP_LIMIT;
	if (header.e_phoff > ph->file_size ||
	    (uint64_t)phdr_count * header.e_phentsize > ph->file_size - header.e_phoff)
		return TDCORE_DAMAGED;
	status = segments_read(ph, phdr_count);
	if (status == TDCORE_OK)
		status = tdcore_notes_read(ph);
	if (status == TDCORE_OK)
		status = modules_report(ph, executable_path);
	return status;
}

TDCORE_EXPORT void tdcore_close(struct ps_prochandle *ph)
{
	struct ps_prochandle **link;

	if (!ph)
		return;
	pthread_mutex_lock(&registry_lock);
	for (link = &registry; *link; link = &(*link)->registry_next) {
		if (*link == ph) {
			*link = ph->registry_next;
			atomic_fetch_sub_explicit(&open_handles, 1, memory_order_release);
			break;
		}
	}
	pthread_mutex_unlock(&registry_lock);
	if (ph->dwfl)
		dwfl_end(ph->dwfl);
	if (ph->elf)
		elf_end(ph->elf);
	if (ph->fd >= 0)
		close(ph->fd);
	pthread_mutex_destroy(&ph->dwfl_lock);
	free(ph->segments);
	free(ph->threads);
	free(ph);
}

TDCORE_EXPORT enum tdcore_status tdcore_open(const char *core_path, const char *executable_path,
					     struct ps_prochandle **out)
{
	struct ps_prochandle *ph;
	enum tdcore_status status;
	int error;

	if (!out)
		return TDCORE_CANNOT_OPEN;
	*out = NULL;
	if (!core_path) {
		errno = EINVAL;
		return TDCORE_CANNOT_OPEN;
	}
	ph = calloc(1, sizeof(*ph));
	if (!ph)
		return TDCORE_NO_MEMORY;
	ph->fd = -1;
	pthread_mutex_init(&ph->dwfl_lock, NULL);
	status = core_open(ph, core_path, executable_path);
	if (status != TDCORE_OK) {
		error = errno;
		tdcore_close(ph);
		errno = error;
		return status;
	}
	pthread_mutex_lock(&registry_lock);
	ph->registry_next = registry;
	registry = ph;
	atomic_fetch_add_explicit(&open_handles, 1, memory_order_release);
	pthread_mutex_unlock(&registry_lock);
	*out = ph;
	return TDCORE_OK;
}

TDCORE_EXPORT void tdcore_process(const struct ps_prochandle *ph, struct tdcore_process *process)
{
	if (ph && process)
		*process = ph->process;
}
