/*
 * test_damage.c - a damaged index or memory store says so: searches,
 * lists, status and the CLI report the damage with the file and the way
 * out (exit 5), never a shorter answer or "nothing found"; the next plain
 * index rebuilds a damaged index and keeps the old one aside.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test.h"

/* Overwrites every page of PATH that dbstat names NAME (with TYPE, or any
 * type for NULL) from offset 8 on, leaving the page header's first bytes:
 * returns how many pages. */
static int damage_pages(const char *path, const char *name, const char *type, int max)
{
    char sql[256];
    int n = 0;
    for (int i = 0; i < max; i++) {
        snprintf(sql, sizeof sql,
                 "SELECT pageno FROM dbstat WHERE name = '%s'%s%s%s ORDER BY pageno LIMIT 1 "
                 "OFFSET %d",
                 name, type ? " AND pagetype = '" : "", type ? type : "", type ? "'" : "", i);
        long long pg = test_sql_int(path, sql);
        if (pg <= 1)
            break;
        FILE *f = fopen(path, "r+b");
        ASSERT(f != NULL);
        char junk[4088];
        memset(junk, 0x5a, sizeof junk);
        fseek(f, (long)(pg - 1) * 4096 + 8, SEEK_SET);
        fwrite(junk, 1, sizeof junk, f);
        fclose(f);
        n++;
    }
    return n;
}

static void notes(int n)
{
    for (int i = 0; i < n; i++) {
        char path[64], text[512];
        snprintf(path, sizeof path, "ws/memory/2026-%02d-%02d.md", 1 + i / 28, 1 + i % 28);
        snprintf(text, sizeof text,
                 "# Day %d\n\n- Priya reviewed pull request %d with the team\n"
                 "- the deploy of build %d went out on the evening train\n",
                 i, i, i);
        test_write(path, text);
    }
}

static int exists(const char *rel)
{
    struct stat st;
    return stat(test_path(rel), &st) == 0;
}

TEST(damage_index_is_reported_and_rebuilt)
{
    notes(150);
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    char *j = test_search_json(m, "Priya pull request 42", 1);
    ASSERT_CONTAINS(j, "2026-02-15.md");
    mnemo_free(j);
    mnemo_close(m);
    ASSERT(damage_pages(test_path("db.sqlite"), "chunks", NULL, 50) > 0);

    m = test_open("ws", "db.sqlite", NULL);
    mnemo_results *r = NULL;
    ASSERT_EQ(mnemo_search(m, "Priya pull request 42", NULL, &r), MNEMO_CORRUPT);
    ASSERT_CONTAINS(mnemo_errmsg(m), test_path("db.sqlite"));
    ASSERT_CONTAINS(mnemo_errmsg(m), "mnemo index");
    char *st = NULL;
    ASSERT_OK(mnemo_status_json(m, 0, &st));
    json_t *sj = json_loads(st, 0, NULL);
    ASSERT_EQ(json_integer_value(json_object_get(sj, "errorStatus")), MNEMO_CORRUPT);
    json_decref(sj);
    mnemo_free(st);
    ASSERT(exists("db.sqlite.suspect"));

    /* The CLI: exit 5 and the message, for search and status. */
    char *out = NULL, *err = NULL;
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "search", "Priya", NULL),
              5);
    ASSERT_CONTAINS(err, "damaged");
    free(out);
    free(err);

    /* A plain sync rebuilds it; the damaged file is kept aside. */
    mnemo_sync_stats s = test_sync(m);
    ASSERT_EQ(s.rebuilt, 1);
    ASSERT(!exists("db.sqlite.suspect"));
    j = test_search_json(m, "Priya pull request 42", 1);
    ASSERT_CONTAINS(j, "2026-02-15.md");
    mnemo_free(j);
    mnemo_close(m);
}

/* A sync that itself meets the damage rebuilds too. */
TEST(damage_met_by_a_sync_rebuilds)
{
    notes(150);
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    mnemo_close(m);
    ASSERT(damage_pages(test_path("db.sqlite"), "files", NULL, 50) > 0);
    test_write("ws/memory/2026-12-01.md", "- a new note about koalas\n");
    m = test_open("ws", "db.sqlite", NULL);
    mnemo_sync_stats s = test_sync(m);
    ASSERT_EQ(s.rebuilt, 1);
    char *j = test_search_json(m, "koalas", 1);
    ASSERT_CONTAINS(j, "2026-12-01.md");
    mnemo_free(j);
    mnemo_close(m);
}

TEST(damage_memory_store_is_never_a_shorter_list)
{
    test_write("ws/MEMORY.md", "# Notes\n");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    for (int i = 0; i < 300; i++) {
        char rec[256], *out = NULL;
        snprintf(rec, sizeof rec,
                 "{\"text\":\"fact %d: the garden bed %d gets water on day %d\"}", i, i, i % 7);
        ASSERT_OK(mnemo_memory_add(m, rec, &out));
        mnemo_free(out);
    }
    mnemo_close(m);
    /* A page of rows in the middle of the memories table. */
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM dbstat WHERE name = 'memories' AND "
                              "pagetype = 'leaf'");
    long long leaves = test_sql_int(test_path("db.memories.sqlite"), sql);
    ASSERT(leaves > 4);
    snprintf(sql, sizeof sql,
             "SELECT pageno FROM dbstat WHERE name = 'memories' AND pagetype = 'leaf' "
             "ORDER BY pageno LIMIT 1 OFFSET %lld",
             leaves / 2);
    long long pg = test_sql_int(test_path("db.memories.sqlite"), sql);
    FILE *f = fopen(test_path("db.memories.sqlite"), "r+b");
    ASSERT(f != NULL);
    char junk[600];
    memset(junk, 0xc3, sizeof junk);
    fseek(f, (long)(pg - 1) * 4096 + 3, SEEK_SET); /* the cell count and on */
    fwrite(junk, 1, sizeof junk, f);
    fclose(f);

    m = test_open("ws", "db.sqlite", NULL);
    char *out = NULL;
    ASSERT_EQ(mnemo_memory_list(m, "{\"limit\":1000}", &out), MNEMO_CORRUPT);
    ASSERT_CONTAINS(mnemo_errmsg(m), "db.memories.sqlite");
    ASSERT_CONTAINS(mnemo_errmsg(m), "memory recover");
    ASSERT_EQ(mnemo_memory_search(m, "garden water", NULL, &out), MNEMO_CORRUPT);
    char *st = NULL;
    ASSERT_OK(mnemo_status_json(m, 0, &st));
    json_t *sj = json_loads(st, 0, NULL);
    ASSERT_EQ(json_integer_value(json_object_get(sj, "errorStatus")), MNEMO_CORRUPT);
    ASSERT(json_object_get(json_object_get(sj, "memories"), "error") != NULL);
    json_decref(sj);
    mnemo_free(st);
    mnemo_close(m);

    char *err = NULL;
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "memory", "list", "--limit", "1000", "--json", NULL),
              5);
    ASSERT_CONTAINS(err, "damaged");
    free(out);
    free(err);
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "status", NULL),
              5);
    free(out);
    free(err);
}

/* Junk over the middle leaf page of the table or index NAME of the memory
 * store PATH. */
static void damage_leaf(const char *path, const char *name)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM dbstat WHERE name = '%s' AND pagetype = 'leaf'", name);
    long long leaves = test_sql_int(path, sql);
    ASSERT(leaves > 2);
    snprintf(sql, sizeof sql,
             "SELECT pageno FROM dbstat WHERE name = '%s' AND pagetype = 'leaf' "
             "ORDER BY pageno LIMIT 1 OFFSET %lld",
             name, leaves / 2);
    long long pg = test_sql_int(path, sql);
    FILE *f = fopen(path, "r+b");
    ASSERT(f != NULL);
    char junk[600];
    memset(junk, 0xc3, sizeof junk);
    fseek(f, (long)(pg - 1) * 4096 + 3, SEEK_SET); /* the cell count and on */
    fwrite(junk, 1, sizeof junk, f);
    fclose(f);
}

/* The counts per week read the indexes, not the rows: damaged, they say
 * so rather than count fewer. */
TEST(damage_memory_counts_are_never_fewer)
{
    test_write("ws/MEMORY.md", "# Notes\n");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    /* 600 memories over a year, imported in one write. */
    size_t cap = 600 * 200, len = 0, in = 0, skip = 0;
    char *lines = malloc(cap);
    ASSERT(lines != NULL);
    for (int i = 0; i < 600; i++)
        len += (size_t)snprintf(lines + len, cap - len,
                                "{\"id\":\"f%d\",\"text\":\"fact %d: the garden bed gets water on day %d\","
                                "\"category\":\"%s\",\"created_at\":\"2026-%02d-%02dT10:00:00Z\"}\n",
                                i, i, i % 7, i % 2 ? "rule" : "project", 1 + i % 12, 1 + i % 28);
    if (mnemo_memory_import(m, lines, len, &in, &skip))
        test_fail(__FILE__, __LINE__, "import: %s", mnemo_errmsg(m));
    ASSERT_EQ(in, 600);
    free(lines);
    char *out = NULL;
    ASSERT_OK(mnemo_memory_counts(m, NULL, &out));
    ASSERT_CONTAINS(out, "\"total\":600}");
    mnemo_free(out);
    mnemo_close(m);
    const char *path = test_path("db.memories.sqlite");
    damage_leaf(path, "memories_recent");
    damage_leaf(path, "memories_category");

    m = test_open("ws", "db.sqlite", NULL);
    out = NULL;
    ASSERT_EQ(mnemo_memory_counts(m, NULL, &out), MNEMO_CORRUPT);
    ASSERT(out == NULL);
    ASSERT_CONTAINS(mnemo_errmsg(m), "db.memories.sqlite");
    ASSERT_EQ(mnemo_memory_counts(m, "{\"categories\":[\"rule\"],\"bucket\":\"day\"}", &out),
              MNEMO_CORRUPT);
    ASSERT(out == NULL);
    /* Nor does a list's total come out short. */
    ASSERT_EQ(mnemo_memory_list(m, "{\"categories\":[\"rule\"],\"limit\":5}", &out),
              MNEMO_CORRUPT);
    ASSERT(out == NULL);
    mnemo_close(m);
}

TEST(damage_none_in_a_whole_store)
{
    test_write("ws/MEMORY.md", "# Notes\n");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    char *out = NULL;
    ASSERT_OK(mnemo_memory_add(m, "{\"text\":\"the user likes tea\"}", &out));
    mnemo_free(out);
    char *st = NULL;
    ASSERT_OK(mnemo_status_json(m, 1, &st));
    json_t *sj = json_loads(st, 0, NULL);
    ASSERT(json_object_get(sj, "errorStatus") == NULL);
    ASSERT(json_object_get(json_object_get(sj, "memories"), "error") == NULL);
    json_decref(sj);
    mnemo_free(st);
    mnemo_close(m);
}
