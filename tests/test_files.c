/*
 * test_files.c - mnemo_files on every backend: the index's files by path,
 * as search cites them, with their kind (memory, extra, session), and the
 * errors that must never look like an empty list.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"

static const char transcript[] =
    "{\"type\":\"session\",\"id\":\"s1\"}\n"
    "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":"
    "\"Where is the heron survey kept?\"}}\n"
    "{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":"
    "\"The heron survey is in the blue binder.\"}}\n";

/* mnemo_files(M, OPTIONS) as JSON, asserting success. */
static json_t *files_of(mnemo *m, const char *options)
{
    char *s = NULL;
    int rc = mnemo_files(m, options, &s);
    if (rc)
        test_fail(__FILE__, __LINE__, "mnemo_files: %d %s", rc, mnemo_errmsg(m));
    json_t *j = json_loads(s, 0, NULL);
    mnemo_free(s);
    ASSERT(j != NULL);
    return j;
}

/* The entry of PATH in the list J, or NULL. */
static json_t *entry(json_t *j, const char *path)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(j, "files"), i, f) {
        if (strcmp(json_string_value(json_object_get(f, "path")), path) == 0)
            return f;
    }
    return NULL;
}

static const char *kind(json_t *j, const char *path)
{
    json_t *f = entry(j, path);
    if (!f)
        test_fail(__FILE__, __LINE__, "%s not listed: %s", path, json_dumps(j, JSON_COMPACT));
    return json_string_value(json_object_get(f, "kind"));
}

/* The path of the first result of QUERY in CORPUS (NULL: memory). Caller frees. */
static char *cited(mnemo *m, const char *query, const char *corpus)
{
    mnemo_search_opts o;
    mnemo_search_opts_init(&o);
    o.corpus = corpus;
    mnemo_results *r = NULL;
    ASSERT_OK(mnemo_search(m, query, &o, &r));
    ASSERT(mnemo_results_count(r) > 0);
    char *p = strdup(mnemo_results_get(r, 0)->path);
    mnemo_results_free(r);
    return p;
}

static long long file_size(const char *rel)
{
    struct stat st;
    ASSERT_EQ(stat(test_path(rel), &st), 0);
    return (long long)st.st_size;
}

BACKEND_TEST(backend_files_lists_the_index)
{
    test_write("ws/MEMORY.md", "# Memory\n- The kestrel nests on the water tower.\n");
    test_write("ws/USER.md", "# User\n- Prefers short answers.\n");
    test_write("ws/memory/2026-11-02.md", "- Lunch with Dana about the budget.\n");
    test_write("ws/memory/2026-11-10.md", "- The quokka census is due on Friday.\n");
    test_write("ws/memory/projects/gateway.md", "# Gateway\n- Rewrite the gateway in C.\n");
    test_write("ws/projects/roadmap.md", "# Roadmap\n- The zebra launch is in March.\n");
    test_write("outside/ideas.md", "# Ideas\n- A pelican feeder for the balcony.\n");
    test_write("sessions/agent1/s1.jsonl", transcript);

    /* Before any index: said so, not an empty workspace. */
    mnemo *m = be_open("ws", NULL);
    json_t *j = files_of(m, NULL);
    ASSERT(json_is_false(json_object_get(j, "indexed")));
    ASSERT_EQ(json_integer_value(json_object_get(j, "count")), 0);
    json_decref(j);
    mnemo_close(m);

    m = be_open("ws", "extraPaths=projects,../outside", "sessionsDir=../sessions",
                "sources=memory,sessions", NULL);
    test_sync(m);
    j = files_of(m, NULL);
    ASSERT(json_is_true(json_object_get(j, "indexed")));
    ASSERT(json_is_false(json_object_get(j, "truncated")));
    ASSERT_EQ(json_integer_value(json_object_get(j, "count")), 8);
    ASSERT_EQ(json_array_size(json_object_get(j, "files")), 8);
    ASSERT_STR_EQ(kind(j, "MEMORY.md"), "memory");
    ASSERT_STR_EQ(kind(j, "USER.md"), "memory");
    ASSERT_STR_EQ(kind(j, "memory/2026-11-02.md"), "memory");
    ASSERT_STR_EQ(kind(j, "memory/projects/gateway.md"), "memory");
    ASSERT_STR_EQ(kind(j, "projects/roadmap.md"), "extra");

    /* Each path is the one results cite, and reads back. */
    char *p = cited(m, "pelican feeder", NULL);
    ASSERT(p[0] == '/'); /* outside the workspace: its absolute path */
    ASSERT_STR_EQ(kind(j, p), "extra");
    free(p);
    p = cited(m, "zebra launch", NULL);
    ASSERT_STR_EQ(p, "projects/roadmap.md");
    free(p);
    p = cited(m, "heron survey", "sessions");
    ASSERT_STR_EQ(kind(j, p), "session");
    free(p);
    p = cited(m, "quokka census", NULL);
    ASSERT_STR_EQ(kind(j, p), "memory");
    free(p);
    mnemo_excerpt e;
    ASSERT_OK(mnemo_get(m, "projects/roadmap.md", 1, 5, &e));
    ASSERT_CONTAINS(e.text, "zebra launch");
    mnemo_excerpt_cleanup(&e);

    /* Sorted by path (bytes), with size, time and chunks as indexed. */
    json_t *files = json_object_get(j, "files");
    for (size_t i = 1; i < json_array_size(files); i++)
        ASSERT(strcmp(json_string_value(json_object_get(json_array_get(files, i - 1), "path")),
                      json_string_value(json_object_get(json_array_get(files, i), "path"))) < 0);
    json_t *f = entry(j, "projects/roadmap.md");
    ASSERT_EQ(json_integer_value(json_object_get(f, "size")), file_size("ws/projects/roadmap.md"));
    ASSERT(json_integer_value(json_object_get(f, "mtime")) > 1700000000);
    ASSERT(json_integer_value(json_object_get(f, "chunks")) >= 1);
    json_decref(j);

    /* A limit cuts the list and says so. */
    j = files_of(m, "{\"limit\":3}");
    ASSERT_EQ(json_integer_value(json_object_get(j, "count")), 3);
    ASSERT_EQ(json_array_size(json_object_get(j, "files")), 3);
    ASSERT(json_is_true(json_object_get(j, "truncated")));
    json_decref(j);
    char *s = NULL;
    ASSERT_EQ(mnemo_files(m, "{\"limit\":0}", &s), MNEMO_INVALID);
    ASSERT_CONTAINS(mnemo_errmsg(m), "limit");
    ASSERT_EQ(mnemo_files(m, "{\"depth\":2}", &s), MNEMO_INVALID);
    ASSERT_CONTAINS(mnemo_errmsg(m), "depth");
    ASSERT_EQ(mnemo_files(m, "[", &s), MNEMO_INVALID);
    ASSERT(s == NULL);

    /* A deleted file leaves the list with the next sync. */
    ASSERT_EQ(remove(test_path("ws/projects/roadmap.md")), 0);
    ASSERT_EQ(remove(test_path("ws/memory/2026-11-02.md")), 0);
    test_sync(m);
    j = files_of(m, NULL);
    ASSERT_EQ(json_integer_value(json_object_get(j, "count")), 6);
    ASSERT(entry(j, "projects/roadmap.md") == NULL);
    ASSERT(entry(j, "memory/2026-11-02.md") == NULL);
    ASSERT(entry(j, "memory/2026-11-10.md") != NULL);
    json_decref(j);
    mnemo_close(m);
}

/* Files the index skipped are not listed: status names them. */
BACKEND_TEST(backend_files_leaves_out_skipped_files)
{
    test_write("ws/MEMORY.md", "# Memory\n- a short note about herons\n");
    char big[4096] = "";
    for (int i = 0; i < 70; i++) /* 3,150 bytes */
        snprintf(big + strlen(big), sizeof big - strlen(big),
                 "- The kestrel hovers over meadow %02d at dusk.\n", i);
    test_write("ws/memory/kestrels.md", big);
    mnemo *m = be_open("ws", "maxFileBytes=2048", NULL);
    test_sync(m);
    json_t *j = files_of(m, NULL);
    ASSERT_EQ(json_integer_value(json_object_get(j, "count")), 1);
    ASSERT(entry(j, "MEMORY.md") != NULL);
    json_decref(j);
    mnemo_close(m);
}

/* A damaged index file is an error with its message, never no files. */
TEST(files_damaged_index_is_an_error)
{
    test_write("ws/MEMORY.md", "# Memory\n- The kestrel nests on the water tower.\n");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    mnemo_close(m);
    size_t n = 0;
    char *db = test_read(test_path("db.sqlite"), &n);
    ASSERT(db != NULL && n > 4096);
    memset(db, 'x', 4096); /* the header page: not a database any more */
    test_write_n("db.sqlite", db, n);
    free(db);
    m = test_open("ws", "db.sqlite", NULL);
    char *s = NULL;
    int rc = mnemo_files(m, NULL, &s);
    ASSERT(rc != MNEMO_OK);
    ASSERT(s == NULL);
    ASSERT_CONTAINS(mnemo_errmsg(m), test_path("db.sqlite"));
    mnemo_close(m);
}

/* A search that met damage marks the index: the list says so too. */
TEST(files_index_marked_damaged_is_an_error)
{
    test_write("ws/MEMORY.md", "# Memory\n- The kestrel nests on the water tower.\n");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    test_write("db.sqlite.suspect", "");
    char *s = NULL;
    ASSERT_EQ(mnemo_files(m, NULL, &s), MNEMO_CORRUPT);
    ASSERT_CONTAINS(mnemo_errmsg(m), "mnemo index");
    /* the next sync rebuilds it, and the list is back */
    test_sync(m);
    json_t *j = files_of(m, NULL);
    ASSERT_EQ(json_integer_value(json_object_get(j, "count")), 1);
    json_decref(j);
    mnemo_close(m);
}

/* A server that does not answer is an error, not an empty list. */
TEST(files_postgres_down_is_an_error)
{
    pg_server srv;
    pg_debian_start(&srv);
    test_write("ws/MEMORY.md", "# Memory\n- The kestrel nests on the water tower.\n");
    char store[512];
    snprintf(store, sizeof store, "store=%s", pg_url(&srv));
    mnemo *m = test_open("ws", "db.sqlite", store, NULL);
    test_sync(m);
    json_t *j = files_of(m, NULL);
    ASSERT_EQ(json_integer_value(json_object_get(j, "count")), 1);
    json_decref(j);
    pg_debian_kill(&srv);
    char *s = NULL;
    int rc = mnemo_files(m, NULL, &s);
    ASSERT(rc != MNEMO_OK);
    ASSERT(s == NULL);
    ASSERT(*mnemo_errmsg(m));
    pg_debian_resume(&srv);
    mnemo_close(m);
    pg_stop(&srv);
}
