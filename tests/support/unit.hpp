// SPDX-License-Identifier: Apache-2.0
// The GoogleTest subset every test uses, so the portable tests also run on Cortex-M under the
// tiny runner: TEST; EXPECT_/ASSERT_ EQ NE LT LE GT GE TRUE FALSE NEAR; `<< message`.
#pragma once

#if defined(MICROATTN_TINY_TEST)
#include "support/tiny_test.hpp"
#else
#include <gtest/gtest.h>
#endif
