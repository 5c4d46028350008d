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
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <proc_service.h>

#include "ps_live_private.h"

#define OBJECTS_MAX 65536u
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
	bool hinted;       /* its file name starts with the caller's object name */
	bool vdso;
};

struct object_list {
	struct mapped_object *objects;
	size_t count, capacity;
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

static bool read_target(struct ps_prochandle *ph, uintptr_t address, void *buffer, size_t size)
{
	return tdps_memory_read(ph, address, buffer, size) == PS_OK;
}

static bool name_hinted(const char *path, const char *hint)
{
	const char *base = strrchr(path, '/');

	if (!hint || !*hint)
		return false;
	base = base ? base + 1 : path;
	return strncmp(base, hint, strlen(hint)) == 0;
}

static int objects_add(struct object_list *list, uintptr_t start, bool hinted, bool vdso)
{
	if (list->count == list->capacity) {
		size_t capacity = list->capacity ? list->capacity * 2 : 64;
		struct mapped_object *objects;

		if (capacity > OBJECTS_MAX)
			return 0; /* enough: the rest are not searched */
		objects = realloc(list->objects, capacity * sizeof(*objects));
		if (!objects)
			return -1;
		list->objects = objects;
		list->capacity = capacity;
	}
	list->objects[list->count++] = (struct mapped_object){ start, hinted, vdso };
	return 0;
}

/* One candidate per mapping of file offset 0 that is readable and backed
 * by a file (or is the vDSO): only those can start with an ELF header. */
static enum tdps_status objects_list(pid_t pid, const char *hint, struct object_list *list)
{
	char path[64], *line = NULL;
	size_t line_size = 0;
	enum tdps_status status = TDPS_OK;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	if (!maps)
		return tdps_status_from_errno(pid, errno);
	while (getline(&line, &line_size, maps) > 0) {
		unsigned long start, end, offset;
		char perms[8];
		int name_at = 0;
		char *name;
		bool vdso;

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &start, &end, perms, &offset, &name_at) < 4 ||
		    name_at == 0)
			continue;
		name = line + name_at;
		name[strcspn(name, "\n")] = '\0';
		vdso = strcmp(name, "[vdso]") == 0;
		if (offset != 0 || perms[0] != 'r' || (name[0] != '/' && !vdso))
			continue;
		if (objects_add(list, start, name_hinted(name, hint), vdso) != 0) {
			status = TDPS_NO_MEMORY;
			break;
		}
	}
	free(line);
	fclose(maps);
	return status;
}

static bool header_read(struct ps_prochandle *ph, uintptr_t start, ElfW(Ehdr) *header)
{
	if (!read_target(ph, start, header, sizeof(*header)))
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
static bool tables_read(struct ps_prochandle *ph, const struct mapped_object *object, struct dynamic_tables *tables,
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
	if (!header_read(ph, object->start, &header))
		return false;
	if (header.e_phoff > UINTPTR_MAX - object->start ||
	    !read_target(ph, object->start + header.e_phoff, phdrs, header.e_phnum * sizeof(ElfW(Phdr))))
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
	if (!read_target(ph, tables->bias + dynamic_vaddr, dynamic, dynamic_count * sizeof(ElfW(Dyn))))
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

/* Symbol `index` is a definition named `name`: its address in *address. */
static bool symbol_matches(struct ps_prochandle *ph, const struct dynamic_tables *tables, uint32_t index,
			   const char *name, size_t name_length, psaddr_t *address)
{
	char candidate[SYMBOL_NAME_MAX + 1];
	ElfW(Sym) symbol;
	unsigned char type;

	if (!read_target(ph, tables->symtab + (uintptr_t)index * sizeof(symbol), &symbol, sizeof(symbol)))
		return false;
	type = ELF64_ST_TYPE(symbol.st_info); /* the same for both classes */
	if (symbol.st_shndx == SHN_UNDEF || type == STT_TLS || symbol.st_name == 0)
		return false;
	if (tables->strsz && (symbol.st_name >= tables->strsz || name_length + 1 > tables->strsz - symbol.st_name))
		return false;
	if (!read_target(ph, tables->strtab + symbol.st_name, candidate, name_length + 1))
		return false;
	if (memcmp(candidate, name, name_length + 1) != 0)
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

static bool lookup_gnu(struct ps_prochandle *ph, const struct dynamic_tables *tables, const char *name,
		       size_t name_length, psaddr_t *address)
{
	uint32_t header[4], hash = gnu_hash(name), index, step;
	uintptr_t buckets, chain;

	if (!read_target(ph, tables->gnu_hash, header, sizeof(header)))
		return false;
	/* nbuckets, symoffset, bloom words, bloom shift */
	if (header[0] == 0 || header[0] > HASH_BUCKETS_MAX || header[2] > HASH_BUCKETS_MAX)
		return false;
	buckets = tables->gnu_hash + sizeof(header) + (uintptr_t)header[2] * sizeof(ElfW(Addr));
	chain = buckets + (uintptr_t)header[0] * sizeof(uint32_t);
	if (!read_target(ph, buckets + (uintptr_t)(hash % header[0]) * sizeof(uint32_t), &index, sizeof(index)))
		return false;
	if (index < header[1])
		return false;
	for (step = 0; step < CHAIN_STEPS_MAX; step++, index++) {
		uint32_t chain_hash;

		if (!read_target(ph, chain + (uintptr_t)(index - header[1]) * sizeof(uint32_t), &chain_hash,
				 sizeof(chain_hash)))
			return false;
		if ((chain_hash | 1u) == (hash | 1u) && symbol_matches(ph, tables, index, name, name_length, address))
			return true;
		if (chain_hash & 1u)
			return false;
	}
	return false;
}

static bool lookup_sysv(struct ps_prochandle *ph, const struct dynamic_tables *tables, const char *name,
			size_t name_length, psaddr_t *address)
{
	uint32_t header[2], index, step;
	uintptr_t buckets, chain;

	if (!read_target(ph, tables->sysv_hash, header, sizeof(header)))
		return false;
	/* nbucket, nchain */
	if (header[0] == 0 || header[0] > HASH_BUCKETS_MAX || header[1] > HASH_BUCKETS_MAX)
		return false;
	buckets = tables->sysv_hash + sizeof(header);
	chain = buckets + (uintptr_t)header[0] * sizeof(uint32_t);
	if (!read_target(ph, buckets + (uintptr_t)(sysv_hash(name) % header[0]) * sizeof(uint32_t), &index,
			 sizeof(index)))
		return false;
	for (step = 0; index != STN_UNDEF && index < header[1] && step < CHAIN_STEPS_MAX; step++) {
		if (symbol_matches(ph, tables, index, name, name_length, address))
			return true;
		if (!read_target(ph, chain + (uintptr_t)index * sizeof(uint32_t), &index, sizeof(index)))
			return false;
	}
	return false;
}

static bool object_lookup(struct ps_prochandle *ph, const struct mapped_object *object, const char *name,
			  size_t name_length, psaddr_t *address, unsigned *dynamic_objects)
{
	struct dynamic_tables tables;
	bool has_dynamic;
	bool usable = tables_read(ph, object, &tables, &has_dynamic);

	if (has_dynamic)
		++*dynamic_objects;
	if (!usable)
		return false;
	if (tables.gnu_hash)
		return lookup_gnu(ph, &tables, name, name_length, address);
	return lookup_sysv(ph, &tables, name, name_length, address);
}

TDPS_EXPORT ps_err_e ps_pglobal_lookup(struct ps_prochandle *ph, const char *object_name, const char *sym_name,
				       psaddr_t *sym_addr)
{
	struct object_list list = { NULL, 0, 0 };
	enum tdps_status status, before;
	unsigned dynamic_objects = 0;
	size_t name_length, i;
	ps_err_e result = PS_NOSYM;
	int pass;

	if (!ph)
		return PS_BADPID;
	if (!sym_name || !sym_addr || (name_length = strlen(sym_name)) == 0 || name_length > SYMBOL_NAME_MAX)
		return PS_ERR;
	before = tdps_last_status(ph);
	status = objects_list(ph->pid, object_name, &list);
	if (status != TDPS_OK) {
		free(list.objects);
		tdps_set_status(ph, status);
		return PS_ERR;
	}
	/* The hinted objects first, then the others. */
	for (pass = 0; pass < 2 && result == PS_NOSYM; pass++) {
		for (i = 0; i < list.count; i++) {
			if (list.objects[i].hinted != (pass == 0))
				continue;
			tdps_set_status(ph, TDPS_OK);
			if (object_lookup(ph, &list.objects[i], sym_name, name_length, sym_addr, &dynamic_objects)) {
				result = PS_OK;
				break;
			}
			if (fatal_status(ph)) {
				result = PS_ERR;
				break;
			}
		}
	}
	free(list.objects);
	if (result == PS_ERR)
		return result;
	/* Skipped objects (unmapped meanwhile, say) are not the caller's
	 * failure: keep the status the handle had. */
	tdps_set_status(ph, before);
	/* A program with no dynamic objects besides perhaps itself (static,
	 * or static-pie) cannot have the shim preloaded: say so. */
	if (result == PS_NOSYM && dynamic_objects < 2)
		tdps_set_status(ph, TDPS_NOT_DYNAMIC);
	return result;
}
