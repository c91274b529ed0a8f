// SPDX-License-Identifier: Apache-2.0
// Links the real_model test's files (tests/real_model.cmake writes them at build time) into
// .rodata with the assembler's .incbin, as examples/tiny_lm/tiny_lm_blobs.cpp does the tiny
// model's: REAL_MODEL_DIR (a string literal) is their folder. ELF targets only.
#include "real_model_data.h"

#if !defined(REAL_MODEL_DIR)
#error "real_model_data.cpp: define REAL_MODEL_DIR as the folder of stories260K_f32.bin"
#endif

// NAME at the file's first byte (64-byte aligned) and NAME_bytes, its size.
#define REAL_MODEL_INCBIN(name, file)                                                         \
  __asm__(".pushsection .rodata." #name ",\"a\"\n.balign 64\n.global " #name "\n.type " #name \
          ", %object\n" #name ":\n.incbin \"" REAL_MODEL_DIR "/" file "\"\n" #name            \
          "_end:\n.size " #name ", " #name "_end - " #name "\n.balign 4\n.global " #name      \
          "_bytes\n.type " #name "_bytes, %object\n" #name "_bytes:\n.4byte " #name           \
          "_end - " #name "\n.size " #name "_bytes, 4\n.popsection\n")

REAL_MODEL_INCBIN(real_model_blob, "stories260K_f32.bin");
#if defined(REAL_MODEL_BENCH) || defined(REAL_MODEL_FORMATS)
REAL_MODEL_INCBIN(real_model_q8_blob, "stories260K_q8.bin");
#endif
#if !defined(REAL_MODEL_BENCH)
REAL_MODEL_INCBIN(real_model_ref, "stories260K_ref.bin");
#endif
#if defined(REAL_MODEL_FORMATS)
REAL_MODEL_INCBIN(real_model_f16_blob, "stories260K_f16.bin");
REAL_MODEL_INCBIN(real_model_bf16_blob, "stories260K_bf16.bin");
REAL_MODEL_INCBIN(real_model_q8g32_blob, "stories260K_q8g32.bin");
REAL_MODEL_INCBIN(real_model_q8g64_blob, "stories260K_q8g64.bin");
REAL_MODEL_INCBIN(real_model_q8g128_blob, "stories260K_q8g128.bin");
#endif
