/*
 * walk.c - memory roots and the file scan (see walk.h).
 *
 * The scan walks folders with openat()/fdopendir() and O_NOFOLLOW, so a
 * symlink is never entered and a folder renamed during the scan cannot
 * redirect it. d_type avoids a stat for folders; regular files need one
 * fstatat() each for their size and mtime.
 */
#include "engine/walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mnemo.h"
#include "text/media.h"
#include "util/glob.h"
#include "util/hash.h"

#define MAX_DEPTH 64

static const char *const root_files[] = {"MEMORY.md", "memory.md", "USER.md", "user.md"};

static int add_root2(walk_roots *r, const char *abs, const char *display, const char *pattern,
                     int is_dir, int sessions);

static int add_root(walk_roots *r, const char *abs, const char *display, const char *pattern,
                    int is_dir)
{
    return add_root2(r, abs, display, pattern, is_dir, 0);
}

static int add_root2(walk_roots *r, const char *abs, const char *display, const char *pattern,
                     int is_dir, int sessions)
{
    walk_root *v = realloc(r->v, (r->n + 1) * sizeof *v);
    if (!v)
        return MNEMO_NOMEM;
    r->v = v;
    walk_root *x = &v[r->n];
    x->abs = strdup(abs);
    x->display = strdup(display);
    x->pattern = pattern ? strdup(pattern) : NULL;
    x->is_dir = is_dir;
    x->sessions = sessions;
    x->media = 0;
    if (!x->abs || !x->display || (pattern && !x->pattern)) {
        free(x->abs);
        free(x->display);
        free(x->pattern);
        return MNEMO_NOMEM;
    }
    r->n++;
    return MNEMO_OK;
}

void walk_roots_cleanup(walk_roots *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].abs);
        free(r->v[i].display);
        free(r->v[i].pattern);
    }
    free(r->v);
    r->v = NULL;
    r->n = 0;
}

char *walk_abs(const char *workspace, const char *path)
{
    buf b;
    buf_init(&b, PATH_MAX * 2);
    if (path[0] == '/')
        buf_puts(&b, path);
    else
        buf_printf(&b, "%s/%s", workspace, path);
    return buf_detach(&b);
}

int walk_media_read(const char *workspace, const char *path, int64_t max_bytes, const char *hash,
                    buf *out)
{
    buf_init(out, (size_t)max_bytes + 1);
    char *abs = walk_abs(workspace, path);
    if (!abs)
        return MNEMO_NOMEM;
    int fd = open(abs, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    free(abs);
    struct stat st;
    int rc = fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > max_bytes
                 ? MNEMO_NOTFOUND
             : buf_reserve(out, (size_t)st.st_size) ? MNEMO_NOMEM
                                                    : MNEMO_OK;
    while (!rc) {
        if (out->len >= out->cap - 1 && buf_reserve(out, 1)) {
            rc = out->err == MNEMO_NOMEM ? MNEMO_NOMEM : MNEMO_NOTFOUND; /* grew past the limit */
            break;
        }
        ssize_t k = read(fd, out->data + out->len, out->cap - out->len - 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            rc = k < 0 ? MNEMO_NOTFOUND : MNEMO_OK;
            break;
        }
        out->len += (size_t)k;
    }
    if (fd >= 0)
        close(fd);
    char h[HASH_HEX_LEN + 1];
    if (!rc) {
        hash_hex(out->data ? out->data : "", out->len, h);
        if (strcmp(h, hash) != 0)
            rc = MNEMO_NOTFOUND;
    }
    return rc;
}

int walk_is_root_file(const char *name)
{
    for (size_t i = 0; i < sizeof root_files / sizeof *root_files; i++)
        if (strcmp(name, root_files[i]) == 0)
            return 1;
    return 0;
}

/* Stored-path prefix for ABS: relative when inside the workspace. */
static const char *display_of(const char *workspace, const char *abs)
{
    size_t wl = strlen(workspace);
    if (strncmp(abs, workspace, wl) == 0 && abs[wl] == '/')
        return abs + wl + 1;
    return abs;
}

int walk_roots_build(const char *workspace, const char *extra_json, const char *sessions_dir,
                     int media, walk_roots *out, buf *err)
{
    memset(out, 0, sizeof *out);
    int rc = MNEMO_OK;
    buf p;
    buf_init(&p, PATH_MAX * 2);
    for (size_t i = 0; i < sizeof root_files / sizeof *root_files; i++) {
        buf_reset(&p);
        buf_printf(&p, "%s/%s", workspace, root_files[i]);
        if ((rc = buf_err(&p)) || (rc = add_root(out, p.data, root_files[i], NULL, 0)))
            goto done;
    }
    buf_reset(&p);
    buf_printf(&p, "%s/memory", workspace);
    if ((rc = buf_err(&p)) || (rc = add_root(out, p.data, "memory", "**/*.md", 1)))
        goto done;

    json_t *arr = json_loads(extra_json ? extra_json : "[]", 0, NULL);
    size_t i;
    json_t *item;
    json_array_foreach(arr, i, item)
    {
        const char *path = json_is_string(item) ? json_string_value(item)
                                                : json_string_value(json_object_get(item, "path"));
        const char *pattern = json_is_object(item)
                                  ? json_string_value(json_object_get(item, "pattern"))
                                  : NULL;
        if (!path || !*path)
            continue;
        buf_reset(&p);
        if (path[0] == '~' && path[1] == '/' && getenv("HOME"))
            buf_printf(&p, "%s%s", getenv("HOME"), path + 1);
        else if (path[0] == '/')
            buf_puts(&p, path);
        else
            buf_printf(&p, "%s/%s", workspace, path);
        if ((rc = buf_err(&p)))
            break;
        char real[PATH_MAX];
        struct stat st;
        if (!realpath(p.data, real) || stat(real, &st) != 0) {
            /* A missing extra path is reported by the scan, not fatal. */
            rc = add_root(out, p.data, display_of(workspace, p.data), NULL, 0);
        } else if (S_ISDIR(st.st_mode)) {
            rc = add_root(out, real, display_of(workspace, real),
                          pattern && *pattern ? pattern : "**/*.md", 1);
        } else {
            rc = add_root(out, real, display_of(workspace, real), NULL, 0);
        }
        if (rc)
            break;
        out->v[out->n - 1].media = media;
    }
    json_decref(arr);
    if (!rc && sessions_dir && *sessions_dir) {
        /* Resolved as extra paths are; a missing folder holds no sessions yet. */
        buf_reset(&p);
        if (sessions_dir[0] == '~' && sessions_dir[1] == '/' && getenv("HOME"))
            buf_printf(&p, "%s%s", getenv("HOME"), sessions_dir + 1);
        else if (sessions_dir[0] == '/')
            buf_puts(&p, sessions_dir);
        else
            buf_printf(&p, "%s/%s", workspace, sessions_dir);
        char real[PATH_MAX];
        if (!(rc = buf_err(&p)) && realpath(p.data, real))
            rc = add_root2(out, real, display_of(workspace, real), "**/*.jsonl", 1, 1);
    }
    (void)err;
done:
    buf_cleanup(&p);
    if (rc)
        walk_roots_cleanup(out);
    return rc;
}

const walk_root *walk_root_of(const walk_roots *roots, const char *abs)
{
    for (size_t i = 0; i < roots->n; i++) {
        const walk_root *r = &roots->v[i];
        size_t n = strlen(r->abs);
        if (!r->is_dir && strcmp(abs, r->abs) == 0)
            return r;
        if (r->is_dir && strncmp(abs, r->abs, n) == 0 && abs[n] == '/')
            return r;
    }
    return NULL;
}

/* ----------------------------------------------------------------------
 * Scan
 * -------------------------------------------------------------------- */

static int add_entry(walk_list *l, const char *path, const struct stat *st, int entries,
                     const char *skip)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        walk_entry *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return MNEMO_NOMEM;
        l->v = v;
        l->cap = cap;
    }
    walk_entry *e = &l->v[l->n];
    memset(e, 0, sizeof *e);
    e->path = strdup(path);
    if (!e->path)
        return MNEMO_NOMEM;
    if (st) {
        e->size = st->st_size;
        e->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
        e->dev = st->st_dev;
        e->ino = st->st_ino;
    }
    e->entries = entries;
    e->skip = skip;
    l->n++;
    return MNEMO_OK;
}

void walk_list_cleanup(walk_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].path);
    free(l->v);
    memset(l, 0, sizeof *l);
}

typedef struct scan {
    walk_list *out;
    const walk_root *root;
    buf rel; /* path relative to the root folder */
} scan;

/* Why a folder cannot be read, for the skipped list (a static string: the
 * entry keeps the pointer). */
static const char *unreadable_dir(int err)
{
    return err == EACCES || err == EPERM ? "unreadable folder: Permission denied"
                                         : "unreadable folder";
}

static int scan_dir(scan *s, int dfd, int depth)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return MNEMO_OK; /* vanished or unreadable: nothing to list */
    }
    int rc = MNEMO_OK;
    size_t base = s->rel.len;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        if (name[0] == '.' || strcmp(name, "node_modules") == 0)
            continue;
        if (s->root->sessions && (strcmp(name, "subagents") == 0 ||
                                  strcmp(name, "tool-results") == 0 ||
                                  strcmp(name, "workflows") == 0))
            continue; /* Claude Code keeps these beside a session; not sessions */
        s->rel.len = base;
        if (base)
            buf_putc(&s->rel, '/');
        buf_puts(&s->rel, name);
        if ((rc = buf_err(&s->rel)))
            break;
        unsigned char type = de->d_type;
        struct stat st;
        int have_stat = 0;
        if (type == DT_UNKNOWN || type == DT_REG) {
            if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                int err = errno;
                if (err == ENOENT)
                    continue; /* vanished */
                /* Listed but not reachable (a folder that can be read but
                 * not entered): skipped with why, never dropped unsaid. */
                if (!glob_match(s->root->pattern, s->rel.data))
                    continue;
                buf full;
                buf_init(&full, PATH_MAX * 2);
                buf_printf(&full, "%s/%s", s->root->display, s->rel.data);
                rc = buf_err(&full)
                         ? MNEMO_NOMEM
                         : add_entry(s->out, full.data, NULL, 0,
                                     err == EACCES || err == EPERM
                                         ? "unreadable: Permission denied (its folder cannot be "
                                           "entered)"
                                         : "unreadable");
                buf_cleanup(&full);
                if (rc)
                    break;
                continue;
            }
            have_stat = 1;
            type = S_ISDIR(st.st_mode)   ? DT_DIR
                   : S_ISREG(st.st_mode) ? DT_REG
                   : S_ISLNK(st.st_mode) ? DT_LNK
                                         : DT_FIFO;
        }
        buf full;
        buf_init(&full, PATH_MAX * 2);
        buf_printf(&full, "%s/%s", s->root->display, s->rel.data);
        if ((rc = buf_err(&full))) {
            buf_cleanup(&full);
            break;
        }
        if (type == DT_DIR) {
            if (depth < MAX_DEPTH) {
                int fd = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0) {
                    rc = scan_dir(s, fd, depth + 1);
                } else if (errno != ENOENT) {
                    /* Listed as skipped, with why: its notes leave the index, and
                     * a folder dropped without a word looks like a deletion. */
                    const char *why = unreadable_dir(errno);
                    if (!have_stat)
                        have_stat = fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0;
                    rc = add_entry(s->out, full.data, have_stat ? &st : NULL, 0, why);
                }
            } else {
                /* Reported, not silently left out (deeper trees are not read:
                 * a loop of bind mounts must not make the walk endless). */
                rc = add_entry(s->out, full.data, have_stat ? &st : NULL, 0,
                               "folder nested more than 64 levels deep (not read)");
            }
        } else if (type == DT_REG) {
            int media = s->root->media & media_of_name(name);
            if (glob_match(s->root->pattern, s->rel.data) || media) {
                rc = add_entry(s->out, full.data, have_stat ? &st : NULL, 0, NULL);
                if (!rc) {
                    s->out->v[s->out->n - 1].sessions = s->root->sessions;
                    s->out->v[s->out->n - 1].media = media;
                }
            }
        } else if (type == DT_LNK) {
            struct stat target;
            int is_dir = fstatat(dirfd(d), name, &target, 0) == 0 && S_ISDIR(target.st_mode);
            if (is_dir || glob_match(s->root->pattern, s->rel.data) ||
                (s->root->media & media_of_name(name))) {
                struct stat ls;
                rc = add_entry(s->out, full.data,
                               fstatat(dirfd(d), name, &ls, AT_SYMLINK_NOFOLLOW) == 0 ? &ls : NULL,
                               0, "symlink (not followed)");
            }
        } else if (glob_match(s->root->pattern, s->rel.data)) {
            rc = add_entry(s->out, full.data, have_stat ? &st : NULL, 0, "not a regular file");
        }
        buf_cleanup(&full);
        if (rc)
            break;
    }
    s->rel.len = base;
    if (s->rel.data)
        s->rel.data[base] = 0;
    closedir(d);
    return rc;
}

static int is_root_file(const char *display)
{
    for (size_t i = 0; i < sizeof root_files / sizeof *root_files; i++)
        if (strcmp(display, root_files[i]) == 0)
            return 1;
    return 0;
}

static int scan_root(const walk_root *r, walk_list *out, int builtin)
{
    struct stat st;
    if (lstat(r->abs, &st) != 0) {
        if (builtin)
            return MNEMO_OK;
        return add_entry(out, r->display, NULL, 0, "extra path not found");
    }
    if (S_ISLNK(st.st_mode))
        return add_entry(out, r->display, &st, 0, "symlink (not followed)");
    if (!r->is_dir) {
        if (!S_ISREG(st.st_mode))
            return add_entry(out, r->display, &st, 0, "not a regular file");
        int rc = add_entry(out, r->display, &st, builtin && is_root_file(r->display), NULL);
        if (!rc)
            out->v[out->n - 1].media = r->media & media_of_name(r->display);
        return rc;
    }
    if (!S_ISDIR(st.st_mode))
        return MNEMO_OK;
    int fd = open(r->abs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? MNEMO_OK : add_entry(out, r->display, &st, 0, unreadable_dir(errno));
    scan s = {out, r, {0}};
    buf_init(&s.rel, PATH_MAX * 2);
    buf_puts(&s.rel, "");
    int rc = scan_dir(&s, fd, 0);
    buf_cleanup(&s.rel);
    return rc;
}

static int cmp_inode(const void *a, const void *b)
{
    const walk_entry *x = *(const walk_entry *const *)a, *y = *(const walk_entry *const *)b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return x < y ? -1 : x > y; /* keep the first found (root order) */
}

static int cmp_path(const void *a, const void *b)
{
    return strcmp(((const walk_entry *)a)->path, ((const walk_entry *)b)->path);
}

int walk_scan(const char *workspace, const walk_roots *roots, walk_list *out)
{
    (void)workspace;
    memset(out, 0, sizeof *out);
    int rc = MNEMO_OK;
    for (size_t i = 0; i < roots->n && !rc; i++)
        rc = scan_root(&roots->v[i], out, i < sizeof root_files / sizeof *root_files + 1);
    if (rc) {
        walk_list_cleanup(out);
        return rc;
    }
    /* The same real file once: drop later duplicates by (dev, inode). */
    walk_entry **idx = malloc((out->n ? out->n : 1) * sizeof *idx);
    if (!idx) {
        walk_list_cleanup(out);
        return MNEMO_NOMEM;
    }
    for (size_t i = 0; i < out->n; i++)
        idx[i] = &out->v[i];
    if (out->n > 1)
        qsort(idx, out->n, sizeof *idx, cmp_inode);
    for (size_t i = 1; i < out->n; i++) {
        walk_entry *a = idx[i - 1], *b = idx[i];
        if (!a->skip && !b->skip && a->ino && a->dev == b->dev && a->ino == b->ino) {
            free(b->path);
            b->path = NULL;
            idx[i] = a; /* so a third copy compares against the kept one */
        }
    }
    free(idx);
    size_t k = 0;
    for (size_t i = 0; i < out->n; i++)
        if (out->v[i].path)
            out->v[k++] = out->v[i];
    out->n = k;
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, cmp_path);
    /* Two roots can also list one path (memory/ named as an extra path). */
    k = 0;
    for (size_t i = 0; i < out->n; i++) {
        if (k && strcmp(out->v[k - 1].path, out->v[i].path) == 0) {
            free(out->v[i].path);
            continue;
        }
        out->v[k++] = out->v[i];
    }
    out->n = k;
    return MNEMO_OK;
}
