/*
 * localbench.c - speed of the in-process encoder (provider "local").
 *
 *     build/bench/localbench MODEL_DIR [THREADS]
 *
 * A query of 16 tokens from a warm encoder (p50 and p90 of 200), and
 * documents of 256 tokens in batches of 32 (documents per second over at
 * least 3 s), with the GEMM kernel the CPU gets. bench/local_ort.py runs the
 * same shapes through ONNX Runtime for comparison (docs/benchmarks.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "embed/bert.h"
#include "embed/gemm.h"
#include "util/buf.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* WORDS one-token words ("memory search note ..."). */
static char *words(int n)
{
    static const char *const w[] = {"memory", "search", "note", "user", "team", "project"};
    buf b;
    buf_init(&b, 0);
    for (int i = 0; i < n; i++)
        buf_printf(&b, "%s%s", i ? " " : "", w[i % 6]);
    return buf_detach(&b);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: localbench MODEL_DIR [THREADS [int8]]\n");
        return 2;
    }
    int threads = argc > 2 ? atoi(argv[2]) : 0;
    buf err;
    buf_init(&err, 0);
    bert *b = NULL;
    double t0 = now();
    if (bert_open(argv[1], threads, &b, &err)) {
        fprintf(stderr, "localbench: %s\n", err.data ? err.data : "cannot open");
        return 1;
    }
    int int8 = argc > 3 && strcmp(argv[3], "int8") == 0;
    if (int8 && bert_quantize(b)) {
        fprintf(stderr, "localbench: out of memory\n");
        return 1;
    }
    double open_ms = (now() - t0) * 1000;
    int d = bert_dims(b);
    char *q = words(14), *doc = words(254);
    int32_t *ids = malloc((size_t)bert_max_tokens(b) * sizeof *ids);
    int qn = bert_tokenize(b, q, strlen(q), ids), dn = bert_tokenize(b, doc, strlen(doc), ids);
    float *v = malloc(32 * (size_t)d * sizeof *v);
    size_t ql = strlen(q);
    const char *qs[1] = {q};
    t0 = now();
    bert_embed(b, qs, &ql, 1, v);
    double first_ms = (now() - t0) * 1000;
    double lat[200];
    for (int i = 0; i < 200; i++) {
        t0 = now();
        bert_embed(b, qs, &ql, 1, v);
        lat[i] = (now() - t0) * 1000;
    }
    qsort(lat, 200, sizeof *lat, by_double);
    const char *ds[32];
    size_t dl[32];
    for (int i = 0; i < 32; i++) {
        ds[i] = doc;
        dl[i] = strlen(doc);
    }
    long docs = 0;
    double el = 1;
    if (!getenv("LOCALBENCH_QUERY_ONLY")) {
        bert_embed(b, ds, dl, 32, v);
        t0 = now();
        do {
            bert_embed(b, ds, dl, 32, v);
            docs += 32;
        } while ((el = now() - t0) < 3.0);
    }
    printf("kernel %s%s, threads %s\n", gemm_kernel_name(gemm_kernel()), int8 ? ", int8 weights" : "",
           argc > 2 ? argv[2] : "all");
    printf("open %.1f ms, first query %.1f ms\n", open_ms, first_ms);
    printf("query (%d tokens): p50 %.2f ms  p90 %.2f ms\n", qn, lat[100], lat[180]);
    printf("documents (%d tokens): %.1f docs/s  %.0f tokens/s\n", dn, (double)docs / el,
           (double)docs * dn / el);
    bert_close(b);
    free(q);
    free(doc);
    free(ids);
    free(v);
    buf_cleanup(&err);
    return 0;
}
