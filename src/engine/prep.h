/*
 * prep.h - the file preparation pipeline of a sync.
 *
 * A worker thread reads each file that must be (re)indexed, hashes it,
 * chunks it and tokenizes the chunks, while the sync's thread writes the
 * previous files to SQLite. Items come back in input order through a small
 * ring of slots, so memory stays bounded. The pre-tokenized chunks are fed
 * to the FTS5 tokenizer at insert time (fts_feed), so tokenizing and
 * stemming, the larger half of indexing work, run on the second core.
 *
 * A note larger than a window (PREP_WINDOW) is never held whole: the
 * worker reads it once to hash it (and to find it binary, too large or
 * unchanged, as any file), and its chunks come as it is written, a window
 * at a time, from a second read (prep_item_next): the same chunks as the
 * whole file gives, while memory holds a window, its chunks and tokens.
 */
#ifndef MNEMO_PREP_H
#define MNEMO_PREP_H

#include <stdint.h>
#include <sys/stat.h>

#include "text/chunk.h"
#include "util/buf.h"
#include "util/hash.h"

/* The version of the rules that turn files into stored chunks and tokens
 * (chunker, tokenizer, transcript flattening). An index built under other
 * rules is rebuilt, as for a changed chunk size. */
#define PREP_INDEX_RULES "1"

typedef struct prep_input {
    char *abs;              /* absolute path, owned by the caller */
    int entries;            /* entry-mode chunking */
    int sessions;           /* a JSONL transcript: flattened first, line maps kept */
    const char *known_hash; /* content hash in the index, or NULL: equal content is not chunked */
    int media;              /* an image or audio file by its name: sniffed, one labelled chunk */
    const char *path;       /* media: the stored path its label names */
} prep_input;

/* Whether REASON, why a file of SIZE bytes was skipped, still holds with
 * the file limit MAX_BYTES: only "too large" depends on a setting, and it
 * names the limit; 0 when the limit moved (the file must be looked at
 * again, as a new one would be). */
int prep_skip_current(const char *reason, int64_t size, int64_t max_bytes);

/* The window a large note is read in: 4 MiB. */
#define PREP_WINDOW ((size_t)4 << 20)

typedef struct prep_opts {
    chunk_opts chunking;
    int64_t max_bytes;
    size_t window; /* a note larger than this is streamed in windows this large; 0: PREP_WINDOW */
    const char *language;
    int threaded; /* 0: prepare each item on demand in the caller's thread */
    int64_t media_max_bytes; /* multimodal.maxFileBytes */
    int media_allowed;       /* the modalities multimodal admits (MEDIA_*) */
} prep_opts;

typedef struct prep prep;

typedef struct prep_item {
    int status;        /* MNEMO_OK; MNEMO_NOTFOUND: vanished; MNEMO_INVALID: skip (reason) */
    char reason[160];
    struct stat st;
    uint64_t bytes;
    char hash[HASH_HEX_LEN + 1];
    int chunked;       /* content to chunk: its chunks come from prep_item_next */
    chunk_list chunks;
    buf toks;          /* pre-tokenized chunks, see tok_pretokenize() */
    size_t *tok_off;   /* chunks.n + 1 offsets into toks */
    size_t tok_cap;
    size_t first;      /* the place in the file of chunks.items[0] */
    int streamed;      /* a large note: its chunks come a window at a time */
    int changed;       /* streamed: the second read found other bytes (hash is theirs) */
    /* Transcripts: per chunk, the JSONL line of each of its text lines
     * (u32), chunk i at maps[map_off[i]] .. maps[map_off[i + 1]]. The
     * chunks' start_line/end_line are JSONL lines. */
    buf maps;
    size_t *map_off;
    double time;       /* transcripts: newest message, Unix seconds */
    char mime[32];     /* media: the type its content sniffed as */
    /* prep's own: a streamed note's reading */
    prep *owner;
    int fd;            /* the file, open since the worker read it; -1 */
    int64_t off;       /* bytes read again so far */
    int given, eof;
} prep_item;

/* Starts preparing IN[0..N) (borrowed until prep_stop). MNEMO_NOMEM or
 * MNEMO_INVALID (unknown language). */
int prep_start(prep **out, const prep_input *in, size_t n, const prep_opts *o);

/* The next item in input order, or NULL after the last. An item with
 * status MNEMO_NOMEM means the worker ran out of memory. The item is valid
 * until the next call. */
prep_item *prep_next(prep *p);

/* The next run of IT's chunks (it->chunked), in the caller's thread: fills
 * it->chunks, toks, tok_off and first, and sets *MORE, 0 once every chunk
 * was given. A file read whole is one run; a streamed note reads its next
 * window. After the last run, it->hash is the hash of the bytes chunked:
 * if the file changed since the worker read it, the new bytes' (and
 * it->changed is set). MNEMO_NOMEM, or MNEMO_IO with it->reason (the file
 * could not be read again). */
int prep_item_next(prep_item *it, int *more);

/* Stops the worker (if still running) and frees everything. Accepts NULL. */
void prep_stop(prep *p);

#endif
