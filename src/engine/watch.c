/*
 * watch.c - keeping the index fresh with inotify.
 *
 * Watches every folder under the memory roots (not following symlinks) and
 * the workspace folder itself (for MEMORY.md, USER.md and memory/ being
 * created or replaced). Events only mark the index dirty; a sync runs once
 * no event has arrived for the debounce period, so an editor's burst of
 * writes, renames and deletes costs one sync. New folders are picked up by
 * re-adding watches after every sync.
 *
 * mnemo_refresh is the same without a loop or a thread, for a caller that
 * answers requests one at a time (mnemo mcp): a handle keeps its watch,
 * and each call syncs only when events arrived since the last.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/backend.h"
#include "engine/sync.h"
#include "engine/core.h"
#include "text/media.h"
#include "util/time.h"
#include "engine/walk.h"
#include "engine/watch.h"

#define WATCH_MASK                                                                             \
    (IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO |       \
     IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)

typedef struct watch_set {
    int fd;
    int *filtered; /* wd -> 1 when only root-file names count */
    size_t cap;
    int pending;   /* mnemo_refresh: a change not synced yet */
} watch_set;

static void mark(watch_set *w, int wd, int filtered)
{
    if (wd < 0)
        return;
    if ((size_t)wd >= w->cap) {
        size_t cap = (size_t)wd * 2 + 16;
        int *v = realloc(w->filtered, cap * sizeof *v);
        if (!v)
            return;
        memset(v + w->cap, 0, (cap - w->cap) * sizeof *v);
        w->filtered = v;
        w->cap = cap;
    }
    w->filtered[wd] = filtered;
}

static void watch_tree(watch_set *w, const char *dir, int depth)
{
    if (depth > 64)
        return;
    mark(w, inotify_add_watch(w->fd, dir, WATCH_MASK), 0);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' || strcmp(de->d_name, "node_modules") == 0)
            continue;
        char sub[PATH_MAX];
        if ((size_t)snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name) >= sizeof sub)
            continue;
        struct stat st;
        if (de->d_type == DT_DIR ||
            (de->d_type == DT_UNKNOWN && lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)))
            watch_tree(w, sub, depth + 1);
    }
    closedir(d);
}

static void watch_roots(mnemo *m, watch_set *w)
{
    walk_roots roots = {0};
    if (walk_roots_build(m->workspace, cfg_str(m->cfg, CFG_EXTRA_PATHS), core_sessions_dir(m), core_media(m),
                         &roots, &m->err))
        return;
    mark(w, inotify_add_watch(w->fd, m->workspace, WATCH_MASK), 1);
    for (size_t i = 0; i < roots.n; i++) {
        const walk_root *r = &roots.v[i];
        struct stat st;
        if (r->is_dir && lstat(r->abs, &st) == 0 && S_ISDIR(st.st_mode)) {
            watch_tree(w, r->abs, 0);
        } else if (!r->is_dir) {
            /* A file root outside the workspace: watch its folder. */
            char dir[PATH_MAX];
            snprintf(dir, sizeof dir, "%s", r->abs);
            char *slash = strrchr(dir, '/');
            if (slash && slash != dir) {
                *slash = 0;
                if (strcmp(dir, m->workspace) != 0)
                    mark(w, inotify_add_watch(w->fd, dir, WATCH_MASK), 1);
            }
        }
    }
    walk_roots_cleanup(&roots);
}

static int relevant_name(const char *name)
{
    static const char *const names[] = {"MEMORY.md", "memory.md", "USER.md", "user.md", "memory"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(name, names[i]) == 0)
            return 1;
    return name[0] != '.' && (strstr(name, ".md") != NULL || media_of_name(name));
}

/* Reads the events waiting on W: 1 when one of them may change what is
 * indexed (a memory file or folder, or lost events). */
static int drain(watch_set *w)
{
    int dirty = 0;
    char events[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t len;
    while ((len = read(w->fd, events, sizeof events)) > 0) {
        for (char *p = events; p < events + len;) {
            struct inotify_event *ev = (struct inotify_event *)(void *)p;
            int filtered = ev->wd >= 0 && (size_t)ev->wd < w->cap && w->filtered[ev->wd];
            if ((ev->mask & IN_Q_OVERFLOW) || !filtered || (ev->len && relevant_name(ev->name)))
                if (!ev->len || ev->name[0] != '.' || (ev->mask & IN_Q_OVERFLOW))
                    dirty = 1;
            p += sizeof *ev + ev->len;
        }
    }
    return dirty;
}

int mnemo_watch(mnemo *m, const volatile int *stop,
                void (*on_sync)(void *ud, int rc, const mnemo_sync_stats *stats), void *ud)
{
    watch_set w = {inotify_init1(IN_NONBLOCK | IN_CLOEXEC), NULL, 0, 0};
    if (w.fd < 0)
        return core_error(m, MNEMO_IO, "inotify: %s", strerror(errno));
    double debounce = (double)cfg_int(m->cfg, CFG_WATCH_DEBOUNCE_MS) / 1000.0;
    mnemo_sync_stats stats;
    watch_roots(m, &w);
    int rc;
    BACKEND_CALL(m, BACKEND_WRITE, rc, sync_run(m, m->be->sync, NULL, &stats));
    if (on_sync)
        on_sync(ud, rc, &stats);
    int dirty = 0;
    double last = 0;
    while (!*stop) {
        struct pollfd p = {w.fd, POLLIN, 0};
        int timeout = 250;
        if (dirty) {
            double left = debounce - (time_mono() - last);
            if (left < 0.25)
                timeout = left <= 0 ? 0 : (int)(left * 1000);
        }
        int n = poll(&p, 1, timeout);
        if (n < 0 && errno != EINTR) {
            rc = core_error(m, MNEMO_IO, "poll: %s", strerror(errno));
            break;
        }
        if (n > 0 && drain(&w)) {
            dirty = 1;
            last = time_mono();
        }
        if (dirty && time_mono() - last >= debounce) {
            dirty = 0;
            BACKEND_CALL(m, BACKEND_WRITE, rc, sync_run(m, m->be->sync, NULL, &stats));
            if (on_sync)
                on_sync(ud, rc, &stats);
            watch_roots(m, &w);
        }
    }
    close(w.fd);
    free(w.filtered);
    return *stop ? MNEMO_OK : rc;
}

int mnemo_refresh(mnemo *m, int *synced, mnemo_sync_stats *stats)
{
    mnemo_sync_stats local;
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof *stats);
    if (synced)
        *synced = 0;
    if (!m)
        return MNEMO_INVALID;
    core_clear(m);
    watch_set *w = m->watch;
    if (!w) {
        /* The first call: watch, then sync whatever changed meanwhile. */
        int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (fd < 0)
            return core_error(m, MNEMO_IO, "inotify: %s", strerror(errno));
        if (!(w = calloc(1, sizeof *w))) {
            close(fd);
            return core_error(m, MNEMO_NOMEM, "out of memory");
        }
        w->fd = fd;
        w->pending = 1;
        m->watch = w;
        watch_roots(m, w);
    }
    /* Events that arrive while the sync runs are read at the next call. */
    if (drain(w))
        w->pending = 1;
    if (!w->pending)
        return MNEMO_OK;
    int rc;
    BACKEND_CALL(m, BACKEND_WRITE, rc, sync_run(m, m->be->sync, NULL, stats));
    if (synced)
        *synced = 1;
    w->pending = rc != MNEMO_OK; /* tried again at the next call */
    watch_roots(m, w);
    return rc;
}

void watch_close(mnemo *m)
{
    watch_set *w = m->watch;
    if (!w)
        return;
    close(w->fd);
    free(w->filtered);
    free(w);
    m->watch = NULL;
}
