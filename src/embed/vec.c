/*
 * vec.c - dot-product kernels and top-k scans (see vec.h).
 *
 * The AVX2 kernels use four independent accumulators so that FMA latency
 * does not serialise the loop; at 384 dimensions a row is 1.5 KiB and the
 * scan is bound by memory bandwidth, not arithmetic. Threads each keep their
 * own heap and statistics, merged at the end.
 */
#include "embed/vec.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VEC_X86 1
#endif

#define PARALLEL_MIN_FLOATS (4u << 20) /* below 16 MiB one thread is faster */
#define MAX_THREADS 8

/* ----------------------------------------------------------------------
 * Kernels
 * -------------------------------------------------------------------- */

float vec_dot_f32_scalar(const float *a, const float *b, size_t n)
{
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
    for (; i < n; i++)
        s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

int32_t vec_dot_i8_scalar(const int8_t *a, const int8_t *b, size_t n)
{
    int32_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += (int32_t)a[i] * (int32_t)b[i];
    return s;
}

#ifdef VEC_X86
__attribute__((target("avx2,fma"))) static float dot_f32_avx2(const float *a, const float *b,
                                                               size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
    float r = _mm_cvtss_f32(h);
    for (; i < n; i++)
        r += a[i] * b[i];
    return r;
}

__attribute__((target("avx2"))) static int32_t dot_i8_avx2(const int8_t *a, const int8_t *b,
                                                            size_t n)
{
    __m256i acc = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i x = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(a + i)));
        __m256i y = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(b + i)));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x, y));
    }
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1));
    int32_t r = _mm_cvtsi128_si32(h);
    for (; i < n; i++)
        r += (int32_t)a[i] * (int32_t)b[i];
    return r;
}
#endif

typedef float (*dot_f32_fn)(const float *, const float *, size_t);
typedef int32_t (*dot_i8_fn)(const int8_t *, const int8_t *, size_t);

static int force_scalar;

void vec_use_scalar(int on) { force_scalar = on; }

int vec_simd(void)
{
#ifdef VEC_X86
    return !force_scalar && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

static dot_f32_fn pick_f32(void)
{
#ifdef VEC_X86
    if (vec_simd())
        return dot_f32_avx2;
#endif
    return vec_dot_f32_scalar;
}

static dot_i8_fn pick_i8(void)
{
#ifdef VEC_X86
    if (vec_simd())
        return dot_i8_avx2;
#endif
    return vec_dot_i8_scalar;
}

float vec_dot_f32(const float *a, const float *b, size_t n) { return pick_f32()(a, b, n); }
int32_t vec_dot_i8(const int8_t *a, const int8_t *b, size_t n) { return pick_i8()(a, b, n); }

float vec_normalize(float *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)v[i] * v[i];
    float norm = (float)sqrt(s);
    if (norm > 0)
        for (size_t i = 0; i < n; i++)
            v[i] /= norm;
    return norm;
}

void vec_quantize(const float *v, size_t n, int8_t *q, float *scale)
{
    float mx = 0;
    for (size_t i = 0; i < n; i++)
        if (fabsf(v[i]) > mx)
            mx = fabsf(v[i]);
    float s = mx > 0 ? mx / 127.0f : 1.0f;
    for (size_t i = 0; i < n; i++) {
        long r = lroundf(v[i] / s);
        q[i] = (int8_t)(r > 127 ? 127 : r < -127 ? -127 : r);
    }
    *scale = s;
}

/* ----------------------------------------------------------------------
 * Top-k: a min-heap of the best K so far
 * -------------------------------------------------------------------- */

typedef struct heap {
    vec_hit *v;
    size_t n, k;
} heap;

static int worse(const vec_hit *a, const vec_hit *b)
{
    return a->score < b->score || (a->score == b->score && a->row > b->row);
}

static void sift_down(heap *h, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && worse(&h->v[l], &h->v[m]))
            m = l;
        if (r < h->n && worse(&h->v[r], &h->v[m]))
            m = r;
        if (m == i)
            return;
        vec_hit t = h->v[i];
        h->v[i] = h->v[m];
        h->v[m] = t;
        i = m;
    }
}

static void offer(heap *h, uint32_t row, float score)
{
    vec_hit x = {row, score};
    if (h->n < h->k) {
        size_t i = h->n++;
        h->v[i] = x;
        while (i > 0) {
            size_t p = (i - 1) / 2;
            if (!worse(&h->v[i], &h->v[p]))
                break;
            vec_hit t = h->v[i];
            h->v[i] = h->v[p];
            h->v[p] = t;
            i = p;
        }
    } else if (h->k && worse(&h->v[0], &x)) {
        h->v[0] = x;
        sift_down(h, 0);
    }
}

static int by_score(const void *a, const void *b)
{
    const vec_hit *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* ----------------------------------------------------------------------
 * Scans
 * -------------------------------------------------------------------- */

typedef struct part {
    const float *m;
    const int8_t *m8;
    const float *scales;
    const float *q;
    const int8_t *q8;
    float qscale;
    size_t from, to, dims;
    heap h;
    vec_stats st;
} part;

static void *scan_f32(void *arg)
{
    part *p = arg;
    dot_f32_fn dot = pick_f32();
    double sum = 0, sumsq = 0;
    for (size_t r = p->from; r < p->to; r++) {
        float s = dot(p->m + r * p->dims, p->q, p->dims);
        sum += s;
        sumsq += (double)s * s;
        if (p->h.n < p->h.k || s > p->h.v[0].score)
            offer(&p->h, (uint32_t)r, s);
    }
    p->st.sum = sum;
    p->st.sumsq = sumsq;
    p->st.n = p->to - p->from;
    return NULL;
}

static void *scan_i8(void *arg)
{
    part *p = arg;
    dot_i8_fn dot = pick_i8();
    for (size_t r = p->from; r < p->to; r++) {
        float s = (float)dot(p->m8 + r * p->dims, p->q8, p->dims) * p->scales[r] * p->qscale;
        if (p->h.n < p->h.k || s > p->h.v[0].score)
            offer(&p->h, (uint32_t)r, s);
    }
    return NULL;
}

static size_t run_parts(part *tmpl, size_t count, size_t k, int threads, void *(*fn)(void *),
                        vec_hit *out, vec_stats *st)
{
    if (threads <= 0)
        threads = count * tmpl->dims >= PARALLEL_MIN_FLOATS ? 2 : 1;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if ((size_t)threads > count)
        threads = count ? (int)count : 1;
    part parts[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    vec_hit *bufs = malloc((size_t)threads * (k ? k : 1) * sizeof *bufs);
    if (!bufs)
        threads = 1;
    size_t got = 0;
    int started[MAX_THREADS] = {0};
    for (int t = 0; t < threads; t++) {
        parts[t] = *tmpl;
        parts[t].from = count * (size_t)t / (size_t)threads;
        parts[t].to = count * (size_t)(t + 1) / (size_t)threads;
        parts[t].h.v = bufs ? bufs + (size_t)t * (k ? k : 1) : out;
        parts[t].h.n = 0;
        parts[t].h.k = k;
        memset(&parts[t].st, 0, sizeof parts[t].st);
        if (t > 0 && pthread_create(&tid[t], NULL, fn, &parts[t]) == 0)
            started[t] = 1;
    }
    fn(&parts[0]);
    for (int t = 1; t < threads; t++) {
        if (started[t])
            pthread_join(tid[t], NULL);
        else
            fn(&parts[t]); /* could not start a thread: do its share here */
    }
    /* Merge the per-thread heaps. */
    heap all = {out, 0, k};
    vec_stats total = {0, 0, 0};
    for (int t = 0; t < threads; t++) {
        for (size_t i = 0; i < parts[t].h.n; i++)
            if (parts[t].h.v != out)
                offer(&all, parts[t].h.v[i].row, parts[t].h.v[i].score);
        total.sum += parts[t].st.sum;
        total.sumsq += parts[t].st.sumsq;
        total.n += parts[t].st.n;
    }
    got = bufs ? all.n : parts[0].h.n;
    free(bufs);
    qsort(out, got, sizeof *out, by_score);
    if (st)
        *st = total;
    return got;
}

size_t vec_topk_f32(const float *m, size_t count, size_t dims, const float *q, size_t k,
                    vec_hit *out, vec_stats *st, int threads)
{
    part p;
    memset(&p, 0, sizeof p);
    p.m = m;
    p.q = q;
    p.dims = dims;
    return run_parts(&p, count, k, threads, scan_f32, out, st);
}

size_t vec_topk_i8(const int8_t *m, const float *scales, size_t count, size_t dims,
                   const int8_t *q, float qscale, size_t k, vec_hit *out, int threads)
{
    part p;
    memset(&p, 0, sizeof p);
    p.m8 = m;
    p.scales = scales;
    p.q8 = q;
    p.qscale = qscale;
    p.dims = dims;
    return run_parts(&p, count, k, threads, scan_i8, out, NULL);
}
