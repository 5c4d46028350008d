/* SPDX-License-Identifier: MIT */
/*
 * ps_pglobal_lookup over a core: the symbol tables (.symtab when a file
 * has one, else .dynsym) of the files the core's modules were loaded
 * from, at their load addresses.  The object name is only a hint: the
 * modules whose file name starts with it are searched first.  Bounded: at
 * most TDCORE_MODULES_MAX modules and TDCORE_SYMBOLS_MAX symbols in all.
 */
#include <gelf.h>
#include <string.h>

#include "core_private.h"

struct module_list {
	Dwfl_Module *modules[TDCORE_MODULES_MAX];
	size_t count;
	bool truncated;
};

static int module_collect(Dwfl_Module *module, void **userdata, const char *name, Dwarf_Addr base, void *arg)
{
	struct module_list *list = arg;

	if (list->count == TDCORE_MODULES_MAX) {
		list->truncated = true;
		return DWARF_CB_ABORT;
	}
	list->modules[list->count++] = module;
	return DWARF_CB_OK;
}

static bool name_hinted(const char *path, const char *hint)
{
	const char *base;

	if (!path || !hint || !*hint)
		return false;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strncmp(base, hint, strlen(hint)) == 0;
}

enum search { FOUND, NOT_HERE, NO_FILE, EXHAUSTED };

static enum search module_search(Dwfl_Module *module, const char *name, psaddr_t *address, unsigned long *budget)
{
	int count = dwfl_module_getsymtab(module);

	if (count < 0)
		return NO_FILE;
	for (int i = 1; i < count; i++) {
		GElf_Sym symbol;
		GElf_Addr value;
		const char *candidate;

		if (*budget == 0)
			return EXHAUSTED;
		--*budget;
		candidate = dwfl_module_getsym_info(module, i, &symbol, &value, NULL, NULL, NULL);
		if (!candidate || strcmp(candidate, name) != 0)
			continue;
		if (symbol.st_shndx == SHN_UNDEF || GELF_ST_TYPE(symbol.st_info) == STT_TLS ||
		    GELF_ST_BIND(symbol.st_info) == STB_LOCAL)
			continue;
		*address = (psaddr_t)(uintptr_t)value;
		return FOUND;
	}
	return NOT_HERE;
}

ps_err_e tdcore_symbol_lookup(struct ps_prochandle *ph, const char *object_hint, const char *name, psaddr_t *address)
{
	static __thread struct module_list list; /* 32 KiB: not on the stack */
	unsigned long budget = TDCORE_SYMBOLS_MAX;
	bool files_missing = false;
	ps_err_e result = PS_NOSYM;

	pthread_mutex_lock(&ph->dwfl_lock);
	list.count = 0;
	list.truncated = false;
	dwfl_getmodules(ph->dwfl, module_collect, &list, 0);
	for (int pass = 0; pass < 2 && result == PS_NOSYM; pass++) {
		for (size_t i = 0; i < list.count && result == PS_NOSYM; i++) {
			const char *module_name = dwfl_module_info(list.modules[i], NULL, NULL, NULL, NULL, NULL, NULL, NULL);

			if (name_hinted(module_name, object_hint) != (pass == 0))
				continue;
			switch (module_search(list.modules[i], name, address, &budget)) {
			case FOUND:
				result = PS_OK;
				break;
			case NO_FILE:
				files_missing = true;
				break;
			case EXHAUSTED:
				result = PS_ERR;
				break;
			case NOT_HERE:
				break;
			}
		}
	}
	pthread_mutex_unlock(&ph->dwfl_lock);
	if (result == PS_ERR || (result == PS_NOSYM && list.truncated)) {
		tdcore_set_status(ph, TDCORE_LOOKUP_LIMIT);
		return PS_ERR;
	}
	/* Not found, but some files were not there to search: say so (the
	 * answer stays PS_NOSYM, which is what it is as far as we know).
	 * Not found in a core whose NT_FILE names the shim: the process had
	 * loaded it, and what libdwfl made of the core's account of its
	 * modules is damaged (one word of NT_AUXV, the page size, was
	 * enough); "the shim was not loaded" would be false. */
	if (result == PS_NOSYM && files_missing)
		tdcore_set_status(ph, TDCORE_FILES_MISSING);
	else if (result == PS_NOSYM && ph->maps_shim)
		tdcore_set_status(ph, TDCORE_DAMAGED);
	return result;
}
