// SPDX-License-Identifier: Apache-2.0
// The real_model test's data (tests/real_model_data.cpp): stories260K's model file, written by
// tools/export_pytorch.py --llama2c, and its float64 llama2.c reference
// (tests/python/llama2c_reference.py: "RMR1", steps N, vocab V, tokens[N + 1], logits[N][V],
// margin; little-endian).
#pragma once

extern "C" {
extern const unsigned char real_model_blob[];
extern const unsigned int real_model_blob_bytes;
extern const unsigned char real_model_ref[];
extern const unsigned int real_model_ref_bytes;
/// The int8 model file (export_pytorch.py --quant int8): with REAL_MODEL_BENCH instead of
/// the reference (the Cortex-M bench's STD1_qd8), and in hosted builds (REAL_MODEL_FORMATS).
extern const unsigned char real_model_q8_blob[];
extern const unsigned int real_model_q8_blob_bytes;
/// The fp16, bf16 and group-wise int8 model files (--quant fp16 / bf16 / int8-g32 / int8-g64 /
/// int8-g128): hosted builds (REAL_MODEL_FORMATS).
extern const unsigned char real_model_f16_blob[];
extern const unsigned int real_model_f16_blob_bytes;
extern const unsigned char real_model_bf16_blob[];
extern const unsigned int real_model_bf16_blob_bytes;
extern const unsigned char real_model_q8g32_blob[];
extern const unsigned int real_model_q8g32_blob_bytes;
extern const unsigned char real_model_q8g64_blob[];
extern const unsigned int real_model_q8g64_blob_bytes;
extern const unsigned char real_model_q8g128_blob[];
extern const unsigned int real_model_q8g128_blob_bytes;
}
