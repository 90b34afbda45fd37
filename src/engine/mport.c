/*
 * mport.c - memories out and in as JSON lines (mnemo_memory_export and
 * mnemo_memory_import) over a store's steps (memory.h: export_rows,
 * import, imported).
 *
 * An export writes every memory, deleted ones too, with its history, one
 * line each, from one snapshot; a memory that cannot be read is left out
 * and named in the warning, so an import reads back everything written.
 * An import is all or nothing (the store's write); the lines are read by
 * mem_import_each.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core.h"
#include "engine/memory.h"

typedef struct export_ctx {
    mnemo_write_fn write;
    void *ud;
    size_t count;
    mem_skips left; /* memories that cannot be read: import would refuse them */
} export_ctx;

static int export_row(mnemo *m, void *ud, json_t *rec, json_t *hist)
{
    export_ctx *e = ud;
    if (!rec) { /* the store starts, or starts over */
        e->count = 0;
        mem_skips_cleanup(&e->left);
        return MNEMO_OK;
    }
    if (mem_skip(&e->left, rec)) {
        json_decref(rec);
        json_decref(hist);
        return MNEMO_OK;
    }
    json_object_set_new(rec, "history", hist ? hist : json_array());
    char *line = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(rec);
    if (!line)
        return core_error(m, MNEMO_NOMEM, "out of memory");
    size_t n = strlen(line);
    line[n] = '\n';
    int rc = MNEMO_OK;
    if (e->write(e->ud, line, n + 1))
        rc = core_error(m, MNEMO_IO, "export: writing failed");
    free(line);
    e->count++;
    return rc;
}

int mem_export(mnemo *m, const mem_store *st, mnemo_write_fn write, void *ud, size_t *count)
{
    core_clear(m);
    if (count)
        *count = 0;
    export_ctx e = {write, ud, 0, {NULL}};
    int rc = st->open ? st->open(m) : MNEMO_OK;
    if (!rc)
        rc = st->export_rows(m, export_row, &e);
    if (count)
        *count = e.count;
    if (!rc)
        rc = mem_skips_report(m, &e.left, NULL);
    mem_skips_cleanup(&e.left);
    return rc;
}

int mem_import(mnemo *m, const mem_store *st, const char *jsonl, size_t len, size_t *imported,
               size_t *skipped)
{
    core_clear(m);
    size_t nin = 0, nskip = 0;
    int rc = st->import(m, jsonl, len, &nin, &nskip);
    if (!rc && nin)
        st->imported(m); /* best effort; the next sync does the rest */
    if (imported)
        *imported = rc ? 0 : nin;
    if (skipped)
        *skipped = rc ? 0 : nskip;
    return rc;
}
