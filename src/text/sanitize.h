/*
 * sanitize.h - removing what agent runtimes wrap around a user's words
 * before they reach a search: OpenClaw's inbound metadata blocks (the
 * "Conversation info (untrusted metadata):" form with a fenced JSON block,
 * and the newer "Label: ⟦openclaw:ctx⟧" form), untrusted-context and
 * internal-context sections, injected memory blocks (<recalled-memories>,
 * <relevant-memories>, <active_memory_plugin>), and leading bracket tags
 * such as "[Telegram Chris +5m 2026-11-29 12:00 UTC]", "[Sun 2026-11-29
 * 12:00 GMT+1]", "[media attached: ...]" or "[Replying to ...] ...
 * [/Replying]".
 */
#ifndef MNEMO_SANITIZE_H
#define MNEMO_SANITIZE_H

#include <stddef.h>

#include "util/buf.h"

/* Appends the cleaned TEXT to OUT. Returns MNEMO_OK or MNEMO_NOMEM. */
int sanitize_message(const char *text, size_t len, buf *out);

#endif
