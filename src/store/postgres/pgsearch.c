/*
 * pgsearch.c - the PostgreSQL backend's steps of note search (pgsearch_notes,
 * a search_store: search.c runs the search): the query as PostgreSQL sees
 * it, the keyword leg (postings, pgnpost.c, or pgkeyword.c) interleaved
 * with the vector leg on a second connection, the file-name legs, and the
 * rows the ranking reads through search_io, fetched in batches (see
 * pgstore.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine/provider.h"
#include "engine/rank.h"
#include "engine/search.h"
#include "store/postgres/pgint.h"
#include "util/errcode.h"

/* ----------------------------------------------------------------------
 * Search
 * -------------------------------------------------------------------- */


typedef struct lexctx {
    buf *lex;
    buf *tsq;
    int n;
} lexctx;

static int lex_fn(void *ud, int flags, const char *token, int len, int start, int end)
{
    (void)start;
    (void)end;
    lexctx *x = ud;
    if (flags & TOKF_PART)
        return 0; /* queries name identifiers whole, as FTS5 is asked */
    if (x->n)
        buf_putc(x->lex, ' ');
    buf_append(x->lex, token, (size_t)len);
    if (x->n)
        buf_puts(x->tsq, " <-> ");
    pgtext_lexeme(x->tsq, token, (size_t)len);
    x->n++;
    return 0;
}

static void pgquery_cleanup(pgsearch_query *pq)
{
    buf_cleanup(&pq->phrases);
    buf_cleanup(&pq->prefix);
    buf_cleanup(&pq->tsq);
    buf_cleanup(&pq->ptsq);
    buf_cleanup(&pq->one);
    buf_cleanup(&pq->req);
    buf_cleanup(&pq->neg);
    buf_cleanup(&pq->words);
    buf_cleanup(&pq->lexs);
    buf_cleanup(&pq->toks);
}

/* Builds PQ from Q (Q->match not NULL). */
static int pgquery_build(tok *t, const query *qy, pgsearch_query *pq)
{
    memset(pq, 0, sizeof *pq);
    buf_init(&pq->phrases, 0);
    buf_init(&pq->prefix, 0);
    buf_init(&pq->tsq, 0);
    buf_init(&pq->ptsq, 0);
    buf_init(&pq->one, 0);
    buf_init(&pq->req, 0);
    buf_init(&pq->neg, 0);
    buf_init(&pq->words, 0);
    buf_init(&pq->lexs, 0);
    buf_init(&pq->toks, 0);
    buf_putc(&pq->phrases, '{');
    buf_putc(&pq->prefix, '{');
    buf_putc(&pq->ptsq, '{');
    buf_putc(&pq->req, '{');
    buf_putc(&pq->lexs, '{');
    pq->simple = 1;
    buf surface, lex, tq;
    buf *neg = &pq->neg;
    buf_init(&surface, 0);
    buf_init(&lex, 0);
    buf_init(&tq, 0);
    buf_puts(&pq->tsq, "(");
    const char *p = qy->match;
    int prefix, k = 0;
    while ((p = query_phrase_next(p, &surface, &prefix)) != NULL && k < qy->nphrase) {
        buf_reset(&lex);
        buf_reset(&tq);
        lexctx x = {&lex, &tq, 0};
        tok_run(t, surface.data ? surface.data : "", surface.len, 0, lex_fn, &x);
        if (x.n == 1 && prefix)
            buf_puts(&tq, ":*");
        pq->toff[k] = pq->toks.len;
        buf_append(&pq->toks, lex.data ? lex.data : "", lex.len);
        buf_putc(&pq->toks, '\0');
        pq->pfx[k] = prefix && x.n == 1;
        if (x.n == 0) /* nothing searchable: matches nothing */
            buf_puts(&tq, "'\x01'");
        if (k < qy->npositive) {
            if (k)
                buf_puts(&pq->tsq, " | ");
            buf_printf(&pq->tsq, "(%s)", tq.data);
            pgstore_arr_add(&pq->phrases, lex.data ? lex.data : "", lex.len);
            if (pq->prefix.len > 1)
                buf_putc(&pq->prefix, ',');
            buf_puts(&pq->prefix, prefix && x.n == 1 ? "t" : "f");
            pgstore_arr_add(&pq->ptsq, tq.data, tq.len);
            if (qy->required & ((uint64_t)1 << k))
                pgstore_arr_int(&pq->req, k + 1);
            if (x.n > 1 || (x.n == 1 && prefix))
                pq->simple = 0;
            pq->woff[k] = pq->words.len;
            if (x.n == 1) {
                buf_append(&pq->words, lex.data, lex.len);
                pgstore_arr_add(&pq->lexs, lex.data, lex.len);
            }
            buf_putc(&pq->words, '\0');
        } else {
            if (neg->len)
                buf_puts(neg, " | ");
            buf_printf(neg, "(%s)", tq.data);
            if (x.n != 1)
                pq->negmulti = 1;
        }
        k++;
    }
    buf_puts(&pq->tsq, ")");
    if (neg->len)
        buf_printf(&pq->tsq, " & !(%s)", neg->data);
    buf_putc(&pq->phrases, '}');
    buf_putc(&pq->prefix, '}');
    buf_putc(&pq->ptsq, '}');
    buf_putc(&pq->req, '}');
    buf_putc(&pq->lexs, '}');
    if (!neg->data)
        buf_puts(neg, "");
    pq->np = k;
    pq->npos = k < qy->npositive ? k : qy->npositive;
    int rc = buf_err(&pq->phrases) | buf_err(&pq->prefix) | buf_err(&pq->tsq) |
             buf_err(&pq->ptsq) | buf_err(&pq->req) | buf_err(neg) | buf_err(&lex) |
             buf_err(&tq) | buf_err(&pq->words) | buf_err(&pq->lexs) | buf_err(&pq->toks);
    buf_cleanup(&surface);
    buf_cleanup(&lex);
    buf_cleanup(&tq);
    return rc ? MNEMO_NOMEM : MNEMO_OK;
}

/* What a PostgreSQL search keeps about its candidates. */



static int by_prow(const void *a, const void *b)
{
    const prow *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The row of ID among the first N rows (sorted by id), or NULL. */
static prow *find_row(pgsearch *s, int64_t id, size_t n)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->rows[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && s->rows[lo].id == id ? &s->rows[lo] : NULL;
}

static prow *row_of(pgsearch *s, int64_t id) { return find_row(s, id, s->nrows); }

/* Adds empty rows for IDS not known yet (keeps the array sorted). */
static int rows_add(pgsearch *s, const int64_t *ids, size_t n)
{
    if (s->nrows + n > s->cap) {
        size_t cap = (s->nrows + n) * 2;
        prow *nv = realloc(s->rows, cap * sizeof *nv);
        if (!nv)
            return MNEMO_NOMEM;
        s->rows = nv;
        s->cap = cap;
    }
    size_t before = s->nrows;
    for (size_t i = 0; i < n; i++)
        if (!find_row(s, ids[i], before))
            s->rows[s->nrows++] = (prow){.id = ids[i]};
    if (s->nrows == before)
        return MNEMO_OK;
    qsort(s->rows, s->nrows, sizeof *s->rows, by_prow);
    size_t k = 0;
    for (size_t i = 0; i < s->nrows; i++) /* new rows are empty: duplicates just go */
        if (!k || s->rows[k - 1].id != s->rows[i].id)
            s->rows[k++] = s->rows[i];
    s->nrows = k;
    return MNEMO_OK;
}

static int by_id64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Part PART's cosine CS for row W. */
static void row_cos(prow *w, int part, float cs)
{
    if (part < 0 || part >= CHUNK_MAX_PARTS)
        return;
    w->cos[part] = cs;
    if (part >= w->ncos)
        w->ncos = part + 1;
    w->have_cos = 1;
}

static void pgsearch_cleanup(pgsearch *s)
{
    for (size_t i = 0; i < s->nrows; i++) {
        prow *r = &s->rows[i];
        free(r->next);
        free(r->text);
        free(r->path);
        free(r->source);
        free(r->mime);
        free(r->map);
    }
    free(s->rows);
    free(s->hits);
    free(s->qunit);
    buf_cleanup(&s->qvec);
    /* A search that stopped before its vector leg's answer: the side
     * connection is closed (opened again by the next search). */
    if (s->vside)
        pgquery_side_drop(s->m, s->vside, 0);
}

static const hitrow *hit_of(const pgsearch *s, int64_t id)
{
    size_t lo = 0, hi = s->nhits;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->hits[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nhits && s->hits[lo].id == id ? &s->hits[lo] : NULL;
}

/* Provider "auto" found nothing, yet the tenant's chunks were embedded (an
 * index run with --set provider=...): the keyword search says so in
 * res->fallback, with the settings that would use them (as SQLite's). */
static int unused_vectors(pgsearch *s, mnemo_results *res)
{
    mnemo *m = s->m;
    const char *off = NULL;
    if (strcmp(cfg_str(m->cfg, CFG_PROVIDER), "auto") != 0 || !pgschema_vectors(m, &off)) {
        core_clear(m);
        return MNEMO_OK;
    }
    const char *p1[1] = {s->tenant};
    pg_rows *r = NULL;
    int rc = pgstore_q(m, "search", "SELECT vec_identity FROM mnemo_corpus WHERE tenant = $1", 1,
                       p1, &r);
    const char *ident = !rc && pg_nrows(r) == 1 ? pg_value(r, 0, 0) : "";
    if (!rc && *ident) {
        char from[32];
        buf why;
        buf_init(&why, 4096);
        provider_unused_hint(ident, from, &why);
        rc = buf_err(&why) ? MNEMO_NOMEM : results_set_fallback(res, from, why.data);
        buf_cleanup(&why);
    }
    pg_rows_free(r);
    if (rc && rc != MNEMO_NOMEM) {
        core_clear(m); /* a keyword search does not fail for want of the hint */
        rc = MNEMO_OK;
    }
    return rc;
}

/* ----------------------------------------------------------------------
 * The vector calibration: the mean and spread of the query's cosines over
 * a sample of the stored vectors (search.c scores a cosine by how many
 * deviations it stands above them). The server computes them beside the
 * nearest neighbours; a handle that searches the same corpus a second time
 * fetches the sample once (the same number of rows, at most CAL_FLOATS
 * floats) and computes them itself, until the tenant's corpus row moves
 * (every sync commit and every embedding phase update it).
 * -------------------------------------------------------------------- */

#define CAL_ROWS 2000          /* vectors in the sample at most */
/* The cosine of vector column V with query parameter Q; 0 for a vector
 * without length (text with no known word), as SQLite counts it, where
 * pgvector's distance is NaN. */
#define COSINE(v, q) "coalesce(nullif(1 - (" v " <=> " q "::vector), 'NaN'::float8), 0)"
#define CAL_FLOATS (1u << 20)  /* floats in the sample at most: 4 MiB */
/* The text leg's vectors where the tenant keeps images and audio too
 * (their own leg, media_leg, measures those); without media the
 * statements are as they were. */
#define NOTES_ONLY " AND chunk_id < " PGSTORE_MEDIA_IDS

static const char *stable_sql(pgsearch *s, const char *sql);

/* Scales V[0..D) to unit length; 0 when it has none. */
static int unit_scale(float *v, size_t d)
{
    double nn = 0;
    for (size_t j = 0; j < d; j++)
        nn += (double)v[j] * v[j];
    if (!(nn > 0))
        return 0;
    float k = (float)(1.0 / sqrt(nn));
    for (size_t j = 0; j < d; j++)
        v[j] *= k;
    return 1;
}

static int cal_rows(int dims)
{
    size_t r = CAL_FLOATS / (size_t)(dims > 0 ? dims : 1);
    return r >= CAL_ROWS ? CAL_ROWS : r < 32 ? 32 : (int)r;
}

/* Parses the pgvector text S ([x,y,...]) into V[0..DIMS), scaled to unit
 * length; 0 when it is not DIMS numbers. */
static int cal_parse(const char *s, float *v, int dims)
{
    if (*s++ != '[')
        return 0;
    for (int i = 0; i < dims; i++) {
        char *end;
        v[i] = strtof(s, &end);
        if (end == s || *end != (i + 1 < dims ? ',' : ']'))
            return 0;
        s = end + 1;
    }
    unit_scale(v, (size_t)dims); /* a vector without length stays 0: cosine 0 */
    return 1;
}

/* Fetches the sample of the vectors S's search reads into ST, for KEY. */
static int cal_fetch(pgsearch *s, struct pgstore *st, const char *key)
{
    char sql[256], lim[16];
    snprintf(sql, sizeof sql,
             "SELECT embedding::text FROM %s WHERE tenant = $1 AND model = $2%s LIMIT $3::int",
             s->table, s->nmedia ? NOTES_ONLY : "");
    snprintf(lim, sizeof lim, "%d", cal_rows(s->dims));
    const char *p[3] = {s->tenant, s->ident, lim};
    pg_rows *r = NULL;
    int rc = pgstore_q(s->m, "vector search", sql, 3, p, &r);
    if (rc)
        return rc;
    size_t n = pg_nrows(r), d = (size_t)s->dims, got = 0;
    float *v = malloc((n ? n : 1) * d * sizeof *v);
    char *k = strdup(key);
    if (!v || !k) {
        free(v);
        free(k);
        pg_rows_free(r);
        return core_error(s->m, MNEMO_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        got += (size_t)cal_parse(pg_value(r, i, 0), v + got * d, s->dims);
    pg_rows_free(r);
    free(st->cal);
    free(st->cal_key);
    st->cal = v;
    st->cal_n = got;
    st->cal_dims = s->dims;
    st->cal_key = k;
    return MNEMO_OK;
}

/* The mean and spread of the cosines of Q (unit length) with ST's sample,
 * as the server's avg() and stddev_pop() compute them. */
static void cal_stats(const struct pgstore *st, const float *q, search_vstats *vs)
{
    size_t d = (size_t)st->cal_dims;
    double sum = 0, sumsq = 0;
    for (size_t i = 0; i < st->cal_n; i++) {
        const float *v = st->cal + i * d;
        double x = 0;
        for (size_t j = 0; j < d; j++)
            x += (double)v[j] * q[j];
        sum += x;
        sumsq += x * x;
    }
    double n = (double)st->cal_n;
    double mu = n > 0 ? sum / n : 0, var = n > 0 ? sumsq / n - mu * mu : 0;
    vs->null.mean = mu;
    vs->null.sd = var > 0 ? sqrt(var) : 0;
    vs->null.n = st->cal_n;
}

/* Whether S's handle computes the calibration itself for the corpus
 * version XMIN (fetching the sample on the second search of a version). */
static int cal_ready(pgsearch *s, const char *xmin)
{
    struct pgstore *st = pgstore_state(s->m);
    if (!st)
        return 0;
    buf key;
    buf_init(&key, 0);
    buf_printf(&key, "%s\n%s\n%s", s->tenant, xmin, s->ident);
    if (buf_err(&key)) {
        buf_cleanup(&key);
        return 0;
    }
    int ready = st->cal_key && st->cal_dims == s->dims && !strcmp(st->cal_key, key.data);
    if (!ready && st->cal_seen && !strcmp(st->cal_seen, key.data)) {
        ready = cal_fetch(s, st, key.data) == MNEMO_OK;
        if (!ready)
            core_clear(s->m); /* the server computes it, as before */
    }
    if (!ready) {
        free(st->cal_seen);
        st->cal_seen = strdup(key.data);
    }
    buf_cleanup(&key);
    return ready;
}

/* The vector leg: K nearest chunks by cosine (HNSW), and the mean and
 * spread of the query's cosines over (a sample of) all chunks. Returns an
 * error only for a named provider that fails; otherwise a failure becomes
 * res->fallback and the leg does not run. */
static int vector_start(pgsearch *s, const char *qtext, const char *source, size_t k,
                        mnemo_results *res, search_vstats *vs, int beside)
{
    mnemo *m = s->m;
    char name[32];
    int explicit_;
    provider_resolve(m, name, &explicit_);
    if (strcmp(name, "none") == 0)
        return unused_vectors(s, res);
    const char *why = NULL;
    if (!pgschema_vectors(m, &why))
        return results_set_fallback(res, name, why ? why : "vectors are off");
    buf err;
    buf_init(&err, 8192);
    embedder *e = NULL;
    float *qv = NULL;
    int rc = provider_embedder(m, name, &e, &err);
    size_t qlen = strlen(qtext);
    if (!rc)
        rc = embed_texts(e, EMBED_QUERY, &qtext, &qlen, 1, &qv, &err);
    if (rc) {
        rc = search_vector_failed(m, res, name, explicit_, rc, &err);
        buf_cleanup(&err);
        return rc;
    }
    buf_cleanup(&err);
    provider_chunk_identity(m, e, s->ident, sizeof s->ident);
    provider_calib_identity(m, e, s->cident, sizeof s->cident);
    s->dims = embed_dims(e);
    char ctable[64];
    snprintf(ctable, sizeof ctable, "mnemo_calib_vec_%d", s->dims);
    const char *p1[2] = {s->tenant, ctable};
    pg_rows *r = NULL;
    rc = pgstore_q(m, "search",
                   "SELECT vec_identity, xmin::text, to_regclass($2) IS NOT NULL, nmedia FROM "
                   "mnemo_corpus WHERE tenant = $1",
                   2, p1, &r);
    int same = !rc && pg_nrows(r) == 1 && !strcmp(pg_value(r, 0, 0), s->ident);
    s->ccal = same && !strcmp(pg_value(r, 0, 2), "t");
    const char *stored = !rc && pg_nrows(r) == 1 ? pg_value(r, 0, 0) : "";
    if (!rc && !same) {
        char reason[1200];
        snprintf(reason, sizeof reason,
                 *stored ? "the vectors were built with another embedding setup (%s); run: "
                           "mnemo index"
                         : "no vectors yet%s; run: mnemo index",
                 stored);
        rc = results_set_fallback(res, name, reason);
    }
    if (rc || !same) {
        pg_rows_free(r);
        free(qv);
        return rc;
    }
    snprintf(s->table, sizeof s->table, "mnemo_chunk_vec_%d", s->dims);
    s->nmedia = pgstore_ll(r, 0, 3);
    snprintf(s->xmin, sizeof s->xmin, "%s", pg_value(r, 0, 1));
    const char *notes = s->nmedia ? NOTES_ONLY : "";
    int own = cal_ready(s, pg_value(r, 0, 1));
    pg_rows_free(r);
    if ((s->qunit = malloc((size_t)s->dims * sizeof *s->qunit))) {
        memcpy(s->qunit, qv, (size_t)s->dims * sizeof *s->qunit);
        if (!unit_scale(s->qunit, (size_t)s->dims))
            memset(s->qunit, 0, (size_t)s->dims * sizeof *s->qunit);
    }
    if (own && !s->qunit)
        own = 0;
    if (own)
        cal_stats(pgstore_state(m), s->qunit, vs);
    buf_init(&s->qvec, 0);
    pgtext_vector_literal(&s->qvec, qv, s->dims);
    free(qv);
    char *lim = s->vlim, *cal = s->vcal, *sql = s->vsql;
    snprintf(lim, sizeof s->vlim, "%zu", k);
    snprintf(cal, sizeof s->vcal, "%d", cal_rows(s->dims));
    /* The nearest parts (a chunk's best part stands for it: more rows than
     * chunks are read), their best K chunks, and every part's cosine of
     * those. */
#define NEAREST                                                                                   \
    "nr AS (SELECT v.chunk_id, " COSINE("v.embedding", "$2") " AS cos FROM %s v WHERE "         \
    "v.tenant = $1 AND v.model = $3%s ORDER BY v.embedding <=> $2::vector LIMIT 4 * $4::int), " \
    "nn AS (SELECT nr.chunk_id FROM nr LEFT JOIN mnemo_chunks c ON c.tenant = $1 AND c.id = "   \
    "nr.chunk_id WHERE $5 = '' OR c.source = $5 GROUP BY nr.chunk_id ORDER BY max(nr.cos) "     \
    "DESC, nr.chunk_id LIMIT $4::int), "                                                         \
    "np AS (SELECT v.chunk_id, v.part, " COSINE("v.embedding", "$2") " AS cos FROM nn JOIN %s " \
    "v ON v.tenant = $1 AND v.model = $3 AND v.chunk_id = nn.chunk_id) "
    /* And the query's cosines with the fixed texts (engine/calib.h), the
     * last parameter their setup ($6, or $7 beside the sample's size). */
    char rf[512];
    const char *cp = own ? "$6" : "$7";
    if (s->ccal)
        snprintf(rf, sizeof rf,
                 "rf AS (SELECT coalesce(array_agg(" COSINE("embedding", "$2") "), '{}') AS cs "
                 "FROM mnemo_calib_vec_%d WHERE tenant = $1 AND identity = %s), ",
                 s->dims, cp);
    else /* not made yet: none */
        snprintf(rf, sizeof rf, "rf AS (SELECT '{}'::float8[] AS cs, %s::text AS id), ", cp);
    if (own)
        snprintf(sql, sizeof s->vsql,
                 "WITH %s" NEAREST "SELECT np.chunk_id, np.cos, np.part, NULL, NULL, NULL, rf.cs "
                 "FROM rf LEFT JOIN np ON true",
                 rf, s->table, notes, s->table);
    else /* the calibration's sample: all of a small index, where it matters most */
        snprintf(sql, sizeof s->vsql,
                 "WITH st AS (SELECT avg(" COSINE("embedding", "$2") ") AS mean, "
                 "stddev_pop(" COSINE("embedding", "$2") ") AS sd, count(*) AS n FROM "
                 "(SELECT embedding FROM %s WHERE tenant = $1 AND model = $3%s LIMIT $6::int) "
                 "x), %s" NEAREST "SELECT np.chunk_id, np.cos, np.part, st.mean, st.sd, st.n, "
                 "rf.cs FROM st CROSS JOIN rf LEFT JOIN np ON true",
                 s->table, notes, rf, s->table, notes, s->table);
#undef NEAREST
    const char *p[7] = {s->tenant, s->qvec.data, s->ident, lim, source, own ? s->cident : cal,
                        s->cident};
    memcpy(s->vp, p, sizeof p);
    if (buf_err(&s->qvec))
        return core_error(m, MNEMO_NOMEM, "out of memory");
    s->vq = stable_sql(s, sql);
    s->vnp = own ? 6 : 7;
    s->vown = own;
    snprintf(s->vname, sizeof s->vname, "%s", name);
    s->vprov = embed_provider(e); /* the handle's embedder: alive for the search */
    s->vmodel = embed_model(e);
    s->vstate = 1;
    s->vec = 1; /* candidates' cosines may be fetched from here on */
    /* On the side connection, answered while the keyword leg runs. */
    pg_conn *side;
    if (beside && s->media <= 0 && pgquery_side(m, &side) &&
        !pgquery_side_send(m, side, s->vq, s->vq != sql, s->vnp, s->vp))
        s->vside = side;
    return MNEMO_OK;
}

/* The vector leg ran: the results say so. */
static int leg_ran(pgsearch *s, mnemo_results *res, search_vstats *vs)
{
    vs->ran = 1;
    free(res->mode);
    res->mode = strdup("hybrid");
    res->provider = strdup(s->vprov);
    res->model = strdup(s->vmodel);
    return res->mode && res->provider && res->model ? MNEMO_OK : MNEMO_NOMEM;
}

/* The vector leg's answer (vector_start's statement), into IDS. */
static int vector_end(pgsearch *s, mnemo_results *res, search_vstats *vs, int64_t **ids,
                      size_t *nids)
{
    mnemo *m = s->m;
    if (!s->vstate)
        return MNEMO_OK;
    s->vstate = 0;
    if (s->media > 0) { /* images and audio only: their leg alone (media_leg) */
        *ids = NULL;
        *nids = 0;
        return leg_ran(s, res, vs);
    }
    pg_rows *r = NULL;
    int rc = MNEMO_NOTFOUND, own = s->vown;
    if (s->vside) {
        rc = pgquery_side_collect(m, s->vside, &r);
        s->vside = NULL;
    }
    if (rc) /* not sent beside, or lost there: on the handle's connection */
        rc = s->vq == s->vsql ? pgstore_q(m, "vector search", s->vsql, s->vnp, s->vp, &r)
                              : pgstore_qp(m, "vector search", s->vq, s->vnp, s->vp, &r);
    if (rc) {
        /* No table yet (no vectors stored): keyword only, and no cosine
         * fetched meanwhile counts. */
        s->vec = 0;
        for (size_t i = 0; i < s->nrows; i++)
            s->rows[i].have_cos = s->rows[i].ncos = 0;
        rc = results_set_fallback(res, s->vname,
                                  m->err.data ? m->err.data : "vector search failed");
        core_clear(m);
        return rc;
    }
    size_t n = pg_nrows(r);
    *ids = malloc((n ? n : 1) * sizeof **ids);
    if (!*ids) {
        pg_rows_free(r);
        return core_error(m, MNEMO_NOMEM, "out of memory");
    }
    *nids = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 && !own) {
            vs->null.mean = strtod(pg_value(r, 0, 3), NULL);
            vs->null.sd = strtod(pg_value(r, 0, 4), NULL);
            vs->null.n = (size_t)pgstore_ll(r, 0, 5);
        }
        if (i == 0) {
            double cs[CALIB_NTEXTS];
            calib_ref_cosines(&vs->null, cs,
                              pgtext_float_array(pg_value(r, 0, 6), cs, CALIB_NTEXTS));
        }
        if (pg_isnull(r, i, 0))
            continue;
        (*ids)[(*nids)++] = pgstore_ll(r, i, 0); /* a chunk once for each part */
    }
    if (*nids > 1) { /* one id a chunk */
        qsort(*ids, *nids, sizeof **ids, by_id64);
        size_t u = 0;
        for (size_t i = 0; i < *nids; i++)
            if (!u || (*ids)[u - 1] != (*ids)[i])
                (*ids)[u++] = (*ids)[i];
        *nids = u;
    }
    /* Their cosines came along, every part's: the factors' fetch need not
     * read their vectors again. */
    if (rows_add(s, *ids, *nids)) {
        pg_rows_free(r);
        return core_error(m, MNEMO_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        prow *w = pg_isnull(r, i, 0) ? NULL : row_of(s, pgstore_ll(r, i, 0));
        if (w)
            row_cos(w, (int)pgstore_ll(r, i, 2), strtof(pg_value(r, i, 1), NULL));
    }
    pg_rows_free(r);
    return leg_ran(s, res, vs);
}

#define MEDIA_REF 64 /* media measured against the fixed texts for their baseline */

/* The media's baseline (calib.h): the fixed texts' cosines with the first
 * MEDIA_REF media (unrelated text against media, which sit apart from
 * text), as SQLite's vectors_media_calib. 1 with NL's ref fields set when
 * the handle keeps it for this corpus version and setup (*KEY, the
 * caller's); 0: media_leg's statement computes it. */
static int media_ref_kept(pgsearch *s, calib_null *nl, char **key)
{
    struct pgstore *st = pgstore_state(s->m);
    buf k;
    buf_init(&k, 0);
    buf_printf(&k, "%s\n%s\n%s\n%s", s->tenant, s->xmin, s->ident, s->cident);
    *key = buf_err(&k) ? NULL : buf_detach(&k);
    buf_cleanup(&k);
    if (!st || !*key || !st->mref_key || strcmp(st->mref_key, *key) != 0)
        return 0;
    nl->ref_mean = st->mref.ref_mean;
    nl->ref_sd = st->mref.ref_sd;
    nl->ref_n = st->mref.ref_n;
    return 1;
}

/* The media leg: images and audio (chunk ids from PGSTORE_MEDIA_ID_BASE
 * up) measured on their own, as SQLite's (lite_search.c): the K nearest
 * media by an exact scan of theirs (few: every one is a file embedded,
 * and an index scan filtered to them would find none behind the notes),
 * the mean and spread of the query's cosines with all of them, and their
 * baseline (media_ref_kept) into MVS. Their ids join *IDS. Runs only
 * after a text leg that ran, on a tenant with media. */
static int media_leg(pgsearch *s, size_t k, search_vstats *mvs, int64_t **ids, size_t *nids)
{
    mnemo *m = s->m;
    char *key = NULL;
    calib_null nl;
    memset(&nl, 0, sizeof nl);
    int kept = media_ref_kept(s, &nl, &key);
    char sql[2048], rf[768], lim[32];
    snprintf(lim, sizeof lim, "%zu", k);
    if (kept || !s->ccal)
        snprintf(rf, sizeof rf, "'{}'::float8[] AS cs WHERE $5 = $5");
    else
        snprintf(rf, sizeof rf,
                 "coalesce(array_agg(" COSINE("c.embedding", "r.embedding") "), '{}') AS cs "
                 "FROM (SELECT embedding FROM %s WHERE tenant = $1 AND model = $3 AND chunk_id "
                 ">= " PGSTORE_MEDIA_IDS " ORDER BY chunk_id LIMIT %d) r CROSS JOIN "
                 "mnemo_calib_vec_%d c WHERE c.tenant = $1 AND c.identity = $5",
                 s->table, MEDIA_REF, s->dims);
    snprintf(sql, sizeof sql,
             "WITH md AS (SELECT v.chunk_id, " COSINE("v.embedding", "$2") " AS cos FROM %s v "
             "WHERE v.tenant = $1 AND v.model = $3 AND v.chunk_id >= " PGSTORE_MEDIA_IDS "), "
             "st AS (SELECT avg(cos) AS mean, stddev_pop(cos) AS sd, count(*) AS n FROM md), "
             "top AS (SELECT chunk_id, cos FROM md ORDER BY cos DESC, chunk_id LIMIT $4::int), "
             "rf AS (SELECT %s) "
             "SELECT top.chunk_id, top.cos, st.mean, st.sd, st.n, rf.cs FROM st CROSS JOIN rf "
             "LEFT JOIN top ON true",
             s->table, rf);
    const char *p[5] = {s->tenant, s->qvec.data, s->ident, lim, s->cident};
    pg_rows *r = NULL;
    const char *q = stable_sql(s, sql);
    int rc = q == sql ? pgstore_q(m, "media search", sql, 5, p, &r)
                      : pgstore_qp(m, "media search", q, 5, p, &r);
    size_t n = rc ? 0 : pg_nrows(r);
    double *cs = NULL;
    if (!rc && n && !kept) {
        size_t max = (size_t)MEDIA_REF * CALIB_NTEXTS;
        if (!(cs = malloc(max * sizeof *cs)))
            rc = core_error(m, MNEMO_NOMEM, "out of memory");
        else
            calib_ref_cosines(&nl, cs, pgtext_float_array(pg_value(r, 0, 5), cs, max));
        struct pgstore *st = pgstore_state(m);
        if (!rc && st && key) { /* kept for the next search of this version */
            free(st->mref_key);
            st->mref_key = key;
            st->mref = nl;
            key = NULL;
        }
    }
    free(cs);
    free(key);
    int64_t *v = rc || !n ? NULL : realloc(*ids, (*nids + n) * sizeof *v);
    if (!rc && n && !v)
        rc = core_error(m, MNEMO_NOMEM, "out of memory");
    size_t before = *nids;
    if (v) {
        *ids = v;
        nl.mean = strtod(pg_value(r, 0, 2), NULL);
        nl.sd = strtod(pg_value(r, 0, 3), NULL);
        nl.n = (size_t)pgstore_ll(r, 0, 4);
        for (size_t i = 0; i < n; i++)
            if (!pg_isnull(r, i, 0))
                v[(*nids)++] = pgstore_ll(r, i, 0);
    }
    /* Their cosines came along: the factors' fetch need not read them. */
    if (!rc && *nids > before && rows_add(s, *ids + before, *nids - before))
        rc = core_error(m, MNEMO_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        prow *w = pg_isnull(r, i, 0) ? NULL : row_of(s, pgstore_ll(r, i, 0));
        if (w)
            row_cos(w, 0, strtof(pg_value(r, i, 1), NULL));
    }
    pg_rows_free(r);
    if (!rc && *nids > before) {
        mvs->ran = 1;
        mvs->null = nl;
    }
    return rc;
}

/* The file-name legs: files the query names, and files whose path words
 * hold query terms, with their chunks. */
static int file_legs(pgsearch *s, const query *qy, const pgsearch_query *pq, const char *source,
                     search_file_hits *fh)
{
    pg_rows *r = NULL;
    int rc;
    if (qy->filename[0]) {
        const char *p[3] = {s->tenant, qy->filename, source};
        rc = pgstore_qp(s->m, "search",
               "SELECT x.id, x.tier, c.id, c.seq FROM (SELECT id, CASE WHEN path_lc = $2 "
               "THEN 3 WHEN name_lc = $2 THEN 2 ELSE 1 END AS tier FROM mnemo_files "
               "WHERE tenant = $1 AND status = 0 AND (path_lc = $2 OR name_lc = $2 OR "
               "stem_lc = $2) AND ($3 = '' OR source = $3) LIMIT 20) x "
               "LEFT JOIN mnemo_chunks c ON c.tenant = $1 AND c.file_id = x.id ORDER BY x.id",
               3, p, &r);
        if (rc)
            return rc;
        for (size_t i = 0; i < pg_nrows(r); i++)
            if (search_file_hit_add(fh, pgstore_ll(r, i, 0), pgstore_ll(r, i, 2),
                                    pgstore_ll(r, i, 3), 1.0, (int)pgstore_ll(r, i, 1))) {
                pg_rows_free(r);
                return core_error(s->m, MNEMO_NOMEM, "out of memory");
            }
        pg_rows_free(r);
    }
    if (!qy->match || pq->npos == 0) {
        search_file_hits_finish(fh);
        return MNEMO_OK;
    }
    char lim[32];
    snprintf(lim, sizeof lim, "%d", PATH_ROWS_MAX);
    const char *p[5] = {s->tenant, pq->tsq.data, pq->ptsq.data, source, lim};
    rc = pgstore_qp(s->m, "search",
           "SELECT f.id, f.hits, c.id, c.seq FROM (SELECT id, (SELECT count(*) FROM "
           "unnest($3::tsquery[]) x WHERE path_tsv @@ x) AS hits FROM mnemo_files "
           "WHERE tenant = $1 AND status = 0 AND path_tsv @@ $2::tsquery AND "
           "($4 = '' OR source = $4) ORDER BY id LIMIT $5::int) f "
           "LEFT JOIN mnemo_chunks c ON c.tenant = $1 AND c.file_id = f.id ORDER BY f.id",
           5, p, &r);
    if (rc)
        return rc;
    for (size_t i = 0; i < pg_nrows(r); i++) {
        double frac = (double)pgstore_ll(r, i, 1) / pq->npos;
        if (search_file_hit_add(fh, pgstore_ll(r, i, 0), pgstore_ll(r, i, 2), pgstore_ll(r, i, 3),
                                frac, 0)) {
            pg_rows_free(r);
            return core_error(s->m, MNEMO_NOMEM, "out of memory");
        }
    }
    pg_rows_free(r);
    search_file_hits_finish(fh);
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * The factors cache: a chunk's importance and date, kept by the handle
 * between searches. Rows are written only by syncs, and every sync commit
 * updates the tenant's corpus row, whose version the postings' snapshot
 * reads (s->stamp): while it stays, so do the factors. A search without a
 * stamp (phrases, prefixes, no keyword) neither reads nor fills it.
 * -------------------------------------------------------------------- */

#define FC_MAX (1u << 21) /* slots: 2M, 48 MiB; beyond, factors are fetched */

static size_t fc_hash(int64_t id) { return (size_t)((uint64_t)id * 0x9E3779B97F4A7C15ull >> 20); }

/* The handle's cache for this search, emptied when its key moved; NULL:
 * not to be used. */
static struct pgstore *fc_open(pgsearch *s)
{
    struct pgstore *st = s->stamp[0] ? pgstore_state(s->m) : NULL;
    if (!st)
        return NULL;
    size_t nt = strlen(s->tenant), ns = strlen(s->stamp);
    if (st->fc_key && strncmp(st->fc_key, s->tenant, nt) == 0 && st->fc_key[nt] == '\n' &&
        strcmp(st->fc_key + nt + 1, s->stamp) == 0) {
        st->fc_warm = 1;
        return st;
    }
    char *key = malloc(nt + ns + 2);
    if (!key)
        return NULL;
    memcpy(key, s->tenant, nt);
    key[nt] = '\n';
    memcpy(key + nt + 1, s->stamp, ns + 1);
    free(st->fc_key);
    st->fc_key = key;
    if (st->fc)
        memset(st->fc, 0, st->fc_cap * sizeof *st->fc);
    st->fc_n = 0;
    st->fc_warm = 0;
    st->vc_n = 0;
    return st;
}

static pgfactor *fc_slot(struct pgstore *st, int64_t id)
{
    size_t mask = st->fc_cap - 1;
    for (size_t i = fc_hash(id) & mask;; i = (i + 1) & mask)
        if (st->fc[i].id == id || st->fc[i].id == 0)
            return &st->fc[i];
}

static const pgfactor *fc_get(struct pgstore *st, int64_t id)
{
    if (!st || !st->fc_n || id == 0)
        return NULL;
    const pgfactor *f = fc_slot(st, id);
    return f->id ? f : NULL;
}

static void fc_put(struct pgstore *st, int64_t id, double when, int importance)
{
    if (!st || id == 0)
        return;
    if (2 * (st->fc_n + 1) > st->fc_cap) { /* at most half full */
        size_t cap = st->fc_cap ? 2 * st->fc_cap : 1024;
        if (cap > FC_MAX)
            return;
        pgfactor *nv = calloc(cap, sizeof *nv), *old = st->fc;
        if (!nv)
            return;
        size_t oldcap = st->fc_cap;
        st->fc = nv;
        st->fc_cap = cap;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].id)
                *fc_slot(st, old[i].id) = old[i];
        free(old);
    }
    pgfactor *f = fc_slot(st, id);
    if (!f->id)
        st->fc_n++;
    *f = (pgfactor){id, when, importance, f->id ? f->vec : 0, f->id ? f->nvec : 0};
}

/* Vectors: a candidate's cosine with the query, from its unit vector kept
 * beside its factors. A search asks the server for the vectors instead of
 * the cosines from the second search of a stamp on (a process that searches
 * once gains nothing from them), up to VC_FLOATS floats; then it computes
 * the cosines itself. */

#define VC_FLOATS (1u << 24) /* 64 MiB */

static float unit_dot(const float *a, const float *b, int d)
{
    double x = 0;
    for (int j = 0; j < d; j++)
        x += (double)a[j] * b[j];
    return (float)x;
}

/* Whether S's search of ST fetches vectors to keep. */
static int vc_filling(const pgsearch *s, const struct pgstore *st)
{
    return st && st->fc_warm && s->qunit && s->dims > 0 &&
           (st->vc_dims == s->dims || st->vc_n == 0) &&
           (st->vc_n + 1) * (size_t)s->dims <= VC_FLOATS;
}

/* The unit vector of HEX (pgvector's binary form, hex-encoded: the
 * dimension count, a reserved word, then big-endian floats) into V[0..D);
 * 0 when it is not D numbers. */
static int unit_of_hex(const char *hx, float *v, size_t d)
{
    if (hx[0] == '\\' && hx[1] == 'x')
        hx += 2;
    if (strlen(hx) != 8 + 8 * d || pgtext_unhex(hx + 8, v, 4 * d) != (long)(4 * d))
        return 0;
    for (size_t j = 0; j < d; j++) {
        uint32_t u;
        memcpy(&u, &v[j], sizeof u);
        u = __builtin_bswap32(u); /* big-endian on the wire */
        memcpy(&v[j], &u, sizeof u);
    }
    unit_scale(v, d); /* a vector without length stays 0: cosine 0 */
    return 1;
}

/* Row W's cosine of part PART from the vector HEX, which ST keeps for it
 * when it can (a chunk's parts come in order, kept one after the other). */
static void vc_put(const pgsearch *s, struct pgstore *st, prow *w, int part, const char *hx)
{
    size_t d = (size_t)s->dims;
    if (st->vc_n == st->vc_cap && (st->vc_n + 1) * d <= VC_FLOATS) {
        size_t cap = st->vc_cap ? 2 * st->vc_cap : 1024;
        if (cap * d > VC_FLOATS)
            cap = VC_FLOATS / d;
        float *nv = realloc(st->vc, cap * d * sizeof *nv);
        if (nv) {
            st->vc = nv;
            st->vc_cap = cap;
        }
    }
    pgfactor *f = fc_slot(st, w->id);
    if (f->id && part > 0 && (!f->vec || f->vec + (uint32_t)f->nvec - 1 != st->vc_n ||
                              f->nvec != part))
        f->vec = 0; /* its run is broken: not kept */
    int keep = f->id && st->vc_n < st->vc_cap && (part == 0 || f->vec);
    float *tmp = keep ? NULL : malloc(d * sizeof *tmp);
    float *v = keep ? st->vc + st->vc_n * d : tmp;
    if (v && unit_of_hex(hx, v, d)) {
        if (keep) {
            st->vc_dims = s->dims;
            st->vc_n++;
            if (part == 0) {
                f->vec = (uint32_t)st->vc_n;
                f->nvec = 0;
            }
            f->nvec++;
        } else if (f->id) {
            f->vec = 0;
        }
        row_cos(w, part, unit_dot(v, s->qunit, s->dims));
    } /* else not known: search.c treats the row as one without a vector */
    free(tmp);
}

/* SQL at an address that lasts as long as the handle (to be prepared), or
 * SQL itself when that cannot be had. */
static const char *stable_sql(pgsearch *s, const char *sql)
{
    struct pgstore *st = pgstore_state(s->m);
    if (!st)
        return sql;
    for (int i = 0; i < st->nfsql; i++)
        if (!strcmp(st->fsql[i], sql))
            return st->fsql[i];
    if (st->nfsql == (int)(sizeof st->fsql / sizeof *st->fsql))
        return sql;
    char *d = strdup(sql);
    if (!d)
        return sql;
    st->fsql[st->nfsql++] = d;
    return d;
}

/* Row I of R (a chunk's part: its cosine or, when FILL, its vector in
 * column 6, the part in column 7) for W, unless W's cosines are known
 * from before this fetch. */
static void part_cos(const pgsearch *s, struct pgstore *fc, prow *w, const pg_rows *r, size_t i,
                     int fill)
{
    if (pg_isnull(r, i, 6) || pg_isnull(r, i, 7) || (w->have_cos && !w->fetching))
        return;
    int part = (int)pgstore_ll(r, i, 7);
    w->fetching = 1;
    if (fill)
        vc_put(s, fc, w, part, pg_value(r, i, 6));
    else
        row_cos(w, part, strtof(pg_value(r, i, 6), NULL));
}

/* Fetches what KIND needs for IDS: 'f' factors (and cosines), 's' vectors
 * or texts, 'r' rows. */
static int pg_prefetch(void *ud, int kind, const int64_t *ids, size_t n)
{
    pgsearch *s = ud;
    size_t want = 0;
    int64_t *need = malloc((n ? n : 1) * sizeof *need);
    if (!need || rows_add(s, ids, n)) {
        free(need);
        return core_error(s->m, MNEMO_NOMEM, "out of memory");
    }
    struct pgstore *fc = kind == 'f' ? fc_open(s) : NULL;
    int fill = s->vec && vc_filling(s, fc);
    for (size_t i = 0; i < n; i++) {
        prow *r = row_of(s, ids[i]);
        const pgfactor *f = kind == 'f' ? fc_get(fc, ids[i]) : NULL;
        if (f && !r->have_f) {
            r->have_f = 1;
            r->when = f->when;
            r->importance = f->importance;
        }
        if (f && f->vec && s->vec && !r->have_cos && fc->vc_dims == s->dims)
            for (int j = 0; j < f->nvec; j++)
                row_cos(r, j,
                        unit_dot(fc->vc + (size_t)(f->vec - 1 + (uint32_t)j) * (size_t)s->dims,
                                 s->qunit, s->dims));
        if ((kind == 'f' && (!r->have_f || (s->vec && !r->have_cos))) ||
            (kind == 'r' && !r->have_r))
            need[want++] = ids[i];
    }
    if (!want) {
        free(need);
        return MNEMO_OK;
    }
    buf idl, cosl;
    buf_init(&idl, 0);
    buf_init(&cosl, 0);
    /* The rows whose cosine is not known yet (the vector leg's are), then
     * those whose factors are not (the cache's are). */
    size_t ncos = 0, nf = 0;
    int64_t *cos = malloc(want * sizeof *cos);
    if (!cos) {
        free(need);
        return core_error(s->m, MNEMO_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < want; i++) {
        prow *w = row_of(s, need[i]);
        if (kind == 'f' && !w->have_cos)
            cos[ncos++] = need[i];
        if (kind != 'f' || !w->have_f)
            need[nf++] = need[i];
    }
    pgstore_ids_literal(&idl, need, nf);
    pgstore_ids_literal(&cosl, cos, ncos);
    free(need);
    free(cos);
    const char *p[5] = {s->tenant, idl.data, s->ident, s->qvec.data ? s->qvec.data : "",
                        cosl.data};
    pg_rows *r = NULL;
    char sql[2048];
    int rc;
    /* Each row's file by its key (OFFSET 0 keeps the subquery apart): a
     * join would hash every file of the tenant for a few hundred rows. */
#define FILE_OF                                                                                   \
    "CROSS JOIN LATERAL (SELECT f.path, f.source, f.mtime_ns, f.time, f.mime FROM mnemo_files f " \
    "WHERE f.tenant = c.tenant AND f.id = c.file_id OFFSET 0) f "
    /* Prepared, but for the vector join (its table's name is in the SQL). */
    static const char factors[] =
        "SELECT c.id, c.importance, f.path, f.source, f.mtime_ns, f.time, NULL "
        "FROM mnemo_chunks c " FILE_OF "WHERE c.tenant = $1 AND c.id = ANY "
        "($2::bigint[]) AND $3 = $3 AND $4 = $4 AND $5 = $5";
    /* With the next chunk of the file when it shares lines with this one. */
    static const char rows[] =
        "SELECT c.id, c.text, c.start_line, f.path, encode(c.line_map, 'hex'), "
        "f.source, n.text, n.start_line, f.mime FROM mnemo_chunks c " FILE_OF
        "LEFT JOIN mnemo_chunks n ON n.tenant = c.tenant AND n.file_id = c.file_id "
        "AND n.seq = c.seq + 1 AND n.start_line <= c.end_line "
        "WHERE c.tenant = $1 AND c.id = ANY ($2::bigint[]) AND $3 = $3 AND $4 = $4 AND "
        "$5 = $5";
    const char *q = kind == 'f' ? factors : rows;
    if (kind == 'f' && s->vec) {
        /* The factors of $2 (with the cosines of those in $5), and the
         * cosines of the rest of $5. */
        /* The vectors instead of the cosines when they are to be kept. */
        const char *cosv = fill ? "encode(vector_send(v.embedding), 'hex')"
                                : COSINE("v.embedding", "$4");
        /* A row a part, in order (kept vectors are a chunk's run). */
        snprintf(sql, sizeof sql,
                 "SELECT c.id, c.importance, f.path, f.source, f.mtime_ns, f.time, %s, v.part "
                 "FROM mnemo_chunks c " FILE_OF
                 "LEFT JOIN %s v ON v.tenant = c.tenant AND v.chunk_id = c.id AND "
                 "v.model = $3 AND c.id = ANY ($5::bigint[]) WHERE c.tenant = $1 AND "
                 "c.id = ANY ($2::bigint[]) UNION ALL SELECT v.chunk_id, NULL, NULL, NULL, NULL, "
                 "NULL, %s, v.part FROM %s v WHERE v.tenant = $1 AND v.model = $3 AND "
                 "v.chunk_id = ANY ($5::bigint[]) AND NOT v.chunk_id = ANY ($2::bigint[])%s "
                 "ORDER BY 1, 8",
                 cosv, s->table, cosv, s->table, fill ? " AND $4::vector IS NOT NULL" : "");
        q = stable_sql(s, sql);
    }
#undef FILE_OF
    rc = buf_err(&idl) || buf_err(&cosl) ? core_error(s->m, MNEMO_NOMEM, "out of memory")
         : q == sql                      ? pgstore_q(s->m, "search", sql, 5, p, &r)
                                         : pgstore_qp(s->m, "search", q, 5, p, &r);
    buf_cleanup(&idl);
    buf_cleanup(&cosl);
    if (rc)
        return rc;
    for (size_t i = 0; i < pg_nrows(r); i++) {
        prow *w = row_of(s, pgstore_ll(r, i, 0));
        if (!w)
            continue;
        if (kind == 'f' && pg_isnull(r, i, 1)) { /* a cosine alone */
            part_cos(s, fc, w, r, i, fill);
        } else if (kind == 'f') {
            w->have_f = 1;
            w->importance = (int)pgstore_ll(r, i, 1);
            const char *src = pg_value(r, i, 3);
            if (!strcmp(src, "sessions")) {
                w->when = strtod(pg_value(r, i, 5), NULL);
                if (w->when <= 0)
                    w->when = (double)pgstore_ll(r, i, 4) / 1e9;
            } else {
                w->when = rank_path_date(pg_value(r, i, 2));
            }
            fc_put(fc, w->id, w->when, w->importance);
            part_cos(s, fc, w, r, i, fill);
        } else {
            w->have_r = 1;
            w->text = strdup(pg_value(r, i, 1));
            w->first_line = (int)pgstore_ll(r, i, 2);
            w->path = strdup(pg_value(r, i, 3));
            w->source = strdup(pg_value(r, i, 5));
            if (!pg_isnull(r, i, 6)) {
                w->next = strdup(pg_value(r, i, 6));
                w->next_first_line = (int)pgstore_ll(r, i, 7);
            }
            if (!pg_isnull(r, i, 8))
                w->mime = strdup(pg_value(r, i, 8));
            const char *hx = pg_value(r, i, 4);
            size_t nb = strlen(hx) / 2;
            long got = -1;
            if (nb >= sizeof(uint32_t) && (w->map = malloc(nb)))
                got = pgtext_unhex(hx, w->map, nb);
            if (got >= (long)sizeof(uint32_t)) {
                w->nmap = (size_t)got / sizeof(uint32_t);
            } else {
                free(w->map);
                w->map = NULL;
            }
        }
    }
    pg_rows_free(r);
    return MNEMO_OK;
}

static double pg_bm25(void *ud, int64_t chunk_id)
{
    pgsearch *s = ud;
    const hitrow *h = hit_of(s, chunk_id);
    return h ? pgstore_hit_bm25(s, h) : 0;
}

static int pg_cosines(void *ud, int64_t chunk_id, float *cs, int max)
{
    pgsearch *s = ud;
    prow *r = row_of(s, chunk_id);
    if (!r || !r->have_cos)
        return 0;
    int n = r->ncos < max ? r->ncos : max;
    memcpy(cs, r->cos, (size_t)n * sizeof *cs);
    return n;
}

static int pg_factors(void *ud, int64_t chunk_id, double *when, int *importance)
{
    pgsearch *s = ud;
    prow *r = row_of(s, chunk_id);
    if (!r || !r->have_f)
        return 0;
    *when = r->when;
    *importance = r->importance;
    return 1;
}

static int pg_fetch_one(pgsearch *s, int64_t chunk_id)
{
    return pg_prefetch(s, 'r', &chunk_id, 1);
}

static int pg_row(void *ud, int64_t chunk_id, search_row *out)
{
    pgsearch *s = ud;
    prow *r = row_of(s, chunk_id);
    if (!r || !r->have_r) {
        int rc = pg_fetch_one(s, chunk_id);
        if (rc)
            return rc;
        r = row_of(s, chunk_id);
    }
    if (!r || !r->text || !r->path)
        return MNEMO_NOTFOUND;
    out->text = r->text;
    out->len = strlen(r->text);
    out->first_line = r->first_line;
    out->path = r->path;
    out->map = r->map;
    out->nmap = r->nmap;
    out->source = r->source;
    out->next = r->next;
    out->next_len = r->next ? strlen(r->next) : 0;
    out->next_first_line = r->next_first_line;
    out->mime = r->mime;
    return MNEMO_OK;
}

/* A search's state (search_legs.ud). */
typedef struct pglegs {
    pgsearch s;
    pgsearch_query pq;
    int built;              /* pq was built (or its build began) */
    pgnpost_lists *lists;
    search_cand *kw;        /* s.hits, scored, for the engine */
    int64_t *vids;
} pglegs;

/* The legs step (search_store). Vectors first: their candidates' keyword
 * scores come with the keyword leg. When the postings serve the keyword
 * leg, the vector leg's statement runs on a second connection while the
 * postings are read and the file-name legs run (the server works on both
 * at once), and the postings are ranked once its candidates are known. */
static int pg_legs(mnemo *m, search_legs *l)
{
    pglegs *x = calloc(1, sizeof *x);
    if (!x)
        return MNEMO_NOMEM;
    l->ud = x;
    pgsearch *s = &x->s;
    const query *qy = l->q;
    size_t nvids = 0, pool = l->pool;
    pg_conn *c;
    int rc = pgschema_conn(m, &c);
    if (rc)
        return rc;
    x->built = qy->match != NULL;
    if (qy->match && (rc = pgquery_build(l->t, qy, &x->pq)))
        return rc;
    s->m = m;
    if (!(s->tenant = pgstore_live(m, pgconn_tenant(m))))
        return MNEMO_DB;
    s->qy = qy;
    s->media = l->media;
    l->media_lo = PGSTORE_MEDIA_ID_BASE; /* a range of their own (pgsync.c) */
    s->k1 = cfg_num(m->cfg, CFG_BM25_K1);
    s->b = cfg_num(m->cfg, CFG_BM25_B);
    buf_init(&s->qvec, 0);
    const char *corpus = l->corpus;
    const char *source = corpus && !strcmp(corpus, "sessions") ? "sessions"
                         : corpus && !strcmp(corpus, "all") ? ""
                                                            : "memory";
    mnemo_results *res = l->res;
    int beside = qy->match && x->pq.simple && x->pq.npos > 0 && pool > 0, filed = 0;
    if ((rc = vector_start(s, l->text, source, pool, res, &l->vs, beside)))
        return rc;
    if (s->vside) {
        rc = pgnpost_read(s, &x->pq, source, &x->lists, &l->bm.sum_idf);
        if (rc == MNEMO_NOTFOUND) { /* no postings yet: the other leg, after */
            core_clear(m);
            rc = MNEMO_OK;
        }
        /* The best POOL by BM25 (the vector candidates' scores come when
         * they are known), and their factors and cosines. */
        if (!rc && x->lists)
            rc = pgnpost_walk(s, &x->pq, x->lists, pool, NULL, 0);
        if (rc || (rc = file_legs(s, qy, &x->pq, source, &l->fh)))
            return rc;
        filed = 1;
        if (s->nhits) {
            int64_t *ids = malloc(s->nhits * sizeof *ids);
            if (!ids)
                return core_error(m, MNEMO_NOMEM, "out of memory");
            for (size_t i = 0; i < s->nhits; i++)
                ids[i] = s->hits[i].id;
            rc = pg_prefetch(s, 'f', ids, s->nhits);
            free(ids);
            if (rc)
                return rc;
        }
        res->timing.keyword_ms = search_lap(l->lap);
    }
    if ((rc = vector_end(s, res, &l->vs, &x->vids, &nvids)))
        return rc;
    /* Images and audio: a leg of their own where the tenant has them (as
     * the memory files do: a search of the sessions has none). */
    if (l->vs.ran && s->nmedia > 0 && l->media >= 0 && strcmp(source, "sessions") != 0 &&
        (rc = media_leg(s, pool, &l->mvs, &x->vids, &nvids)))
        return rc;
    res->timing.vector_ms = search_lap(l->lap);
    if (x->lists)
        rc = pgnpost_walk(s, &x->pq, x->lists, pool, x->vids, nvids);
    else if (qy->match)
        rc = pgkeyword_leg(s, &x->pq, source, pool, x->vids, nvids, &l->bm.sum_idf);
    if (rc || (!filed && (rc = file_legs(s, qy, &x->pq, source, &l->fh))))
        return rc;
    res->timing.keyword_ms += search_lap(l->lap);
    /* Keyword candidates: every hit (the vector candidates' rows came
     * along: beyond the pool, they are scored on demand). */
    if (!(x->kw = malloc((s->nhits + 1) * sizeof *x->kw)))
        return MNEMO_NOMEM;
    for (size_t i = 0; i < s->nhits; i++)
        x->kw[i] = (search_cand){.chunk_id = s->hits[i].id,
                                 .raw = pgstore_hit_bm25(s, &s->hits[i]),
                                 .vec = -1};
    l->kw = x->kw;
    l->nkw = s->nhits;
    l->vids = x->vids;
    l->nvids = nvids;
    if (qy->match) {
        memcpy(l->bm.idf, s->idf, sizeof l->bm.idf);
        l->bm.avgdl = s->avgdl;
        l->bm.k1 = s->k1;
        l->bm.b = s->b;
    }
    return MNEMO_OK;
}

/* The io step: the factors and cosines of every candidate (and of the path
 * hits' first chunks) in one query; rows are read in batches as the
 * ranking asks (pg_prefetch). */
static int pg_io(mnemo *m, search_legs *l)
{
    pglegs *x = l->ud;
    (void)m;
    int64_t *ids = malloc((l->n + l->fh.n + 1) * sizeof *ids);
    if (!ids)
        return MNEMO_NOMEM;
    size_t ni = 0;
    for (size_t i = 0; i < l->n; i++)
        ids[ni++] = l->all[i].chunk_id;
    for (size_t i = 0; i < l->fh.n; i++)
        if (l->fh.v[i].first_chunk)
            ids[ni++] = l->fh.v[i].first_chunk;
    int rc = pg_prefetch(&x->s, 'f', ids, ni);
    free(ids);
    l->io = (search_io){&x->s, pg_bm25, pg_cosines, pg_factors, pg_prefetch, pg_row};
    return rc;
}

/* The end step: the state freed (a vector statement still out on the side
 * connection is dropped with it). */
static void pg_end(mnemo *m, search_legs *l)
{
    pglegs *x = l->ud;
    (void)m;
    if (!x)
        return;
    pgnpost_lists_free(x->lists);
    free(x->kw);
    free(x->vids);
    pgsearch_cleanup(&x->s);
    if (x->built)
        pgquery_cleanup(&x->pq);
    free(x);
    l->ud = NULL;
}

const search_store pgsearch_notes = {pg_legs, pg_io, pg_end};
