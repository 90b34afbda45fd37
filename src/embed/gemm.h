/*
 * gemm.h - the matrix kernel of the in-process encoder: Y = X W^T + b, with
 * W as PyTorch stores a linear layer's weight (out x in, row-major), so
 * the mapped file is used as it is. An AVX-512 or AVX2/FMA kernel is
 * chosen at run time when the CPU has it; the scalar one is the reference
 * the tests hold them to.
 */
#ifndef MNEMO_GEMM_H
#define MNEMO_GEMM_H

enum { GEMM_SCALAR, GEMM_AVX2, GEMM_AVX512 };

/* Y[m][n] (row stride LDY) = sum_k X[m][k] W[n][k] + BIAS[n] (BIAS may be
 * NULL), for m < M, n < N, k < K; X's row stride is K, W's is K. */
void gemm_nt(const float *x, const float *w, const float *bias, float *y, int M, int N, int K,
             int ldy);

/* The kernel gemm_nt uses, and setting it (a kernel the CPU lacks falls
 * back to the best it has); MNEMO_GEMM=scalar|avx2|avx512 in the
 * environment sets it at first use. */
int gemm_kernel(void);
void gemm_set_kernel(int k);
const char *gemm_kernel_name(int k);

/* Dot product of A and B (N floats), with the chosen kernel's width. */
float gemm_dot(const float *a, const float *b, int n);

#endif
