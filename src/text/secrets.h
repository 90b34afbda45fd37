/*
 * secrets.h - recognising credentials in text a caller asks to store.
 */
#ifndef MNEMO_SECRETS_H
#define MNEMO_SECRETS_H

#include <stddef.h>

/* What kind of credential TEXT seems to contain ("an OpenAI-style API key
 * (sk-...)", "a private key block", ...), or NULL. The credential itself is
 * never copied into the answer. */
const char *secret_find(const char *text, size_t len);

#endif
