/*
 * cmd_search.c - `mnemo search QUERY`: the notes and the stored facts
 * together (mnemo_search_all), or one kind with --kinds.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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
        {"kinds", 0, "note|fact|all", "note, fact or all (default): the notes, the stored facts, or both"},
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
                         "[--source-table TABLE] [--kinds note|fact|all] [--user U] [--agent A] "
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
    /* The options of mnemo_search_all. */
    json_t *o = json_object();
    if (so.max_results > 0)
        json_object_set_new(o, "maxResults", json_integer(so.max_results));
    if (so.min_score >= 0)
        json_object_set_new(o, "minScore", json_real(so.min_score));
    if (so.strict > 0)
        json_object_set_new(o, "strict", json_true());
    if (so.explain)
        json_object_set_new(o, "explain", json_true());
    if (so.corpus)
        json_object_set_new(o, "corpus", json_string(so.corpus));
    static const char *const keys[] = {"kinds", "user_id", "agent_id", "run_id", "scope",
                                       NULL, "type", "subject", "filters"};
    for (int k = 0; k < 9; k++) {
        const char *v = a.val[7 + k];
        if (!v)
            continue;
        if (k == 5) { /* categories: a comma list */
            json_t *arr = json_array();
            for (const char *p = v; *p;) {
                size_t l = strcspn(p, ",");
                if (l)
                    json_array_append_new(arr, json_stringn(p, l));
                p += l + (p[l] == ',');
            }
            json_object_set_new(o, "categories", arr);
        } else {
            json_object_set_new(o, keys[k], json_string(v));
        }
    }
    char *opt = json_dumps(o, JSON_COMPACT), *out = NULL;
    json_decref(o);
    int rc = opt ? mnemo_search_all(m, query, opt, &out) : MNEMO_NOMEM;
    if (rc == MNEMO_NOTFOUND) {
        /* First use: build the index, then search. */
        fprintf(stderr, "mnemo: no index yet, indexing %s ...\n", mnemo_workspace(m));
        rc = mnemo_sync(m, NULL, NULL);
        if (!rc)
            rc = mnemo_search_all(m, query, opt, &out);
    }
    free(opt);
    if (rc) {
        code = cli_fail(m, rc, json);
        free(query);
        mnemo_close(m);
        return code;
    }
    json_t *j = json_loads(out, 0, NULL);
    json_t *fbo = json_object_get(j, "fallback");
    const char *fb = json_string_value(json_object_get(fbo, "from"));
    const char *fb_reason = json_string_value(json_object_get(fbo, "reason"));
    if (!json && fb && strcmp(fb, "postgres") == 0)
        fprintf(stderr, "mnemo: PostgreSQL could not answer (%s); searched the local index\n",
                fb_reason);
    else if (!json && fb)
        fprintf(stderr, "mnemo: keyword search only (%s): %s\n", fb, fb_reason);
    const char *warn = json_string_value(json_object_get(j, "warning"));
    if (!json && warn)
        fprintf(stderr, "mnemo: %s\n", warn);
    json_t *res = json_object_get(j, "results"), *r;
    size_t i;
    if (json) {
        puts(out);
    } else if (json_array_size(res) == 0) {
        printf("No results for: %s\n", query);
        char *st = NULL;
        if (mnemo_status_json(m, 0, &st) == MNEMO_OK && strstr(st, "\"files\": 0,"))
            fprintf(stderr,
                    "mnemo: the index of %s holds no files; memory is read from MEMORY.md, "
                    "USER.md, memory/ and extraPaths (see mnemo status)\n",
                    mnemo_workspace(m));
        mnemo_free(st);
    } else {
        json_array_foreach(res, i, r) {
            const char *cit = json_string_value(json_object_get(r, "citation"));
            const char *kind = json_string_value(json_object_get(r, "kind"));
            printf("%s", i ? "\n" : "");
            cli_print_safe(stdout, cit ? cit : "", cit ? strlen(cit) : 0);
            if (kind && !strcmp(kind, "fact")) {
                const char *cat = json_string_value(json_object_get(r, "category"));
                const char *upd = json_string_value(json_object_get(r, "updated_at"));
                printf("  (score %.2f; fact, %s, importance %.2f, %.10s)\n",
                       json_number_value(json_object_get(r, "score")),
                       cat && *cat ? cat : "uncategorised",
                       json_number_value(json_object_get(r, "importance")), upd ? upd : "");
            } else {
                printf("  (score %.2f)\n", json_number_value(json_object_get(r, "score")));
            }
            json_t *ex = json_object_get(r, "explain");
            if (so.explain && ex) {
                char vs[32] = "-";
                json_t *vv = json_object_get(ex, "vectorScore");
                if (json_is_number(vv))
                    snprintf(vs, sizeof vs, "%.3f", json_number_value(vv));
                const char *tier = json_string_value(json_object_get(ex, "tier"));
                printf("  [text %.3f, vector %s, file match %s, recency x%.3f, importance x%.3f, "
                       "rank %d -> %d]\n",
                       json_number_value(json_object_get(ex, "textScore")), vs,
                       tier && strcmp(tier, "content") ? tier : "no",
                       json_number_value(json_object_get(ex, "recency")),
                       json_number_value(json_object_get(ex, "importance")),
                       (int)json_integer_value(json_object_get(ex, "rankBefore")),
                       (int)json_integer_value(json_object_get(ex, "rankAfter")));
            }
            const char *s = json_string_value(json_object_get(r, "snippet"));
            while (s && *s) {
                const char *nl = strchr(s, '\n');
                int n = nl ? (int)(nl - s) : (int)strlen(s);
                fputs("  ", stdout);
                cli_print_safe(stdout, s, (size_t)n);
                putchar('\n');
                s += n + (nl ? 1 : 0);
            }
        }
    }
    json_decref(j);
    mnemo_free(out);
    free(query);
    mnemo_close(m);
    return EXIT_OK;
}
