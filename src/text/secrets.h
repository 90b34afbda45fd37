/*
 * secrets.h - recognising credentials in text a caller asks to store, as
 * written and as normalised (NFKC, without format characters).
 */
#ifndef MNEMO_SECRETS_H
#define MNEMO_SECRETS_H

#include <stddef.h>

/* What kind of credential TEXT (LEN bytes, not necessarily NUL-terminated)
 * seems to contain ("an API key (sk-...)", "a private key block", ...), or
 * NULL. Text that is not ASCII is read normalised too (secrets.c); when
 * there is no memory to do so the answer is a kind that says so, never
 * NULL. The credential itself is never copied into the answer. */
const char *secret_find(const char *text, size_t len);

#endif
