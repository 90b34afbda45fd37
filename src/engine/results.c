/*
 * results.c - the result set of a search: its accessors, its JSON form
 * and its release (see results.h).
 */
#include "engine/results.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

size_t mnemo_results_count(const mnemo_results *r) { return r ? r->n : 0; }

const mnemo_result *mnemo_results_get(const mnemo_results *r, size_t i)
{
    return r && i < r->n ? &r->v[i] : NULL;
}

const char *mnemo_results_mode(const mnemo_results *r) { return r ? r->mode : "keyword"; }

const char *mnemo_results_provider(const mnemo_results *r) { return r ? r->provider : NULL; }

const char *mnemo_results_fallback(const mnemo_results *r, const char **reason)
{
    if (reason)
        *reason = r ? r->fallback_reason : NULL;
    return r ? r->fallback_from : NULL;
}

void mnemo_results_timing(const mnemo_results *r, mnemo_search_timing *out)
{
    if (r)
        *out = r->timing;
    else
        memset(out, 0, sizeof *out);
}

void results_free(mnemo_results *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free((char *)r->v[i].path);
        free((char *)r->v[i].snippet);
        free((char *)r->v[i].citation);
        free((char *)r->v[i].date);
        free((char *)r->v[i].mime);
    }
    free(r->v);
    free(r->mode);
    free(r->provider);
    free(r->model);
    free(r->fallback_from);
    free(r->fallback_reason);
    free(r);
}

void mnemo_results_free(mnemo_results *r) { results_free(r); }

void results_write_item(buf *b, const mnemo_results *r, size_t i, int kind)
{
    const mnemo_result *x = &r->v[i];
    int media = x->mime != NULL;
    buf_puts(b, media  ? "{\"kind\":\"media\",\"path\":"
                : kind ? "{\"kind\":\"note\",\"path\":"
                       : "{\"path\":");
    buf_json_str(b, x->path, strlen(x->path));
    buf_printf(b, ",\"startLine\":%d,\"endLine\":%d,\"score\":%.4f,", x->start_line,
               x->end_line, x->score);
    if (x->vector_score >= 0)
        buf_printf(b, "\"vectorScore\":%.4f,", x->vector_score);
    buf_printf(b, "\"textScore\":%.4f,\"snippet\":", x->text_score);
    buf_json_str(b, x->snippet, strlen(x->snippet));
    buf_puts(b, ",\"source\":");
    buf_json_str(b, x->source, strlen(x->source));
    buf_puts(b, ",\"citation\":");
    buf_json_str(b, x->citation, strlen(x->citation));
    if (x->date)
        buf_printf(b, ",\"date\":\"%s\"", x->date);
    if (media) {
        buf_puts(b, ",\"mimeType\":");
        buf_json_str(b, x->mime, strlen(x->mime));
    }
    if (r->explain) {
        buf_printf(b, ",\"explain\":{\"textScore\":%.4f,\"vectorScore\":", x->text_score);
        if (x->vector_score >= 0)
            buf_printf(b, "%.4f", x->vector_score);
        else
            buf_puts(b, "null");
        buf_printf(b,
                   ",\"tier\":\"%s\",\"recency\":%.4f,\"importance\":%.4f,"
                   "\"rankBefore\":%d,\"rankAfter\":%d}",
                   x->tier == 3   ? "path"
                   : x->tier == 2 ? "name"
                   : x->tier == 1 ? "stem"
                                  : "content",
                   x->recency, x->importance, x->rank_before, x->rank_after);
    }
    buf_putc(b, '}');
}

void results_write_tail(buf *b, const mnemo_results *r)
{
    buf_puts(b, ",\"mode\":");
    const char *mode = r ? r->mode : "keyword";
    buf_json_str(b, mode, strlen(mode));
    if (r && r->provider) {
        buf_puts(b, ",\"provider\":");
        buf_json_str(b, r->provider, strlen(r->provider));
        buf_puts(b, ",\"model\":");
        buf_json_str(b, r->model, strlen(r->model));
    }
    if (r && r->fallback_from) {
        buf_puts(b, ",\"fallback\":{\"from\":");
        buf_json_str(b, r->fallback_from, strlen(r->fallback_from));
        buf_puts(b, ",\"reason\":");
        buf_json_str(b, r->fallback_reason, strlen(r->fallback_reason));
        buf_putc(b, '}');
    }
    if (r && r->explain) {
        const mnemo_search_timing *t = &r->timing;
        buf_printf(b,
                   ",\"timing\":{\"keywordMs\":%.3f,\"vectorMs\":%.3f,\"mergeMs\":%.3f,"
                   "\"rankMs\":%.3f,\"diversityMs\":%.3f,\"resultsMs\":%.3f,"
                   "\"totalMs\":%.3f}",
                   t->keyword_ms, t->vector_ms, t->merge_ms, t->rank_ms, t->diversity_ms,
                   t->results_ms, t->total_ms);
    }
}

char *mnemo_results_json(const mnemo_results *r)
{
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"results\":[");
    for (size_t i = 0; r && i < r->n; i++) {
        if (i)
            buf_putc(&b, ',');
        results_write_item(&b, r, i, 0);
    }
    buf_putc(&b, ']');
    results_write_tail(&b, r);
    buf_putc(&b, '}');
    return buf_detach(&b);
}

int results_set_fallback(mnemo_results *res, const char *from, const char *reason)
{
    free(res->fallback_from);
    free(res->fallback_reason);
    res->fallback_from = strdup(from);
    res->fallback_reason = strdup(reason);
    return res->fallback_from && res->fallback_reason ? MNEMO_OK : MNEMO_NOMEM;
}
