/*
 * recall.h - the trigger recall block of the entry files (recall.c),
 * shared by both storage backends: each reads its entries, recall_block
 * scores and formats them.
 */
#ifndef MNEMO_RECALL_H
#define MNEMO_RECALL_H

#include <stdint.h>

#include "mnemo.h"
#include "text/tok.h"

/* One chunk of an entry file that has triggers. Borrowed until the next
 * call of the iterator. */
typedef struct recall_entry {
    int64_t id;
    const char *text, *triggers, *path;
    int line, importance;
} recall_entry;

/* Fills *E with the next entry (in id order): 1, 0 after the last, or a
 * negated MNEMO_* error. */
typedef int (*recall_next_fn)(void *ud, recall_entry *e);

/* The recall block for MESSAGE (see mnemo_recall_triggers) from the
 * entries NEXT yields, tokenized with T. *OUT is freed by the caller. */
int recall_block(mnemo *m, tok *t, const char *message, recall_next_fn next, void *ud,
                 char **out);

#endif
