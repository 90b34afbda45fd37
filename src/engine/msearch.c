/*
 * msearch.c - searching structured memories, what both backends share:
 * the fusion, the factors, episodes and the result list. Each backend's
 * legs are its own (lite_msearch.c, pgmsearch.c); formats and the
 * <recalled-memories> block are in mrecall.c.
 *
 * Candidates come from both legs, each restricted by the scope and filters
 * in SQL: every keyword match (BM25 over memories_fts, normalised as for
 * notes: 1 - e^(-2x)) and the best vector matches (cosine, calibrated as
 * for notes). Relevance fuses them as notes do: max(t, wv*v + wt*t). The
 * score multiplies relevance by
 *
 *   activation   floor + (1 - floor) * 2^(-age / (halfLife * (1 + c)))
 *                age since created or last confirmed, c = confirmations
 *   reinforcement  1 + 0.05 * min(c, 5)
 *   importance   importanceMax^((importance - 0.5) / 0.5)   (0.8 .. 1.25)
 *   subject      1.5 for memories about the user when the search is about
 *                the user (subject "user", or the query says user/I/me/my)
 *
 * Searching never writes: being retrieved does not strengthen a memory;
 * only mnemo_memory_confirm() does.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/memory.h"
#include "engine/rank.h"
#include "engine/topk.h"
#include "text/sanitize.h"
#include "util/utf8.h"

#define USER_BOOST 1.5

/* ----------------------------------------------------------------------
 * Search
 * -------------------------------------------------------------------- */

mcand *mset_push(mset *s, int64_t mid)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        mcand *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return NULL;
        s->v = v;
        s->cap = cap;
    }
    memset(&s->v[s->n], 0, sizeof *s->v);
    s->v[s->n].mid = mid;
    s->v[s->n].vec = -1;
    return &s->v[s->n++];
}

static int by_mid(const void *a, const void *b)
{
    const mcand *x = a, *y = b;
    return (x->mid > y->mid) - (x->mid < y->mid);
}

void mset_sort_mid(mset *s, size_t n)
{
    if (n > 1)
        qsort(s->v, n, sizeof *s->v, by_mid);
}

mcand *mset_find(mset *s, size_t n, int64_t mid)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t k = (lo + hi) / 2;
        if (s->v[k].mid < mid)
            lo = k + 1;
        else
            hi = k;
    }
    return lo < n && s->v[lo].mid == mid ? &s->v[lo] : NULL;
}

void mset_cleanup(mset *s)
{
    for (size_t i = 0; i < s->n; i++)
        json_decref(s->v[i].rec);
    free(s->v);
    memset(s, 0, sizeof *s);
}

void mem_bm25_init(mnemo *m, const query *q, const bm25_hits *h, mem_bm25 *k)
{
    query_weights(q, k->w);
    bm25_idfs(h, k->idf);
    k->k1 = cfg_num(m->cfg, CFG_BM25_K1);
    k->b = cfg_num(m->cfg, CFG_BM25_B);
    k->sum = 0;
    for (int i = 0; i < q->npositive && i < h->np; i++)
        k->sum += k->idf[i];
    if (k->sum <= 0)
        k->sum = 1;
}

int mem_bm25_hit_ok(const query *q, const bm25_hits *h, size_t i)
{
    return (h->mask[i] & q->required) == q->required;
}

double mem_bm25_norm(const mem_bm25 *k, const bm25_hits *h, size_t i)
{
    return 1.0 - exp(-2.0 * bm25_score(h, i, k->w, k->idf, k->k1, k->b) / k->sum);
}

static double clamp01(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }

void mem_vec_set(mcand *c, double cos, const calib_null *nl)
{
    double z, rest;
    if (calib_z(nl, cos, CALIB_MEM_PRIOR, &z, &rest)) {
        c->vec = clamp01((z - CALIB_MEM_Z_FLOOR) / CALIB_MEM_Z_SPAN);
        c->vrank = clamp01((z - CALIB_MEM_Z_RANK) / CALIB_MEM_Z_SPAN);
        return;
    }
    /* Few memories and no fixed texts to measure by (a static table that
     * knows few of their words): the memories' mean is no baseline (one
     * memory is its own mean), so it is shrunk towards a prior of
     * unrelated text (calib.h). */
    double n = (double)nl->n;
    double base = (nl->mean * n + CALIB_MEM_PRIOR_ROWS * CALIB_MEM_PRIOR_COS) /
                  (n + CALIB_MEM_PRIOR_ROWS);
    c->vec = c->vrank = clamp01(base < 1.0 ? (cos - base) / (1.0 - base) : 0);
}

/* ----------------------------------------------------------------------
 * Episodes (memory.h)
 * -------------------------------------------------------------------- */

#define EPISODE_EXPAND MEM_EPISODE_EXPAND

int mem_members_add(mem_members *l, int64_t of, int64_t mid, int pos, const char *text)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        mem_member *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return MNEMO_NOMEM;
        l->v = v;
        l->cap = cap;
    }
    mem_member *x = &l->v[l->n];
    x->text = strdup(text ? text : "");
    if (!x->text)
        return MNEMO_NOMEM;
    x->of = of;
    x->mid = mid;
    x->pos = pos;
    l->n++;
    return MNEMO_OK;
}

void mem_members_cleanup(mem_members *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].text);
    free(l->v);
    memset(l, 0, sizeof *l);
}

int mem_is_turn(const char *text)
{
    /* A speaker's label: up to four words and 40 bytes, then ": ". */
    const unsigned char *p = (const unsigned char *)text;
    int words = 0, in_word = 0;
    if (!*p || *p == ' ' || *p == ':' || (*p < 0x80 && !((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z')))
        return 0;
    for (size_t i = 0; i <= 40 && p[i]; i++) {
        if (p[i] == ':')
            return i > 0 && p[i + 1] == ' ' && words <= 4;
        if (p[i] == '\n' || p[i] == '\t' || p[i] == '"' || p[i] == '(' || p[i] == '[')
            return 0;
        if (p[i] == ' ') {
            in_word = 0;
        } else if (!in_word) {
            in_word = 1;
            if (++words > 4)
                return 0;
        }
    }
    return 0;
}

static int by_text_desc(const void *a, const void *b)
{
    const mcand *x = *(const mcand *const *)a, *y = *(const mcand *const *)b;
    if (x->text != y->text)
        return x->text < y->text ? 1 : -1;
    return (x->mid > y->mid) - (x->mid < y->mid);
}

static int by_member(const void *a, const void *b)
{
    const mem_member *x = a, *y = b;
    if (x->of != y->of)
        return (x->of > y->of) - (x->of < y->of);
    return x->pos - y->pos;
}

/* A memory's best episode evidence so far. */
typedef struct ep_best {
    int64_t mid;
    double ctx;
} ep_best;

static int by_best_mid(const void *a, const void *b)
{
    const ep_best *x = a, *y = b;
    return (x->mid > y->mid) - (x->mid < y->mid);
}

/* A keyword hit by memory, to find its term frequencies. */
typedef struct hit_of {
    int64_t mid;
    size_t i;
} hit_of;

static int by_hit_mid(const void *a, const void *b)
{
    const hit_of *x = a, *y = b;
    return (x->mid > y->mid) - (x->mid < y->mid);
}

int mem_episodes(mnemo *m, const query *q, const mem_bm25 *k, const bm25_hits *h,
                 const int64_t *hit_mids, size_t need, mset *s, size_t nk, mem_episode_fn fn,
                 void *ud)
{
    double mu = cfg_num(m->cfg, CFG_MEMORY_CONTEXT);
    if (mu <= 0 || !q->match || nk == 0 || h->n == 0)
        return MNEMO_OK;
    size_t ne = nk < EPISODE_EXPAND + need ? nk : EPISODE_EXPAND + need;
    int np = q->npositive < h->np ? q->npositive : h->np;
    mcand **byt = malloc(nk * sizeof *byt);
    int64_t *mids = malloc(ne * sizeof *mids);
    hit_of *hits = malloc(h->n * sizeof *hits);
    mem_members l = {0};
    double *contrib = NULL;
    ep_best *best = NULL;
    int rc = byt && mids && hits ? MNEMO_OK : MNEMO_NOMEM;
    if (rc)
        goto done;
    /* The NE best by text (text descending, then mid): a selection, not a
     * sort of every match. */
    topk best_text;
    if ((rc = topk_init(&best_text, ne)))
        goto done;
    for (size_t i = 0; i < nk; i++) {
        size_t slot = topk_offer(&best_text, s->v[i].text, s->v[i].mid);
        if (slot != TOPK_NONE)
            byt[slot] = &s->v[i];
    }
    topk_cleanup(&best_text);
    qsort(byt, ne, sizeof *byt, by_text_desc);
    for (size_t i = 0; i < ne; i++)
        mids[i] = byt[i]->mid;
    for (size_t i = 0; i < h->n; i++)
        hits[i] = (hit_of){hit_mids ? hit_mids[i] : h->id[i], i};
    qsort(hits, h->n, sizeof *hits, by_hit_mid);
    if ((rc = fn(m, ud, mids, ne, &l)) || l.n == 0)
        goto done;
    qsort(l.v, l.n, sizeof *l.v, by_member);

    /* Each turn's BM25 per phrase, from its keyword hit (none: nothing). */
    contrib = calloc(l.n * BM25_MAX_PHRASES, sizeof *contrib);
    best = malloc(l.n * sizeof *best);
    if (!contrib || !best) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < l.n; i++) {
        if (!mem_is_turn(l.v[i].text))
            continue;
        hit_of key = {l.v[i].mid, 0};
        const hit_of *f = bsearch(&key, hits, h->n, sizeof *hits, by_hit_mid);
        if (!f || !mem_bm25_hit_ok(q, h, f->i))
            continue;
        double norm = bm25_norm(k->k1, k->b, (double)h->dl[f->i], h->avgdl);
        const uint8_t *tf = h->tf + f->i * BM25_MAX_PHRASES;
        for (int t = 0; t < np; t++)
            if (tf[t])
                contrib[i * BM25_MAX_PHRASES + (size_t)t] =
                    bm25_part(k->w[t], k->idf[t], (double)tf[t], k->k1, norm);
    }

    /* In each episode window, a turn's context: every phrase at its
     * strongest among the turns within two places, the farther at half
     * weight. A turn in several windows keeps its best. */
    size_t nb = 0;
    for (size_t a = 0; a < l.n;) {
        size_t b = a;
        while (b < l.n && l.v[b].of == l.v[a].of)
            b++;
        for (size_t x = a; x < b; x++) {
            if (!mem_is_turn(l.v[x].text))
                continue;
            double ctx = 0;
            for (int t = 0; t < np; t++) {
                double top = 0;
                for (size_t j = a; j < b; j++) {
                    int d = abs(l.v[j].pos - l.v[x].pos);
                    if (d > MEM_EPISODE_SPAN)
                        continue;
                    double v = contrib[j * BM25_MAX_PHRASES + (size_t)t] *
                               (d == MEM_EPISODE_SPAN ? 0.5 : 1.0);
                    if (v > top)
                        top = v;
                }
                ctx += top;
            }
            best[nb++] = (ep_best){l.v[x].mid, ctx};
        }
        a = b;
    }
    qsort(best, nb, sizeof *best, by_best_mid);
    mset_sort_mid(s, nk);
    for (size_t i = 0; i < nb;) {
        size_t j = i;
        double ctx = 0;
        for (; j < nb && best[j].mid == best[i].mid; j++)
            if (best[j].ctx > ctx)
                ctx = best[j].ctx;
        mcand *c = mset_find(s, nk, best[i].mid);
        i = j;
        if (!c || c->text >= 1.0)
            continue;
        double xo = -0.5 * log(1.0 - c->text), xc = ctx / (k->sum > 0 ? k->sum : 1.0);
        double x = (1.0 - mu) * xo + mu * (xc > xo ? xc : xo);
        c->text = 1.0 - exp(-2.0 * x);
    }
done:
    free(byt);
    free(mids);
    free(hits);
    free(contrib);
    free(best);
    mem_members_cleanup(&l);
    return rc;
}

int mem_about_user(const char *q, const mem_opts *o)
{
    if (o->subject && strcmp(o->subject, "user") == 0)
        return 1;
    static const char *const words[] = {"user", "users", "i", "me", "my", "mine", "myself"};
    const char *p = q;
    while (*p) {
        while (*p && !((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z'))
            p++;
        const char *s = p;
        while ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z')
            p++;
        size_t n = (size_t)(p - s);
        for (size_t i = 0; n && i < sizeof words / sizeof *words; i++)
            if (n == strlen(words[i]) && strncasecmp(s, words[i], n) == 0)
                return 1;
    }
    return 0;
}

double mem_factors(mnemo *m, const mcand *c, int user_query, double now)
{
    double n = c->confirmations;
    double ref = c->created, conf = c->confirmed;
    if (conf > ref)
        ref = conf;
    double half = cfg_num(m->cfg, CFG_MEMORY_HALF_LIFE_DAYS) * (1.0 + n);
    double act = rank_recency(ref, now, half, cfg_num(m->cfg, CFG_RECENCY_FLOOR));
    double reinforce = 1.0 + 0.05 * (n < 5 ? n : 5);
    double imp = pow(cfg_num(m->cfg, CFG_IMPORTANCE_MAX), (c->importance - 0.5) / 0.5);
    double boost = user_query && c->about_user ? USER_BOOST : 1.0;
    return act * reinforce * imp * boost;
}

double mem_max_factor(mnemo *m, int user_query)
{
    /* The user boost only for a query about the user: a bound that counts
     * it for every query reads the factors of half again as many
     * candidates as can make the results. */
    double imax = cfg_num(m->cfg, CFG_IMPORTANCE_MAX);
    return (imax > 1 ? imax : 1) * 1.25 * (user_query ? USER_BOOST : 1.0);
}

static int by_rel(const void *a, const void *b)
{
    const mcand *x = a, *y = b;
    if (x->rel != y->rel)
        return x->rel < y->rel ? 1 : -1;
    return (x->mid > y->mid) - (x->mid < y->mid);
}

/* Restores the heap of V[0..N) (relevance descending, then mid, at the
 * root: by_rel's first) below I. */
static void rel_sift(mcand *v, size_t n, size_t i)
{
    mcand x = v[i];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = l;
        if (l >= n)
            break;
        if (r < n && by_rel(&v[r], &v[l]) < 0)
            w = r;
        if (by_rel(&v[w], &x) >= 0)
            break;
        v[i] = v[w];
        i = w;
    }
    v[i] = x;
}

static int by_score(const void *a, const void *b)
{
    const mcand *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return (x->mid > y->mid) - (x->mid < y->mid);
}

int mem_query_text(mnemo *m, const char *text, buf *out)
{
    buf clean;
    buf_init(&clean, 1 << 16);
    if (utf8_repair(&clean, text, strlen(text))) {
        buf_cleanup(&clean);
        return core_error(m, MNEMO_INVALID, "query too long (limit 64 KiB)");
    }
    int rc = sanitize_message(clean.data ? clean.data : "", clean.len, out);
    buf_cleanup(&clean);
    return rc || buf_err(out) ? MNEMO_NOMEM : MNEMO_OK;
}

int mem_rank(mnemo *m, const char *q, const mem_opts *o, int ran, size_t need, double now,
             mset *s, mem_factor_fn fn, void *ud)
{
    double wv = cfg_num(m->cfg, CFG_VECTOR_WEIGHT);
    int user_query = mem_about_user(q, o);
    for (size_t i = 0; i < s->n; i++) {
        mcand *c = &s->v[i];
        double v = c->vec < 0 ? 0 : c->vec, vr = c->vec < 0 ? 0 : c->vrank;
        /* As for notes: either leg is evidence on its own (search.c). The
         * ranking counts related meaning (VRANK); thresholds only meaning
         * that stands out (CLEAR). */
        c->rel = ran ? 1.0 - (1.0 - c->text) * (1.0 - wv * vr) : c->text;
        c->clear = ran ? 1.0 - (1.0 - c->text) * (1.0 - wv * v) : c->text;
    }
    /* Factors, best relevance first, until no candidate left can reach
     * the NEED best scores: the candidates taken from a heap by relevance
     * (a sort of every match would cost more than the few read), each
     * taken one to the end of the array. */
    double bound = mem_max_factor(m, user_query);
    double *top = malloc((need ? need : 1) * sizeof *top);
    size_t ntop = 0, end = s->n;
    int rc = top ? MNEMO_OK : MNEMO_NOMEM;
    for (size_t i = end / 2; !rc && i-- > 0;)
        rel_sift(s->v, end, i);
    while (!rc && end > 0) {
        mcand c = s->v[0];
        if (ntop == need && c.rel * bound < top[0])
            break;
        s->v[0] = s->v[--end];
        rel_sift(s->v, end, 0);
        int fr = c.has_factors ? MNEMO_OK : fn(m, ud, &c);
        if (fr && fr != MNEMO_NOTFOUND)
            rc = fr;
        c.score = fr ? 0 : c.rel * mem_factors(m, &c, user_query, now);
        rank_top_offer(top, &ntop, need, c.score);
        s->v[end] = c;
    }
    free(top);
    /* The candidates read are s->v[end..n); the rest cannot make the
     * results (and hold no record yet). */
    size_t kept = s->n - end;
    if (end)
        memmove(s->v, s->v + end, kept * sizeof *s->v);
    s->n = kept;
    if (!rc && s->n > 1)
        qsort(s->v, s->n, sizeof *s->v, by_score);
    return rc;
}

static double round4(double x) { return floor(x * 10000.0 + 0.5) / 10000.0; }

int mem_search_run(mnemo *m, const char *text, mem_opts *o, const mem_searcher *be,
                   json_t **res, const char **mode, mem_skips *sk)
{
    *res = NULL;
    *mode = "keyword";
    if (!text)
        return core_error(m, MNEMO_INVALID, "empty query");
    mset s = {0};
    int rc = be->run(m, text, o, (size_t)o->limit, &s, mode);
    double min = o->min_score >= 0 ? o->min_score : cfg_num(m->cfg, CFG_MEMORY_MIN_SCORE);
    json_t *r = json_array();
    if (!r)
        rc = MNEMO_NOMEM;
    for (size_t i = 0; !rc && i < s.n && json_array_size(r) < (size_t)o->limit; i++) {
        mcand *c = &s.v[i];
        if (c->score < min)
            break;
        if (c->score * c->clear < min * c->rel) /* clear * factors < min */
            continue;
        if ((rc = be->load(m, c)) == MNEMO_NOTFOUND) {
            rc = MNEMO_OK;
            continue;
        }
        if (rc)
            break;
        if (mem_skip(sk, c->rec))
            continue;
        json_object_set_new(c->rec, "score", json_real(round4(c->score > 1 ? 1 : c->score)));
        json_object_set_new(c->rec, "relevance", json_real(round4(c->rel)));
        json_array_append(r, c->rec);
    }
    mset_cleanup(&s);
    if (rc) {
        json_decref(r);
        return rc;
    }
    *res = r;
    return MNEMO_OK;
}
