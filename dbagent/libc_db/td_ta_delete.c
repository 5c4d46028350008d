/* SPDX-License-Identifier: MIT */
#include "thread_db_private.h"

/* The target is not touched: deleting an agent leaves gathering as it is. */
TDDB_EXPORT td_err_e td_ta_delete(td_thragent_t *ta)
{
	return tddb_registry_remove(ta);
}
