/*
 * media.h - images and audio as memory (multimodal): which file names may
 * hold them, what their first bytes say they are, and the label that
 * stands for one in the index.
 *
 * A name only proposes a file: it is admitted when its content sniffs as
 * an image or audio format (the MIME type comes from the bytes, never the
 * name), so a text file renamed .png is not sent to a provider as one.
 */
#ifndef MNEMO_MEDIA_H
#define MNEMO_MEDIA_H

#include <stddef.h>

#include "util/buf.h"

enum { MEDIA_IMAGE = 1, MEDIA_AUDIO = 2 };

/* The modality NAME's extension proposes (MEDIA_IMAGE or MEDIA_AUDIO),
 * 0 for any other name. Case does not matter. */
int media_of_name(const char *name);

/* The MIME type the first N bytes of P show ("image/png", "audio/mpeg"...),
 * or NULL when they are no image or audio format mnemo knows. */
const char *media_sniff(const void *p, size_t n);

/* MEDIA_IMAGE or MEDIA_AUDIO for a MIME type, 0 for others. */
int media_of_mime(const char *mime);

/* "image" or "audio". */
const char *media_name(int modality);

/* Appends the text standing for the file at PATH: "Image file: PATH". */
int media_label(buf *out, int modality, const char *path);

#endif
