/*
 * core.c - the handle: opening, paths, errors, and the shared helpers of
 * the public API (mnemo_strerror, mnemo_free, mnemo_version).
 */
#include "core.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "errcode.h"
#include "pgschema.h"
#include "pgsource.h"
#include "vectors.h"
#include "util/hash.h"
#include "util/io.h"
#include "util/time.h"

const char *mnemo_strerror(int code) { return errcode_text(code); }

const char *mnemo_version(void) { return MNEMO_VERSION; }

void mnemo_free(void *p) { free(p); }

int core_error(mnemo *m, int code, const char *fmt, ...)
{
    if (!m)
        return code;
    buf_reset(&m->err);
    m->err.err = 0;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&m->err, fmt, ap);
    va_end(ap);
    return code;
}

void core_clear(mnemo *m)
{
    buf_reset(&m->err);
    m->err.err = 0;
}

const char *core_errmsg(const mnemo *m)
{
    if (!m)
        return "out of memory";
    if (m->err.data && m->err.len)
        return m->err.data;
    return "no error";
}

const char *mnemo_errmsg(const mnemo *m) { return core_errmsg(m); }

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
    store_close(m->st);
    tok_free(m->qtok);
    free(m->qtok_lang);
    embed_close(m->emb);
    vecfile_close(m->vf);
    pgsource_free(m->pgs);
    if (m->be && m->be->close)
        m->be->close(m);
    pgschema_close(m);
    free(m->tenant);
    buf_cleanup(&m->warn);
    cfg_free(m->cfg);
    free(m->workspace);
    free(m->db_path);
    free(m->mem_path);
    buf_cleanup(&m->err);
    free(m);
}

int core_store(mnemo *m)
{
    struct stat sb;
    int have = stat(m->db_path, &sb) == 0;
    if (m->st) {
        if (have && sb.st_dev == m->st_dev && sb.st_ino == m->st_ino)
            return MNEMO_OK;
        store_close(m->st); /* replaced (or removed) under us */
        m->st = NULL;
    }
    char err[1024] = "";
    int rc = store_open(m->db_path, (int)cfg_int(m->cfg, CFG_BUSY_TIMEOUT_MS), &m->st, err,
                        sizeof err);
    if (rc == MNEMO_OK && have) {
        m->st_dev = sb.st_dev;
        m->st_ino = sb.st_ino;
    }
    if (rc == MNEMO_OK) {
        /* Notes stay searchable when the memory store cannot be opened;
         * memory operations report why (core_mem). */
        char *lang = NULL;
        store_meta_get(m->st, "language", &lang);
        m->mem_err[0] = 0;
        m->mem_rc = store_attach_memories(m->st, m->mem_path, lang ? lang : "english",
                                          m->mem_err, sizeof m->mem_err);
        free(lang);
    }
    if (rc == MNEMO_NOTFOUND)
        return core_error(m, rc, "no index at %s yet; run: mnemo index", m->db_path);
    if (rc)
        return core_error(m, rc, "%s", err[0] ? err : errcode_text(rc));
    return MNEMO_OK;
}

int core_mem(mnemo *m)
{
    int rc = core_store(m);
    if (rc || !m->mem_rc)
        return rc;
    return core_error(m, m->mem_rc, "%s", m->mem_err[0] ? m->mem_err : errcode_text(m->mem_rc));
}

int core_qtok(mnemo *m, tok **out)
{
    char *lang = NULL;
    int rc;
    /* On PostgreSQL the rows are tokenized with the configured language (a
     * sync re-tokenizes a tenant indexed with another one). */
    if (m->be != &backend_sqlite) {
        if (!(lang = strdup(cfg_str(m->cfg, CFG_LANGUAGE))))
            return core_error(m, MNEMO_NOMEM, "out of memory");
    } else if ((rc = core_store(m))) {
        return rc;
    } else if (store_meta_get(m->st, "language", &lang) || !lang) {
        free(lang);
        return core_error(m, MNEMO_CORRUPT, "index %s has no language setting; rebuild it with: "
                                            "mnemo index --force",
                          m->db_path);
    }
    if (m->qtok && m->qtok_lang && strcmp(lang, m->qtok_lang) == 0) {
        free(lang);
        *out = m->qtok;
        return MNEMO_OK;
    }
    tok_free(m->qtok);
    free(m->qtok_lang);
    m->qtok = NULL;
    m->qtok_lang = lang;
    rc = tok_new(lang, cfg_bool(m->cfg, CFG_STOP_WORDS), &m->qtok);
    if (rc)
        return core_error(m, rc, "index %s uses unknown language '%s'", m->db_path, lang);
    *out = m->qtok;
    return MNEMO_OK;
}

const char *core_sessions_dir(mnemo *m)
{
    const char *dir = cfg_str(m->cfg, CFG_SESSIONS_DIR);
    return *dir && strstr(cfg_str(m->cfg, CFG_SOURCES), "\"sessions\"") ? dir : NULL;
}

double core_now(void)
{
    const char *now = getenv("MNEMO_NOW");
    double t;
    if (now && *now && time_parse_iso(now, &t) == 0)
        return t;
    return time_wall();
}
