/* SPDX-License-Identifier: MIT */
/*
 * ps_pglobal_lookup: finds a symbol in the dynamic symbol tables of the
 * objects mapped in the target, read from the target's memory (never from
 * files, which may have been replaced, deleted or reached through a
 * symlink).  /proc/PID/maps names the objects; the name a caller passes is
 * only a hint about which to try first.
 *
 * Everything read from the target is checked and every walk is bounded:
 * a corrupted object is skipped, never trusted.  Native ELF class only.
 *
 * The whole lookup is bounded too, not only each object: a process can
 * map one crafted file tens of thousands of times, or many crafted files,
 * each with a hash chain as long as we allow.  A file mapped more than
 * once is searched once (same device and inode), chain words are read in
 * blocks, and one budget of objects, reads, chain steps and time covers
 * all objects; when it runs out the lookup gives up (PS_ERR, status
 * TDPS_LOOKUP_LIMIT) rather than keep its caller waiting.
 */
#include <elf.h>
#include <errno.h>
#include <time.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <proc_service.h>

#include <tdstat/clock.h>

#include "ps_live_private.h"

/* Mappings listed from the maps file; the lookup's budget, over all
 * objects, is in ps_live_private.h. */
#define MAPPINGS_MAX (1u << 18)
#define OBJECTS_MAX TDPS_LOOKUP_OBJECTS_MAX
#define READS_MAX TDPS_LOOKUP_READS_MAX
#define STEPS_MAX TDPS_LOOKUP_STEPS_MAX
#define LOOKUP_TIME_NS (TDPS_LOOKUP_SECONDS * 1000000000ull)
#define CHAIN_BLOCK 64u
#define PHDRS_MAX 256u
#define DYNAMIC_MAX 512u
#define HASH_BUCKETS_MAX (1u << 24)
#define CHAIN_STEPS_MAX (1u << 16)
#define SYMBOL_NAME_MAX 4096u

#if __ELF_NATIVE_CLASS == 64
#define NATIVE_CLASS ELFCLASS64
#else
#define NATIVE_CLASS ELFCLASS32
#endif

struct mapped_object {
	uintptr_t start;   /* the mapping of file offset 0: the ELF header */
	uint64_t device, inode; /* the file's identity (0, 0 for the vDSO) */
	size_t order;      /* its line in the maps file */
	bool hinted;       /* its file name starts with the caller's object name */
	bool vdso;
};

struct object_list {
	struct mapped_object *objects;
	size_t count, capacity;
	bool truncated;    /* more mappings than MAPPINGS_MAX */
};

/* One lookup: what it looks for and what it may still spend. */
struct lookup {
	struct ps_prochandle *ph;
	const char *name;
	size_t name_length;
	unsigned reads_left, steps_left;
	uint64_t deadline_ns;
	bool exhausted;    /* a budget ran out: the answer is "gave up" */
	unsigned dynamic_objects;
};

/* The tables an object's PT_DYNAMIC points to, already made absolute. */
struct dynamic_tables {
	uintptr_t bias;
	uintptr_t symtab, strtab, gnu_hash, sysv_hash;
	uint64_t strsz, syment;
};

/* Fails the whole lookup (the process is gone, or we may not read it)
 * rather than just skipping one object. */
static bool fatal_status(struct ps_prochandle *ph)
{
	enum tdps_status status = tdps_last_status(ph);

	return status == TDPS_NO_PROCESS || status == TDPS_PERMISSION || status == TDPS_NO_MEMORY;
}

/* include/tdstat/clock.h's, as everywhere. */
static uint64_t monotonic_ns(void)
{
	return tdstat_monotonic_ns();
}

/* Every read of the target is paid for from the lookup's budget. */
static bool read_target(struct lookup *lookup, uintptr_t address, void *buffer, size_t size)
{
	if (lookup->exhausted)
		return false;
	if (lookup->reads_left == 0 || monotonic_ns() > lookup->deadline_ns) {
		lookup->exhausted = true;
		return false;
	}
	lookup->reads_left--;
	return tdps_memory_read(lookup->ph, address, buffer, size) == PS_OK;
}

static bool chain_step(struct lookup *lookup)
{
	if (lookup->steps_left == 0) {
		lookup->exhausted = true;
		return false;
	}
	lookup->steps_left--;
	return true;
}

static bool name_hinted(const char *path, const char *hint)
{
	const char *base = strrchr(path, '/');

	if (!hint || !*hint)
		return false;
	base = base ? base + 1 : path;
	return strncmp(base, hint, strlen(hint)) == 0;
}

static int objects_add(struct object_list *list, const struct mapped_object *object)
{
	if (list->count == list->capacity) {
		size_t capacity = list->capacity ? list->capacity * 2 : 64;
		struct mapped_object *objects;

		if (list->count >= MAPPINGS_MAX) {
			list->truncated = true; /* the rest are not searched */
			return 0;
		}
		objects = realloc(list->objects, capacity * sizeof(*objects));
		if (!objects)
			return -1;
		list->objects = objects;
		list->capacity = capacity;
	}
	list->objects[list->count++] = *object;
	return 0;
}

static int compare_identity(const void *a, const void *b)
{
	const struct mapped_object *x = a, *y = b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->inode != y->inode)
		return x->inode < y->inode ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int compare_order(const void *a, const void *b)
{
	const struct mapped_object *x = a, *y = b;

	return x->order < y->order ? -1 : x->order > y->order;
}

/* Keeps the first mapping of each file, in maps order.  A file mapped
 * twice at offset 0 (dlmopen, or a process mapping it over and over) has
 * the same symbols in every copy: one search answers for all. */
static void objects_deduplicate(struct object_list *list)
{
	size_t kept = 0;

	/* No mapping at all (the process went away while its maps were
	 * read): nothing to sort, and qsort must not get a null array. */
	if (list->count == 0)
		return;
	qsort(list->objects, list->count, sizeof(*list->objects), compare_identity);
	for (size_t i = 0; i < list->count; i++) {
		const struct mapped_object *object = &list->objects[i];

		if (kept > 0 && !object->vdso && object->device == list->objects[kept - 1].device &&
		    object->inode == list->objects[kept - 1].inode)
			continue;
		list->objects[kept++] = *object;
	}
	list->count = kept;
	qsort(list->objects, list->count, sizeof(*list->objects), compare_order);
}

/* One candidate per file mapped at offset 0 that is readable (or the
 * vDSO): only those can start with an ELF header.  Read through a live
 * thread: a zombie leader's maps file is empty. */
static enum tdps_status objects_list(pid_t pid, const char *hint, struct object_list *list)
{
	char path[64], *line = NULL;
	size_t line_size = 0, order = 0;
	enum tdps_status status = TDPS_OK;
	pid_t tid = tdps_live_thread(pid);
	FILE *maps;

	if (tid == 0)
		return TDPS_NO_PROCESS;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/maps", (int)pid, (int)tid);
	maps = fopen(path, "re");
	if (!maps)
		return tdps_status_from_errno(pid, errno);
	while (getline(&line, &line_size, maps) > 0) {
		unsigned long start, end, offset, inode;
		unsigned major, minor;
		char perms[8];
		int name_at = 0;
		char *name;
		bool vdso;

		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &start, &end, perms, &offset, &major, &minor,
			   &inode, &name_at) < 7 ||
		    name_at == 0)
			continue;
		name = line + name_at;
		name[strcspn(name, "\n")] = '\0';
		vdso = strcmp(name, "[vdso]") == 0;
		if (offset != 0 || perms[0] != 'r' || (name[0] != '/' && !vdso))
			continue;
		struct mapped_object object = {
			.start = start,
			.device = vdso ? 0 : ((uint64_t)major << 32 | minor),
			.inode = vdso ? 0 : inode,
			.order = order++,
			.hinted = name_hinted(name, hint),
			.vdso = vdso,
		};
		if (objects_add(list, &object) != 0) {
			status = TDPS_NO_MEMORY;
			break;
		}
	}
	free(line);
	fclose(maps);
	if (status == TDPS_OK)
		objects_deduplicate(list);
	return status;
}

static bool header_read(struct lookup *lookup, uintptr_t start, ElfW(Ehdr) *header)
{
	if (!read_target(lookup, start, header, sizeof(*header)))
		return false;
	return memcmp(header->e_ident, ELFMAG, SELFMAG) == 0 && header->e_ident[EI_CLASS] == NATIVE_CLASS &&
	       (header->e_type == ET_DYN || header->e_type == ET_EXEC) &&
	       header->e_phentsize == sizeof(ElfW(Phdr)) && header->e_phnum > 0 && header->e_phnum <= PHDRS_MAX;
}

/* ld.so rewrites most d_ptr values to run-time addresses in place; the
 * vDSO and other loaders leave them as link-time addresses. */
static uintptr_t dynamic_address(uintptr_t bias, uint64_t value)
{
	if (bias != 0 && value < bias)
		return (uintptr_t)(bias + value);
	return (uintptr_t)value;
}

/* Reads PT_DYNAMIC; false if the object has none we can use.  Sets
 * *has_dynamic when the object has a dynamic section at all. */
static bool tables_read(struct lookup *lookup, const struct mapped_object *object, struct dynamic_tables *tables,
			bool *has_dynamic)
{
	ElfW(Ehdr) header;
	ElfW(Phdr) phdrs[PHDRS_MAX];
	ElfW(Dyn) dynamic[DYNAMIC_MAX];
	uintptr_t page_mask = ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
	uintptr_t first_vaddr = UINTPTR_MAX, dynamic_vaddr = 0;
	size_t dynamic_count = 0, i;

	*has_dynamic = false;
	memset(tables, 0, sizeof(*tables));
	if (!header_read(lookup, object->start, &header))
		return false;
	if (header.e_phoff > UINTPTR_MAX - object->start ||
	    !read_target(lookup, object->start + header.e_phoff, phdrs, header.e_phnum * sizeof(ElfW(Phdr))))
		return false;
	for (i = 0; i < header.e_phnum; i++) {
		/* The segment that maps file offset 0 is the mapping at start. */
		if (phdrs[i].p_type == PT_LOAD && (phdrs[i].p_offset & page_mask) == 0 && first_vaddr == UINTPTR_MAX)
			first_vaddr = phdrs[i].p_vaddr & page_mask;
		if (phdrs[i].p_type == PT_DYNAMIC) {
			dynamic_vaddr = phdrs[i].p_vaddr;
			dynamic_count = phdrs[i].p_memsz / sizeof(ElfW(Dyn));
		}
	}
	if (first_vaddr == UINTPTR_MAX || dynamic_count == 0)
		return false;
	*has_dynamic = !object->vdso;
	tables->bias = header.e_type == ET_EXEC ? 0 : object->start - first_vaddr;
	if (dynamic_count > DYNAMIC_MAX)
		dynamic_count = DYNAMIC_MAX;
	if (!read_target(lookup, tables->bias + dynamic_vaddr, dynamic, dynamic_count * sizeof(ElfW(Dyn))))
		return false;
	tables->syment = sizeof(ElfW(Sym));
	for (i = 0; i < dynamic_count && dynamic[i].d_tag != DT_NULL; i++) {
		uint64_t value = dynamic[i].d_un.d_val;

		switch (dynamic[i].d_tag) {
		case DT_SYMTAB:
			tables->symtab = dynamic_address(tables->bias, value);
			break;
		case DT_STRTAB:
			tables->strtab = dynamic_address(tables->bias, value);
			break;
		case DT_GNU_HASH:
			tables->gnu_hash = dynamic_address(tables->bias, value);
			break;
		case DT_HASH:
			tables->sysv_hash = dynamic_address(tables->bias, value);
			break;
		case DT_STRSZ:
			tables->strsz = value;
			break;
		case DT_SYMENT:
			tables->syment = value;
			break;
		}
	}
	return tables->symtab && tables->strtab && tables->syment == sizeof(ElfW(Sym)) &&
	       (tables->gnu_hash || tables->sysv_hash);
}

/* Symbol `index` is a definition named lookup->name: its address in
 * *address. */
static bool symbol_matches(struct lookup *lookup, const struct dynamic_tables *tables, uint32_t index,
			   psaddr_t *address)
{
	char candidate[SYMBOL_NAME_MAX + 1];
	size_t name_length = lookup->name_length;
	ElfW(Sym) symbol;
	unsigned char type;

	if (!read_target(lookup, tables->symtab + (uintptr_t)index * sizeof(symbol), &symbol, sizeof(symbol)))
		return false;
	type = ELF64_ST_TYPE(symbol.st_info); /* the same for both classes */
	if (symbol.st_shndx == SHN_UNDEF || type == STT_TLS || symbol.st_name == 0)
		return false;
	if (tables->strsz && (symbol.st_name >= tables->strsz || name_length + 1 > tables->strsz - symbol.st_name))
		return false;
	if (!read_target(lookup, tables->strtab + symbol.st_name, candidate, name_length + 1))
		return false;
	if (memcmp(candidate, lookup->name, name_length + 1) != 0)
		return false;
	*address = (psaddr_t)(symbol.st_shndx == SHN_ABS ? symbol.st_value : tables->bias + symbol.st_value);
	return true;
}

static uint32_t gnu_hash(const char *name)
{
	uint32_t hash = 5381;

	for (; *name; name++)
		hash = hash * 33 + (unsigned char)*name;
	return hash;
}

static uint32_t sysv_hash(const char *name)
{
	uint32_t hash = 0, high;

	for (; *name; name++) {
		hash = (hash << 4) + (unsigned char)*name;
		high = hash & 0xf0000000u;
		if (high)
			hash ^= high >> 24;
		hash &= ~high;
	}
	return hash;
}

/* Chain words are consecutive: read them a block at a time, and one
 * word at a time only where a block would run past the mapping. */
struct chain_reader {
	uintptr_t chain;     /* address of the word of index `first` below */
	uint32_t first, count;
	uint32_t words[CHAIN_BLOCK];
};

static bool chain_word(struct lookup *lookup, struct chain_reader *reader, uint32_t position, uint32_t *word)
{
	uintptr_t address = reader->chain + (uintptr_t)position * sizeof(uint32_t);

	if (reader->count == 0 || position < reader->first || position - reader->first >= reader->count) {
		reader->first = position;
		reader->count = CHAIN_BLOCK;
		if (!read_target(lookup, address, reader->words, sizeof(reader->words))) {
			reader->count = 1;
			if (!read_target(lookup, address, reader->words, sizeof(uint32_t))) {
				reader->count = 0;
				return false;
			}
		}
	}
	*word = reader->words[position - reader->first];
	return true;
}

static bool lookup_gnu(struct lookup *lookup, const struct dynamic_tables *tables, psaddr_t *address)
{
	uint32_t header[4], hash = gnu_hash(lookup->name), index, step;
	struct chain_reader reader = { 0 };
	uintptr_t buckets;

	if (!read_target(lookup, tables->gnu_hash, header, sizeof(header)))
		return false;
	/* nbuckets, symoffset, bloom words, bloom shift */
	if (header[0] == 0 || header[0] > HASH_BUCKETS_MAX || header[2] > HASH_BUCKETS_MAX)
		return false;
	buckets = tables->gnu_hash + sizeof(header) + (uintptr_t)header[2] * sizeof(ElfW(Addr));
	reader.chain = buckets + (uintptr_t)header[0] * sizeof(uint32_t);
	if (!read_target(lookup, buckets + (uintptr_t)(hash % header[0]) * sizeof(uint32_t), &index, sizeof(index)))
		return false;
	if (index < header[1])
		return false;
	for (step = 0; step < CHAIN_STEPS_MAX && chain_step(lookup); step++, index++) {
		uint32_t chain_hash;

		if (!chain_word(lookup, &reader, index - header[1], &chain_hash))
			return false;
		if ((chain_hash | 1u) == (hash | 1u) && symbol_matches(lookup, tables, index, address))
			return true;
		if (chain_hash & 1u)
			return false;
	}
	return false;
}

static bool lookup_sysv(struct lookup *lookup, const struct dynamic_tables *tables, psaddr_t *address)
{
	uint32_t header[2], index, step;
	uintptr_t buckets, chain;

	if (!read_target(lookup, tables->sysv_hash, header, sizeof(header)))
		return false;
	/* nbucket, nchain */
	if (header[0] == 0 || header[0] > HASH_BUCKETS_MAX || header[1] > HASH_BUCKETS_MAX)
		return false;
	buckets = tables->sysv_hash + sizeof(header);
	chain = buckets + (uintptr_t)header[0] * sizeof(uint32_t);
	if (!read_target(lookup, buckets + (uintptr_t)(sysv_hash(lookup->name) % header[0]) * sizeof(uint32_t),
			 &index, sizeof(index)))
		return false;
	for (step = 0; index != STN_UNDEF && index < header[1] && step < CHAIN_STEPS_MAX && chain_step(lookup);
	     step++) {
		if (symbol_matches(lookup, tables, index, address))
			return true;
		if (!read_target(lookup, chain + (uintptr_t)index * sizeof(uint32_t), &index, sizeof(index)))
			return false;
	}
	return false;
}

static bool object_lookup(struct lookup *lookup, const struct mapped_object *object, psaddr_t *address)
{
	struct dynamic_tables tables;
	bool has_dynamic;
	bool usable = tables_read(lookup, object, &tables, &has_dynamic);

	if (has_dynamic)
		lookup->dynamic_objects++;
	if (!usable)
		return false;
	if (tables.gnu_hash)
		return lookup_gnu(lookup, &tables, address);
	return lookup_sysv(lookup, &tables, address);
}

/* The hinted objects first, then the others, OBJECTS_MAX in all. */
static ps_err_e objects_search(struct lookup *lookup, const struct object_list *list, psaddr_t *address)
{
	unsigned searched = 0;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < list->count; i++) {
			if (list->objects[i].hinted != (pass == 0))
				continue;
			if (searched++ == OBJECTS_MAX)
				lookup->exhausted = true;
			if (lookup->exhausted)
				return PS_ERR;
			tdps_set_status(lookup->ph, TDPS_OK);
			if (object_lookup(lookup, &list->objects[i], address))
				return PS_OK;
			if (lookup->exhausted || fatal_status(lookup->ph))
				return PS_ERR;
		}
	}
	if (list->truncated)
		lookup->exhausted = true;
	return lookup->exhausted ? PS_ERR : PS_NOSYM;
}

TDPS_EXPORT ps_err_e ps_pglobal_lookup(struct ps_prochandle *ph, const char *object_name, const char *sym_name,
				       psaddr_t *sym_addr)
{
	struct object_list list = { NULL, 0, 0, false };
	struct lookup lookup = { .ph = ph, .reads_left = READS_MAX, .steps_left = STEPS_MAX };
	enum tdps_status status, before;
	ps_err_e result;

	if (!ph)
		return PS_BADPID;
	if (!sym_name || !sym_addr || (lookup.name_length = strlen(sym_name)) == 0 ||
	    lookup.name_length > SYMBOL_NAME_MAX)
		return PS_ERR;
	lookup.name = sym_name;
	lookup.deadline_ns = monotonic_ns() + LOOKUP_TIME_NS;
	before = tdps_last_status(ph);
	status = objects_list(ph->pid, object_name, &list);
	if (status != TDPS_OK) {
		free(list.objects);
		tdps_set_status(ph, status);
		return PS_ERR;
	}
	result = objects_search(&lookup, &list, sym_addr);
	free(list.objects);
	if (lookup.exhausted) {
		tdps_set_status(ph, TDPS_LOOKUP_LIMIT);
		return PS_ERR;
	}
	if (result == PS_ERR)
		return result;
	/* Skipped objects (unmapped meanwhile, say) are not the caller's
	 * failure: keep the status the handle had. */
	tdps_set_status(ph, before);
	/* A program with no dynamic objects besides perhaps itself (static,
	 * or static-pie) cannot have the shim preloaded: say so. */
	if (result == PS_NOSYM && lookup.dynamic_objects < 2)
		tdps_set_status(ph, TDPS_NOT_DYNAMIC);
	return result;
}
