/*
 * lite.c - the SQLite backend's table of operations and its state on the
 * handle: the index file opened (and reopened after another process
 * rebuilt it), the memory store attached to it, the query tokenizer of the
 * index's language.
 */
#include "store/sqlite/lite.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/get.h"
#include "engine/search.h"
#include "store/sqlite/vectors.h"
#include "util/errcode.h"

int lite_open(mnemo *m)
{
    lite *l = calloc(1, sizeof *l);
    if (!l)
        return core_error(m, MNEMO_NOMEM, "out of memory");
    buf_init(&l->mem_err, 16384);
    m->store = l;
    return MNEMO_OK;
}

void lite_close(mnemo *m)
{
    lite *l = LITE(m);
    if (!l)
        return;
    store_close(l->st);
    vecfile_close(l->vf);
    vectors_calib_free(l->calib);
    buf_cleanup(&l->mem_err);
    free(l);
    m->store = NULL;
}

/* The SQLite backend (backend.h): every operation on the index file and
 * the memory store beside it. */
const backend_ops backend_sqlite = {
    "sqlite",
    lite_open,
    lite_qtok,
    &lite_sync_store,
    search_notes,
    &lite_notes,
    get_file,
    lite_status_json,
    lite_index_count,
    lite_files,
    lite_recall_triggers,
    &mem_lite_store,
    &mem_lite_searcher,
    lite_memory_recover,
    lite_close,
    NULL,
    NULL,
};

int lite_store(mnemo *m)
{
    lite *l = LITE(m);
    struct stat sb;
    int have = stat(m->db_path, &sb) == 0;
    if (l->st) {
        if (have && sb.st_dev == l->st_dev && sb.st_ino == l->st_ino)
            return MNEMO_OK;
        store_close(l->st); /* replaced (or removed) under us */
        l->st = NULL;
    }
    buf err;
    buf_init(&err, 16384);
    int rc = store_open(m->db_path, (int)cfg_int(m->cfg, CFG_BUSY_TIMEOUT_MS), &l->st, &err);
    if (rc == MNEMO_OK && have) {
        l->st_dev = sb.st_dev;
        l->st_ino = sb.st_ino;
    }
    if (rc == MNEMO_OK) {
        /* Notes stay searchable when the memory store cannot be opened;
         * memory operations report why (lite_mem). */
        char *lang = NULL;
        store_meta_get(l->st, "language", &lang);
        buf_reset(&l->mem_err);
        l->mem_rc = store_attach_memories(l->st, m->mem_path, lang ? lang : "english",
                                          &l->mem_err);
        free(lang);
    }
    if (rc == MNEMO_NOTFOUND)
        core_error(m, rc, "no index at %s yet; run: mnemo index", m->db_path);
    else if (rc)
        core_error(m, rc, "%s", err.len ? err.data : errcode_text(rc));
    buf_cleanup(&err);
    return rc;
}

int lite_mem(mnemo *m)
{
    int rc = lite_store(m);
    if (rc || !LITE(m)->mem_rc)
        return rc;
    return core_error(m, LITE(m)->mem_rc, "%s",
                      LITE(m)->mem_err.len ? LITE(m)->mem_err.data
                                           : errcode_text(LITE(m)->mem_rc));
}

/* "<index>.suspect": a read met damage in the index, which cannot be
 * written to say so; the next sync rebuilds it (lite_sync). */
static void suspect_path(const mnemo *m, char *out, size_t n)
{
    snprintf(out, n, "%s.suspect", m->db_path);
}

int lite_suspect(mnemo *m)
{
    char p[PATH_MAX + 16];
    suspect_path(m, p, sizeof p);
    return access(p, F_OK) == 0;
}

void lite_unsuspect(mnemo *m)
{
    char p[PATH_MAX + 16];
    suspect_path(m, p, sizeof p);
    unlink(p);
}

static int read_fail(mnemo *m, int rc, const char *what, int memories)
{
    const char *why = sqlite3_errstr(rc);
    int code = store_code(rc);
    if (code == MNEMO_OK)
        code = MNEMO_DB;
    if (code != MNEMO_CORRUPT)
        return core_error(m, code, "%s: %s (%s)", what, why,
                          memories ? m->mem_path : m->db_path);
    if (memories)
        return core_error(m, code,
                          "the memory store %s is damaged (%s, %s); nothing was read past the "
                          "damage: move it away (a new store is then created) and salvage it "
                          "with mnemo memory recover MOVED-FILE, or import a snapshot "
                          "(%s.backup-*.jsonl)",
                          m->mem_path, what, why, m->mem_path);
    code = core_error(m, code,
                      "the index %s is damaged (%s, %s); it is made from your notes: rebuild "
                      "it with: mnemo index (memories live in %s and are kept)",
                      m->db_path, what, why, m->mem_path);
    char p[PATH_MAX + 16];
    suspect_path(m, p, sizeof p);
    FILE *f = fopen(p, "w");
    if (f) {
        fprintf(f, "%s\n", core_errmsg(m));
        fclose(f);
    }
    return code;
}

int lite_index_fail(mnemo *m, int rc, const char *what) { return read_fail(m, rc, what, 0); }
int lite_mem_fail(mnemo *m, int rc, const char *what) { return read_fail(m, rc, what, 1); }

int lite_qtok(mnemo *m, tok **out)
{
    char *lang = NULL;
    int rc;
    if ((rc = lite_store(m)))
        return rc;
    if (store_meta_get(LITE(m)->st, "language", &lang) || !lang) {
        free(lang);
        return core_error(m, MNEMO_CORRUPT, "index %s has no language setting; rebuild it with: "
                                            "mnemo index --force",
                          m->db_path);
    }
    rc = core_qtok(m, lang, out);
    free(lang);
    return rc;
}
