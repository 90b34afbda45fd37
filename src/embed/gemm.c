/*
 * gemm.c - Y = X W^T + b kernels (see gemm.h).
 *
 * Both operands run along K contiguously, so each output is a dot
 * product. The SIMD kernels take a tile of 2 rows of X by 4 rows of W: 8
 * vector accumulators, 6 loads per 8 fused multiply-adds, the W tile
 * (4 x K floats) staying in L1 while the rows of X stream past. Sums are
 * reduced across lanes once per tile.
 */
#include "embed/gemm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mnemo.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GEMM_X86 1
#else
#define GEMM_X86 0
#endif

static int chosen = -1;

static void scalar_nt(const float *x, const float *w, const float *bias, float *y, int M, int N,
                      int K, int ldy)
{
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            const float *a = x + (size_t)m * K, *b = w + (size_t)n * K;
            float s = 0;
            for (int k = 0; k < K; k++)
                s += a[k] * b[k];
            y[(size_t)m * ldy + n] = s + (bias ? bias[n] : 0.0f);
        }
}

static float scalar_dot(const float *a, const float *b, int n)
{
    float s = 0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

#if GEMM_X86
__attribute__((target("avx2,fma"))) static inline float hsum8(__m256 v)
{
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

__attribute__((target("avx2,fma"))) static float avx2_dot(const float *a, const float *b, int n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int k = 0;
    for (; k + 16 <= n; k += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 8), _mm256_loadu_ps(b + k + 8), s1);
    }
    for (; k + 8 <= n; k += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), s0);
    float s = hsum8(_mm256_add_ps(s0, s1));
    for (; k < n; k++)
        s += a[k] * b[k];
    return s;
}

__attribute__((target("avx2,fma"))) static void avx2_nt(const float *x, const float *w,
                                                         const float *bias, float *y, int M,
                                                         int N, int K, int ldy)
{
    int K8 = K & ~7;
    int n = 0;
    for (; n + 4 <= N; n += 4) {
        const float *w0 = w + (size_t)n * K, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
        int m = 0;
        for (; m + 2 <= M; m += 2) {
            const float *x0 = x + (size_t)m * K, *x1 = x0 + K;
            __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c03 = c00;
            __m256 c10 = c00, c11 = c00, c12 = c00, c13 = c00;
            for (int k = 0; k < K8; k += 8) {
                __m256 a0 = _mm256_loadu_ps(x0 + k), a1 = _mm256_loadu_ps(x1 + k);
                __m256 b = _mm256_loadu_ps(w0 + k);
                c00 = _mm256_fmadd_ps(a0, b, c00);
                c10 = _mm256_fmadd_ps(a1, b, c10);
                b = _mm256_loadu_ps(w1 + k);
                c01 = _mm256_fmadd_ps(a0, b, c01);
                c11 = _mm256_fmadd_ps(a1, b, c11);
                b = _mm256_loadu_ps(w2 + k);
                c02 = _mm256_fmadd_ps(a0, b, c02);
                c12 = _mm256_fmadd_ps(a1, b, c12);
                b = _mm256_loadu_ps(w3 + k);
                c03 = _mm256_fmadd_ps(a0, b, c03);
                c13 = _mm256_fmadd_ps(a1, b, c13);
            }
            float r[8] = {hsum8(c00), hsum8(c01), hsum8(c02), hsum8(c03),
                          hsum8(c10), hsum8(c11), hsum8(c12), hsum8(c13)};
            for (int k = K8; k < K; k++) {
                r[0] += x0[k] * w0[k];
                r[1] += x0[k] * w1[k];
                r[2] += x0[k] * w2[k];
                r[3] += x0[k] * w3[k];
                r[4] += x1[k] * w0[k];
                r[5] += x1[k] * w1[k];
                r[6] += x1[k] * w2[k];
                r[7] += x1[k] * w3[k];
            }
            float *y0 = y + (size_t)m * ldy + n, *y1 = y0 + ldy;
            for (int j = 0; j < 4; j++) {
                float bj = bias ? bias[n + j] : 0.0f;
                y0[j] = r[j] + bj;
                y1[j] = r[4 + j] + bj;
            }
        }
        for (; m < M; m++)
            for (int j = 0; j < 4; j++)
                y[(size_t)m * ldy + n + j] =
                    avx2_dot(x + (size_t)m * K, w + (size_t)(n + j) * K, K) +
                    (bias ? bias[n + j] : 0.0f);
    }
    for (; n < N; n++)
        for (int m = 0; m < M; m++)
            y[(size_t)m * ldy + n] =
                avx2_dot(x + (size_t)m * K, w + (size_t)n * K, K) + (bias ? bias[n] : 0.0f);
}

__attribute__((target("avx512f"))) static float avx512_dot(const float *a, const float *b,
                                                            int n)
{
    __m512 s = _mm512_setzero_ps();
    int k = 0;
    for (; k + 16 <= n; k += 16)
        s = _mm512_fmadd_ps(_mm512_loadu_ps(a + k), _mm512_loadu_ps(b + k), s);
    float r = _mm512_reduce_add_ps(s);
    for (; k < n; k++)
        r += a[k] * b[k];
    return r;
}

__attribute__((target("avx512f"))) static void avx512_nt(const float *x, const float *w,
                                                          const float *bias, float *y, int M,
                                                          int N, int K, int ldy)
{
    int K16 = K & ~15;
    int n = 0;
    for (; n + 4 <= N; n += 4) {
        const float *w0 = w + (size_t)n * K, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
        /* The next tile's rows, fetched while this one computes: with few
         * rows of X the kernel streams W from memory. */
        const float *nx = n + 8 <= N ? w3 + K : NULL;
        for (int m = 0; m < M; m += 3) {
            int mr = M - m < 3 ? M - m : 3;
            const float *x0 = x + (size_t)m * K, *x1 = mr > 1 ? x0 + K : x0,
                        *x2 = mr > 2 ? x0 + 2 * (size_t)K : x0;
            __m512 c[3][4];
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 4; j++)
                    c[i][j] = _mm512_setzero_ps();
            for (int k = 0; k < K16; k += 16) {
                if (nx && m == 0) {
                    _mm_prefetch((const char *)(nx + k), _MM_HINT_T0);
                    _mm_prefetch((const char *)(nx + K + k), _MM_HINT_T0);
                    _mm_prefetch((const char *)(nx + 2 * (size_t)K + k), _MM_HINT_T0);
                    _mm_prefetch((const char *)(nx + 3 * (size_t)K + k), _MM_HINT_T0);
                }
                __m512 a0 = _mm512_loadu_ps(x0 + k), a1 = _mm512_loadu_ps(x1 + k),
                       a2 = _mm512_loadu_ps(x2 + k);
                __m512 b = _mm512_loadu_ps(w0 + k);
                c[0][0] = _mm512_fmadd_ps(a0, b, c[0][0]);
                c[1][0] = _mm512_fmadd_ps(a1, b, c[1][0]);
                c[2][0] = _mm512_fmadd_ps(a2, b, c[2][0]);
                b = _mm512_loadu_ps(w1 + k);
                c[0][1] = _mm512_fmadd_ps(a0, b, c[0][1]);
                c[1][1] = _mm512_fmadd_ps(a1, b, c[1][1]);
                c[2][1] = _mm512_fmadd_ps(a2, b, c[2][1]);
                b = _mm512_loadu_ps(w2 + k);
                c[0][2] = _mm512_fmadd_ps(a0, b, c[0][2]);
                c[1][2] = _mm512_fmadd_ps(a1, b, c[1][2]);
                c[2][2] = _mm512_fmadd_ps(a2, b, c[2][2]);
                b = _mm512_loadu_ps(w3 + k);
                c[0][3] = _mm512_fmadd_ps(a0, b, c[0][3]);
                c[1][3] = _mm512_fmadd_ps(a1, b, c[1][3]);
                c[2][3] = _mm512_fmadd_ps(a2, b, c[2][3]);
            }
            const float *xs[3] = {x0, x1, x2}, *ws[4] = {w0, w1, w2, w3};
            for (int i = 0; i < mr; i++)
                for (int j = 0; j < 4; j++) {
                    float r = _mm512_reduce_add_ps(c[i][j]);
                    for (int k = K16; k < K; k++)
                        r += xs[i][k] * ws[j][k];
                    y[(size_t)(m + i) * ldy + n + j] = r + (bias ? bias[n + j] : 0.0f);
                }
        }
    }
    for (; n < N; n++)
        for (int m = 0; m < M; m++)
            y[(size_t)m * ldy + n] =
                avx512_dot(x + (size_t)m * K, w + (size_t)n * K, K) + (bias ? bias[n] : 0.0f);
}

/* ----------------------------------------------------------------------
 * Packed kernels, for many rows of X (documents): W's rows are copied
 * into panels of P columns stored k-major (Wp[k * P + j] = W[n0 + j][k]),
 * so each step broadcasts one element of 6 rows of X against two vectors
 * of the panel: 12 accumulators, no reduction across lanes. The copy
 * costs K x N once per call, against M x N x K for the product.
 * -------------------------------------------------------------------- */

#define PACK_MIN_ROWS 24 /* fewer rows of X: the dot-product kernels */
#define PANEL 16         /* columns of a panel, for every kernel */

size_t gemm_packed_floats(int N, int K) { return (size_t)((N + PANEL - 1) / PANEL) * PANEL * K; }

void gemm_pack(const float *w, int N, int K, float *d) { gemm_pack_rows(w, K, N, K, d); }

void gemm_pack_rows(const float *w, int ldw, int N, int K, float *d)
{
    int np = (N + PANEL - 1) / PANEL;
    for (int b = 0; b < np; b++, d += (size_t)PANEL * K)
        for (int j = 0; j < PANEL; j++) {
            int n = b * PANEL + j;
            const float *r = n < N ? w + (size_t)n * ldw : NULL;
            for (int k = 0; k < K; k++)
                d[(size_t)k * PANEL + j] = r ? r[k] : 0.0f;
        }
}

void gemm_pack_cols(const float *w, int ldw, int N, int K, float *d)
{
    int np = (N + PANEL - 1) / PANEL;
    for (int b = 0; b < np; b++, d += (size_t)PANEL * K) {
        int nv = N - b * PANEL < PANEL ? N - b * PANEL : PANEL;
        for (int k = 0; k < K; k++) {
            float *o = d + (size_t)k * PANEL;
            memcpy(o, w + (size_t)k * ldw + b * PANEL, (size_t)nv * sizeof *o);
            memset(o + nv, 0, (size_t)(PANEL - nv) * sizeof *o);
        }
    }
}

static float *pack_panels(const float *w, int N, int K)
{
    size_t n = gemm_packed_floats(N, K);
    float *p = aligned_alloc(64, (n * sizeof *p + 63) & ~(size_t)63);
    if (p)
        gemm_pack(w, N, K, p);
    return p;
}

/* Rows of X per block: the block stays in L2 while the panels pass. */
static int rows_per_block(int K)
{
    int r = 98304 / (K > 0 ? K : 1);
    r -= r % 6;
    return r < 6 ? 6 : r;
}

/* One row of a tile: X's element broadcast against the two vectors of
 * the panel's columns (V, SET and FMA name the vector type and its
 * operations). */
#define ROW(i)                                                                                 \
    {                                                                                          \
        V a_ = SET(xr[i][k]);                                                                  \
        c[i][0] = FMA(a_, w0, c[i][0]);                                                        \
        c[i][1] = FMA(a_, w1, c[i][1]);                                                        \
    }
#define ROWS6 ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
#define ROWS8 ROWS6 ROW(6) ROW(7)

/* AVX-512: two panels of 16 columns a step (the second absent past N), on
 * tiles of R rows, 6 or 8 (16 accumulators of the 32 registers: fewer
 * loads a multiply-add, and no rows computed in vain for a query's 8 or
 * 16 tokens). */
__attribute__((target("avx512f"))) static void avx512_packed(const float *x, const float *wp,
                                                             const float *bias, float *y, int M,
                                                             int N, int K, int ldy, int R)
{
#define V __m512
#define SET _mm512_set1_ps
#define FMA _mm512_fmadd_ps
    int np = (N + 31) / 32, rb = rows_per_block(K);
    rb = rb < R ? R : rb - rb % R;
    for (int m0 = 0; m0 < M; m0 += rb) {
        int m1 = m0 + rb < M ? m0 + rb : M;
        for (int b = 0; b < np; b++) {
            const float *p0 = wp + (size_t)b * 2 * PANEL * K;
            int n0 = b * 32, nv = N - n0 < 32 ? N - n0 : 32;
            const float *p1 = nv > 16 ? p0 + (size_t)PANEL * K : p0;
            __mmask16 k0 = (__mmask16)(nv >= 16 ? 0xffff : (1u << nv) - 1);
            __mmask16 k1 = (__mmask16)(nv >= 32 ? 0xffff : nv > 16 ? (1u << (nv - 16)) - 1 : 0);
            __m512 b0 = bias ? _mm512_maskz_loadu_ps(k0, bias + n0) : _mm512_setzero_ps();
            __m512 b1 = bias && k1 ? _mm512_maskz_loadu_ps(k1, bias + n0 + 16)
                                   : _mm512_setzero_ps();
            /* A few tiles a panel (a query's rows): the next two panels
             * are fetched into L2 while these are computed, two lines a
             * step of the first tile (the weights stream from memory once
             * a query; without it each pair's first tile waited for them:
             * a 16-token query 5.4 -> 4.4 ms on one core). */
            int left = (N + PANEL - 1) / PANEL - 2 * (b + 1); /* panels after this pair */
            int pf = m1 - m0 <= 4 * R && left > 0 ? (left > 1 ? 2 : 1) : 0; /* lines a step */
            for (int m = m0; m < m1; m += R) {
                int mr = m1 - m < R ? m1 - m : R;
                const float *xr[8];
                __m512 c[8][2];
                for (int i = 0; i < 8; i++) {
                    xr[i] = x + (size_t)(m + (i < mr ? i : 0)) * K;
                    c[i][0] = b0;
                    c[i][1] = b1;
                }
                const char *nx = pf && m == m0 ? (const char *)(p0 + (size_t)2 * PANEL * K) : NULL;
                /* The loop without the prefetches where there are none:
                 * a test a step costs a document's product a few percent. */
#define STEP(ROWS, PREFETCH)                                                                    \
    for (int k = 0; k < K; k++) {                                                               \
        V w0 = _mm512_loadu_ps(p0 + (size_t)k * PANEL);                                         \
        V w1 = _mm512_loadu_ps(p1 + (size_t)k * PANEL);                                         \
        PREFETCH                                                                                \
        ROWS                                                                                    \
    }
#define PF                                                                                      \
    _mm_prefetch(nx + (size_t)k * 64 * pf, _MM_HINT_T1);                                        \
    _mm_prefetch(nx + (size_t)k * 64 * pf + 64 * (pf - 1), _MM_HINT_T1);
                if (R == 8 && nx)
                    STEP(ROWS8, PF)
                else if (R == 8)
                    STEP(ROWS8, )
                else if (nx)
                    STEP(ROWS6, PF)
                else
                    STEP(ROWS6, )
#undef PF
#undef STEP
                for (int i = 0; i < mr; i++) {
                    float *yr = y + (size_t)(m + i) * ldy + n0;
                    _mm512_mask_storeu_ps(yr, k0, c[i][0]);
                    if (k1)
                        _mm512_mask_storeu_ps(yr + 16, k1, c[i][1]);
                }
            }
        }
    }
#undef V
#undef SET
#undef FMA
}

/* Rows of X computed on tiles of R rows. */
static int tiled(int M, int r) { return (M + r - 1) / r * r; }

/* The AVX-512 packed product, on the tile height that computes fewer rows
 * (8 on a tie). */
__attribute__((target("avx512f"))) static void avx512_packed_any(const float *x,
                                                                 const float *wp,
                                                                 const float *bias, float *y,
                                                                 int M, int N, int K, int ldy)
{
    avx512_packed(x, wp, bias, y, M, N, K, ldy, tiled(M, 8) <= tiled(M, 6) ? 8 : 6);
}

__attribute__((target("avx2,fma"))) static void avx2_packed(const float *x, const float *wp,
                                                           const float *bias, float *y, int M,
                                                           int N, int K, int ldy)
{
    /* One panel of 16 columns a step, as two vectors of 8. */
#define V __m256
#define SET _mm256_set1_ps
#define FMA _mm256_fmadd_ps
    int np = (N + PANEL - 1) / PANEL, rb = rows_per_block(K);
    for (int m0 = 0; m0 < M; m0 += rb) {
        int m1 = m0 + rb < M ? m0 + rb : M;
        for (int b = 0; b < np; b++) {
            const float *p0 = wp + (size_t)b * PANEL * K;
            int n0 = b * PANEL, nv = N - n0 < PANEL ? N - n0 : PANEL;
            float bb[16] = {0};
            for (int j = 0; bias && j < nv; j++)
                bb[j] = bias[n0 + j];
            __m256 b0 = _mm256_loadu_ps(bb), b1 = _mm256_loadu_ps(bb + 8);
            int pf = b + 1 < np && m1 - m0 <= 24; /* as avx512_packed: the next panel */
            for (int m = m0; m < m1; m += 6) {
                int mr = m1 - m < 6 ? m1 - m : 6;
                const float *xr[6];
                __m256 c[6][2];
                for (int i = 0; i < 6; i++) {
                    xr[i] = x + (size_t)(m + (i < mr ? i : 0)) * K;
                    c[i][0] = b0;
                    c[i][1] = b1;
                }
                const char *nx = pf && m == m0 ? (const char *)(p0 + (size_t)PANEL * K) : NULL;
#define STEP(PREFETCH)                                                                          \
    for (int k = 0; k < K; k++) {                                                               \
        V w0 = _mm256_loadu_ps(p0 + (size_t)k * PANEL);                                         \
        V w1 = _mm256_loadu_ps(p0 + (size_t)k * PANEL + 8);                                     \
        PREFETCH                                                                                \
        ROWS6                                                                                   \
    }
                if (nx)
                    STEP(_mm_prefetch(nx + (size_t)k * 64, _MM_HINT_T1);)
                else
                    STEP()
#undef STEP
                for (int i = 0; i < mr; i++) {
                    float t[16];
                    _mm256_storeu_ps(t, c[i][0]);
                    _mm256_storeu_ps(t + 8, c[i][1]);
                    memcpy(y + (size_t)(m + i) * ldy + n0, t, (size_t)nv * sizeof *t);
                }
            }
        }
    }
#undef V
#undef SET
#undef FMA
}

#endif

/* ----------------------------------------------------------------------
 * Int8 (gemm_quantize): integer dot products, as dynamic quantization
 * does. W's rows are int8, each scaled by max|row| / 127; each row of X is
 * quantized as it enters a product, to bytes around 128 scaled by its own
 * max|x| / 127. A column is then
 *     y = sx * sw * (sum_k xq wq - 128 sum_k wq) + b,
 * the sums exact in integers, so every kernel gives the reference's. The
 * panels hold 16 columns in groups of 4 k: element (k, j) of panel b at
 * Q[b * 16 * K4 + k / 4 * 64 + j * 4 + k % 4] (K4: K rounded up to 4),
 * what AVX-512 VNNI's dot product takes (4 bytes of a row against 4 of a
 * column, summed into one 32-bit lane: 64 multiply-adds an instruction
 * against 16 in float).
 * -------------------------------------------------------------------- */

#define Q8_MAX_K 8192  /* longer rows stay float */
#define Q8_BLOCK 65536 /* bytes of quantized rows of X a block */
#define Q8_ROWS 256    /* and at most these rows */

static int k4(int K) { return (K + 3) & ~3; }

/* The column's value from its integer sum S (Z = 128 sum_k wq). */
static float q8_post(int32_t s, int32_t z, float sx, float sw, const float *bias)
{
    return fmaf((float)(s - z), sx * sw, bias ? *bias : 0.0f);
}

/* Row X[0..K) into XQ[0..K4) (128 past K); returns its scale. */
static float quantize_row(const float *x, int K, int K4, uint8_t *xq)
{
    float mx = 0;
    for (int k = 0; k < K; k++)
        mx = fabsf(x[k]) > mx ? fabsf(x[k]) : mx;
    float inv = mx > 0 ? 127.0f / mx : 0.0f;
    for (int k = 0; k < K; k++)
        xq[k] = (uint8_t)(lrintf(x[k] * inv) + 128);
    memset(xq + K, 128, (size_t)(K4 - K));
    return mx / 127.0f;
}

#if GEMM_X86
static int has_vnni(void)
{
    static int v = -1;
    int r = __atomic_load_n(&v, __ATOMIC_RELAXED);
    if (r < 0) {
        __builtin_cpu_init();
        r = __builtin_cpu_supports("avx512vnni") ? 1 : 0;
        __atomic_store_n(&v, r, __ATOMIC_RELAXED);
    }
    return r;
}

__attribute__((target("avx512f"))) static float avx512_quantize_row(const float *x, int K, int K4,
                                                                    uint8_t *xq)
{
    __m512 mx = _mm512_setzero_ps();
    int k = 0;
    for (; k + 16 <= K; k += 16)
        mx = _mm512_max_ps(mx, _mm512_abs_ps(_mm512_loadu_ps(x + k)));
    __mmask16 t = (__mmask16)((1u << (K - k)) - 1);
    mx = _mm512_max_ps(mx, _mm512_abs_ps(_mm512_maskz_loadu_ps(t, x + k)));
    float m = _mm512_reduce_max_ps(mx), inv = m > 0 ? 127.0f / m : 0.0f;
    __m512 vi = _mm512_set1_ps(inv);
    __m512i z = _mm512_set1_epi32(128);
    for (k = 0; k + 16 <= K; k += 16) {
        __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + k), vi)), z);
        _mm_storeu_si128((__m128i *)(void *)(xq + k), _mm512_cvtepi32_epi8(q));
    }
    __m512i q = _mm512_add_epi32(
        _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(t, x + k), vi)), z);
    _mm512_mask_cvtepi32_storeu_epi8(xq + k, t, q);
    memset(xq + K, 128, (size_t)(K4 - K));
    return m / 127.0f;
}

/* AVX-512 VNNI: two panels (32 columns) against tiles of 8 rows of XQ
 * (M rows, each K4 bytes, scales SX): 16 accumulators. */
__attribute__((target("avx512f,avx512vnni"))) static void
vnni_q8(const uint8_t *xq, const float *sx, const int8_t *wq, const float *qs,
        const int32_t *qsum, const float *bias, float *y, int M, int N, int K4, int ldy)
{
    for (int n0 = 0; n0 < N; n0 += 32) {
        const int8_t *p0 = wq + (size_t)n0 * K4;
        int nv = N - n0 < 32 ? N - n0 : 32;
        const int8_t *p1 = nv > 16 ? p0 + (size_t)PANEL * K4 : p0;
        __mmask16 k0 = (__mmask16)(nv >= 16 ? 0xffff : (1u << nv) - 1);
        __mmask16 k1 = (__mmask16)(nv >= 32 ? 0xffff : nv > 16 ? (1u << (nv - 16)) - 1 : 0);
        __m512 s0 = _mm512_maskz_loadu_ps(k0, qs + n0), s1 = _mm512_maskz_loadu_ps(k1, qs + n0 + 16);
        __m512i z0 = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(k0, qsum + n0), 7);
        __m512i z1 = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(k1, qsum + n0 + 16), 7);
        __m512 b0 = bias ? _mm512_maskz_loadu_ps(k0, bias + n0) : _mm512_setzero_ps();
        __m512 b1 = bias && k1 ? _mm512_maskz_loadu_ps(k1, bias + n0 + 16) : _mm512_setzero_ps();
        /* A query's few tiles: the next two panels fetched meanwhile, as
         * in avx512_packed. */
        int left = (N + PANEL - 1) / PANEL - (n0 + 32) / PANEL;
        int pf = M <= 32 && left > 0 ? (left > 1 ? 2 : 1) : 0;
        for (int m = 0; m < M; m += 8) {
            int mr = M - m < 8 ? M - m : 8;
            const uint8_t *xr[8];
            __m512i c[8][2];
            for (int i = 0; i < 8; i++) {
                xr[i] = xq + (size_t)(m + (i < mr ? i : 0)) * K4;
                c[i][0] = c[i][1] = _mm512_setzero_si512();
            }
            const char *nx = pf && m == 0 ? (const char *)(p0 + (size_t)2 * PANEL * K4) : NULL;
#define QROW(i)                                                                                \
    {                                                                                          \
        int32_t a4_;                                                                           \
        memcpy(&a4_, xr[i] + k, 4);                                                            \
        __m512i a_ = _mm512_set1_epi32(a4_);                                                   \
        c[i][0] = _mm512_dpbusd_epi32(c[i][0], a_, w0);                                        \
        c[i][1] = _mm512_dpbusd_epi32(c[i][1], a_, w1);                                        \
    }
#define STEP(PREFETCH)                                                                          \
    for (int k = 0; k < K4; k += 4) {                                                           \
        __m512i w0 = _mm512_loadu_si512(p0 + (size_t)k * 16);                                   \
        __m512i w1 = _mm512_loadu_si512(p1 + (size_t)k * 16);                                   \
        PREFETCH                                                                                \
        QROW(0) QROW(1) QROW(2) QROW(3) QROW(4) QROW(5) QROW(6) QROW(7)                         \
    }
            if (nx)
                STEP(_mm_prefetch(nx + (size_t)k * 16 * pf, _MM_HINT_T1);
                     _mm_prefetch(nx + (size_t)k * 16 * pf + 64 * (pf - 1), _MM_HINT_T1);)
            else
                STEP()
#undef STEP
#undef QROW
            for (int i = 0; i < mr; i++) {
                __m512 v = _mm512_set1_ps(sx[m + i]);
                float *yr = y + (size_t)(m + i) * ldy + n0;
                __m512 t0 = _mm512_cvtepi32_ps(_mm512_sub_epi32(c[i][0], z0));
                _mm512_mask_storeu_ps(yr, k0, _mm512_fmadd_ps(t0, _mm512_mul_ps(v, s0), b0));
                if (k1) {
                    __m512 t1 = _mm512_cvtepi32_ps(_mm512_sub_epi32(c[i][1], z1));
                    _mm512_mask_storeu_ps(yr + 16, k1, _mm512_fmadd_ps(t1, _mm512_mul_ps(v, s1), b1));
                }
            }
        }
    }
}

/* AVX2: 16-bit products summed in pairs (exact, unlike the saturating
 * byte form), one panel against tiles of 2 rows: 8 accumulators. */
__attribute__((target("avx2,fma"))) static void avx2_q8(const uint8_t *xq, const float *sx,
                                                        const int8_t *wq, const float *qs,
                                                        const int32_t *qsum, const float *bias,
                                                        float *y, int M, int N, int K4, int ldy)
{
    for (int n0 = 0; n0 < N; n0 += PANEL) {
        const int8_t *p = wq + (size_t)n0 * K4;
        int nv = N - n0 < PANEL ? N - n0 : PANEL;
        for (int m = 0; m < M; m += 2) {
            int mr = M - m < 2 ? M - m : 2;
            const uint8_t *x0 = xq + (size_t)m * K4, *x1 = mr > 1 ? x0 + K4 : x0;
            __m256i c[2][4];
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 4; j++)
                    c[i][j] = _mm256_setzero_si256();
            for (int k = 0; k < K4; k += 4) {
                const int8_t *pk = p + (size_t)k * 16;
                int32_t r0, r1;
                memcpy(&r0, x0 + k, 4);
                memcpy(&r1, x1 + k, 4);
                __m256i a0 = _mm256_cvtepu8_epi16(_mm_set1_epi32(r0));
                __m256i a1 = _mm256_cvtepu8_epi16(_mm_set1_epi32(r1));
                for (int j = 0; j < 4; j++) {
                    __m256i w = _mm256_cvtepi8_epi16(
                        _mm_loadu_si128((const __m128i *)(const void *)(pk + j * 16)));
                    c[0][j] = _mm256_add_epi32(c[0][j], _mm256_madd_epi16(a0, w));
                    c[1][j] = _mm256_add_epi32(c[1][j], _mm256_madd_epi16(a1, w));
                }
            }
            for (int i = 0; i < mr; i++) {
                int32_t s[16];
                /* lanes hold column pairs' halves: add them, back in order */
                __m256i lo = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c[i][0], c[i][1]), 0xd8);
                __m256i hi = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c[i][2], c[i][3]), 0xd8);
                _mm256_storeu_si256((__m256i *)(void *)s, lo);
                _mm256_storeu_si256((__m256i *)(void *)(s + 8), hi);
                float *yr = y + (size_t)(m + i) * ldy + n0;
                for (int j = 0; j < nv; j++)
                    yr[j] = q8_post(s[j], qsum[n0 + j] * 128, sx[m + i], qs[n0 + j],
                                    bias ? bias + n0 + j : NULL);
            }
        }
    }
}
#undef ROW
#undef ROWS6
#undef ROWS8
#endif

static int best(void)
{
#if GEMM_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return GEMM_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return GEMM_AVX2;
#endif
    return GEMM_SCALAR;
}

void gemm_set_kernel(int k)
{
    int b = best(); /* a CPU with AVX-512 has AVX2 too */
    __atomic_store_n(&chosen, k > b ? b : k < 0 ? GEMM_SCALAR : k, __ATOMIC_RELAXED);
}

int gemm_kernel(void)
{
    int k = __atomic_load_n(&chosen, __ATOMIC_RELAXED);
    if (k >= 0)
        return k;
    const char *e = getenv("MNEMO_GEMM");
    k = best();
    if (e && !strcmp(e, "scalar"))
        k = GEMM_SCALAR;
    else if (e && !strcmp(e, "avx2") && k != GEMM_SCALAR)
        k = GEMM_AVX2;
    __atomic_store_n(&chosen, k, __ATOMIC_RELAXED);
    return k;
}

const char *gemm_kernel_name(int k)
{
    return k == GEMM_AVX512 ? "avx512" : k == GEMM_AVX2 ? "avx2" : "scalar";
}

void gemm_nt(const float *x, const float *w, const float *bias, float *y, int M, int N, int K,
             int ldy)
{
    int kern = gemm_kernel();
#if GEMM_X86
    if (kern != GEMM_SCALAR && M >= PACK_MIN_ROWS) {
        float *wp = pack_panels(w, N, K);
        if (wp) {
            if (kern == GEMM_AVX512)
                avx512_packed_any(x, wp, bias, y, M, N, K, ldy);
            else
                avx2_packed(x, wp, bias, y, M, N, K, ldy);
            free(wp);
            return;
        }
    }
#endif
    switch (kern) {
#if GEMM_X86
    case GEMM_AVX512:
        avx512_nt(x, w, bias, y, M, N, K, ldy);
        return;
    case GEMM_AVX2:
        avx2_nt(x, w, bias, y, M, N, K, ldy);
        return;
#endif
    default:
        scalar_nt(x, w, bias, y, M, N, K, ldy);
    }
}

int gemm_prepare(gemm_w *g, const float *w, int N, int K)
{
    memset(g, 0, sizeof *g);
    g->w = w;
    g->N = N;
    g->K = K;
    g->P = 1;
    g->kern = gemm_kernel();
#if GEMM_X86
    if (g->kern != GEMM_SCALAR) {
        if (!(g->own = pack_panels(w, N, K)))
            return MNEMO_NOMEM;
        g->packed = g->own;
        g->P = PANEL;
    }
#endif
    return 0;
}

void gemm_prepare_packed(gemm_w *g, const float *w, const float *packed, int N, int K)
{
    memset(g, 0, sizeof *g);
    g->w = w;
    g->N = N;
    g->K = K;
    g->P = 1;
    g->kern = gemm_kernel();
    if (g->kern != GEMM_SCALAR) {
        g->packed = packed;
        g->P = PANEL;
    }
}

void gemm_release(gemm_w *g)
{
    free(g->own);
    free(g->qown);
    if (g->qs_own)
        free((float *)g->qs);
    g->own = NULL;
    g->packed = NULL;
    g->qown = NULL;
    g->q = NULL;
    g->qs = NULL;
    g->qsum = NULL;
    g->qs_own = 0;
}

/* The reference the int8 kernels are held to. */
static void scalar_q8(const uint8_t *xq, const float *sx, const int8_t *wq, const float *qs,
                      const int32_t *qsum, const float *bias, float *y, int M, int N, int K4,
                      int ldy)
{
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            const int8_t *p = wq + (size_t)(n / PANEL) * PANEL * K4 + n % PANEL * 4;
            const uint8_t *a = xq + (size_t)m * K4;
            int32_t s = 0;
            for (int k = 0; k < K4; k++)
                s += a[k] * p[k / 4 * 64 + k % 4];
            y[(size_t)m * ldy + n] = q8_post(s, qsum[n] * 128, sx[m], qs[n], bias ? bias + n : NULL);
        }
}

size_t gemm_q8_bytes(int N, int K) { return (size_t)((N + PANEL - 1) / PANEL) * PANEL * k4(K); }
size_t gemm_q8_meta(int N) { return 2 * (size_t)((N + PANEL - 1) / PANEL) * PANEL; }

void gemm_quantize_to(const float *w, int N, int K, int8_t *q, float *meta)
{
    int K4 = k4(K), NP = (N + PANEL - 1) / PANEL * PANEL;
    memset(q, 0, gemm_q8_bytes(N, K));
    memset(meta, 0, gemm_q8_meta(N) * sizeof *meta);
    for (int n = 0; n < N; n++) {
        const float *r = w + (size_t)n * K;
        float mx = 0;
        for (int k = 0; k < K; k++)
            mx = fabsf(r[k]) > mx ? fabsf(r[k]) : mx;
        float inv = mx > 0 ? 127.0f / mx : 0.0f;
        int8_t *p = q + (size_t)(n / PANEL) * PANEL * K4 + n % PANEL * 4;
        int32_t sum = 0;
        for (int k = 0; k < K; k++) {
            int8_t v = (int8_t)lrintf(r[k] * inv);
            p[k / 4 * 64 + k % 4] = v;
            sum += v;
        }
        meta[n] = mx / 127.0f;
        memcpy(meta + NP + n, &sum, sizeof sum);
    }
}

void gemm_prepare_q8(gemm_w *g, const int8_t *q, const float *meta)
{
    gemm_release(g); /* the float panels, or int8 ones made before */
    g->q = q;
    g->qs = meta;
    g->qsum = (const int32_t *)(const void *)(meta + gemm_q8_meta(g->N) / 2);
    g->qs_own = 0;
    g->P = PANEL;
}

int gemm_quantize(gemm_w *g)
{
    int N = g->N, K = g->K;
    if (K > Q8_MAX_K)
        return MNEMO_OK; /* stays float */
    size_t nq = gemm_q8_bytes(N, K);
    int8_t *q = aligned_alloc(64, (nq + 63) & ~(size_t)63);
    float *meta = malloc(gemm_q8_meta(N) * sizeof *meta);
    if (!q || !meta) {
        free(q);
        free(meta);
        return MNEMO_NOMEM;
    }
    gemm_quantize_to(g->w, N, K, q, meta);
    gemm_prepare_q8(g, q, meta);
    g->qown = q;
    g->qs_own = 1;
    return MNEMO_OK;
}

/* G's int8 product for rows of X, a block of rows quantized at a time. */
static void run_q8(const gemm_w *g, const float *x, const float *bias, float *y, int M, int ldy,
                   int n0, int n1)
{
    int K = g->K, K4 = k4(K), kern = gemm_kernel();
    int rb = Q8_BLOCK / K4;
    rb = rb > Q8_ROWS ? Q8_ROWS : rb - rb % 8;
    uint8_t xq[Q8_BLOCK];
    float sx[Q8_ROWS];
    const int8_t *wq = g->q + (size_t)(n0 / PANEL) * PANEL * K4;
    bias = bias ? bias + n0 : NULL;
    for (int m0 = 0; m0 < M; m0 += rb) {
        int mb = M - m0 < rb ? M - m0 : rb;
        const float *xm = x + (size_t)m0 * K;
        float *ym = y + (size_t)m0 * ldy + n0;
#if GEMM_X86
        if (kern == GEMM_AVX512) {
            for (int i = 0; i < mb; i++)
                sx[i] = avx512_quantize_row(xm + (size_t)i * K, K, K4, xq + (size_t)i * K4);
            if (has_vnni())
                vnni_q8(xq, sx, wq, g->qs + n0, g->qsum + n0, bias, ym, mb, n1 - n0, K4, ldy);
            else
                avx2_q8(xq, sx, wq, g->qs + n0, g->qsum + n0, bias, ym, mb, n1 - n0, K4, ldy);
            continue;
        }
#endif
        for (int i = 0; i < mb; i++)
            sx[i] = quantize_row(xm + (size_t)i * K, K, K4, xq + (size_t)i * K4);
#if GEMM_X86
        if (kern == GEMM_AVX2) {
            avx2_q8(xq, sx, wq, g->qs + n0, g->qsum + n0, bias, ym, mb, n1 - n0, K4, ldy);
            continue;
        }
#endif
        scalar_q8(xq, sx, wq, g->qs + n0, g->qsum + n0, bias, ym, mb, n1 - n0, K4, ldy);
    }
}

int gemm_cols_align(const gemm_w *g) { return g->P > 1 ? 32 : 1; }

void gemm_run(const gemm_w *g, const float *x, const float *bias, float *y, int M, int ldy,
              int n0, int n1)
{
    if (n0 >= n1)
        return;
    if (g->q) {
        run_q8(g, x, bias, y, M, ldy, n0, n1);
        return;
    }
#if GEMM_X86
    if (g->packed && g->kern == gemm_kernel()) {
        const float *wp = g->packed + (size_t)(n0 / g->P) * g->P * g->K;
        if (g->kern == GEMM_AVX512)
            avx512_packed_any(x, wp, bias ? bias + n0 : NULL, y + n0, M, n1 - n0, g->K, ldy);
        else
            avx2_packed(x, wp, bias ? bias + n0 : NULL, y + n0, M, n1 - n0, g->K, ldy);
        return;
    }
#endif
    gemm_nt(x, g->w + (size_t)n0 * g->K, bias ? bias + n0 : NULL, y + n0, M, n1 - n0, g->K, ldy);
}

#define KV_PACK 24 /* keys from which the panels pay */

size_t gemm_kv_floats(int maxn, int dh)
{
    return (size_t)((maxn + PANEL - 1) / PANEL * PANEL) * ((dh + PANEL - 1) / PANEL * PANEL);
}

void gemm_kv_prepare(gemm_kv *a, const float *k, const float *v, int ld, int n, int dh,
                     float *kb, float *vb)
{
    a->kb = kb;
    a->vb = vb;
    a->n = n;
    a->dh = dh;
    a->packed = gemm_kernel() != GEMM_SCALAR && n >= KV_PACK;
    if (a->packed) {
        gemm_pack_rows(k, ld, n, dh, kb);
        gemm_pack_cols(v, ld, dh, n, vb);
        gemm_prepare_packed(&a->k, NULL, kb, n, dh);
        gemm_prepare_packed(&a->v, NULL, vb, dh, n);
        return;
    }
    for (int j = 0; j < n; j++) {
        memcpy(kb + (size_t)j * dh, k + (size_t)j * ld, (size_t)dh * sizeof *kb);
        for (int d = 0; d < dh; d++)
            vb[(size_t)d * n + j] = v[(size_t)j * ld + d];
    }
}

void gemm_kv_scores(const gemm_kv *a, const float *q, int rows, float *sc)
{
    if (a->packed)
        gemm_run(&a->k, q, NULL, sc, rows, a->n, 0, a->n);
    else
        gemm_nt(q, a->kb, NULL, sc, rows, a->n, a->dh, a->n);
}

void gemm_kv_context(const gemm_kv *a, const float *p, int rows, float *ctx, int ldc)
{
    if (a->packed)
        gemm_run(&a->v, p, NULL, ctx, rows, ldc, 0, a->dh);
    else
        gemm_nt(p, a->vb, NULL, ctx, rows, a->dh, a->n, ldc);
}

float gemm_dot(const float *a, const float *b, int n)
{
    switch (gemm_kernel()) {
#if GEMM_X86
    case GEMM_AVX512:
        return avx512_dot(a, b, n);
    case GEMM_AVX2:
        return avx2_dot(a, b, n);
#endif
    default:
        return scalar_dot(a, b, n);
    }
}

/* ----------------------------------------------------------------------
 * Element-wise kernels: GELU and softmax. exp is a degree-6 polynomial of
 * the remainder after powers of two (relative error about 2e-7); erf is
 * Abramowitz and Stegun's 7.1.26 (absolute error below 1.5e-7), written
 * once per width with the same constants as the scalar form.
 * -------------------------------------------------------------------- */

#define EXP_HI 88.3762626647949f
#define EXP_LO (-87.3365447504f)
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO (-2.12194440e-4f)
#define ERF_P 0.3275911f
#define ERF_A1 0.254829592f
#define ERF_A2 (-0.284496736f)
#define ERF_A3 1.421413741f
#define ERF_A4 (-1.453152027f)
#define ERF_A5 1.061405429f

static float exp_poly(float r)
{
    return 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 +
                                                                               r * (1.0f / 720))))));
}

static float scalar_exp(float x)
{
    x = x > EXP_HI ? EXP_HI : x < EXP_LO ? EXP_LO : x;
    float n = nearbyintf(x * LOG2E);
    float r = x - n * LN2_HI;
    r -= n * LN2_LO;
    return ldexpf(exp_poly(r), (int)n);
}

static float scalar_gelu(float x)
{
    float z = fabsf(x) * 0.70710678118654752f;
    float t = 1.0f / (1.0f + ERF_P * z);
    float y = 1.0f - ((((ERF_A5 * t + ERF_A4) * t + ERF_A3) * t + ERF_A2) * t + ERF_A1) * t *
                         scalar_exp(-z * z);
    float erf = x < 0 ? -y : y;
    return 0.5f * x * (1.0f + erf);
}

#if GEMM_X86
__attribute__((target("avx512f"))) static inline __m512 exp512(__m512 x)
{
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(EXP_LO)), _mm512_set1_ps(EXP_HI));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_HI), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_LO), r);
    __m512 p = _mm512_set1_ps(1.0f / 720);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

__attribute__((target("avx512f"))) static inline __m512 gelu512(__m512 x)
{
    __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678118654752f));
    __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f),
                             _mm512_fmadd_ps(z, _mm512_set1_ps(ERF_P), _mm512_set1_ps(1.0f)));
    __m512 q = _mm512_fmadd_ps(_mm512_set1_ps(ERF_A5), t, _mm512_set1_ps(ERF_A4));
    q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(ERF_A3));
    q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(ERF_A2));
    q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(ERF_A1));
    q = _mm512_mul_ps(q, t);
    __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(z, z)));
    __m512 y = _mm512_fnmadd_ps(q, e, _mm512_set1_ps(1.0f));
    __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    y = _mm512_mask_sub_ps(y, neg, _mm512_setzero_ps(), y);
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x),
                         _mm512_add_ps(_mm512_set1_ps(1.0f), y));
}

__attribute__((target("avx2,fma"))) static inline __m256 exp256(__m256 x)
{
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(EXP_LO)), _mm256_set1_ps(EXP_HI));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_HI), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_LO), r);
    __m256 p = _mm256_set1_ps(1.0f / 720);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    /* 2^n: n + 127 into the exponent (n is within -126..127 here). */
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)),
                                  23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

__attribute__((target("avx2,fma"))) static inline __m256 gelu256(__m256 x)
{
    __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 z = _mm256_mul_ps(_mm256_andnot_ps(sign, x), _mm256_set1_ps(0.70710678118654752f));
    __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f),
                             _mm256_fmadd_ps(z, _mm256_set1_ps(ERF_P), _mm256_set1_ps(1.0f)));
    __m256 q = _mm256_fmadd_ps(_mm256_set1_ps(ERF_A5), t, _mm256_set1_ps(ERF_A4));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(ERF_A3));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(ERF_A2));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(ERF_A1));
    q = _mm256_mul_ps(q, t);
    __m256 e = exp256(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(z, z)));
    __m256 y = _mm256_fnmadd_ps(q, e, _mm256_set1_ps(1.0f));
    y = _mm256_or_ps(y, _mm256_and_ps(sign, x)); /* erf(-x) = -erf(x) */
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x),
                         _mm256_add_ps(_mm256_set1_ps(1.0f), y));
}

__attribute__((target("avx512f"))) static void gelu_avx512(float *x, int n)
{
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(x + i, gelu512(_mm512_loadu_ps(x + i)));
    if (i < n) {
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(x + i, k, gelu512(_mm512_maskz_loadu_ps(k, x + i)));
    }
}

__attribute__((target("avx2,fma"))) static void gelu_avx2(float *x, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, gelu256(_mm256_loadu_ps(x + i)));
    for (; i < n; i++)
        x[i] = scalar_gelu(x[i]);
}

/* GELU's tanh form: 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)),
 * u = sqrt(2 / pi) (x + 0.044715 x^3); the exponent clamped as exp512's. */
#define GELU_C2 (-2.0f * 0.7978845608028654f)
__attribute__((target("avx512f"))) static void gelu_tanh_avx512(float *x, int n)
{
    for (int i = 0; i < n; i += 16) {
        __mmask16 k = (__mmask16)0xffff;
        if (n - i < 16)
            k = (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(k, x + i);
        __m512 v3 = _mm512_mul_ps(_mm512_mul_ps(v, v), v);
        __m512 u = _mm512_fmadd_ps(v3, _mm512_set1_ps(0.044715f), v);
        __m512 e = exp512(_mm512_mul_ps(u, _mm512_set1_ps(GELU_C2)));
        _mm512_mask_storeu_ps(x + i, k,
                              _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), e)));
    }
}

__attribute__((target("avx2,fma"))) static void gelu_tanh_avx2(float *x, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 v3 = _mm256_mul_ps(_mm256_mul_ps(v, v), v);
        __m256 u = _mm256_fmadd_ps(v3, _mm256_set1_ps(0.044715f), v);
        __m256 e = exp256(_mm256_mul_ps(u, _mm256_set1_ps(GELU_C2)));
        _mm256_storeu_ps(x + i, _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), e)));
    }
    for (; i < n; i++)
        x[i] = 0.5f * x[i] *
               (1.0f + tanhf(0.7978845608028654f * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
}

/* exp(X[i] - MAX) in place, their sum returned. */
__attribute__((target("avx512f"))) static float expsum_avx512(float *x, int n, float max)
{
    __m512 s = _mm512_setzero_ps(), m = _mm512_set1_ps(max);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + i), m));
        _mm512_storeu_ps(x + i, e);
        s = _mm512_add_ps(s, e);
    }
    float r = _mm512_reduce_add_ps(s);
    for (; i < n; i++)
        r += x[i] = scalar_exp(x[i] - max);
    return r;
}

__attribute__((target("avx2,fma"))) static float expsum_avx2(float *x, int n, float max)
{
    __m256 s = _mm256_setzero_ps(), m = _mm256_set1_ps(max);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
        _mm256_storeu_ps(x + i, e);
        s = _mm256_add_ps(s, e);
    }
    float r = hsum8(s);
    for (; i < n; i++)
        r += x[i] = scalar_exp(x[i] - max);
    return r;
}
#endif

void gemm_gelu(float *x, int n)
{
    switch (gemm_kernel()) {
#if GEMM_X86
    case GEMM_AVX512:
        gelu_avx512(x, n);
        return;
    case GEMM_AVX2:
        gelu_avx2(x, n);
        return;
#endif
    default:
        for (int i = 0; i < n; i++)
            x[i] = scalar_gelu(x[i]);
    }
}

#if GEMM_X86
/* X[0..N) *= K; returns the largest (the scale pass of softmax). */
__attribute__((target("avx512f"))) static float scalemax_avx512(float *x, int n, float k)
{
    __m512 vk = _mm512_set1_ps(k), mx = _mm512_set1_ps(-INFINITY);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + i), vk);
        _mm512_storeu_ps(x + i, v);
        mx = _mm512_max_ps(mx, v);
    }
    float r = _mm512_reduce_max_ps(mx);
    for (; i < n; i++) {
        x[i] *= k;
        r = x[i] > r ? x[i] : r;
    }
    return r;
}

__attribute__((target("avx512f"))) static void scale_avx512(float *x, int n, float k)
{
    __m512 vk = _mm512_set1_ps(k);
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), vk));
    for (; i < n; i++)
        x[i] *= k;
}
#endif

#if GEMM_X86
__attribute__((target("avx512f"))) static void layernorm_avx512(float *y, const float *g,
                                                                const float *beta, int n,
                                                                float eps)
{
    __m512 s = _mm512_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16)
        s = _mm512_add_ps(s, _mm512_loadu_ps(y + i));
    double sum = _mm512_reduce_add_ps(s);
    for (int j = i; j < n; j++)
        sum += y[j];
    float mu = (float)(sum / n);
    __m512 vm = _mm512_set1_ps(mu), q = _mm512_setzero_ps();
    for (i = 0; i + 16 <= n; i += 16) {
        __m512 d = _mm512_sub_ps(_mm512_loadu_ps(y + i), vm);
        q = _mm512_fmadd_ps(d, d, q);
    }
    double var = _mm512_reduce_add_ps(q);
    for (int j = i; j < n; j++)
        var += (double)(y[j] - mu) * (y[j] - mu);
    float inv = (float)(1.0 / sqrt(var / n + eps));
    __m512 vi = _mm512_set1_ps(inv);
    for (i = 0; i + 16 <= n; i += 16) {
        __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(y + i), vm), vi);
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(d, _mm512_loadu_ps(g + i), _mm512_loadu_ps(beta + i)));
    }
    for (; i < n; i++)
        y[i] = (y[i] - mu) * inv * g[i] + beta[i];
}
#endif

void gemm_layernorm(float *y, const float *g, const float *beta, int n, float eps)
{
#if GEMM_X86
    if (gemm_kernel() == GEMM_AVX512) {
        layernorm_avx512(y, g, beta, n, eps);
        return;
    }
#endif
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++)
        mean += y[i];
    mean /= n;
    for (int i = 0; i < n; i++)
        var += (y[i] - mean) * (y[i] - mean);
    var /= n;
    float inv = (float)(1.0 / sqrt(var + eps)), mu = (float)mean;
    for (int i = 0; i < n; i++)
        y[i] = (y[i] - mu) * inv * g[i] + beta[i];
}

void gemm_softmax(float *x, int n, float scale)
{
    if (n <= 0)
        return;
    float mx = -INFINITY;
#if GEMM_X86
    if (gemm_kernel() == GEMM_AVX512) {
        mx = scalemax_avx512(x, n, scale);
        scale_avx512(x, n, 1.0f / expsum_avx512(x, n, mx));
        return;
    }
#endif
    for (int i = 0; i < n; i++) {
        x[i] *= scale;
        mx = x[i] > mx ? x[i] : mx;
    }
    float sum;
    switch (gemm_kernel()) {
#if GEMM_X86
    case GEMM_AVX2:
        sum = expsum_avx2(x, n, mx);
        break;
#endif
    default:
        sum = 0;
        for (int i = 0; i < n; i++)
            sum += x[i] = scalar_exp(x[i] - mx);
    }
    float inv = 1.0f / sum;
    for (int i = 0; i < n; i++)
        x[i] *= inv;
}

void gemm_gelu_tanh(float *x, int n)
{
    /* 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), as PyTorch's
     * gelu(approximate="tanh") and ggml's gelu. */
    switch (gemm_kernel()) {
#if GEMM_X86
    case GEMM_AVX512:
        gelu_tanh_avx512(x, n);
        return;
    case GEMM_AVX2:
        gelu_tanh_avx2(x, n);
        return;
#endif
    default:
        break;
    }
    for (int i = 0; i < n; i++) {
        float v = x[i];
        x[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    }
}
