/*
 * cli.c - option parsing, configuration layering and error reporting for
 * the mnemo command (see cli.h).
 */
#include "cli.h"

#include "api.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const cli_opt global_opts[] = {
    {"workspace", 'w', "DIR", "workspace directory (default: current directory)"},
    {"db", 0, "FILE", "index database file"},
    {"config", 'c', "FILE", "configuration file (default: <workspace>/mnemo.json)"},
    {"store", 0, "URI", "storage backend: a postgres:// URI, postgres or sqlite (config store)"},
    {"set", 0, "KEY=VALUE", "set any configuration key (repeatable)"},
    {"help", 'h', NULL, "show this help"},
    {NULL, 0, NULL, NULL},
};

/* The last message cli_error printed, and whether a JSON error went to
 * standard output since, for main's JSON usage errors (cli_json_usage).
 * Per thread: the daemon's workers print errors too. */
static _Thread_local char last_error[2048];
static _Thread_local int json_error_printed;

void cli_error(const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    fputs("mnemo: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    vsnprintf(last_error, sizeof last_error, fmt, ap2);
    va_end(ap2);
    va_end(ap);
}

void cli_json_usage(void)
{
    if (json_error_printed || !last_error[0])
        return;
    fputs("{\"error\":{\"code\":\"usage\",\"message\":", stdout);
    cli_json_string(stdout, last_error);
    fputs("}}\n", stdout);
    json_error_printed = 1;
}

/* The optimal-string-alignment distance of A and B (edits, with swapping
 * two neighbours as one), for words of at most 63 bytes. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 63 || m > 63)
        return (size_t)-1;
    size_t d[64][64];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    }
    return d[n][m];
}

const char *cli_suggest(const char *word, const char *const *names)
{
    size_t len = strlen(word), best_d = len <= 3 ? 1 : 2;
    const char *best = NULL;
    int prefixes = 0;
    const char *prefix = NULL;
    for (size_t i = 0; names[i]; i++) {
        size_t d = edit_distance(word, names[i]);
        if (d <= best_d && (!best || d < edit_distance(word, best)))
            best = names[i];
        if (len >= 2 && !strncmp(names[i], word, len)) {
            prefixes++;
            prefix = names[i];
        }
    }
    return best ? best : prefixes == 1 ? prefix : NULL;
}


void cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

void cli_json_error(int rc, const char *message)
{
    json_error_printed = 1;
    printf("{\"error\":{\"code\":\"%s\",\"message\":", api_code_name(rc));
    cli_json_string(stdout, message);
    fputs("}}\n", stdout);
}

int cli_fail(mnemo *m, int rc, int json)
{
    if (json)
        cli_json_error(rc, mnemo_errmsg(m));
    cli_error("%s", mnemo_errmsg(m));
    return cli_exit_code(rc);
}

/* The exit code of each MNEMO_* code; a code appended to the list without
 * one here fails the build. */
static const unsigned char exit_codes[] = {
    [MNEMO_OK] = EXIT_OK,
    [MNEMO_NOMEM] = EXIT_ERROR,
    [MNEMO_IO] = EXIT_ERROR,
    [MNEMO_DB] = EXIT_ERROR,
    [MNEMO_HTTP] = EXIT_ERROR,
    [MNEMO_TIMEOUT] = EXIT_ERROR,
    [MNEMO_NOTFOUND] = EXIT_NOTFOUND,
    [MNEMO_INVALID] = EXIT_USAGE,
    [MNEMO_UNAVAILABLE] = EXIT_ERROR,
    [MNEMO_MISUSE] = EXIT_ERROR,
    [MNEMO_CORRUPT] = EXIT_CORRUPT,
    [MNEMO_BUSY] = EXIT_BUSY,
    [MNEMO_DENIED] = EXIT_DENIED,
};
_Static_assert(sizeof exit_codes / sizeof *exit_codes == API_NCODES,
               "an exit code for every MNEMO_* code");

int cli_exit_code(int rc)
{
    if (rc < 0 || rc >= API_NCODES)
        return EXIT_ERROR;
    return exit_codes[rc];
}

static void print_opts(FILE *f, const cli_opt *o)
{
    for (; o->name; o++) {
        char left[64];
        if (o->short_name)
            snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name, o->name, o->arg ? " " : "",
                     o->arg ? o->arg : "");
        else
            snprintf(left, sizeof left, "    --%s%s%s", o->name, o->arg ? " " : "",
                     o->arg ? o->arg : "");
        fprintf(f, "  %-28s %s\n", left, o->help);
    }
}

static int find_opt(const cli_opt *opts, const char *name, size_t n, char shortc)
{
    for (int i = 0; opts && opts[i].name; i++) {
        if (shortc ? opts[i].short_name == shortc
                   : (strlen(opts[i].name) == n && strncmp(opts[i].name, name, n) == 0))
            return i;
    }
    return -1;
}

int cli_parse(int argc, char **argv, const char *cmd, const char *usage, const cli_opt *opts,
              cli_args *a)
{
    memset(a, 0, sizeof *a);
    int only_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (only_pos || arg[0] != '-' || arg[1] == 0) {
            if (a->npos >= 256) {
                cli_error("%s: too many arguments", cmd);
                return EXIT_USAGE;
            }
            a->pos[a->npos++] = arg;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            only_pos = 1;
            continue;
        }
        const char *name = arg + (arg[1] == '-' ? 2 : 1);
        int is_long = arg[1] == '-';
        if (!is_long && strlen(name) != 1) {
            cli_error("%s: unknown option %s (options are --long; try mnemo %s --help)", cmd,
                      cli_shown(arg),
                      cmd);
            return EXIT_USAGE;
        }
        const char *eq = is_long ? strchr(name, '=') : NULL;
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        char sc = is_long ? 0 : name[0];
        int gi = find_opt(global_opts, name, n, sc);
        int ci = gi < 0 ? find_opt(opts, name, n, sc) : -1;
        if (gi < 0 && ci < 0) {
            cli_error("%s: unknown option %s (try mnemo %s --help)", cmd, cli_shown(arg), cmd);
            return EXIT_USAGE;
        }
        const cli_opt *o = gi >= 0 ? &global_opts[gi] : &opts[ci];
        const char *val = "";
        if (o->arg) {
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc)
                val = argv[++i];
            else {
                cli_error("%s: option --%s needs %s", cmd, o->name, o->arg);
                return EXIT_USAGE;
            }
        } else if (eq) {
            cli_error("%s: option --%s takes no value", cmd, o->name);
            return EXIT_USAGE;
        }
        if (gi >= 0) {
            if (strcmp(o->name, "help") == 0) {
                printf("usage: %s\n\noptions:\n", usage);
                print_opts(stdout, opts);
                print_opts(stdout, global_opts);
                printf("\nEvery configuration key can also be set in mnemo.json, with an "
                       "MNEMO_* environment\nvariable, or with --set KEY=VALUE; see: mnemo "
                       "config keys\n");
                return -1;
            }
            if (strcmp(o->name, "workspace") == 0)
                a->workspace = val;
            else if (strcmp(o->name, "db") == 0)
                a->db = val;
            else if (strcmp(o->name, "store") == 0)
                a->store = val;
            else if (strcmp(o->name, "config") == 0)
                a->config = val;
            else if (strcmp(o->name, "set") == 0) {
                if (a->nsets >= 64) {
                    cli_error("%s: too many --set options", cmd);
                    return EXIT_USAGE;
                }
                a->sets[a->nsets++] = val;
            }
        } else {
            a->val[ci] = val;
        }
    }
    return EXIT_OK;
}

int cli_config(const cli_args *a, mnemo_config **out)
{
    mnemo_config *cfg = NULL;
    char *err = NULL;
    int rc = mnemo_config_new(&cfg);
    if (rc) {
        cli_error("out of memory");
        return EXIT_ERROR;
    }
    /* The workspace decides which mnemo.json applies, so set it first. */
    if (a->workspace && (rc = mnemo_config_set(cfg, "workspace", a->workspace, "flag", &err)))
        goto fail;
    if ((rc = mnemo_config_load_standard(cfg, a->config, &err)))
        goto fail;
    if (a->workspace && (rc = mnemo_config_set(cfg, "workspace", a->workspace, "flag", &err)))
        goto fail;
    if (a->db && (rc = mnemo_config_set(cfg, "db", a->db, "flag", &err)))
        goto fail;
    if (a->store && (rc = mnemo_config_set(cfg, "store", a->store, "flag", &err)))
        goto fail;
    for (int i = 0; i < a->nsets; i++) {
        const char *eq = strchr(a->sets[i], '=');
        if (!eq) {
            cli_error("--set %s: expected KEY=VALUE", a->sets[i]);
            mnemo_config_free(cfg);
            return EXIT_USAGE;
        }
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)(eq - a->sets[i]), a->sets[i]);
        if ((rc = mnemo_config_set(cfg, key, eq + 1, "flag", &err)))
            goto fail;
    }
    *out = cfg;
    return EXIT_OK;
fail:
    cli_error("configuration: %s", err ? err : mnemo_strerror(rc));
    mnemo_free(err);
    mnemo_config_free(cfg);
    return rc == MNEMO_INVALID || rc == MNEMO_NOTFOUND ? EXIT_USAGE : EXIT_ERROR;
}

int cli_open(const cli_args *a, mnemo **m)
{
    mnemo_config *cfg = NULL;
    *m = NULL;
    int code = cli_config(a, &cfg);
    if (code)
        return code;
    int rc = mnemo_open(cfg, m);
    mnemo_config_free(cfg);
    if (rc) {
        cli_error("%s", mnemo_errmsg(*m));
        mnemo_close(*m);
        *m = NULL;
        return cli_exit_code(rc);
    }
    return EXIT_OK;
}

char *cli_join(const cli_args *a)
{
    size_t len = 1;
    for (int i = 0; i < a->npos; i++)
        len += strlen(a->pos[i]) + 1;
    char *s = malloc(len), *p = s;
    if (!s)
        return NULL;
    for (int i = 0; i < a->npos; i++) {
        size_t n = strlen(a->pos[i]);
        if (i)
            *p++ = ' ';
        memcpy(p, a->pos[i], n);
        p += n;
    }
    *p = 0;
    return s;
}

int cli_int(const char *s, const char *name, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi) {
        cli_error("--%s: expected an integer from %d to %d, got '%s'", name, lo, hi, cli_shown(s));
        return EXIT_USAGE;
    }
    *out = (int)v;
    return EXIT_OK;
}

int cli_double(const char *s, const char *name, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !isfinite(v) || v < lo || v > hi) {
        cli_error("--%s: expected a number from %g to %g, got '%s'", name, lo, hi, cli_shown(s));
        return EXIT_USAGE;
    }
    *out = v;
    return EXIT_OK;
}

void cli_print_safe(FILE *f, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            fprintf(f, "\\x%02x", c);
        } else if (c == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f) {
            fprintf(f, "\\u%04x", p[i + 1]);
            i++;
        } else {
            fputc(c, f);
        }
    }
}

const char *cli_shown(const char *v)
{
    return v && mnemo_secret_kind(v, strlen(v)) ? "(a value that looks like a credential, not shown)"
                                                : v;
}

char *cli_shell_word(const char *s, char *out, size_t n)
{
    if (!n)
        return out;
    int plain = *s != 0;
    for (const char *p = s; *p && plain; p++)
        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                (*p >= '0' && *p <= '9') || strchr("_./:@%+=,-", *p);
    if (plain) {
        snprintf(out, n, "%s", s);
        return out;
    }
    size_t o = 0;
    out[o++] = '\'';
    for (const char *p = s; *p && o + 6 < n; p++) {
        if (*p == '\'') {
            memcpy(out + o, "'\\''", 4);
            o += 4;
        } else {
            out[o++] = *p;
        }
    }
    if (o + 1 < n)
        out[o++] = '\'';
    out[o < n ? o : n - 1] = 0;
    return out;
}
