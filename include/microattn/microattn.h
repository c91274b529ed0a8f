// SPDX-License-Identifier: Apache-2.0
/* microattn: the C interface (C11, or C99 with GNU attributes; also valid C++).
 *
 * Configurations are compile-time, so a C program gets one set of functions per layer, each
 * defined by one macro line in a C++ file of the project and declared by a header generated
 * for the target (tools/microattn_c.py; details in microattn/c_api.hpp):
 *
 *   python3 tools/microattn_c.py --name mylayer --kind layer --config "64, 64, 4, 2, 16"
 *       --cxx arm-none-eabi-g++
 *       --cxxflags="-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16"
 *       --out mylayer.h --cpp-out mylayer.cpp             (one command line)
 *
 *   mylayer.cpp (the same compiler and flags, C++17 with -fno-exceptions -fno-rtti, with
 *   lib/status.cpp and lib/c_api.cpp; the C compiler links the program: docs/integration.md):
 *     #include "mylayer.h"
 *     #include "microattn/c_api.hpp"
 *     MICROATTN_C_LAYER(mylayer, microattn::Config<64, 64, 4, 2, 16>);
 *
 *   C:  static mylayer g_layer;   (all-zero bytes are a ready object: no init call needed)
 *       microattn_status s = mylayer_forward(&g_layer, x, tokens, y);
 *
 * Every function that can fail returns a microattn_status; on anything but MICROATTN_OK
 * nothing was written (outputs, cache and object are exactly as before). No function allocates, and
 * the library keeps no state outside the objects.
 */
#ifndef MICROATTN_MICROATTN_H
#define MICROATTN_MICROATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Alignment of a layer's storage struct (used by the generated headers). */
#if defined(__cplusplus)
#define MICROATTN_ALIGNAS(a) alignas(a)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define MICROATTN_ALIGNAS(a) _Alignas(a)
#elif defined(__GNUC__)
#define MICROATTN_ALIGNAS(a) __attribute__((aligned(a)))
#else
#error "microattn.h: needs C11 (_Alignas) or a GNU-compatible compiler"
#endif

/* Result of every function. Same values as the C++ microattn::Status (lib/c_api.cpp checks). */
typedef enum microattn_status {
  MICROATTN_OK = 0,
  MICROATTN_NULL_POINTER = 1,    /* a required pointer (object, input, output, weight) is NULL */
  MICROATTN_BAD_TOKEN_COUNT = 2, /* token count is 0 or larger than T_max */
  MICROATTN_OVERLAP = 3,         /* an output overlaps an input or a weight array it must not */
  MICROATTN_BAD_SCALE = 4,       /* scale not finite, or |scale| > FLT_MAX / log2(e) */
  MICROATTN_BAD_STRIDE = 5,      /* a row stride below the row width, or its span overflows */
  MICROATTN_CACHE_FULL = 6,      /* appending would exceed the KV cache's T_max tokens */
  MICROATTN_BAD_ARGUMENT = 7,    /* anything else out of range (also: a misaligned object) */
  /* Never returned: makes the enum int-sized under -fshort-enums too, and every non-negative
   * int a value of the type (microattn_status_string() answers "unknown status" for one). */
  MICROATTN_STATUS_FORCE_INT_ = 0x7fffffff
} microattn_status;

/* Short, stable name of a status ("ok", "null pointer", ...): the C++ microattn::to_string.
 * Never NULL; "unknown status" for a value that is not a status. */
const char* microattn_status_string(microattn_status s);

/* How the weight matrices are stored (microattn::WeightLayout). The layout has no default:
 * a wrong one computes a wrong layer with no error to show for it.
 *   IN_OUT   [in][out]: Q = x * W_q as the math is written
 *   OUT_IN   [out][in]: PyTorch's nn.Linear.weight (export a state_dict as it is)
 *   PANEL16  [out/16][in][16]: the fastest; needs d_head and W_O's width multiples of 16 */
enum { MICROATTN_LAYOUT_IN_OUT = 0, MICROATTN_LAYOUT_OUT_IN = 1, MICROATTN_LAYOUT_PANEL16 = 2 };

/* Storage formats of a weight matrix: microattn::StorageFormat::code() (microattn/format.hpp),
 * the same numbers a model file will carry.
 *   F32  float elements, no scales
 *   QC8  int8_t elements in -127 .. 127 with a float scale per output column,
 *        W(i, o) = scales[o] * data(i, o) (microattn_quantize_int8() makes both)
 *   F16  IEEE binary16 elements as uint16_t bits, no scales (WeightType::kF16)
 *   BF16 bfloat16 elements as uint16_t bits (the top half of a float), no scales
 *   QG8_32, QG8_64, QG8_128  int8_t elements with a float scale per output column and group of
 *        32 / 64 / 128 inputs (WeightType::kInt8G32 / G64 / G128), scales stored like the rows:
 *        [out][groups] for OUT_IN, [groups][out] otherwise (microattn::quantize_int8_groups) */
#define MICROATTN_FORMAT_F32 0x0u
#define MICROATTN_FORMAT_QC8 0x10801u
#define MICROATTN_FORMAT_F16 0x1002u
#define MICROATTN_FORMAT_BF16 0x1003u
#define MICROATTN_FORMAT_QG8_32 0x5020801u
#define MICROATTN_FORMAT_QG8_64 0x6020801u
#define MICROATTN_FORMAT_QG8_128 0x7020801u

/* One weight matrix: its elements in `layout` (the struct that holds it says which), its
 * scales when the format has them (NULL otherwise: ignored), and its format. A layer takes the
 * format of its Config (<NAME>_WEIGHT_FORMAT): another one is MICROATTN_BAD_ARGUMENT, so the
 * same struct serves fp32 and int8 weights without a compile-time type of its own. */
typedef struct microattn_matrix {
  const void* data;    /* float (F32), int8_t (QC8, QG8_*), uint16_t (F16, BF16) */
  const float* scales; /* QC8: [out]; QG8_*: out * groups */
  uint32_t format;     /* MICROATTN_FORMAT_* */
} microattn_matrix;

/* The weights of one attention layer (kinds layer, kv) in any format: the matrices of
 * microattn_weights (same shapes and layouts), each a microattn_matrix, and the fp32 biases.
 * <NAME>_set_matrices takes it; microattn_weights and microattn_weights_q8 with
 * <NAME>_set_weights remain for this release. */
typedef struct microattn_layer_matrices {
  int layout; /* MICROATTN_LAYOUT_* */
  microattn_matrix q, k, v, o;
  const float* b_q;
  const float* b_k;
  const float* b_v;
  const float* b_o;
} microattn_layer_matrices;

/* The weights of one layer: views over the caller's arrays (never copied; may be in flash).
 * Shapes in floats, QD = H * d_head, KD = H_kv * d_head, OD = the layer's output width:
 *   field  IN_OUT          OUT_IN          needed when
 *   w_q    [d_model][QD]   [QD][d_model]   always
 *   w_k    [d_model][KD]   [KD][d_model]   always
 *   w_v    [d_model][KD]   [KD][d_model]   always
 *   w_o    [QD][OD]        [OD][QD]        the layer has W_O (<NAME>_HAS_OUT_PROJ)
 *   b_q, b_k, b_v, b_o: [QD], [KD], [KD], [OD], when the layer has that bias (<NAME>_BIAS_*).
 * Pointers the layer does not use are ignored and may be NULL. Zero-initialise the struct and
 * set the fields (designated initialisers do both). For int8 weights: microattn_weights_q8. */
typedef struct microattn_weights {
  int layout; /* MICROATTN_LAYOUT_* */
  const float* w_q;
  const float* w_k;
  const float* w_v;
  const float* w_o;
  const float* b_q;
  const float* b_k;
  const float* b_v;
  const float* b_o;
} microattn_weights;

/* The weights of a layer whose Config has microattn::WeightType::kInt8 (<NAME>_INT8_WEIGHTS;
 * its <NAME>_set_weights takes this struct): int8 matrices in the shapes and layouts of
 * microattn_weights (PANEL16 included: a panel row is 16 bytes), each with its fp32 scales,
 * one per output column: W(i, o) = s_x[o] * w_x(i, o).
 *   field  length  needed when
 *   s_q    [QD]    always
 *   s_k    [KD]    always
 *   s_v    [KD]    always
 *   s_o    [OD]    the layer has W_O
 * Biases stay fp32 (as in microattn_weights). A missing scale is MICROATTN_NULL_POINTER like a
 * missing matrix. microattn_quantize_int8() makes a matrix and its scales from fp32 weights at
 * start-up; tools/export_pytorch.py --quant int8 does the same offline (bit for bit). */
typedef struct microattn_weights_q8 {
  int layout; /* MICROATTN_LAYOUT_* */
  const int8_t* w_q;
  const float* s_q;
  const int8_t* w_k;
  const float* s_k;
  const int8_t* w_v;
  const float* s_v;
  const int8_t* w_o;
  const float* s_o;
  const float* b_q;
  const float* b_k;
  const float* b_v;
  const float* b_o;
} microattn_weights_q8;

/* The weights of a multi-head latent attention layer (microattn::LatentWeights; --kind latent,
 * DeepSeek-V2's MLA): views over the caller's arrays, fp32, no biases. Shapes in IN_OUT, OUT_IN
 * is each transposed (Hugging Face's DeepseekV2Attention weights as they are, names on the
 * right); QD = H * (d_nope + d_R), UD = H * (d_nope + d_v), VD = H * d_v:
 *   w_q    [d_model][QD]          q_proj            without a query latent (<NAME>_D_Q_LATENT 0)
 *   w_dq   [d_model][d_cq]        q_a_proj          with one (QueryLatent{d_cq}), and:
 *   g_q    [d_cq]                 q_a_layernorm
 *   w_uq   [d_cq][QD]             q_b_proj
 *   w_dkv  [d_model][d_c + d_R]   kv_a_proj_with_mqa
 *   g_kv   [d_c]                  kv_a_layernorm
 *   w_ukv  [d_c][UD]              kv_b_proj
 *   w_o    [VD][d_model]          o_proj
 * A head's columns of w_q / w_uq are [q_nope | q_R], of w_ukv [k_nope | v]. PANEL16 ([out/16]
 * [in][16] for every matrix) only where <NAME>_PANEL16 is 1 (every output width, d_nope and d_v
 * multiples of 16; otherwise MICROATTN_BAD_ARGUMENT). Pointers the layer does not use are
 * ignored and may be NULL. For int8 weights: microattn_latent_weights_q8. */
typedef struct microattn_latent_weights {
  int layout; /* MICROATTN_LAYOUT_* */
  const float* w_q;
  const float* w_dq;
  const float* g_q;
  const float* w_uq;
  const float* w_dkv;
  const float* g_kv;
  const float* w_ukv;
  const float* w_o;
} microattn_latent_weights;

/* The weights of a latent layer whose LatentConfig has microattn::WeightType::kInt8
 * (<NAME>_INT8_WEIGHTS; its <NAME>_set_weights takes this struct): the six matrices int8 in the
 * shapes and layouts of microattn_latent_weights (PANEL16 where <NAME>_PANEL16), each with its
 * fp32 scales, one per output column: W(i, o) = s_x[o] * w_x(i, o).
 *   field  length      needed with
 *   s_q    [QD]        w_q
 *   s_dq   [d_cq]      w_dq
 *   s_uq   [QD]        w_uq
 *   s_dkv  [d_c + d_R] always
 *   s_ukv  [UD]        always
 *   s_o    [d_model]   always
 * The RMSNorm weights g_q, g_kv stay fp32. A missing scale is MICROATTN_NULL_POINTER like a
 * missing matrix. microattn_quantize_int8() makes a matrix and its scales (w_dkv: in_dim
 * d_model, out_dim d_c + d_R; w_ukv: d_c, UD; w_o: VD, d_model; ...); tools/export_pytorch.py
 * --quant int8 writes the same bits offline from a DeepSeek-V2-style module. */
typedef struct microattn_latent_weights_q8 {
  int layout; /* MICROATTN_LAYOUT_* */
  const int8_t* w_q;
  const float* s_q;
  const int8_t* w_dq;
  const float* s_dq;
  const float* g_q;
  const int8_t* w_uq;
  const float* s_uq;
  const int8_t* w_dkv;
  const float* s_dkv;
  const float* g_kv;
  const int8_t* w_ukv;
  const float* s_ukv;
  const int8_t* w_o;
  const float* s_o;
} microattn_latent_weights_q8;

/* The weights of a latent layer in any format (<NAME>_set_matrices): the matrices of
 * microattn_latent_weights (same shapes and layouts), each a microattn_matrix; the RMSNorm
 * weights g_q, g_kv fp32. */
typedef struct microattn_latent_matrices {
  int layout; /* MICROATTN_LAYOUT_* */
  microattn_matrix q, dq;
  const float* g_q;
  microattn_matrix uq, dkv;
  const float* g_kv;
  microattn_matrix ukv, o;
} microattn_latent_matrices;

/* The weights of a linear layer, y = x W (+ b) (microattn::LinearWeights; --kind linear): views
 * over the caller's arrays. w: [in][out] in IN_OUT, [out][in] in OUT_IN (PyTorch's
 * nn.Linear.weight as it is), [out/16][in][16] in PANEL16 (out rounded up to a multiple of 16,
 * the padding zero); b: [out] where <NAME>_BIAS is 1 (ignored, may be NULL, otherwise). Two
 * structs, as for the attention layers, so that an int8 array given to an fp32 layer (or the
 * reverse) is a compile error: microattn_linear_weights_q8 where <NAME>_INT8_WEIGHTS is 1. */
typedef struct microattn_linear_weights {
  int layout; /* MICROATTN_LAYOUT_* */
  const float* w;
  const float* b;
} microattn_linear_weights;

/* int8 weights of a linear layer (WeightType::kInt8): w int8 in the shapes of
 * microattn_linear_weights, s its [out] fp32 scales, W(i, o) = s[o] * w(i, o)
 * (microattn_quantize_int8() makes both); the bias stays fp32. */
typedef struct microattn_linear_weights_q8 {
  int layout; /* MICROATTN_LAYOUT_* */
  const int8_t* w;
  const float* s;
  const float* b;
} microattn_linear_weights_q8;

/* The weights of a linear layer in any format (<NAME>_set_matrices): w as in
 * microattn_linear_weights, a microattn_matrix; the fp32 bias b. */
typedef struct microattn_linear_matrices {
  int layout; /* MICROATTN_LAYOUT_* */
  microattn_matrix w;
  const float* b;
} microattn_linear_matrices;

/* The weights of an MLP (microattn::MlpWeights; --kind mlp), every matrix in `layout`:
 *   field   IN_OUT              OUT_IN (PyTorch)     Hugging Face LLaMA (OUT_IN)
 *   w_gate  [d_model][d_hidden] [d_hidden][d_model]  gate_proj.weight (gated activations only)
 *   w_up    [d_model][d_hidden] [d_hidden][d_model]  up_proj.weight (ungated: the first Linear)
 *   w_down  [d_hidden][d_model] [d_model][d_hidden]  down_proj.weight
 *   b_gate, b_up: [d_hidden], b_down: [d_model], where <NAME>_BIAS is 1.
 * Pointers the MLP does not use (w_gate of an ungated one, biases without <NAME>_BIAS) are
 * ignored and may be NULL. For int8 weights: microattn_mlp_weights_q8. */
typedef struct microattn_mlp_weights {
  int layout; /* MICROATTN_LAYOUT_* */
  const float* w_gate;
  const float* w_up;
  const float* w_down;
  const float* b_gate;
  const float* b_up;
  const float* b_down;
} microattn_mlp_weights;

/* int8 weights of an MLP (WeightType::kInt8): the matrices int8 in the shapes of
 * microattn_mlp_weights, each with its fp32 scales, one per output column (s_gate, s_up:
 * [d_hidden], s_down: [d_model]); the biases stay fp32. */
typedef struct microattn_mlp_weights_q8 {
  int layout; /* MICROATTN_LAYOUT_* */
  const int8_t* w_gate;
  const float* s_gate;
  const int8_t* w_up;
  const float* s_up;
  const int8_t* w_down;
  const float* s_down;
  const float* b_gate;
  const float* b_up;
  const float* b_down;
} microattn_mlp_weights_q8;

/* The weights of an MLP in any format (<NAME>_set_matrices): the matrices of
 * microattn_mlp_weights, each a microattn_matrix; the fp32 biases. */
typedef struct microattn_mlp_matrices {
  int layout; /* MICROATTN_LAYOUT_* */
  microattn_matrix gate, up, down;
  const float* b_gate;
  const float* b_up;
  const float* b_down;
} microattn_mlp_matrices;

/* What microattn_quantize_int8() measured (microattn::QuantError): the error its rounding
 * introduced into one matrix. */
typedef struct microattn_quant_error {
  float max_abs; /* largest |w - scale[o] * q| */
  float rms;     /* root mean square of w - scale[o] * q */
  float rel;     /* ||W - W_q|| / ||W|| (Frobenius; 0 for an all-zero matrix) */
} microattn_quant_error;

/* Quantises one fp32 matrix (in_dim inputs, out_dim outputs, stored in layout `from`: IN_OUT
 * or OUT_IN) to int8, symmetric, per output column (microattn::quantize_int8):
 * scales[o] = max_i |W(i, o)| / 127, dst = W / scales rounded to nearest (ties away from zero),
 * in layout `to` (any MICROATTN_LAYOUT_*). dst holds in_dim * out_dim bytes (PANEL16: out_dim
 * rounded up to a multiple of 16, the padding zeroed), scales out_dim floats; err may be NULL.
 * For w_q: in_dim = d_model, out_dim = QD; w_k, w_v: d_model, KD; w_o: QD, OD.
 * MICROATTN_OK; MICROATTN_NULL_POINTER (src, dst or scales NULL); MICROATTN_BAD_ARGUMENT (a
 * dimension 0, an unknown layout, `from` PANEL16, a weight not finite); MICROATTN_OVERLAP (dst,
 * scales and src overlap). Nothing is written on error (err neither). No heap. */
microattn_status microattn_quantize_int8(const float* src, int from, size_t in_dim, size_t out_dim,
                                         int to, int8_t* dst, float* scales,
                                         microattn_quant_error* err);

/* Why a model file was refused (<NAME>_check_blob; microattn::ModelCheck): the status, the
 * problem (microattn::ModelProblem's value), the field key or tensor id (role | layer << 16) it
 * is about, and the configuration's and the file's values (docs/model-format.md, "Refusals"). */
typedef struct microattn_model_check {
  microattn_status status;
  uint32_t problem;
  uint32_t key;
  uint32_t expected;
  uint32_t found;
} microattn_model_check;

/* A one-line English reason for *c ("field d_model: the file has 17, the configuration 16")
 * into buf, at most cap bytes with the terminating 0 (nothing when buf is NULL or cap 0; a
 * NULL c reads as "null pointer"). Returns the length written, without the 0. */
size_t microattn_model_check_text(const microattn_model_check* c, char* buf, size_t cap);

/* A tokenizer file (tools/tokenizer.py; docs/models.md): SentencePiece BPE, read in place.
 * The object is a view; all-zero bytes are an empty tokenizer. */
typedef struct microattn_tokenizer {
  const void* blob_;
  size_t bytes_;
} microattn_tokenizer;

/* Encode scratch for texts of up to n bytes (microattn::tokenizer_scratch_bytes), and the most
 * ids encode writes for them (BOS included). The scratch: the caller's, 4-byte aligned. */
#define MICROATTN_TOKENIZER_SCRATCH_BYTES(n) (24u * ((size_t)(n) + 1u) + 3u * (size_t)(n) + 3u)
#define MICROATTN_TOKENIZER_MAX_IDS(n) (3u * (size_t)(n) + 4u)

/* Points *t at a tokenizer file (4-byte aligned; it must stay), checking every table:
 * MICROATTN_OK, MICROATTN_NULL_POINTER, MICROATTN_BAD_ARGUMENT (not a valid file; *t
 * unchanged). A model file's own tokenizer: microattn_model_file_tokenizer. */
microattn_status microattn_tokenizer_set_blob(microattn_tokenizer* t, const void* blob,
                                              size_t bytes);
/* The tokenizer stored inside a model file (export_pytorch.py --tokenizer), into *t:
 * MICROATTN_OK, MICROATTN_NULL_POINTER, MICROATTN_BAD_ARGUMENT (no tokenizer in the file, or
 * not a valid one). */
microattn_status microattn_model_file_tokenizer(microattn_tokenizer* t, const void* model_blob,
                                                size_t bytes);
/* Pieces (0 for an empty or NULL tokenizer), and the BOS, EOS and unknown ids (-1: none). */
size_t microattn_tokenizer_size(const microattn_tokenizer* t);
int32_t microattn_tokenizer_bos(const microattn_tokenizer* t);
int32_t microattn_tokenizer_eos(const microattn_tokenizer* t);
int32_t microattn_tokenizer_unk(const microattn_tokenizer* t);
/* The ids of UTF-8 text[0 .. n), BOS first when add_bos, as the file's tokenizer encodes it
 * (SentencePiece BPE, or GPT-2's byte-level BPE: microattn::tokenizer_encode), into ids[cap]:
 * MICROATTN_OK (*n_ids written), MICROATTN_NULL_POINTER, MICROATTN_BAD_TOKEN_COUNT
 * (scratch_bytes below MICROATTN_TOKENIZER_SCRATCH_BYTES(n)), MICROATTN_BAD_ARGUMENT (cap too
 * small, scratch misaligned); nothing written on error. */
microattn_status microattn_tokenizer_encode(const microattn_tokenizer* t, const char* text,
                                            size_t n, int add_bos, void* scratch,
                                            size_t scratch_bytes, int32_t* ids, size_t cap,
                                            size_t* n_ids);
/* The bytes token id stands for after token prev (-1 at the start): into out[cap], *n of them
 * (byte pieces may end inside a UTF-8 character: the caller joins them). MICROATTN_OK,
 * MICROATTN_NULL_POINTER, MICROATTN_BAD_ARGUMENT (id outside, cap too small). */
microattn_status microattn_tokenizer_decode(const microattn_tokenizer* t, int32_t prev, int32_t id,
                                            char* out, size_t cap, size_t* n);

/* RoPE pairing (microattn::RopePairing): which dimensions of a head rotate together.
 *   ADJACENT    pair i = (2i, 2i + 1): the original LLaMA code, GPT-J
 *   HALF_SPLIT  pair i = (i, i + rotary_dims / 2): Hugging Face rotate_half, GPT-NeoX */
enum { MICROATTN_ROPE_ADJACENT = 0, MICROATTN_ROPE_HALF_SPLIT = 1 };

/* Rotary embeddings (microattn::RopeConfig), for a layer whose Config has
 * microattn::Rope::kYes (<NAME>_HAS_ROPE; without it only a disabled RoPE is accepted).
 * MICROATTN_ROPE_DEFAULTS are the C++ defaults: off; base 10000, HALF_SPLIT, all of d_head,
 * start position 0 when enabled. */
typedef struct microattn_rope {
  int enabled;           /* 0: no RoPE */
  float base;            /* frequency base, finite and > 0 (10000 in LLaMA 1/2, 500000 in 3) */
  int pairing;           /* MICROATTN_ROPE_* */
  size_t rotary_dims;    /* leading dimensions rotated, even and <= d_head; 0 = d_head */
  size_t start_position; /* position of the first token (token i rotates at start + i) */
} microattn_rope;
#define MICROATTN_ROPE_DEFAULTS \
  { 0, 10000.0f, MICROATTN_ROPE_HALF_SPLIT, 0, 0 }

/* What a KV layer's export_cache wrote (microattn::CacheSlice): which cached tokens, of what
 * shape, rotated how; import_cache accepts it only where it means the same thing. A latent
 * layer's rows: kv_heads 1, d_head d_c + d_R (one [c_KV | k_R] row a token). */
typedef struct microattn_cache_slice {
  size_t first;        /* cache position of the first token */
  size_t tokens;       /* tokens in the slice */
  size_t kv_heads;     /* H_kv of the layer it came from */
  size_t d_head;       /* d_head of the layer it came from */
  microattn_rope rope; /* the RoPE its keys were rotated with (enabled == 0: none) */
} microattn_cache_slice;

/* The caller's threads (microattn::Executor, include/microattn/executor.hpp), for a layer whose
 * Config has microattn::MaxWorkers{n} (<NAME>_MAX_WORKERS). run(self, n, task, arg) must call
 * task(arg, i) exactly once for every i in 0 .. n - 1 (on any threads, in any order) and return
 * when all of them have returned; n <= workers. Tasks never allocate, lock or fail. The layer
 * then splits every later call into up to `workers` tasks, with bit-identical results for every
 * worker count. A pthread pool, FreeRTOS tasks waiting on a notification, Zephyr work queues or
 * an OpenMP loop inside run plug in the same way. MICROATTN_EXECUTOR_NONE (the default of every
 * object): everything on the calling thread. */
typedef struct microattn_executor {
  void (*run)(void* self, size_t n, void (*task)(void* arg, size_t i), void* arg);
  void* self;
  size_t workers; /* tasks that may run at once; 0 or 1: the calling thread only */
} microattn_executor;
#define MICROATTN_EXECUTOR_NONE \
  { 0, 0, 0 }

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MICROATTN_MICROATTN_H */
