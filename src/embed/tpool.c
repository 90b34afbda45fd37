/*
 * tpool.c - the encoders' thread pool and parallel linear step (see
 * tpool.h).
 */
#include "embed/tpool.h"

#include <stdlib.h>
#include <string.h>

#include "mnemo.h"

typedef struct tpool_arg {
    tpool *p;
    int slot;
} tpool_arg;

static _Thread_local int worker_slot;

int tpool_slot(void) { return worker_slot; }

static void drain(tpool *p)
{
    for (;;) {
        int t = atomic_fetch_add(&p->next, 1);
        if (t >= p->ntasks)
            return;
        p->fn(p->ctx, t);
    }
}

static void *worker(void *arg)
{
    tpool_arg *wa = arg;
    tpool *p = wa->p;
    worker_slot = wa->slot;
    unsigned seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->gen == seen)
            pthread_cond_wait(&p->go, &p->mu);
        if (p->quit)
            break;
        seen = p->gen;
        pthread_mutex_unlock(&p->mu);
        drain(p);
        pthread_mutex_lock(&p->mu);
        if (--p->active == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

void tpool_start(tpool *p, int workers)
{
    p->started = 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    if (workers <= 0 || !(p->th = calloc((size_t)workers, sizeof *p->th)) ||
        !(p->args = calloc((size_t)workers, sizeof *p->args)))
        return;
    for (int i = 0; i < workers; i++) {
        p->args[i].p = p;
        p->args[i].slot = i + 1;
        if (pthread_create(&p->th[i], NULL, worker, &p->args[i]) != 0)
            break;
        p->n++;
    }
}

void tpool_stop(tpool *p)
{
    if (!p->started)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n; i++)
        pthread_join(p->th[i], NULL);
    free(p->th);
    free(p->args);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
}

void tpool_run(tpool *p, tpool_fn fn, void *ctx, int ntasks)
{
    if (p->n == 0 || ntasks <= 1) {
        for (int t = 0; t < ntasks; t++)
            fn(ctx, t);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->ntasks = ntasks;
    atomic_store(&p->next, 0);
    p->active = p->n;
    p->gen++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    drain(p);
    pthread_mutex_lock(&p->mu);
    while (p->active > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

/* ----------------------------------------------------------------------
 * The linear step
 * -------------------------------------------------------------------- */

typedef struct lin {
    const float *x, *bias;
    const gemm_w *w;
    float *y;
    int M, N, K, chunk, post, rowsplit;
} lin;

/* One task: columns N0..N1 of every row, or with ROWSPLIT every column of
 * rows M0..M1 (many rows: each task then reads the weights once instead
 * of every task all rows). */
static void linear_task(void *ud, int t)
{
    lin *f = ud;
    int m0 = 0, m1 = f->M, n0 = 0, n1 = f->N;
    if (f->rowsplit) {
        m0 = t * f->chunk;
        m1 = m0 + f->chunk > f->M ? f->M : m0 + f->chunk;
    } else {
        n0 = t * f->chunk;
        n1 = n0 + f->chunk > f->N ? f->N : n0 + f->chunk;
    }
    if (n0 >= n1 || m0 >= m1)
        return;
    gemm_run(f->w, f->x + (size_t)m0 * f->K, f->bias, f->y + (size_t)m0 * f->N, m1 - m0, f->N,
             n0, n1);
    if (f->post != TPOOL_PLAIN)
        for (int m = m0; m < m1; m++) {
            float *r = f->y + (size_t)m * f->N + n0;
            if (f->post == TPOOL_GELU)
                gemm_gelu(r, n1 - n0);
            else
                gemm_gelu_tanh(r, n1 - n0);
        }
}

void tpool_linear(tpool *p, const float *x, const gemm_w *w, const float *bias, float *y, int M,
                  int N, int K, int post)
{
    lin f = {x, bias, w, y, M, N, K, 0, post, 0};
    int tasks = p->n + 1 > 1 ? 4 * (p->n + 1) : 1;
    f.rowsplit = M >= 48 * tasks;
    if (f.rowsplit) {
        f.chunk = (M + tasks - 1) / tasks;
        f.chunk = (f.chunk + 11) / 12 * 12;
        tpool_run(p, linear_task, &f, (M + f.chunk - 1) / f.chunk);
        return;
    }
    f.chunk = (N + tasks - 1) / tasks;
    int al = gemm_cols_align(w) > 4 ? gemm_cols_align(w) : 4;
    f.chunk = (f.chunk + al - 1) / al * al;
    tpool_run(p, linear_task, &f, (N + f.chunk - 1) / f.chunk);
}

int tpool_batches(void *model, int max_tokens, int dims, tpool_tokenize_fn tokenize,
                  tpool_forward_fn forward, const char *const *texts, const size_t *lens,
                  size_t n, float *out)
{
    int cap = TPOOL_BATCH_TOKENS > max_tokens ? TPOOL_BATCH_TOKENS : max_tokens;
    int32_t *ids = malloc((size_t)(cap + max_tokens + 1) * sizeof *ids);
    int *start = malloc((n ? n : 1) * sizeof *start), *len = malloc((n ? n : 1) * sizeof *len);
    int rc = ids && start && len ? MNEMO_OK : MNEMO_NOMEM;
    size_t first = 0;
    int T = 0;
    for (size_t i = 0; !rc && i <= n; i++) {
        if (i < n) {
            int c = tokenize(model, texts[i], lens[i], ids + T);
            if (c < 0) {
                rc = MNEMO_NOMEM;
                break;
            }
            if (c == 0)
                ids[T + c++] = 0; /* no special tokens: one padding token to pool */
            if (T > 0 && T + c > cap) {
                /* Full: this text starts the next pass. */
                rc = forward(model, ids, T, start, len, (int)(i - first),
                             out + first * (size_t)dims);
                memmove(ids, ids + T, (size_t)c * sizeof *ids);
                T = 0;
                first = i;
            }
            start[i - first] = T;
            len[i - first] = c;
            T += c;
        } else if (T > 0) {
            rc = forward(model, ids, T, start, len, (int)(n - first), out + first * (size_t)dims);
        }
    }
    free(ids);
    free(start);
    free(len);
    return rc;
}
