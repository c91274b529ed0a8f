// SPDX-License-Identifier: Apache-2.0
// The C++ file of README.md's C example: the one line that defines demo_layer's C functions
// (tools/microattn_c.py --cpp-out writes the same). The part between the readme markers is in
// README.md (a test checks that they match).
// [readme-begin]
#include "demo_layer.h"  // written by tools/microattn_c.py for this target
#include "microattn/c_api.hpp"

MICROATTN_C_LAYER(demo_layer, microattn::Config<64, 64, 4, 2, 16>);
// [readme-end]
