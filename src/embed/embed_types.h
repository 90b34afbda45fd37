/*
 * embed_types.h - the names the embedding layer's two halves share without
 * depending on each other: the handle type and the kind of text. embed.h
 * (the interface) and embed_http.h (the HTTP providers below it) include
 * it.
 */
#ifndef MNEMO_EMBED_TYPES_H
#define MNEMO_EMBED_TYPES_H

#include <stddef.h>

enum { EMBED_QUERY = 0, EMBED_DOCUMENT = 1 };

typedef struct embedder embedder;

/* A file that is not text, embedded with its label (multimodal). */
typedef struct embed_media {
    const char *mime;
    const void *data;
    size_t len;
} embed_media;

#endif
