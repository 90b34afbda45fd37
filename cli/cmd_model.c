/*
 * cmd_model.c - `mnemo model import PATH`: static embedding tables and
 * transformer model folders; `mnemo model pull REPO`: a model folder from
 * the hub.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* Default table name: the file or folder name without extensions. */
static void default_name(const char *src, char *out, size_t n)
{
    size_t len = strlen(src);
    while (len > 1 && src[len - 1] == '/')
        len--;
    const char *base = src;
    for (size_t i = 0; i < len; i++)
        if (src[i] == '/')
            base = src + i + 1;
    size_t bl = (size_t)(src + len - base);
    snprintf(out, n, "%.*s", (int)bl, base);
    static const char *const exts[] = {".gz", ".txt", ".bin", ".vec", ".gguf"};
    for (size_t k = 0; k < sizeof exts / sizeof *exts; k++) {
        size_t el = strlen(exts[k]), ol = strlen(out);
        if (ol > el && strcmp(out + ol - el, exts[k]) == 0)
            out[ol - el] = 0;
    }
}

typedef struct pull_bar {
    char file[128];
    double start, last;
    uint64_t first; /* bytes there when the file started (a resumed download) */
} pull_bar;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One line on stderr per file, redrawn at most ten times a second. */
static void pull_progress(void *ud, const char *file, uint64_t done, uint64_t total)
{
    pull_bar *b = ud;
    double t = now_s();
    if (strcmp(b->file, file)) {
        if (b->file[0])
            fputc('\n', stderr);
        snprintf(b->file, sizeof b->file, "%s", file);
        b->start = t;
        b->last = 0;
        b->first = done;
    } else if (t - b->last < 0.1 && done < total) {
        return;
    }
    b->last = t;
    double mb = (double)done / 1e6;
    double rate = t > b->start ? (double)(done - b->first) / 1e6 / (t - b->start) : 0;
    int pct = total ? (int)(done * 100 / total) : 100;
    char bar[21];
    for (int i = 0; i < 20; i++)
        bar[i] = i < pct / 5 ? '#' : '.';
    bar[20] = 0;
    fprintf(stderr, "\r  %-28s [%s] %3d%% %8.1f / %.1f MB %6.1f MB/s", file, bar, pct, mb,
            (double)total / 1e6, rate);
    fflush(stderr);
}

static int pull(cli_args *a, const char *repo, const char *name, const char *rev, int json)
{
    char dflt[256];
    if (!name) {
        const char *slash = strrchr(repo, '/');
        snprintf(dflt, sizeof dflt, "%s", slash ? slash + 1 : repo);
        name = dflt;
    }
    mnemo *m;
    int code = cli_open(a, &m);
    if (code)
        return code;
    pull_bar bar;
    memset(&bar, 0, sizeof bar);
    char *out = NULL;
    int tty = !json && isatty(2);
    int rc = mnemo_model_pull(m, repo, rev, name, tty ? pull_progress : NULL, &bar, &out);
    if (bar.file[0])
        fputc('\n', stderr);
    if (rc) {
        code = cli_fail(m, rc, json);
        mnemo_close(m);
        return code;
    }
    if (json) {
        puts(out);
    } else {
        char set[512], word[1100];
        snprintf(set, sizeof set, "model=%s", name);
        printf("pulled %s as '%s'\n%s\nuse it with: mnemo --set %s index\n"
               "or in mnemo.json: {\"provider\": \"local\", \"model\": \"%s\"}\n",
               repo, name, out, cli_shell_word(set, word, sizeof word), name);
    }
    mnemo_free(out);
    mnemo_close(m);
    return EXIT_OK;
}

int cmd_model(int argc, char **argv)
{
    static const cli_opt opts[] = {
        {"name", 0, "NAME", "table name (default: the file name without extensions)"},
        {"max-words", 0, "N", "keep only the N most frequent words"},
        {"json", 'j', NULL, "print JSON"},
        {"revision", 0, "REV", "pull: the branch, tag or commit (default main)"},
        {NULL, 0, NULL, NULL},
    };
    cli_args a;
    int code = cli_parse(argc, argv, "model",
                         "mnemo model import PATH [--name NAME] [--max-words N] [--json]\n"
                         "       mnemo model pull REPO [--name NAME] [--revision REV] [--json]",
                         opts, &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    if (a.npos == 2 && !strcmp(a.pos[0], "pull"))
        return pull(&a, a.pos[1], a.val[0], a.val[3], a.val[2] != NULL);
    if (a.npos != 2 || strcmp(a.pos[0], "import") != 0) {
        cli_error("model: usage: mnemo model import PATH [--name NAME] [--max-words N] | "
                  "mnemo model pull REPO [--name NAME] [--revision REV]");
        return EXIT_USAGE;
    }
    int max_words = 0;
    if (a.val[1] && (code = cli_int(a.val[1], "max-words", 1, 1 << 30, &max_words)))
        return code;
    char name[256];
    if (a.val[0])
        snprintf(name, sizeof name, "%s", a.val[0]);
    else
        default_name(a.pos[1], name, sizeof name);
    mnemo *m;
    if ((code = cli_open(&a, &m)))
        return code;
    char *out = NULL;
    int rc = mnemo_model_import(m, a.pos[1], name, (size_t)max_words, &out);
    if (rc) {
        code = cli_fail(m, rc, a.val[2] != NULL);
        mnemo_close(m);
        return code;
    }
    if (a.val[2]) {
        puts(out);
    } else {
        printf("imported %s as '%s'\n%s\n", a.pos[1], name, out);
        const char *prov = strstr(out, "\"provider\":\"local\"") ? "local" : "static";
        char set[512], word[1100];
        snprintf(set, sizeof set, "model=%s", name);
        printf("use it with: mnemo --set provider=%s --set %s index\n"
               "or in mnemo.json: {\"provider\": \"%s\", \"model\": \"%s\"}\n",
               prov, cli_shell_word(set, word, sizeof word), prov, name);
    }
    mnemo_free(out);
    mnemo_close(m);
    return EXIT_OK;
}
