/*
 * pgmem.h - the PostgreSQL backend for structured memories: records with
 * JSONB metadata in mnemo_memories, their history in mnemo_memory_history,
 * vectors in mnemo_memory_vec_<d>; the filter language compiled to
 * PostgreSQL with parameters only. The engine runs the memory operations over
 * the steps below; export and import are the backend's own.
 */
#ifndef MNEMO_PGMEM_H
#define MNEMO_PGMEM_H

#include "engine/memory.h"
#include "mnemo.h"

/* The storage steps of the memory operations (pgmwrite.c, pgmem.c) and
 * memory search's legs (pgmsearch.c), run by the engine (memory.h). */
extern const mem_store pgmwrite_store;
extern const mem_searcher pgmsearch_searcher;


/* Frees the memory-side state kept on the handle. */
void pgmem_close(mnemo *m);

#endif
