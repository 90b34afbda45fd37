/*
 * pgmem.h - the PostgreSQL backend for structured memories: records with
 * JSONB metadata in mnemo_memories, their history in mnemo_memory_history,
 * vectors in mnemo_memory_vec_<d>; the filter language compiled to
 * PostgreSQL with parameters only. Contracts: the public functions of the
 * same names in mnemo.h.
 */
#ifndef MNEMO_PGMEM_H
#define MNEMO_PGMEM_H

#include "mnemo.h"

int pgmem_add(mnemo *m, const char *record, char **out);
int pgmem_update(mnemo *m, const char *id, const char *changes, char **out);
int pgmem_delete(mnemo *m, const char *id);
int pgmem_purge(mnemo *m, const char *id, size_t *purged);
int pgmem_get(mnemo *m, const char *id, char **out);
int pgmem_confirm(mnemo *m, const char *id, char **out);
int pgmem_history(mnemo *m, const char *id, char **out);
int pgmem_list(mnemo *m, const char *options, char **out);
int pgmem_search(mnemo *m, const char *query, const char *options, char **out);
int pgmem_recall(mnemo *m, const char *options, char **out);
int pgmem_export(mnemo *m, mnemo_write_fn write, void *ud, size_t *count);
int pgmem_import(mnemo *m, const char *jsonl, size_t len, size_t *imported, size_t *skipped);

/* Frees the memory-side state kept on the handle. */
void pgmem_close(mnemo *m);

#endif
