/*
 * sync.c - the sync every backend shares: what changed under the memory
 * roots, handed to the backend's sink, committed, recorded and embedded
 * over the backend's steps (sync.h).
 *
 * The scan is compared with the stored files: files with the same size and
 * mtime are not read; changed ones are hashed and only re-chunked when their
 * content changed; a new file whose content equals a vanished one is a
 * rename; vanished files leave the index.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/core.h"
#include "engine/provider.h"
#include "util/errcode.h"
#include "engine/sync.h"
#include "util/map.h"
#include "util/time.h"
#include "engine/walk.h"

/* How a media file's skip reason starts when no provider or store takes
 * media: it is looked at again once one does. */
#define MEDIA_OFF "images and audio are not indexed"

typedef struct sync_ctx {
    mnemo *m;
    const mnemo_sync_opts *opts;
    mnemo_sync_stats *stats;
    prep_opts popts;
    const sync_sink *sink;
    void *ud; /* the sink's */
    char media_off[200]; /* why images and audio are not indexed, "" when they are */
} sync_ctx;

static void progress(sync_ctx *c, const char *phase, size_t done, size_t total)
{
    if (!c->opts || !c->opts->progress)
        return;
    mnemo_progress p = {phase, done, total, c->stats->bytes_read};
    c->opts->progress(c->opts->progress_ud, &p);
}

static int is_entries_path(const char *path)
{
    return !strcmp(path, "MEMORY.md") || !strcmp(path, "memory.md") ||
           !strcmp(path, "USER.md") || !strcmp(path, "user.md");
}

int sync_is_entries_path(const char *path) { return is_entries_path(path); }

/* Whether stored file F, the same size and time on disk, must be looked at
 * again because maxFileBytes moved across it: indexed and now over the
 * limit, or skipped as too large under another limit. It then goes as a
 * new file would: indexed, or skipped with the limit in force named. */
static int limit_moved(const sync_ctx *c, const sync_file *f, const walk_entry *e)
{
    int64_t max = e->media ? c->popts.media_max_bytes : c->popts.max_bytes;
    if (f->ok)
        return f->size > max;
    if (e->media && f->reason && !strncmp(f->reason, MEDIA_OFF, sizeof MEDIA_OFF - 1))
        return 1; /* media can be embedded now (else it is skipped before this) */
    return !prep_skip_current(f->reason, f->size, max);
}

/* Why the media the walk lists cannot be indexed, into c->media_off: the
 * store keeps none, or the provider embeds none. */
static void media_policy(sync_ctx *c)
{
    c->media_off[0] = 0;
    if (!core_media(c->m))
        return;
    char name[32];
    int explicit_;
    provider_resolve(c->m, name, &explicit_);
    const char *model = cfg_str(c->m->cfg, CFG_MODEL);
    if (!c->sink->media && c->sink->no_media)
        snprintf(c->media_off, sizeof c->media_off, MEDIA_OFF ": %s", c->sink->no_media);
    else if (!c->sink->media)
        snprintf(c->media_off, sizeof c->media_off,
                 MEDIA_OFF ": this store (%s) keeps no images or audio yet; the SQLite index does",
                 c->m->be->name);
    else if (!embed_media_support(name, model))
        snprintf(c->media_off, sizeof c->media_off,
                 MEDIA_OFF ": provider %s%s%s embeds no images or audio (gemini with model "
                 "gemini-embedding-2-preview does)",
                 name, *model ? " model " : "", model);
}

/* The body of a sync: what changed under the roots, written to the sink. */
static int sync_files(sync_ctx *c)
{
    const sync_sink *sk = c->sink;
    void *ud = c->ud;
    mnemo *m = c->m;
    walk_roots roots = {0};
    walk_list list = {0};
    sync_file *files = NULL;
    size_t nfiles = 0;
    size_t *work = NULL;
    prep_input *inputs = NULL;
    prep *pp = NULL;
    size_t nwork = 0;
    map bypath, byhash;
    map_init(&bypath);
    map_init(&byhash);
    int rc;

    progress(c, "scan", 0, 0);
    if ((rc = walk_roots_build(m->workspace, cfg_str(m->cfg, CFG_EXTRA_PATHS), core_sessions_dir(m), core_media(m), &roots,
                                &m->err)))
        goto done;
    if ((rc = walk_scan(m->workspace, &roots, &list))) {
        core_error(m, rc, "scanning %s failed: %s", m->workspace, errcode_text(rc));
        goto done;
    }
    if ((rc = sk->load(ud, &files, &nfiles)))
        goto done;
    media_policy(c);
    for (size_t i = 0; i < nfiles; i++)
        if ((rc = map_put(&bypath, files[i].path, i)))
            goto done;

    /* Pass 1: what is unchanged, what must be read. */
    work = malloc((list.n ? list.n : 1) * sizeof *work);
    if (!work) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < list.n; i++) {
        walk_entry *e = &list.v[i];
        size_t fi;
        int known = map_get(&bypath, e->path, &fi);
        if (known)
            files[fi].seen = 1;
        const char *skip = e->skip ? e->skip : e->media && c->media_off[0] ? c->media_off : NULL;
        if (skip) {
            c->stats->files_skipped++;
            if (known && !files[fi].ok && files[fi].size == e->size &&
                files[fi].mtime_ns == e->mtime_ns && files[fi].reason &&
                strcmp(files[fi].reason, skip) == 0)
                continue;
            if ((rc = sk->skip(ud, known ? &files[fi] : NULL, e->path, e->size, e->mtime_ns,
                               skip, e->sessions)))
                goto done;
            continue;
        }
        c->stats->files_seen++;
        if (known && files[fi].size == e->size && files[fi].mtime_ns == e->mtime_ns &&
            !limit_moved(c, &files[fi], e)) {
            if (files[fi].ok)
                c->stats->files_unchanged++;
            else
                c->stats->files_skipped++;
            continue;
        }
        work[nwork++] = i;
    }
    /* Vanished indexed files, by content hash, for rename detection. */
    for (size_t i = 0; i < nfiles; i++)
        if (!files[i].seen && files[i].ok && files[i].hash[0])
            if ((rc = map_put(&byhash, files[i].hash, i)))
                goto done;

    /* Pass 2: read, hash, chunk and tokenize (worker thread), write (here). */
    inputs = calloc(nwork ? nwork : 1, sizeof *inputs);
    if (!inputs) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    for (size_t w = 0; w < nwork; w++) {
        walk_entry *e = &list.v[work[w]];
        size_t fi;
        inputs[w].abs = walk_abs(m->workspace, e->path);
        inputs[w].entries = !e->sessions && (e->entries || is_entries_path(e->path));
        inputs[w].sessions = e->sessions;
        inputs[w].media = e->media;
        inputs[w].path = e->path;
        if (map_get(&bypath, e->path, &fi) && files[fi].ok)
            inputs[w].known_hash = files[fi].hash;
        if (!inputs[w].abs) {
            rc = MNEMO_NOMEM;
            goto done;
        }
    }
    c->popts.threaded = nwork >= 8;
    if ((rc = prep_start(&pp, inputs, nwork, &c->popts))) {
        core_error(m, rc, "cannot start indexing: %s", errcode_text(rc));
        goto done;
    }
    for (size_t w = 0; w < nwork; w++) {
        walk_entry *e = &list.v[work[w]];
        progress(c, "index", w, nwork);
        prep_item *it = prep_next(pp);
        size_t fi;
        int known = map_get(&bypath, e->path, &fi);
        if (it->status == MNEMO_NOTFOUND) {
            if (known)
                files[fi].seen = 0; /* vanished mid-sync: remove below */
            c->stats->files_seen--;
            continue;
        }
        if (it->status == MNEMO_NOMEM) {
            rc = core_error(m, MNEMO_NOMEM, "out of memory indexing %s", e->path);
            goto done;
        }
        int64_t mtime = (int64_t)it->st.st_mtim.tv_sec * 1000000000 + it->st.st_mtim.tv_nsec;
        int64_t size = it->st.st_size;
        if (it->status == MNEMO_INVALID) {
            c->stats->files_skipped++;
            c->stats->files_seen--;
            if ((rc = sk->skip(ud, known ? &files[fi] : NULL, e->path, size, mtime, it->reason,
                               e->sessions)))
                goto done;
            continue;
        }
        if (it->status) {
            rc = core_error(m, it->status, "indexing %s failed: %s", e->path,
                            errcode_text(it->status));
            goto done;
        }
        c->stats->bytes_read += it->bytes;

        if (!it->chunked) {
            /* Same content as indexed: only size and mtime change. */
            c->stats->files_touched++;
            if ((rc = sk->touch(ud, &files[fi], size, mtime, it->hash)))
                goto done;
            continue;
        }
        size_t old;
        if (!known && !e->media && map_get(&byhash, it->hash, &old) && !files[old].seen &&
            files[old].sessions == e->sessions &&
            is_entries_path(files[old].path) == inputs[w].entries) {
            /* Renamed: same content under a new path; keep its chunks. */
            files[old].seen = 1;
            c->stats->files_renamed++;
            if ((rc = sk->rename(ud, &files[old], e->path, size, mtime, it->hash)))
                goto done;
            continue;
        }
        if (known)
            c->stats->files_changed++;
        else
            c->stats->files_added++;
        int64_t removed = 0;
        size_t added = 0;
        if ((rc = sk->write(ud, known ? &files[fi] : NULL, e->path, size, mtime, it, e->sessions,
                            &removed, &added)))
            goto done;
        c->stats->chunks_removed += (size_t)removed;
        c->stats->chunks_added += added;
    }
    progress(c, "index", nwork, nwork);

    /* Pass 3: files that left the roots leave the index. */
    for (size_t i = 0; i < nfiles; i++) {
        if (files[i].seen)
            continue;
        if (files[i].ok)
            c->stats->files_removed++;
        if ((rc = sk->remove(ud, &files[i])))
            goto done;
    }
done:
    prep_stop(pp);
    for (size_t w = 0; inputs && w < nwork; w++)
        free(inputs[w].abs);
    free(inputs);
    free(work);
    map_cleanup(&bypath);
    map_cleanup(&byhash);
    sync_files_free(files, nfiles);
    walk_list_cleanup(&list);
    walk_roots_cleanup(&roots);
    return rc;
}

void sync_prep_opts(mnemo *m, prep_opts *o)
{
    memset(o, 0, sizeof *o);
    o->chunking.tokens = (int)cfg_int(m->cfg, CFG_CHUNK_TOKENS);
    o->chunking.overlap = (int)cfg_int(m->cfg, CFG_CHUNK_OVERLAP);
    o->max_bytes = cfg_int(m->cfg, CFG_MAX_FILE_BYTES);
    /* Tests stream small notes with a small window, to index a file both
     * ways (a large note is streamed, a small one read whole). */
    const char *win = getenv("MNEMO_INDEX_WINDOW");
    o->window = win && *win ? (size_t)strtoull(win, NULL, 10) : 0;
    o->language = cfg_str(m->cfg, CFG_LANGUAGE);
    cfg_media mm;
    cfg_multimodal(m->cfg, &mm);
    o->media_max_bytes = mm.max_bytes;
    o->media_allowed = core_media(m);
}

int sync_walk(mnemo *m, const sync_sink *sink, void *ud, const mnemo_sync_opts *opts,
              mnemo_sync_stats *stats)
{
    sync_ctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.opts = opts;
    c.stats = stats;
    sync_prep_opts(m, &c.popts);
    c.sink = sink;
    c.ud = ud;
    return sync_files(&c);
}

/* The vectors of a sync by the provider policy: nothing for "none"; for
 * "auto" a failure becomes stats->embed_warning (the notes are searched
 * by keyword meanwhile); for a named provider it is the sync's error. The
 * outcome is kept for status (vectors_done). */
static int sync_vectors(mnemo *m, const sync_store *s, void *ud, const mnemo_sync_opts *opts,
                        mnemo_sync_stats *stats)
{
    char name[32];
    int explicit_;
    provider_resolve(m, name, &explicit_);
    if (strcmp(name, "none") == 0)
        return s->vectors_done(ud, 0, MNEMO_OK, NULL);
    const char *off = s->no_vectors ? s->no_vectors(ud) : NULL;
    if (off) {
        buf_reset(&m->warn);
        m->warn.err = 0;
        buf_puts(&m->warn, off);
        stats->embed_warning = m->warn.data;
        return s->vectors_done(ud, 0, MNEMO_OK, off);
    }
    buf err;
    buf_init(&err, 8192);
    embedder *e = NULL;
    int rc = provider_embedder(m, name, &e, &err);
    if (!rc)
        rc = s->vectors(ud, e, opts, stats, &err);
    if (rc && !err.len)
        buf_puts(&err, errcode_text(rc));
    const char *why = rc ? err.data : NULL;
    int rc2 = s->vectors_done(ud, 1, rc, why);
    if (rc && explicit_) {
        core_error(m, rc, "embedding failed, keyword index updated: %s", why);
    } else if (rc) {
        buf_reset(&m->warn);
        m->warn.err = 0;
        buf_printf(&m->warn, "vectors incomplete (%s); keyword search works: %s", name, why);
        stats->embed_warning = m->warn.data;
        rc = MNEMO_OK;
    }
    buf_cleanup(&err);
    return rc ? rc : rc2;
}

int sync_run(mnemo *m, const sync_store *s, const mnemo_sync_opts *opts,
             mnemo_sync_stats *stats)
{
    mnemo_sync_stats local;
    if (!stats)
        stats = &local;
    double t0 = time_mono(), started = time_wall();
    int rc, again = 0;
    for (;;) {
        memset(stats, 0, sizeof *stats);
        core_clear(m);
        const sync_sink *sink;
        void *ud;
        if ((rc = s->begin(m, opts, again, stats, &sink, &ud)))
            break;
        int committed = 0;
        rc = sync_walk(m, sink, ud, opts, stats);
        if (!rc) {
            sync_record rec;
            time_format_iso(started, rec.when);
            snprintf(rec.ms, sizeof rec.ms, "%.1f", (time_mono() - t0) * 1000.0);
            char *js = sync_stats_json(stats);
            rec.json = js;
            rc = s->commit(ud, &rec);
            free(js);
            committed = !rc;
        }
        if (committed)
            rc = sync_vectors(m, s, ud, opts, stats);
        rc = s->end(ud, rc, committed);
        if (rc != SYNC_AGAIN)
            break;
        if (again) { /* a new index is never found damaged */
            rc = core_error(m, MNEMO_CORRUPT, "the new index is damaged");
            break;
        }
        again = 1;
    }
    stats->seconds = time_mono() - t0;
    return rc;
}

char *sync_stats_json(const mnemo_sync_stats *s)
{
    json_t *j = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b}", "filesSeen",
                          (json_int_t)s->files_seen, "filesAdded", (json_int_t)s->files_added,
                          "filesChanged", (json_int_t)s->files_changed, "filesTouched",
                          (json_int_t)s->files_touched, "filesUnchanged",
                          (json_int_t)s->files_unchanged, "filesRemoved",
                          (json_int_t)s->files_removed, "filesRenamed",
                          (json_int_t)s->files_renamed, "filesSkipped",
                          (json_int_t)s->files_skipped, "chunksAdded",
                          (json_int_t)s->chunks_added, "chunksRemoved",
                          (json_int_t)s->chunks_removed, "bytesRead", (json_int_t)s->bytes_read,
                          "rebuilt", s->rebuilt);
    char *js = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return js;
}

void sync_files_free(sync_file *f, size_t n)
{
    if (!f)
        return;
    for (size_t i = 0; i < n; i++) {
        free(f[i].path);
        free(f[i].reason);
    }
    free(f);
}
