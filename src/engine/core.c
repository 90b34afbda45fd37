/*
 * core.c - what every module needs of the handle: errors, the query
 * tokenizer, the clock. The handle is opened
 * and closed in mnemo.c.
 */
#include "engine/core.h"
#include "text/media.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int core_qtok(mnemo *m, const char *lang, tok **out)
{
    if (m->qtok && m->qtok_lang && strcmp(lang, m->qtok_lang) == 0) {
        *out = m->qtok;
        return MNEMO_OK;
    }
    tok_free(m->qtok);
    free(m->qtok_lang);
    m->qtok = NULL;
    if (!(m->qtok_lang = strdup(lang)))
        return core_error(m, MNEMO_NOMEM, "out of memory");
    int rc = tok_new(lang, cfg_bool(m->cfg, CFG_STOP_WORDS), &m->qtok);
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

int core_media(mnemo *m)
{
    cfg_media mm;
    cfg_multimodal(m->cfg, &mm);
    return mm.enabled ? (mm.image ? MEDIA_IMAGE : 0) | (mm.audio ? MEDIA_AUDIO : 0) : 0;
}

double core_now(void)
{
    const char *now = getenv("MNEMO_NOW");
    double t;
    if (now && *now && time_parse_iso(now, &t) == 0)
        return t;
    return time_wall();
}
