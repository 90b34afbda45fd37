/*
 * lite_mpost.c - memory search's keyword leg over the memories' postings
 * (kwpost.h, kept by memlite.c): the best memories by score without
 * scoring every memory that holds a query word.
 *
 * Memory search ranks the in-scope matches by relevance times each
 * memory's factors (msearch.c), after episodes lend turns the words of
 * their neighbours, with document frequencies counted in scope. The
 * postings are kept per user, agent, type and session (the key
 * KWPOST_MEMORY_KEY), so that for a plain scope (plain_scope: recall's, and
 * memory search's default) a word's frequency is the size of its lists. Both steps walk
 * them with block-max bounds (blockmax.h), a memory looked up (its scope,
 * its factors) only when it may still make the results:
 *
 *  1. With episodes on, the MEM_EPISODE_EXPAND + NEED best matches by text
 *     (a walk whose pool is cut by BM25 alone), their episode members and
 *     their words read back, and mem_episodes run over just those: the
 *     candidates whose text episodes raise are exactly these.
 *  2. The NEED best by score: those candidates first, then a walk whose
 *     threshold is the BM25 a memory needs to reach the pool's least score
 *     with the largest factor a memory of the user has (kw_user).
 *
 * Memories above the postings' mark are read through FTS5 (with the
 * scope's condition), and those changed since their postings were written
 * (kw_moved) from their rows, their words counted as FTS5 counts them;
 * both are offered as the walks' rows are. Other scopes, an expired memory
 * in scope (the postings would count it), phrases and prefixes take the
 * FTS5 leg. The results, scores and order are the FTS5 leg's, which ranks
 * every match (tests compare them through changes).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/blockmax.h"
#include "engine/memory.h"
#include "store/sqlite/fts.h"
#include "store/sqlite/kwpost.h"
#include "store/sqlite/lite.h"
#include "store/sqlite/lite_filter.h"
#include "store/sqlite/lite_mpost.h"
#include "store/sqlite/memlite.h"

/* Memories above the mark past which FTS5 alone answers (a store just
 * upgraded, before a write builds its postings). */
#define TAIL_MAX 65536

int lite_mem_sqlfail(mnemo *m, const char *what)
{
    int e = sqlite3_errcode(store_db(LITE(m)->st));
    if (store_code(e) == MNEMO_CORRUPT)
        return lite_mem_fail(m, e, what);
    return core_error(m, MNEMO_DB, "%s: %s", what, sqlite3_errmsg(store_db(LITE(m)->st)));
}

/* C's factor inputs from V (lite_mpost.h). */
void lite_mem_factors_of(mcand *c, const double *v)
{
    c->importance = v[0];
    c->about_user = v[1] != 0;
    c->created = v[2];
    c->confirmed = v[3];
    c->confirmations = v[4];
    c->has_factors = 1;
}

/* Adds the up to MEM_EPISODE_SPAN memories of ST (columns mid, agent_id,
 * run_id, created_at, text; nearest first, of the same scope) that continue
 * the episode of OF (created WHEN) in direction DIR. */
static int episode_side(sqlite3_stmt *st, int64_t of, double when, int dir, mem_members *l)
{
    int rc = MNEMO_OK, pos = 0;
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        double at = sqlite3_column_double(st, 3);
        if (fabs(at - when) > MEM_EPISODE_GAP)
            break;
        pos += dir;
        rc = mem_members_add(l, of, sqlite3_column_int64(st, 0), pos,
                             (const char *)sqlite3_column_text(st, 4));
        when = at;
    }
    sqlite3_reset(st);
    return rc;
}

int lite_mem_episodes(mnemo *m, void *ud, const int64_t *mids, size_t n, mem_members *l)
{
    (void)ud;
    fts_rank *fr = store_mrank(LITE(m)->st);
    /* In creation order within the scope's memories (index memories_scope). */
    sqlite3_stmt *own = fts_stmt(fr, "SELECT user_id, agent_id, run_id, created_at, text "
                                     "FROM memories WHERE mid = ?1");
    sqlite3_stmt *side[2] = {
        fts_stmt(fr, "SELECT mid, agent_id, run_id, created_at, text FROM memories "
                     "WHERE user_id = ?1 AND agent_id = ?4 AND run_id = ?5 AND "
                     "deleted_at IS NULL AND (created_at, mid) < (?2, ?3) "
                     "ORDER BY created_at DESC, mid DESC LIMIT 2"),
        fts_stmt(fr, "SELECT mid, agent_id, run_id, created_at, text FROM memories "
                     "WHERE user_id = ?1 AND agent_id = ?4 AND run_id = ?5 AND "
                     "deleted_at IS NULL AND (created_at, mid) > (?2, ?3) "
                     "ORDER BY created_at, mid LIMIT 2")};
    int rc = own && side[0] && side[1] ? MNEMO_OK : lite_mem_sqlfail(m, "memory episodes");
    for (size_t i = 0; !rc && i < n; i++) {
        sqlite3_bind_int64(own, 1, mids[i]);
        if (sqlite3_step(own) == SQLITE_ROW) {
            char *user = store_col_dup(own, 0);
            char *agent = store_col_dup(own, 1);
            char *run = store_col_dup(own, 2);
            double when = sqlite3_column_double(own, 3);
            const char *text = (const char *)sqlite3_column_text(own, 4);
            int turn = text && mem_is_turn(text);
            rc = user && agent && run ? mem_members_add(l, mids[i], mids[i], 0, text)
                                      : MNEMO_NOMEM;
            for (int d = 0; d < 2 && !rc && turn; d++) {
                sqlite3_bind_text(side[d], 1, user, -1, SQLITE_STATIC);
                sqlite3_bind_double(side[d], 2, when);
                sqlite3_bind_int64(side[d], 3, mids[i]);
                sqlite3_bind_text(side[d], 4, agent, -1, SQLITE_STATIC);
                sqlite3_bind_text(side[d], 5, run, -1, SQLITE_STATIC);
                rc = episode_side(side[d], mids[i], when, d ? 1 : -1, l);
                sqlite3_clear_bindings(side[d]);
            }
            free(user);
            free(agent);
            free(run);
        }
        sqlite3_reset(own);
    }
    if (own)
        sqlite3_reset(own);
    return rc;
}

/* A walk's pool: the best candidates so far by SCORE (topk order). */
typedef struct wpool {
    topk k;
    mcand *slot;
} wpool;

typedef struct mpost {
    mnemo *m;
    const query *q;
    kwread kr;
    blockmax_term t[BM25_MAX_PHRASES];
    blockmax_query bq;
    mem_bm25 k;
    bm25_hits *h;          /* the rows read through FTS5 and from their text */
    sqlite3_stmt *scope;   /* a memory's factors, when in scope */
    double fmax;           /* the largest factor in the postings: 1 for the text walk */
    double fmax_rows;      /* the same for the rows read otherwise (not in kw_user) */
    int rows;              /* offering those rows */
    int factors;           /* score with factors (the second walk) */
    int user_query;
    double now;
    wpool *pool;
    const int64_t *skip;   /* offered already (sorted) */
    size_t nskip;
    size_t looked;         /* memories looked up */
} mpost;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int wpool_init(wpool *p, size_t cap)
{
    p->slot = malloc((cap ? cap : 1) * sizeof *p->slot);
    if (!p->slot || topk_init(&p->k, cap)) {
        free(p->slot);
        p->slot = NULL;
        return MNEMO_NOMEM;
    }
    return MNEMO_OK;
}

static void wpool_cleanup(wpool *p)
{
    topk_cleanup(&p->k);
    free(p->slot);
    p->slot = NULL;
}

static void wpool_offer(wpool *p, const mcand *c, double score)
{
    size_t slot = topk_offer(&p->k, score, c->mid);
    if (slot != TOPK_NONE)
        p->slot[slot] = *c;
}

/* The text score of BM25 X (mem_bm25_norm's). */
static double text_of(const mpost *p, double x) { return 1.0 - exp(-2.0 * x / p->k.sum); }

/* The BM25 a row needs for a text score of Y, a little less (a bound). */
static double bm25_for(const mpost *p, double y)
{
    if (y <= 0)
        return -1.0;
    if (y >= 1)
        return HUGE_VAL;
    double x = -0.5 * p->k.sum * log1p(-y);
    return x - x * 1e-9 - 1e-12;
}

/* The BM25 a row must now reach to enter P's pool. */
static double threshold(const mpost *p)
{
    const topk *k = &p->pool->k;
    if (k->n < k->cap || !k->cap)
        return -1.0;
    return bm25_for(p, k->v[0].score / p->fmax);
}

/* Looks up memory C->mid: in scope (*IN), with its factors into C. */
static int look_up(mpost *p, mcand *c, int *in)
{
    sqlite3_stmt *st = p->scope;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, c->mid);
    p->looked++;
    int s = sqlite3_step(st);
    *in = s == SQLITE_ROW;
    if (*in) {
        double v[MEM_FACTOR_NCOLS];
        for (int i = 0; i < MEM_FACTOR_NCOLS; i++)
            v[i] = sqlite3_column_double(st, i);
        lite_mem_factors_of(c, v);
    }
    sqlite3_reset(st);
    return s == SQLITE_ROW || s == SQLITE_DONE ? MNEMO_OK : MNEMO_DB;
}

/* Row ID of BM25 X for the pool (blockmax_query.offer). */
static int offer(void *ud, int64_t id, double x, double *theta)
{
    mpost *p = ud;
    if (p->nskip && bsearch(&id, p->skip, p->nskip, sizeof *p->skip, cmp_i64))
        return MNEMO_OK;
    mcand c;
    memset(&c, 0, sizeof c);
    c.mid = id;
    c.vec = -1;
    c.text = c.rel = c.clear = text_of(p, x);
    const topk *k = &p->pool->k;
    /* A bound first: a row that cannot enter is not looked up. */
    if (k->cap && k->n == k->cap && c.text * (p->rows ? p->fmax_rows : p->fmax) < k->v[0].score)
        return MNEMO_OK;
    /* The rows are in scope: the postings' lists are the scope's, and the
     * rows read through FTS5 were read with its condition. Their factors
     * are read when they count. */
    if (p->factors) {
        int in, rc = look_up(p, &c, &in);
        if (rc || !in)
            return rc;
    }
    c.score = p->factors ? c.rel * mem_factors(p->m, &c, p->user_query, p->now) : c.text;
    wpool_offer(p->pool, &c, c.score);
    *theta = threshold(p);
    return MNEMO_OK;
}

/* Offers the rows read through FTS5 (the hits), then walks the postings. */
static int walk(mpost *p)
{
    bm25_hits *h = p->h;
    double theta = -1;
    p->rows = 1;
    for (size_t i = 0; i < h->n; i++) {
        if (!mem_bm25_hit_ok(p->q, h, i))
            continue;
        int rc = offer(p, h->id[i], bm25_score(h, i, p->k.w, p->k.idf, p->k.k1, p->k.b), &theta);
        if (rc)
            return rc;
    }
    p->rows = 0;
    p->bq.offer = offer;
    p->bq.offer_ud = p;
    p->bq.theta = threshold(p);
    int rc = blockmax_run(&p->bq, NULL);
    return rc == MNEMO_CORRUPT ? rc : rc ? MNEMO_DB : MNEMO_OK;
}

/* The frequencies of memory MID's words (TF, length DL, phrases held MASK)
 * from the FTS5 rows or the postings. */
static int words_of(mpost *p, int64_t mid, uint8_t *tf, int32_t *dl, uint64_t *mask)
{
    const bm25_hits *h = p->h;
    for (size_t i = 0; i < h->n; i++)
        if (h->id[i] == mid) {
            memcpy(tf, h->tf + i * BM25_MAX_PHRASES, BM25_MAX_PHRASES);
            *dl = h->dl[i];
            *mask = h->mask[i];
            return MNEMO_OK;
        }
    return blockmax_row(&p->bq, mid, tf, dl, mask);
}

/* Appends row MID (length DL, phrases MASK, frequencies TF) to H. */
static int hits_add(bm25_hits *h, int64_t mid, int32_t dl, uint64_t mask, const uint8_t *tf)
{
    if (h->n == h->cap && bm25_hits_grow(h))
        return MNEMO_NOMEM;
    size_t j = h->n++;
    h->id[j] = mid;
    h->dl[j] = dl;
    h->mask[j] = mask;
    memcpy(h->tf + j * BM25_MAX_PHRASES, tf, BM25_MAX_PHRASES);
    return MNEMO_OK;
}

/* Step 1 (see the top): the candidates whose text episodes may raise,
 * with their text after them, into S. */
static int episodes(mpost *p, size_t need, mset *s)
{
    size_t ne = MEM_EPISODE_EXPAND + need;
    wpool best;
    if (wpool_init(&best, ne))
        return MNEMO_NOMEM;
    p->pool = &best; /* cppcheck-suppress autoVariables ; reset before the return */
    p->fmax = p->fmax_rows = 1.0;
    p->factors = 0;
    mem_members l = {0};
    bm25_hits h2;
    memset(&h2, 0, sizeof h2);
    int64_t *mids = NULL;
    int rc = walk(p);
    size_t n = best.k.n;
    if (!rc && n && !(mids = malloc(n * sizeof *mids)))
        rc = MNEMO_NOMEM;
    for (size_t i = 0; !rc && i < n; i++)
        mids[i] = best.k.v[i].id;
    if (!rc && n)
        rc = lite_mem_episodes(p->m, NULL, mids, n, &l);
    /* The matches among the members, in scope, besides the best. */
    if (!rc) {
        for (size_t i = 0; i < n && !rc; i++)
            if (!mset_push(s, best.slot[best.k.v[i].slot].mid))
                rc = MNEMO_NOMEM;
            else
                s->v[s->n - 1] = best.slot[best.k.v[i].slot];
    }
    size_t nbest = s->n;
    mset_sort_mid(s, nbest);
    h2.np = p->h->np;
    h2.ndocs = p->h->ndocs;
    h2.avgdl = p->h->avgdl;
    h2.stats = 1;
    for (size_t i = 0; !rc && i < l.n; i++) {
        int64_t mid = l.v[i].mid;
        uint8_t tf[BM25_MAX_PHRASES];
        int32_t dl;
        uint64_t mask;
        if ((rc = words_of(p, mid, tf, &dl, &mask)))
            break;
        if ((mask & p->q->required) != p->q->required || !mask)
            continue;
        int dup = 0;
        for (size_t j = 0; j < h2.n && !dup; j++)
            dup = h2.id[j] == mid;
        if (dup)
            continue;
        mcand c;
        memset(&c, 0, sizeof c);
        c.mid = mid;
        c.vec = -1;
        int in = 1;
        if (!mset_find(s, nbest, mid) && (rc = look_up(p, &c, &in)))
            break;
        if (!in)
            continue;
        if ((rc = hits_add(&h2, mid, dl, mask, tf)))
            break;
        if (!mset_find(s, nbest, mid)) {
            double x = 0;
            double norm = bm25_norm(p->k.k1, p->k.b, (double)dl, h2.avgdl);
            for (int t = 0; t < h2.np; t++)
                if (tf[t])
                    x += bm25_part(p->k.w[t], p->k.idf[t], (double)tf[t], p->k.k1, norm);
            c.text = c.rel = c.clear = text_of(p, x);
            mcand *nc = mset_push(s, mid);
            if (!nc)
                rc = MNEMO_NOMEM;
            else
                *nc = c;
        }
    }
    /* The best as hits too: their words count in their episodes. */
    for (size_t i = 0; !rc && i < nbest; i++) {
        int64_t mid = s->v[i].mid;
        int have = 0;
        for (size_t j = 0; j < h2.n && !have; j++)
            have = h2.id[j] == mid;
        if (have)
            continue;
        uint8_t tf[BM25_MAX_PHRASES];
        int32_t dl;
        uint64_t mask;
        if ((rc = words_of(p, mid, tf, &dl, &mask)) || (rc = hits_add(&h2, mid, dl, mask, tf)))
            break;
    }
    if (!rc && s->n)
        rc = mem_episodes(p->m, p->q, &p->k, &h2, NULL, need, s, s->n, lite_mem_episodes,
                          NULL);
    free(mids);
    mem_members_cleanup(&l);
    bm25_hits_cleanup(&h2);
    wpool_cleanup(&best);
    p->pool = NULL;
    return rc;
}

/* Whether O's memories are a plain scope: one user's live memories, of
 * one agent (and the user's shared ones) or any, one session (and the
 * long-term ones), the long-term ones, or one type, nothing else asked;
 * the postings keep words per user, agent, type and session. */
static int plain_scope(const mem_opts *o)
{
    return o->user && strcmp(o->user, "*") != 0 && !(o->scope == MEM_ALL && !o->run) &&
           !o->subject && !o->categories && !o->deleted &&
           (!o->filters || strcmp(o->filters, "{}") == 0);
}

/* The keys of O's scope (KWPOST_MEMORY_KEY's, without the word) into
 * KEYS (*N of them, at most MAX): 0 when they are more, or too long. */
static int scope_keys(mnemo *m, const mem_opts *o, char **keys, int *n, int max)
{
    const char *agents[64];
    int na = 0;
    char *owned[64];
    int nown = 0;
    if (o->agent && strcmp(o->agent, "*") != 0) {
        agents[na++] = o->agent;
        if (*o->agent)
            agents[na++] = ""; /* the user's shared memories */
    } else {
        sqlite3_stmt *st = fts_stmt(store_mrank(LITE(m)->st),
                                    "SELECT agent_id FROM mem.kw_agents WHERE user_id = ?1");
        if (!st)
            return 0;
        sqlite3_bind_text(st, 1, o->user, -1, SQLITE_STATIC);
        int step;
        while ((step = sqlite3_step(st)) == SQLITE_ROW && na < 64) {
            const char *a = (const char *)sqlite3_column_text(st, 0);
            if (!(owned[nown] = strdup(a ? a : "")))
                break;
            agents[na++] = owned[nown++];
        }
        sqlite3_reset(st);
        if (step != SQLITE_DONE) { /* more than 64, out of memory, or an error */
            for (int i = 0; i < nown; i++)
                free(owned[i]);
            return 0;
        }
    }
    const char *runs[2] = {"", o->run};
    int nr = o->scope == MEM_LONG_TERM ? 1 : o->scope == MEM_SESSION ? 1 : 2;
    if (o->scope == MEM_SESSION)
        runs[0] = o->run;
    int nt = o->type ? 1 : MEM_NTYPES, ok = 1;
    *n = 0;
    for (int a = 0; a < na && ok; a++)
        for (int t = 0; t < nt && ok; t++)
            for (int r = 0; r < nr && ok; r++) {
                const char *type = o->type ? o->type : mem_types[t];
                size_t len = strlen(o->user) + strlen(agents[a]) + strlen(runs[r]);
                if (*n == max || len > KWPOST_MEMORY_KEY_MAX) {
                    ok = 0;
                    break;
                }
                size_t sz = len + strlen(type) + 5;
                if (!(keys[*n] = malloc(sz))) {
                    ok = 0;
                    break;
                }
                snprintf(keys[*n], sz, "%s\x1f%s\x1f%s\x1f%s\x1f", o->user, agents[a], type,
                         runs[r]);
                (*n)++;
            }
    for (int i = 0; i < nown; i++)
        free(owned[i]);
    if (!ok) {
        for (int i = 0; i < *n; i++)
            free(keys[i]);
        *n = 0;
    }
    return ok;
}

/* Prepares HEAD AND the scope's condition WHERE into *ST (finalized by
 * the caller), the condition's arguments (ARGS, then O's filter's) bound
 * from FIRST, after HEAD's own. */
static int prepare_scoped(mnemo *m, const char *head, const char *where, const mfilter *args,
                          const mem_opts *o, int first, sqlite3_stmt **st)
{
    *st = NULL;
    buf sql;
    buf_init(&sql, 1 << 20);
    buf_printf(&sql, "%s AND %s", head, where);
    int rc = buf_err(&sql) ? MNEMO_NOMEM : MNEMO_OK;
    if (!rc && (sqlite3_prepare_v2(store_db(LITE(m)->st), sql.data, -1, st, NULL) != SQLITE_OK ||
                lite_filter_bind(args, *st, first) != SQLITE_OK ||
                lite_filter_bind(&o->filter, *st, first + (int)args->nargs) != SQLITE_OK))
        rc = MNEMO_DB;
    buf_cleanup(&sql);
    return rc;
}

/* The memories whose text changed since their postings were written, in
 * scope: their words counted from their text, into the hits. */
static int moved_rows(mnemo *m, const query *q, const char *where, const mfilter *args,
                      const mem_opts *o, int64_t mark, char (*terms)[TOK_MAX_BYTES + 1],
                      bm25_hits *h)
{
    sqlite3_stmt *st = NULL;
    tok *t = NULL;
    int rc = prepare_scoped(m, "SELECT v.id, m.text FROM mem.kw_moved v CROSS JOIN mem.memories "
                               "m ON m.mid = v.id WHERE v.id <= ?1",
                            where, args, o, 2, &st);
    if (!rc)
        sqlite3_bind_int64(st, 1, mark);
    const char *tv[BM25_MAX_PHRASES];
    for (int i = 0; i < q->nphrase; i++)
        tv[i] = terms[i];
    int s2 = SQLITE_DONE;
    while (!rc && (s2 = sqlite3_step(st)) == SQLITE_ROW) {
        if (!t && tok_new(cfg_str(m->cfg, CFG_LANGUAGE), 0, &t)) {
            rc = MNEMO_NOMEM;
            break;
        }
        uint8_t tf[BM25_MAX_PHRASES];
        int32_t dl;
        const char *text = (const char *)sqlite3_column_text(st, 1);
        if ((rc = kwpost_count(t, text ? text : "", (size_t)sqlite3_column_bytes(st, 1), tv,
                               q->nphrase, tf, &dl)))
            break;
        uint64_t mask = 0;
        for (int k = 0; k < q->nphrase; k++)
            if (tf[k])
                mask |= (uint64_t)1 << k;
        if (!mask)
            continue;
        memset(tf + q->nphrase, 0, BM25_MAX_PHRASES - (size_t)q->nphrase);
        if ((rc = hits_add(h, sqlite3_column_int64(st, 0), dl, mask, tf)))
            break;
        for (int k = 0; k < q->nphrase; k++)
            h->df[k] += tf[k] > 0;
    }
    if (!rc && s2 != SQLITE_DONE)
        rc = MNEMO_DB;
    sqlite3_finalize(st);
    tok_free(t);
    return rc;
}

/* The largest factor a memory of USER in the postings can have: that of
 * its user's largest inputs (kw_user; mem_factors grows with each), never
 * above mem_max_factor. A memory read through FTS5 is looked up anyway. */
static double user_bound(mpost *p, const char *user)
{
    double most = mem_max_factor(p->m, p->user_query);
    if (cfg_num(p->m->cfg, CFG_IMPORTANCE_MAX) < 1)
        return most; /* the importance factor then falls as importance grows */
    sqlite3_stmt *st = fts_stmt(store_mrank(LITE(p->m)->st),
                                "SELECT importance, confirmations, ref, about FROM mem.kw_user "
                                "WHERE user_id = ?1");
    if (!st)
        return most;
    sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
    double b = most;
    if (sqlite3_step(st) == SQLITE_ROW) {
        mcand c;
        memset(&c, 0, sizeof c);
        c.importance = sqlite3_column_double(st, 0);
        c.confirmations = sqlite3_column_double(st, 1);
        c.created = c.confirmed = sqlite3_column_double(st, 2);
        c.about_user = sqlite3_column_int(st, 3);
        b = mem_factors(p->m, &c, p->user_query, p->now);
        b += b * 1e-9; /* rounding: a bound, never below a memory's own */
    }
    sqlite3_reset(st);
    return b < most ? b : most;
}

int lite_mpost_leg(mnemo *m, const query *q, const char *where, const mfilter *args,
                   const mem_opts *o, size_t need, double now, const char *qtext, mset *s)
{
    char terms[BM25_MAX_PHRASES][TOK_MAX_BYTES + 1];
    sqlite3 *db = store_db(LITE(m)->st);
    int64_t mark[KWPOST_RANGES], top = 0;
    if (!plain_scope(o) || !lite_single_terms(m, q, terms) ||
        kwpost_marks(db, "mem", mark) != MNEMO_OK || mark[0] < 0)
        return MNEMO_NOTFOUND;
    fts_rank *r = store_mrank(LITE(m)->st);
    /* Not with too many memories above the mark (a store just upgraded),
     * nor with an expired memory in scope, which the postings count, nor
     * after a writer that does not keep them (an older mnemo) changed a
     * memory they hold. */
    sqlite3_stmt *st = fts_stmt(r, "SELECT (SELECT max(mid) FROM mem.memories), EXISTS (SELECT "
                                   "1 FROM mem.memories WHERE user_id = ?1 AND expires_at IS NOT "
                                   "NULL AND deleted_at IS NULL AND expires_at <= ?2) OR EXISTS "
                                   "(SELECT 1 FROM mem.kw_moved WHERE NOT recorded)");
    if (!st)
        return MNEMO_NOTFOUND;
    sqlite3_bind_text(st, 1, o->user, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 2, now);
    int expired = 1;
    if (sqlite3_step(st) == SQLITE_ROW) {
        top = sqlite3_column_int64(st, 0);
        expired = sqlite3_column_int(st, 1);
    }
    sqlite3_reset(st);
    if (expired || top - mark[0] > TAIL_MAX)
        return MNEMO_NOTFOUND;

    mpost p;
    memset(&p, 0, sizeof p);
    p.m = m;
    p.q = q;
    p.now = now;
    p.user_query = mem_about_user(qtext, o);
    /* The lists: per phrase, its word under each key of the scope. */
    char *scope[BM25_MAX_PHRASES];
    int nscope = 0;
    if (!scope_keys(m, o, scope, &nscope, BM25_MAX_PHRASES / q->nphrase))
        return MNEMO_NOTFOUND;
    int nl = 0;
    int phrase_of[BM25_MAX_PHRASES];
    char *keys[BM25_MAX_PHRASES];
    const char *kv[BM25_MAX_PHRASES];
    int64_t df[BM25_MAX_PHRASES];
    int rc = MNEMO_OK;
    for (int k = 0; k < q->nphrase && !rc; k++)
        for (int y = 0; y < nscope && !rc; y++) {
            size_t n = strlen(scope[y]) + strlen(terms[k]) + 1;
            if (!(keys[nl] = malloc(n))) {
                rc = MNEMO_NOMEM;
                break;
            }
            snprintf(keys[nl], n, "%s%s", scope[y], terms[k]);
            kv[nl] = keys[nl];
            phrase_of[nl++] = k;
        }
    for (int y = 0; y < nscope; y++)
        free(scope[y]);
    if (!rc)
        rc = kwread_load(&p.kr, db, "mem", kv, nl, 0, INT64_MAX, df);
    /* The rows FTS5 holds beyond the postings (above the mark), and the
     * memories moved since: in scope, counted as the FTS5 leg counts. */
    fts_rank_reset(r, q->nphrase);
    sqlite3_stmt *tail = NULL;
    if (!rc)
        rc = prepare_scoped(m, "SELECT mnemo_collect_mem(memories_fts) FROM mem.memories_fts "
                               "CROSS JOIN mem.memories m ON m.mid = memories_fts.rowid WHERE "
                               "memories_fts MATCH ?1 AND memories_fts.rowid > ?2",
                            where, args, o, 3, &tail);
    if (!rc) {
        sqlite3_bind_text(tail, 1, q->match, -1, SQLITE_STATIC);
        sqlite3_bind_int64(tail, 2, mark[0]);
        int s2;
        while ((s2 = sqlite3_step(tail)) == SQLITE_ROW)
            ;
        if (s2 != SQLITE_DONE)
            rc = r->hits.nomem ? MNEMO_NOMEM : MNEMO_DB;
    }
    sqlite3_finalize(tail);
    bm25_hits *h = &r->hits;
    p.h = h;
    if (!rc)
        rc = moved_rows(m, q, where, args, o, mark[0], terms, h);
    if (!rc) {
        int s2 = fts_totals(db, "mem.memories_fts_data", &h->ndocs, &h->avgdl);
        if (s2 != SQLITE_OK)
            rc = s2 == SQLITE_CORRUPT ? MNEMO_CORRUPT : MNEMO_DB;
        h->stats = 1;
        for (int i = 0; i < nl; i++)
            h->df[phrase_of[i]] += df[i];
    }
    if (!rc) {
        mem_bm25_init(m, q, h, &p.k);
        rc = prepare_scoped(m, "SELECT " MEM_FACTOR_COLS " FROM mem.memories m WHERE m.mid = ?1",
                            where, args, o, 2, &p.scope);
    }
    int nt = 0;
    for (int i = 0; !rc && i < nl; i++) {
        kwread_term *kt = &p.kr.t[i];
        int k = phrase_of[i];
        if (!kt->nblocks)
            continue;
        if (!(kt->ub = malloc(kt->nblocks * sizeof *kt->ub))) {
            rc = MNEMO_NOMEM;
            break;
        }
        for (size_t b = 0; b < kt->nblocks; b++)
            kt->ub[b] = blockmax_bound_share(&kt->bound[b], p.k.w[k], p.k.idf[k], p.k.k1,
                                             p.k.b, h->avgdl);
        p.t[nt++] = (blockmax_term){.phrase = k, .list = i, .nblocks = kt->nblocks,
                                    .first = kt->first, .last = kt->last, .ub = kt->ub};
    }
    for (int i = 0; i < nl; i++)
        free(keys[i]);
    if (!rc) {
        p.bq = (blockmax_query){.t = p.t,
                                .nt = nt,
                                .np = q->nphrase,
                                .w = p.k.w,
                                .idf = p.k.idf,
                                .k1 = p.k.k1,
                                .b = p.k.b,
                                .avgdl = h->avgdl,
                                .required = q->required,
                                .read = kwread_block,
                                .gone = p.kr.ngone ? kwread_gone : NULL,
                                .ud = &p.kr};
    }
    /* 1: episodes. */
    int64_t *skip = NULL;
    if (!rc && cfg_num(m->cfg, CFG_MEMORY_CONTEXT) > 0)
        rc = episodes(&p, need, s);
    /* 2: the best by score, the candidates of 1 first. */
    wpool best;
    memset(&best, 0, sizeof best);
    if (!rc && wpool_init(&best, need))
        rc = MNEMO_NOMEM;
    if (!rc && s->n && !(skip = malloc(s->n * sizeof *skip)))
        rc = MNEMO_NOMEM;
    if (!rc) {
        p.pool = &best;
        p.fmax = user_bound(&p, o->user);
        p.fmax_rows = mem_max_factor(m, p.user_query);
        p.factors = 1;
        for (size_t i = 0; i < s->n; i++) {
            mcand *c = &s->v[i];
            skip[i] = c->mid;
            int in = 1;
            if (!c->has_factors)
                rc = look_up(&p, c, &in);
            if (rc)
                break;
            if (!in)
                continue;
            c->rel = c->clear = c->text;
            c->score = c->rel * mem_factors(m, c, p.user_query, now);
            wpool_offer(&best, c, c->score);
        }
        if (s->n > 1)
            qsort(skip, s->n, sizeof *skip, cmp_i64);
        p.skip = skip;
        p.nskip = s->n;
    }
    if (!rc)
        rc = walk(&p);
    if (!rc) {
        s->n = 0;
        for (size_t i = 0; i < best.k.n && !rc; i++) {
            mcand *c = mset_push(s, best.k.v[i].id);
            if (!c)
                rc = MNEMO_NOMEM;
            else
                *c = best.slot[best.k.v[i].slot];
        }
    }
    free(skip);
    wpool_cleanup(&best);
    sqlite3_finalize(p.scope);
    kwread_cleanup(&p.kr);
    if (rc == MNEMO_CORRUPT)
        return core_error(m, MNEMO_CORRUPT, "the memory store's keyword postings are damaged");
    if (rc == MNEMO_DB)
        return core_error(m, MNEMO_DB, "memory search: %s", sqlite3_errmsg(db));
    return rc;
}
