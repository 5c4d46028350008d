/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "thread_db_private.h"

static const char *const symbol_objects[] = {
#define TARGET_SYMBOL(id, object, name) [TDDB_SYMBOL_##id] = object,
#include "target_symbols.def"
#undef TARGET_SYMBOL
};

static const char *const symbol_names[] = {
#define TARGET_SYMBOL(id, object, name) [TDDB_SYMBOL_##id] = name,
#include "target_symbols.def"
#undef TARGET_SYMBOL
};

TDDB_EXPORT td_err_e td_ta_new(struct ps_prochandle *ph, td_thragent_t **ta)
{
	struct tdstat_region_header header;
	struct tddb_geometry geometry;
	struct td_thragent *agent;
	psaddr_t region;
	ps_err_e status;
	td_err_e err;

	if (!ph)
		return TD_BADPH;
	if (!ta)
		return TD_ERR;

	status = ps_pglobal_lookup(ph, symbol_objects[TDDB_SYMBOL_REGION], symbol_names[TDDB_SYMBOL_REGION],
				   &region);
	if (status == PS_NOSYM)
		return TD_NOLIBTHREAD;
	/* The shim's region is cache-line aligned; an address that is not
	 * even 8-aligned is not it, and its 64-bit fields could not be
	 * written whole. */
	if (status != PS_OK || !region || ((uintptr_t)region & 7u) != 0)
		return TD_DBERR;
	if (ps_pdread(ph, region, &header, sizeof(header)) != PS_OK)
		return TD_DBERR;
	/* A second copy of the shim that stood down points at the region in
	 * use: one hop, to a region that must be a real one. */
	if (header.magic == TDSTAT_REGION_MAGIC_ELSEWHERE) {
		psaddr_t elsewhere = (psaddr_t)(uintptr_t)header.elsewhere;

		if (!elsewhere || ((uintptr_t)elsewhere & 7u) != 0 || elsewhere == region)
			return TD_DBERR;
		region = elsewhere;
		if (ps_pdread(ph, region, &header, sizeof(header)) != PS_OK)
			return TD_DBERR;
		if (header.magic == TDSTAT_REGION_MAGIC_ELSEWHERE)
			return TD_DBERR;
	}
	err = tddb_geometry_from_header(&header, &geometry);
	if (err != TD_OK)
		return err;

	agent = calloc(1, sizeof(*agent));
	if (!agent)
		return TD_MALLOC;
	if (pthread_mutex_init(&agent->control_lock, NULL) != 0) {
		free(agent);
		return TD_MALLOC;
	}
	if (tddb_cache_init(agent) != TD_OK) {
		pthread_mutex_destroy(&agent->control_lock);
		free(agent);
		return TD_MALLOC;
	}
	agent->ph = ph;
	agent->task_fd = -1;
	agent->region = region;
	agent->geometry = geometry;
	memcpy(agent->identity, &header, sizeof(agent->identity));
	tddb_registry_add(agent);
	*ta = agent;
	return TD_OK;
}
