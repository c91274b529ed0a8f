// SPDX-License-Identifier: Apache-2.0
// The C image's layers (c_api_main.c): one MICROATTN_C_* line each, as a C project's one C++
// file would hold them. Their headers (cm_mha.h, cm_kv.h, cm_core.h) are generated at build
// time by tools/microattn_c.py with this image's compiler and flags (c_api.cmake).
#include "cm_core.h"
#include "cm_kv.h"
#include "cm_mha.h"
#include "microattn/c_api.hpp"

MICROATTN_C_LAYER(cm_mha, microattn::Config<24, 32, 4, 2, 8, microattn::Bias::kYes>);
MICROATTN_C_KV_LAYER_CHUNKED(cm_kv, 5, microattn::Config<24, 32, 4, 2, 8, microattn::Rope::kYes>);
MICROATTN_C_CORE(cm_core, microattn::Config<24, 32, 4, 2, 8>);
