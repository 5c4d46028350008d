/* SPDX-License-Identifier: MIT */
/*
 * A core file or a live process: the provider's optional
 * ps_tdstat_image() says (include/tdstat/ps_image.h).  The reference is
 * weak, so a debugger supplying only <proc_service.h>'s routines links
 * unchanged and is taken for a live process.
 */
#include <string.h>

#include <tdstat/ps_image.h>

#include "thread_db_private.h"

#pragma weak ps_tdstat_image

void tddb_image_query(const struct td_thragent *agent, struct tddb_image *image)
{
	struct ps_tdstat_image answer = { .size = sizeof(answer) };

	memset(image, 0, sizeof(*image));
	if (!ps_tdstat_image || ps_tdstat_image(agent->ph, &answer) != PS_OK)
		return;
	image->frozen = true;
	/* A provider of an older, smaller struct filled less: no CPU. */
	if (answer.size >= offsetof(struct ps_tdstat_image, cpu_ns) + sizeof(answer.cpu_ns) &&
	    (answer.flags & PS_TDSTAT_IMAGE_CPU)) {
		image->cpu_known = true;
		image->cpu_ns = answer.cpu_ns;
	}
}
