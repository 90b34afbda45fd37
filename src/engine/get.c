/*
 * get.c - reading part of a memory file, confined to the memory roots.
 *
 * The path is resolved with realpath() (so "..", absolute paths and
 * symlinks all end up as a real location) and must then lie inside a root
 * and be a file the scan would index: hidden entries, node_modules and
 * files outside the root's pattern are refused like files outside the roots.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "get.h"
#include "core.h"
#include "text/media.h"
#include "util/glob.h"
#include "util/time.h"
#include "util/utf8.h"
#include "walk.h"

#define GET_LINES 120
#define GET_CHARS 12000

/* Is REL (path under a folder root) something the scan would list? */
static int indexable(const walk_root *r, const char *rel)
{
    for (const char *p = rel; *p;) {
        if (*p == '.' || strncmp(p, "node_modules/", 13) == 0)
            return 0;
        const char *slash = strchr(p, '/');
        if (!slash)
            break;
        p = slash + 1;
    }
    return glob_match(r->pattern, rel) || (r->media & media_of_name(rel));
}

/* Resolves "." and ".." in the absolute path P lexically, in place. Used
 * for paths that do not exist, so that a missing file outside the roots is
 * refused rather than reported missing (no probing outside the roots). */
static void normalize_lexically(char *p)
{
    char *out = p, *s = p;
    while (*s) {
        while (*s == '/')
            s++;
        char *e = s;
        while (*e && *e != '/')
            e++;
        size_t n = (size_t)(e - s);
        if (n == 1 && s[0] == '.') {
        } else if (n == 2 && s[0] == '.' && s[1] == '.') {
            while (out > p && out[-1] != '/')
                out--;
            if (out > p)
                out--;
        } else if (n) {
            *out++ = '/';
            memmove(out, s, n);
            out += n;
        }
        s = e;
    }
    if (out == p)
        *out++ = '/';
    *out = 0;
}

static void excerpt_cleanup(mnemo_excerpt *e)
{
    if (!e)
        return;
    free(e->path);
    free(e->text);
    memset(e, 0, sizeof *e);
}

void mnemo_excerpt_cleanup(mnemo_excerpt *e) { excerpt_cleanup(e); }

/* The number at *S (decimal), S moved past its digits: 1 to 2^30, -1 for
 * another number (0, too large), 0 when there are no digits. */
static int line_number(const char **s)
{
    long v = 0;
    const char *p = *s;
    while (*p >= '0' && *p <= '9') {
        if (v <= (1L << 30))
            v = v * 10 + (*p - '0');
        p++;
    }
    if (p == *s)
        return 0;
    *s = p;
    return v < 1 || v > (1L << 30) ? -1 : (int)v;
}

/* Whether S ends in a citation's lines, as results and other tools give
 * them: "#Lx-Ly" (or "#Lx-y"), "#Lx" (that line), ":FROM:COUNT" or
 * ":FROM". The path's length into *PLEN, the lines into *FROM and *LINES
 * (0: to the default), or -1 when the lines run backwards, -2 when a line
 * number is 0 or beyond 2^30. */
static int citation(const char *s, size_t *plen, int *from, int *lines)
{
    const char *h = strrchr(s, '#');
    if (h && h > s && h[1] == 'L') {
        const char *p = h + 2;
        int a = line_number(&p), b = a;
        if (a && *p == '-') {
            p += 1 + (p[1] == 'L');
            b = line_number(&p);
        }
        if (a && b && !*p) {
            *plen = (size_t)(h - s);
            *from = a;
            *lines = a < 0 || b < 0 ? -2 : b >= a ? b - a + 1 : -1;
            return 1;
        }
    }
    const char *c = strrchr(s, ':');
    if (!c || c == s)
        return 0;
    const char *p = c + 1;
    int n = line_number(&p);
    if (!n || *p)
        return 0;
    /* PATH:FROM:COUNT when the part before is PATH:FROM too. */
    const char *c2 = c - 1;
    while (c2 > s && *c2 >= '0' && *c2 <= '9')
        c2--;
    if (c2 > s && *c2 == ':' && c2 + 1 < c) {
        p = c2 + 1;
        int f = line_number(&p);
        if (f && p == c) {
            *plen = (size_t)(c2 - s);
            *from = f;
            *lines = f < 0 || n < 0 ? -2 : n;
            return 1;
        }
    }
    *plen = (size_t)(c - s);
    *from = n;
    *lines = n < 0 ? -2 : 0;
    return 1;
}

static int get_lines(mnemo *m, const char *path, int from, int nlines, mnemo_excerpt *out);

int get_file(mnemo *m, const char *path, int from, int nlines, mnemo_excerpt *out)
{
    memset(out, 0, sizeof *out);
    core_clear(m);
    if (!path || !*path)
        return core_error(m, MNEMO_INVALID, "no path given");
    if (strlen(path) >= PATH_MAX)
        return core_error(m, MNEMO_INVALID, "path too long (%zu bytes; at most %d)",
                          strlen(path), PATH_MAX - 1);
    /* A citation names a file and its lines, unless a file has that very
     * name. */
    size_t plen;
    int cfrom, clines;
    if (!citation(path, &plen, &cfrom, &clines))
        return get_lines(m, path, from, nlines, out);
    char *abs = walk_abs(m->workspace, path);
    struct stat st;
    int literal = abs && lstat(abs, &st) == 0;
    free(abs);
    if (literal)
        return get_lines(m, path, from, nlines, out);
    if (clines == -2)
        return core_error(m, MNEMO_INVALID,
                          "%s: the lines of a citation are numbered from 1 to 1073741824", path);
    if (clines < 0)
        return core_error(m, MNEMO_INVALID, "%s: the lines of the citation run backwards",
                          path);
    char *file = strndup(path, plen);
    if (!file)
        return core_error(m, MNEMO_NOMEM, "out of memory");
    int rc = get_lines(m, file, from > 0 ? from : cfrom, nlines > 0 ? nlines : clines, out);
    free(file);
    return rc;
}

/* An image or audio file (multimodal) read as a note: what it is, in
 * lines, never its bytes. */
static int get_media(mnemo *m, int fd, const struct stat *st, const char *real, const char *path,
                     mnemo_excerpt *out)
{
    unsigned char head[64];
    ssize_t n = pread(fd, head, sizeof head, 0);
    const char *mime = n > 0 ? media_sniff(head, (size_t)n) : NULL;
    if (!mime)
        return core_error(m, MNEMO_INVALID,
                          "%s is not an image or audio file: its content is no format mnemo "
                          "knows",
                          path);
    size_t wl = strlen(m->workspace);
    const char *shown = strncmp(real, m->workspace, wl) == 0 && real[wl] == '/' ? real + wl + 1
                                                                               : real;
    char when[32];
    time_format_iso((double)st->st_mtim.tv_sec, when);
    buf t;
    buf_init(&t, 0);
    media_label(&t, media_of_mime(mime), shown);
    buf_printf(&t, "\nType: %s\nSize: %lld bytes\nModified: %s\n", mime,
               (long long)st->st_size, when);
    if (buf_err(&t)) {
        buf_cleanup(&t);
        return MNEMO_NOMEM;
    }
    out->from = 1;
    out->to = out->total_lines = 4;
    out->text = buf_detach(&t);
    out->path = strdup(shown);
    return out->text && out->path ? MNEMO_OK : MNEMO_NOMEM;
}

/* Lines FROM.. (NLINES of them) of the memory file PATH. */
static int get_lines(mnemo *m, const char *path, int from, int nlines, mnemo_excerpt *out)
{
    if (from <= 0)
        from = 1;
    if (nlines <= 0)
        nlines = GET_LINES;

    int rc = MNEMO_OK, fd = -1;
    char *abs = walk_abs(m->workspace, path);
    walk_roots roots = {0};
    buf content, text;
    buf_init(&content, (size_t)cfg_int(m->cfg, CFG_MAX_FILE_BYTES) + 1);
    buf_init(&text, 0);
    char real[PATH_MAX];
    if (!abs) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    if ((rc = walk_roots_build(m->workspace, cfg_str(m->cfg, CFG_EXTRA_PATHS), core_sessions_dir(m), core_media(m), &roots,
                                &m->err)))
        goto done;
    if (!realpath(abs, real)) {
        int e = errno;
        normalize_lexically(abs);
        if (!walk_root_of(&roots, abs))
            rc = core_error(m, MNEMO_DENIED, "%s is outside the memory roots of %s", path,
                            m->workspace);
        else if (e == ENOENT || e == ENOTDIR)
            rc = core_error(m, MNEMO_NOTFOUND, "no such memory file: %s", path);
        else
            rc = core_error(m, MNEMO_IO, "%s: %s", path, strerror(e));
        goto done;
    }
    const walk_root *root = walk_root_of(&roots, real);
    if (!root || (root->is_dir && !indexable(root, real + strlen(root->abs) + 1))) {
        rc = core_error(m, MNEMO_DENIED,
                        "%s is outside the memory roots (MEMORY.md, USER.md, memory/ and "
                        "extraPaths of %s)",
                        path, m->workspace);
        goto done;
    }
    fd = open(real, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        rc = core_error(m, MNEMO_IO, "%s: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = core_error(m, MNEMO_INVALID, "%s is not a regular file", path);
        goto done;
    }
    if (root->media & media_of_name(real)) {
        rc = get_media(m, fd, &st, real, path, out);
        goto done;
    }
    if (st.st_size > cfg_int(m->cfg, CFG_MAX_FILE_BYTES)) {
        rc = core_error(m, MNEMO_INVALID, "%s is too large (%lld bytes, limit %ld)", path,
                        (long long)st.st_size, cfg_int(m->cfg, CFG_MAX_FILE_BYTES));
        goto done;
    }
    for (;;) {
        if (buf_reserve(&content, 65536)) {
            rc = core_error(m, MNEMO_INVALID, "%s is too large", path);
            goto done;
        }
        ssize_t n = read(fd, content.data + content.len, content.cap - content.len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = core_error(m, MNEMO_IO, "%s: %s", path, strerror(errno));
            goto done;
        }
        if (n == 0)
            break;
        content.len += (size_t)n;
    }
    if (content.len && memchr(content.data, 0, content.len)) {
        rc = core_error(m, MNEMO_INVALID, "%s is a binary file", path);
        goto done;
    }
    const char *s = content.data ? content.data : "";
    size_t len = content.len;
    if (len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) {
        s += 3;
        len -= 3;
    }
    int line = 1, chars = 0, taken = 0;
    size_t pos = 0;
    out->from = from;
    out->to = from - 1;
    while (pos < len) {
        const char *nl = memchr(s + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - s) : len;
        if (line >= from && !out->truncated) {
            int c = (int)utf8_count(s + pos, end - pos) + 1;
            if (taken >= nlines || (taken > 0 && chars + c > GET_CHARS)) {
                out->truncated = 1;
                out->next_from = line;
            } else {
                size_t take = end - pos;
                if (c > GET_CHARS) /* one huge line: cut it */
                    take = utf8_prefix(s + pos, take, GET_CHARS - 1);
                utf8_repair(&text, s + pos, take);
                buf_putc(&text, '\n');
                chars += c;
                taken++;
                out->to = line;
            }
        }
        pos = nl ? end + 1 : len;
        line++;
    }
    out->total_lines = line - 1;
    if (buf_err(&text)) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    out->text = buf_detach(&text);
    size_t wl = strlen(m->workspace);
    out->path = strdup(strncmp(real, m->workspace, wl) == 0 && real[wl] == '/' ? real + wl + 1
                                                                              : real);
    if (!out->text || !out->path)
        rc = MNEMO_NOMEM;
done:
    if (fd >= 0)
        close(fd);
    free(abs);
    walk_roots_cleanup(&roots);
    buf_cleanup(&content);
    buf_cleanup(&text);
    if (rc)
        excerpt_cleanup(out);
    return rc;
}
