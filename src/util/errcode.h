/*
 * errcode.h - the text of each MNEMO_* status code, at the bottom of the
 * library so that every layer can name an error without calling up.
 */
#ifndef MNEMO_ERRCODE_H
#define MNEMO_ERRCODE_H

/* Static English text for CODE (what mnemo_strerror says); never NULL. */
const char *errcode_text(int code);

#endif
