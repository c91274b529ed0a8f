/* SPDX-License-Identifier: Apache-2.0 */
/* The tiny language model's files (tools/export_pytorch.py --kind decoder), linked into the
 * program's read-only data (flash on a board) by tiny_lm_blobs.cpp: 16-byte aligned, as
 * NAME_set_weights_blob() needs. Each is there unless its TINY_LM_NO_* macro was defined. */
#ifndef TINY_LM_BLOBS_H
#define TINY_LM_BLOBS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

extern const unsigned char tiny_lm_f32_blob[]; /* fp32 weights */
extern const uint32_t tiny_lm_f32_blob_bytes;
extern const unsigned char tiny_lm_q8_blob[]; /* int8 weights + fp32 scales */
extern const uint32_t tiny_lm_q8_blob_bytes;

#ifdef __cplusplus
}
#endif

#endif
