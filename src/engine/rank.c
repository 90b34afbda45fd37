/*
 * rank.c - recency, importance and MMR diversity (see rank.h).
 */
#include "engine/rank.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mnemo.h"
#include "text/tok.h"
#include "util/hash.h"
#include "util/time.h"
#include "util/utf8.h"

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
    char day[11];
    memcpy(day, s, 10);
    day[10] = 0;
    double t;
    return time_parse_iso(day, &t) == 0 ? t : 0;
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
            char day[11] = {p[0], p[1], p[2], p[3], '-', p[5], p[6], '-', p[8], p[9], 0};
            double d;
            if (time_parse_iso(day, &d) == 0)
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

/* Sorts A[0..N) ascending: quicksort, insertion sort below 16. Inline
 * comparisons make it several times faster than qsort() here, and it runs
 * on every chunk of the diversity pool of every search. */
static void sort_u64(uint64_t *a, size_t n)
{
    while (n > 16) {
        uint64_t x = a[0], y = a[n / 2], z = a[n - 1];
        uint64_t p = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
        size_t i = 0, j = n - 1;
        for (;;) { /* Hoare: [0, j] <= p <= [j + 1, n) */
            while (a[i] < p)
                i++;
            while (a[j] > p)
                j--;
            if (i >= j)
                break;
            uint64_t t = a[i];
            a[i++] = a[j];
            a[j--] = t;
        }
        /* The smaller side by recursion, the larger by the loop. */
        if (j + 1 < n - j - 1) {
            sort_u64(a, j + 1);
            a += j + 1;
            n -= j + 1;
        } else {
            sort_u64(a + j + 1, n - j - 1);
            n = j + 1;
        }
    }
    for (size_t i = 1; i < n; i++) {
        uint64_t v = a[i];
        size_t k = i;
        for (; k > 0 && a[k - 1] > v; k--)
            a[k] = a[k - 1];
        a[k] = v;
    }
}

/* The code point at S (N bytes left) and its length; 0xfffd for bad bytes.
 * CJK is what the tokenizer calls CJK (utf8_is_cjk): one table for both. */
static uint32_t decode(const unsigned char *s, size_t n, size_t *len)
{
    int32_t cp;
    *len = (size_t)utf8_decode((const char *)s, n, &cp);
    return cp < 0 ? 0xfffd : (uint32_t)cp;
}

static void add_hash(acc *a, uint64_t h)
{
    if (a->nomem)
        return;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 512;
        uint64_t *v = realloc(a->h, cap * sizeof *v);
        if (!v) {
            a->nomem = 1;
            return;
        }
        a->h = v;
        a->cap = cap;
    }
    a->h[a->n++] = h;
}

/* A lighter tokenizer than the index's: words lowercased (ASCII) without
 * stemming, CJK runs as bigrams (a lone character as itself). Near-
 * duplicates share their surface forms, and this runs on every candidate
 * of every search. */
int rank_tokens_build(const char *text, size_t len, rank_tokens *out)
{
    acc a = {NULL, 0, 0, 0};
    out->h = NULL;
    out->n = 0;
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    char word[64];
    size_t wl = 0, run = 0, prev = 0, prevlen = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        if (c < 0x80 && !run) {
            /* ASCII outside a CJK run, most of the text: what the general
             * path below does for it, without decoding. */
            if ((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) {
                if (wl < sizeof word)
                    word[wl++] = (char)(c <= 'Z' ? c | 0x20 : c);
            } else if (wl) {
                add_hash(&a, hash64(word, wl));
                wl = 0;
            }
            i++;
            continue;
        }
        size_t k = 1;
        uint32_t cp = c < 0x80 ? c : decode(s + i, len - i, &k);
        int cjk = cp >= 0x80 && utf8_is_cjk((int32_t)cp);
        int letter = cp >= 0x80 ? !cjk && cp != 0xfffd && cp != 0xa0
                                : (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
        if (!letter && wl) {
            add_hash(&a, hash64(word, wl));
            wl = 0;
        }
        if (!cjk && run) {
            if (run == 1)
                add_hash(&a, hash64(s + prev, prevlen));
            run = 0;
        }
        if (letter) {
            for (size_t j = 0; j < k && wl < sizeof word; j++)
                word[wl++] = (char)(c < 0x80 && c >= 'A' && c <= 'Z' ? c | 0x20 : s[i + j]);
        } else if (cjk) {
            if (run)
                add_hash(&a, hash64(s + prev, prevlen + k));
            run++;
            prev = i;
            prevlen = k;
        }
        i += k;
    }
    if (wl)
        add_hash(&a, hash64(word, wl));
    if (run == 1)
        add_hash(&a, hash64(s + prev, prevlen));
    if (a.nomem) {
        free(a.h);
        return MNEMO_NOMEM;
    }
    sort_u64(a.h, a.n);
    size_t n = 0;
    for (size_t i = 0; i < a.n; i++)
        if (!n || a.h[n - 1] != a.h[i])
            a.h[n++] = a.h[i];
    out->h = a.h;
    out->n = n < RANK_SKETCH ? n : RANK_SKETCH;
    return MNEMO_OK;
}

double rank_jaccard(const rank_tokens *a, const rank_tokens *b)
{
    if (!a->n || !b->n)
        return 0;
    /* Bottom-k estimate: of the K smallest hashes of the union, the share
     * found in both sets (exact when the union has at most K tokens). */
    size_t i = 0, j = 0, seen = 0, inter = 0;
    /* Without branches on the comparisons: hashes are random, so they
     * would be mispredicted half of the time. */
    while (seen < RANK_SKETCH && i < a->n && j < b->n) {
        uint64_t x = a->h[i], y = b->h[j];
        inter += x == y;
        i += x <= y;
        j += y <= x;
        seen++;
    }
    /* One side is used up: the rest of the other only adds to the union. */
    seen += (a->n - i) + (b->n - j);
    if (seen > RANK_SKETCH)
        seen = RANK_SKETCH;
    return (double)inter / (double)seen;
}

void rank_mmr(size_t *order, size_t n, const double *score, double lambda, size_t pool,
              size_t picks, rank_sim_fn sim, void *ud)
{
    if (pool > n)
        pool = n;
    if (picks > pool)
        picks = pool;
    if (pool < 3 || picks < 2 || lambda >= 1.0)
        return;
    size_t *cand = malloc(pool * sizeof *cand);
    size_t *seen = calloc(pool, sizeof *seen); /* picks compared with, per candidate */
    double *maxsim = calloc(pool, sizeof *maxsim);
    if (!cand || !seen || !maxsim) {
        free(cand);
        free(seen);
        free(maxsim);
        return; /* out of memory: keep the score order */
    }
    memcpy(cand, order, pool * sizeof *cand);
    size_t left = pool;
    for (size_t pos = 0; pos < picks; pos++) {
        size_t best = 0;
        double best_v = -INFINITY;
        for (size_t k = 0; k < left; k++) {
            /* Similarities to picks only add penalty: with those not yet
             * compared, v is an upper bound, and a candidate that cannot
             * beat the best so far needs no more of them. */
            double v = lambda * score[cand[k]] - (1.0 - lambda) * maxsim[k];
            if (v <= best_v)
                continue;
            for (; seen[k] < pos; seen[k]++) {
                double s = sim(ud, order[seen[k]], cand[k]);
                if (s > maxsim[k])
                    maxsim[k] = s;
            }
            v = lambda * score[cand[k]] - (1.0 - lambda) * maxsim[k];
            if (v > best_v) {
                best_v = v;
                best = k;
            }
        }
        order[pos] = cand[best];
        /* Close the gap, keeping the rest in score order. */
        memmove(cand + best, cand + best + 1, (left - best - 1) * sizeof *cand);
        memmove(seen + best, seen + best + 1, (left - best - 1) * sizeof *seen);
        memmove(maxsim + best, maxsim + best + 1, (left - best - 1) * sizeof *maxsim);
        left--;
    }
    memcpy(order + picks, cand, left * sizeof *cand);
    free(cand);
    free(seen);
    free(maxsim);
}

void rank_top_offer(double *h, size_t *n, size_t cap, double v)
{
    size_t i;
    if (*n < cap) {
        for (i = (*n)++; i && h[(i - 1) / 2] > v; i = (i - 1) / 2)
            h[i] = h[(i - 1) / 2];
        h[i] = v;
        return;
    }
    if (cap == 0 || v <= h[0])
        return;
    for (i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, k = i;
        double kv = v;
        if (l < cap && h[l] < kv)
            k = l, kv = h[l];
        if (r < cap && h[r] < kv)
            k = r;
        if (k == i)
            break;
        h[i] = h[k];
        i = k;
    }
    h[i] = v;
}
