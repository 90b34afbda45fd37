/*
 * dsn.h - connection strings and SQL names as text (dsn.c).
 */
#ifndef MNEMO_DSN_H
#define MNEMO_DSN_H

#include "util/buf.h"

/* 1 when NAME is one identifier or schema.identifier, each part
 * [A-Za-z_][A-Za-z0-9_]* of at most 63 bytes. The only names mnemo puts
 * into SQL. */
int dsn_ident_valid(const char *name);

/* Copies S to OUT with credentials replaced by ***: the password of a URI
 * (scheme://user:SECRET@host, and a user name that is itself a token),
 * password=VALUE pairs (quoted or not, also as URI query parameters),
 * query parameters that carry a credential (?api_key=, &token=, &sig=,
 * #access_token=, ...), and every occurrence of SECRET when it is not NULL
 * or "". Behind mnemo_redact too. */
void dsn_redact(buf *out, const char *s, const char *secret);

#endif
