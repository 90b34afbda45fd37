/*
 * cmd_search.c - `mnemo search QUERY`: keyword search over the index.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_search(int argc, char **argv)
{
    static const cli_opt opts[] = {
        {"max-results", 'n', "N", "number of results (default: config maxResults, 6)"},
        {"min-score", 0, "X", "drop results scoring below X, 0..1 (default: config minScore)"},
        {"json", 'j', NULL, "print memory_search JSON"},
        {"strict", 0, NULL, "return nothing when no result clears the threshold"},
        {"explain", 0, NULL, "show each result's scores, factors and ranks"},
        {"corpus", 0, "WHAT", "memory (default), sessions or all"},
        {"source-table", 0, "TABLE", "search this existing PostgreSQL table (config sourceTable)"},
        {NULL, 0, NULL, NULL},
    };
    cli_args a;
    int code = cli_parse(argc, argv, "search",
                         "mnemo search QUERY... [--max-results N] [--min-score X] [--strict] "
                         "[--explain] [--corpus memory|sessions|all] "
                         "[--source-table TABLE] [--json]",
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
    mnemo_results *res = NULL;
    int rc = mnemo_search(m, query, &so, &res);
    if (rc == MNEMO_NOTFOUND) {
        /* First use: build the index, then search. */
        fprintf(stderr, "mnemo: no index yet, indexing %s ...\n", mnemo_workspace(m));
        rc = mnemo_sync(m, NULL, NULL);
        if (!rc)
            rc = mnemo_search(m, query, &so, &res);
    }
    if (rc) {
        code = cli_fail(m, rc, json);
        free(query);
        mnemo_close(m);
        return code;
    }
    const char *fb_reason = NULL, *fb = mnemo_results_fallback(res, &fb_reason);
    if (!json && fb && strcmp(fb, "postgres") == 0)
        fprintf(stderr, "mnemo: PostgreSQL could not answer (%s); searched the local index\n",
                fb_reason);
    else if (!json && fb)
        fprintf(stderr, "mnemo: keyword search only (%s): %s\n", fb, fb_reason);
    if (json) {
        char *s = mnemo_results_json(res);
        if (s)
            puts(s);
        mnemo_free(s);
    } else if (mnemo_results_count(res) == 0) {
        printf("No results for: %s\n", query);
        char *st = NULL;
        if (mnemo_status_json(m, 0, &st) == MNEMO_OK && strstr(st, "\"files\": 0,"))
            fprintf(stderr,
                    "mnemo: the index of %s holds no files; memory is read from MEMORY.md, "
                    "USER.md, memory/ and extraPaths (see mnemo status)\n",
                    mnemo_workspace(m));
        mnemo_free(st);
    } else {
        for (size_t i = 0; i < mnemo_results_count(res); i++) {
            const mnemo_result *r = mnemo_results_get(res, i);
            printf("%s", i ? "\n" : "");
            cli_print_safe(stdout, r->citation, strlen(r->citation));
            printf("  (score %.2f)\n", r->score);
            if (so.explain) {
                char vs[32] = "-";
                if (r->vector_score >= 0)
                    snprintf(vs, sizeof vs, "%.3f", r->vector_score);
                printf("  [text %.3f, vector %s, file match %s, recency x%.3f, importance x%.3f, "
                       "rank %d -> %d]\n",
                       r->text_score, vs,
                       r->tier == 3 ? "path" : r->tier == 2 ? "name" : r->tier == 1 ? "stem" : "no",
                       r->recency, r->importance, r->rank_before, r->rank_after);
            }
            const char *s = r->snippet;
            while (*s) {
                const char *nl = strchr(s, '\n');
                int n = nl ? (int)(nl - s) : (int)strlen(s);
                fputs("  ", stdout);
                cli_print_safe(stdout, s, (size_t)n);
                putchar('\n');
                s += n + (nl ? 1 : 0);
            }
        }
    }
    mnemo_results_free(res);
    free(query);
    mnemo_close(m);
    return EXIT_OK;
}
