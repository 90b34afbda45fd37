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

/* How long a thread spins for the next step, or for the end of one, before
 * it sleeps: about 50 microseconds, longer than a step's sleep and wake-up
 * take, shorter than the gap between two searches. */
#define SPINS 4000

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker(void *arg)
{
    tpool_arg *wa = arg;
    tpool *p = wa->p;
    worker_slot = wa->slot;
    unsigned seen = 0;
    for (;;) {
        for (int i = 0; i < SPINS && atomic_load(&p->gen) == seen && !atomic_load(&p->quit); i++)
            cpu_relax();
        if (atomic_load(&p->gen) == seen && !atomic_load(&p->quit)) {
            pthread_mutex_lock(&p->mu);
            while (!atomic_load(&p->quit) && atomic_load(&p->gen) == seen)
                pthread_cond_wait(&p->go, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->quit))
            break;
        seen = atomic_load(&p->gen);
        drain(p);
        if (atomic_fetch_sub(&p->active, 1) == 1) {
            pthread_mutex_lock(&p->mu); /* the caller may be asleep on done */
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
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

void tpool_ensure(tpool *p, int workers, const size_t *lens, size_t n)
{
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += lens[i];
    if (!p->started && (p->calls++ > 0 || bytes > TPOOL_SOLO_BYTES))
        tpool_start(p, workers);
}

int tpool_threads_for(const tpool *p, int workers, size_t bytes)
{
    if (p->started)
        return p->n + 1;
    return workers > 0 && (p->calls > 0 || bytes > TPOOL_SOLO_BYTES) ? workers + 1 : 1;
}

float *tpool_work(tpool *p, size_t floats)
{
    if (floats > p->work_floats) {
        free(p->work);
        p->work = malloc(floats * sizeof *p->work);
        p->work_floats = p->work ? floats : 0;
    }
    return p->work;
}

void tpool_stop(tpool *p)
{
    free(p->work);
    p->work = NULL;
    p->work_floats = 0;
    if (!p->started)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, 1);
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
    p->fn = fn;
    p->ctx = ctx;
    p->ntasks = ntasks;
    atomic_store(&p->next, 0);
    atomic_store(&p->active, p->n);
    /* The step's fields before gen (sequentially consistent atomics);
     * under the lock for the workers asleep on go. */
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->gen, 1);
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    drain(p);
    for (int i = 0; i < SPINS && atomic_load(&p->active) > 0; i++)
        cpu_relax();
    if (atomic_load(&p->active) > 0) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->active) > 0)
            pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}

/* ----------------------------------------------------------------------
 * The linear step
 * -------------------------------------------------------------------- */

typedef struct lin {
    const float *x;
    const tpool_out *o;
    int n, M, K, rowsplit;
    int chunk[TPOOL_MAX_OUTS]; /* columns (or rows) a task, per output */
    int first[TPOOL_MAX_OUTS + 1]; /* each output's first task */
} lin;

/* One task: columns N0..N1 of every row of one output, or with ROWSPLIT
 * every column of rows M0..M1 of every output (many rows: each task then
 * reads the weights once instead of every task all rows). */
static void linear_task(void *ud, int t)
{
    lin *f = ud;
    for (int i = 0; i < f->n; i++) {
        const tpool_out *o = &f->o[i];
        int m0 = 0, m1 = f->M, n0 = 0, n1 = o->N;
        if (f->rowsplit) {
            m0 = t * f->chunk[0];
            m1 = m0 + f->chunk[0] > f->M ? f->M : m0 + f->chunk[0];
        } else if (t < f->first[i] || t >= f->first[i + 1]) {
            continue;
        } else {
            n0 = (t - f->first[i]) * f->chunk[i];
            n1 = n0 + f->chunk[i] > o->N ? o->N : n0 + f->chunk[i];
        }
        if (n0 >= n1 || m0 >= m1)
            continue;
        gemm_run(o->w, f->x + (size_t)m0 * f->K, o->bias, o->y + (size_t)m0 * o->N, m1 - m0,
                 o->N, n0, n1);
        if (o->post != TPOOL_PLAIN)
            for (int m = m0; m < m1; m++) {
                float *r = o->y + (size_t)m * o->N + n0;
                if (o->post == TPOOL_GELU)
                    gemm_gelu(r, n1 - n0);
                else
                    gemm_gelu_tanh(r, n1 - n0);
            }
    }
}

void tpool_linears(tpool *p, const float *x, int M, int K, const tpool_out *o, int n)
{
    lin f = {x, o, n < TPOOL_MAX_OUTS ? n : TPOOL_MAX_OUTS, M, K, 0, {0}, {0}};
    int tasks = p->n + 1 > 1 ? 4 * (p->n + 1) : 1;
    f.rowsplit = M >= 48 * tasks;
    if (f.rowsplit) {
        f.chunk[0] = (M + tasks - 1) / tasks;
        f.chunk[0] = (f.chunk[0] + 11) / 12 * 12;
        tpool_run(p, linear_task, &f, (M + f.chunk[0] - 1) / f.chunk[0]);
        return;
    }
    /* The outputs' columns in one step, each split as if alone. */
    for (int i = 0; i < f.n; i++) {
        int c = (o[i].N + tasks - 1) / tasks;
        int al = gemm_cols_align(o[i].w) > 4 ? gemm_cols_align(o[i].w) : 4;
        f.chunk[i] = (c + al - 1) / al * al;
        f.first[i + 1] = f.first[i] + (o[i].N + f.chunk[i] - 1) / f.chunk[i];
    }
    tpool_run(p, linear_task, &f, f.first[f.n]);
}

void tpool_linear(tpool *p, const float *x, const gemm_w *w, const float *bias, float *y, int M,
                  int N, int K, int post)
{
    tpool_out o = {w, bias, y, N, post};
    tpool_linears(p, x, M, K, &o, 1);
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
