# SPDX-License-Identifier: Apache-2.0
# Test sources that also run on Cortex-M under the tiny runner (paths relative to tests/).
# They use static storage for big objects, no threads, files or exceptions.

# The kernels' suite (MICROATTN_TEST_KERNELS_ONLY: the builds that exist for the numerics under
# other flags or headers, -Ofast and xsimd 14): the portable sources that test the kernels, the
# fused attention, masks and RoPE against references and PyTorch; not those that test the
# layers' state, status and bad-input rules, which do not change with the flags.
set(MICROATTN_KERNEL_TEST_SOURCES
  test_attention_core.cpp
  test_attn_kernels.cpp
  test_arch.cpp
  test_f32_exp.cpp
  test_f32_gemm.cpp
  test_format.cpp
  test_group_int8.cpp
  test_half.cpp
  test_pytorch_fixtures.cpp
  test_quant.cpp
  test_qd8.cpp
  test_masks.cpp
  test_numeric_contract.cpp
  test_rope.cpp
)
# The portable suite: the kernels' and the layers' state, status and bad-input tests.
set(MICROATTN_PORTABLE_TEST_SOURCES
  ${MICROATTN_KERNEL_TEST_SOURCES}
  test_attention_layer.cpp
  test_bad_input.cpp
  test_kv_cache.cpp
  test_latent_attention.cpp
  test_blocks.cpp
  test_decoder.cpp
  test_zero_init.cpp
)
