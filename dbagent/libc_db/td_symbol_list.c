/* SPDX-License-Identifier: MIT */
#include "thread_db_private.h"

/* Lets a debugger preload the symbols libc_db will ask it for. */
static const char *symbol_list[] = {
#define TARGET_SYMBOL(id, object, name) [TDDB_SYMBOL_##id] = name,
#include "target_symbols.def"
#undef TARGET_SYMBOL
	[TDDB_SYMBOL_COUNT] = NULL,
};

TDDB_EXPORT const char **td_symbol_list(void)
{
	return symbol_list;
}
