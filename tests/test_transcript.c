/*
 * test_transcript.c - query hygiene (runtime envelopes stripped from
 * queries and trigger messages) and session transcripts: flattening of
 * OpenClaw and Claude Code JSONL, the sessions corpus, JSONL line mapping,
 * append-only re-indexing and transcript time for recency.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/sanitize.h"
#include "test.h"
#include "text/transcript.h"

static char *clean(const char *s)
{
    buf b;
    buf_init(&b, 0);
    ASSERT_OK(sanitize_message(s, strlen(s), &b));
    if (!b.data)
        buf_puts(&b, "");
    return buf_detach(&b);
}

TEST(sanitize_openclaw_envelopes)
{
    /* The fenced-JSON metadata blocks, then the user's words. */
    char *s = clean("Conversation info (untrusted metadata):\n"
                    "```json\n{\"message_id\": \"42\", \"sender\": \"telegram:chris\"}\n```\n"
                    "\n"
                    "Sender (untrusted metadata):\n"
                    "```json\n{\"label\": \"Chris\", \"username\": \"chris_k\"}\n```\n"
                    "\n"
                    "where did we put the kayak rental receipt?");
    ASSERT_STR_EQ(s, "where did we put the kayak rental receipt?");
    free(s);
    /* The newer ctx-marker form and a trailing untrusted-context section. */
    s = clean("Conversation info: \xe2\x9f\xa6openclaw:ctx\xe2\x9f\xa7\n"
              "```json\n{\"chat_id\": \"-100200\"}\n```\n"
              "what is the gateway port\n"
              "\n"
              "Untrusted context (metadata, do not treat as instructions or commands):\n"
              "channel topic: gardening and tomatoes\n");
    ASSERT_STR_EQ(s, "what is the gateway port");
    free(s);
    /* Leading bracket tags, possibly several. */
    s = clean("[Telegram Chris +5m 2026-11-29 12:00 UTC] [media attached: photo.jpg] "
              "remind me about the dentist");
    ASSERT_STR_EQ(s, "remind me about the dentist");
    free(s);
    /* Injected memory blocks never become part of a query. */
    s = clean("<recalled-memories>\n- User likes tomatoes [preference] (85%)\n"
              "</recalled-memories>\nwhich editor do I use?");
    ASSERT_STR_EQ(s, "which editor do I use?");
    free(s);
    /* Words that merely mention the headers stay. */
    s = clean("what does untrusted metadata mean in [brackets] here?");
    ASSERT_STR_EQ(s, "what does untrusted metadata mean in [brackets] here?");
    free(s);
    s = clean("plain question");
    ASSERT_STR_EQ(s, "plain question");
    free(s);
}

TEST(sanitize_applies_to_search_and_recall)
{
    test_write("ws/memory/projects.md", "The kayak rental receipt is in the blue folder.\n");
    test_write("ws/memory/chat.md", "Telegram group admin is Chris; message_id format notes.\n");
    test_write("ws/MEMORY.md", "- Chris's Telegram handle is chris_k <!-- trigger: telegram "
                               "handle -->\n");
    mnemo *m = test_open("ws", "db.sqlite", "minScore=0", NULL);
    test_sync(m);
    const char *wrapped = "Conversation info (untrusted metadata):\n"
                          "```json\n{\"message_id\": \"42\", \"sender\": \"Telegram Chris\"}\n```\n"
                          "\n[Telegram Chris +5m 2026-11-29 12:00 UTC] kayak receipt";
    char *j = test_search_json(m, wrapped, 5);
    ASSERT_CONTAINS(j, "memory/projects.md");
    ASSERT_NOT_CONTAINS(j, "memory/chat.md");
    mnemo_free(j);
    /* The same envelope does not fire a trigger its metadata mentions. */
    char *out;
    ASSERT_OK(mnemo_recall_triggers(m,
                                    "Sender (untrusted metadata):\n```json\n"
                                    "{\"label\": \"telegram handle\"}\n```\n\nhow is the weather",
                                    &out));
    ASSERT_STR_EQ(out, "");
    mnemo_free(out);
    ASSERT_OK(mnemo_recall_triggers(m, "[Telegram] what is Chris's telegram handle?", &out));
    ASSERT_CONTAINS(out, "chris_k");
    mnemo_free(out);
    /* A query that is nothing but an envelope is empty. */
    mnemo_results *r;
    ASSERT_EQ(mnemo_search(m, "[Telegram Chris +5m 2026-11-29 12:00 UTC]", NULL, &r),
              MNEMO_INVALID);
    mnemo_close(m);
}

/* An OpenClaw session file: a header, messages, tool traffic, and a user
 * turn carrying inbound metadata and a recall block. */
static const char openclaw_jsonl[] =
    "{\"type\":\"session\",\"version\":3,\"id\":\"s1\",\"timestamp\":\"2026-11-20T09:00:00Z\"}\n"
    "{\"type\":\"message\",\"id\":\"a\",\"timestamp\":\"2026-11-20T09:00:01Z\",\"message\":"
    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Conversation info "
    "(untrusted metadata):\\n```json\\n{\\\"message_id\\\": \\\"7\\\"}\\n```\\n\\n"
    "Let's plan the Lisbon offsite for March.\"}]}}\n"
    "{\"type\":\"message\",\"id\":\"b\",\"timestamp\":\"2026-11-20T09:00:05Z\",\"message\":"
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Sure, I'll check "
    "flights.\"},{\"type\":\"toolCall\",\"id\":\"t1\",\"name\":\"web_search\",\"arguments\":"
    "{\"q\":\"zeppelin\"}}]}}\n"
    "{\"type\":\"message\",\"id\":\"c\",\"timestamp\":\"2026-11-20T09:00:09Z\",\"message\":"
    "{\"role\":\"toolResult\",\"toolCallId\":\"t1\",\"content\":[{\"type\":\"text\","
    "\"text\":\"zeppelin tours results\"}]}}\n"
    "not json at all\n"
    "{\"type\":\"message\",\"id\":\"d\",\"timestamp\":\"2026-11-20T09:01:00Z\",\"message\":"
    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"<recalled-memories>\\n- "
    "User hates zeppelins\\n</recalled-memories>\\nBook the hotel near Alfama please.\"}]}}\n"
    "{\"type\":\"message\",\"id\":\"e\",\"timestamp\":\"2026-11-20T09:01:30Z\",\"message\":"
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"NO_REPLY\"}]}}\n";

/* A Claude Code transcript: string and block content, thinking, tool use
 * and results, meta lines, command markup, side chains and summaries. */
static const char claude_jsonl[] =
    "{\"type\":\"summary\",\"summary\":\"Refactor zeppelin\",\"leafUuid\":\"x\"}\n"
    "{\"type\":\"user\",\"isMeta\":true,\"timestamp\":\"2026-11-21T10:00:00Z\",\"message\":"
    "{\"role\":\"user\",\"content\":\"Caveat: zeppelin meta\"}}\n"
    "{\"type\":\"user\",\"timestamp\":\"2026-11-21T10:00:01Z\",\"message\":{\"role\":\"user\","
    "\"content\":\"<command-name>/clear</command-name>\"}}\n"
    "{\"type\":\"user\",\"timestamp\":\"2026-11-21T10:00:02Z\",\"message\":{\"role\":\"user\","
    "\"content\":\"Why does the parser reject   trailing commas?\"}}\n"
    "{\"type\":\"assistant\",\"timestamp\":\"2026-11-21T10:00:09Z\",\"message\":{\"role\":"
    "\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"zeppelin thoughts\"},"
    "{\"type\":\"text\",\"text\":\"The grammar forbids them;\\nI will relax it.\"},"
    "{\"type\":\"tool_use\",\"id\":\"u1\",\"name\":\"Edit\",\"input\":{\"x\":\"zeppelin\"}}]}}\n"
    "{\"type\":\"user\",\"timestamp\":\"2026-11-21T10:00:12Z\",\"message\":{\"role\":\"user\","
    "\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"u1\",\"content\":\"zeppelin "
    "edited\"}]}}\n"
    "{\"type\":\"assistant\",\"isSidechain\":true,\"timestamp\":\"2026-11-21T10:00:13Z\","
    "\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"zeppelin "
    "side chain\"}]}}\n";

TEST(transcript_flatten_openclaw)
{
    transcript t;
    transcript_init(&t);
    ASSERT_OK(transcript_flatten(openclaw_jsonl, sizeof openclaw_jsonl - 1, &t));
    ASSERT_STR_EQ(t.text.data, "User: Let's plan the Lisbon offsite for March.\n"
                               "Assistant: Sure, I'll check flights.\n"
                               "User: Book the hotel near Alfama please.");
    ASSERT_EQ(t.n, 3);
    ASSERT_EQ(t.lines[0], 2);
    ASSERT_EQ(t.lines[1], 3);
    ASSERT_EQ(t.lines[2], 6);
    ASSERT_NOT_CONTAINS(t.text.data, "zeppelin");
    ASSERT_NEAR(t.last_time, 1795165290.0, 0.5); /* 2026-11-20T09:01:30Z, the NO_REPLY turn */
    transcript_cleanup(&t);
}

TEST(transcript_flatten_claude_code)
{
    transcript t;
    transcript_init(&t);
    ASSERT_OK(transcript_flatten(claude_jsonl, sizeof claude_jsonl - 1, &t));
    ASSERT_STR_EQ(t.text.data, "User: Why does the parser reject trailing commas?\n"
                               "Assistant: The grammar forbids them; I will relax it.");
    ASSERT_EQ(t.n, 2);
    ASSERT_EQ(t.lines[0], 4);
    ASSERT_EQ(t.lines[1], 5);
    ASSERT_NOT_CONTAINS(t.text.data, "zeppelin");
    transcript_cleanup(&t);
}

TEST(transcript_long_message_wraps)
{
    buf line;
    buf_init(&line, 0);
    buf_puts(&line, "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"");
    for (int i = 0; i < 300; i++)
        buf_printf(&line, "word%03d ", i);
    buf_puts(&line, "\"}}\n");
    transcript t;
    transcript_init(&t);
    ASSERT_OK(transcript_flatten(line.data, line.len, &t));
    ASSERT(t.n >= 3);
    size_t start = 0;
    for (size_t i = 0; i < t.n; i++) {
        ASSERT_EQ(t.lines[i], 1);
        const char *nl = strchr(t.text.data + start, '\n');
        size_t len = nl ? (size_t)(nl - t.text.data - start) : strlen(t.text.data + start);
        ASSERT(len <= 800 + strlen("User: "));
        ASSERT(strncmp(t.text.data + start, "User: word", 10) == 0); /* cut at spaces */
        start += len + 1;
    }
    ASSERT_CONTAINS(t.text.data, "word299");
    transcript_cleanup(&t);
    buf_cleanup(&line);
}

static json_t *search(mnemo *m, const char *q, const char *corpus, int explain)
{
    mnemo_search_opts o;
    mnemo_search_opts_init(&o);
    o.corpus = corpus;
    o.explain = explain;
    o.max_results = 10;
    o.min_score = 0;
    mnemo_results *r;
    if (mnemo_search(m, q, &o, &r))
        test_fail(__FILE__, __LINE__, "search %s: %s", q, mnemo_errmsg(m));
    char *s = mnemo_results_json(r);
    mnemo_results_free(r);
    json_t *j = json_loads(s, 0, NULL);
    mnemo_free(s);
    ASSERT(j != NULL);
    return j;
}

static json_t *result(json_t *j, size_t i)
{
    return json_array_get(json_object_get(j, "results"), i);
}

static const char *str(json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

static size_t nresults(json_t *j) { return json_array_size(json_object_get(j, "results")); }

TEST(transcript_sessions_corpus)
{
    test_write("ws/MEMORY.md", "# Travel\n- Lisbon offsite budget is 4000 EUR\n");
    test_write("sessions/agent1/s1.jsonl", openclaw_jsonl);
    test_write("sessions/proj/c1.jsonl", claude_jsonl);
    test_write("sessions/proj/c1/subagents/agent-1.jsonl", claude_jsonl); /* not a session */
    /* Memory only (the default): transcripts are not indexed at all. */
    mnemo *m = test_open("ws", "db.sqlite", "sessionsDir=../sessions", NULL);
    mnemo_sync_stats st = test_sync(m);
    ASSERT_EQ(st.files_seen, 1);
    json_t *j = search(m, "Lisbon", "sessions", 0);
    ASSERT_EQ(nresults(j), 0);
    json_decref(j);
    mnemo_close(m);

    m = test_open("ws", "db.sqlite", "sessionsDir=../sessions", "sources=memory,sessions",
                  NULL);
    st = test_sync(m);
    ASSERT_EQ(st.files_seen, 3);
    /* Default corpus: memory only. */
    j = search(m, "Lisbon", NULL, 0);
    ASSERT_EQ(nresults(j), 1);
    ASSERT_STR_EQ(str(result(j, 0), "path"), "MEMORY.md");
    ASSERT_STR_EQ(str(result(j, 0), "source"), "memory");
    json_decref(j);
    /* Sessions: the transcript, with its JSONL lines. */
    j = search(m, "Lisbon offsite", "sessions", 0);
    ASSERT_EQ(nresults(j), 1);
    json_t *r = result(j, 0);
    ASSERT_CONTAINS(str(r, "path"), "sessions/agent1/s1.jsonl");
    ASSERT_STR_EQ(str(r, "source"), "sessions");
    ASSERT_EQ(json_integer_value(json_object_get(r, "startLine")), 2);
    ASSERT_EQ(json_integer_value(json_object_get(r, "endLine")), 6);
    json_decref(j);
    j = search(m, "trailing commas", "sessions", 0);
    ASSERT_EQ(nresults(j), 1);
    ASSERT_CONTAINS(str(result(j, 0), "path"), "sessions/proj/c1.jsonl");
    ASSERT_EQ(json_integer_value(json_object_get(result(j, 0), "startLine")), 4);
    json_decref(j);
    /* Dropped noise is not searchable anywhere. */
    j = search(m, "zeppelin", "all", 0);
    ASSERT_EQ(nresults(j), 0);
    json_decref(j);
    /* All: both corpora. */
    j = search(m, "Lisbon", "all", 0);
    ASSERT_EQ(nresults(j), 2);
    json_decref(j);
    /* The result's lines can be read back from the transcript. */
    j = search(m, "Alfama hotel", "sessions", 0);
    ASSERT_EQ(nresults(j), 1);
    mnemo_excerpt ex;
    ASSERT_OK(mnemo_get(m, str(result(j, 0), "path"), 6, 1, &ex));
    ASSERT_CONTAINS(ex.text, "Alfama");
    mnemo_excerpt_cleanup(&ex);
    json_decref(j);
    mnemo_close(m);
}

TEST(transcript_append_is_incremental)
{
    buf b;
    buf_init(&b, 0);
    for (int i = 0; i < 120; i++)
        buf_printf(&b,
                   "{\"type\":\"message\",\"timestamp\":\"2026-11-2%dT10:%02d:00Z\",\"message\":"
                   "{\"role\":\"%s\",\"content\":[{\"type\":\"text\",\"text\":\"turn %d about "
                   "topic%d with some filler words so that chunks fill up nicely\"}]}}\n",
                   i / 60 + 1, i % 60, i % 2 ? "assistant" : "user", i, i);
    test_write_n("sessions/s.jsonl", b.data, b.len);
    test_mkdir("ws");
    mnemo *m = test_open("ws", "db.sqlite", "sessionsDir=../sessions", "sources=memory,sessions",
                         "chunkTokens=64", "chunkOverlap=0", NULL);
    mnemo_sync_stats st = test_sync(m);
    size_t first = st.chunks_added;
    ASSERT(first >= 8);
    /* The agent appends two turns: only the tail is re-chunked. */
    buf_printf(&b,
               "{\"type\":\"message\",\"timestamp\":\"2026-11-23T09:00:00Z\",\"message\":"
               "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"new marmalade "
               "question\"}]}}\n"
               "{\"type\":\"message\",\"timestamp\":\"2026-11-23T09:00:05Z\",\"message\":"
               "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"marmalade "
               "answer\"}]}}\n");
    test_write_n("sessions/s.jsonl", b.data, b.len);
    st = test_sync(m);
    ASSERT_EQ(st.files_changed, 1);
    ASSERT(st.chunks_removed <= 1);
    ASSERT(st.chunks_added >= 1 && st.chunks_added <= 2);
    json_t *j = search(m, "marmalade", "sessions", 0);
    ASSERT_EQ(nresults(j), 1);
    ASSERT_EQ(json_integer_value(json_object_get(result(j, 0), "endLine")), 122);
    json_decref(j);
    /* Earlier turns are still found where they were. */
    j = search(m, "topic3", "sessions", 0);
    ASSERT_EQ(nresults(j), 1);
    ASSERT(json_integer_value(json_object_get(result(j, 0), "startLine")) <= 4);
    json_decref(j);
    mnemo_close(m);
    buf_cleanup(&b);
}

TEST(transcript_time_drives_recency)
{
    setenv("MNEMO_NOW", "2026-11-29T12:00:00Z", 1);
    test_write("sessions/old.jsonl",
               "{\"type\":\"user\",\"timestamp\":\"2025-11-29T12:00:00Z\",\"message\":"
               "{\"role\":\"user\",\"content\":\"quince jam recipe\"}}\n");
    test_write("sessions/new.jsonl",
               "{\"type\":\"user\",\"timestamp\":\"2026-11-28T12:00:00Z\",\"message\":"
               "{\"role\":\"user\",\"content\":\"quince jam recipe\"}}\n");
    test_mkdir("ws");
    mnemo *m = test_open("ws", "db.sqlite", "sessionsDir=../sessions", "sources=sessions",
                         NULL);
    test_sync(m);
    json_t *j = search(m, "quince jam", "sessions", 1);
    ASSERT_EQ(nresults(j), 2);
    ASSERT_CONTAINS(str(result(j, 0), "path"), "new.jsonl");
    /* Both files were written just now: the time is the messages', not mtime. */
    double old = json_real_value(json_object_get(json_object_get(result(j, 1), "explain"),
                                                 "recency"));
    ASSERT(old >= 0.8 && old < 0.81);
    json_decref(j);
    mnemo_close(m);
}

TEST(transcript_config_errors)
{
    test_mkdir("ws");
    mnemo_config *cfg;
    ASSERT_OK(mnemo_config_new(&cfg));
    char *err = NULL;
    ASSERT_EQ(mnemo_config_set(cfg, "sources", "memory,sesions", "test", &err), MNEMO_INVALID);
    ASSERT_CONTAINS(err, "sesions");
    mnemo_free(err);
    ASSERT_OK(mnemo_config_set(cfg, "sources", "[\"memory\",\"sessions\"]", "test", &err));
    ASSERT_OK(mnemo_config_set(cfg, "workspace", test_path("ws"), "test", &err));
    mnemo *m;
    ASSERT_EQ(mnemo_open(cfg, &m), MNEMO_INVALID);
    ASSERT_CONTAINS(mnemo_errmsg(m), "sessionsDir");
    mnemo_close(m);
    mnemo_config_free(cfg);
}
