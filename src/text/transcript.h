/*
 * transcript.h - session transcripts as searchable text.
 *
 * A JSONL transcript (OpenClaw session files, Claude Code transcript files)
 * becomes one line per message, "User: ..." or "Assistant: ...", with the
 * JSONL line each came from. Only what people and the model said is kept:
 * tool calls and results, thinking, images, meta and command markup,
 * sub-agent traffic, compaction summaries, and injected memory blocks are
 * dropped; inbound metadata is stripped (sanitize.h); whitespace is
 * collapsed; messages longer than 800 characters continue on more lines.
 */
#ifndef MNEMO_TRANSCRIPT_H
#define MNEMO_TRANSCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

typedef struct transcript {
    buf text;        /* the flattened lines, '\n'-separated */
    uint32_t *lines; /* JSONL line (1-based) of each text line */
    size_t n, cap;
    double last_time; /* newest message timestamp, Unix seconds, 0 if none */
} transcript;

void transcript_init(transcript *t);
void transcript_cleanup(transcript *t);

/* Flattens the JSONL in S into T (cleared first). Lines that are not JSON
 * or not messages are skipped. MNEMO_OK or MNEMO_NOMEM. */
int transcript_flatten(const char *s, size_t n, transcript *t);

#endif
