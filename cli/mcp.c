/*
 * mcp.c - the MCP server's message handling (see mcp.h): initialize with
 * protocol-version negotiation, ping, tools/list and tools/call. A failing
 * tool answers with a result marked isError, so the model can read what
 * went wrong and the session goes on; only protocol mistakes (no such
 * method, unknown tool, malformed request) are JSON-RPC errors.
 */
#include "mcp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

/* Newest first: the first is offered when the client asks for another. */
static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

/* The tools, each one of api.h's operations. */
static const struct {
    const char *tool, *op, *title;
} tools[] = {
    {"memory_search", "search", "Search memory"},
    {"memory_get", "get", "Read a memory file"},
    {"memory_add", "memory_add", "Store a memory"},
    {"memory_update", "memory_update", "Change a memory"},
    {"memory_delete", "memory_delete", "Delete a memory"},
    {"memory_restore", "memory_restore", "Restore a deleted memory"},
    {"memory_list", "memory_list", "List memories"},
    {"memory_recall", "recall", "Recall memories for a message"},
    {"memory_status", "status", "Memory index status"},
};

enum {
    PARSE_ERROR = -32700,
    INVALID_REQUEST = -32600,
    NO_METHOD = -32601,
    BAD_PARAMS = -32602,
    INTERNAL_ERROR = -32603
};

int mcp_version_supported(const char *version)
{
    for (size_t i = 0; version && i < sizeof versions / sizeof *versions; i++)
        if (strcmp(version, versions[i]) == 0)
            return 1;
    return 0;
}

static json_t *rpc_error(json_t *id, int code, const char *message)
{
    char *clean = api_utf8_clean(message); /* a name cut inside a character */
    json_t *e = json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id",
                          id ? id : json_null(), "error", "code", code, "message",
                          clean ? clean : "error");
    free(clean);
    return e;
}

static json_t *rpc_result(json_t *id, json_t *result)
{
    return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", result);
}

static json_t *initialize(const json_t *params)
{
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    const char *v = mcp_version_supported(asked) ? asked : versions[0];
    return json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s,s:s},s:s}", "protocolVersion", v,
                     "capabilities", "tools", "listChanged", 0, "serverInfo", "name", "mnemo",
                     "title", "mnemo memory search", "version", mnemo_version(), "instructions",
                     "mnemo searches this agent's long-term memory: Markdown notes (MEMORY.md, "
                     "USER.md, memory/*.md) and stored facts. Call memory_search before "
                     "answering questions about past work, people, preferences or decisions; "
                     "cite results as path#Lstart-Lend and read more with memory_get.");
}

static json_t *tools_list(mnemo *m)
{
    json_t *list = json_array();
    const char *mode = mnemo_search_mode(m);
    for (size_t i = 0; i < sizeof tools / sizeof *tools; i++) {
        const api_op *op = api_find(tools[i].op);
        json_t *schema = op ? json_loads(op->schema, 0, NULL) : NULL;
        json_t *output = op && op->output ? json_loads(op->output, 0, NULL) : NULL;
        char desc[2048];
        snprintf(desc, sizeof desc, "%s%s%s%s", op ? op->title : "",
                 op && !strcmp(op->name, "search") ? " Mode here: " : "",
                 op && !strcmp(op->name, "search") ? mode : "",
                 op && !strcmp(op->name, "search")
                     ? (strcmp(mode, "hybrid") ? " (keywords only: name the exact words a "
                                                 "memory would contain)."
                                               : " (keywords and meaning).")
                     : "");
        json_t *t = json_pack("{s:s,s:s,s:s,s:o*,s:o*,s:{s:b,s:b}}", "name", tools[i].tool,
                              "title", tools[i].title, "description", desc, "inputSchema",
                              schema, "outputSchema", output, "annotations", "readOnlyHint",
                              op && !op->writes, "destructiveHint",
                              op && strcmp(op->name, "memory_delete") == 0);
        json_array_append_new(list, t);
    }
    return json_pack("{s:o}", "tools", list);
}

/* printf into a new string (NULL when out of memory). */
static char *text_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *text_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

/* One memory as a line: its text, then what it is. */
static void memory_line(FILE *f, const json_t *r)
{
    const char *cat = json_string_value(json_object_get(r, "category"));
    const char *upd = json_string_value(json_object_get(r, "updated_at"));
    const char *del = json_string_value(json_object_get(r, "deleted_at"));
    fprintf(f, "%s (id: %s, %s, importance %.2f, %.10s%s%s)",
            json_string_value(json_object_get(r, "text")),
            json_string_value(json_object_get(r, "id")), cat && *cat ? cat : "other",
            json_number_value(json_object_get(r, "importance")), upd ? upd : "",
            del ? ", deleted " : "", del ? del : "");
}

/* A memory written or read: "Stored memory ...: text (...)". */
static char *memory_text(const char *op, const json_t *r)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    if (!f)
        return NULL;
    int dup = json_is_true(json_object_get(r, "duplicate"));
    fputs(dup                                   ? "Already stored: "
          : !strcmp(op, "memory_add")           ? "Stored: "
          : !strcmp(op, "memory_update")        ? "Updated: "
          : !strcmp(op, "memory_restore")       ? "Restored: "
                                                : "",
          f);
    memory_line(f, r);
    if (fclose(f) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

/* A list or search of memories, numbered. */
static char *memories_text(const char *op, const json_t *out)
{
    const json_t *v = json_object_get(out, !strcmp(op, "memory_list") ? "memories" : "results");
    size_t n = json_array_size(v), i, len = 0;
    if (n == 0)
        return strdup(!strcmp(op, "memory_list") ? "No memories." : "No memories found.");
    char *s = NULL;
    FILE *f = open_memstream(&s, &len);
    if (!f)
        return NULL;
    json_int_t total = json_integer_value(json_object_get(out, "total"));
    fprintf(f, "%zu memor%s", n, n == 1 ? "y" : "ies");
    if (json_is_true(json_object_get(out, "totalCapped")))
        fprintf(f, " of more than %lld", (long long)total);
    else if (total > (json_int_t)n)
        fprintf(f, " of %lld", (long long)total);
    fputs(":\n", f);
    const json_t *r;
    json_array_foreach(v, i, r)
    {
        fprintf(f, "\n%zu. ", i + 1);
        memory_line(f, r);
        if (json_object_get(r, "score"))
            fprintf(f, " score %.2f", json_number_value(json_object_get(r, "score")));
    }
    const json_t *w = json_object_get(out, "warnings");
    json_array_foreach(w, i, r) fprintf(f, "\nwarning: %s", json_string_value(r));
    if (fclose(f) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

/* The index and the memories in a few lines, as `mnemo status` says them. */
static char *status_text(const json_t *st)
{
    const json_t *ls = json_object_get(st, "lastSync"), *emb = json_object_get(st, "embedding");
    const json_t *mem = json_object_get(st, "memories");
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    if (!f)
        return NULL;
    if (json_is_true(json_object_get(st, "indexed")))
        fprintf(f, "Index: %lld files, %lld chunks, last sync %s.\n",
                (long long)json_integer_value(json_object_get(st, "files")),
                (long long)json_integer_value(json_object_get(st, "chunks")),
                ls ? json_string_value(json_object_get(ls, "at")) : "never");
    else
        fputs("Index: none yet.\n", f);
    fprintf(f, "Search: %s", json_string_value(json_object_get(st, "mode")));
    const char *prov = json_string_value(json_object_get(emb, "provider"));
    if (prov && strcmp(prov, "none") != 0)
        fprintf(f, " (%s %s)", prov,
                json_string_value(json_object_get(emb, "model")) ? json_string_value(
                                                                        json_object_get(emb, "model"))
                                                                  : "");
    fprintf(f, ".\nMemories: %lld stored.",
            (long long)json_integer_value(json_object_get(mem, "count")));
    size_t i;
    const json_t *w;
    json_array_foreach(json_object_get(st, "warnings"), i, w)
        fprintf(f, "\nwarning: %s", json_string_value(w));
    if (fclose(f) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

/* The text a model reads: results as citations with their snippets. */
static char *tool_text(const char *op, const json_t *out)
{
    if (strcmp(op, "search") == 0) {
        size_t n = 0, cap = 256, i;
        char *s = malloc(cap);
        const json_t *r;
        if (!s)
            return NULL;
        s[0] = 0;
        const json_t *res = json_object_get(out, "results");
        if (json_array_size(res) == 0) {
            snprintf(s, cap, "No results.");
            return s;
        }
        json_array_foreach(res, i, r) {
            const char *cit = json_string_value(json_object_get(r, "citation"));
            const char *snip = json_string_value(json_object_get(r, "snippet"));
            const char *cat = json_string_value(json_object_get(r, "category"));
            const char *upd = json_string_value(json_object_get(r, "updated_at"));
            char what[160] = "";
            const char *kind = json_string_value(json_object_get(r, "kind"));
            if (kind && !strcmp(kind, "fact"))
                snprintf(what, sizeof what, " [fact: %s, importance %.2f, %.10s]",
                         cat && *cat ? cat : "uncategorised",
                         json_number_value(json_object_get(r, "importance")), upd ? upd : "");
            size_t need = strlen(cit ? cit : "") + strlen(snip ? snip : "") + 64 + strlen(what);
            if (n + need >= cap) {
                while (n + need >= cap)
                    cap *= 2;
                char *t = realloc(s, cap);
                if (!t) {
                    free(s);
                    return NULL;
                }
                s = t;
            }
            n += (size_t)snprintf(s + n, cap - n, "%s%s%s (score %.2f)\n%s\n", i ? "\n" : "",
                                  cit ? cit : "", what,
                                  json_number_value(json_object_get(r, "score")),
                                  snip ? snip : "");
        }
        return s;
    }
    if (strcmp(op, "get") == 0) {
        /* A deleted fact is marked, so no one takes it for a live one. */
        const char *del = json_string_value(
            json_object_get(json_object_get(out, "memory"), "deleted_at"));
        const char *t = json_string_value(json_object_get(out, "text"));
        return del ? text_printf("[deleted %s; memory_restore brings it back until it is "
                                 "purged]\n%s",
                                 del, t ? t : "")
                   : strdup(t ? t : "");
    }
    if (strcmp(op, "memory_add") == 0 || strcmp(op, "memory_update") == 0 ||
        strcmp(op, "memory_restore") == 0 || strcmp(op, "memory_get") == 0)
        return memory_text(op, out);
    if (strcmp(op, "memory_delete") == 0)
        return text_printf("Deleted memory %s (memory_restore brings it back until it is "
                           "purged).",
                           json_string_value(json_object_get(out, "deleted")));
    if (strcmp(op, "memory_list") == 0 || strcmp(op, "memory_search") == 0)
        return memories_text(op, out);
    if (strcmp(op, "status") == 0)
        return status_text(out);
    if (strcmp(op, "recall") == 0) {
        const char *a = json_string_value(json_object_get(out, "recalled"));
        const char *b = json_string_value(json_object_get(out, "triggers"));
        size_t n = strlen(a) + strlen(b) + 32;
        char *s = malloc(n);
        if (s)
            snprintf(s, n, "%s%s%s", a, *a && *b ? "\n" : "", *a || *b ? b : "Nothing recalled.");
        return s;
    }
    return api_dump(out);
}

static json_t *tool_result(const char *text, json_t *structured, int is_error)
{
    char *clean = api_utf8_clean(text);
    json_t *r = json_pack("{s:[{s:s,s:s}]}", "content", "type", "text", "text",
                          clean ? clean : "");
    free(clean);
    if (!r) {
        json_decref(structured);
        return NULL;
    }
    if (structured)
        json_object_set_new(r, "structuredContent", structured);
    if (is_error)
        json_object_set_new(r, "isError", json_true());
    return r;
}

static int keep_fresh;

void mcp_keep_fresh(int on) { keep_fresh = on; }

/* Before a tool that reads the notes: the index brought up to date with
 * what changed since the last call (mnemo_refresh). A sync that cannot run
 * now (another process is writing) leaves the index as it is: the tool
 * answers from it, and the next call tries again. */
static void refresh(mnemo *m, const char *op)
{
    if (!keep_fresh || (strcmp(op, "search") && strcmp(op, "recall") && strcmp(op, "status")))
        return;
    int synced = 0;
    mnemo_sync_stats st;
    int rc = mnemo_refresh(m, &synced, &st);
    if (rc)
        fprintf(stderr, "mnemo mcp: the index could not be brought up to date: %s\n",
                mnemo_errmsg(m));
    else if (synced && st.files_added + st.files_changed + st.files_removed)
        fprintf(stderr, "mnemo mcp: synced: %zu added, %zu changed, %zu removed\n",
                st.files_added, st.files_changed, st.files_removed);
}

static json_t *tools_call(mnemo *m, const json_t *params, json_t *id)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    const char *opname = NULL;
    for (size_t i = 0; name && i < sizeof tools / sizeof *tools; i++)
        if (strcmp(name, tools[i].tool) == 0)
            opname = tools[i].op;
    const api_op *op = api_find(opname);
    if (!op) {
        char msg[160];
        snprintf(msg, sizeof msg, "Unknown tool: %.100s", name ? name : "(no name)");
        return rpc_error(id, BAD_PARAMS, msg);
    }
    refresh(m, op->name);
    char *text_out = NULL, *err = NULL;
    json_t *args = json_object_get(params, "arguments");
    int rc = api_run(m, op, json_is_null(args) ? NULL : args, &text_out, &err);
    json_t *out = rc ? NULL : json_loads(text_out, JSON_DECODE_ANY, NULL);
    free(text_out);
    if (!rc && !out) {
        rc = MNEMO_NOMEM;
        err = strdup("out of memory");
    }
    json_t *result;
    if (rc) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s failed (%s): %s", name, api_code_name(rc), err);
        result = tool_result(msg, NULL, 1);
    } else {
        char *text = tool_text(op->name, out);
        result = tool_result(text ? text : "", out, 0);
        free(text);
        out = NULL;
    }
    json_decref(out);
    free(err);
    return rpc_result(id, result);
}

static json_t *dispatch(mnemo *m, json_t *msg);

/* One request or notification; NULL when no response is due. A request
 * is always answered, if need be with an internal error. */
static json_t *handle_one(mnemo *m, json_t *msg)
{
    json_t *r = dispatch(m, msg);
    json_t *id = json_object_get(msg, "id");
    if (!r && json_is_object(msg) && json_object_get(msg, "method") &&
        (json_is_string(id) || json_is_integer(id)))
        r = json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
                      INTERNAL_ERROR, "message", "Internal error");
    return r;
}

static json_t *dispatch(mnemo *m, json_t *msg)
{
    if (!json_is_object(msg))
        return rpc_error(NULL, INVALID_REQUEST, "Invalid Request: not a JSON-RPC object");
    json_t *id = json_object_get(msg, "id");
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (!method) {
        /* A response (to nothing we asked) is ignored; anything else is bad. */
        if (id && (json_object_get(msg, "result") || json_object_get(msg, "error")))
            return NULL;
        return rpc_error(id, INVALID_REQUEST, "Invalid Request: no method");
    }
    if (!id) /* notifications: initialized, cancelled, ... need no answer */
        return NULL;
    if (!json_is_string(id) && !json_is_integer(id))
        return rpc_error(NULL, INVALID_REQUEST, "Invalid Request: id must be a string or integer");
    if (!json_is_string(json_object_get(msg, "jsonrpc")) ||
        strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") != 0)
        return rpc_error(id, INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\"");
    json_t *params = json_object_get(msg, "params");
    if (params && !json_is_object(params))
        return rpc_error(id, BAD_PARAMS, "Invalid params: params must be an object");
    if (strcmp(method, "initialize") == 0)
        return rpc_result(id, initialize(params));
    if (strcmp(method, "ping") == 0)
        return rpc_result(id, json_object());
    if (strcmp(method, "tools/list") == 0)
        return rpc_result(id, tools_list(m));
    if (strcmp(method, "tools/call") == 0)
        return tools_call(m, params, id);
    char text[160];
    snprintf(text, sizeof text, "Method not found: %.100s", method);
    return rpc_error(id, NO_METHOD, text);
}

char *mcp_handle(mnemo *m, const char *text, size_t len)
{
    json_error_t je;
    json_t *msg = json_loadb(text, len, 0, &je), *resp;
    if (!msg) {
        char e[256];
        snprintf(e, sizeof e, "Parse error: %s (line %d, column %d)", je.text, je.line,
                 je.column);
        resp = rpc_error(NULL, PARSE_ERROR, e);
    } else if (json_is_array(msg)) {
        resp = json_array();
        size_t i;
        json_t *e;
        json_array_foreach(msg, i, e) {
            json_t *r = handle_one(m, e);
            if (r)
                json_array_append_new(resp, r);
        }
        if (json_array_size(msg) == 0) { /* one error object, not an array */
            json_decref(resp);
            resp = rpc_error(NULL, INVALID_REQUEST, "Invalid Request: empty batch");
        } else if (json_array_size(resp) == 0) {
            json_decref(resp);
            resp = NULL;
        }
    } else {
        resp = handle_one(m, msg);
    }
    json_decref(msg);
    if (!resp)
        return NULL;
    char *s = api_dump(resp);
    json_decref(resp);
    return s;
}
