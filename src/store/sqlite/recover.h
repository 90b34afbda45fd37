/*
 * recover.h - salvaging structured memories from a damaged or old file:
 * a memory store, or an index that kept its memories in itself (schema 5).
 */
#ifndef MNEMO_RECOVER_H
#define MNEMO_RECOVER_H

#include <sqlite3.h>

#include "util/buf.h"

typedef struct salvage_report {
    int found;              /* the file has memories: a table SQLite reads, or rows */
    long recovered;         /* memories written to the store */
    long present;           /* already there (same id, or the same text and scope) */
    long repaired;          /* memories with text that was not UTF-8, or cut short */
    long unreadable_reads;  /* damaged places skipped (each may hide rows): pages of
                               no known kind or cut off, rows that do not decode */
    long history;           /* history events copied */
    long history_lost;      /* memories whose history could not be read whole */
    int page_scan;          /* the file was read page by page too (it is pages) */
} salvage_report;

/* Reads every memory of PATH that can be read into the memory store
 * attached to DST as "mem" (inside the caller's transaction): first row by
 * row through SQLite, then from every page of the file that is not on its
 * freelist (rows SQLite's tree does not reach); new ids are added once,
 * memories already there are left alone, vectors are not copied (they are
 * recomputed). Returns an SQLite code: SQLITE_OK, SQLITE_NOTFOUND when
 * PATH holds no memories (R->found 0), else the failure with ERR saying
 * what. */
int salvage_memories(const char *path, sqlite3 *dst, salvage_report *r, buf *err);

#endif
