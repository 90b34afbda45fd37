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
    const char *msg = mnemo_errmsg(m);
    if (json)
        cli_json_error(rc, msg);
    /* The message may quote what was given (a path, an id): shown safely. */
    fputs("mnemo: ", stderr);
    cli_print_safe(stderr, msg, strlen(msg));
    fputc('\n', stderr);
    snprintf(last_error, sizeof last_error, "%s", msg);
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

/* The option ARGV[I] and its value, as getopt_long reads them: --name,
 * --name=VALUE, --name VALUE, -x, -xVALUE, -x VALUE and bundled flags
 * (-jq). Sets *GI or *CI to the global or command option of each letter and
 * stores it in A (when A is set). Returns how many words it took, 0 when
 * ARGV[I] is not an option of the command (*BAD then names the part that is
 * not, *BADLEN its length), -1 when a value is missing or one is given to a
 * flag (the error printed, for A only). */
enum { CLI_MAX_BUNDLE = 64 };

typedef struct opt_hit {
    int gi, ci;
    const char *val;
} opt_hit;

static int take_opt(int argc, char **argv, int i, const char *cmd, const cli_opt *opts,
                    opt_hit *hits, int *nhits, const char **bad, size_t *badlen, int quiet)
{
    const char *arg = argv[i];
    *nhits = 0;
    if (arg[1] == '-') {
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        int gi = find_opt(global_opts, name, n, 0);
        int ci = gi < 0 ? find_opt(opts, name, n, 0) : -1;
        if (gi < 0 && ci < 0) {
            *bad = arg;
            *badlen = eq ? (size_t)(eq - arg) : strlen(arg);
            return 0;
        }
        const cli_opt *o = gi >= 0 ? &global_opts[gi] : &opts[ci];
        hits[0] = (opt_hit){gi, ci, ""};
        *nhits = 1;
        if (!o->arg && eq) {
            if (!quiet)
                cli_error("%s: option --%s takes no value", cmd, o->name);
            return -1;
        }
        if (!o->arg)
            return 1;
        if (eq) {
            hits[0].val = eq + 1;
            return 1;
        }
        if (i + 1 >= argc) {
            if (!quiet)
                cli_error("%s: option --%s needs %s", cmd, o->name, o->arg);
            return -1;
        }
        hits[0].val = argv[i + 1];
        return 2;
    }
    for (const char *p = arg + 1; *p; p++) {
        if (*nhits >= CLI_MAX_BUNDLE) {
            *bad = arg;
            *badlen = strlen(arg);
            *nhits = 0;
            return 0;
        }
        int gi = find_opt(global_opts, "", 0, *p);
        int ci = gi < 0 ? find_opt(opts, "", 0, *p) : -1;
        if (gi < 0 && ci < 0) {
            *bad = p == arg + 1 ? arg : p;
            *badlen = p == arg + 1 ? strlen(arg) : 1;
            *nhits = 0;
            return 0;
        }
        const cli_opt *o = gi >= 0 ? &global_opts[gi] : &opts[ci];
        hits[(*nhits)++] = (opt_hit){gi, ci, ""};
        if (!o->arg)
            continue;
        if (p[1]) {
            hits[*nhits - 1].val = p + 1;
            return 1;
        }
        if (i + 1 >= argc) {
            if (!quiet)
                cli_error("%s: option -%c (--%s) needs %s", cmd, *p, o->name, o->arg);
            return -1;
        }
        hits[*nhits - 1].val = argv[i + 1];
        return 2;
    }
    return 1;
}

/* For an unknown option that may be a word of the text the command takes
 * (search postgres -priya): the same command with the options first, then
 * "--" and the words (into DASH), and with the words as one quoted argument
 * (into QUOTED, "" when the first word starts with "-": quotes alone do not
 * keep it from being read as an option). */
static void dashdash_hint(int argc, char **argv, const char *cmd, const cli_opt *opts,
                          char *dash, char *quoted, size_t n)
{
    char optw[2048] = "", words[2048] = "", joined[2048] = "", word[1024];
    size_t o = 0, w = 0, j = 0;
    int only_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        opt_hit hits[CLI_MAX_BUNDLE];
        int nhits = 0, took = 0;
        const char *bad;
        size_t badlen;
        if (!only_pos && !strcmp(arg, "--")) {
            only_pos = 1;
            continue;
        }
        if (!only_pos && arg[0] == '-' && arg[1])
            took = take_opt(argc, argv, i, cmd, opts, hits, &nhits, &bad, &badlen, 1);
        if (took > 0) {
            for (int k = 0; k < took && o < sizeof optw; k++)
                o += (size_t)snprintf(optw + o, sizeof optw - o, " %s",
                                      cli_shell_word(argv[i + k], word, sizeof word));
            i += took - 1;
            continue;
        }
        if (w < sizeof words)
            w += (size_t)snprintf(words + w, sizeof words - w, " %s",
                                  cli_shell_word(arg, word, sizeof word));
        if (j < sizeof joined)
            j += (size_t)snprintf(joined + j, sizeof joined - j, "%s%s", j ? " " : "", arg);
    }
    /* A command line too long for N is cut: the hint still shows the way. */
    if (snprintf(dash, n, "mnemo %s%s --%s", cmd, optw, words) >= (int)n)
        dash[n - 1] = 0;
    *quoted = 0;
    if (joined[0] && joined[0] != '-' &&
        snprintf(quoted, n, "mnemo %s%s %s", cmd, optw,
                 cli_shell_word(joined, word, sizeof word)) >= (int)n)
        quoted[n - 1] = 0;
}

static void print_help(const char *usage, const cli_opt *opts)
{
    printf("usage: %s\n\noptions:\n", usage);
    print_opts(stdout, opts);
    print_opts(stdout, global_opts);
    printf("\nEvery configuration key can also be set in mnemo.json, with an "
           "MNEMO_* environment\nvariable, or with --set KEY=VALUE; see: mnemo "
           "config keys\n");
}

static cli_describe_fn describe_fn;
static void *describe_ud;

void cli_set_describe(cli_describe_fn fn, void *ud)
{
    describe_fn = fn;
    describe_ud = ud;
}

const cli_opt *cli_global_opts(void)
{
    return global_opts;
}

static int unknown_opt(int argc, char **argv, const char *cmd, const char *usage,
                       const cli_opt *opts, const char *bad, size_t badlen)
{
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)badlen, bad);
    if (bad[0] != '-') { /* a letter inside a bundle: -jx */
        cli_error("%s: unknown option -%s (try mnemo %s --help)", cmd, cli_shown(name), cmd);
        return EXIT_USAGE;
    }
    /* A mistyped option: the one meant. */
    const char *names[128];
    size_t k = 0;
    for (const cli_opt *o = opts; o && o->name && k < 100; o++)
        names[k++] = o->name;
    for (const cli_opt *o = global_opts; o->name && k < 127; o++)
        names[k++] = o->name;
    names[k] = NULL;
    const char *near = strlen(name) > 2 ? cli_suggest(name + (name[1] == '-' ? 2 : 1), names)
                                        : NULL;
    if (near) {
        cli_error("%s: unknown option %s; did you mean --%s? (mnemo %s --help lists them)", cmd,
                  cli_shown(name), near, cmd);
        return EXIT_USAGE;
    }
    /* The command takes free text (QUERY..., TEXT...): a word of it that
     * begins with "-" is read as an option unless "--" comes first. */
    if (strstr(usage, "...")) {
        char dash[4096], quoted[4096], also[4200] = "";
        int search = !strcmp(cmd, "search");
        dashdash_hint(argc, argv, cmd, opts, dash, quoted, sizeof dash);
        if (*quoted)
            snprintf(also, sizeof also, "\n  or quote the %s as one argument: %s",
                     search ? "query" : "words", cli_shown(quoted));
        else
            snprintf(also, sizeof also, "\n  (quotes alone do not help: an argument that "
                                        "starts with - is read as an option)");
        cli_error("%s: unknown option %s (mnemo %s --help lists them)\n"
                  "  to %s a word that starts with -, put -- before the %s: %s%s",
                  cmd, cli_shown(name), cmd, search ? "search for" : "pass",
                  search ? "query" : "words", cli_shown(dash), also);
        return EXIT_USAGE;
    }
    cli_error("%s: unknown option %s (mnemo %s --help lists them)", cmd, cli_shown(name), cmd);
    return EXIT_USAGE;
}

int cli_parse(int argc, char **argv, const char *cmd, const char *usage, const cli_opt *opts,
              cli_args *a)
{
    memset(a, 0, sizeof *a);
    if (describe_fn) {
        describe_fn(describe_ud, cmd, usage, opts);
        return -1;
    }
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
        opt_hit hits[CLI_MAX_BUNDLE];
        int nhits = 0;
        const char *bad = NULL;
        size_t badlen = 0;
        int took = take_opt(argc, argv, i, cmd, opts, hits, &nhits, &bad, &badlen, 0);
        if (took < 0)
            return EXIT_USAGE;
        if (took == 0)
            return unknown_opt(argc, argv, cmd, usage, opts, bad, badlen);
        i += took - 1;
        for (int k = 0; k < nhits; k++) {
            const char *val = hits[k].val;
            if (hits[k].ci >= 0) {
                a->val[hits[k].ci] = val;
                continue;
            }
            const char *name = global_opts[hits[k].gi].name;
            if (strcmp(name, "help") == 0) {
                print_help(usage, opts);
                return -1;
            }
            if (strcmp(name, "workspace") == 0)
                a->workspace = val;
            else if (strcmp(name, "db") == 0)
                a->db = val;
            else if (strcmp(name, "store") == 0)
                a->store = val;
            else if (strcmp(name, "config") == 0)
                a->config = val;
            else if (strcmp(name, "set") == 0) {
                if (a->nsets >= 64) {
                    cli_error("%s: too many --set options", cmd);
                    return EXIT_USAGE;
                }
                a->sets[a->nsets++] = val;
            }
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

/* The length of the valid UTF-8 sequence at P (N bytes left), 0 when it
 * is not one. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    size_t len = p[0] < 0x80 ? 1 : p[0] >= 0xc2 && p[0] <= 0xdf ? 2
                 : p[0] >= 0xe0 && p[0] <= 0xef ? 3 : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
    if (!len || len > n)
        return 0;
    for (size_t k = 1; k < len; k++)
        if ((p[k] & 0xc0) != 0x80)
            return 0;
    return len;
}

void cli_print_safe(FILE *f, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        size_t l = utf8_seq(p + i, n - i);
        if (!l) { /* not UTF-8: the byte, escaped */
            fprintf(f, "\\x%02x", c);
        } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
            fprintf(f, "\\x%02x", c);
        } else if (c == 0xc2 && p[i + 1] <= 0x9f) { /* a C1 control */
            fprintf(f, "\\u%04x", p[i + 1]);
            i++;
        } else {
            fwrite(p + i, 1, l, f);
            i += l - 1;
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
    /* '#' starts a comment only at the start of a word: a citation
     * (notes/a.md#L3-L5) needs no quotes. */
    for (const char *p = s; *p && plain; p++)
        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                (*p >= '0' && *p <= '9') || strchr("_./:@%+=,-", *p) || (*p == '#' && p > s);
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

void cli_values(const char *arg, char *out, size_t n)
{
    /* The categories mem_default_importance knows (docs/memories.md). */
    static const char categories[] = "identity configuration rule preference decision "
                                     "technical relationship project operational";
    *out = 0;
    if (!n || !arg)
        return;
    if (!strcmp(arg, "FILE"))
        snprintf(out, n, "<file>");
    else if (!strcmp(arg, "DIR"))
        snprintf(out, n, "<dir>");
    else if (!strcmp(arg, "KEY=VALUE"))
        snprintf(out, n, "<key=>");
    else if (!strcmp(arg, "CATEGORY") || !strcmp(arg, "CATEGORY,..."))
        snprintf(out, n, "%s", categories);
    else if (!strcmp(arg, "TYPE"))
        snprintf(out, n, "fact preference summary context raw all");
    else if (strchr(arg, '|')) {
        snprintf(out, n, "%s", arg);
        for (char *p = out; *p; p++)
            if (*p == '|')
                *p = ' ';
    }
}
