/*
 * prep.c - read, hash, chunk and tokenize files on a worker thread (see
 * prep.h). The ring holds RING items; the worker fills slot i % RING once
 * the consumer has moved past it, the consumer takes slots in order. A
 * streamed note's second read runs in the consumer's thread, with state of
 * its own (one note is written at a time).
 */
#include "engine/prep.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mnemo.h"
#include "text/tok.h"
#include "text/transcript.h"
#include "text/media.h"
#include "util/utf8.h"

#define BOM "\xef\xbb\xbf"

#define RING 16

struct prep {
    const prep_input *in;
    size_t n;
    prep_opts o;
    tok *t;
    buf raw, text; /* worker scratch */
    transcript tr;
    prep_item items[RING];
    size_t window;
    /* The streamed note being written (prep_item_next, consumer's thread). */
    tok *ct; /* its tokenizer: p->t is the worker's */
    chunk_stream *cs;
    hash_stream *hs;
    buf win;   /* the bytes after its last whole line, then a window */
    buf fixed; /* the window's whole lines repaired, when not UTF-8 */
    size_t produced, consumed; /* items done by the worker / handed out */
    int stop;
    int threaded, started;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

/* Why a file is skipped for its size: of SIZE bytes, or grown past the
 * limit while read (SIZE < 0). */
static void too_large(char *out, size_t n, int64_t size, int64_t max_bytes)
{
    if (size < 0)
        snprintf(out, n, "too large (grew past %lld bytes)", (long long)max_bytes);
    else
        snprintf(out, n, "too large (%lld bytes, limit %lld)", (long long)size,
                 (long long)max_bytes);
}

int prep_skip_current(const char *reason, int64_t size, int64_t max_bytes)
{
    if (!reason || strncmp(reason, "too large", 9) != 0)
        return 1;
    char want[160];
    too_large(want, sizeof want, -1, max_bytes);
    if (strcmp(reason, want) == 0)
        return 1;
    too_large(want, sizeof want, size, max_bytes);
    return size > max_bytes && strcmp(reason, want) == 0;
}

/* Hashes FD to its end a window at a time (in p->raw), finding it binary
 * or too large as read_file does a file it reads whole. The same
 * statuses. */
static int scan_file(prep *p, int fd, int64_t max_bytes, prep_item *it)
{
    buf *b = &p->raw;
    hash_stream *h = hash_stream_new();
    if (!h || buf_reserve(b, p->window + 1)) {
        hash_stream_free(h);
        return MNEMO_NOMEM;
    }
    int rc = MNEMO_OK;
    uint64_t total = 0;
    for (;;) {
        ssize_t n = read(fd, b->data, p->window);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(it->reason, sizeof it->reason, "unreadable: %s", strerror(errno));
            rc = MNEMO_INVALID;
            break;
        }
        if (n == 0)
            break;
        total += (uint64_t)n;
        if (total > (uint64_t)max_bytes) {
            too_large(it->reason, sizeof it->reason, -1, max_bytes);
            rc = MNEMO_INVALID;
            break;
        }
        if (memchr(b->data, 0, (size_t)n)) {
            snprintf(it->reason, sizeof it->reason, "binary (contains NUL bytes)");
            rc = MNEMO_INVALID;
            break;
        }
        hash_stream_update(h, b->data, (size_t)n);
    }
    it->bytes = total;
    hash_stream_hex(h, it->hash);
    hash_stream_free(h);
    return rc;
}

/* Reads a file into p->raw, or for a note larger than a window (STREAM),
 * hashes it and keeps it open (it->fd) for prep_item_next. MNEMO_OK,
 * MNEMO_NOTFOUND (vanished), MNEMO_NOMEM, or MNEMO_INVALID with it->reason
 * set. */
static int read_file(prep *p, const char *abs, int64_t max_bytes, int binary, int stream,
                     prep_item *it)
{
    buf *b = &p->raw;
    buf_reset(b);
    b->err = 0;
    int fd = open(abs, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return MNEMO_NOTFOUND;
        if (errno == ELOOP)
            snprintf(it->reason, sizeof it->reason, "symlink (not followed)");
        else
            snprintf(it->reason, sizeof it->reason, "unreadable: %s", strerror(errno));
        return MNEMO_INVALID;
    }
    int rc = MNEMO_OK;
    if (fstat(fd, &it->st) != 0) {
        snprintf(it->reason, sizeof it->reason, "unreadable: %s", strerror(errno));
        rc = MNEMO_INVALID;
        goto done;
    }
    if (!S_ISREG(it->st.st_mode)) {
        snprintf(it->reason, sizeof it->reason, "not a regular file");
        rc = MNEMO_INVALID;
        goto done;
    }
    if (it->st.st_size > max_bytes) {
        too_large(it->reason, sizeof it->reason, it->st.st_size, max_bytes);
        rc = MNEMO_INVALID;
        goto done;
    }
    if (stream && (uint64_t)it->st.st_size > p->window) {
        it->streamed = 1;
        if ((rc = scan_file(p, fd, max_bytes, it)) == MNEMO_OK) {
            it->fd = fd; /* read again as it is written */
            fd = -1;
        }
        goto done;
    }
    if (buf_reserve(b, (size_t)it->st.st_size + 1)) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    for (;;) {
        if (b->len > (size_t)max_bytes) {
            too_large(it->reason, sizeof it->reason, -1, max_bytes);
            rc = MNEMO_INVALID;
            goto done;
        }
        if (b->cap - b->len < 4096 && buf_reserve(b, 65536)) {
            rc = MNEMO_NOMEM;
            goto done;
        }
        ssize_t n = read(fd, b->data + b->len, b->cap - b->len - 1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            snprintf(it->reason, sizeof it->reason, "unreadable: %s", strerror(errno));
            rc = MNEMO_INVALID;
            goto done;
        }
        if (n == 0)
            break;
        b->len += (size_t)n;
    }
    b->data[b->len] = 0;
    if (!binary && memchr(b->data, 0, b->len)) {
        snprintf(it->reason, sizeof it->reason, "binary (contains NUL bytes)");
        rc = MNEMO_INVALID;
    }
done:
    if (fd >= 0)
        close(fd);
    return rc;
}

/* For a transcript: maps chunk lines back to JSONL lines. */
static int map_lines(prep *p, prep_item *it)
{
    free(it->map_off);
    it->map_off = malloc((it->chunks.n + 1) * sizeof *it->map_off);
    if (!it->map_off)
        return MNEMO_NOMEM;
    buf_reset(&it->maps);
    it->maps.err = 0;
    for (size_t i = 0; i < it->chunks.n; i++) {
        chunk *c = &it->chunks.items[i];
        it->map_off[i] = it->maps.len / sizeof(uint32_t);
        for (int l = c->start_line; l <= c->end_line; l++) {
            uint32_t j = l >= 1 && (size_t)l <= p->tr.n ? p->tr.lines[l - 1] : 0;
            buf_append(&it->maps, &j, sizeof j);
        }
        c->start_line = (int)p->tr.lines[c->start_line - 1];
        c->end_line = (int)p->tr.lines[c->end_line - 1];
    }
    it->map_off[it->chunks.n] = it->maps.len / sizeof(uint32_t);
    return buf_err(&it->maps);
}

/* Tokenizes every chunk of IT with T into it->toks. */
static int tokenize(tok *t, prep_item *it)
{
    if (it->tok_cap < it->chunks.n + 1) {
        size_t cap = it->chunks.n + 1;
        size_t *v = realloc(it->tok_off, cap * sizeof *v);
        if (!v)
            return MNEMO_NOMEM;
        it->tok_off = v;
        it->tok_cap = cap;
    }
    buf_reset(&it->toks);
    it->toks.err = 0;
    for (size_t i = 0; i < it->chunks.n; i++) {
        const chunk *c = &it->chunks.items[i];
        it->tok_off[i] = it->toks.len;
        int rc = tok_pretokenize(t, chunk_text(&it->chunks, c), c->text_len, &it->toks);
        if (rc)
            return rc;
    }
    it->tok_off[it->chunks.n] = it->toks.len;
    return MNEMO_OK;
}

/* Chunks p->raw into it->chunks and tokenizes every chunk. */
static int chunk_and_tokenize(prep *p, const prep_input *in, prep_item *it)
{
    const char *s = p->raw.data ? p->raw.data : "";
    size_t n = p->raw.len;
    if (in->sessions) {
        int rc = transcript_flatten(s, n, &p->tr);
        if (rc)
            return rc;
        s = p->tr.text.data ? p->tr.text.data : "";
        n = p->tr.text.len;
        it->time = p->tr.last_time;
    }
    if (n >= 3 && memcmp(s, BOM, 3) == 0) {
        s += 3;
        n -= 3;
    }
    if (!utf8_valid(s, n)) {
        buf_reset(&p->text);
        p->text.err = 0;
        if (utf8_repair(&p->text, s, n))
            return buf_err(&p->text);
        s = p->text.data;
        n = p->text.len;
    }
    chunk_opts o = p->o.chunking;
    o.entries = in->entries;
    int rc = chunk_markdown(s, n, &o, &it->chunks);
    if (rc)
        return rc;
    if (in->sessions && (rc = map_lines(p, it)))
        return rc;
    if ((rc = tokenize(p->t, it)))
        return rc;
    it->chunked = 1;
    return MNEMO_OK;
}

/* An image or audio file in p->raw: admitted by what its bytes are, one
 * chunk of its label whose hash changes with its content. */
static int prepare_media(prep *p, const prep_input *in, prep_item *it)
{
    const char *mime = media_sniff(p->raw.data, p->raw.len);
    int modality = media_of_mime(mime);
    if (!modality) {
        snprintf(it->reason, sizeof it->reason,
                 "not an %s file: its content is no image or audio format mnemo knows",
                 media_name(in->media));
        return MNEMO_INVALID;
    }
    if (!(modality & p->o.media_allowed)) {
        snprintf(it->reason, sizeof it->reason,
                 "%s content (%s), and multimodal.modalities leaves out %s",
                 media_name(modality), mime, media_name(modality));
        return MNEMO_INVALID;
    }
    snprintf(it->mime, sizeof it->mime, "%s", mime);
    if (in->known_hash && strcmp(in->known_hash, it->hash) == 0)
        return MNEMO_OK;
    buf_reset(&p->text);
    p->text.err = 0;
    int rc = media_label(&p->text, modality, in->path);
    if (rc)
        return rc;
    char h[HASH_HEX_LEN + 1];
    buf_printf(&p->text, "\n%s", it->hash); /* hashed with the label, not stored */
    if ((rc = buf_err(&p->text)))
        return rc;
    hash_hex(p->text.data, p->text.len, h);
    p->text.len -= 1 + strlen(it->hash);
    if ((rc = chunk_single(&it->chunks, p->text.data, p->text.len, h)))
        return rc;
    if (it->tok_cap < 2) {
        size_t *v = realloc(it->tok_off, 2 * sizeof *v);
        if (!v)
            return MNEMO_NOMEM;
        it->tok_off = v;
        it->tok_cap = 2;
    }
    buf_reset(&it->toks);
    it->toks.err = 0;
    it->tok_off[0] = 0;
    if ((rc = tok_pretokenize(p->t, p->text.data, p->text.len, &it->toks)))
        return rc;
    it->tok_off[1] = it->toks.len;
    it->chunked = 1;
    return MNEMO_OK;
}

static void item_close(prep_item *it)
{
    if (it->fd >= 0)
        close(it->fd);
    it->fd = -1;
}

static void prepare(prep *p, size_t i, prep_item *it)
{
    const prep_input *in = &p->in[i];
    it->status = MNEMO_OK;
    it->reason[0] = 0;
    it->chunked = 0;
    it->bytes = 0;
    it->chunks.n = 0;
    it->first = 0;
    it->streamed = it->changed = 0;
    item_close(it);
    it->off = 0;
    it->given = it->eof = 0;
    it->maps.len = 0;
    it->time = 0;
    free(it->map_off);
    it->map_off = NULL;
    it->mime[0] = 0;
    /* Entry files gather an entry's annotations from its end, transcripts
     * are flattened whole: only other notes are streamed. */
    int stream = !in->media && !in->sessions && !in->entries;
    int rc = read_file(p, in->abs, in->media ? p->o.media_max_bytes : p->o.max_bytes,
                       in->media, stream, it);
    if (rc) {
        it->status = rc;
        item_close(it);
        return;
    }
    if (!it->streamed) {
        it->bytes = p->raw.len;
        hash_hex(p->raw.data ? p->raw.data : "", p->raw.len, it->hash);
    }
    if (in->media) {
        it->status = prepare_media(p, in, it);
        return;
    }
    if (in->known_hash && strcmp(in->known_hash, it->hash) == 0) {
        item_close(it);
        return; /* same content: nothing to chunk */
    }
    if (it->streamed)
        it->chunked = 1; /* chunked as it is written */
    else
        it->status = chunk_and_tokenize(p, in, it);
}

/* ----------------------------------------------------------------------
 * A streamed note, read again a window at a time as it is written
 * -------------------------------------------------------------------- */

/* Reads up to N bytes of IT's file at it->off into DST, to the end of the
 * file or N. The count, or -1 with it->reason set. */
static ssize_t read_again(prep_item *it, char *dst, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(it->fd, dst + got, n - got, (off_t)(it->off + (int64_t)got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            snprintf(it->reason, sizeof it->reason, "unreadable: %s", strerror(errno));
            return -1;
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

/* The next window of IT's file into the stream: its whole lines (all of
 * it at the end) repaired if not UTF-8, chunked; the bytes after the last
 * newline wait in p->win for the next window. A line longer than a window
 * is gathered whole. At the end, the hash of the bytes read again. */
static int stream_window(prep *p, prep_item *it)
{
    buf *w = &p->win;
    size_t carry = w->len;
    if (buf_reserve(w, p->window + 1))
        return MNEMO_NOMEM;
    char *in = w->data + carry;
    ssize_t got = read_again(it, in, p->window);
    if (got < 0)
        return MNEMO_IO;
    size_t n = (size_t)got;
    it->eof = n < p->window;
    int64_t max = p->o.max_bytes;
    if (it->off + (int64_t)n > max) { /* grew past the limit: its next sync skips it */
        n = (size_t)(max - it->off);
        it->eof = 1;
        it->changed = 1;
    }
    hash_stream_update(p->hs, in, n);
    if (memchr(in, 0, n))
        it->changed = 1; /* binary now: its next sync skips it */
    if (it->off == 0 && n >= 3 && memcmp(in, BOM, 3) == 0) {
        memmove(in, in + 3, n - 3);
        n -= 3;
    }
    it->off += got;
    w->len = carry + n;
    size_t upto = w->len;
    if (!it->eof) {
        const char *nl = memrchr(w->data, '\n', w->len);
        upto = nl ? (size_t)(nl - w->data) + 1 : 0;
    }
    int rc = MNEMO_OK;
    if (upto || it->eof) {
        const char *text = w->data ? w->data : "";
        size_t len = upto;
        if (!utf8_valid(text, len)) { /* whole lines: repaired as in the whole file */
            buf_reset(&p->fixed);
            p->fixed.err = 0;
            if (utf8_repair(&p->fixed, text, len))
                return buf_err(&p->fixed);
            text = p->fixed.data;
            len = p->fixed.len;
        }
        rc = chunk_stream_feed(p->cs, text, len, it->eof, &it->chunks);
    }
    memmove(w->data, w->data + upto, w->len - upto);
    w->len -= upto;
    if (!rc && it->eof) {
        char h[HASH_HEX_LEN + 1];
        hash_stream_hex(p->hs, h);
        if (strcmp(h, it->hash) != 0) {
            it->changed = 1; /* the bytes chunked are the ones hashed */
            memcpy(it->hash, h, sizeof h);
        }
        item_close(it);
    }
    return rc;
}

/* Starts reading IT's file again from its first byte. */
static int stream_start(prep *p, prep_item *it)
{
    int rc = MNEMO_OK;
    if (!p->ct && (rc = tok_new(p->o.language, 0, &p->ct)))
        return rc;
    chunk_stream_free(p->cs);
    p->cs = NULL;
    hash_stream_free(p->hs);
    p->hs = hash_stream_new();
    if (!p->hs)
        return MNEMO_NOMEM;
    chunk_opts o = p->o.chunking;
    o.entries = 0;
    if ((rc = chunk_stream_new(&o, &p->cs)))
        return rc;
    buf_reset(&p->win);
    p->win.err = 0;
    it->off = 0;
    return MNEMO_OK;
}

int prep_item_next(prep_item *it, int *more)
{
    *more = 0;
    if (!it->chunked)
        return MNEMO_OK;
    if (!it->streamed) {
        *more = !it->given;
        it->given = 1;
        return MNEMO_OK;
    }
    prep *p = it->owner;
    it->first += it->chunks.n;
    it->chunks.n = 0;
    buf_reset(&it->chunks.text);
    it->chunks.text.err = 0;
    int rc = MNEMO_OK;
    if (!it->given) {
        it->given = 1;
        rc = stream_start(p, it);
    }
    while (!rc && !it->chunks.n && !it->eof)
        rc = stream_window(p, it);
    if (!rc)
        rc = tokenize(p->ct, it);
    if (rc) {
        item_close(it);
        it->eof = 1;
        it->chunks.n = 0;
        return rc;
    }
    *more = it->chunks.n > 0;
    return MNEMO_OK;
}

static void *worker(void *arg)
{
    prep *p = arg;
    for (size_t i = 0; i < p->n; i++) {
        pthread_mutex_lock(&p->mu);
        /* The consumer holds item consumed - 1; slots of earlier items are free. */
        while (!p->stop && i + 1 - p->consumed >= RING)
            pthread_cond_wait(&p->cv, &p->mu);
        int stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break;
        prepare(p, i, &p->items[i % RING]);
        pthread_mutex_lock(&p->mu);
        p->produced = i + 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

int prep_start(prep **out, const prep_input *in, size_t n, const prep_opts *o)
{
    *out = NULL;
    prep *p = calloc(1, sizeof *p);
    if (!p)
        return MNEMO_NOMEM;
    p->in = in;
    p->n = n;
    p->o = *o;
    p->window = o->window ? o->window : PREP_WINDOW;
    if (p->window < 16)
        p->window = 16; /* a byte-order mark fits in the first */
    buf_init(&p->raw, (size_t)o->max_bytes + 131072);
    buf_init(&p->text, (size_t)o->max_bytes * 3 + 16);
    buf_init(&p->win, (size_t)o->max_bytes + p->window + 16);
    buf_init(&p->fixed, ((size_t)o->max_bytes + p->window) * 3 + 16);
    for (int i = 0; i < RING; i++) {
        chunk_list_init(&p->items[i].chunks);
        buf_init(&p->items[i].toks, 0);
        buf_init(&p->items[i].maps, 0);
        p->items[i].owner = p;
        p->items[i].fd = -1;
    }
    transcript_init(&p->tr);
    int rc = tok_new(o->language, 0, &p->t);
    if (rc) {
        prep_stop(p);
        return rc;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->threaded = o->threaded && n > 1;
    if (p->threaded) {
        if (pthread_create(&p->thread, NULL, worker, p) != 0)
            p->threaded = 0; /* fall back to preparing inline */
        else
            p->started = 1;
    }
    *out = p;
    return MNEMO_OK;
}

prep_item *prep_next(prep *p)
{
    if (p->consumed >= p->n)
        return NULL;
    size_t i = p->consumed;
    prep_item *it = &p->items[i % RING];
    if (!p->threaded) {
        prepare(p, i, it);
        p->consumed++;
        return it;
    }
    pthread_mutex_lock(&p->mu);
    /* Slot i - 1 is released now that the caller asks for item i. */
    while (p->produced <= i)
        pthread_cond_wait(&p->cv, &p->mu);
    p->consumed = i + 1;
    pthread_cond_broadcast(&p->cv); /* a slot came free */
    pthread_mutex_unlock(&p->mu);
    return it;
}

void prep_stop(prep *p)
{
    if (!p)
        return;
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->thread, NULL);
    }
    if (p->t) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
    }
    for (int i = 0; i < RING; i++) {
        item_close(&p->items[i]);
        chunk_list_cleanup(&p->items[i].chunks);
        buf_cleanup(&p->items[i].toks);
        free(p->items[i].tok_off);
        buf_cleanup(&p->items[i].maps);
        free(p->items[i].map_off);
    }
    transcript_cleanup(&p->tr);
    tok_free(p->t);
    tok_free(p->ct);
    chunk_stream_free(p->cs);
    hash_stream_free(p->hs);
    buf_cleanup(&p->raw);
    buf_cleanup(&p->text);
    buf_cleanup(&p->win);
    buf_cleanup(&p->fixed);
    free(p);
}
