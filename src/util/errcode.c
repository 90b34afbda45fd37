/*
 * errcode.c - the text of each MNEMO_* status code (see errcode.h).
 */
#include "util/errcode.h"

#include <stddef.h>

#include "mnemo.h"

/* The text of each code, from the one list in mnemo.h. */
#define MESSAGE(name, value, text, api) [MNEMO_##name] = text,
static const char *const messages[] = {MNEMO_STATUS_MAP(MESSAGE)};
#undef MESSAGE

const char *errcode_text(int code)
{
    if (code < 0 || (size_t)code >= sizeof messages / sizeof *messages || !messages[code])
        return "unknown error";
    return messages[code];
}
