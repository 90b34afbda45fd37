/*
 * cmd_memory.c - `mnemo memory add|update|delete|purge|get|list|history|
 * confirm|export|import|search`: structured memories.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

enum {
    O_CATEGORY, O_IMPORTANCE, O_TYPE, O_SUBJECT, O_USER, O_AGENT, O_RUN, O_METADATA,
    O_TRIGGERS, O_EXPIRES, O_JSON, O_SCOPE, O_CATEGORIES, O_FILTERS, O_LIMIT, O_OFFSET,
    O_DELETED, O_TEXT, O_QUERY, O_MIN_SCORE,
};

static const cli_opt opts[] = {
    [O_CATEGORY] = {"category", 0, "CATEGORY", "identity, configuration, rule, preference, decision, "
                                         "technical, relationship, project, operational, or "
                                         "your own"},
    [O_IMPORTANCE] = {"importance", 0, "X", "0..1 (default: by category)"},
    [O_TYPE] = {"type", 0, "TYPE", "fact, preference, summary, context, raw (search: also all)"},
    [O_SUBJECT] = {"subject", 0, "S", "who it is about: user (default) or a name"},
    [O_USER] = {"user", 0, "U", "user id (default: config userId)"},
    [O_AGENT] = {"agent", 0, "A", "agent id"},
    [O_RUN] = {"run", 0, "R", "run (session) id: session memory"},
    [O_METADATA] = {"metadata", 0, "JSON", "free metadata object"},
    [O_TRIGGERS] = {"triggers", 0, "LIST", "trigger phrases, comma-separated"},
    [O_EXPIRES] = {"expires", 0, "WHEN", "ISO 8601 time, YYYY-MM-DD or +N[dhmw]"},
    [O_JSON] = {"json", 'j', NULL, "print JSON"},
    [O_SCOPE] = {"scope", 0, "all|session|long-term", "all, session or long-term"},
    [O_CATEGORIES] = {"categories", 0, "CATEGORY,...", "only these categories (a,b)"},
    [O_FILTERS] = {"filters", 0, "JSON", "filter expression (see docs/memories.md)"},
    [O_LIMIT] = {"limit", 'n', "N", "how many (search: 10 by default, at most 50)"},
    [O_OFFSET] = {"offset", 0, "N", "skip this many (list)"},
    [O_DELETED] = {"deleted", 0, NULL, "list the deleted memories (to restore or purge)"},
    [O_TEXT] = {"text", 0, "TEXT", "new text (update)"},
    [O_QUERY] = {"query", 'q', "Q", "delete the memory this query finds (delete)"},
    [O_MIN_SCORE] = {"min-score", 0, "X", "drop results below X (search)"},
    {NULL, 0, NULL, NULL},
};

static const char usage[] =
    "mnemo memory add TEXT... [--category CATEGORY] [--importance X] [--type TYPE]\n"
    "                 [--subject S] [--user U] [--agent A] [--run R] [--metadata JSON]\n"
    "                 [--triggers LIST] [--expires WHEN]\n"
    "       mnemo memory update ID [--text T] [--category CATEGORY] [...]\n"
    "       mnemo memory delete ID | --query Q     (soft; purge removes for good)\n"
    "       mnemo memory purge [ID]\n"
    "       mnemo memory get|history|confirm|restore ID\n"
    "       mnemo memory list [--user U] [--agent A] [--run R] [--scope all|session|long-term]\n"
    "                 [--categories CATEGORY,...] [--filters JSON] [--type TYPE] [--subject S]\n"
    "                 [--limit N] [--offset N] [--deleted]\n"
    "       mnemo memory search QUERY... [the list options] [--min-score X]\n"
    "       mnemo memory export [FILE]\n"
    "       mnemo memory import FILE|-\n"
    "       mnemo memory recover DAMAGED-FILE\n"
"  (--json on any of them prints JSON)";

/* Adds the record fields given as options to O. */
static int record_fields(const cli_args *a, json_t *o)
{
    static const struct {
        int opt;
        const char *key;
    } strs[] = {{O_CATEGORY, "category"}, {O_TYPE, "type"},       {O_SUBJECT, "subject"},
                {O_USER, "user_id"},      {O_AGENT, "agent_id"},  {O_RUN, "run_id"},
                {O_TRIGGERS, "triggers"}, {O_EXPIRES, "expires_at"}, {O_TEXT, "text"}};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        if (a->val[strs[i].opt])
            json_object_set_new(o, strs[i].key, json_string(a->val[strs[i].opt]));
    if (a->val[O_IMPORTANCE]) {
        double x;
        int code = cli_double(a->val[O_IMPORTANCE], "importance", 0, 1, &x);
        if (code)
            return code;
        json_object_set_new(o, "importance", json_real(x));
    }
    if (a->val[O_METADATA]) {
        json_error_t je;
        json_t *md = json_loads(a->val[O_METADATA], 0, &je);
        if (!json_is_object(md)) {
            json_decref(md);
            cli_error("--metadata: expected a JSON object%s%s", md ? "" : ": ",
                      md ? "" : je.text);
            return EXIT_USAGE;
        }
        json_object_set_new(o, "metadata", md);
    }
    return EXIT_OK;
}

/* The list/search options given on the command line, as JSON text. */
static char *query_options(const cli_args *a, int *code)
{
    json_t *o = json_object();
    static const struct {
        int opt;
        const char *key;
    } strs[] = {{O_USER, "user_id"}, {O_AGENT, "agent_id"}, {O_RUN, "run_id"},
                {O_SCOPE, "scope"},  {O_TYPE, "type"},      {O_SUBJECT, "subject"},
                {O_CATEGORIES, "categories"}};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        if (a->val[strs[i].opt])
            json_object_set_new(o, strs[i].key, json_string(a->val[strs[i].opt]));
    *code = EXIT_OK;
    if (a->val[O_FILTERS]) {
        json_error_t je;
        json_t *f = json_loads(a->val[O_FILTERS], 0, &je);
        if (!f) {
            cli_error("--filters: invalid JSON at line %d column %d: %s", je.line, je.column,
                      je.text);
            *code = EXIT_USAGE;
        }
        json_object_set_new(o, "filters", f ? f : json_null());
    }
    int n;
    if (!*code && a->val[O_LIMIT] && !(*code = cli_int(a->val[O_LIMIT], "limit", 1, 100000, &n)))
        json_object_set_new(o, "limit", json_integer(n));
    if (!*code && a->val[O_OFFSET] &&
        !(*code = cli_int(a->val[O_OFFSET], "offset", 0, 1 << 30, &n)))
        json_object_set_new(o, "offset", json_integer(n));
    double x;
    if (!*code && a->val[O_MIN_SCORE] &&
        !(*code = cli_double(a->val[O_MIN_SCORE], "min-score", 0, 1, &x)))
        json_object_set_new(o, "min_score", json_real(x));
    if (a->val[O_DELETED])
        json_object_set_new(o, "deleted", json_true());
    char *s = *code ? NULL : json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!*code && !s)
        *code = EXIT_ERROR;
    return s;
}

/* The list/search options given on the command line, typed: the strings
 * are A's, the categories split as the library splits "a,b", the filters
 * checked and written compactly. */
typedef struct typed_query {
    mnemo_memory_opts o;
    const char **cats;
    char *catbuf, *filters;
} typed_query;

static void typed_query_cleanup(typed_query *q)
{
    free(q->cats);
    free(q->catbuf);
    free(q->filters);
}

/* EXIT_OK, or the exit code of the option that is wrong (said). */
static int typed_query_init(const cli_args *a, typed_query *q)
{
    memset(q, 0, sizeof *q);
    mnemo_memory_opts_init(&q->o);
    q->o.user_id = a->val[O_USER];
    q->o.agent_id = a->val[O_AGENT];
    q->o.run_id = a->val[O_RUN];
    q->o.scope = a->val[O_SCOPE];
    q->o.type = a->val[O_TYPE];
    q->o.subject = a->val[O_SUBJECT];
    if (a->val[O_CATEGORIES]) {
        size_t most = 1;
        for (const char *p = a->val[O_CATEGORIES]; *p; p++)
            most += *p == ',';
        q->catbuf = strdup(a->val[O_CATEGORIES]);
        q->cats = calloc(most, sizeof *q->cats);
        if (!q->catbuf || !q->cats)
            return EXIT_ERROR;
    }
    for (char *p = q->catbuf; p && *p;) {
        size_t l = strcspn(p, ","), n = l;
        char *e = p + l, *w = p;
        int last = *e == 0;
        *e = 0;
        while (n && *w == ' ')
            w++, n--;
        while (n && w[n - 1] == ' ')
            w[--n] = 0;
        if (n)
            q->cats[q->o.ncategories++] = w;
        p = last ? e : e + 1;
    }
    q->o.categories = q->cats;
    int code = EXIT_OK, n;
    if (a->val[O_FILTERS]) {
        json_error_t je;
        json_t *f = json_loads(a->val[O_FILTERS], 0, &je);
        if (!f) {
            cli_error("--filters: invalid JSON at line %d column %d: %s", je.line, je.column,
                      je.text);
            return EXIT_USAGE;
        }
        q->filters = json_dumps(f, JSON_COMPACT);
        q->o.filters = q->filters;
        json_decref(f);
    }
    if (a->val[O_LIMIT] && !(code = cli_int(a->val[O_LIMIT], "limit", 1, 100000, &n)))
        q->o.limit = n;
    if (!code && a->val[O_OFFSET] && !(code = cli_int(a->val[O_OFFSET], "offset", 0, 1 << 30, &n)))
        q->o.offset = n;
    double x;
    if (!code && a->val[O_MIN_SCORE] &&
        !(code = cli_double(a->val[O_MIN_SCORE], "min-score", 0, 1, &x)))
        q->o.min_score = x;
    q->o.deleted = a->val[O_DELETED] != NULL;
    return code;
}

static void print_record(const char *json, int as_json)
{
    if (as_json) {
        printf("%s\n", json);
        return;
    }
    json_t *r = json_loads(json, 0, NULL);
    printf("%s\n  %s\n  category %s, importance %.2f, type %s, subject %s, user %s",
           json_string_value(json_object_get(r, "id")),
           json_string_value(json_object_get(r, "text")),
           json_string_value(json_object_get(r, "category")),
           json_number_value(json_object_get(r, "importance")),
           json_string_value(json_object_get(r, "type")),
           json_string_value(json_object_get(r, "subject")),
           json_string_value(json_object_get(r, "user_id")));
    const char *agent = json_string_value(json_object_get(r, "agent_id"));
    const char *run = json_string_value(json_object_get(r, "run_id"));
    if (agent && *agent)
        printf(", agent %s", agent);
    if (run && *run)
        printf(", run %s", run);
    printf("\n  created %s", json_string_value(json_object_get(r, "created_at")));
    const char *up = json_string_value(json_object_get(r, "updated_at"));
    if (up && strcmp(up, json_string_value(json_object_get(r, "created_at"))) != 0)
        printf(", updated %s", up);
    json_int_t c = json_integer_value(json_object_get(r, "confirmations"));
    if (c)
        printf(", confirmed %lld time%s", (long long)c, c == 1 ? "" : "s");
    const char *exp = json_string_value(json_object_get(r, "expires_at"));
    if (exp)
        printf(", expires %s", exp);
    const char *del = json_string_value(json_object_get(r, "deleted_at"));
    if (del)
        printf(", DELETED %s", del);
    printf("\n");
    json_decref(r);
}

/* What the library wants said beside a result (memories left out because
 * they cannot be read, a backup that failed): on stderr, --json or not. */
static void print_warning(mnemo *m)
{
    const char *w = mnemo_warning(m);
    if (!w)
        return;
    fputs("mnemo: warning: ", stderr);
    cli_print_safe(stderr, w, strlen(w));
    fputc('\n', stderr);
}

static int write_file(void *ud, const char *data, size_t len)
{
    return fwrite(data, 1, len, ud) == len ? 0 : 1;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap + 1);
    size_t r;
    while (s && (r = fread(s + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *t = cap < ((size_t)1 << 31) ? realloc(s, cap * 2 + 1) : NULL;
            if (!t) {
                free(s);
                s = NULL;
                break;
            }
            s = t;
            cap *= 2;
        }
    }
    if (f != stdin)
        fclose(f);
    if (s)
        s[n] = 0;
    *len = n;
    return s;
}

/* delete --query, printed as text (from the typed search). */
static int delete_by_query_text(mnemo *m, const cli_args *a)
{
    typed_query q;
    int code = typed_query_init(a, &q);
    if (code) {
        typed_query_cleanup(&q);
        return code;
    }
    if (!q.o.type)
        q.o.type = "all";
    mnemo_memories *s = NULL;
    int rc = mnemo_memory_search_typed(m, a->val[O_QUERY], &q.o, &s);
    typed_query_cleanup(&q);
    if (rc)
        return cli_fail(m, rc, 0);
    size_t n = mnemo_memories_count(s);
    const mnemo_memory *top = mnemo_memories_get(s, 0);
    code = EXIT_OK;
    if (n == 0) {
        fprintf(stderr, "mnemo: no memory matches '%s'; nothing deleted\n", a->val[O_QUERY]);
        code = EXIT_NOTFOUND;
    } else if (n == 1 || top->relevance > 0.9) {
        rc = mnemo_memory_delete(m, top->id);
        if (rc)
            code = cli_fail(m, rc, 0);
        else
            printf("Deleted memory %s: %s\n", top->id, top->text);
    } else {
        printf("%zu memories match; none is certain enough to delete. Delete one by id:\n", n);
        for (size_t i = 0; i < n; i++) {
            const mnemo_memory *x = mnemo_memories_get(s, i);
            printf("  mnemo memory delete %s   # %s (score %.2f)\n", x->id, x->text, x->score);
        }
    }
    mnemo_memories_free(s);
    return code;
}

/* The page of memories listed, printed as text (from the typed list). */
static int list_text(mnemo *m, const cli_args *a, int *rc)
{
    typed_query q;
    int code = typed_query_init(a, &q);
    mnemo_memories *s = NULL;
    if (!code)
        *rc = mnemo_memory_list_typed(m, &q.o, &s);
    typed_query_cleanup(&q);
    if (code || *rc)
        return code;
    size_t n = mnemo_memories_count(s);
    for (size_t i = 0; i < n; i++) {
        const mnemo_memory *r = mnemo_memories_get(s, i);
        printf("%s  [%s] %s%s\n", r->id, r->category, r->text,
               r->deleted_at ? "  (deleted)" : "");
    }
    long long total = mnemo_memories_total(s);
    if (mnemo_memories_total_capped(s))
        printf("(%zu of more than %lld shown)\n", n, total);
    else if ((long long)n < total || total == 0)
        printf("(%zu of %lld shown)\n", n, total);
    mnemo_memories_free(s);
    return EXIT_OK;
}

/* delete --query: one hit, or a nearly certain top hit, is deleted. */
static int delete_by_query(mnemo *m, const cli_args *a, int json)
{
    if (!json)
        return delete_by_query_text(m, a);
    int code;
    char *o = query_options(a, &code);
    if (!o)
        return code;
    json_t *jo = json_loads(o, 0, NULL);
    free(o);
    if (!json_object_get(jo, "type"))
        json_object_set_new(jo, "type", json_string("all"));
    o = json_dumps(jo, JSON_COMPACT);
    json_decref(jo);
    char *out = NULL;
    int rc = mnemo_memory_search(m, a->val[O_QUERY], o, &out);
    free(o);
    if (rc)
        return cli_fail(m, rc, json);
    json_t *r = json_loads(out, 0, NULL);
    mnemo_free(out);
    json_t *res = json_object_get(r, "results");
    size_t n = json_array_size(res);
    json_t *top = json_array_get(res, 0);
    double score = json_number_value(json_object_get(top, "relevance"));
    if (n == 0) {
        json_decref(r);
        if (json)
            printf("{\"deleted\":null,\"candidates\":[]}\n");
        else
            fprintf(stderr, "mnemo: no memory matches '%s'; nothing deleted\n", a->val[O_QUERY]);
        return EXIT_NOTFOUND;
    }
    if (n == 1 || score > 0.9) {
        const char *id = json_string_value(json_object_get(top, "id"));
        rc = mnemo_memory_delete(m, id);
        if (rc) {
            json_decref(r);
            return cli_fail(m, rc, json);
        }
        if (json)
            printf("{\"deleted\":\"%s\"}\n", id);
        else
            printf("Deleted memory %s: %s\n", id,
                   json_string_value(json_object_get(top, "text")));
        json_decref(r);
        return EXIT_OK;
    }
    if (json) {
        char *c = json_dumps(res, JSON_COMPACT | JSON_PRESERVE_ORDER);
        printf("{\"deleted\":null,\"candidates\":%s}\n", c ? c : "[]");
        free(c);
    } else {
        printf("%zu memories match; none is certain enough to delete. Delete one by id:\n", n);
        size_t i;
        json_t *x;
        json_array_foreach(res, i, x) printf("  mnemo memory delete %s   # %s (score %.2f)\n",
                                             json_string_value(json_object_get(x, "id")),
                                             json_string_value(json_object_get(x, "text")),
                                             json_number_value(json_object_get(x, "score")));
    }
    json_decref(r);
    return EXIT_OK;
}

int cmd_memory(int argc, char **argv)
{
    cli_args a;
    int code = cli_parse(argc, argv, "memory", usage, opts, &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    if (a.npos == 0) {
        cli_error("memory: say what to do\nusage: %s", usage);
        return EXIT_USAGE;
    }
    const char *sub = a.pos[0];
    int json = a.val[O_JSON] != NULL;
    static const char *const subs[] = {"add",     "update", "delete", "purge",  "get",
                                       "history", "confirm", "list",  "search", "export",
                                       "import", "recover", "restore"};
    size_t k = 0;
    while (k < sizeof subs / sizeof *subs && strcmp(sub, subs[k]) != 0)
        k++;
    if (k == sizeof subs / sizeof *subs) {
        cli_error("memory: unknown subcommand '%s'\nusage: %s", sub, usage);
        return EXIT_USAGE;
    }
    int needs_id = !strcmp(sub, "update") || !strcmp(sub, "get") || !strcmp(sub, "history") ||
                   !strcmp(sub, "confirm") || !strcmp(sub, "restore") ||
                   (!strcmp(sub, "delete") && !a.val[O_QUERY]);
    if (needs_id && a.npos != 2) {
        cli_error("memory %s: expected one memory ID", sub);
        return EXIT_USAGE;
    }
    if ((!strcmp(sub, "add") || !strcmp(sub, "search")) && a.npos < 2) {
        cli_error("memory %s: no %s given", sub, !strcmp(sub, "add") ? "text" : "query");
        return EXIT_USAGE;
    }
    if (!strcmp(sub, "import") && a.npos != 2) {
        cli_error("memory import: expected a FILE (or - for standard input)");
        return EXIT_USAGE;
    }
    if (!strcmp(sub, "recover") && a.npos != 2) {
        cli_error("memory recover: expected the damaged FILE to read memories from");
        return EXIT_USAGE;
    }
    mnemo *m;
    if ((code = cli_open(&a, &m)))
        return code;
    char *out = NULL;
    int rc = MNEMO_OK;
    code = EXIT_OK;
    if (!strcmp(sub, "add") || !strcmp(sub, "update")) {
        json_t *o = json_object();
        if (!strcmp(sub, "add")) {
            cli_args b = a;
            b.npos = a.npos - 1;
            memmove(b.pos, a.pos + 1, (size_t)b.npos * sizeof *b.pos);
            char *text = cli_join(&b);
            json_object_set_new(o, "text", json_string(text ? text : ""));
            free(text);
        }
        if (!(code = record_fields(&a, o))) {
            char *rec = json_dumps(o, JSON_COMPACT);
            rc = !strcmp(sub, "add") ? mnemo_memory_add(m, rec, &out)
                                     : mnemo_memory_update(m, a.pos[1], rec, &out);
            free(rec);
            if (!rc && json) {
                printf("%s\n", out);
            } else if (!rc) {
                json_t *r = json_loads(out, 0, NULL);
                const char *id = json_string_value(json_object_get(r, "id"));
                if (json_is_true(json_object_get(r, "duplicate")))
                    printf("Already stored as %s\n", id);
                else
                    printf("%s memory %s [%s] (%.0f%%)\n", !strcmp(sub, "add") ? "Stored" : "Updated",
                           id, json_string_value(json_object_get(r, "category")),
                           json_number_value(json_object_get(r, "importance")) * 100);
                json_decref(r);
            }
        }
        json_decref(o);
    } else if (!strcmp(sub, "delete") && a.val[O_QUERY]) {
        code = delete_by_query(m, &a, json);
    } else if (!strcmp(sub, "delete")) {
        rc = mnemo_memory_delete(m, a.pos[1]);
        if (!rc)
            printf(json ? "{\"deleted\":\"%s\"}\n"
                        : "Deleted memory %s (mnemo memory restore brings it back until "
                          "mnemo memory purge)\n",
                   a.pos[1]);
    } else if (!strcmp(sub, "purge")) {
        size_t n = 0;
        rc = mnemo_memory_purge(m, a.npos > 1 ? a.pos[1] : NULL, &n);
        if (!rc)
            printf(json ? "{\"purged\":%zu}\n" : "Purged %zu deleted memor%s\n", n,
                   json ? "" : n == 1 ? "y" : "ies");
    } else if (!strcmp(sub, "restore")) {
        rc = mnemo_memory_restore(m, a.pos[1], &out);
        if (!rc && json)
            printf("%s\n", out);
        else if (!rc)
            printf("Restored memory %s\n", a.pos[1]);
    } else if (!strcmp(sub, "get") || !strcmp(sub, "confirm")) {
        rc = !strcmp(sub, "get") ? mnemo_memory_get(m, a.pos[1], &out)
                                 : mnemo_memory_confirm(m, a.pos[1], &out);
        if (!rc)
            print_record(out, json);
    } else if (!strcmp(sub, "history")) {
        rc = mnemo_memory_history(m, a.pos[1], &out);
        if (!rc && json) {
            printf("%s\n", out);
        } else if (!rc) {
            json_t *h = json_loads(out, 0, NULL);
            size_t i;
            json_t *e;
            json_array_foreach(h, i, e)
            {
                const char *ev = json_string_value(json_object_get(e, "event"));
                const char *ot = json_string_value(json_object_get(e, "old_text"));
                const char *nt = json_string_value(json_object_get(e, "new_text"));
                printf("%s  %-7s", json_string_value(json_object_get(e, "at")), ev);
                if (ot && nt && strcmp(ot, nt) != 0)
                    printf("  \"%s\" -> \"%s\"", ot, nt);
                else if (nt || ot)
                    printf("  \"%s\"", nt ? nt : ot);
                printf("\n");
            }
            json_decref(h);
        }
    } else if (!strcmp(sub, "list") && !json) {
        code = list_text(m, &a, &rc);
    } else if (!strcmp(sub, "list") || !strcmp(sub, "search")) {
        char *o = query_options(&a, &code);
        if (o) {
            if (!strcmp(sub, "list")) {
                rc = mnemo_memory_list(m, o, &out);
            } else {
                cli_args b = a;
                b.npos = a.npos - 1;
                memmove(b.pos, a.pos + 1, (size_t)b.npos * sizeof *b.pos);
                char *q = cli_join(&b);
                rc = q ? mnemo_memory_search(m, q, o, &out) : MNEMO_NOMEM;
                free(q);
            }
            free(o);
        }
        if (!rc && !code && json) {
            printf("%s\n", out);
        } else if (!rc && !code && !strcmp(sub, "search")) {
            char *text = NULL;
            if (mnemo_memory_format(out, "tool", &text) == MNEMO_OK)
                printf("%s\n", text);
            mnemo_free(text);
        } else if (!rc && !code) {
            json_t *l = json_loads(out, 0, NULL);
            json_t *arr = json_object_get(l, "memories");
            size_t i;
            json_t *r;
            json_array_foreach(arr, i, r)
            {
                printf("%s  [%s] %s%s\n", json_string_value(json_object_get(r, "id")),
                       json_string_value(json_object_get(r, "category")),
                       json_string_value(json_object_get(r, "text")),
                       json_is_null(json_object_get(r, "deleted_at")) ? "" : "  (deleted)");
            }
            long long total = json_integer_value(json_object_get(l, "total"));
            if (json_is_true(json_object_get(l, "totalCapped")))
                printf("(%zu of more than %lld shown)\n", json_array_size(arr), total);
            else if ((long long)json_array_size(arr) < total || total == 0)
                printf("(%zu of %lld shown)\n", json_array_size(arr), total);
            json_decref(l);
        }
    } else if (!strcmp(sub, "export")) {
        FILE *f = stdout;
        char tmp[4096] = "";
        if (a.npos > 1 && strcmp(a.pos[1], "-") != 0) {
            snprintf(tmp, sizeof tmp, "%s.tmp-%ld", a.pos[1], (long)getpid());
            f = fopen(tmp, "wb");
            if (!f) {
                cli_error("export: cannot write %s", tmp);
                mnemo_close(m);
                return EXIT_ERROR;
            }
        }
        size_t n = 0;
        rc = mnemo_memory_export(m, write_file, f, &n);
        if (f != stdout) {
            int bad = fclose(f) != 0;
            if (!rc && !bad && rename(tmp, a.pos[1]) == 0) {
                fprintf(stderr, "mnemo: exported %zu memories to %s\n", n, a.pos[1]);
            } else {
                unlink(tmp);
                if (!rc) {
                    cli_error("export: cannot write %s", a.pos[1]);
                    code = EXIT_ERROR;
                }
            }
        }
    } else if (!strcmp(sub, "import")) {
        size_t len = 0;
        char *data = read_all(a.pos[1], &len);
        if (!data) {
            cli_error("import: cannot read %s", a.pos[1]);
            code = EXIT_NOTFOUND;
        } else {
            size_t in = 0, skip = 0;
            rc = mnemo_memory_import(m, data, len, &in, &skip);
            if (!rc)
                printf(json ? "{\"imported\":%zu,\"skipped\":%zu}\n"
                            : "Imported %zu memories (%zu already stored)\n",
                       in, skip);
            free(data);
        }
    } else if (!strcmp(sub, "recover")) {
        rc = mnemo_memory_recover(m, a.pos[1], &out);
        if (!rc && json) {
            printf("%s\n", out);
        } else if (!rc) {
            json_t *j = json_loads(out, 0, NULL);
#define N(k) (long long)json_integer_value(json_object_get(j, k))
            printf("Recovered %lld memories from %s (%lld already stored, %lld with text "
                   "repaired, %lld damaged places skipped; %lld history events, %lld "
                   "memories with history incomplete)\n",
                   N("recovered"), a.pos[1], N("present"), N("repaired"), N("damagedPlaces"),
                   N("history"), N("historyIncomplete"));
#undef N
            json_decref(j);
        }
    }
    if (rc)
        code = cli_fail(m, rc, json);
    else
        print_warning(m);
    mnemo_free(out);
    mnemo_close(m);
    return code;
}
