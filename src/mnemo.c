/*
 * mnemo.c - the public entry points: opening and closing a handle on the
 * backend the configuration names, the calls through its table
 * (backend.h), routed where it routes, and the small helpers of the API.
 * The top of the library: nothing here is called from inside it, and it
 * knows no store but by the tables backend.h declares.
 */
#include "mnemo.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "engine/backend.h"
#include "engine/sync.h"
#include "engine/watch.h"
#include "engine/core.h"
#include "engine/files.h"
#include "engine/allsearch.h"
#include "engine/memjson.h"
#include "engine/memory.h"
#include "engine/mrec.h"
#include "util/errcode.h"
#include "engine/provider.h"
#include "util/hash.h"
#include "util/io.h"
#include "util/utf8.h"

const char *mnemo_strerror(int code) { return errcode_text(code); }

const char *mnemo_version(void) { return MNEMO_VERSION; }

void mnemo_free(void *p) { free(p); }

/* Config store {"backend":"postgres"} without sourceTable: PostgreSQL;
 * else SQLite, wrapped in sourceTable's search when it is set. */
static const backend_ops *backend_select(const mnemo *m)
{
    json_t *st = json_loads(cfg_str(m->cfg, CFG_STORE), 0, NULL);
    const char *b = json_string_value(json_object_get(st, "backend"));
    int pg = b && !strcmp(b, "postgres") && !*cfg_str(m->cfg, CFG_SOURCE_TABLE);
    json_decref(st);
    return pg ? &backend_postgres : &backend_sqlite;
}


const char *mnemo_errmsg(const mnemo *m) { return core_errmsg(m); }

const char *mnemo_warning(const mnemo *m)
{
    return m && m->warn.data && m->warn.len ? m->warn.data : NULL;
}

/* M for a call whose warning is its own: the last call's goes. */
static mnemo *warn_fresh(mnemo *m)
{
    buf_reset(&m->warn);
    m->warn.err = 0;
    return m;
}

const char *mnemo_workspace(const mnemo *m) { return m->workspace; }
const char *mnemo_db_path(const mnemo *m) { return m->db_path; }

/* mkdir -p with mode 0700 for each created level. */
static int make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        int rc = mkdir(path, 0700);
        *p = '/';
        if (rc != 0 && errno != EEXIST)
            return -1;
    }
    return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* Default index path: $XDG_DATA_HOME/mnemo/<workspace name>-<hash>.sqlite */
static char *default_db(const char *workspace)
{
    buf b;
    buf_init(&b, PATH_MAX * 2);
    char *dir = io_data_dir(NULL);
    if (!dir) {
        buf_cleanup(&b);
        return NULL;
    }
    buf_puts(&b, dir);
    free(dir);
    if (!buf_err(&b) && make_dirs(b.data) != 0) {
        buf_cleanup(&b);
        return NULL;
    }
    const char *base = strrchr(workspace, '/');
    base = base && base[1] ? base + 1 : "root";
    char h[HASH_HEX_LEN + 1];
    hash_hex(workspace, strlen(workspace), h);
    buf_printf(&b, "/%s-%.12s.sqlite", base, h);
    return buf_detach(&b);
}

/* The memory store beside index PATH: x.sqlite -> x.memories.sqlite, any
 * other name gets .memories.sqlite appended. */
static char *memory_db(const char *path)
{
    buf b;
    buf_init(&b, PATH_MAX * 2);
    size_t n = strlen(path);
    if (n > 7 && strcmp(path + n - 7, ".sqlite") == 0)
        n -= 7;
    buf_printf(&b, "%.*s.memories.sqlite", (int)n, path);
    return buf_detach(&b);
}

static char *absolute(const char *path)
{
    if (path[0] == '/')
        return strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return NULL;
    buf b;
    buf_init(&b, PATH_MAX * 2);
    buf_printf(&b, "%s/%s", cwd, path);
    return buf_detach(&b);
}

int mnemo_open(const mnemo_config *cfg, mnemo **out)
{
    mnemo *m = calloc(1, sizeof *m);
    *out = m;
    if (!m)
        return MNEMO_NOMEM;
    buf_init(&m->err, 8192);
    buf_init(&m->warn, 8192);
    m->be = &backend_sqlite;
    m->cfg = cfg_copy(cfg);
    if (!m->cfg)
        return core_error(m, MNEMO_NOMEM, "out of memory");
    m->be = backend_select(m);
    int rc = m->be->open(m);
    if (!rc && *cfg_str(m->cfg, CFG_SOURCE_TABLE))
        rc = pgsource_wrap(m);
    if (rc)
        return rc;
    const char *ws = cfg_str(m->cfg, CFG_WORKSPACE);
    char real[PATH_MAX];
    if (!realpath(*ws ? ws : ".", real))
        return core_error(m, MNEMO_NOTFOUND, "workspace %s: %s", *ws ? ws : ".", strerror(errno));
    struct stat st;
    if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode))
        return core_error(m, MNEMO_INVALID, "workspace %s is not a directory", real);
    if (strstr(cfg_str(m->cfg, CFG_SOURCES), "\"sessions\"") && !*cfg_str(m->cfg, CFG_SESSIONS_DIR))
        return core_error(m, MNEMO_INVALID,
                          "sources includes sessions but sessionsDir is not set (the folder "
                          "of JSONL transcripts)");
    m->workspace = strdup(real);
    const char *db = cfg_str(m->cfg, CFG_DB);
    m->db_path = *db ? absolute(db) : default_db(real);
    if (!m->workspace || !m->db_path)
        return core_error(m, MNEMO_IO, "cannot determine the index path (set MNEMO_DB or --db)");
    const char *mdb = cfg_str(m->cfg, CFG_MEMORY_DB);
    m->mem_path = *mdb ? absolute(mdb) : memory_db(m->db_path);
    if (!m->mem_path)
        return core_error(m, MNEMO_NOMEM, "out of memory");
    if (strcmp(m->mem_path, m->db_path) == 0)
        return core_error(m, MNEMO_INVALID, "memoryDb must not be the index itself (%s)",
                          m->db_path);
    return MNEMO_OK;
}

void mnemo_close(mnemo *m)
{
    if (!m)
        return;
    tok_free(m->qtok);
    free(m->qtok_lang);
    embed_close(m->emb);
    watch_close(m);
    if (m->be && m->be->close)
        m->be->close(m);
    buf_cleanup(&m->warn);
    cfg_free(m->cfg);
    free(m->workspace);
    free(m->db_path);
    free(m->mem_path);
    buf_cleanup(&m->err);
    free(m);
}

/* The public API. */

typedef struct tokj {
    json_t *arr;
} tokj;

static int tok_json_fn(void *ud, int flags, const char *token, int len, int start, int end)
{
    tokj *t = ud;
    json_t *flagsj = json_array();
    if (flags & TOKF_WHOLE)
        json_array_append_new(flagsj, json_string("whole"));
    if (flags & TOKF_PART)
        json_array_append_new(flagsj, json_string("part"));
    if (flags & TOKF_CJK)
        json_array_append_new(flagsj, json_string("cjk"));
    if (flags & TOKF_STOP)
        json_array_append_new(flagsj, json_string("stop"));
    json_array_append_new(t->arr, json_pack("{s:s%,s:i,s:i,s:o}", "token", token, (size_t)len,
                                            "start", start, "end", end, "flags", flagsj));
    return 0;
}

int mnemo_embed_json(mnemo *m, const char *const *texts, size_t n, int is_query, char **out)
{
    core_clear(m);
    return provider_embed_json(m, texts, n, is_query, out);
}

int mnemo_is_cjk(int32_t cp) { return utf8_is_cjk(cp); }

int mnemo_tokenize_json(mnemo *m, const char *text, int is_query, char **out)
{
    *out = NULL;
    core_clear(m);
    tok *t = NULL;
    /* Use the index's language when there is an index, else the config's. */
    int rc = m->be->qtok(m, &t);
    tok *own = NULL;
    if (rc) {
        rc = tok_new(cfg_str(m->cfg, CFG_LANGUAGE), cfg_bool(m->cfg, CFG_STOP_WORDS), &own);
        if (rc)
            return core_error(m, rc, "cannot create the tokenizer");
        t = own;
    }
    core_clear(m);
    tokj tj = {json_array()};
    rc = tok_run(t, text, strlen(text), is_query, tok_json_fn, &tj);
    tok_free(own);
    if (!rc)
        *out = json_dumps(tj.arr, JSON_COMPACT);
    json_decref(tj.arr);
    return rc ? rc : (*out ? MNEMO_OK : MNEMO_NOMEM);
}

int mnemo_sync(mnemo *m, const mnemo_sync_opts *opts, mnemo_sync_stats *stats)
{
    int rc;
    BACKEND_CALL(m, BACKEND_WRITE, rc, sync_run(warn_fresh(m), m->be->sync, opts, stats));
    return rc;
}

int mnemo_search(mnemo *m, const char *text, const mnemo_search_opts *opts, mnemo_results **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_READ, rc, m->be->search(m, text, opts, out));
    return rc;
}

int mnemo_get(mnemo *m, const char *path, int from, int lines, mnemo_excerpt *out)
{
    return m->be->get(m, path, from, lines, out);
}

int mnemo_status_json(mnemo *m, int deep, char **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_READ, rc, m->be->status_json(m, deep, out));
    return rc;
}

int mnemo_files(mnemo *m, const char *options, char **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_READ, rc, files_json(warn_fresh(m), options, m->be->files, out));
    return rc;
}

int mnemo_recall_triggers(mnemo *m, const char *message, char **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_READ, rc, m->be->recall_triggers(m, message, out));
    return rc;
}

int mnemo_memory_add(mnemo *m, const char *record, char **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_WRITE, rc, mem_add(warn_fresh(m), record, m->be->mem, out));
    return rc;
}

int mnemo_memory_update(mnemo *m, const char *id, const char *changes, char **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_WRITE, rc, mem_update(warn_fresh(m), id, changes, m->be->mem, out));
    return rc;
}

int mnemo_memory_delete(mnemo *m, const char *id)
{
    int rc;
    BACKEND_CALL(m, BACKEND_WRITE, rc, mem_delete(warn_fresh(m), id, m->be->mem));
    return rc;
}

int mnemo_memory_restore(mnemo *m, const char *id, char **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_WRITE, rc, mem_restore(warn_fresh(m), id, m->be->mem, out));
    return rc;
}

int mnemo_memory_purge(mnemo *m, const char *id, size_t *purged)
{
    int rc;
    BACKEND_CALL(m, BACKEND_WRITE, rc, mem_purge(warn_fresh(m), id, m->be->mem, purged));
    return rc;
}

int mnemo_memory_get(mnemo *m, const char *id, char **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_READ, rc, mem_get(warn_fresh(m), id, m->be->mem, out));
    return rc;
}

int mnemo_memory_confirm(mnemo *m, const char *id, char **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_WRITE, rc, mem_confirm(warn_fresh(m), id, m->be->mem, out));
    return rc;
}

int mnemo_memory_history(mnemo *m, const char *id, char **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_READ, rc, mem_history(warn_fresh(m), id, m->be->mem, out));
    return rc;
}

int mnemo_memory_list(mnemo *m, const char *options, char **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_READ, rc, mem_list(warn_fresh(m), options, m->be->mem, out));
    return rc;
}

int mnemo_memory_counts(mnemo *m, const char *options, char **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_READ, rc, mem_counts(warn_fresh(m), options, m->be->mem, out));
    return rc;
}

int mnemo_memory_search(mnemo *m, const char *text, const char *options, char **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_READ, rc, mem_search(warn_fresh(m), text, options, m->be->msearch, out));
    return rc;
}

int mnemo_memory_recall(mnemo *m, const char *options, char **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_READ, rc, mem_recall(warn_fresh(m), options, m->be->msearch, out));
    return rc;
}

int mnemo_memory_add_typed(mnemo *m, const mnemo_memory *rec, mnemo_memory **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_WRITE, rc, mem_add_typed(warn_fresh(m), rec, m->be->mem, out));
    return rc;
}

int mnemo_memory_get_typed(mnemo *m, const char *id, mnemo_memory **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_READ, rc, mem_get_typed(warn_fresh(m), id, m->be->mem, out));
    return rc;
}

int mnemo_memory_list_typed(mnemo *m, const mnemo_memory_opts *opts, mnemo_memories **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_READ, rc, mem_list_typed(warn_fresh(m), opts, m->be->mem, out));
    return rc;
}

int mnemo_memory_search_typed(mnemo *m, const char *text, const mnemo_memory_opts *opts,
                              mnemo_memories **out)
{
    int rc;
    BACKEND_CALL(m, BACKEND_READ, rc,
                 mem_search_typed(warn_fresh(m), text, opts, m->be->msearch, out));
    return rc;
}

/* Not routed as a whole: its searches of notes and of facts are, each. */
int mnemo_search_all_typed(mnemo *m, const char *text, const mnemo_search_all_opts *opts,
                           mnemo_hits **out)
{
    core_clear(m);
    return allsearch_run(warn_fresh(m), text, opts, NULL, NULL, out);
}

int mnemo_index_count(mnemo *m, long long *files)
{
    int rc;
    *files = 0;
    BACKEND_CALL(m, BACKEND_READ, rc, m->be->index_count(m, files));
    return rc;
}

/* Not routed: the output is written as it is read, so it cannot run again. */
int mnemo_memory_export(mnemo *m, mnemo_write_fn write, void *ud, size_t *count)
{
    return mem_export(warn_fresh(m), m->be->mem, write, ud, count);
}

int mnemo_memory_import(mnemo *m, const char *jsonl, size_t len, size_t *imported,
                        size_t *skipped)
{
    int rc;
    BACKEND_CALL(m, BACKEND_WRITE, rc, mem_import(warn_fresh(m), m->be->mem, jsonl, len, imported, skipped));
    return rc;
}

int mnemo_memory_recover(mnemo *m, const char *path, char **out)
{
    *out = NULL;
    if (!m->be->memory_recover)
        return core_error(m, MNEMO_INVALID,
                          "memory recover writes to a SQLite memory store; on %s, recover into "
                          "one (--set store.backend=sqlite) and move the memories with memory "
                          "export and memory import",
                          m->be->name);
    return m->be->memory_recover(warn_fresh(m), path, out);
}
