/*
 * walk.h - the memory roots of a workspace and the scan that lists the
 * files inside them.
 *
 * Roots: MEMORY.md and USER.md (also memory.md, user.md) at the workspace
 * root, every .md file under memory/, and configured extra paths (a file, or
 * a folder with a glob pattern, by default all .md files). Symlinks are never followed; hidden
 * entries, .git and node_modules are skipped; a file reached twice (hard
 * links, overlapping roots) is listed once.
 */
#ifndef MNEMO_WALK_H
#define MNEMO_WALK_H

#include <stdint.h>
#include <sys/types.h>

#include "util/buf.h"

typedef struct walk_root {
    char *abs;     /* absolute path of the file or folder */
    char *display; /* prefix used in stored paths: relative to the workspace, or absolute */
    char *pattern; /* folders: glob for relative paths; files: NULL */
    int is_dir;
    int sessions;  /* a folder of JSONL session transcripts */
    int media;     /* extra paths: the modalities (text/media.h) listed beside the pattern */
} walk_root;

typedef struct walk_roots {
    walk_root *v;
    size_t n;
} walk_roots;

typedef struct walk_entry {
    char *path;        /* stored path: relative to the workspace or absolute */
    int64_t size;
    int64_t mtime_ns;
    dev_t dev;
    ino_t ino;
    int entries;       /* MEMORY.md / USER.md: entry-mode chunking */
    int sessions;      /* a session transcript */
    int media;         /* an image or audio file by its name (MEDIA_*), 0 for notes */
    const char *skip;  /* NULL, or why the file is not indexed (static text) */
} walk_entry;

typedef struct walk_list {
    walk_entry *v;
    size_t n, cap;
} walk_list;

/* Builds the roots of WORKSPACE (absolute) with EXTRA_JSON (the extraPaths
 * value) and, if SESSIONS_DIR is not NULL, that folder of transcripts (all
 * .jsonl files; Claude Code's subagents/ folders left out). MEDIA: the
 * modalities (MEDIA_IMAGE | MEDIA_AUDIO) whose files the extra paths list
 * too, 0 for none (multimodal off). */
int walk_roots_build(const char *workspace, const char *extra_json, const char *sessions_dir,
                     int media, walk_roots *out, buf *err);
void walk_roots_cleanup(walk_roots *r);

/* 1 when NAME is one of the root files the index walks by default
 * (MEMORY.md, USER.md and their lowercase forms), else 0. */
int walk_is_root_file(const char *name);

/* Lists the files under ROOTS, sorted by path. */
int walk_scan(const char *workspace, const walk_roots *roots, walk_list *out);
void walk_list_cleanup(walk_list *l);

/* Absolute path of a stored path. Caller frees. */
char *walk_abs(const char *workspace, const char *path);

/* The bytes of the media file at stored PATH into OUT (initialised here;
 * the caller cleans it up), as the sync found them: MNEMO_OK when it is a
 * regular file of at most MAX_BYTES whose content hashes to HASH,
 * MNEMO_NOTFOUND when it is gone, changed or too large now (the next sync
 * looks at it again), MNEMO_NOMEM. */
int walk_media_read(const char *workspace, const char *path, int64_t max_bytes, const char *hash,
                    buf *out);

/* Returns the root ABS_REAL (a realpath) falls in, or NULL. */
const walk_root *walk_root_of(const walk_roots *roots, const char *abs_real);

#endif
