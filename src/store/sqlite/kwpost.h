/*
 * kwpost.h - the chunks' postings beside FTS5's, in blocks that carry score
 * bounds, for top-k keyword search (engine/blockmax.h).
 *
 * FTS5's posting lists cannot be skipped by score, so the index also keeps
 * its own: per term, blocks of up to KWPOST_BLOCK postings (chunk id,
 * frequency, the chunk's length in tokens, as FTS5 counts them), each with
 * its id range, size and bound. A sync writes a term's new blocks as one
 * segment (kw_seg: a row per term, id range and write): the blocks'
 * directory, then their postings, decoded only when a row in the block
 * may reach the results.
 *
 * Per id range (memory, sessions, media: STORE_*_ID_BASE) a mark says
 * which chunks the postings hold: those at or below it. Chunks above it
 * are searched through FTS5 as before (a search reads both), so the
 * postings never disagree with the chunks: a sync adds the chunks it
 * writes (kwpost_add) and writes them as blocks with the mark moved, in
 * its transaction (kwpost_flush); chunks a killed sync wrote are read back
 * by the next. A chunk deleted at or below the mark is recorded gone under
 * each of its terms (kw_dead): searches leave it out and do not count it.
 * Ids at or below a mark are never given again.
 */
#ifndef MNEMO_KWPOST_H
#define MNEMO_KWPOST_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/blockmax.h"
#include "text/tok.h"
#include "util/buf.h"

#define KWPOST_BLOCK 128
#define KWPOST_RANGES 3

/* The tables (schema 10). */
#define KWPOST_SCHEMA                                                                    \
    "CREATE TABLE IF NOT EXISTS kw_seg(term TEXT NOT NULL, last INTEGER NOT NULL,\n"      \
    "  n INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY(term, last)) WITHOUT ROWID;\n" \
    "CREATE TABLE IF NOT EXISTS kw_dead(term TEXT NOT NULL, id INTEGER NOT NULL,\n"       \
    "  PRIMARY KEY(term, id)) WITHOUT ROWID;\n"                                          \
    "CREATE TABLE IF NOT EXISTS kw_mark(range INTEGER PRIMARY KEY, mark INTEGER NOT NULL);\n"

/* The id range of chunk ID: 0 memory, 1 sessions, 2 media. */
int kwpost_range(int64_t id);

/* The marks of DB's database SCHEMA into MARK (a range's first id minus one when its
 * postings hold nothing). MNEMO_NOTFOUND when DB has no postings at all
 * (an index from before them). */
int kwpost_marks(sqlite3 *db, const char *schema, int64_t mark[KWPOST_RANGES]);

typedef struct kwpost kwpost;

/* The texts a writer reads back (kwpost_open's SOURCE): the chunks, the
 * memories (deleted ones are not indexed). Rows (id, text) with ids in
 * (?1, ?2), by id. */
#define KWPOST_CHUNKS "SELECT id, text FROM chunks WHERE id > ?1 AND id < ?2 ORDER BY id"
#define KWPOST_MEMORIES                                                                        \
    "SELECT mid, text, " KWPOST_MEMORY_KEY " FROM mem.memories "                               \
    "WHERE mid > ?1 AND mid < ?2 AND deleted_at IS NULL AND " KWPOST_MEMORY_KEYED " ORDER BY mid"

/* A memory's key: its user, agent, type and session (run), each followed
 * by 0x1f; its words' postings are kept under it, as memory search counts
 * words in its scope. A memory whose key would be longer is not in the
 * postings (searches read it from its row: memlite.c records it moved). */
#define KWPOST_MEMORY_KEY                                                                      \
    "user_id || char(31) || agent_id || char(31) || type || char(31) || run_id || char(31)"
#define KWPOST_MEMORY_KEYED                                                                    \
    "length(CAST(user_id AS BLOB)) + length(CAST(agent_id AS BLOB)) + "                        \
    "length(CAST(run_id AS BLOB)) <= 560"
#define KWPOST_MEMORY_KEY_MAX 560 /* user, agent and run, in bytes */

/* A third column of SOURCE, when there is one, keys the row's terms: its
 * value, then the word. At most this long. */
#define KWPOST_PREFIX_MAX 600

/* A writer of postings on the tables of DB's database SCHEMA (strings
 * that outlive it), reading texts back with SOURCE and tokenizing them in
 * LANGUAGE. MNEMO_OK, MNEMO_NOMEM or MNEMO_NOTFOUND (no postings tables). */
int kwpost_open(sqlite3 *db, const char *schema, const char *source, const char *language,
                kwpost **out);
void kwpost_free(kwpost *k);

/* Chunk ID (just inserted) with TEXT, or its pre-tokenized form TOKS
 * (tok.h) when not NULL. */
int kwpost_add(kwpost *k, int64_t id, const char *text, size_t len, const char *toks,
               size_t toks_len);

/* Reads back the texts above the marks with ids below BELOW, for the next
 * flush (which then reads no more): a large catch-up in steps, each
 * flushed, keeps memory bounded. */
int kwpost_read_back(kwpost *k, int64_t below);

/* The frequencies in TEXT of TERMS[0..NT) (TF, saturating at 255) and its
 * length (*DL), as the postings (and FTS5) count them, tokenized with T. */
int kwpost_count(tok *t, const char *text, size_t len, const char *const *terms, int nt,
                 uint8_t *tf, int32_t *dl);

/* Chunk ID with TEXT (its terms keyed under PREFIX, or NULL) is being
 * deleted. */
int kwpost_remove(kwpost *k, int64_t id, const char *text, size_t len, const char *prefix);

/* The smallest id a new chunk of RANGE may have (above the mark). */
int64_t kwpost_floor(kwpost *k, int range);

/* Whether enough postings wait to be written now (kwpost_flush_full). */
int kwpost_full(const kwpost *k);

/* Writes what waits as blocks and moves the marks, in the caller's
 * transaction; chunks above a mark this writer did not see are read back
 * first. */
int kwpost_flush(kwpost *k);

/* kwpost_flush once kwpost_full, in the middle of a sync. */
int kwpost_flush_full(kwpost *k);

/* For an index nobody reads before its sync commits (a fresh build, at
 * PATH, a string that outlives K): kwpost_flush_full encodes what waits
 * as a run of segments in term order, appended to a file beside PATH
 * (removed once open), and moves the marks in memory only; kwpost_flush
 * merges the runs into the table before it writes. The table gets the
 * same rows, written in one pass in its order instead of being swept once
 * per flush. A flush small enough to fold segments (which reads the
 * table) merges the runs and writes as without deferring. */
void kwpost_defer(kwpost *k, const char *path);

/* ----------------------------------------------------------------------
 * Reading: a query's terms over ids [lo, hi), for blockmax_run.
 * -------------------------------------------------------------------- */

typedef struct kwread_term {
    char *term;
    size_t nblocks, cap;
    int64_t *first, *last;
    blockmax_bound *bound;
    double *ub;
    const unsigned char **data; /* per block: its postings, in a segment kept */
    uint32_t *dlen, *n;
    unsigned char **segs; /* the segments' copies */
    size_t nsegs;
    /* the block read last */
    int64_t *id;
    uint8_t *tf;
    int32_t *dl;
    size_t ncap;
} kwread_term;

typedef struct kwread {
    sqlite3 *db;
    int nt;
    kwread_term t[BM25_MAX_PHRASES];
    int64_t *gone; /* the dead ids of the terms, sorted */
    size_t ngone, capgone;
    int damaged;
} kwread;

/* Reads the blocks of TERMS[0..NT) (phrase i has term i) with ids in [LO,
 * HI) and their dead ids; DF[i] gets term i's live postings there.
 * MNEMO_CORRUPT when a block is damaged. */
int kwread_load(kwread *r, sqlite3 *db, const char *schema, const char *const *terms, int nt,
                int64_t lo, int64_t hi, int64_t *df);

/* The blockmax_query callbacks over R (ud = R). */
int kwread_block(void *ud, const blockmax_term *t, size_t b, blockmax_posts *out);
int kwread_gone(void *ud, int64_t id);

void kwread_cleanup(kwread *r);

#endif
