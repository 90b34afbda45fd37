/*
 * search.c - note search, run here once for every store (search_notes, at
 * the end): the query cleaned and parsed, the store's legs asked for their
 * candidates (search_store: BM25 over chunks, vectors when a provider is
 * configured, file names: exact path, base name or stem first, partial
 * path matches boost; lite_search.c, pgsearch.c), the keyword pool cut
 * (topk.h), the legs' candidates united, then ranked (search_rank):
 * merged, thresholded, diversified and shown as passages in the result
 * set.
 *
 * Text score: x = BM25 / sum of the query terms' IDF, t = 1 - e^(-2x).
 * x = 1 is what a chunk of average length gets when every query term occurs
 * in it once (t = 0.86); the mapping is monotonic, so ranking by t is
 * ranking by BM25.
 * Vector score: a chunk is embedded as its parts (its entries: a bullet,
 * a paragraph, a heading, chunk_parts): how far a part's cosine stands out
 * from what unrelated text scores for the query (the other vectors
 * searched and the model's own fixed texts, calib.h), in standard
 * deviations: v = (z - 2.5) / 3, clamped to 0..1; a chunk's is its best
 * part's, a passage's its best line's. Embeddings differ wildly in their
 * cosine scales (averaged word vectors put everything near 0.8, neural
 * models near 0.05); measured this way a clear match scores alike in a
 * workspace of 8 notes or 100k, with any model.
 * Weighted fusion: s = 1 - (1 - t)(1 - wv*v), each leg evidence on its
 * own: meaning raises a keyword hit (a weak one more than a strong one),
 * never lowers it, and a vector-only hit scores wv*v. Results are passages
 * of the best chunks (snippet.h), scored by blending the passage's text
 * evidence with the chunk's, fused with the passage's vector score. See
 * docs/semantic.md and docs/search.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core.h"
#include "text/chunk.h"
#include "text/sanitize.h"
#include "engine/search.h"
#include "engine/backend.h"
#include "engine/topk.h"
#include "text/snippet.h"
#include "engine/rank.h"
#include "util/errcode.h"
#include "util/time.h"
#include "util/utf8.h"

#define PATH_BOOST 0.2    /* share of the remaining score a full path match adds */
/* Vector score (the constants CALIB_NOTE_* in calib.h): v = (z - FLOOR) /
 * SPAN, clamped to 0..1, z how far the cosine stands out from unrelated
 * text, the fixed texts weighing as PRIOR of the index's vectors. With too few values
 * for a spread, v = (cos - rest) / (1 - rest), rest the others' mean: on
 * the scale of cosines, which keeps a model's near-ties low.
 *
 * The best of N unrelated entries stands further out the larger N is (the
 * largest of N normal values is near sqrt(2 ln N) deviations), so the
 * threshold, not the ranking, asks a vector-only hit in an index of more
 * than ROWS vectors for that much more: its gate is v with z lowered by
 * sqrt(2 ln N) - sqrt(2 ln ROWS). */
typedef search_cand cand;

static double clamp01(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }

/* The vector score of cosine CS, and its gate into *GATE (see above). */
static double vec_score(const search_vstats *vs, double cs, double *gate)
{
    double z, rest, v, n = (double)vs->null.n;
    if (calib_z(&vs->null, cs, CALIB_NOTE_PRIOR, &z, &rest)) {
        v = clamp01((z - CALIB_NOTE_Z_FLOOR) / CALIB_NOTE_Z_SPAN);
        double lift = n > CALIB_NOTE_Z_ROWS
                          ? sqrt(2 * log(n)) - sqrt(2 * log(CALIB_NOTE_Z_ROWS))
                          : 0;
        if (gate)
            *gate = clamp01((z - lift - CALIB_NOTE_Z_FLOOR) / CALIB_NOTE_Z_SPAN);
        return v;
    }
    v = clamp01(n > 1 && rest < 1.0 ? (cs - rest) / (1.0 - rest) : 0);
    if (gate)
        *gate = v;
    return v;
}

/* ----------------------------------------------------------------------
 * Results
 * -------------------------------------------------------------------- */

void mnemo_search_opts_init(mnemo_search_opts *o)
{
    o->max_results = 0;
    o->min_score = -1;
    o->strict = -1;
    o->explain = 0;
    o->corpus = NULL;
    o->media = 0;
}

/* Whether chunk ID is an image or audio file's. */
static int is_media(const search_legs *l, int64_t id) { return l->media_lo && id >= l->media_lo; }

/* Whether L's search keeps chunk ID: media only, notes only or both. */
static int kept_kind(const search_legs *l, int64_t id)
{
    return l->media > 0 ? is_media(l, id) : l->media < 0 ? !is_media(l, id) : 1;
}

/* The vector statistics chunk ID's cosines are measured by. */
static const search_vstats *vstats_of(const search_legs *l, int64_t id)
{
    return is_media(l, id) ? &l->mvs : &l->vs;
}


static int by_rank(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->tier != y->tier)
        return y->tier - x->tier;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    if (x->raw != y->raw)
        return x->raw < y->raw ? 1 : -1;
    return x->chunk_id < y->chunk_id ? -1 : x->chunk_id > y->chunk_id;
}

/* Sorts ALL[0..N) by by_rank(): a merge sort of indices with the
 * comparison inlined, where qsort() calls it through a pointer (n log n
 * times, twice a search, for up to 2,000 path matches at 100k notes).
 * by_rank() is a total order (chunk ids are unique), so any correct sort
 * gives the same order. */
static void sort_by_rank(cand *all, size_t n)
{
    size_t *base = n > 1 ? malloc(2 * n * sizeof *base) : NULL;
    cand *tmp = base ? malloc(n * sizeof *tmp) : NULL;
    if (!tmp) {
        free(base);
        if (n > 1)
            qsort(all, n, sizeof *all, by_rank);
        return;
    }
    size_t *a = base, *b = base + n;
    for (size_t i = 0; i < n; i++)
        a[i] = i;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                b[k++] = by_rank(&all[a[j]], &all[a[i]]) < 0 ? a[j++] : a[i++];
            while (i < mid)
                b[k++] = a[i++];
            while (j < hi)
                b[k++] = a[j++];
        }
        size_t *t = a;
        a = b;
        b = t;
    }
    for (size_t i = 0; i < n; i++)
        tmp[i] = all[a[i]];
    memcpy(all, tmp, n * sizeof *all);
    free(tmp);
    free(base);
}

static int by_id(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    return x->chunk_id < y->chunk_id ? -1 : x->chunk_id > y->chunk_id;
}

/* The union of the legs' candidates ALL[0..N): sorted by chunk id, one
 * entry per chunk, a keyword score (raw >= 0) kept over a missing one (-1).
 * Returns the new count. */
static size_t cands_union(search_cand *all, size_t n)
{
    if (n > 1)
        qsort(all, n, sizeof *all, by_id);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k && all[k - 1].chunk_id == all[i].chunk_id) {
            if (all[i].raw >= 0)
                all[k - 1].raw = all[i].raw;
            continue;
        }
        all[k++] = all[i];
    }
    return k;
}

typedef search_path_hit path_hit;
typedef search_file_chunk file_chunk;
typedef search_file_hits file_hits;

void search_file_hits_cleanup(search_file_hits *f)
{
    free(f->v);
    free(f->chunks);
}

/* Adds chunk CID of file ID to F's chunks. */
static int chunk_push(file_hits *f, int64_t cid, int64_t id)
{
    if (f->nchunks == f->cap_chunks) {
        size_t cap = f->cap_chunks ? f->cap_chunks * 2 : 64;
        file_chunk *nv = realloc(f->chunks, cap * sizeof *nv);
        if (!nv)
            return MNEMO_NOMEM;
        f->chunks = nv;
        f->cap_chunks = cap;
    }
    f->chunks[f->nchunks++] = (file_chunk){cid, id};
    return MNEMO_OK;
}

/* Adds file ID with FRAC and TIER, and its chunk CID at SEQ (0: none) as
 * its first chunk if it comes before, and to F's chunks if CHUNKS. */
static int hit_add(file_hits *f, int64_t id, int64_t cid, int64_t seq, double frac, int tier,
                   int chunks)
{
    /* A file's rows come together; a file met again later (in both
     * queries) is merged with itself after sorting (file_legs). */
    path_hit *h = f->n && f->v[f->n - 1].file_id == id ? &f->v[f->n - 1] : NULL;
    if (h) {
        if (tier > h->tier)
            h->tier = tier;
        if (frac > h->frac)
            h->frac = frac;
    } else {
        if (f->n == f->cap) {
            size_t cap = f->cap ? f->cap * 2 : 16;
            path_hit *nv = realloc(f->v, cap * sizeof *nv);
            if (!nv)
                return MNEMO_NOMEM;
            f->v = nv;
            f->cap = cap;
        }
        h = &f->v[f->n++];
        *h = (path_hit){id, frac, tier, 0, 0};
    }
    if (cid && (!h->first_chunk || seq < h->first_seq)) {
        h->first_chunk = cid;
        h->first_seq = seq;
    }
    return cid && chunks ? chunk_push(f, cid, id) : MNEMO_OK;
}

int search_file_hit_add(search_file_hits *f, int64_t id, int64_t cid, int64_t seq, double frac,
                        int tier)
{
    return hit_add(f, id, cid, seq, frac, tier, 1);
}

int search_file_hit_first(search_file_hits *f, int64_t id, int64_t cid, double frac, int tier)
{
    return hit_add(f, id, cid, 0, frac, tier, 0);
}
static int by_chunk(const void *a, const void *b)
{
    const file_chunk *x = a, *y = b;
    return x->chunk_id < y->chunk_id ? -1 : x->chunk_id > y->chunk_id;
}

/* The file of CHUNK_ID if it is one of F's files, else 0 (F's chunks
 * sorted by chunk id). */
static int64_t hit_file_of(const file_hits *f, int64_t chunk_id)
{
    size_t lo = 0, hi = f->nchunks;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (f->chunks[mid].chunk_id < chunk_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < f->nchunks && f->chunks[lo].chunk_id == chunk_id ? f->chunks[lo].file_id : 0;
}

static int by_file(const void *a, const void *b)
{
    const path_hit *x = a, *y = b;
    return x->file_id < y->file_id ? -1 : x->file_id > y->file_id;
}

/* The index in F (sorted by file id) of FILE_ID, one of its files. */
static size_t hit_index(const file_hits *f, int64_t file_id)
{
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (f->v[mid].file_id < file_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int search_file_hits_chunk(search_file_hits *f, int64_t chunk_id, int64_t file_id)
{
    size_t h = hit_index(f, file_id);
    if (h == f->n || f->v[h].file_id != file_id)
        return MNEMO_OK;
    return chunk_push(f, chunk_id, file_id);
}

/* Whether F's chunks, F's files are in order: they often come so (and
 * the files stay so when search_file_hits_chunk finishes F again). */
static int chunks_sorted(const file_hits *f)
{
    for (size_t i = 1; i < f->nchunks; i++)
        if (f->chunks[i - 1].chunk_id > f->chunks[i].chunk_id)
            return 0;
    return 1;
}

static int files_sorted(const file_hits *f)
{
    for (size_t i = 1; i < f->n; i++)
        if (f->v[i - 1].file_id > f->v[i].file_id)
            return 0;
    return 1;
}

void search_file_hits_finish(search_file_hits *f)
{
    if (!chunks_sorted(f))
        qsort(f->chunks, f->nchunks, sizeof *f->chunks, by_chunk);
    if (!files_sorted(f)) /* the order of the files does not matter */
        qsort(f->v, f->n, sizeof *f->v, by_file);
    size_t k = 0;
    for (size_t i = 0; i < f->n; i++) {
        path_hit *h = &f->v[i], *last = k ? &f->v[k - 1] : NULL;
        if (!last || last->file_id != h->file_id) {
            f->v[k++] = *h;
            continue;
        }
        if (h->tier > last->tier)
            last->tier = h->tier;
        if (h->frac > last->frac)
            last->frac = h->frac;
        if (h->first_chunk && (!last->first_chunk || h->first_seq < last->first_seq)) {
            last->first_chunk = h->first_chunk;
            last->first_seq = h->first_seq;
        }
    }
    f->n = k;
}

/* ----------------------------------------------------------------------
 * Passages: what results show (snippet.c finds and scores them)
 * -------------------------------------------------------------------- */

/* Share of a result's text evidence that is its passage's; the rest is its
 * chunk's (see snippet.h). */
#define PASSAGE_SHARE 0.7
#define PASSAGES_PER_RESULT 2 /* chunks expanded into passages: this x results */

/* A chunk's text, owned: its own lines, then the next chunk's lines past
 * them. */
typedef struct ptext {
    buf text;
    int own;        /* lines of its own chunk */
    int first_line;
    char *path;
    uint32_t *map;  /* transcripts: JSONL line of each text line */
    size_t nmap;
    int sessions;
    int gone;
    char *mime;     /* media */
} ptext;

typedef struct pass {
    size_t cand;        /* in ALL */
    size_t text;        /* in the ptext array */
    snippet_passage p;
    double score;
    int tier;           /* the chunk's best passage keeps the chunk's file-name tier */
} pass;

static void ptext_cleanup(ptext *x)
{
    buf_cleanup(&x->text);
    free(x->path);
    free(x->map);
    free(x->mime);
}

static int count_lines(const char *s, size_t n)
{
    int k = 1;
    for (size_t i = 0; i < n; i++)
        k += s[i] == '\n';
    return k;
}

/* Reads chunk C's row into X; the lines of the next chunk that follow its
 * own are appended (not for transcripts, whose lines map to JSONL lines). */
static int ptext_load(const search_io *io, const cand *c, ptext *x)
{
    search_row row;
    memset(&row, 0, sizeof row); /* a store sets what it has */
    memset(x, 0, sizeof *x);
    buf_init(&x->text, 0);
    int rc = io->row(io->ud, c->chunk_id, &row);
    if (rc == MNEMO_NOTFOUND) {
        x->gone = 1;
        return MNEMO_OK;
    }
    if (rc)
        return rc;
    const char *text = row.text ? row.text : "";
    buf_append(&x->text, text, row.len);
    x->own = count_lines(text, row.len);
    x->first_line = row.first_line;
    x->sessions = row.source && strcmp(row.source, "sessions") == 0;
    x->path = strdup(row.path ? row.path : "");
    if (row.mime && !(x->mime = strdup(row.mime)))
        return MNEMO_NOMEM;
    if (row.map && row.nmap) {
        x->map = malloc(row.nmap * sizeof *x->map);
        if (x->map)
            memcpy(x->map, row.map, row.nmap * sizeof *x->map);
        x->nmap = row.nmap;
    } else if (row.next) {
        /* Skip the next chunk's lines that this one has too. */
        int skip = row.first_line + x->own - row.next_first_line;
        const char *p = row.next, *end = row.next + row.next_len;
        while (skip > 0 && p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            p = nl ? nl + 1 : end;
            skip--;
        }
        if (skip == 0 && p < end) {
            buf_putc(&x->text, '\n');
            buf_append(&x->text, p, (size_t)(end - p));
        }
    }
    if (buf_err(&x->text) || !x->path || (row.map && row.nmap && !x->map))
        return MNEMO_NOMEM;
    return MNEMO_OK;
}

typedef struct scorer {
    int vectors, rrf;
    double wv, sum_idf;
} scorer;

/* The fusion of C's vector score with text score TEXT (weighted fusion):
 * either is evidence on its own, s = 1 - (1 - t)(1 - wv * v). A keyword hit
 * never loses by meaning, a vector-only hit scores wv * v, and meaning
 * lifts a weak keyword hit more than a strong one. */
static double fuse(const scorer *k, const cand *c, double text)
{
    if (!k->vectors)
        return text;
    double v = c->vec < 0 ? 0 : c->vec;
    return 1.0 - (1.0 - text) * (1.0 - k->wv * v);
}

/* What a passage of a chunk is worth before the chunk's path boost and
 * factors: its text score blends the passage's evidence X with the
 * chunk's (XC), fused with the vector score V of the passage's lines. */
typedef struct pworth {
    const scorer *k;
    double xc;
} pworth;

static double passage_worth(void *ud, double x, double v)
{
    const pworth *w = ud;
    if (v < 0)
        v = 0;
    double t = 1.0 - exp(-2.0 * ((1.0 - PASSAGE_SHARE) * w->xc + PASSAGE_SHARE * x));
    return w->k->vectors ? 1.0 - (1.0 - t) * (1.0 - w->k->wv * v) : t;
}

/* The score of a passage of C worth W (BEST: the chunk's best passage's):
 * then path boost and factors. With rank fusion the chunk's fused rank
 * score is shared by its passages by their worth. */
static double passage_score(const scorer *k, const cand *c, double w, double best)
{
    double s = w;
    if (k->vectors && k->rrf)
        s = best > 0 ? c->fused * w / best : c->fused;
    s += (1.0 - s) * c->boost;
    return s * c->recency * c->importance;
}

static size_t line_at(const char *text, size_t len, int i);

/* The vector score of each line of X from chunk C's parts
 * (chunk_parts of its own lines, VC characters a part): a line takes its
 * part's; blank lines between parts, and the lines past the chunk's own,
 * the part before them. *LV is NULL when C has no vector. */
static int line_scores(const search_io *io, const search_vstats *vs, int vc, const cand *c,
                       const ptext *x, double **lv)
{
    *lv = NULL;
    float cs[CHUNK_MAX_PARTS];
    int k = c->vec >= 0 ? io->cosines(io->ud, c->chunk_id, cs, CHUNK_MAX_PARTS) : 0;
    if (k == 0)
        return MNEMO_OK;
    const char *t = x->text.data ? x->text.data : "";
    size_t len = x->text.len, own = line_at(t, len, x->own);
    if (own < len)
        own--; /* the newline before the next chunk's lines */
    int n = count_lines(t, len);
    double *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return MNEMO_NOMEM;
    chunk_part parts[CHUNK_MAX_PARTS];
    int np = chunk_parts(t, own, vc, parts);
    for (int i = 0; i < n; i++)
        v[i] = np == k ? -1 : c->vec; /* another split (or none): the chunk's */
    for (int j = 0; np == k && j < np; j++) {
        double pv = vec_score(vs, cs[j], NULL);
        for (int i = parts[j].first; i <= parts[j].last && i < n; i++)
            v[i] = pv;
    }
    for (int i = 0; i < n; i++)
        if (v[i] < 0)
            v[i] = i ? v[i - 1] : vec_score(vs, cs[0], NULL);
    *lv = v;
    return MNEMO_OK;
}

static int by_pass(const void *a, const void *b)
{
    const pass *x = a, *y = b;
    if (x->tier != y->tier)
        return y->tier - x->tier;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    if (x->cand != y->cand) /* the chunks' order */
        return x->cand < y->cand ? -1 : 1;
    return x->p.first - y->p.first;
}

/* Fills result R from passage P: path, lines, snippet and citation. */
static int make_result(const snippet_ctx *sc, const cand *c, const ptext *x, const pass *p,
                       mnemo_result *r)
{
    memset(r, 0, sizeof *r);
    buf snip;
    buf_init(&snip, 0);
    int rc = snippet_render(sc, x->text.data ? x->text.data : "", x->text.len, &p->p, &snip);
    /* A transcript chunk's lines are message lines, mapped to JSONL lines. */
    int sl = x->first_line + p->p.first, el = x->first_line + p->p.last;
    if (x->map) {
        size_t a = (size_t)p->p.first, b = (size_t)p->p.last;
        sl = (int)x->map[a < x->nmap ? a : x->nmap - 1];
        el = (int)x->map[b < x->nmap ? b : x->nmap - 1];
    }
    buf cit;
    buf_init(&cit, 0);
    buf_printf(&cit, "%s#L%d-L%d", x->path, sl, el);
    r->path = strdup(x->path);
    r->start_line = sl;
    r->end_line = el;
    r->score = p->score > 1.0 ? 1.0 : p->score;
    r->text_score = c->text;
    r->vector_score = c->vec < 0 ? c->vec : p->p.v;
    r->tier = p->tier;
    r->recency = c->recency;
    r->importance = c->importance;
    r->rank_before = c->rank_before;
    r->snippet = buf_detach(&snip);
    r->source = x->sessions ? "sessions" : "memory";
    r->citation = buf_detach(&cit);
    r->kind = x->mime ? "media" : "note";
    if (x->mime && !(r->mime = strdup(x->mime)))
        rc = MNEMO_NOMEM;
    if (!x->sessions) {
        double when = rank_path_date(x->path);
        if (when > 0) {
            char day[32];
            time_format_iso(when, day);
            day[10] = 0; /* YYYY-MM-DD */
            r->date = strdup(day);
            if (!r->date)
                rc = MNEMO_NOMEM;
        }
    }
    if (!rc && (!r->path || !r->snippet || !r->citation))
        rc = MNEMO_NOMEM;
    return rc;
}

static int overlaps(const mnemo_results *res, const mnemo_result *r)
{
    for (size_t i = 0; i < res->n; i++) {
        const mnemo_result *x = &res->v[i];
        if (strcmp(x->path, r->path) == 0 && r->start_line <= x->end_line &&
            x->start_line <= r->end_line)
            return 1;
    }
    return 0;
}

/* Byte offset of line I (0-based) of TEXT[0..LEN), LEN past its end. */
static size_t line_at(const char *text, size_t len, int i)
{
    size_t off = 0;
    while (i-- > 0) {
        const char *nl = memchr(text + off, '\n', len - off);
        if (!nl)
            return len;
        off = (size_t)(nl - text) + 1;
    }
    return off;
}

static int line_blank(const char *text, size_t len, int i)
{
    for (size_t a = line_at(text, len, i); a < len && text[a] != '\n'; a++)
        if (text[a] != ' ' && text[a] != '\t' && text[a] != '\r')
            return 0;
    return 1;
}

/* Passage P of X without the lines that a result of its file in RES
 * already shows (passages of overlapping chunks overlap): 0 when nothing
 * but blank lines is left, or when a result sits inside it (the rest
 * would be two pieces). */
static int trim_passage(const mnemo_results *res, const ptext *x, pass *p)
{
    int a = p->p.first, b = p->p.last;
    for (size_t i = 0; i < res->n; i++) {
        const mnemo_result *r = &res->v[i];
        int ra = r->start_line - x->first_line, rb = r->end_line - x->first_line;
        if (rb < a || ra > b || strcmp(r->path, x->path) != 0)
            continue;
        if (ra > a && rb < b)
            return 0;
        if (ra <= a)
            a = rb + 1;
        else
            b = ra - 1;
    }
    const char *t = x->text.data ? x->text.data : "";
    size_t n = x->text.len;
    while (a <= b && line_blank(t, n, a))
        a++;
    while (b >= a && line_blank(t, n, b))
        b--;
    if (a > b)
        return 0;
    if (a != p->p.first || b != p->p.last) {
        size_t off = line_at(t, n, a), end = line_at(t, n, b);
        const char *nl = memchr(t + end, '\n', n - end);
        p->p.first = a;
        p->p.last = b;
        p->p.off = off;
        p->p.len = (nl ? (size_t)(nl - t) : n) - off;
    }
    return 1;
}

static void result_cleanup(mnemo_result *r)
{
    free((char *)r->path);
    free((char *)r->snippet);
    free((char *)r->citation);
    free((char *)r->date);
    free((char *)r->mime);
}

/* ----------------------------------------------------------------------
 * Ranking stages (rank.c has the formulas)
 * -------------------------------------------------------------------- */

/* Multiplies the candidates' scores by their recency and importance, best
 * first (ALL sorted by by_rank). No factor exceeds max(1, importanceMax),
 * so once a candidate's score times that cannot reach the NEED-th best
 * final score, no later one can either: those are dropped (*N shrinks),
 * which spares a row lookup for most of a large pool. */
static int apply_factors(mnemo *m, const search_io *io, cand *all, size_t *n, size_t need)
{
    double now = core_now();
    double half = cfg_num(m->cfg, CFG_RECENCY_HALF_LIFE_DAYS);
    double floor = cfg_num(m->cfg, CFG_RECENCY_FLOOR);
    double imax = cfg_num(m->cfg, CFG_IMPORTANCE_MAX);
    double bound = imax > 1.0 ? imax : 1.0;
    double *top = malloc((need ? need : 1) * sizeof *top);
    if (!top)
        return MNEMO_NOMEM;
    size_t ntop = 0;
    for (size_t i = 0; i < *n; i++) {
        cand *c = &all[i];
        if (!c->tier && ntop == need && c->score * bound < top[0]) {
            *n = i;
            break;
        }
        c->recency = c->importance = 1.0;
        double when;
        int importance;
        int got = io->factors(io->ud, c->chunk_id, &when, &importance);
        if (got < 0) {
            free(top);
            return -got;
        }
        if (got) {
            c->recency = rank_recency(when, now, half, floor);
            c->importance = rank_importance(importance, imax);
            if (!c->tier)
                c->score *= c->recency * c->importance;
        }
        rank_top_offer(top, &ntop, need, c->tier ? INFINITY : c->score);
    }
    free(top);
    return MNEMO_OK;
}

typedef struct simctx {
    const pass *ps;
    const ptext *texts;
    rank_tokens *toks;      /* per passage, built on first use */
    unsigned char *built;
    int rc;
} simctx;

static const rank_tokens *tokens_of(simctx *s, size_t i)
{
    if (!s->built[i]) {
        s->built[i] = 1;
        const pass *p = &s->ps[i];
        const char *text = s->texts[p->text].text.data;
        if (text && rank_tokens_build(text + p->p.off, p->p.len, &s->toks[i]))
            s->rc = MNEMO_NOMEM;
    }
    return &s->toks[i];
}

static double sim_fn(void *ud, size_t i, size_t j)
{
    simctx *s = ud;
    return rank_jaccard(tokens_of(s, i), tokens_of(s, j));
}

/* Reorders ORDER[0..N) (indices into PS, by score) with MMR; similarity is
 * the overlap of the passages' tokens, from sketches built only for the
 * passages MMR compares. */
static int diversify(mnemo *m, const pass *ps, size_t nps, const ptext *texts, size_t *order,
                     size_t n, int max)
{
    double lambda = cfg_num(m->cfg, CFG_MMR_LAMBDA);
    size_t npool = (size_t)cfg_int(m->cfg, CFG_MMR_POOL);
    if (npool > n)
        npool = n;
    if (lambda >= 1.0 || npool < 3)
        return MNEMO_OK;
    double *score = calloc(nps ? nps : 1, sizeof *score);
    simctx s = {ps, texts, calloc(nps ? nps : 1, sizeof *s.toks), calloc(nps ? nps : 1, 1),
                MNEMO_OK};
    int rc = score && s.toks && s.built ? MNEMO_OK : MNEMO_NOMEM;
    if (!rc) {
        for (size_t i = 0; i < nps; i++)
            score[i] = ps[i].score;
        /* Positions past what the results can use need no MMR; a few
         * spare picks cover results dropped as overlapping. */
        rank_mmr(order, n, score, lambda, npool, (size_t)max * 2 + 2, sim_fn, &s);
        rc = s.rc;
    }
    if (s.toks)
        for (size_t i = 0; i < nps; i++)
            free(s.toks[i].h);
    free(s.toks);
    free(s.built);
    free(score);
    return rc;
}

double search_lap(double *t)
{
    double now = time_mono(), ms = (now - *t) * 1000.0;
    *t = now;
    return ms;
}

/* Cleans the query TEXT for searching (invalid UTF-8 repaired, runtime
 * envelopes removed) into QT. MNEMO_INVALID for an empty or too long
 * query (message on M). */
static int clean_query(mnemo *m, const char *text, buf *qt)
{
    if (!text)
        return core_error(m, MNEMO_INVALID, "empty query");
    buf raw;
    buf_init(&raw, 1 << 16);
    if (utf8_repair(&raw, text, strlen(text))) {
        buf_cleanup(&raw);
        return core_error(m, MNEMO_INVALID, "query too long (limit 64 KiB)");
    }
    /* Runtime envelopes (metadata blocks, [channel] tags) are not the query. */
    int src = sanitize_message(raw.data ? raw.data : "", raw.len, qt);
    buf_cleanup(&raw);
    if (src || buf_err(qt))
        return core_error(m, MNEMO_NOMEM, "out of memory");
    int blank = 1;
    for (size_t i = 0; i < qt->len; i++)
        if (qt->data[i] != ' ' && qt->data[i] != '\t' && qt->data[i] != '\n' && qt->data[i] != '\r')
            blank = 0;
    if (blank)
        return core_error(m, MNEMO_INVALID, "empty query");
    return MNEMO_OK;
}

int search_vector_failed(mnemo *m, mnemo_results *res, const char *provider, int explicit_,
                         int rc, const buf *err)
{
    const char *msg = err->len ? err->data : errcode_text(rc);
    if (explicit_)
        return core_error(m, rc == MNEMO_INVALID ? MNEMO_UNAVAILABLE : rc,
                          "memory search unavailable: %s", msg);
    return results_set_fallback(res, provider, msg);
}

int search_max_results(mnemo *m, const mnemo_search_opts *opts)
{
    return opts && opts->max_results > 0 ? opts->max_results
                                         : (int)cfg_int(m->cfg, CFG_MAX_RESULTS);
}

#define POOL_MIN 200

size_t search_pool_size(mnemo *m, const mnemo_search_opts *opts)
{
    int max = search_max_results(m, opts);
    return (size_t)(4 * max > POOL_MIN ? 4 * max : POOL_MIN);
}

int search_rank(mnemo *m, search_legs *l, const mnemo_search_opts *opts)
{
    tok *t = l->t;
    const query *q = l->q;
    const search_io *io = &l->io;
    cand *all = l->all;
    size_t n = l->n;
    const file_hits *fh = &l->fh;
    const search_bm25 *bm = &l->bm;
    const search_vstats *vs = &l->vs;
    mnemo_results *res = l->res;
    double *tm = l->lap;
    int rc = MNEMO_OK;
    int max = search_max_results(m, opts);
    double min_score = opts && opts->min_score >= 0 ? opts->min_score
                                                    : cfg_num(m->cfg, CFG_MIN_SCORE);
    /* Both scores for every candidate, then the fusion. */
    scorer k = {vs->ran, strcmp(cfg_str(m->cfg, CFG_FUSION), "rrf") == 0,
                cfg_num(m->cfg, CFG_VECTOR_WEIGHT), bm->sum_idf > 0 ? bm->sum_idf : 1.0};
    for (size_t i = 0; i < n; i++) {
        cand *c = &all[i];
        if (c->raw < 0)
            c->raw = q->match ? io->bm25(io->ud, c->chunk_id) : 0;
        c->text = 1.0 - exp(-2.0 * c->raw / k.sum_idf);
        c->vec = -1;
        c->recency = c->importance = 1.0;
        if (vs->ran) {
            /* A chunk means what its best part means. */
            float cs[CHUNK_MAX_PARTS];
            int np = io->cosines(io->ud, c->chunk_id, cs, CHUNK_MAX_PARTS);
            for (int j = 0; j < np; j++)
                if (j == 0 || cs[j] > c->cosine)
                    c->cosine = cs[j];
            if (np)
                c->vec = vec_score(vstats_of(l, c->chunk_id), c->cosine, &c->gate);
        }
        c->score = c->fused = k.rrf ? 0 : fuse(&k, c, c->text);
        if (fh->n)
            c->file_id = hit_file_of(fh, c->chunk_id);
    }
    if (vs->ran && k.rrf) {
        /* Reciprocal rank fusion: ranks by each leg, scaled to 0..1. */
        double kk = (double)cfg_int(m->cfg, CFG_RRF_K);
        double *fused = calloc(n ? n : 1, sizeof *fused);
        size_t *order = malloc((n ? n : 1) * sizeof *order);
        if (!fused || !order) {
            free(fused);
            free(order);
            return MNEMO_NOMEM;
        }
        for (int leg = 0; leg < 2; leg++) {
            for (size_t i = 0; i < n; i++)
                order[i] = i;
            for (size_t i = 1; i < n; i++) { /* insertion sort: n is a few hundred */
                size_t x = order[i], j = i;
                double kx = leg ? all[x].vec : all[x].raw;
                while (j > 0 && (leg ? all[order[j - 1]].vec : all[order[j - 1]].raw) < kx) {
                    order[j] = order[j - 1];
                    j--;
                }
                order[j] = x;
            }
            for (size_t r = 0; r < n; r++) {
                const cand *c = &all[order[r]];
                if ((leg ? c->vec : c->raw) > 0)
                    fused[order[r]] += 1.0 / (kk + (double)r + 1.0);
            }
        }
        for (size_t i = 0; i < n; i++)
            all[i].score = all[i].fused = fused[i] / (2.0 / (kk + 1.0));
        free(fused);
        free(order);
    }

    /* Path boosts and file tiers: the candidates in matched files, then
     * each matched file's best candidate (or first chunk). */
    size_t *best_of = calloc(fh->n + 1, sizeof *best_of); /* 1 + index in ALL, 0: none */
    if (!best_of)
        return MNEMO_NOMEM;
    for (size_t i = 0; i < n; i++) {
        if (!all[i].file_id)
            continue;
        size_t h = hit_index(fh, all[i].file_id);
        const path_hit *hit = &fh->v[h];
        all[i].boost = PATH_BOOST * hit->frac;
        all[i].score += (1.0 - all[i].score) * all[i].boost;
        all[i].path_hit |= hit->frac > 0;
        if (!best_of[h] || all[i].raw > all[best_of[h] - 1].raw)
            best_of[h] = i + 1;
    }
    for (size_t h = 0, nc = n; h < fh->n; h++) {
        const path_hit *hit = &fh->v[h];
        cand *best = best_of[h] && best_of[h] <= nc ? &all[best_of[h] - 1] : NULL;
        if (hit->tier && best) {
            best->tier = hit->tier;
        } else if (hit->tier || (!best && hit->frac > 0)) {
            int64_t cid = hit->first_chunk;
            if (cid && kept_kind(l, cid))
                all[n++] = (cand){.chunk_id = cid,
                                  .file_id = hit->file_id,
                                  .vec = -1,
                                  .score = PATH_BOOST * hit->frac,
                                  .boost = PATH_BOOST * hit->frac,
                                  .recency = 1.0,
                                  .importance = 1.0,
                                  .tier = hit->tier,
                                  .path_hit = 1};
        }
    }
    free(best_of);
    for (size_t i = 0; i < n; i++)
        if (all[i].tier)
            all[i].score = 1.0;

    res->timing.merge_ms = search_lap(tm);

    /* Recency and importance, for as many candidates as ranking can use:
     * the diversity pool and twice the results asked for. */
    size_t need = (size_t)cfg_int(m->cfg, CFG_MMR_POOL);
    if (need < (size_t)max * 2 + 2)
        need = (size_t)max * 2 + 2;
    need += (size_t)max;
    sort_by_rank(all, n);
    if (io->prefetch) {
        int64_t *ids = malloc((n ? n : 1) * sizeof *ids);
        if (!ids)
            return MNEMO_NOMEM;
        for (size_t i = 0; i < n; i++)
            ids[i] = all[i].chunk_id;
        rc = io->prefetch(io->ud, 'f', ids, n);
        free(ids);
        if (rc)
            return rc;
    }
    if ((rc = apply_factors(m, io, all, &n, need)))
        return rc;
    sort_by_rank(all, n);
    for (size_t i = 0; i < n; i++)
        all[i].rank_before = (int)i + 1;
    res->timing.rank_ms = search_lap(tm);

    /* Passages of the best chunks (every file-name tier among them). */
    size_t nc = (size_t)max * PASSAGES_PER_RESULT;
    size_t tiers = 0;
    while (tiers < n && all[tiers].tier)
        tiers++;
    if (nc < tiers)
        nc = tiers;
    if (nc > n)
        nc = n;
    ptext *texts = calloc(nc ? nc : 1, sizeof *texts);
    pass *ps = malloc((nc ? nc : 1) * SNIPPET_MAX_PASSAGES * sizeof *ps);
    size_t *order = malloc((nc ? nc : 1) * SNIPPET_MAX_PASSAGES * sizeof *order);
    size_t nt = 0, nps = 0, kept = 0;
    double tokw[64];
    snippet_token_weights(q, bm->idf, tokw);
    snippet_ctx sc = {t,      q,      tokw, k.sum_idf, bm->avgdl,
                      bm->k1, bm->b, (int)cfg_int(m->cfg, CFG_SNIPPET_CHARS),
                      NULL,   passage_worth, NULL};
    int vc = (int)cfg_int(m->cfg, CFG_VECTOR_CHARS);
    rc = texts && ps && order ? MNEMO_OK : MNEMO_NOMEM;
    if (!rc && io->prefetch && nc) {
        int64_t *ids = malloc(nc * sizeof *ids);
        rc = ids ? MNEMO_OK : MNEMO_NOMEM;
        for (size_t i = 0; !rc && i < nc; i++)
            ids[i] = all[i].chunk_id;
        if (!rc)
            rc = io->prefetch(io->ud, 'r', ids, nc);
        free(ids);
    }
    for (size_t i = 0; !rc && i < nc; i++) {
        ptext *x = &texts[nt];
        if ((rc = ptext_load(io, &all[i], x)) || x->gone) {
            ptext_cleanup(x);
            continue;
        }
        nt++;
        snippet_passage sp[SNIPPET_MAX_PASSAGES];
        int np = 0;
        double *lv = NULL;
        pworth pw = {&k, all[i].raw > 0 ? all[i].raw / k.sum_idf : 0};
        if (vs->ran && (rc = line_scores(io, vstats_of(l, all[i].chunk_id), vc, &all[i], x, &lv)))
            break;
        sc.lv = lv;
        sc.ud = &pw;
        rc = snippet_find(&sc, x->text.data ? x->text.data : "", x->text.len, x->own, sp,
                          SNIPPET_MAX_PASSAGES, &np);
        sc.lv = NULL;
        for (int j = 0; !lv && j < np; j++) /* no vector, or no vector leg */
            sp[j].v = all[i].vec;
        free(lv);
        double best = np ? passage_worth(&pw, sp[0].x, sp[0].v) : 0;
        for (int j = 0; !rc && j < np; j++) {
            pass *p = &ps[nps++];
            p->cand = i;
            p->text = nt - 1;
            p->p = sp[j];
            p->tier = j == 0 ? all[i].tier : 0;
            p->score = p->tier ? 1.0
                               : passage_score(&k, &all[i], passage_worth(&pw, sp[j].x, p->p.v),
                                               best);
        }
    }
    if (!rc) {
        if (nps > 1)
            qsort(ps, nps, sizeof *ps, by_pass);
        /* Threshold: a passage stays when it or its chunk clears it (the
         * chunk is the passage's surroundings: an answer that shares no
         * word with the question is not dropped when the question is just
         * above it). Strict mode abstains when nothing clears it; otherwise
         * the keyword matches are returned rather than nothing (never
         * vector-only guesses). */
        int strict = opts && opts->strict >= 0 ? opts->strict
                                               : cfg_bool(m->cfg, CFG_STRICT_MIN_SCORE);
        for (size_t i = 0; i < nps; i++) {
            /* On relevance: the factors order results, they do not make a
             * year-old answer irrelevant. */
            const cand *c = &all[ps[i].cand];
            double f = c->recency * c->importance, bar = min_score * f;
            /* A vector-only hit passes at its gate in a large index. */
            int gated = c->raw <= 0 && ps[i].p.x <= 0 && !c->path_hit && c->vec > 0 &&
                        k.vectors && !k.rrf && k.wv * c->gate * f < bar;
            if (ps[i].tier || (f > 0 && !gated && (ps[i].score >= bar || c->score >= bar)))
                order[kept++] = i;
        }
        if (kept == 0 && !strict) {
            for (size_t i = 0; i < nps; i++)
                if (all[ps[i].cand].raw > 0 || all[ps[i].cand].path_hit)
                    order[kept++] = i;
        }
        res->timing.rank_ms += search_lap(tm);
        /* Diversity: MMR over the passages below the file-name tiers. */
        size_t top = 0;
        while (top < kept && ps[order[top]].tier)
            top++;
        rc = diversify(m, ps, nps, texts, order + top, kept - top, max);
        res->timing.diversity_ms = search_lap(tm);
    }
    res->explain = opts && opts->explain;
    if (!rc && !(res->v = calloc((size_t)max, sizeof *res->v)))
        rc = MNEMO_NOMEM;
    for (size_t i = 0; !rc && i < kept && res->n < (size_t)max; i++) {
        /* A passage loses the lines a better result of its file shows
         * (transcripts, whose lines map to JSONL lines, are skipped). */
        pass pt = ps[order[i]];
        const pass *p = &pt;
        if (!texts[p->text].map && !trim_passage(res, &texts[p->text], &pt))
            continue;
        mnemo_result r;
        rc = make_result(&sc, &all[p->cand], &texts[p->text], p, &r);
        if (rc || overlaps(res, &r)) {
            result_cleanup(&r);
            continue;
        }
        r.rank_after = (int)res->n + 1;
        res->v[res->n++] = r;
    }
    for (size_t i = 0; i < nt; i++)
        ptext_cleanup(&texts[i]);
    free(texts);
    free(ps);
    free(order);
    res->timing.results_ms = search_lap(tm);
    return rc;
}

/* ----------------------------------------------------------------------
 * The operation: the store's legs, the keyword pool, the union, ranking
 * -------------------------------------------------------------------- */

/* L's candidates into l->all: the best pool of the keyword candidates
 * (topk.h: BM25, then chunk id), and the vector leg's, one per chunk. */
static int cands_of(search_legs *l)
{
    topk best;
    if (topk_init(&best, l->pool))
        return MNEMO_NOMEM;
    for (size_t i = 0; i < l->nkw; i++)
        topk_offer(&best, l->kw[i].raw, l->kw[i].chunk_id);
    l->all = malloc((best.n + l->nvids + l->fh.n + 1) * sizeof *l->all);
    if (!l->all) {
        topk_cleanup(&best);
        return MNEMO_NOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < best.n; i++)
        if (kept_kind(l, best.v[i].id))
            l->all[n++] = (cand){.chunk_id = best.v[i].id, .raw = best.v[i].score, .vec = -1};
    topk_cleanup(&best);
    for (size_t i = 0; i < l->nvids; i++)
        if (kept_kind(l, l->vids[i]))
            l->all[n++] = (cand){.chunk_id = l->vids[i], .raw = -1};
    l->n = cands_union(l->all, n);
    return MNEMO_OK;
}

int search_notes(mnemo *m, const char *text, const mnemo_search_opts *opts, mnemo_results **out)
{
    const search_store *st = m->be->notes;
    double t0 = time_mono(), tm = t0;
    *out = NULL;
    core_clear(m);
    buf qt;
    buf_init(&qt, 1 << 16);
    int rc = clean_query(m, text, &qt);
    if (rc) {
        buf_cleanup(&qt);
        return rc;
    }
    query q;
    memset(&q, 0, sizeof q);
    search_legs l;
    memset(&l, 0, sizeof l);
    int ran = 0;
    mnemo_results *res = calloc(1, sizeof *res);
    rc = res ? MNEMO_OK : MNEMO_NOMEM;
    if (rc || (rc = m->be->qtok(m, &l.t)) || (rc = query_parse(l.t, qt.data, &q)))
        goto done;
    if (!(res->mode = strdup("keyword"))) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    l.q = &q;
    l.text = qt.data;
    l.corpus = opts ? opts->corpus : NULL;
    l.media = opts ? opts->media : 0;
    l.pool = search_pool_size(m, opts);
    l.res = res;
    l.lap = &tm;
    l.bm.sum_idf = 1.0;
    l.bm.avgdl = 1.0;
    ran = 1;
    if ((rc = st->legs(m, &l)))
        goto done;
    if ((rc = cands_of(&l)))
        goto done;
    if ((rc = st->io(m, &l)) || (rc = search_rank(m, &l, opts)))
        goto done;
    res->timing.total_ms = (tm - t0) * 1000.0;
done:
    if (ran)
        st->end(m, &l);
    free(l.all);
    search_file_hits_cleanup(&l.fh);
    query_cleanup(&q);
    buf_cleanup(&qt);
    if (rc) {
        results_free(res);
        if (!m->err.len)
            core_error(m, rc, "search failed: %s", errcode_text(rc));
        return rc;
    }
    *out = res;
    return MNEMO_OK;
}
