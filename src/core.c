/*
 * core.c - what every module needs of the handle: errors, the open index
 * and memory store, the query tokenizer, the clock. The handle is opened
 * and closed in mnemo.c.
 */
#include "core.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"
#include "errcode.h"
#include "util/time.h"

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
    if (strcmp(m->be->name, "sqlite") != 0) {
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
