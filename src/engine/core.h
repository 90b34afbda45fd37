/*
 * core.h - the handle (struct mnemo) shared by the library's modules, and
 * the error helpers every public entry point uses.
 */
#ifndef MNEMO_CORE_H
#define MNEMO_CORE_H

#include "engine/config.h"
#include "mnemo.h"
#include "text/tok.h"
#include "embed/embed.h"
#include "util/buf.h"

struct mnemo {
    mnemo_config *cfg;
    char *workspace;   /* absolute, no trailing slash */
    char *db_path;     /* absolute */
    char *mem_path;    /* the memory store, absolute */
    tok *qtok;         /* query tokenizer, built for the index's language */
    char *qtok_lang;
    embedder *emb;     /* the embedding provider, opened on first use */
    const struct backend_ops *be; /* where rows live (backend.h), never NULL */
    void *store;       /* the backend's state, of its own type (lite.h, store/postgres/pgint.h) */
    void *wrap;        /* a wrapping backend's (sourceTable's, pgsource.c), or NULL */
    struct watch_set *watch; /* mnemo_refresh's watch (watch.c), or NULL */
    buf err;           /* last error message */
    buf warn;          /* last warning (auto provider fallback), borrowed by callers */
};

/* Records a formatted error message on M and returns CODE. */
int core_error(mnemo *m, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Clears the last error. */
void core_clear(mnemo *m);

/* The last error message of M ("out of memory" for NULL, "no error"). */
const char *core_errmsg(const mnemo *m);

/* The query tokenizer for LANG, kept on the handle until another language
 * is asked for. */
int core_qtok(mnemo *m, const char *lang, tok **out);

/* The transcripts folder when `sources` includes "sessions", else NULL. */
const char *core_sessions_dir(mnemo *m);

/* The modalities (MEDIA_IMAGE | MEDIA_AUDIO, text/media.h) the extra paths
 * list under the multimodal setting; 0 when it is off. */
int core_media(mnemo *m);

/* Current time as Unix seconds (honours MNEMO_NOW, ISO 8601). */
double core_now(void);

#endif
