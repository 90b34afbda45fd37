/*
 * cmd_index.c - `mnemo index`: sync the index, once or continuously.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static volatile int stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

typedef struct bar {
    int active;
    size_t last_done;
    const char *phase; /* the phase timed since T0 */
    double t0;
} bar;

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ", 17.4/s, 3m05s left" once a phase has run a second; "" before. */
static void rate_eta(const bar *b, const mnemo_progress *p, char *out, size_t n)
{
    double el = mono_s() - b->t0;
    *out = 0;
    if (el < 1.0 || p->done == 0)
        return;
    double rate = (double)p->done / el;
    if (p->done >= p->total) {
        snprintf(out, n, ", %.1f/s, %.0fs", rate, el);
        return;
    }
    long left = (long)((double)(p->total - p->done) / rate + 0.5);
    if (left >= 3600)
        snprintf(out, n, ", %.1f/s, %ldh%02ldm left", rate, left / 3600, left / 60 % 60);
    else
        snprintf(out, n, ", %.1f/s, %ldm%02lds left", rate, left / 60, left % 60);
}

static void progress(void *ud, const mnemo_progress *p)
{
    bar *b = ud;
    if ((strcmp(p->phase, "index") != 0 && strcmp(p->phase, "embed") != 0) || p->total == 0)
        return;
    /* Redraw about 100 times per run at most. */
    size_t step = p->total / 100 + 1;
    if (p->done != p->total && b->active && p->done - b->last_done < step)
        return;
    if (!b->phase || strcmp(b->phase, p->phase) != 0) {
        b->phase = strcmp(p->phase, "embed") == 0 ? "embed" : "index";
        b->t0 = mono_s();
    }
    b->active = 1;
    b->last_done = p->done;
    int width = 30, fill = (int)((double)p->done / (double)p->total * width);
    char eta[64];
    rate_eta(b, p, eta, sizeof eta);
    if (strcmp(p->phase, "embed") == 0)
        fprintf(stderr, "\rembedding [%.*s%*s] %zu/%zu chunks%s\033[K", fill,
                "##############################", width - fill, "", p->done, p->total, eta);
    else
        fprintf(stderr, "\rindexing [%.*s%*s] %zu/%zu files, %.1f MB%s\033[K", fill,
                "##############################", width - fill, "", p->done, p->total,
                (double)p->bytes / 1e6, eta);
    if (p->done == p->total)
        fputc('\n', stderr);
    fflush(stderr);
}

static void print_stats(FILE *f, const mnemo_sync_stats *s, const char *db, int json)
{
    if (json) {
        fprintf(f,
                "{\"filesSeen\":%zu,\"filesAdded\":%zu,\"filesChanged\":%zu,"
                "\"filesTouched\":%zu,\"filesUnchanged\":%zu,\"filesRemoved\":%zu,"
                "\"filesRenamed\":%zu,\"filesSkipped\":%zu,\"chunksAdded\":%zu,"
                "\"chunksRemoved\":%zu,\"bytesRead\":%llu,\"seconds\":%.3f,\"rebuilt\":%s,"
                "\"chunksEmbedded\":%zu,\"embedCacheHits\":%zu,\"vectors\":%zu",
                s->files_seen, s->files_added, s->files_changed, s->files_touched,
                s->files_unchanged, s->files_removed, s->files_renamed, s->files_skipped,
                s->chunks_added, s->chunks_removed, (unsigned long long)s->bytes_read,
                s->seconds, s->rebuilt ? "true" : "false", s->chunks_embedded,
                s->embed_cache_hits, s->vectors_total);
        if (s->embed_warning) {
            fputs(",\"embedWarning\":", f);
            cli_json_string(f, s->embed_warning);
        }
        fputs("}\n", f);
        fflush(f);
        return;
    }
    fprintf(f,
            "%zu files: %zu added, %zu changed, %zu renamed, %zu removed, %zu unchanged, "
            "%zu skipped; %zu chunks written, %.1f MB read in %.3f s\n",
            s->files_seen, s->files_added, s->files_changed, s->files_renamed, s->files_removed,
            s->files_unchanged + s->files_touched, s->files_skipped, s->chunks_added,
            (double)s->bytes_read / 1e6, s->seconds);
    if (s->rebuilt)
        fprintf(f, "built a fresh index (%s): %s\n", s->rebuild_reason ? s->rebuild_reason : "",
                db);
    if (s->chunks_embedded || s->embed_cache_hits)
        fprintf(f, "embedded %zu passages (%zu from the cache); %zu chunks have vectors\n",
                s->chunks_embedded, s->embed_cache_hits, s->vectors_total);
    if (s->embed_warning)
        fprintf(stderr, "mnemo: warning: %s\n", s->embed_warning);
    if (s->files_skipped)
        fprintf(f, "skipped files are listed by: mnemo status\n");
    fflush(f);
}

typedef struct watch_ud {
    mnemo *m;
    int json;
    int quiet;
} watch_ud;

static void on_sync(void *ud, int rc, const mnemo_sync_stats *s)
{
    watch_ud *w = ud;
    if (rc) {
        cli_error("sync failed: %s", mnemo_errmsg(w->m));
        return;
    }
    if (!w->quiet)
        print_stats(stdout, s, mnemo_db_path(w->m), w->json);
}

int cmd_index(int argc, char **argv)
{
    static const cli_opt opts[] = {
        {"force", 'f', NULL, "rebuild from scratch (built beside the old index, then swapped in)"},
        {"watch", 0, NULL, "keep the index fresh: sync after files change (Ctrl-C stops)"},
        {"quiet", 'q', NULL, "print nothing but errors"},
        {"json", 0, NULL, "print sync statistics as JSON"},
        {NULL, 0, NULL, NULL},
    };
    cli_args a;
    int code = cli_parse(argc, argv, "index", "mnemo index [--force] [--watch] [--quiet] [--json]", opts, &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    if (a.npos) {
        cli_error("index: unexpected argument '%s'", a.pos[0]);
        return EXIT_USAGE;
    }
    int force = a.val[0] != NULL, watch = a.val[1] != NULL, quiet = a.val[2] != NULL,
        json = a.val[3] != NULL;
    mnemo *m;
    if ((code = cli_open(&a, &m)))
        return code;
    int rc;
    if (watch) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        if (force) {
            mnemo_sync_opts so = {1, NULL, NULL};
            rc = mnemo_sync(m, &so, NULL);
            if (rc) {
                cli_error("%s", mnemo_errmsg(m));
                mnemo_close(m);
                return cli_exit_code(rc);
            }
        }
        if (!quiet)
            fprintf(stderr, "watching %s (Ctrl-C to stop)\n", mnemo_workspace(m));
        watch_ud w = {m, json, quiet};
        rc = mnemo_watch(m, &stop_flag, on_sync, &w);
    } else {
        bar b = {0, 0, NULL, 0};
        mnemo_sync_opts so = {force, NULL, &b};
        if (!quiet && !json && isatty(2))
            so.progress = progress;
        mnemo_sync_stats s;
        rc = mnemo_sync(m, &so, &s);
        if (b.active && b.last_done != 0 && rc)
            fputc('\n', stderr);
        if (!rc && !quiet)
            print_stats(stdout, &s, mnemo_db_path(m), json);
    }
    code = rc ? cli_fail(m, rc, json) : EXIT_OK;
    mnemo_close(m);
    return code;
}
