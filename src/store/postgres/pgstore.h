/*
 * pgstore.h - the PostgreSQL backend for files and chunks: sync of the
 * memory files into mnemo_files / mnemo_chunks (tsvector from mnemo's own
 * tokenizer, GIN index; embeddings in mnemo_chunk_vec_<d>, HNSW), search
 * with the same legs and ranking as the SQLite index, get, status and the
 * recall triggers of the entry files. Contracts: the public functions of
 * the same names in mnemo.h.
 */
#ifndef MNEMO_PGSTORE_H
#define MNEMO_PGSTORE_H

#include "mnemo.h"

extern const struct sync_store pgsync_store; /* pgsync.c: the steps of a sync */
/* Note search's legs (pgsearch.c), run by the engine (search.h). */
extern const struct search_store pgsearch_notes;
int pgstore_get(mnemo *m, const char *path, int from, int lines, mnemo_excerpt *out);
int pgstore_status_json(mnemo *m, int deep, char **out);
int pgstore_index_count(mnemo *m, long long *files);
int pgstore_recall_triggers(mnemo *m, const char *message, char **out);

/* Frees the chunk-side state kept on the handle. */
void pgstore_close(mnemo *m);

#endif
