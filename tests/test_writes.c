/*
 * test_writes.c - memory writes never wait on the index: adds, updates,
 * confirms, deletes and imports succeed while a rebuild or a re-embedding
 * sync runs with a provider that answers slowly, and while another
 * process holds a transaction on the index file. The busy timeout is
 * short, so a write that waited for the index would fail.
 */
#include <jansson.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "provider_server.h"
#include "test.h"

/* 24 notes of 6 entries: with small embedding batches, a dozen requests. */
static void many_notes(void)
{
    for (int i = 0; i < 24; i++) {
        char path[64], text[1024];
        snprintf(path, sizeof path, "ws/memory/2026-10-%02d.md", i + 1);
        snprintf(text, sizeof text,
                 "# Day %d\n\n- met the plumber about pipe %d\n- ordered %d bags of soil\n"
                 "- the build on branch r%d went green\n- called the bank about loan %d\n"
                 "- walked the dog %d times\n- read chapter %d of the novel\n",
                 i, i, i, i, i, i, i);
        test_write(path, text);
    }
}

static char *added_id(const char *out)
{
    json_t *j = json_loads(out, 0, NULL);
    char *id = strdup(json_string_value(json_object_get(j, "id")));
    json_decref(j);
    return id;
}

/* Every kind of memory write, on M, each of which must succeed. */
static void write_everything(mnemo *m, const char *tag)
{
    char rec[256], *out = NULL;
    snprintf(rec, sizeof rec, "{\"text\":\"the user likes %s tea\",\"user_id\":\"alice\"}", tag);
    ASSERT_OK(mnemo_memory_add(m, rec, &out));
    char *id = added_id(out);
    /* The same record under another id and text: a line of an export. */
    json_t *copy = json_loads(out, 0, NULL);
    mnemo_free(out);
    char text[128];
    snprintf(text, sizeof text, "imported %s fact", tag);
    json_object_set_new(copy, "id", json_string(strcmp(tag, "sync") == 0
                                                    ? "00000000-0000-4000-8000-000000000001"
                                                    : "00000000-0000-4000-8000-000000000002"));
    json_object_set_new(copy, "text", json_string(text));
    char *line = json_dumps(copy, JSON_COMPACT);
    json_decref(copy);
    ASSERT_OK(mnemo_memory_update(m, id, "{\"importance\":0.9}", &out));
    mnemo_free(out);
    ASSERT_OK(mnemo_memory_confirm(m, id, &out));
    mnemo_free(out);
    ASSERT_OK(mnemo_memory_delete(m, id));
    size_t imported = 0, skipped = 0;
    ASSERT_OK(mnemo_memory_import(m, line, strlen(line), &imported, &skipped));
    ASSERT_EQ(imported, 1);
    free(line);
    free(id);
}

/* Opens the workspace with the provider at URL and MODEL, a short busy
 * timeout and small embedding batches, one request at a time. */
static mnemo *open_slow(const char *url, const char *model)
{
    return be_open("ws", "provider=openai-compatible", url, model, "embedBatchBytes=600",
                   "embedConcurrency=1", "busyTimeoutMs=300", NULL);
}

/* Runs a sync (FORCE: a rebuild) with MODEL in a child process; returns
 * once the child has sent its first embedding request. */
static pid_t sync_in_child(provider_server *s, const char *url, const char *model, int force)
{
    int before = ps_requests(s);
    pid_t p = fork();
    if (p == 0) {
        mnemo *m = open_slow(url, model);
        mnemo_sync_opts o = {.force = force};
        int rc = mnemo_sync(m, &o, NULL);
        mnemo_close(m);
        _exit(rc ? 10 + rc : 0);
    }
    for (int i = 0; i < 1000 && ps_requests(s) == before; i++)
        usleep(10000);
    ASSERT(ps_requests(s) > before);
    return p;
}

static void writes_beside_a_sync(int force)
{
    if (!be_has_vectors())
        return; /* no embedding: a sync there is seconds of nothing */
    many_notes();
    ps_options o = {.dims = 8};
    provider_server *s = ps_start(&o);
    char url[160];
    snprintf(url, sizeof url, "baseUrl=%s/v1", ps_url(s));
    mnemo *m = open_slow(url, "model=m1");
    test_sync(m);
    /* Now the provider answers in 250 ms, and a new model means every
     * passage is embedded again: seconds of sync. */
    o.delay_ms = 250;
    ps_set(s, &o);
    pid_t p = sync_in_child(s, url, "model=m2", force);
    write_everything(m, force ? "rebuild" : "sync");
    /* The sync was still running: the writes did not wait for it. */
    ASSERT_EQ(waitpid(p, NULL, WNOHANG), 0);
    int status = 0;
    ASSERT_EQ(waitpid(p, &status, 0), p);
    ASSERT(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
    /* Nothing lost, on either side. */
    char *out = NULL;
    ASSERT_OK(mnemo_memory_list(m, "{\"user_id\":\"alice\",\"deleted\":true}", &out));
    ASSERT_CONTAINS(out, force ? "the user likes rebuild tea" : "the user likes sync tea");
    mnemo_free(out);
    ASSERT_OK(mnemo_memory_list(m, "{\"user_id\":\"alice\"}", &out));
    ASSERT_CONTAINS(out, "imported");
    mnemo_free(out);
    mnemo_close(m);
    m = open_slow(url, "model=m2");
    char *j = test_search_json(m, "plumber pipe 7", 3);
    ASSERT_CONTAINS(j, "2026-10-08.md");
    mnemo_free(j);
    mnemo_close(m);
    ps_stop(s);
}

BACKEND_TEST_CONCURRENT(writes_during_rebuild) { writes_beside_a_sync(1); }

BACKEND_TEST_CONCURRENT(writes_during_reembedding_sync) { writes_beside_a_sync(0); }

/* Another process (a backup tool, the sqlite3 shell) in a transaction on
 * the index file: memory writes go on; one on the memory store itself
 * makes them wait, and the error names that file. */
TEST(writes_beside_a_transaction_on_the_index)
{
    test_write("ws/MEMORY.md", "# Notes\n\nThe deploy runs on Fridays.\n");
    mnemo *m = test_open("ws", "db.sqlite", "busyTimeoutMs=300", NULL);
    test_sync(m);
    sqlite3 *other = NULL;
    ASSERT_EQ(sqlite3_open(test_path("db.sqlite"), &other), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE; DELETE FROM meta WHERE key = 'nothing'",
                           NULL, NULL, NULL),
              SQLITE_OK);
    write_everything(m, "exclusive");
    ASSERT_EQ(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(other);

    ASSERT_EQ(sqlite3_open(test_path("db.memories.sqlite"), &other), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    char *out = NULL;
    ASSERT_EQ(mnemo_memory_add(m, "{\"text\":\"blocked\"}", &out), MNEMO_BUSY);
    ASSERT_CONTAINS(mnemo_errmsg(m), "db.memories.sqlite");
    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(other);
    ASSERT_OK(mnemo_memory_add(m, "{\"text\":\"not blocked\"}", &out));
    mnemo_free(out);
    mnemo_close(m);
}
