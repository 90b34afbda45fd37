/*
 * pull.h - downloading a model folder from a Hugging Face hub (or a
 * server that answers like one) into the models folder.
 *
 *   GET {endpoint}/api/models/{repo}/revision/{rev}?blobs=true
 *       the commit ("sha") and the files ("siblings": rfilename, size,
 *       blobId = git blob SHA-1, lfs.sha256 and lfs.size for large files);
 *   GET {endpoint}/{repo}/resolve/{commit}/{file}
 *       the file, often by a redirect to a CDN; resumed with Range.
 *
 * Only the files the encoder reads are fetched (bert_model_files()). Each
 * goes to STAGING/FILE.part, is checked against the listed size and
 * checksum (SHA-256 for LFS files, the git blob SHA-1 for others), then
 * renamed; a download cut short resumes from where it stopped on the next
 * call, and one for another commit starts again. When all are there the
 * folder is installed into DST (bert_install) and STAGING removed.
 */
#ifndef MNEMO_PULL_H
#define MNEMO_PULL_H

#include <stdint.h>

#include "util/buf.h"

/* Called while downloading: FILE, bytes of it so far and its size. */
typedef void (*pull_progress_fn)(void *ud, const char *file, uint64_t done, uint64_t total);

typedef struct pull_opts {
    const char *endpoint; /* "https://huggingface.co" */
    const char *repo;     /* "owner/name" */
    const char *revision; /* a branch, tag or commit; "main" when NULL */
    const char *token;    /* a bearer token, or NULL (never written anywhere) */
    pull_progress_fn progress;
    void *ud;
} pull_opts;

/* MNEMO_NOTFOUND for a repository or revision the hub does not have (or
 * that lacks the files an encoder needs), MNEMO_UNAVAILABLE when the hub
 * cannot be reached or refuses, MNEMO_CORRUPT for a file whose checksum
 * does not match, MNEMO_INVALID for a bad name; the message in ERR.
 * *COMMIT receives the commit (41 bytes). */
int hub_pull(const pull_opts *o, const char *staging, const char *dst, int *dims, char *commit,
             buf *err);

#endif
