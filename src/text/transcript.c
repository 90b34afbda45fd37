/*
 * transcript.c - flattening JSONL session transcripts (see transcript.h).
 *
 * OpenClaw: {"type":"message","message":{"role":"user"|"assistant"|
 *   "toolResult","content":"..." or [{"type":"text","text":...},...]}}
 * Claude Code: {"type":"user"|"assistant","message":{"role":...,
 *   "content":...},"isMeta","isSidechain","isCompactSummary",...}
 * A Claude Code "user" line whose content holds a tool_result block is tool
 * output, not the user.
 */
#include "text/transcript.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "mnemo.h"
#include "text/sanitize.h"
#include "util/time.h"

#define WRAP 800
#define MAX_LINE (4u << 20) /* longer JSONL lines (pasted files, images) are skipped */

void transcript_init(transcript *t)
{
    memset(t, 0, sizeof *t);
    buf_init(&t->text, 0);
}

void transcript_cleanup(transcript *t)
{
    buf_cleanup(&t->text);
    free(t->lines);
    memset(t, 0, sizeof *t);
}

static int add_line(transcript *t, const char *label, const char *s, size_t n, uint32_t jsonl)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        uint32_t *v = realloc(t->lines, cap * sizeof *v);
        if (!v)
            return MNEMO_NOMEM;
        t->lines = v;
        t->cap = cap;
    }
    if (t->text.len)
        buf_putc(&t->text, '\n');
    buf_puts(&t->text, label);
    buf_append(&t->text, s, n);
    t->lines[t->n++] = jsonl;
    return buf_err(&t->text);
}

/* Whole-message markup that is the harness talking, not the user. */
static int is_markup(const char *s, size_t n)
{
    static const char *const tags[] = {"<command-name>",      "<command-message>",
                                       "<local-command-",     "<bash-input>",
                                       "<bash-stdout>",       "<bash-stderr>",
                                       "<task-notification>", "<system-reminder>",
                                       "[Request interrupted by user"};
    while (n && (*s == ' ' || *s == '\n'))
        s++, n--;
    for (size_t i = 0; i < sizeof tags / sizeof *tags; i++)
        if (n >= strlen(tags[i]) && memcmp(s, tags[i], strlen(tags[i])) == 0)
            return 1;
    return 0;
}

/* Collapses whitespace in S into OUT. */
static void collapse(const char *s, size_t n, buf *out)
{
    int space = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
            space = 1;
            continue;
        }
        if (space && out->len)
            buf_putc(out, ' ');
        space = 0;
        buf_putc(out, c);
    }
}

/* Text of a message's content: a string, or the text blocks of an array.
 * *tool is set when the array holds tool results. */
static void content_text(json_t *content, buf *out, int *tool)
{
    if (json_is_string(content)) {
        buf_append(out, json_string_value(content), json_string_length(content));
        return;
    }
    size_t i;
    json_t *b;
    json_array_foreach(content, i, b)
    {
        const char *type = json_string_value(json_object_get(b, "type"));
        if (!type)
            continue;
        if (!strcmp(type, "tool_result") || !strcmp(type, "toolResult"))
            *tool = 1;
        if (strcmp(type, "text") && strcmp(type, "input_text") && strcmp(type, "output_text"))
            continue;
        json_t *tx = json_object_get(b, "text");
        if (!json_is_string(tx))
            continue;
        if (out->len)
            buf_putc(out, '\n');
        buf_append(out, json_string_value(tx), json_string_length(tx));
    }
}

static int one_line(transcript *t, const char *s, size_t n, uint32_t lineno, buf *raw, buf *clean,
                    buf *flat)
{
    json_t *j = json_loadb(s, n, 0, NULL);
    if (!json_is_object(j)) {
        json_decref(j);
        return MNEMO_OK;
    }
    int rc = MNEMO_OK;
    const char *type = json_string_value(json_object_get(j, "type"));
    json_t *msg = json_object_get(j, "message");
    const char *role = json_string_value(json_object_get(msg, "role"));
    if (!type || !json_is_object(msg) || !role)
        goto done;
    /* OpenClaw lines are "message"; Claude Code lines are their role. */
    if (strcmp(type, "message") != 0 && strcmp(type, role) != 0)
        goto done;
    if (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0)
        goto done;
    if (json_is_true(json_object_get(j, "isMeta")) ||
        json_is_true(json_object_get(j, "isSidechain")) ||
        json_is_true(json_object_get(j, "isCompactSummary")))
        goto done;
    const char *ts = json_string_value(json_object_get(j, "timestamp"));
    double when;
    if (ts && time_parse_iso(ts, &when) == 0 && when > t->last_time)
        t->last_time = when;
    int tool = 0;
    buf_reset(raw);
    content_text(json_object_get(msg, "content"), raw, &tool);
    if (tool || !raw->len)
        goto done;
    int user = strcmp(role, "user") == 0;
    if (user && is_markup(raw->data, raw->len))
        goto done;
    buf_reset(clean);
    if ((rc = sanitize_message(raw->data, raw->len, clean)))
        goto done;
    buf_reset(flat);
    collapse(clean->data ? clean->data : "", clean->len, flat);
    if (!flat->len || !strcmp(flat->data, "NO_REPLY") || !strcmp(flat->data, "HEARTBEAT_OK"))
        goto done;
    /* Long messages continue on more lines, cut at spaces. */
    const char *label = user ? "User: " : "Assistant: ";
    size_t pos = 0;
    while (pos < flat->len && !rc) {
        size_t take = flat->len - pos;
        if (take > WRAP) {
            take = WRAP;
            while (take > WRAP / 2 && flat->data[pos + take] != ' ')
                take--;
            while (take > 0 && ((unsigned char)flat->data[pos + take] & 0xc0) == 0x80)
                take--;
        }
        rc = add_line(t, label, flat->data + pos, take, lineno);
        pos += take;
        while (pos < flat->len && flat->data[pos] == ' ')
            pos++;
    }
done:
    json_decref(j);
    return rc;
}

int transcript_flatten(const char *s, size_t n, transcript *t)
{
    buf_reset(&t->text);
    t->text.err = 0;
    t->n = 0;
    t->last_time = 0;
    buf raw, clean, flat;
    buf_init(&raw, 0);
    buf_init(&clean, 0);
    buf_init(&flat, 0);
    int rc = MNEMO_OK;
    uint32_t lineno = 0;
    for (size_t pos = 0; pos < n && !rc;) {
        const char *nl = memchr(s + pos, '\n', n - pos);
        size_t end = nl ? (size_t)(nl - s) : n;
        lineno++;
        if (end - pos > 1 && end - pos <= MAX_LINE)
            rc = one_line(t, s + pos, end - pos, lineno, &raw, &clean, &flat);
        pos = end + 1;
    }
    buf_cleanup(&raw);
    buf_cleanup(&clean);
    buf_cleanup(&flat);
    if (!rc && !t->text.data)
        buf_puts(&t->text, "");
    return rc ? rc : buf_err(&t->text);
}
