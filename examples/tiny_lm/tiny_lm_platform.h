/* SPDX-License-Identifier: Apache-2.0 */
/* What tiny_lm.c needs from the machine it runs on: host (tiny_lm_host.cpp) or a Cortex-M
 * board (ports/cortex-m/tiny_lm_port.cpp). */
#ifndef TINY_LM_PLATFORM_H
#define TINY_LM_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

#include "microattn/microattn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes text (UTF-8) to the console. */
void tlm_write(const char* s);
/* A counter for the work of a call and its unit: nanoseconds of wall time on a host; on a
 * board QEMU's -icount instructions (or the cycle counter on hardware). The unit's name,
 * plural. An integer: the boards' FPUs have no double (ctest cortex_m.<board>.tiny_lm_no_double).
 */
uint64_t tlm_counter(void);
const char* tlm_counter_unit(void);
/* An executor with `threads` workers (NULL: only the calling thread; threads <= 1 or none
 * available). */
const microattn_executor* tlm_executor(unsigned threads);
/* The platform's name for the report (e.g. "host, avx2", "mps2-an386 (cortex-m4)"). */
const char* tlm_platform(void);

#ifdef __cplusplus
}
#endif

#endif
