/*
 * pgmaxscore.h - MaxScore over PostgreSQL's GIN index, one driver for the
 * note chunks (pgkeyword.c) and the memories (pgmsearch.c).
 *
 * The caller orders the query's terms (rarest first) and bounds each one's
 * share of a row's score. Rounds read rows through tsqueries: the first
 * round the first terms, each next round the next terms less the rows read
 * already (or, with a full pool, the rows holding a set of unread terms
 * whose bounds may still reach the threshold), until no unread row can
 * reach the results: they are then exactly those of reading every match.
 * What a row scores, what "full" means and what may reach the threshold
 * stay with the caller.
 */
#ifndef MNEMO_PGMAXSCORE_H
#define MNEMO_PGMAXSCORE_H

#include "engine/core.h"

#define PGMS_MAX_TERMS 64

typedef struct pgms {
    int n;                            /* terms, in reading order */
    const char *lex[PGMS_MAX_TERMS];  /* each term's lexeme */
    double ub[PGMS_MAX_TERMS];        /* each term's most to a row's score */
    int first;                        /* terms the first round reads, at least 1 */
    int sets;                         /* whether a round may read sets of unread terms */
    int advance;                      /* whether a round reads as many terms as the threshold needs */
    const char *tail;                 /* tsquery text appended to every round, "" for none */
    /* Reads the rows matching tsquery TSQ; ROUND counts from 0. */
    int (*read)(void *ud, const char *tsq, int round);
    /* Whether the pool is full, its threshold into *THETA. */
    int (*full)(void *ud, double *theta);
    /* Whether a row whose terms' bounds sum to BOUND may reach THETA. */
    int (*reach)(void *ud, double theta, double bound);
    void *ud;
} pgms;

/* Runs the rounds of MS (read's errors are returned). */
int pgmaxscore_run(mnemo *m, const pgms *ms);

#endif
