/*
 * vecbench.c - vector scan throughput against a plain memory-read baseline
 * measured in the same run, float32 and int8, one and two threads.
 *
 *   vecbench [ROWS] [DIMS]        (default 100000 384)
 *
 * The baseline sums every float of the matrix with AVX2 (or scalar) loads:
 * the fastest this machine reads that memory. A scan reads the same bytes
 * and also multiplies and keeps a top-k heap.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <pthread.h>

#include "embed/vec.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct span {
    const float *p;
    size_t n;
    float out;
} span;

#if defined(__x86_64__)
__attribute__((target("avx2"))) static void *sum_avx2(void *arg)
{
    span *s = arg;
    __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps(), c = _mm256_setzero_ps(),
           d = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= s->n; i += 32) {
        a = _mm256_add_ps(a, _mm256_loadu_ps(s->p + i));
        b = _mm256_add_ps(b, _mm256_loadu_ps(s->p + i + 8));
        c = _mm256_add_ps(c, _mm256_loadu_ps(s->p + i + 16));
        d = _mm256_add_ps(d, _mm256_loadu_ps(s->p + i + 24));
    }
    float t[8];
    _mm256_storeu_ps(t, _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d)));
    s->out = t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
    return NULL;
}
#endif

static double baseline(const float *m, size_t n, int threads)
{
    span sp[2] = {{m, n / 2, 0}, {m + n / 2, n - n / 2, 0}};
    span one = {m, n, 0};
    double t0 = now();
#if defined(__x86_64__)
    if (threads == 2) {
        pthread_t t;
        pthread_create(&t, NULL, sum_avx2, &sp[1]);
        sum_avx2(&sp[0]);
        pthread_join(t, NULL);
    } else {
        sum_avx2(&one);
    }
#endif
    double dt = now() - t0;
    volatile float sink = sp[0].out + sp[1].out + one.out;
    (void)sink;
    return dt;
}

static double best_of(int reps, double (*fn)(void *), void *ud)
{
    double best = 1e9;
    for (int r = 0; r < reps; r++) {
        double t = fn(ud);
        if (t < best)
            best = t;
    }
    return best;
}

typedef struct job {
    const float *m;
    const int8_t *m8;
    const float *scales;
    size_t rows, dims;
    const float *q;
    const int8_t *q8;
    float qs;
    int threads;
} job;

static double run_base(void *ud)
{
    job *j = ud;
    return baseline(j->m, j->rows * j->dims, j->threads);
}

static double run_f32(void *ud)
{
    job *j = ud;
    vec_hit hits[10];
    double t0 = now();
    vec_topk_f32(j->m, j->rows, j->dims, j->q, 10, hits, NULL, j->threads);
    return now() - t0;
}

static double run_i8(void *ud)
{
    job *j = ud;
    vec_hit hits[40];
    double t0 = now();
    vec_topk_i8(j->m8, j->scales, j->rows, j->dims, j->q8, j->qs, 40, hits, j->threads);
    return now() - t0;
}

int main(int argc, char **argv)
{
    size_t rows = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
    size_t dims = argc > 2 ? strtoull(argv[2], NULL, 10) : 384;
    float *m = malloc(rows * dims * sizeof *m);
    int8_t *m8 = malloc(rows * dims);
    float *scales = malloc(rows * sizeof *scales);
    float *q = malloc(dims * sizeof *q);
    int8_t *q8 = malloc(dims);
    if (!m || !m8 || !scales || !q || !q8) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    uint64_t r = 88172645463325252ull;
    for (size_t i = 0; i < rows * dims; i++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        m[i] = (float)((double)(r >> 11) / 9007199254740992.0 - 0.5);
    }
    for (size_t i = 0; i < rows; i++) {
        vec_normalize(m + i * dims, dims);
        vec_quantize(m + i * dims, dims, m8 + i * dims, &scales[i]);
    }
    memcpy(q, m, dims * sizeof *q);
    float qs;
    vec_quantize(q, dims, q8, &qs);
    double gb = (double)(rows * dims * sizeof(float)) / 1e9;
    printf("matrix %zu x %zu float32 = %.2f GB, kernels: %s\n", rows, dims, gb,
           vec_simd() ? "avx2+fma" : "scalar");
    for (int threads = 1; threads <= 2; threads++) {
        job j = {m, m8, scales, rows, dims, q, q8, qs, threads};
        int reps = rows * dims > 100000000 ? 3 : 10;
        double tb = best_of(reps, run_base, &j);
        double tf = best_of(reps, run_f32, &j);
        double ti = best_of(reps, run_i8, &j);
        printf("%d thread%s: read baseline %.1f GB/s | f32 scan %.1f ms = %.1f GB/s (%.0f%% of "
               "baseline) | int8 scan %.1f ms (%.1fx faster than f32)\n",
               threads, threads > 1 ? "s" : " ", gb / tb, tf * 1000, gb / tf, tb / tf * 100,
               ti * 1000, tf / ti);
    }
    vec_use_scalar(1);
    job j = {m, m8, scales, rows, dims, q, q8, qs, 1};
    double ts = best_of(3, run_f32, &j);
    printf("scalar kernel, 1 thread: f32 scan %.1f ms = %.1f GB/s\n", ts * 1000, gb / ts);
    free(m);
    free(m8);
    free(scales);
    free(q);
    free(q8);
    return 0;
}
