/*
 * allsearch.c - one search over all of an agent's memory: the notes
 * (the index's chunks) and the stored facts, ranked on one scale
 * (mnemo_search_all_typed in mnemo.h; docs/search.md "Notes and facts
 * together"); its options in JSON and its JSON answer are memjson.c's.
 *
 * Each kind is searched with its own leg and thresholds. A note keeps its
 * score (relevance with its recency and importance factors); a fact's is
 * its relevance (the same keyword and vector fusion as notes) times its
 * importance factor, importanceMax^((importance - 0.5) / 0.5), at most 1.
 * The hits are ordered by score; then a fact moves above a hit whose score
 * is within SUPERSEDE_BAND of its own and which is older (a fact's
 * updated_at; a note's date, or its file's modification time), so that a
 * fact which replaces what an older note or fact says ranks above it.
 * No rule moves a note; the list is in score order, so notes the diversity
 * pass chose come out by score (measured slightly better than its order,
 * docs/search.md).
 */
#include "engine/allsearch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/backend.h"
#include "engine/config.h"
#include "engine/core.h"
#include "engine/memory.h"
#include "util/time.h"

#define SUPERSEDE_BAND 0.1

/* When the note R was last true: its date's end, else its file's
 * modification time. */
static double note_time(mnemo *m, const mnemo_result *r)
{
    double t = 0;
    char iso[32];
    if (r->date && strlen(r->date) == 10) {
        snprintf(iso, sizeof iso, "%sT23:59:59Z", r->date);
        if (time_parse_iso(iso, &t) == 0)
            return t;
    }
    buf p;
    buf_init(&p, 8192);
    if (r->path[0] == '/')
        buf_puts(&p, r->path);
    else
        buf_printf(&p, "%s/%s", m->workspace, r->path);
    struct stat sb;
    if (p.data && stat(p.data, &sb) == 0)
        t = (double)sb.st_mtim.tv_sec;
    buf_cleanup(&p);
    return t;
}

static void put_str(buf *b, const char *key, const char *s)
{
    buf_printf(b, ",\"%s\":", key);
    buf_json_str(b, s ? s : "", s ? strlen(s) : 0);
}

static void put_time(buf *b, const char *key, int64_t t)
{
    char iso[32] = "";
    if (t)
        time_format_iso((double)t, iso);
    put_str(b, key, iso);
}

static void fact_json(buf *b, const mnemo_memory *f, double score)
{
    char cit[128];
    snprintf(cit, sizeof cit, "memory://%s", f->id);
    buf_puts(b, "{\"kind\":\"fact\"");
    put_str(b, "id", f->id);
    put_str(b, "path", cit);
    buf_printf(b, ",\"startLine\":1,\"endLine\":1,\"score\":%.4f", score);
    put_str(b, "snippet", f->text);
    put_str(b, "source", "memory");
    put_str(b, "citation", cit);
    put_str(b, "category", f->category);
    buf_printf(b, ",\"importance\":%.4g", f->importance);
    put_str(b, "type", f->type);
    put_str(b, "subject", f->subject);
    put_str(b, "scope", *f->run_id ? "session" : "long-term");
    put_str(b, "user_id", f->user_id);
    if (*f->agent_id)
        put_str(b, "agent_id", f->agent_id);
    if (*f->run_id)
        put_str(b, "run_id", f->run_id);
    put_time(b, "created_at", f->created_at);
    put_time(b, "updated_at", f->updated_at);
    buf_printf(b, ",\"relevance\":%.4f}", f->relevance);
}

static int by_score(const void *a, const void *b)
{
    const all_hit *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return (x->fact != NULL) - (y->fact != NULL); /* a note first on a tie */
}

void allsearch_free(mnemo_hits *h)
{
    if (!h)
        return;
    results_free(h->notes);
    mrec_set_free(h->facts);
    free(h->v);
    free(h->warning);
    free(h);
}

int allsearch_run(mnemo *m, const char *text, const mnemo_search_all_opts *o, all_facts_fn fn,
                  void *ud, mnemo_hits **out)
{
    *out = NULL;
    mnemo_search_all_opts defaults;
    if (!o) {
        allsearch_opts_defaults(&defaults);
        o = &defaults;
    }
    if (o->kinds & ~(MNEMO_KIND_NOTE | MNEMO_KIND_FACT | MNEMO_KIND_MEDIA))
        return core_error(m, MNEMO_INVALID, "kinds must name note, fact, media or all");
    int all = !o->kinds, media = all || (o->kinds & MNEMO_KIND_MEDIA);
    int notes = all || (o->kinds & MNEMO_KIND_NOTE);
    int facts = all || (o->kinds & MNEMO_KIND_FACT);
    mnemo_search_opts so = o->notes;
    if (!all) /* images and audio are searched with the notes, or alone */
        so.media = notes && media ? 0 : notes ? -1 : 1;
    notes |= media;
    if (so.max_results <= 0)
        so.max_results = (int)cfg_num(m->cfg, CFG_MAX_RESULTS);
    mnemo_hits *h = calloc(1, sizeof *h);
    if (!h)
        return MNEMO_NOMEM;
    /* Media are named when asked for, or when multimodal is on. */
    h->kinds = (notes && so.media <= 0 ? MNEMO_KIND_NOTE : 0) | (facts ? MNEMO_KIND_FACT : 0) |
               (notes && so.media >= 0 && (!all || core_media(m)) ? MNEMO_KIND_MEDIA : 0);
    int rc = MNEMO_OK;
    char warning[600] = "";
    double bar = -1; /* the facts' min_score: a bar on their score on the one scale */
    if (notes && so.media > 0 && !core_media(m))
        snprintf(warning, sizeof warning,
                 "no images or audio are indexed: multimodal is off (--set "
                 "multimodal.enabled=true with extraPaths; docs/search.md)");
    if (notes)
        BACKEND_CALL(m, BACKEND_READ, rc, m->be->search(m, text, &so, &h->notes));
    if (!rc && facts) {
        mnemo_memory_opts fo = o->facts;
        fo.min_score = so.min_score < 0 ? -1 : so.min_score; /* the notes' bar, typed */
        if (!text)
            rc = core_error(m, MNEMO_INVALID, "empty query");
        else if (fn)
            rc = fn(m, ud, &fo);
        fo.limit = so.max_results;
        bar = fo.min_score;
        if (!rc)
            BACKEND_CALL(m, BACKEND_READ, rc,
                         mem_search_typed(m, text, &fo, m->be->msearch, &h->facts));
        /* Facts left out because they cannot be read are said (mnemo_warning too). */
        if (!rc && h->facts->warning)
            snprintf(warning, sizeof warning, "%s", h->facts->warning);
        if (rc && notes && rc != MNEMO_INVALID && rc != MNEMO_NOMEM) {
            /* The notes still answer: the facts' failure is said, not fatal. */
            snprintf(warning, sizeof warning, "stored facts were not searched: %s",
                     *core_errmsg(m) ? core_errmsg(m) : "the memory store failed");
            core_clear(m);
            rc = MNEMO_OK;
        }
    }
    /* One list on one scale. */
    size_t nn = h->notes ? h->notes->n : 0, nf = h->facts ? h->facts->n : 0, n = 0;
    if (!rc && !(h->v = calloc(nn + nf + 1, sizeof *h->v)))
        rc = MNEMO_NOMEM;
    if (!rc && *warning && !(h->warning = strdup(warning)))
        rc = MNEMO_NOMEM;
    if (rc) {
        allsearch_free(h);
        return rc;
    }
    for (size_t i = 0; i < nn; i++) {
        h->v[n].note = i;
        h->v[n].score = h->notes->v[i].score;
        h->v[n++].when = note_time(m, &h->notes->v[i]);
    }
    double imax = cfg_num(m->cfg, CFG_IMPORTANCE_MAX);
    for (size_t i = 0; i < nf; i++) {
        mnemo_memory *f = &h->facts->v[i];
        double s = f->relevance * pow(imax > 0 ? imax : 1, (f->importance - 0.5) / 0.5);
        if (s > 1)
            s = 1;
        if (bar >= 0 && s < bar)
            continue;
        h->v[n].fact = f;
        h->v[n].score = s;
        h->v[n++].when = (double)f->updated_at;
    }
    qsort(h->v, n, sizeof *h->v, by_score);
    /* A fact newer than the hit before it, of about one score, goes first
     * (no note is moved by this). */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && h->v[j].fact &&
                           h->v[j - 1].score - h->v[j].score <= SUPERSEDE_BAND &&
                           h->v[j].when > h->v[j - 1].when;
             j--) {
            all_hit t = h->v[j - 1];
            h->v[j - 1] = h->v[j];
            h->v[j] = t;
        }
    if (n > (size_t)so.max_results)
        n = (size_t)so.max_results;
    h->n = n;
    for (size_t i = 0; i < n; i++)
        if (h->v[i].fact)
            h->v[i].fact->score = h->v[i].score; /* its score on the one scale */
    h->mode = h->notes ? h->notes->mode : h->facts ? h->facts->mode : NULL;
    if (!h->mode)
        h->mode = "keyword";
    *out = h;
    return MNEMO_OK;
}

void allsearch_json(buf *b, const mnemo_hits *h)
{
    buf_puts(b, "{\"results\":[");
    for (size_t i = 0; i < h->n; i++) {
        if (i)
            buf_putc(b, ',');
        if (!h->v[i].fact)
            results_write_item(b, h->notes, h->v[i].note, 1);
        else
            fact_json(b, h->v[i].fact, h->v[i].score);
    }
    buf_puts(b, "]");
    if (h->notes)
        results_write_tail(b, h->notes);
    else
        put_str(b, "mode", h->mode);
    int notes = h->kinds & MNEMO_KIND_NOTE, facts = h->kinds & MNEMO_KIND_FACT,
        media = h->kinds & MNEMO_KIND_MEDIA;
    buf_printf(b, ",\"kinds\":[%s%s%s%s%s]", notes ? "\"note\"" : "", notes && facts ? "," : "",
               facts ? "\"fact\"" : "", (notes || facts) && media ? "," : "",
               media ? "\"media\"" : "");
    if (h->warning)
        put_str(b, "warning", h->warning);
    buf_putc(b, '}');
}

void mnemo_search_all_opts_init(mnemo_search_all_opts *opts) { allsearch_opts_defaults(opts); }

void allsearch_opts_defaults(mnemo_search_all_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->notes.min_score = -1; /* as mnemo_search_opts_init */
    opts->notes.strict = -1;
    mem_opts_defaults(&opts->facts);
}

size_t mnemo_hits_count(const mnemo_hits *h) { return h ? h->n : 0; }

double mnemo_hits_score(const mnemo_hits *h, size_t i)
{
    return h && i < h->n ? h->v[i].score : -1;
}

const mnemo_result *mnemo_hits_note(const mnemo_hits *h, size_t i)
{
    return h && i < h->n && !h->v[i].fact ? &h->notes->v[h->v[i].note] : NULL;
}

const mnemo_memory *mnemo_hits_fact(const mnemo_hits *h, size_t i)
{
    return h && i < h->n ? h->v[i].fact : NULL;
}

const mnemo_results *mnemo_hits_notes(const mnemo_hits *h) { return h ? h->notes : NULL; }

const char *mnemo_hits_mode(const mnemo_hits *h) { return h ? h->mode : "keyword"; }

const char *mnemo_hits_warning(const mnemo_hits *h) { return h ? h->warning : NULL; }

char *mnemo_hits_json(const mnemo_hits *h)
{
    if (!h)
        return NULL;
    buf b;
    buf_init(&b, 0);
    allsearch_json(&b, h);
    if (buf_err(&b)) {
        buf_cleanup(&b);
        return NULL;
    }
    return buf_detach(&b);
}

void mnemo_hits_free(mnemo_hits *h) { allsearch_free(h); }
