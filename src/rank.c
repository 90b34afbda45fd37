/*
 * rank.c - recency, importance and MMR diversity (see rank.h).
 */
#include "rank.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mnemo.h"
#include "tok.h"
#include "util/hash.h"
#include "util/time.h"

static int digits(const char *s, int n)
{
    for (int i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* A YYYY-MM-DD starting at S that is not part of a longer number. */
static double date_at(const char *start, const char *s)
{
    if (!digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) || s[7] != '-' || !digits(s + 8, 2))
        return 0;
    if ((s > start && s[-1] >= '0' && s[-1] <= '9') || (s[10] >= '0' && s[10] <= '9'))
        return 0;
    char buf[11];
    memcpy(buf, s, 10);
    buf[10] = 0;
    double t;
    return time_parse_iso(buf, &t) == 0 ? t : 0;
}

static double first_date(const char *from, const char *to)
{
    for (const char *p = from; p + 10 <= to; p++) {
        double t = date_at(from, p);
        if (t > 0)
            return t;
    }
    return 0;
}

double rank_path_date(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strchr(path, '/') == NULL) {
        /* Files at the workspace root (MEMORY.md, USER.md) are evergreen. */
        return 0;
    }
    double t = first_date(base, base + strlen(base));
    if (t > 0)
        return t;
    /* A dated folder: memory/2026-11-29/notes.md */
    t = first_date(path, base);
    if (t > 0)
        return t;
    /* A year/month/day chain: memory/2026/11/29.md or memory/2026/11/29/x.md */
    for (const char *p = path; *p; p++) {
        if ((p == path || p[-1] == '/') && digits(p, 4) && p[4] == '/' && digits(p + 5, 2) &&
            p[7] == '/' && digits(p + 8, 2) && (p[10] == '/' || p[10] == '.')) {
            char buf[11] = {p[0], p[1], p[2], p[3], '-', p[5], p[6], '-', p[8], p[9], 0};
            double d;
            if (time_parse_iso(buf, &d) == 0)
                return d;
        }
    }
    return 0;
}

double rank_recency(double note_time, double now, double half_life_days, double floor)
{
    if (note_time <= 0 || half_life_days <= 0)
        return 1.0;
    double age_days = (now - note_time) / 86400.0;
    if (age_days <= 0)
        return 1.0;
    return floor + (1.0 - floor) * pow(2.0, -age_days / half_life_days);
}

double rank_importance(int n, double max)
{
    if (n <= 0 || max <= 0)
        return 1.0;
    if (n > 10)
        n = 10;
    return pow(max, ((double)n - 5.5) / 4.5);
}

typedef struct acc {
    uint64_t *h;
    size_t n, cap;
    int nomem;
} acc;

static int add_token(void *ud, int flags, const char *token, int len, int start, int end)
{
    (void)start;
    (void)end;
    acc *a = ud;
    if (flags & TOKF_PART)
        return 0;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        uint64_t *h = realloc(a->h, cap * sizeof *h);
        if (!h) {
            a->nomem = 1;
            return 1;
        }
        a->h = h;
        a->cap = cap;
    }
    a->h[a->n++] = hash64(token, (size_t)len);
    return 0;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

int rank_tokens_build(tok *t, const char *text, size_t len, rank_tokens *out)
{
    acc a = {NULL, 0, 0, 0};
    out->h = NULL;
    out->n = 0;
    tok_run(t, text ? text : "", text ? len : 0, 0, add_token, &a);
    if (a.nomem) {
        free(a.h);
        return MNEMO_NOMEM;
    }
    if (a.n > 1)
        qsort(a.h, a.n, sizeof *a.h, cmp_u64);
    size_t k = 0;
    for (size_t i = 0; i < a.n; i++)
        if (!k || a.h[k - 1] != a.h[i])
            a.h[k++] = a.h[i];
    out->h = a.h;
    out->n = k;
    return MNEMO_OK;
}

double rank_jaccard(const rank_tokens *a, const rank_tokens *b)
{
    if (!a->n || !b->n)
        return 0;
    size_t i = 0, j = 0, inter = 0;
    while (i < a->n && j < b->n) {
        if (a->h[i] == b->h[j]) {
            inter++;
            i++;
            j++;
        } else if (a->h[i] < b->h[j]) {
            i++;
        } else {
            j++;
        }
    }
    return (double)inter / (double)(a->n + b->n - inter);
}

void rank_mmr(size_t *order, size_t n, const double *score, double lambda, size_t pool,
              rank_sim_fn sim, void *ud)
{
    if (pool > n)
        pool = n;
    if (pool < 3 || lambda >= 1.0)
        return;
    size_t *cand = malloc(pool * sizeof *cand);
    double *maxsim = calloc(pool, sizeof *maxsim);
    if (!cand || !maxsim) {
        free(cand);
        free(maxsim);
        return; /* out of memory: keep the score order */
    }
    memcpy(cand, order, pool * sizeof *cand);
    size_t left = pool;
    for (size_t pos = 0; pos < pool; pos++) {
        size_t best = 0;
        double best_v = -INFINITY;
        for (size_t k = 0; k < left; k++) {
            double v = lambda * score[cand[k]] - (1.0 - lambda) * maxsim[k];
            if (v > best_v) {
                best_v = v;
                best = k;
            }
        }
        size_t pick = cand[best];
        order[pos] = pick;
        cand[best] = cand[left - 1];
        maxsim[best] = maxsim[left - 1];
        left--;
        for (size_t k = 0; k < left; k++) {
            double s = sim(ud, pick, cand[k]);
            if (s > maxsim[k])
                maxsim[k] = s;
        }
    }
    free(cand);
    free(maxsim);
}
