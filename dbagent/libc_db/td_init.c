/* SPDX-License-Identifier: MIT */
#include "thread_db_private.h"

/* Nothing to set up: the registry is statically initialized. */
TDDB_EXPORT td_err_e td_init(void)
{
	return TD_OK;
}
