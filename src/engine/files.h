/*
 * files.h - the files the index holds (mnemo_files): each backend lists its
 * rows into a file_list (backend_ops.files), the engine reads the options,
 * tells each file's kind and writes the JSON, the same for every store.
 */
#ifndef MNEMO_FILES_H
#define MNEMO_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "mnemo.h"

/* One indexed file, as its row says. */
typedef struct file_row {
    char *path;       /* as citations show it */
    int session;      /* source "sessions": a transcript */
    int media;        /* an image or audio file (a MIME type stored) */
    long long size;   /* bytes, when indexed */
    int64_t mtime_ns; /* modification time, when indexed */
    long long chunks;
} file_row;

/* What a backend's list fills: at most LIMIT + 1 rows by path (bytes),
 * so that one more than asked says the list was cut; INDEXED 0 when there
 * is no index yet (no rows). */
typedef struct file_list {
    file_row *v;
    size_t n, cap;
    int indexed;
} file_list;

/* Adds a row (PATH copied): MNEMO_OK or MNEMO_NOMEM. */
int file_list_add(file_list *l, const char *path, int session, int media, long long size,
                  int64_t mtime_ns, long long chunks);
void file_list_cleanup(file_list *l);

/* A backend's listing (backend_ops.files): the indexed files of M, in
 * order of path, at most LIMIT + 1 of them. */
typedef int (*files_fn)(mnemo *m, size_t limit, file_list *out);

/* The contract of mnemo_files, over the backend's LIST. */
int files_json(mnemo *m, const char *options, files_fn list, char **out);

#endif
