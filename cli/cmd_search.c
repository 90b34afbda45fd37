/*
 * cmd_search.c - `mnemo search QUERY`: the notes and the stored facts
 * together (mnemo_search_all_typed), or one kind with --kinds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* X as the JSON answer prints it (4 places; importance: 4 digits), read
 * back: what the figures printed here are rounded from. */
static double as_printed(double x)
{
    char t[64];
    snprintf(t, sizeof t, "%.4f", x);
    return strtod(t, NULL);
}

static double as_printed_g(double x)
{
    char t[64];
    snprintf(t, sizeof t, "%.4g", x);
    return strtod(t, NULL);
}

/* Hit I of H as the lines `mnemo search` prints: its citation and score,
 * with EXPLAIN the factors of a note, then the passage. */
static void print_hit(const mnemo_hits *h, size_t i, int explain, size_t nth)
{
    const mnemo_result *r = mnemo_hits_note(h, i);
    const mnemo_memory *f = mnemo_hits_fact(h, i);
    if (!r && !f)
        return;
    char cit[128];
    if (f)
        snprintf(cit, sizeof cit, "memory://%s", f->id);
    const char *c = f ? cit : r->citation;
    printf("%s", nth ? "\n" : "");
    cli_print_safe(stdout, c, strlen(c));
    double score = as_printed(mnemo_hits_score(h, i));
    if (f) {
        char day[16] = "";
        time_t t = (time_t)f->updated_at;
        struct tm tm;
        if (f->updated_at && gmtime_r(&t, &tm))
            strftime(day, sizeof day, "%Y-%m-%d", &tm);
        printf("  (score %.2f; fact, %s, importance %.2f, %.10s)\n", score,
               *f->category ? f->category : "uncategorised", as_printed_g(f->importance),
               day);
    } else if (r->mime) {
        printf("  (score %.2f; %s)\n", score, r->mime); /* an image or audio file */
    } else {
        printf("  (score %.2f)\n", score);
    }
    if (explain && !f) {
        char vs[32] = "-";
        if (r->vector_score >= 0)
            snprintf(vs, sizeof vs, "%.3f", as_printed(r->vector_score));
        static const char *const tiers[] = {"no", "stem", "name", "path"};
        printf("  [text %.3f, vector %s, file match %s, recency x%.3f, importance x%.3f, "
               "rank %d -> %d]\n",
               as_printed(r->text_score), vs,
               r->tier >= 1 && r->tier <= 3 ? tiers[r->tier] : "no",
               as_printed(r->recency), as_printed(r->importance), r->rank_before,
               r->rank_after);
    }
    const char *s = f ? f->text : r->snippet;
    while (s && *s) {
        const char *nl = strchr(s, '\n');
        int n = nl ? (int)(nl - s) : (int)strlen(s);
        fputs("  ", stdout);
        cli_print_safe(stdout, s, (size_t)n);
        putchar('\n');
        s += n + (nl ? 1 : 0);
    }
}

int cmd_search(int argc, char **argv)
{
    static const cli_opt opts[] = {
        {"max-results", 'n', "N", "number of results (default: config maxResults, 6)"},
        {"min-score", 0, "X", "drop results less relevant than X, 0..1 (default: config minScore)"},
        {"json", 'j', NULL, "print memory_search JSON"},
        {"strict", 0, NULL, "return nothing when no result clears the threshold"},
        {"explain", 0, NULL, "show each result's scores, factors and ranks"},
        {"corpus", 0, "memory|sessions|all", "memory (default), sessions or all"},
        {"source-table", 0, "TABLE", "search this existing PostgreSQL table (config sourceTable)"},
        {"kinds", 0, "note|fact|media|all",
         "note, fact, media or all (default), or a comma list: the notes, the stored facts, the images and audio (multimodal)"},
        {"user", 0, "U", "facts of this user (default: config userId)"},
        {"agent", 0, "A", "facts of this agent"},
        {"run", 0, "R", "facts of this run (session)"},
        {"scope", 0, "all|session|long-term", "facts: all (default), session or long-term"},
        {"categories", 0, "CATEGORY,...", "facts of these categories only"},
        {"type", 0, "TYPE", "facts of this type: fact, preference, summary, context, raw or all"},
        {"subject", 0, "S", "facts about this subject: user or a name"},
        {"filters", 0, "JSON", "facts matching this filter (docs/memories.md)"},
        {NULL, 0, NULL, NULL},
    };
    cli_args a;
    int code = cli_parse(argc, argv, "search",
                         "mnemo search QUERY... [--max-results N] [--min-score X] [--strict] "
                         "[--explain] [--corpus memory|sessions|all] "
                         "[--source-table TABLE] [--kinds note|fact|media|all] [--user U] [--agent A] "
                         "[--run R] [--scope all|session|long-term] [--categories CATEGORY,...] "
                         "[--type TYPE] [--subject S] "
                         "[--filters JSON] [--json]",
                         opts,
                         &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    int json = a.val[2] != NULL;
    if (a.npos == 0) {
        cli_error("search: no query given (usage: mnemo search QUERY)");
        return EXIT_USAGE;
    }
    mnemo_search_opts so;
    mnemo_search_opts_init(&so);
    if (a.val[0] && (code = cli_int(a.val[0], "max-results", 1, 100, &so.max_results)))
        return code;
    if (a.val[1] && (code = cli_double(a.val[1], "min-score", 0, 1, &so.min_score)))
        return code;
    if (a.val[3])
        so.strict = 1;
    so.explain = a.val[4] != NULL;
    if (a.val[5]) {
        if (strcmp(a.val[5], "memory") && strcmp(a.val[5], "sessions") && strcmp(a.val[5], "all")) {
            cli_error("--corpus: expected memory, sessions or all, got '%s'", a.val[5]);
            return EXIT_USAGE;
        }
        so.corpus = a.val[5];
    }

    char *query = cli_join(&a);
    if (!query)
        return EXIT_ERROR;

    mnemo *m = NULL;
    mnemo_config *cfg = NULL;
    if ((code = cli_config(&a, &cfg))) {
        free(query);
        return code;
    }
    {
        char *err = NULL;
        if (a.val[6] && mnemo_config_set(cfg, "sourceTable", a.val[6], "flag", &err)) {
            cli_error("--%s: %s", opts[6].name, err ? err : "invalid value");
            mnemo_free(err);
            mnemo_config_free(cfg);
            free(query);
            return EXIT_USAGE;
        }
    }
    int orc = mnemo_open(cfg, &m);
    mnemo_config_free(cfg);
    if (orc) {
        cli_error("%s", mnemo_errmsg(m));
        mnemo_close(m);
        free(query);
        return cli_exit_code(orc);
    }
    /* The options of mnemo_search_all_typed: the notes', and which facts. */
    mnemo_search_all_opts ao;
    mnemo_search_all_opts_init(&ao);
    ao.notes = so;
    const char **cats = NULL;
    size_t ncats = 0;
    char *catbuf = NULL;
    int rc = MNEMO_OK;
    if (a.val[7])
        rc = mnemo_search_kinds(m, a.val[7], &ao.kinds);
    ao.facts.user_id = a.val[8];
    ao.facts.agent_id = a.val[9];
    ao.facts.run_id = a.val[10];
    ao.facts.scope = a.val[11];
    if (a.val[12]) { /* a comma list */
        size_t most = 1;
        for (const char *p = a.val[12]; *p; p++)
            most += *p == ',';
        catbuf = strdup(a.val[12]);
        cats = calloc(most, sizeof *cats);
        if (!catbuf || !cats)
            rc = MNEMO_NOMEM;
    }
    for (char *p = catbuf; !rc && p && *p;) {
        size_t l = strcspn(p, ",");
        int last = p[l] == 0;
        p[l] = 0;
        if (l)
            cats[ncats++] = p;
        p += l + !last;
    }
    ao.facts.categories = cats;
    ao.facts.ncategories = ncats;
    ao.facts.type = a.val[13];
    ao.facts.subject = a.val[14];
    ao.facts.filters = a.val[15];
    mnemo_hits *h = NULL;
    if (!rc)
        rc = mnemo_search_all_typed(m, query, &ao, &h);
    if (rc == MNEMO_NOTFOUND) {
        /* First use: build the index, then search. */
        fprintf(stderr, "mnemo: no index yet, indexing %s ...\n", mnemo_workspace(m));
        rc = mnemo_sync(m, NULL, NULL);
        if (!rc)
            rc = mnemo_search_all_typed(m, query, &ao, &h);
    }
    char *out = !rc && json ? mnemo_hits_json(h) : NULL;
    if (!rc && json && !out)
        rc = MNEMO_NOMEM;
    free(catbuf);
    free(cats);
    if (rc) {
        code = cli_fail(m, rc, json);
        mnemo_hits_free(h);
        free(query);
        mnemo_close(m);
        return code;
    }
    const char *fb_reason = NULL;
    const char *fb = mnemo_results_fallback(mnemo_hits_notes(h), &fb_reason);
    if (!json && fb && strcmp(fb, "postgres") == 0)
        fprintf(stderr, "mnemo: PostgreSQL could not answer (%s); searched the local index\n",
                fb_reason);
    else if (!json && fb)
        fprintf(stderr, "mnemo: keyword search only (%s): %s\n", fb, fb_reason);
    const char *warn = mnemo_hits_warning(h);
    if (!json && warn)
        fprintf(stderr, "mnemo: %s\n", warn);
    size_t n = mnemo_hits_count(h);
    if (json) {
        puts(out);
    } else if (n == 0) {
        printf("No results for: %s\n", query);
        long long files = -1;
        if (mnemo_index_count(m, &files) == MNEMO_OK && files == 0)
            fprintf(stderr,
                    "mnemo: the index of %s holds no files; memory is read from MEMORY.md, "
                    "USER.md, memory/ and extraPaths (see mnemo status)\n",
                    mnemo_workspace(m));
    } else {
        for (size_t i = 0; i < n; i++)
            print_hit(h, i, so.explain, i);
    }
    mnemo_free(out);
    mnemo_hits_free(h);
    free(query);
    mnemo_close(m);
    return EXIT_OK;
}
