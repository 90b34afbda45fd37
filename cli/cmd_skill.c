/*
 * cmd_skill.c - `mnemo skill`: the memory_search skill for skill runners.
 * Arguments arrive as JSON in the SKILL_ARGS environment variable:
 * {"query": "...", "type": "fact", "subject": "user", "limit": 5}, and
 * the other arguments of the MCP tool memory_search (kinds, maxResults,
 * user_id, scope, categories, filters, ...): the same search of notes and
 * stored facts together (mnemo_search_all). The answer is one JSON object
 * on stdout:
 * {"success":true,"output":"Found 3 memories:\n\n--- Result 1 ...","exitCode":0}
 * or {"success":false,"error":"...","exitCode":1}.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "cli.h"
#include "skill.h"

static int answer(int ok, const char *text)
{
    json_t *o = json_object();
    json_object_set_new(o, "success", json_boolean(ok));
    json_object_set_new(o, ok ? "output" : "error", json_string(text ? text : ""));
    json_object_set_new(o, "exitCode", json_integer(ok ? 0 : 1));
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    printf("%s\n", s ? s : "{\"success\":false,\"error\":\"out of memory\",\"exitCode\":1}");
    free(s);
    return ok ? EXIT_OK : EXIT_ERROR;
}

/* WHAT and DETAIL as one message, valid UTF-8 whatever DETAIL holds (a
 * parser's message can quote half a character). */
static char *msg(const char *what, const char *detail)
{
    size_t n = strlen(what) + strlen(detail) + 1;
    char *s = malloc(n);
    if (!s)
        return NULL;
    snprintf(s, n, "%s%s", what, detail);
    char *clean = api_utf8_clean(s);
    free(s);
    return clean;
}

int skill_args_parse(const char *raw, char **query, char **opts, char **err)
{
    *query = *opts = *err = NULL;
    if (!raw || !*raw) {
        *err = msg("SKILL_ARGS is not set: expected {\"query\": \"...\"}", "");
        return MNEMO_INVALID;
    }
    json_error_t je;
    json_t *args = json_loads(raw, 0, &je);
    if (!json_is_object(args)) {
        json_decref(args);
        *err = msg("SKILL_ARGS is not a JSON object: ", args ? "another JSON value" : je.text);
        return MNEMO_INVALID;
    }
    static const char *const known[] = {
        "query",  "type",   "subject", "limit",  "kinds",   "maxResults", "minScore",
        "min_score", "corpus", "user_id", "userId", "agent_id", "agentId", "run_id",
        "runId",  "scope",  "categories", "filters"};
    const char *k;
    json_t *v;
    json_object_foreach(args, k, v)
    {
        size_t i = 0;
        while (i < sizeof known / sizeof *known && strcmp(k, known[i]) != 0)
            i++;
        if (i == sizeof known / sizeof *known) {
            *err = msg("unknown argument (expected query, type, subject, limit, or another "
                       "argument of memory_search): ",
                       cli_shown(k));
            json_decref(args);
            return MNEMO_INVALID;
        }
    }
    json_t *q = json_object_get(args, "query");
    json_t *lim = json_object_get(args, "limit");
    if (!lim)
        lim = json_object_get(args, "maxResults");
    json_t *type = json_object_get(args, "type"), *subj = json_object_get(args, "subject");
    const char *bad = NULL;
    if (!json_is_string(q) || !*json_string_value(q))
        bad = "argument query is required: a non-empty string";
    else if (lim && (!json_is_integer(lim) || json_integer_value(lim) < 1 ||
                     json_integer_value(lim) > 50))
        bad = "argument limit must be a whole number from 1 to 50";
    else if ((type && !json_is_string(type)) || (subj && !json_is_string(subj)))
        bad = "arguments type and subject must be strings";
    if (bad) {
        *err = msg(bad, "");
        json_decref(args);
        return MNEMO_INVALID;
    }
    /* The rest as the search checks them. */
    json_t *o = json_copy(args);
    if (o)
        json_object_del(o, "query");
    *opts = o ? json_dumps(o, JSON_COMPACT) : NULL;
    *query = strdup(json_string_value(q));
    json_decref(o);
    json_decref(args);
    if (!*opts || !*query) {
        free(*opts);
        free(*query);
        *opts = *query = NULL;
        return MNEMO_NOMEM;
    }
    return MNEMO_OK;
}

/* One line of S: newlines as spaces. */
static void one_line(FILE *f, const char *s)
{
    for (; s && *s; s++)
        fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
}

int skill_format(const char *json, char **text)
{
    *text = NULL;
    json_t *j = json_loads(json, 0, NULL), *arr = json_object_get(j, "results"), *r;
    if (!json_is_array(arr)) {
        json_decref(j);
        return MNEMO_INVALID;
    }
    size_t n = json_array_size(arr), i, len = 0;
    FILE *f = open_memstream(text, &len);
    if (!f) {
        json_decref(j);
        return MNEMO_NOMEM;
    }
    if (n == 0)
        fputs("No relevant memories found.", f);
    else
        fprintf(f, "Found %zu memor%s:\n", n, n == 1 ? "y" : "ies");
    json_array_foreach(arr, i, r)
    {
        const char *kind = json_string_value(json_object_get(r, "kind"));
        fprintf(f, "\n--- Result %zu (score: %.3f) ---\nContent: ", i + 1,
                json_number_value(json_object_get(r, "score")));
        one_line(f, json_string_value(json_object_get(r, "snippet")));
        if (kind && !strcmp(kind, "fact")) {
            const char *created = json_string_value(json_object_get(r, "created_at"));
            const char *cat = json_string_value(json_object_get(r, "category"));
            const char *subj = json_string_value(json_object_get(r, "subject"));
            const char *id = json_string_value(json_object_get(r, "id"));
            fprintf(f, "\nCategory: %s | Importance: %.2f | Subject: %s | Created: %.10s\nID: %s\n",
                    cat ? cat : "", json_number_value(json_object_get(r, "importance")),
                    subj ? subj : "", created ? created : "", id ? id : "");
        } else {
            const char *cit = json_string_value(json_object_get(r, "citation"));
            fprintf(f, "\nSource: %s (note)\n", cit ? cit : "");
        }
    }
    json_decref(j);
    if (fclose(f) != 0 || !*text) {
        free(*text);
        *text = NULL;
        return MNEMO_NOMEM;
    }
    return MNEMO_OK;
}

int cmd_skill(int argc, char **argv)
{
    static const cli_opt opts[] = {{NULL, 0, NULL, NULL}};
    cli_args a;
    int code = cli_parse(argc, argv, "skill",
                         "SKILL_ARGS='{\"query\":\"...\"}' mnemo skill   (the memory_search skill)",
                         opts, &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    char *query = NULL, *opt = NULL, *err = NULL;
    if (skill_args_parse(getenv("SKILL_ARGS"), &query, &opt, &err)) {
        code = answer(0, err ? err : "out of memory");
        free(err);
        return code;
    }
    mnemo *m;
    /* Errors must come back as JSON, not on stderr only. */
    mnemo_config *cfg;
    if ((code = cli_config(&a, &cfg))) {
        free(opt);
        free(query);
        return answer(0, "invalid configuration (run mnemo config show)");
    }
    int rc = mnemo_open(cfg, &m);
    mnemo_config_free(cfg);
    char *out = NULL, *text = NULL;
    if (!rc) {
        rc = mnemo_search_all(m, query, opt, &out);
        if (rc == MNEMO_NOTFOUND && !(rc = mnemo_sync(m, NULL, NULL)))
            rc = mnemo_search_all(m, query, opt, &out); /* first use: build the index */
    }
    if (!rc)
        rc = skill_format(out, &text);
    if (rc)
        code = answer(0, m ? mnemo_errmsg(m) : mnemo_strerror(rc));
    else
        code = answer(1, text);
    free(text);
    mnemo_free(out);
    mnemo_close(m);
    free(opt);
    free(query);
    return code;
}
