/*
 * calib.h - what a vector score means: how far a cosine stands out from
 * what unrelated text scores for the same query.
 *
 * Models differ in where unrelated texts sit (all-MiniLM-L6-v2 near 0.05,
 * multilingual-e5 near 0.75, averaged word vectors near 0.8) and in how
 * spread they are, so a cosine means nothing until it is measured against
 * the model's own unrelated texts. Two samples of them are at hand for
 * every query: the vectors searched (the workspace's entries or the
 * memories in scope: mostly about something else, and about what this
 * workspace is about) and CALIB_NTEXTS fixed everyday sentences on every
 * topic and in several languages, embedded once per embedding setup
 * (at index time, calib_texts). A cosine's z is its distance from the
 * mixture of the two in standard deviations, the fixed texts weighing as
 * PRIOR of the vectors searched (the caller's: about 200 notes' entries,
 * 300 memories): a workspace of 8 notes is measured by the model's texts, a
 * large one by itself (the fixed texts keep a query that is about
 * everything in a small workspace from raising the bar; a large workspace
 * knows its own domain, where everyday sentences sit lower). The candidate
 * itself is left out of the workspace's sample.
 */
#ifndef MNEMO_CALIB_H
#define MNEMO_CALIB_H

#include <stddef.h>

#define CALIB_NTEXTS 149
#define CALIB_VERSION 1 /* of calib_texts: another version is embedded again */

/* The fixed texts, embedded as documents. */
extern const char *const calib_texts[CALIB_NTEXTS];

/* A query's cosines with the vectors searched (MEAN, SD over N of them)
 * and with the fixed texts (REF_MEAN, REF_SD over REF_N; REF_N 0 when the
 * index has none). */
typedef struct calib_null {
    double mean, sd;
    size_t n;
    double ref_mean, ref_sd;
    size_t ref_n;
} calib_null;

/* Keeps the distinct vectors of REFS[N * DIMS] that are not zero (a text a
 * static table knows no word of), in order, at its start; returns how
 * many. */
size_t calib_distinct(float *refs, size_t n, int dims);

/* The fixed texts' part of NL from the query's cosines with them,
 * CS[0..N) (reordered): their mean and spread, leaving out those more
 * than CALIB_CLIP robust deviations above their median (a text about what
 * the query asks). */
#define CALIB_CLIP 4.0
void calib_ref_cosines(calib_null *nl, double *cs, size_t n);

/* The same from the vectors REFS[REF_N * DIMS] (any length;
 * calib_distinct's) and query vector Q. MNEMO_OK or MNEMO_NOMEM. */
int calib_ref(calib_null *nl, const float *refs, size_t ref_n, const float *q, int dims);

/* How many standard deviations cosine CS of a candidate stands out from
 * the mixture (see above), the fixed texts weighing as PRIOR of the vectors
 * searched, into *Z: 1. With fewer than CALIB_MIN values to measure a
 * spread by (a workspace of a few notes and a static table that knows few
 * of the fixed texts' words), 0, and *REST is the mean of the others'
 * cosines, for the caller's rule for so few. */
#define CALIB_MIN 8
int calib_z(const calib_null *nl, double cs, double prior, double *z, double *rest);

/* ----------------------------------------------------------------------
 * The vector scores' constants. Notes and memories are measured on the same
 * z (calib_z) but scored by their own rules, so each search has its own
 * values (docs/semantic.md for notes, docs/memories.md for memories).
 * -------------------------------------------------------------------- */

/* Note search (search.c): v = (z - FLOOR) / SPAN, clamped to 0..1. FLOOR:
 * meaning counts from 2.5 deviations above unrelated text (an off-topic
 * query's best of 2,000 entries stands 3 to 4 out, a paraphrase 4.4 and
 * more); notes rank and threshold on this one floor (ranking with z - 1
 * cost SciFact 0.008 nDCG@10 with GloVe). SPAN: v reaches 1 at z 5.5. */
#define CALIB_NOTE_Z_FLOOR 2.5
#define CALIB_NOTE_Z_SPAN 3.0
/* Note search: the index size (vectors) FLOOR and SPAN were set at. In a
 * larger index a vector-only hit's threshold gate lowers z by
 * sqrt(2 ln N) - sqrt(2 ln ROWS): the best of more unrelated entries
 * stands further out by chance. */
#define CALIB_NOTE_Z_ROWS 500.0
/* Note search: the fixed texts weigh as this many of the index's vectors
 * (about 200 notes' entries): a small workspace is measured by them, a
 * large one mostly by itself. */
#define CALIB_NOTE_PRIOR 2000.0

/* Memory search (msearch.c): meaning counts twice. Thresholds ask for a
 * clear match, (z - FLOOR) / SPAN, FLOOR as notes'; ranking counts related
 * meaning, (z - RANK) / SPAN (on LoCoMo it took R@10 from 0.763 to 0.774
 * with GloVe). SPAN is wider than notes': a memory found by meaning alone
 * passes the default threshold only from about four deviations up. */
#define CALIB_MEM_Z_FLOOR 2.5
#define CALIB_MEM_Z_RANK 1.0
#define CALIB_MEM_Z_SPAN 4.0
/* Memory search: the fixed texts weigh as this many memories, so a
 * handful of memories is measured by the model's texts. */
#define CALIB_MEM_PRIOR 300.0
/* Memory search with too few values for a spread (calib_z returns 0): the
 * memories' mean cosine (one memory is its own mean, no baseline) is
 * shrunk towards PRIOR_COS, a cosine of unrelated text, worth PRIOR_ROWS
 * memories. */
#define CALIB_MEM_PRIOR_COS 0.3
#define CALIB_MEM_PRIOR_ROWS 8.0

#endif
