/*
 * browse.c - the operations a browser of the memory needs beside search and
 * the memory operations (see browse.h): the workspace's memory files as a
 * list, and how much was written per week.
 *
 * The files are listed from disk, as the workspace holds them: the root
 * files and memory/ (the roots the index walks by default). The library has
 * no call that lists the files of the index, and a walk here is cheap next
 * to a sync's.
 */
#include "browse.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEPTH 16
#define MAX_FILES 100000

static const char *const root_files[] = {"MEMORY.md", "memory.md", "USER.md", "user.md"};

static int is_md(const char *name)
{
    size_t n = strlen(name);
    return n > 3 && strcmp(name + n - 3, ".md") == 0;
}

/* A daily note's date from its name ("2026-11-02.md", "2026-11-02-standup.md"):
 * 1 and *T (midnight UTC) when the name starts with one. */
static int name_date(const char *name, time_t *t)
{
    int y, mo, d;
    char dash;
    if (sscanf(name, "%4d-%2d-%2d%c", &y, &mo, &d, &dash) != 4 || (dash != '.' && dash != '-') ||
        y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31)
        return 0;
    struct tm tm = {0};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    *t = timegm(&tm);
    return 1;
}

static void add_file(json_t *arr, const char *rel, const char *name, const struct stat *st)
{
    if (json_array_size(arr) >= MAX_FILES)
        return;
    time_t day;
    json_t *f = json_pack("{s:s,s:I,s:I}", "path", rel, "size", (json_int_t)st->st_size,
                          "mtime", (json_int_t)st->st_mtime);
    if (f && name_date(name, &day))
        json_object_set_new(f, "date", json_integer((json_int_t)day));
    json_array_append_new(arr, f);
}

/* The Markdown files under DIRFD (its path REL from the workspace), depth
 * first; symlinks are not followed, as the index's walk does not. */
static void walk_md(int dirfd, const char *rel, int depth, json_t *arr)
{
    DIR *d = fdopendir(dirfd);
    if (!d) {
        close(dirfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) && json_array_size(arr) < MAX_FILES) {
        if (e->d_name[0] == '.')
            continue;
        struct stat st;
        if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", rel, e->d_name) >= (int)sizeof path)
            continue;
        if (S_ISDIR(st.st_mode) && depth < MAX_DEPTH) {
            int fd = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd >= 0)
                walk_md(fd, path, depth + 1, arr);
        } else if (S_ISREG(st.st_mode) && is_md(e->d_name)) {
            add_file(arr, path, e->d_name, &st);
        }
    }
    closedir(d);
}

static int by_key(const void *a, const void *b, void *key)
{
    const char *x = json_string_value(json_object_get(*(json_t *const *)a, key));
    const char *y = json_string_value(json_object_get(*(json_t *const *)b, key));
    return strcmp(x ? x : "", y ? y : "");
}

/* Sorts the objects of ARR by their string KEY. */
static int sort_by(json_t *arr, const char *key)
{
    size_t n = json_array_size(arr);
    json_t **v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return MNEMO_NOMEM;
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(arr, i));
    qsort_r(v, n, sizeof *v, by_key, (void *)key);
    json_array_clear(arr);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, v[i]);
    free(v);
    return 0;
}

/* The memory files of M's workspace as a JSON array, sorted by path. */
static json_t *list_files(mnemo *m)
{
    json_t *arr = json_array();
    const char *ws = mnemo_workspace(m);
    int wfd = arr ? open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (wfd < 0)
        return arr;
    /* on a case-insensitive file system MEMORY.md and memory.md are one file */
    enum { NROOT = sizeof root_files / sizeof *root_files };
    dev_t devs[NROOT] = {0};
    ino_t inos[NROOT] = {0};
    size_t nseen = 0;
    for (size_t i = 0; i < sizeof root_files / sizeof *root_files; i++) {
        struct stat st;
        if (fstatat(wfd, root_files[i], &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        int dup = 0;
        for (size_t k = 0; k < nseen; k++)
            dup |= devs[k] == st.st_dev && inos[k] == st.st_ino;
        if (dup)
            continue;
        devs[nseen] = st.st_dev;
        inos[nseen++] = st.st_ino;
        add_file(arr, root_files[i], root_files[i], &st);
    }
    int mfd = openat(wfd, "memory", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(wfd);
    if (mfd >= 0)
        walk_md(mfd, "memory", 0, arr);
    if (sort_by(arr, "path")) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

int browse_files(mnemo *m, json_t *args, char **out, char **err)
{
    (void)args;
    (void)err;
    json_t *files = list_files(m);
    if (!files)
        return MNEMO_NOMEM;
    json_t *o = json_pack("{s:s,s:I,s:o}", "workspace", mnemo_workspace(m), "count",
                          (json_int_t)json_array_size(files), "files", files);
    *out = o ? api_dump(o) : NULL;
    json_decref(o);
    return *out ? 0 : MNEMO_NOMEM;
}

/* ----------------------------------------------------------------------
 * Per week
 * -------------------------------------------------------------------- */

/* The Monday (00:00 UTC) of the week of T, as "YYYY-MM-DD". */
static void week_of(int64_t t, char out[16])
{
    time_t day = (time_t)(t - t % 86400);
    struct tm tm;
    gmtime_r(&day, &tm);
    day -= (time_t)(((tm.tm_wday + 6) % 7) * 86400);
    gmtime_r(&day, &tm);
    strftime(out, 16, "%Y-%m-%d", &tm);
}

/* WEEKS["YYYY-MM-DD"][KIND][CAT] += 1. */
static void count(json_t *weeks, int64_t t, const char *kind, const char *cat)
{
    char w[16];
    if (t <= 0)
        return;
    week_of(t, w);
    json_t *wk = json_object_get(weeks, w);
    if (!wk) {
        wk = json_pack("{s:{},s:{}}", "notes", "facts");
        json_object_set_new(weeks, w, wk);
    }
    json_t *k = json_object_get(wk, kind);
    json_t *c = json_object_get(k, cat);
    json_object_set_new(k, cat, json_integer(c ? json_integer_value(c) + 1 : 1));
}

/* Notes by their date (a daily note's name, else the file's mtime); their
 * "category" is the folder: daily, root or the path's first folder. */
static void count_notes(mnemo *m, json_t *weeks)
{
    json_t *files = list_files(m);
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f) {
        json_t *d = json_object_get(f, "date");
        const char *p = json_string_value(json_object_get(f, "path"));
        const char *cat = d ? "daily" : strchr(p, '/') ? "other" : "root";
        count(weeks, d ? json_integer_value(d) : json_integer_value(json_object_get(f, "mtime")),
              "notes", cat);
    }
    json_decref(files);
}

/* Facts by their creation, a page at a time (100k facts: 20 pages). */
static int count_facts(mnemo *m, json_t *args, json_t *weeks, long long *n)
{
    mnemo_memory_opts o;
    mnemo_memory_opts_init(&o);
    o.user_id = json_string_value(json_object_get(args, "user_id"));
    o.agent_id = json_string_value(json_object_get(args, "agent_id"));
    o.scope = "all";
    o.limit = 5000;
    o.no_count = 1;
    for (;;) {
        mnemo_memories *s = NULL;
        int rc = mnemo_memory_list_typed(m, &o, &s);
        if (rc)
            return rc;
        size_t k = mnemo_memories_count(s);
        for (size_t i = 0; i < k; i++) {
            const mnemo_memory *r = mnemo_memories_get(s, i);
            count(weeks, r->created_at, "facts",
                  r->category && *r->category ? r->category : "none");
        }
        mnemo_memories_free(s);
        *n += (long long)k;
        if (k < (size_t)o.limit)
            return 0;
        o.offset += o.limit;
    }
}

int browse_timeline(mnemo *m, json_t *args, char **out, char **err)
{
    (void)err;
    json_t *weeks = json_object();
    long long nfacts = 0;
    if (!weeks)
        return MNEMO_NOMEM;
    count_notes(m, weeks);
    int rc = count_facts(m, args, weeks, &nfacts);
    if (rc) {
        json_decref(weeks);
        const char *msg = mnemo_errmsg(m);
        *err = api_utf8_clean(msg && *msg ? msg : mnemo_strerror(rc));
        return rc;
    }
    /* oldest first; an object's keys are the weeks, sorted as text */
    json_t *list = json_array();
    const char *key;
    json_t *v;
    json_object_foreach(weeks, key, v) {
        json_t *e = json_pack("{s:s,s:O,s:O}", "week", key, "notes", json_object_get(v, "notes"),
                              "facts", json_object_get(v, "facts"));
        json_array_append_new(list, e);
    }
    json_decref(weeks);
    if (!list || sort_by(list, "week")) {
        json_decref(list);
        return MNEMO_NOMEM;
    }
    json_t *o = json_pack("{s:I,s:o}", "facts", (json_int_t)nfacts, "weeks", list);
    *out = o ? api_dump(o) : NULL;
    json_decref(o);
    return *out ? 0 : MNEMO_NOMEM;
}
