/*
 * cmd_status.c - `mnemo status`: the index at a glance.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "-";
}

int cmd_status(int argc, char **argv)
{
    static const cli_opt opts[] = {
        {"json", 'j', NULL, "print JSON"},
        {"deep", 0, NULL, "also probe the embedding provider (dimensions, latency)"},
        {NULL, 0, NULL, NULL},
    };
    cli_args a;
    int code = cli_parse(argc, argv, "status", "mnemo status [--json] [--deep]", opts, &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    mnemo *m;
    if ((code = cli_open(&a, &m)))
        return code;
    char *s = NULL;
    int rc = mnemo_status_json(m, a.val[1] != NULL, &s);
    if (rc) {
        cli_error("%s", mnemo_errmsg(m));
        mnemo_close(m);
        return cli_exit_code(rc);
    }
    /* The report is printed either way; an index that cannot be opened
     * (damaged, foreign, locked) sets the exit status. */
    json_t *rj = json_loads(s, 0, NULL);
    json_int_t es = json_integer_value(json_object_get(rj, "errorStatus"));
    json_decref(rj);
    code = es ? cli_exit_code((int)es) : EXIT_OK;
    if (a.val[0]) {
        puts(s);
    } else {
        json_t *j = json_loads(s, 0, NULL);
        json_t *db = json_object_get(j, "db");
        int pg = !strcmp(str(j, "backend"), "postgres");
        json_t *server = json_object_get(j, "server");
        printf("workspace:  %s\n", str(j, "workspace"));
        /* A server that cannot be reached: which one, not "(not built)". */
        int unreachable = pg && json_is_false(json_object_get(server, "reachable"));
        const char *dsn = json_string_value(json_object_get(server, "dsn"));
        if (unreachable)
            printf("index:      PostgreSQL server %s unreachable, tenant %s\n",
                   dsn && *dsn ? dsn : "(named by the environment)", str(j, "tenant"));
        else if (pg)
            printf("index:      PostgreSQL %s, tenant %s", str(server, "version"), str(j, "tenant"));
        else
            printf("index:      %s", str(db, "path"));
        if (json_is_true(json_object_get(j, "indexed"))) {
            json_t *last = json_object_get(j, "lastSync");
            if (pg)
                printf(" (schema %lld)\n",
                       json_integer_value(json_object_get(server, "schemaVersion")));
            else
                printf(" (%.1f MB, schema %lld)\n",
                       (double)json_integer_value(json_object_get(db, "sizeBytes")) / 1e6,
                       json_integer_value(json_object_get(db, "schemaVersion")));
            printf("files:      %lld indexed (%.1f MB), %zu skipped\n",
                   json_integer_value(json_object_get(j, "files")),
                   (double)json_integer_value(json_object_get(j, "bytes")) / 1e6,
                   json_array_size(json_object_get(j, "skipped")));
            printf("chunks:     %lld\n", json_integer_value(json_object_get(j, "chunks")));
            printf("last sync:  %s (%.1f ms)\n", str(last, "at"),
                   json_number_value(json_object_get(last, "durationMs")));
            json_t *tk = json_object_get(j, "tokenizer"), *ch = json_object_get(j, "chunking");
            printf("tokenizer:  %s stemming, CJK bigrams, BM25 k1=%g b=%g\n", str(tk, "language"),
                   json_number_value(json_object_get(json_object_get(tk, "bm25"), "k1")),
                   json_number_value(json_object_get(json_object_get(tk, "bm25"), "b")));
            printf("chunking:   %lld tokens, %lld overlap\n",
                   json_integer_value(json_object_get(ch, "tokens")),
                   json_integer_value(json_object_get(ch, "overlap")));
            printf("mode:       %s\n", str(j, "mode"));
            json_t *em = json_object_get(j, "embedding");
            const char *prov = str(em, "provider");
            if (strcmp(prov, "none") == 0) {
                if (json_object_get(em, "unused"))
                    printf("embedding:  none (%s); %lld chunks have vectors, unused (see the "
                           "warning)\n",
                           str(em, "reason"), json_integer_value(json_object_get(em, "vectors")));
                else
                    printf("embedding:  none (%s)\n", str(em, "reason"));
            } else {
                printf("embedding:  %s %s, %lld dims, %lld of %lld chunks have vectors%s\n", prov,
                       str(em, "model"), json_integer_value(json_object_get(em, "dims")),
                       json_integer_value(json_object_get(em, "vectors")),
                       json_integer_value(json_object_get(j, "chunks")),
                       json_is_true(json_object_get(em, "stale")) ? " (stale)" : "");
                json_t *probe = json_object_get(em, "probe");
                if (probe && json_is_true(json_object_get(probe, "ok")))
                    printf("probe:      ok, %lld dims, %.1f ms\n",
                           json_integer_value(json_object_get(probe, "dims")),
                           json_number_value(json_object_get(probe, "latencyMs")));
                else if (probe)
                    printf("probe:      failed: %s\n", str(probe, "error"));
            }
            size_t i;
            json_t *v;
            json_array_foreach(json_object_get(j, "skipped"), i, v)
            {
                if (i == 0)
                    printf("skipped:\n");
                printf("  %s: %s\n", str(v, "path"), str(v, "reason"));
            }
            json_t *mj = json_object_get(j, "memories");
            if (mj && json_object_get(mj, "count"))
                printf("memories:   %lld in %s\n",
                       (long long)json_integer_value(json_object_get(mj, "count")),
                       str(mj, "path"));
            json_t *vj = json_object_get(j, "vectors");
            if (pg && json_is_false(json_object_get(vj, "enabled")))
                printf("vectors:    %s\n", str(vj, "reason"));
        } else {
            if (!unreachable)
                printf(" (not built)\n");
            if (json_object_get(j, "error"))
                printf("error:      %s\n", str(j, "error"));
        }
        if (json_object_get(j, "error") && json_is_true(json_object_get(j, "indexed")))
            printf("error:      %s\n", str(j, "error"));
        json_t *reads = json_object_get(j, "reads");
        if (reads) {
            json_t *pj = json_object_get(reads, "primary"), *last = json_object_get(reads, "last");
            printf("reads:      %s %s", str(reads, "server"), str(reads, "dsn"));
            if (json_is_true(json_object_get(reads, "fellBack")))
                printf(" (%s)", str(reads, "reason"));
            printf("\n");
            printf("primary:    %s %s%s%s\n", str(pj, "dsn"), str(pj, "state"),
                   json_object_get(pj, "reason") ? ": " : "",
                   json_object_get(pj, "reason") ? str(pj, "reason") : "");
            size_t k;
            json_t *x;
            json_array_foreach(json_object_get(reads, "replicas"), k, x)
            {
                const char *state = str(x, "state");
                printf("replica:    %s %s", str(x, "dsn"), state);
                if (!strcmp(state, "down"))
                    printf(": %s\n", str(x, "reason"));
                else if (json_object_get(x, "lagBytes"))
                    printf(" (%lld bytes, %.0f ms behind)\n",
                           (long long)json_integer_value(json_object_get(x, "lagBytes")),
                           json_number_value(json_object_get(x, "lagMs")));
                else
                    printf(" (%.0f ms behind)\n", json_number_value(json_object_get(x, "lagMs")));
            }
            if (last && json_is_true(json_object_get(last, "fellBack")))
                printf("last read:  %s, fell back: %s\n", str(last, "server"),
                       str(last, "reason"));
            else if (last)
                printf("last read:  %s, waited %.0f ms\n", str(last, "server"),
                       json_number_value(json_object_get(last, "waitedMs")));
        }
        size_t i;
        json_t *v;
        /* An error the index gives is also among the warnings: print it once. */
        const char *error = json_string_value(json_object_get(j, "error"));
        json_array_foreach(json_object_get(j, "warnings"), i, v)
        {
            if (!error || strcmp(error, json_string_value(v)) != 0)
                printf("warning:    %s\n", json_string_value(v));
        }
        json_decref(j);
    }
    mnemo_free(s);
    mnemo_close(m);
    return code;
}
