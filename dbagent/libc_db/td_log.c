/* SPDX-License-Identifier: MIT */
#include "thread_db_private.h"

/* A historical entry point, kept for link compatibility. */
TDDB_EXPORT td_err_e td_log(void)
{
	return TD_OK;
}
