/*
 * cmd_config.c - `mnemo config show|keys|set|unset|path`: the effective
 * configuration, and writing one key of a configuration file.
 *
 * `set` and `unset` write the file `config show` would read: --config FILE
 * if given, else with --global the user file ($XDG_CONFIG_HOME/mnemo/
 * config.json), else the workspace's mnemo.json. The value goes through
 * the library's own parser (mnemo_config_set) and the new file through its
 * loader (mnemo_config_load_file) before it replaces the old one, so a bad
 * key or value is refused and the file is left as it was; the new file is
 * written beside it and renamed over it, keeping the other keys, their
 * order and the file's mode.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

enum { O_SOURCES, O_GLOBAL, O_JSON };

/* The user file, as mnemo_config_load_standard finds it; NULL when neither
 * XDG_CONFIG_HOME nor HOME is set. Caller frees. */
static char *user_file(void)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    char p[PATH_MAX];
    if (xdg && *xdg)
        snprintf(p, sizeof p, "%s/mnemo/config.json", xdg);
    else if (home && *home)
        snprintf(p, sizeof p, "%s/.config/mnemo/config.json", home);
    else
        return NULL;
    return strdup(p);
}

/* The workspace whose mnemo.json applies, found as the loader finds it:
 * --workspace, else a workspace set in the user file, else
 * MNEMO_WORKSPACE, else the current directory. Caller frees. */
static char *workspace_dir(const cli_args *a, const char *ufile)
{
    if (a->workspace)
        return strdup(a->workspace);
    char *ws = NULL;
    mnemo_config *c = NULL;
    if (ufile && mnemo_config_new(&c) == MNEMO_OK &&
        mnemo_config_load_file(c, ufile, NULL) == MNEMO_OK) {
        const char *v = mnemo_config_get(c, "workspace");
        if (v && *v)
            ws = strdup(v);
    }
    mnemo_config_free(c);
    if (ws)
        return ws;
    const char *env = getenv("MNEMO_WORKSPACE");
    return strdup(env && *env ? env : ".");
}

/* The file set and unset write (see the top of the file). Caller frees. */
static char *target_file(const cli_args *a, int global)
{
    if (a->config)
        return strdup(a->config);
    char *u = user_file();
    if (global) {
        if (!u)
            cli_error("config: neither XDG_CONFIG_HOME nor HOME is set: no user file");
        return u;
    }
    char *ws = workspace_dir(a, u);
    free(u);
    if (!ws)
        return NULL;
    size_t n = strlen(ws) + sizeof "/mnemo.json";
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/mnemo.json", ws);
    free(ws);
    return p;
}

/* KEY's value VALUE as the loader reads it from a file: a number, a
 * boolean, an array or object for those keys, else a string; *SHOWN gets
 * it as `config show` prints it (credentials masked). NULL with a message
 * printed when the library refuses it. */
static json_t *typed_value(const char *key, const char *value, json_t **shown_out)
{
    mnemo_config *c = NULL;
    char *err = NULL;
    json_t *out = NULL, *all = NULL;
    if (mnemo_config_new(&c)) {
        cli_error("out of memory");
        return NULL;
    }
    int rc = mnemo_config_set(c, key, value, "config set", &err);
    if (rc) {
        cli_error("config set: %s; the file is left as it was", err ? err : mnemo_strerror(rc));
        goto done;
    }
    const char *norm = mnemo_config_get(c, key);
    if (!norm) { /* store.FIELD: a field of the store object, for --set */
        cli_error("config set: %s is one field of store; the file takes the whole object: "
                  "mnemo config set store '{\"backend\":\"postgres\",...}'",
                  key);
        goto done;
    }
    char *s = mnemo_config_json(c, 0);
    all = s ? json_loads(s, 0, NULL) : NULL;
    mnemo_free(s);
    json_t *shown = json_object_get(all, key);
    if (json_is_integer(shown) || json_is_boolean(shown))
        out = json_incref(shown);
    else if (json_is_real(shown))
        out = json_real(strtod(norm, NULL)); /* exact, not as printed */
    else if (json_is_array(shown) || json_is_object(shown))
        out = json_loads(norm, 0, NULL); /* not redacted as show prints it */
    else
        out = json_string(norm);
    if (!out)
        cli_error("out of memory");
    else
        *shown_out = json_incref(shown);
done:
    mnemo_free(err);
    json_decref(all);
    mnemo_config_free(c);
    return out;
}

/* Writes TEXT to a new file beside PATH and checks it with the loader
 * (unless CHECK is 0), then renames it over PATH. Prints the error and
 * returns an exit code. */
static int replace_file(const char *path, const char *text, int check)
{
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    struct stat st;
    mode_t mode = stat(path, &st) == 0 ? (st.st_mode & 07777) : 0644;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) {
        cli_error("config: cannot write %s: %s", tmp, strerror(errno));
        return EXIT_ERROR;
    }
    size_t n = strlen(text), done = 0;
    while (done < n) {
        ssize_t w = write(fd, text + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    int bad = done < n || fchmod(fd, mode) != 0 || fsync(fd) != 0;
    bad |= close(fd) != 0;
    if (bad) {
        cli_error("config: cannot write %s: %s", tmp, strerror(errno));
        unlink(tmp);
        return EXIT_ERROR;
    }
    if (check) {
        mnemo_config *c = NULL;
        char *err = NULL;
        int rc = mnemo_config_new(&c);
        if (!rc)
            rc = mnemo_config_load_file(c, tmp, &err);
        mnemo_config_free(c);
        if (rc) {
            /* The message names the new file: name the one the user knows. */
            const char *m = err ? err : mnemo_strerror(rc);
            size_t tl = strlen(tmp);
            if (!strncmp(m, tmp, tl))
                cli_error("config: %s%s; %s is left as it was", path, m + tl, path);
            else
                cli_error("config: %s; %s is left as it was", m, path);
            mnemo_free(err);
            unlink(tmp);
            return EXIT_USAGE;
        }
    }
    if (rename(tmp, path) != 0) {
        cli_error("config: cannot replace %s: %s", path, strerror(errno));
        unlink(tmp);
        return EXIT_ERROR;
    }
    /* The folder's entry too, so the new file survives a crash. */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = 0;
    int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return EXIT_OK;
}

/* Makes the folder of PATH (the user file's mnemo/ folder), one level. */
static void make_parent(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return;
    *slash = 0;
    struct stat st;
    if (stat(dir, &st) == 0)
        return;
    char *up = strrchr(dir, '/');
    if (up && up != dir) { /* $XDG_CONFIG_HOME itself, e.g. ~/.config */
        *up = 0;
        mkdir(dir, 0700);
        *up = '/';
    }
    mkdir(dir, 0755);
}

/* Where KEY's effective value comes from when it is not FILE (an
 * environment variable, a flag, a file read later), as a string to free;
 * NULL when FILE decides it. */
static char *overridden_by(const cli_args *a, const char *key, const char *file)
{
    mnemo_config *cfg = NULL;
    char *out = NULL;
    if (cli_config(a, &cfg) != EXIT_OK)
        return NULL;
    char *s = mnemo_config_json(cfg, 1);
    json_t *j = s ? json_loads(s, 0, NULL) : NULL;
    mnemo_free(s);
    const char *src = json_string_value(json_object_get(json_object_get(j, key), "source"));
    if (src && strcmp(src, "default") != 0) {
        char r1[PATH_MAX], r2[PATH_MAX];
        int same = !strcmp(src, file) || (realpath(src, r1) && realpath(file, r2) &&
                                          !strcmp(r1, r2));
        if (!same)
            out = strdup(src);
    }
    json_decref(j);
    mnemo_config_free(cfg);
    return out;
}

/* `config set KEY VALUE` (VALUE NULL: `config unset KEY`). */
static int set_key(const cli_args *a, const char *key, const char *value, int json)
{
    int code = EXIT_ERROR;
    json_t *root = NULL, *v = NULL, *shown = NULL;
    char *text = NULL, *over = NULL;
    char *file = target_file(a, a->val[O_GLOBAL] != NULL);
    if (!file)
        return EXIT_USAGE;
    /* A symbolic link (a dotfiles repository) stays one: write its target. */
    char real[PATH_MAX];
    struct stat st;
    if (lstat(file, &st) == 0 && S_ISLNK(st.st_mode) && realpath(file, real)) {
        free(file);
        file = strdup(real);
        if (!file)
            return EXIT_ERROR;
    }
    if (value && !(v = typed_value(key, value, &shown))) {
        code = EXIT_USAGE;
        goto done;
    }
    json_error_t je;
    if (stat(file, &st) == 0) {
        root = json_load_file(file, JSON_REJECT_DUPLICATES, &je);
        if (!json_is_object(root)) {
            cli_error("config: %s:%d:%d: %s; fix it by hand (it is left as it was)", file,
                      je.line, je.column, root ? "not a JSON object" : je.text);
            code = EXIT_USAGE;
            goto done;
        }
    } else if (errno != ENOENT) {
        cli_error("config: %s: %s", file, strerror(errno));
        goto done;
    } else if (!value) {
        root = NULL; /* nothing to remove */
    } else {
        if (a->val[O_GLOBAL] && !a->config)
            make_parent(file);
        root = json_object();
    }
    if (!value && !json_object_get(root, key)) {
        fprintf(stderr, "mnemo: %s is not set in %s\n", key, file);
        if (json) {
            printf("{\"file\":");
            cli_json_string(stdout, file);
            printf(",\"key\":");
            cli_json_string(stdout, key);
            printf(",\"removed\":false}\n");
        }
        code = EXIT_OK;
        goto done;
    }
    if (value)
        json_object_set(root, key, v);
    else
        json_object_del(root, key);
    /* 15 digits: 0.35 stays 0.35 (17 would print 0.34999999999999998). */
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    size_t n = s ? strlen(s) + 2 : 0;
    text = s ? malloc(n) : NULL;
    if (text)
        snprintf(text, n, "%s\n", s);
    free(s);
    if (!text) {
        cli_error("out of memory");
        goto done;
    }
    /* unset only removes: it never makes a file worse, so it also works
     * on a file that names a key or value the loader refuses. */
    if ((code = replace_file(file, text, value != NULL)))
        goto done;
    over = overridden_by(a, key, file);
    /* Printed as show prints it: a password in a URL or a header value is
     * not repeated on the terminal (numbers as written, not as shown). */
    json_t *printed = json_is_string(shown) || json_is_object(shown) ? shown : v;
    if (json) {
        json_t *o = json_pack("{s:s,s:s}", "file", file, "key", key);
        if (value)
            json_object_set(o, "value", printed);
        else
            json_object_set_new(o, "removed", json_true());
        if (over)
            json_object_set_new(o, "overriddenBy", json_string(over));
        char *out = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
        if (out)
            puts(out);
        free(out);
        json_decref(o);
    } else if (value) {
        char *vs = json_dumps(printed, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));
        printf("%s: %s = %s\n", file, key, vs ? vs : "(not shown)");
        free(vs);
    } else {
        printf("%s: %s removed\n", file, key);
    }
    if (over)
        fprintf(stderr, "mnemo: note: %s still comes from %s, which takes precedence\n", key,
                over);
done:
    free(over);
    free(text);
    json_decref(root);
    json_decref(v);
    json_decref(shown);
    free(file);
    return code;
}

int cmd_config(int argc, char **argv)
{
    static const cli_opt opts[] = {
        [O_SOURCES] = {"sources", 's', NULL, "show where each value came from"},
        [O_GLOBAL] = {"global", 'g', NULL,
                      "set/unset: write the user file ($XDG_CONFIG_HOME/mnemo/config.json)"},
        [O_JSON] = {"json", 'j', NULL, "set/unset/path: print JSON"},
        {NULL, 0, NULL, NULL},
    };
    static const char *const subs[] = {"show", "keys", "set", "unset", "path", NULL};
    cli_args a;
    int code = cli_parse(argc, argv, "config",
                         "mnemo config show [--sources] | keys | set KEY VALUE [--global] | "
                         "unset KEY [--global] | path [--global]   [--json]\n\n"
                         "set and unset write --config FILE, or with --global the user file, "
                         "else the\nworkspace's mnemo.json; the value is checked as the "
                         "loader checks it.",
                         opts, &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    const char *sub = a.npos ? a.pos[0] : "show";
    int json = a.val[O_JSON] != NULL;
    if (!strcmp(sub, "keys")) {
        const char *env, *help, *name;
        for (size_t i = 0; (name = mnemo_config_key(i, &env, &help)) != NULL; i++)
            printf("%-16s %-26s %s\n", name, env, help);
        return EXIT_OK;
    }
    if (!strcmp(sub, "set")) {
        if (a.npos != 3) {
            cli_error("config set: expected KEY VALUE (usage: mnemo config set KEY VALUE)");
            return EXIT_USAGE;
        }
        return set_key(&a, a.pos[1], a.pos[2], json);
    }
    if (!strcmp(sub, "unset")) {
        if (a.npos != 2) {
            cli_error("config unset: expected KEY (usage: mnemo config unset KEY)");
            return EXIT_USAGE;
        }
        return set_key(&a, a.pos[1], NULL, json);
    }
    if (!strcmp(sub, "path")) {
        char *file = target_file(&a, a.val[O_GLOBAL] != NULL);
        if (!file)
            return EXIT_USAGE;
        struct stat st;
        int exists = stat(file, &st) == 0;
        if (json) {
            printf("{\"file\":");
            cli_json_string(stdout, file);
            printf(",\"exists\":%s}\n", exists ? "true" : "false");
        } else {
            printf("%s%s\n", file, exists ? "" : " (not yet written)");
        }
        free(file);
        return EXIT_OK;
    }
    if (strcmp(sub, "show") != 0) {
        const char *near = cli_suggest(sub, subs);
        cli_error("config: unknown subcommand '%s'%s%s%s (show, keys, set, unset or path)", sub,
                  near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
        return EXIT_USAGE;
    }
    mnemo_config *cfg;
    if ((code = cli_config(&a, &cfg)))
        return code;
    char *s = mnemo_config_json(cfg, a.val[O_SOURCES] != NULL);
    if (s)
        puts(s);
    mnemo_free(s);
    mnemo_config_free(cfg);
    return s ? EXIT_OK : EXIT_ERROR;
}
