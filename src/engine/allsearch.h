/*
 * allsearch.h - one search over the notes and the stored facts, ranked on
 * one scale (allsearch.c): the typed core of mnemo_search_all_typed and
 * mnemo_search_all, and its hits (mnemo_hits in mnemo.h).
 */
#ifndef MNEMO_ALLSEARCH_H
#define MNEMO_ALLSEARCH_H

#include "engine/mrec.h"
#include "engine/results.h"
#include "mnemo.h"
#include "util/buf.h"

typedef struct all_hit {
    double score, when;
    size_t note;         /* the note's index in the notes' results, or */
    mnemo_memory *fact;  /* the fact, in the facts' set */
} all_hit;

struct mnemo_hits {
    all_hit *v;
    size_t n;
    mnemo_results *notes;   /* NULL when notes were not searched */
    mnemo_memories *facts;  /* NULL when facts were not searched or failed */
    int kinds;              /* MNEMO_KIND_NOTE | MNEMO_KIND_FACT */
    const char *mode;       /* static text or the notes' */
    char *warning;          /* NULL or owned */
};

/* Fills *FO, the options of the facts, when they are searched (after the
 * notes): MNEMO_INVALID with the message on M refuses them. */
typedef int (*all_facts_fn)(mnemo *m, void *ud, mnemo_memory_opts *fo);

/* The search for TEXT with options O (NULL: the defaults; the notes'
 * max_results <= 0: the configuration's; the facts' limit is it, their
 * min_score the notes', also a bar on a fact's score on the one scale
 * when not negative) into *OUT; the facts' options from FN when not NULL
 * (which sets their min_score itself). */
int allsearch_run(mnemo *m, const char *text, const mnemo_search_all_opts *o, all_facts_fn fn,
                  void *ud, mnemo_hits **out);

/* O's defaults (mnemo_search_all_opts_init); frees H (accepts NULL). */
void allsearch_opts_defaults(mnemo_search_all_opts *o);
void allsearch_free(mnemo_hits *h);

/* H as the JSON of mnemo_search_all, appended to B. */
void allsearch_json(buf *b, const mnemo_hits *h);

#endif
