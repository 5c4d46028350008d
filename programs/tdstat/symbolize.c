/* SPDX-License-Identifier: MIT */
/*
 * Names for addresses in a live target: the symbol a waited-on object
 * lives in, the function a call site belongs to.  elfutils' libdwfl does
 * the work: it maps the target's modules from /proc/PID/maps and reads
 * each file's symbol tables, .symtab included, so a `static` mutex of a
 * program that is not stripped has its name (and separate debug files
 * where the system has them).  Addresses in no module (the heap, thread
 * stacks) get no name: the caller prints them as addresses; an address in
 * a module but in no symbol (a stripped library's static function) is
 * named by its file and offset, which addr2line and a debug file resolve.
 * C++ names are demangled, as gdb and perf show them, by the C++ runtime's
 * own __cxa_demangle (libstdc++, loaded when a mangled name first shows:
 * a C program's names never need it; without it the mangled name stays).
 */
#include "tdstat.h"

#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A module loaded after the last report (dlopen) is found by reporting
 * the modules again, at most this often. */
#define REPORT_AGAIN_NS UINT64_C(1000000000)

/* Lookups repeat every line (a thousand threads on one condvar, from
 * one function), and libdwfl scans a module's symbols for each: answers
 * are kept in a direct-mapped cache, emptied when the modules are
 * reported again (a library unloaded and another loaded in its place). */
#define CACHE_SLOTS 4096u

enum lookup { LOOKUP_OBJECT = 1, LOOKUP_CALLER = 2 };

struct cached {
	uint64_t address;
	uint8_t lookup;    /* enum lookup; 0: empty */
	bool found;
	uint64_t function; /* LOOKUP_CALLER */
	char name[TDSTAT_NAME_SIZE];
};

struct tdstat_symbolizer {
	pid_t pid;
	/* Over a core (tdstat core): its modules never change. */
	int core_fd;
	Elf *core;
	char *executable;
	Dwfl *dwfl;
	uint64_t reported_ns;
	struct cached cache[CACHE_SLOTS];
};

static struct cached *cache_slot(struct tdstat_symbolizer *symbolizer, uint64_t address, enum lookup lookup)
{
	uint64_t hash = (address ^ (address >> 17) ^ lookup) * UINT64_C(0x9e3779b97f4a7c15);

	return &symbolizer->cache[hash >> 52 & (CACHE_SLOTS - 1)];
}

/* The process whose modules are being found (the command names one
 * process at a time). */
static pid_t finding_pid;

/* A module's file as the target sees it: /proc/PID/maps gives paths in
 * the target's mount namespace and root (a container's), which
 * /proc/PID/root resolves; the file at the same path in tdstat's view
 * may be another one, or none. */
static int find_elf(Dwfl_Module *module, void **userdata, const char *name, Dwarf_Addr base, char **file_name,
		    Elf **elf)
{
	char path[PATH_MAX];

	if (name[0] == '/' && finding_pid > 0 &&
	    (size_t)snprintf(path, sizeof(path), "/proc/%d/root%s", (int)finding_pid, name) < sizeof(path)) {
		int fd = dwfl_linux_proc_find_elf(module, userdata, path, base, file_name, elf);

		if (fd >= 0 || *elf)
			return fd;
	}
	return dwfl_linux_proc_find_elf(module, userdata, name, base, file_name, elf);
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

/* A core names its files (NT_FILE); they are found by build ID. */
static const Dwfl_Callbacks core_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

static uint64_t monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static bool report_modules(struct tdstat_symbolizer *symbolizer)
{
	bool ok;

	finding_pid = symbolizer->pid;
	dwfl_report_begin(symbolizer->dwfl);
	if (symbolizer->core)
		ok = dwfl_core_file_report(symbolizer->dwfl, symbolizer->core, symbolizer->executable) >= 0;
	else
		ok = dwfl_linux_proc_report(symbolizer->dwfl, symbolizer->pid) == 0;
	dwfl_report_end(symbolizer->dwfl, NULL, NULL);
	symbolizer->reported_ns = monotonic_ns();
	memset(symbolizer->cache, 0, sizeof(symbolizer->cache));
	return ok;
}

struct tdstat_symbolizer *tdstat_symbolizer_open(pid_t pid)
{
	struct tdstat_symbolizer *symbolizer = calloc(1, sizeof(*symbolizer));

	if (!symbolizer)
		return NULL;
	symbolizer->pid = pid;
	symbolizer->core_fd = -1;
	symbolizer->dwfl = dwfl_begin(&callbacks);
	if (!symbolizer->dwfl || !report_modules(symbolizer)) {
		tdstat_symbolizer_close(symbolizer);
		return NULL;
	}
	return symbolizer;
}

struct tdstat_symbolizer *tdstat_symbolizer_open_core(const char *core_path, const char *executable)
{
	struct tdstat_symbolizer *symbolizer = calloc(1, sizeof(*symbolizer));
	GElf_Ehdr header;

	if (!symbolizer)
		return NULL;
	elf_version(EV_CURRENT);
	symbolizer->core_fd = open(core_path, O_RDONLY | O_CLOEXEC);
	if (symbolizer->core_fd >= 0)
		symbolizer->core = elf_begin(symbolizer->core_fd, ELF_C_READ_MMAP, NULL);
	if (executable)
		symbolizer->executable = strdup(executable);
	if (symbolizer->core && gelf_getehdr(symbolizer->core, &header) && header.e_type == ET_CORE &&
	    (!executable || symbolizer->executable))
		symbolizer->dwfl = dwfl_begin(&core_callbacks);
	if (!symbolizer->dwfl || !report_modules(symbolizer)) {
		tdstat_symbolizer_close(symbolizer);
		return NULL;
	}
	return symbolizer;
}

void tdstat_symbolizer_close(struct tdstat_symbolizer *symbolizer)
{
	if (!symbolizer)
		return;
	if (symbolizer->dwfl)
		dwfl_end(symbolizer->dwfl);
	if (symbolizer->core)
		elf_end(symbolizer->core);
	if (symbolizer->core_fd >= 0)
		close(symbolizer->core_fd);
	free(symbolizer->executable);
	free(symbolizer);
}

void tdstat_symbolizer_renew(struct tdstat_symbolizer *symbolizer)
{
	/* An exec keeps the pid and may, without address randomization,
	 * put the new image's objects inside the old image's modules: the
	 * names must come from the new ones. */
	if (symbolizer)
		report_modules(symbolizer);
}

/* The module whose extent holds `address`.  libdwfl's look-up answers
 * with the highest module for any address above it (a main thread's
 * stack, a mapping of anonymous memory): "ld-linux-x86-64.so.2+0xec8ff3bfe0"
 * named a condvar on main's stack (helper-71's programs). */
static Dwfl_Module *module_holding(struct tdstat_symbolizer *symbolizer, uint64_t address)
{
	Dwfl_Module *module = dwfl_addrmodule(symbolizer->dwfl, (Dwarf_Addr)address);
	Dwarf_Addr low, high;

	if (module && dwfl_module_info(module, NULL, &low, &high, NULL, NULL, NULL, NULL) &&
	    (address < (uint64_t)low || address >= (uint64_t)high))
		return NULL;
	return module;
}

static Dwfl_Module *module_of(struct tdstat_symbolizer *symbolizer, uint64_t address)
{
	Dwfl_Module *module = module_holding(symbolizer, address);

	if (!module && !symbolizer->core && monotonic_ns() - symbolizer->reported_ns > REPORT_AGAIN_NS &&
	    report_modules(symbolizer))
		module = module_holding(symbolizer, address);
	return module;
}

/* The symbol whose extent holds `address` (or, for a symbol of unknown
 * size, the nearest one below it), and the offset into it; NULL, with
 * *module set when the address lies in one, when no symbol holds it (a
 * stripped library's local function). */
static const char *symbol_at(struct tdstat_symbolizer *symbolizer, uint64_t address, GElf_Off *offset,
			     GElf_Sym *symbol, Dwfl_Module **module)
{
	const char *name;

	*module = NULL;
	if (!symbolizer || address == 0)
		return NULL;
	*module = module_of(symbolizer, address);
	if (!*module)
		return NULL;
	name = dwfl_module_addrinfo(*module, (GElf_Addr)address, offset, symbol, NULL, NULL, NULL);
	if (!name || !*name || (symbol->st_size && *offset >= symbol->st_size))
		return NULL;
	return name;
}

/* "liblzma.so.5+0x1b5ad": where in its file an address without a symbol
 * lies. */
typedef char *cxa_demangle_fn(const char *mangled, char *buffer, size_t *length, int *status);
static cxa_demangle_fn *cxa_demangle;
static pthread_once_t cxa_demangle_once = PTHREAD_ONCE_INIT;

static void load_cxa_demangle(void)
{
	void *runtime = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

	if (runtime)
		cxa_demangle = (cxa_demangle_fn *)dlsym(runtime, "__cxa_demangle");
}

/* `name` as written, or demangled when it is a C++ name ("_Z..."). */
static void copy_name(const char *name, char *out, size_t size)
{
	if (name[0] == '_' && name[1] == 'Z') {
		pthread_once(&cxa_demangle_once, load_cxa_demangle);
		int status = -1;
		char *plain = cxa_demangle ? cxa_demangle(name, NULL, NULL, &status) : NULL;

		if (plain && status == 0) {
			snprintf(out, size, "%s", plain);
			free(plain);
			return;
		}
		free(plain);
	}
	snprintf(out, size, "%s", name);
}

static bool module_offset(Dwfl_Module *module, uint64_t address, char *name, size_t size)
{
	Dwarf_Addr start;
	const char *path = module ? dwfl_module_info(module, NULL, &start, NULL, NULL, NULL, NULL, NULL) : NULL;
	const char *base;

	if (!path)
		return false;
	base = strrchr(path, '/');
	snprintf(name, size, "%s+0x%" PRIx64, base ? base + 1 : path, address - (uint64_t)start);
	return true;
}

static bool lookup_object(struct tdstat_symbolizer *symbolizer, uint64_t address, char *name, size_t size)
{
	Dwfl_Module *module;
	GElf_Off offset;
	GElf_Sym symbol;
	const char *found = symbol_at(symbolizer, address, &offset, &symbol, &module);

	if (!found)
		return module_offset(module, address, name, size);
	/* A lock inside a static struct: where in it. */
	copy_name(found, name, size);
	if (offset) {
		size_t used = strlen(name);

		if (used + 1 < size)
			snprintf(name + used, size - used, "+%" PRIu64, (uint64_t)offset);
	}
	return true;
}

static bool lookup_caller(struct tdstat_symbolizer *symbolizer, uint64_t return_address, char *name, size_t size,
			  uint64_t *function)
{
	Dwfl_Module *module;
	GElf_Off offset;
	GElf_Sym symbol;
	const char *found;

	/* The call is the instruction before the return address: a call
	 * that ends a function returns past its last byte. */
	if (return_address == 0)
		return false;
	found = symbol_at(symbolizer, return_address - 1, &offset, &symbol, &module);
	if (!found) {
		/* Each call site is then its own row. */
		*function = return_address;
		return module_offset(module, return_address, name, size);
	}
	copy_name(found, name, size);
	*function = return_address - 1 - offset;
	return true;
}

/* A lookup through the cache; a miss that reports the modules again
 * empties the cache, so the answer is stored after the lookup. */
static bool cached_lookup(struct tdstat_symbolizer *symbolizer, enum lookup lookup, uint64_t address, char *name,
			  size_t size, uint64_t *function)
{
	struct cached *slot, answer = { .address = address, .lookup = (uint8_t)lookup };

	if (!symbolizer)
		return false;
	slot = cache_slot(symbolizer, address, lookup);
	if (slot->lookup != lookup || slot->address != address) {
		answer.found = lookup == LOOKUP_OBJECT
				       ? lookup_object(symbolizer, address, answer.name, sizeof(answer.name))
				       : lookup_caller(symbolizer, address, answer.name, sizeof(answer.name),
						       &answer.function);
		slot = cache_slot(symbolizer, address, lookup);
		*slot = answer;
	}
	if (slot->found) {
		snprintf(name, size, "%s", slot->name);
		if (function)
			*function = slot->function;
	}
	return slot->found;
}

bool tdstat_symbolize_object(struct tdstat_symbolizer *symbolizer, uint64_t address, char *name, size_t size)
{
	return cached_lookup(symbolizer, LOOKUP_OBJECT, address, name, size, NULL);
}

bool tdstat_symbolize_caller(struct tdstat_symbolizer *symbolizer, uint64_t return_address, char *name, size_t size,
			     uint64_t *function)
{
	return cached_lookup(symbolizer, LOOKUP_CALLER, return_address, name, size, function);
}
