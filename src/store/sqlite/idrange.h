/*
 * idrange.h - the chunk id ranges of the SQLite index: memory chunks below
 * STORE_SESSION_ID_BASE, transcript chunks from there, media (images and
 * audio under the extra paths) from STORE_MEDIA_ID_BASE up, so that one
 * corpus, and the media, are a rowid range.
 */
#ifndef MNEMO_IDRANGE_H
#define MNEMO_IDRANGE_H

#include <stdint.h>

#define STORE_SESSION_ID_BASE ((int64_t)1 << 40)
#define STORE_MEDIA_ID_BASE ((int64_t)1 << 41)

#endif
