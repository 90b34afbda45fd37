/*
 * errcode.c - the text of each MNEMO_* status code (see errcode.h).
 */
#include "util/errcode.h"

#include <stddef.h>

#include "mnemo.h"

static const char *const messages[] = {
    [MNEMO_OK] = "ok",
    [MNEMO_NOMEM] = "out of memory",
    [MNEMO_IO] = "file system error",
    [MNEMO_DB] = "database error",
    [MNEMO_HTTP] = "HTTP error",
    [MNEMO_TIMEOUT] = "timed out",
    [MNEMO_NOTFOUND] = "not found",
    [MNEMO_INVALID] = "invalid argument",
    [MNEMO_UNAVAILABLE] = "unavailable",
    [MNEMO_MISUSE] = "library misuse",
    [MNEMO_CORRUPT] = "database is damaged, foreign or too new",
    [MNEMO_BUSY] = "locked by another process",
    [MNEMO_DENIED] = "path outside the memory roots",
};

const char *errcode_text(int code)
{
    if (code < 0 || (size_t)code >= sizeof messages / sizeof *messages || !messages[code])
        return "unknown error";
    return messages[code];
}
