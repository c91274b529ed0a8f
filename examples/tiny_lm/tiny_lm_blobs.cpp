// SPDX-License-Identifier: Apache-2.0
// Links the tiny model's files into .rodata with the assembler's .incbin: no conversion step, no
// 4 MB C array to compile, the bytes exactly as the exporter wrote them. TINY_LM_DIR (a string
// literal, set by the build) is the folder holding them. ELF targets (GNU as, LLVM's
// integrated assembler): every target this project builds for.
#include "tiny_lm_blobs.h"

#if !defined(TINY_LM_DIR)
#error "tiny_lm_blobs.cpp: define TINY_LM_DIR as the folder of tiny_lm_f32.bin (a string literal)"
#endif

// A symbol NAME at the file's first byte (16-byte aligned) and NAME_bytes, its size.
#define TINY_LM_INCBIN(name, file)                       \
  __asm__(".pushsection .rodata." #name                  \
          ",\"a\"\n"                                     \
          ".balign 16\n"                                 \
          ".global " #name                               \
          "\n"                                           \
          ".type " #name ", %object\n" #name             \
          ":\n"                                          \
          ".incbin \"" TINY_LM_DIR "/" file "\"\n" #name \
          "_end:\n"                                      \
          ".size " #name ", " #name "_end - " #name      \
          "\n"                                           \
          ".balign 4\n"                                  \
          ".global " #name                               \
          "_bytes\n"                                     \
          ".type " #name "_bytes, %object\n" #name       \
          "_bytes:\n"                                    \
          ".4byte " #name "_end - " #name                \
          "\n"                                           \
          ".size " #name                                 \
          "_bytes, 4\n"                                  \
          ".popsection\n")

#if !defined(TINY_LM_NO_F32)
TINY_LM_INCBIN(tiny_lm_f32_blob, "tiny_lm_f32.bin");
#endif
#if !defined(TINY_LM_NO_Q8)
TINY_LM_INCBIN(tiny_lm_q8_blob, "tiny_lm_q8.bin");
#endif
