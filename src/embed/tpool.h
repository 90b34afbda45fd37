/*
 * tpool.h - the pieces the in-process encoders (bert.h, gemma.h) share: a
 * pool of threads that runs the tasks of one parallel step (the caller
 * runs tasks too), and the parallel linear step Y = X W^T + b over the
 * rows of every text of a call (gemm.h), split by rows for long batches
 * and by columns for short ones; and the batching of a call's texts into
 * forward passes of at most TPOOL_BATCH_TOKENS tokens.
 */
#ifndef MNEMO_TPOOL_H
#define MNEMO_TPOOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "embed/gemm.h"

typedef void (*tpool_fn)(void *ctx, int task);

typedef struct tpool {
    pthread_t *th;
    struct tpool_arg *args;
    int n, started; /* N workers (besides the caller) */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    tpool_fn fn;
    void *ctx;
    int ntasks;
    /* A step starts when gen moves and ends when active reaches 0: both
     * sides spin on them a little before sleeping on go and done (a
     * forward pass runs dozens of short steps back to back). */
    atomic_int active, quit;
    atomic_uint gen;
    atomic_int next;
    int calls;   /* tpool_ensure's */
    float *work; /* tpool_work's */
    size_t work_floats;
} tpool;

/* Starts WORKERS threads (0: the caller runs everything); a thread that
 * cannot be made leaves fewer. tpool_stop joins them (a pool never
 * started is a no-op). */
void tpool_start(tpool *p, int workers);
void tpool_stop(tpool *p);

/* Starts P's WORKERS threads before a call on N texts of LENS bytes,
 * unless it is
 * the first call and short (TPOOL_SOLO_BYTES): a process that embeds one
 * query (a search from the command line) runs it on the caller alone, as
 * starting threads and faulting the weights in from two of them cost
 * more than they save (measured: 11.5 against 5.9 ms for MiniLM). */
#define TPOOL_SOLO_BYTES 512
void tpool_ensure(tpool *p, int workers, const size_t *lens, size_t n);
/* The threads (the caller's included) a call of BYTES would run on. */
int tpool_threads_for(const tpool *p, int workers, size_t bytes);

/* The pool's work memory for a forward pass, at least FLOATS floats, kept
 * from one call to the next (grown, never shrunk, freed by tpool_stop): a
 * batch's activations are tens of megabytes, which fresh from the system
 * every call cost a page fault each 4 KB. NULL when out of memory. */
float *tpool_work(tpool *p, size_t floats);

/* Runs FN(CTX, t) for t < NTASKS over the pool and returns when all are
 * done. */
void tpool_run(tpool *p, tpool_fn fn, void *ctx, int ntasks);

/* Which of its pool's threads runs the calling task: 0 the caller, 1..n
 * the workers (an index for per-thread scratch). */
int tpool_slot(void);

/* What a linear step applies to its output. */
enum { TPOOL_PLAIN, TPOOL_GELU, TPOOL_GELU_TANH };

/* Y[m][n] = X[m] . W[n] + BIAS[n] (BIAS may be NULL) for m < M, n < N,
 * X's row stride K, Y's N, then POST on each element. */
void tpool_linear(tpool *p, const float *x, const gemm_w *w, const float *bias, float *y, int M,
                  int N, int K, int post);

/* Several linear steps of one X (M rows, stride K) in one parallel step
 * (a step's threads wake once), at most TPOOL_MAX_OUTS: for each, Y = X
 * W^T + BIAS, N columns, then POST. */
#define TPOOL_MAX_OUTS 4
typedef struct tpool_out {
    const gemm_w *w;
    const float *bias;
    float *y;
    int N, post;
} tpool_out;
void tpool_linears(tpool *p, const float *x, int M, int K, const tpool_out *o, int n);

#define TPOOL_BATCH_TOKENS 4096 /* tokens of one forward pass */

/* Tokenizes TEXT (LEN bytes) into IDS (room for MAX_TOKENS); the count,
 * or -1 when out of memory. */
typedef int (*tpool_tokenize_fn)(void *model, const char *text, size_t len, int32_t *ids);
/* Embeds NSEQ texts whose T tokens are IDS (text s: START[s], LEN[s]) into
 * OUT, NSEQ x dims floats. */
typedef int (*tpool_forward_fn)(void *model, const int32_t *ids, int T, const int *start,
                                const int *len, int nseq, float *out);

/* Embeds TEXTS[0..N) in forward passes of whole texts, each of at most
 * TPOOL_BATCH_TOKENS tokens (a longer text alone), into OUT (N x DIMS).
 * A text of no tokens gets one padding token (id 0) to pool. */
int tpool_batches(void *model, int max_tokens, int dims, tpool_tokenize_fn tokenize,
                  tpool_forward_fn forward, const char *const *texts, const size_t *lens,
                  size_t n, float *out);

#endif
