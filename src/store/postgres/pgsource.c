/*
 * pgsource.c - searching an existing PostgreSQL memory table (config
 * sourceTable), read-only: agent installs often already keep their memories
 * in a table such as memory_embeddings (content, source_type, a pgvector
 * embedding) beside memory_type_priorities (source_type -> priority).
 *
 * The query is embedded with the configured provider (it must be the model
 * the table was filled with), the table is ordered by pgvector cosine
 * distance (<=>, so an HNSW or IVFFlat index serves it), a few more rows
 * than asked are fetched, each similarity is multiplied by its source
 * type's priority (1 when the type has none), and the best are returned in
 * the shape of a local search. Whatever goes wrong, the local index
 * answers instead and the results say why (fallback from "postgres").
 *
 * Only validated, double-quoted identifiers from the configuration go into
 * the SQL; the query vector and every other value travel as parameters.
 *
 * It is a wrapping backend (pgsource_wrap in backend.h): its state, in
 * m->wrap, holds a copy of the wrapped backend's table with search and
 * close replaced, so the wrapped one keeps its own state in m->store. It
 * replaces the whole search entry, not the legs (backend_ops.notes): the
 * table has no keyword or file-name leg, and its answer is not ranked by
 * search_rank but ordered by similarity times priority, in a result set of
 * its own (mode "vector"). When it cannot answer, the wrapped entry runs:
 * the engine's note search over the wrapped backend's legs, which the
 * copied table still points to.
 */
#include "engine/backend.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core.h"
#include "util/errcode.h"
#include "store/postgres/pgint.h"
#include "engine/results.h"
#include "util/time.h"
#include "util/utf8.h"
#include "engine/provider.h"

#define STATEMENT_TIMEOUT_MS 2000
#define QUERY_DEADLINE_MS 2500
#define FETCH_MIN                                                                                  \
    20 /* rows fetched at least, before priorities reorder them                                    \
        */
#define EF_SEARCH_DEFAULT 40

typedef struct pgsource {
    backend_ops ops;           /* the wrapped backend's, with search and close ours */
    const backend_ops *inner;  /* the wrapped backend */
    pg_conn *conn;
    int checked;   /* the table was looked at on this connection */
    int dims;      /* of the embedding column; 0: not fixed */
    int have_prio; /* the priorities table exists */
    int ef_search; /* hnsw.ef_search set on this connection */
} pgsource;

#define SOURCE(m) ((pgsource *)(m)->wrap)

/* The wrapper's close: its connection, then the wrapped backend. */
static void source_close(mnemo *m)
{
    pgsource *s = SOURCE(m);
    if (!s)
        return;
    m->be = s->inner;
    m->wrap = NULL;
    pg_close(s->conn);
    free(s);
    m->be->close(m);
}

typedef struct source_cfg {
    const char *table, *prio;
    char cols[6][64]; /* id, content, source_type, embedding, created_at,
                         updated_at */
} source_cfg;

enum { COL_ID, COL_CONTENT, COL_TYPE, COL_EMBEDDING };

static void read_cfg(mnemo *m, source_cfg *c)
{
    static const char *const roles[6] = {"id",        "content",    "source_type",
                                         "embedding", "created_at", "updated_at"};
    c->table = cfg_str(m->cfg, CFG_SOURCE_TABLE);
    c->prio = cfg_str(m->cfg, CFG_SOURCE_PRIORITIES);
    json_t *cols = json_loads(cfg_str(m->cfg, CFG_SOURCE_COLUMNS), 0, NULL);
    for (int i = 0; i < 6; i++) {
        const char *v = json_string_value(json_object_get(cols, roles[i]));
        snprintf(c->cols[i], sizeof c->cols[i], "%s", v ? v : roles[i]);
    }
    json_decref(cols);
}

/* Connects if needed and checks the table once per connection: it exists,
 * its embedding column is a pgvector vector of the query's dimensions, and
 * whether the priorities table is there. */
static int prepare(mnemo *m, pgsource *s, const source_cfg *c, int qdims, buf *err)
{
    if (s->conn && !pg_ok(s->conn)) {
        pg_close(s->conn);
        s->conn = NULL;
    }
    if (!s->conn) {
        int rc = pgconn_connect(m, 0, STATEMENT_TIMEOUT_MS, &s->conn, err);
        if (rc)
            return rc;
        s->checked = 0;
        s->ef_search = EF_SEARCH_DEFAULT;
    }
    if (s->checked)
        goto dims;
    buf tq, pq;
    buf_init(&tq, 512);
    buf_init(&pq, 512);
    pg_quote_ident(&tq, c->table);
    if (*c->prio)
        pg_quote_ident(&pq, c->prio);
    if (buf_err(&tq) || buf_err(&pq)) {
        buf_cleanup(&tq);
        buf_cleanup(&pq);
        return MNEMO_NOMEM;
    }
    const char *params[3] = {tq.data, c->cols[COL_EMBEDDING], *c->prio ? pq.data : NULL};
    pg_rows *r = NULL;
    int rc = pg_query(s->conn,
                      "SELECT to_regclass($1) IS NOT NULL, "
                      "(SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
                      "WHERE a.attrelid = to_regclass($1) AND a.attname = $2 "
                      "AND NOT a.attisdropped), "
                      "to_regclass($3) IS NOT NULL",
                      3, params, QUERY_DEADLINE_MS, &r, err);
    buf_cleanup(&tq);
    buf_cleanup(&pq);
    if (rc)
        return rc;
    const char *type = pg_value(r, 0, 1);
    if (strcmp(pg_value(r, 0, 0), "t") != 0) {
        buf_printf(err, "table %s not found", c->table);
        rc = MNEMO_NOTFOUND;
    } else if (pg_isnull(r, 0, 1)) {
        buf_printf(err, "table %s has no column %s", c->table, c->cols[COL_EMBEDDING]);
        rc = MNEMO_NOTFOUND;
    } else if (strncmp(type, "vector", 6) != 0) {
        buf_printf(err,
                   "column %s of %s is %s, not a pgvector vector (is the vector extension "
                   "installed?)",
                   c->cols[COL_EMBEDDING], c->table, type);
        rc = MNEMO_INVALID;
    } else {
        s->dims = type[6] == '(' ? (int)strtol(type + 7, NULL, 10) : 0;
        s->have_prio = strcmp(pg_value(r, 0, 2), "t") == 0;
        s->checked = 1;
    }
    pg_rows_free(r);
    if (rc)
        return rc;
dims:
    if (s->dims && s->dims != qdims) {
        char name[32];
        int explicit_;
        provider_resolve(m, name, &explicit_);
        buf_printf(err,
                   "the embeddings in %s have %d dimensions, the query's %d (%s "
                   "%s): configure "
                   "the model the table was built with",
                   c->table, s->dims, qdims, name, cfg_str(m->cfg, CFG_MODEL));
        return MNEMO_INVALID;
    }
    return MNEMO_OK;
}

typedef struct hit {
    char *id, *content, *type;
    double sim, weight, score;
} hit;

static int by_score(const void *a, const void *b)
{
    const hit *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->sim > y->sim ? -1 : x->sim < y->sim;
}

static int make_result(const source_cfg *c, const hit *h, int snippet_chars, mnemo_result *r)
{
    memset(r, 0, sizeof *r);
    buf p;
    buf_init(&p, 1 << 16);
    buf_printf(&p, "postgres:%s#%s", c->table, h->id);
    size_t clen = strlen(h->content);
    size_t keep = utf8_prefix(h->content, clen, (size_t)snippet_chars);
    int lines = 1;
    for (size_t i = 0; i < clen; i++)
        if (h->content[i] == '\n' && i + 1 < clen)
            lines++;
    r->path = buf_detach(&p);
    r->snippet = strndup(h->content, keep);
    /* The citation, then (after its NUL) the source type, in one block. */
    const char *type = h->type ? h->type : "postgres";
    size_t pl = r->path ? strlen(r->path) : 0, tl = strlen(type);
    char *cit = malloc(pl + tl + 2);
    if (cit && r->path) {
        memcpy(cit, r->path, pl + 1);
        memcpy(cit + pl + 1, type, tl + 1);
        r->source = cit + pl + 1;
    }
    r->citation = cit;
    r->start_line = 1;
    r->end_line = lines;
    r->score = h->score;
    r->vector_score = h->sim < 0 ? 0 : h->sim > 1 ? 1 : h->sim;
    r->text_score = 0;
    r->recency = 1;
    r->importance = h->weight;
    return r->path && r->snippet && r->citation ? MNEMO_OK : MNEMO_NOMEM;
}

/* The search itself; on failure ERR says why (credentials redacted). */
static int search_table(mnemo *m, const char *qtext, const mnemo_search_opts *opts,
                        mnemo_results *res, buf *err)
{
    double t0 = time_mono();
    source_cfg c;
    read_cfg(m, &c);
    char name[32];
    int explicit_;
    provider_resolve(m, name, &explicit_);
    if (strcmp(name, "none") == 0) {
        buf_puts(err, "no embedding provider is configured to embed the query (set provider "
                      "and model, e.g. openai and text-embedding-3-small)");
        return MNEMO_UNAVAILABLE;
    }
    embedder *e = NULL;
    float *qv = NULL;
    size_t qlen = strlen(qtext);
    int rc = provider_embedder(m, name, &e, err);
    if (!rc)
        rc = embed_texts(e, EMBED_QUERY, &qtext, &qlen, 1, &qv, err);
    if (rc)
        return rc;
    int qdims = embed_dims(e);
    res->timing.vector_ms = (time_mono() - t0) * 1000.0;
    double t1 = time_mono();

    pgsource *s = SOURCE(m);
    int max =
        opts && opts->max_results > 0 ? opts->max_results : (int)cfg_int(m->cfg, CFG_MAX_RESULTS);
    double min_score =
        opts && opts->min_score >= 0 ? opts->min_score : cfg_num(m->cfg, CFG_MIN_SCORE);
    int limit = 4 * max > FETCH_MIN ? 4 * max : FETCH_MIN;
    buf sql, vec;
    buf_init(&sql, 1 << 16);
    buf_init(&vec, 1 << 20);
    pg_rows *r = NULL;
    hit *hits = NULL;
    size_t nh = 0;
    if ((rc = prepare(m, s, &c, qdims, err)))
        goto done;
    if (limit > s->ef_search) {
        /* HNSW returns at most ef_search rows: let it find all we fetch. */
        char ef[16];
        snprintf(ef, sizeof ef, "%d", limit);
        const char *p1[1] = {ef};
        pg_rows *x = NULL;
        if ((rc = pg_query(s->conn, "SELECT set_config('hnsw.ef_search', $1, false)", 1, p1,
                           QUERY_DEADLINE_MS, &x, err)))
            goto done;
        pg_rows_free(x);
        s->ef_search = limit;
    }
    buf_puts(&sql, "SELECT t.id, t.content, t.stype, t.sim, ");
    buf_puts(&sql, s->have_prio ? "COALESCE(p.priority, 1)::float8" : "1::float8");
    buf_puts(&sql, " FROM (SELECT ");
    pg_quote_ident(&sql, c.cols[COL_ID]);
    buf_puts(&sql, "::text AS id, ");
    pg_quote_ident(&sql, c.cols[COL_CONTENT]);
    buf_puts(&sql, "::text AS content, ");
    pg_quote_ident(&sql, c.cols[COL_TYPE]);
    buf_puts(&sql, "::text AS stype, 1 - (");
    pg_quote_ident(&sql, c.cols[COL_EMBEDDING]);
    buf_puts(&sql, " <=> $1::vector) AS sim FROM ");
    pg_quote_ident(&sql, c.table);
    buf_puts(&sql, " WHERE ");
    pg_quote_ident(&sql, c.cols[COL_EMBEDDING]);
    buf_puts(&sql, " IS NOT NULL ORDER BY ");
    pg_quote_ident(&sql, c.cols[COL_EMBEDDING]);
    buf_puts(&sql, " <=> $1::vector LIMIT $2::int) t");
    if (s->have_prio) {
        buf_puts(&sql, " LEFT JOIN ");
        pg_quote_ident(&sql, c.prio);
        buf_puts(&sql, " p ON p.source_type::text = t.stype");
    }
    pgtext_vector_literal(&vec, qv, qdims);
    if (buf_err(&sql) || buf_err(&vec)) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *params[2] = {vec.data, lim};
    if ((rc = pg_query(s->conn, sql.data, 2, params, QUERY_DEADLINE_MS, &r, err)))
        goto done;
    size_t nr = pg_nrows(r);
    hits = calloc(nr ? nr : 1, sizeof *hits);
    if (!hits) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < nr; i++) {
        hit *h = &hits[nh];
        if (pg_isnull(r, i, 3))
            continue;
        h->id = (char *)pg_value(r, i, 0);
        h->content = (char *)pg_value(r, i, 1);
        h->type = pg_isnull(r, i, 2) ? NULL : (char *)pg_value(r, i, 2);
        h->sim = strtod(pg_value(r, i, 3), NULL);
        h->weight = strtod(pg_value(r, i, 4), NULL);
        if (!isfinite(h->weight) || h->weight < 0)
            h->weight = 0;
        double sc = h->sim * h->weight;
        h->score = sc < 0 ? 0 : sc > 1 ? 1 : sc;
        nh++;
    }
    if (nh > 1)
        qsort(hits, nh, sizeof *hits, by_score);
    res->v = calloc((size_t)max, sizeof *res->v);
    if (!res->v) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    int snip = (int)cfg_int(m->cfg, CFG_SNIPPET_CHARS);
    for (size_t i = 0; i < nh && res->n < (size_t)max; i++) {
        if (hits[i].score < min_score)
            break;
        mnemo_result *x = &res->v[res->n++];
        if ((rc = make_result(&c, &hits[i], snip, x)))
            goto done;
        x->rank_before = x->rank_after = (int)res->n;
    }
    free(res->mode);
    res->mode = strdup("vector");
    res->provider = strdup(embed_provider(e));
    res->model = strdup(embed_model(e));
    if (!res->mode || !res->provider || !res->model)
        rc = MNEMO_NOMEM;
    res->timing.results_ms = (time_mono() - t1) * 1000.0;
    res->timing.total_ms = (time_mono() - t0) * 1000.0;
done:
    if (rc && rc != MNEMO_NOMEM) {
        /* Start afresh next time: the server, table or settings may change. */
        pg_close(s->conn);
        s->conn = NULL;
    }
    free(hits);
    pg_rows_free(r);
    buf_cleanup(&sql);
    buf_cleanup(&vec);
    free(qv);
    return rc;
}

/* The wrapper's search (backend.h): the table, else the wrapped backend's. */
static int source_search(mnemo *m, const char *qtext, const mnemo_search_opts *opts,
                         mnemo_results **out)
{
    *out = NULL;
    core_clear(m);
    if (!qtext)
        return core_error(m, MNEMO_INVALID, "empty query");
    buf q;
    buf_init(&q, 1 << 16);
    if (utf8_repair(&q, qtext, strlen(qtext))) {
        buf_cleanup(&q);
        return core_error(m, MNEMO_INVALID, "query too long (limit 64 KiB)");
    }
    int blank = 1;
    for (size_t i = 0; i < q.len; i++)
        if (q.data[i] != ' ' && q.data[i] != '\t' && q.data[i] != '\n' && q.data[i] != '\r')
            blank = 0;
    if (blank) {
        buf_cleanup(&q);
        return core_error(m, MNEMO_INVALID, "empty query");
    }
    mnemo_results *res = calloc(1, sizeof *res);
    if (!res) {
        buf_cleanup(&q);
        return core_error(m, MNEMO_NOMEM, "out of memory");
    }
    res->explain = opts && opts->explain;
    buf err;
    buf_init(&err, 8192);
    int rc = search_table(m, q.data, opts, res, &err);
    buf_cleanup(&q);
    if (rc == MNEMO_OK) {
        buf_cleanup(&err);
        *out = res;
        return MNEMO_OK;
    }
    results_free(res);
    if (rc == MNEMO_NOMEM) {
        buf_cleanup(&err);
        return core_error(m, rc, "out of memory");
    }
    /* The local index answers; the results say why. */
    buf reason;
    buf_init(&reason, 8192);
    dsn_redact(&reason, err.len ? err.data : errcode_text(rc), NULL);
    buf_cleanup(&err);
    rc = SOURCE(m)->inner->search(m, qtext, opts, out);
    if (rc == MNEMO_OK)
        rc = results_set_fallback(*out, "postgres", reason.data ? reason.data : "");
    if (rc == MNEMO_NOMEM) {
        results_free(*out);
        *out = NULL;
        core_error(m, rc, "out of memory");
    } else if (rc) {
        char *local_msg = strdup(core_errmsg(m));
        core_error(m, rc, "%s (PostgreSQL could not answer either: %s)",
                   local_msg ? local_msg : errcode_text(rc), reason.data ? reason.data : "");
        free(local_msg);
    }
    buf_cleanup(&reason);
    return rc;
}

int pgsource_wrap(mnemo *m)
{
    pgsource *s = calloc(1, sizeof *s);
    if (!s)
        return core_error(m, MNEMO_NOMEM, "out of memory");
    s->inner = m->be;
    s->ops = *m->be;
    s->ops.search = source_search;
    s->ops.close = source_close;
    m->wrap = s;
    m->be = &s->ops;
    return MNEMO_OK;
}
