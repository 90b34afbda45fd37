/*
 * gemm.h - the matrix kernel of the in-process encoder: Y = X W^T + b, with
 * W as PyTorch stores a linear layer's weight (out x in, row-major), so
 * the mapped file is used as it is. An AVX-512 or AVX2/FMA kernel is
 * chosen at run time when the CPU has it; the scalar one is the reference
 * the tests hold them to.
 */
#ifndef MNEMO_GEMM_H
#define MNEMO_GEMM_H

#include <stddef.h>
#include <stdint.h>

enum { GEMM_SCALAR, GEMM_AVX2, GEMM_AVX512 };

/* Y[m][n] (row stride LDY) = sum_k X[m][k] W[n][k] + BIAS[n] (BIAS may be
 * NULL), for m < M, n < N, k < K; X's row stride is K, W's is K. */
void gemm_nt(const float *x, const float *w, const float *bias, float *y, int M, int N, int K,
             int ldy);

/* A weight matrix (N x K, as gemm_nt's W) prepared for the kernel chosen
 * when it was made: with a SIMD kernel, copied into panels of P columns
 * stored k-major, which the kernel streams in order. */
typedef struct gemm_w {
    const float *w;      /* as given */
    const float *packed; /* or NULL: gemm_run uses W */
    float *own;          /* PACKED when this made it */
    int N, K, P, kern;
    const int8_t *q;     /* int8 panels (gemm_quantize), or NULL */
    const float *qs;     /* each column's scale */
    const int32_t *qsum; /* each column's sum of its int8 weights */
    int8_t *qown;        /* Q when this made it */
    int qs_own;          /* QS too */
} gemm_w;

/* The panels of W (N x K) for every SIMD kernel: 16 columns each, k-major,
 * zero past N; gemm_packed_floats() floats (a model file can hold them). */
size_t gemm_packed_floats(int N, int K);
void gemm_pack(const float *w, int N, int K, float *out);

/* gemm_pack of a W whose rows are LDW floats apart (pack_rows), or of a W
 * given transposed: element [n][k] at W[k * LDW + n] (pack_cols). */
void gemm_pack_rows(const float *w, int ldw, int N, int K, float *out);
void gemm_pack_cols(const float *w, int ldw, int N, int K, float *out);

/* Prepares W with panels made before (gemm_pack; not copied, not freed). */
void gemm_prepare_packed(gemm_w *g, const float *w, const float *packed, int N, int K);

/* Prepares W (MNEMO_NOMEM when the copy cannot be made: G then runs on W
 * unpacked, still correct). */
int gemm_prepare(gemm_w *g, const float *w, int N, int K);
void gemm_release(gemm_w *g);

/* Makes G's products int8 (dynamic quantization): each row of W (a
 * column of Y) rounded to 127 / max|row| steps, in panels of 16 columns
 * by groups of 4 k; each row of X rounded the same way as it enters a
 * product; integer dot products (AVX-512 VNNI where the CPU has it), each
 * sum scaled once. A product then reads a fourth of the weights' memory
 * and, with VNNI, does four times the multiply-adds an instruction. The
 * float panels are dropped. MNEMO_NOMEM leaves G as it was; so does a K
 * past 8192 (MNEMO_OK, still float). */
int gemm_quantize(gemm_w *g);

/* The int8 form of W (N x K) into Q (gemm_q8_bytes(N, K) bytes) and META
 * (gemm_q8_meta(N) floats: the columns' scales, then their sums as
 * int32), as gemm_quantize makes it: a model file can hold them.
 * gemm_prepare_q8 runs G on such (borrowed, not freed). */
size_t gemm_q8_bytes(int N, int K);
size_t gemm_q8_meta(int N);
void gemm_quantize_to(const float *w, int N, int K, int8_t *q, float *meta);
void gemm_prepare_q8(gemm_w *g, const int8_t *q, const float *meta);

/* Columns a split of G should be a multiple of (1 unpacked). */
int gemm_cols_align(const gemm_w *g);

/* Y[m][n] = X[m] . W[n] + BIAS[n] for m < M and N0 <= n < N1 (Y and BIAS
 * indexed by the full n; N0 a multiple of gemm_cols_align()). */
void gemm_run(const gemm_w *g, const float *x, const float *bias, float *y, int M, int ldy,
              int n0, int n1);

/* One attention head's keys and values (N x DH each, rows LD floats apart)
 * made ready for the scores Q K^T and the context P V: packed once into
 * panels when N is long enough for the packed kernels, else copied
 * contiguous (K) and transposed (V) for the dot-product kernels. KB and VB
 * hold gemm_kv_floats(MAXN, DH) floats each. */
typedef struct gemm_kv {
    gemm_w k, v; /* when packed */
    const float *kb, *vb;
    int n, dh, packed;
} gemm_kv;

size_t gemm_kv_floats(int maxn, int dh);
void gemm_kv_prepare(gemm_kv *a, const float *k, const float *v, int ld, int n, int dh,
                     float *kb, float *vb);
/* SC[ROWS][n] = Q[ROWS][dh] K^T; CTX[ROWS] (row stride LDC) = P[ROWS][n] V. */
void gemm_kv_scores(const gemm_kv *a, const float *q, int rows, float *sc);
void gemm_kv_context(const gemm_kv *a, const float *p, int rows, float *ctx, int ldc);

/* The kernel gemm_nt uses, and setting it (a kernel the CPU lacks falls
 * back to the best it has); MNEMO_GEMM=scalar|avx2|avx512 in the
 * environment sets it at first use. */
int gemm_kernel(void);
void gemm_set_kernel(int k);
const char *gemm_kernel_name(int k);

/* GELU (erf form) of X[0..N) in place, absolute error below 1e-6. */
void gemm_gelu(float *x, int n);

/* GELU, tanh form (PyTorch's approximate="tanh", Gemma's activation), of
 * X[0..N) in place. */
void gemm_gelu_tanh(float *x, int n);

/* Layer normalisation of Y[0..N) in place: (y - mean) / sqrt(var + EPS)
 * * G + BETA. */
void gemm_layernorm(float *y, const float *g, const float *beta, int n, float eps);

/* Softmax of SCALE * X[0..N) in place. */
void gemm_softmax(float *x, int n, float scale);

/* Dot product of A and B (N floats), with the chosen kernel's width. */
float gemm_dot(const float *a, const float *b, int n);

#endif
