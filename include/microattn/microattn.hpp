// SPDX-License-Identifier: Apache-2.0
// microattn: umbrella header.
#pragma once

#include "microattn/arch.hpp"
#include "microattn/attention.hpp"
#include "microattn/config.hpp"
#include "microattn/decoder.hpp"
#include "microattn/format.hpp"
#include "microattn/kv_cache.hpp"
#include "microattn/latent_attention.hpp"
#include "microattn/latent_export.hpp"
#include "microattn/layout.hpp"
#include "microattn/linear.hpp"
#include "microattn/mlp.hpp"
#include "microattn/norm.hpp"
#include "microattn/rope_config.hpp"
#include "microattn/status.hpp"
#include "microattn/version.h"
#include "microattn/weights.hpp"
