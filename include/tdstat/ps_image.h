/* SPDX-License-Identifier: MIT */
/*
 * An optional proc_service routine, for providers that serve a frozen
 * image of a process (a core file) rather than a live one.
 *
 * libc_db reads a live target's clocks itself: "now" is the reader's
 * CLOCK_MONOTONIC and the process CPU time is the kernel's CPU clock of
 * ps_getpid().  Neither exists for a core.  A provider over a core defines
 * ps_tdstat_image(); libc_db refers to it weakly, so a debugger that
 * supplies only the routines of <proc_service.h> links and works as
 * before.  When the routine exists and answers PS_OK for a handle:
 *
 *   - the window ends at the moment of the image, which libc_db takes as
 *     the latest moment the region's records prove (the largest of the
 *     window's start, the records' state-change, wake-up and pending
 *     stamps, and the exit stamp): everything in the window happened, and
 *     no thread is counted in a state past its last proven moment;
 *   - the process CPU time is cpu_ns when flags has PS_TDSTAT_IMAGE_CPU,
 *     else none is known and the snapshot's cpu_ns and running_ns are 0;
 *   - nothing is ever written (providers refuse ps_pdwrite anyway).
 *
 * Any other answer (PS_NOSYM, say, for a live handle when several
 * providers are chained) means a live process.
 */
#ifndef TDSTAT_PS_IMAGE_H
#define TDSTAT_PS_IMAGE_H

#include <stdint.h>
#include <proc_service.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cpu_ns holds the process's CPU time at the moment of the image. */
#define PS_TDSTAT_IMAGE_CPU 1u

/* The caller sets size to sizeof(struct ps_tdstat_image); the provider
 * fills at most that many bytes, so the struct can grow. */
struct ps_tdstat_image {
	uint32_t size;
	uint32_t flags;   /* PS_TDSTAT_IMAGE_* */
	uint64_t cpu_ns;  /* user + system time of the whole process */
};

extern ps_err_e ps_tdstat_image(struct ps_prochandle *__ph, struct ps_tdstat_image *__image);

#ifdef __cplusplus
}
#endif

#endif /* TDSTAT_PS_IMAGE_H */
