/*
 * files.c - the files the index holds (files.h): the options, each file's
 * kind and the JSON of mnemo_files, over the rows a backend lists.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/files.h"
#include "engine/core.h"
#include "engine/walk.h"
#include "util/buf.h"

/* The most files one answer lists, and the default: a workspace of this
 * many notes is far past what a person keeps, and the answer (about 100
 * bytes a file) stays near 10 MB. */
#define FILES_MAX 100000

int file_list_add(file_list *l, const char *path, int session, int media, long long size,
                  int64_t mtime_ns, long long chunks)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        file_row *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return MNEMO_NOMEM;
        l->v = v;
        l->cap = cap;
    }
    file_row *r = &l->v[l->n];
    r->path = strdup(path);
    if (!r->path)
        return MNEMO_NOMEM;
    r->session = session;
    r->media = media;
    r->size = size;
    r->mtime_ns = mtime_ns;
    r->chunks = chunks;
    l->n++;
    return MNEMO_OK;
}

void file_list_cleanup(file_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].path);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* What a file is to a reader: a transcript, an image or audio file, one
 * of the default roots (the root files, memory/), or under an extra path.
 * The row says the first two; the path the others, as the walk names them. */
static const char *kind_of(const file_row *r)
{
    if (r->session)
        return "session";
    if (r->media)
        return "media";
    if (strncmp(r->path, "memory/", 7) == 0 ||
        (!strchr(r->path, '/') && walk_is_root_file(r->path)))
        return "memory";
    return "extra";
}

/* OPTIONS ({"limit":N}, NULL or "" for the defaults) into *LIMIT. */
static int parse_options(mnemo *m, const char *options, size_t *limit)
{
    *limit = FILES_MAX;
    if (!options || !*options)
        return MNEMO_OK;
    json_error_t je;
    json_t *o = json_loads(options, 0, &je);
    int rc = MNEMO_OK;
    if (!o) {
        rc = core_error(m, MNEMO_INVALID, "files options: invalid JSON: %s", je.text);
        goto done;
    }
    if (!json_is_object(o)) {
        rc = core_error(m, MNEMO_INVALID, "files options must be a JSON object");
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        if (strcmp(key, "limit") != 0) {
            rc = core_error(m, MNEMO_INVALID, "files options: unknown key \"%s\" (known: limit)",
                            key);
            goto done;
        }
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            json_integer_value(v) > FILES_MAX) {
            rc = core_error(m, MNEMO_INVALID, "files options: limit must be an integer from 1 to %d",
                            FILES_MAX);
            goto done;
        }
        *limit = (size_t)json_integer_value(v);
    }
done:
    json_decref(o);
    return rc;
}

int files_json(mnemo *m, const char *options, files_fn list, char **out)
{
    *out = NULL;
    core_clear(m);
    size_t limit;
    file_list l = {0};
    buf b;
    buf_init(&b, 0);
    int rc = parse_options(m, options, &limit);
    if (rc || (rc = list(m, limit, &l)))
        goto done;
    int truncated = l.n > limit;
    size_t n = truncated ? limit : l.n;
    /* Written as results are (buf_json_str): a path that is not UTF-8 is
     * listed as search cites it, not refused. */
    buf_printf(&b, "{\"indexed\":%s,\"files\":[", l.indexed ? "true" : "false");
    for (size_t i = 0; i < n; i++) {
        const file_row *r = &l.v[i];
        buf_puts(&b, i ? ",{\"path\":" : "{\"path\":");
        buf_json_str(&b, r->path, strlen(r->path));
        buf_printf(&b, ",\"kind\":\"%s\",\"size\":%lld,\"mtime\":%lld,\"chunks\":%lld}",
                   kind_of(r), r->size, (long long)(r->mtime_ns / 1000000000), r->chunks);
    }
    buf_printf(&b, "],\"count\":%zu,\"truncated\":%s}", n, truncated ? "true" : "false");
    if ((rc = buf_err(&b)))
        goto done;
    *out = buf_detach(&b);
    if (!*out)
        rc = MNEMO_NOMEM;
done:
    buf_cleanup(&b);
    file_list_cleanup(&l);
    return rc;
}
