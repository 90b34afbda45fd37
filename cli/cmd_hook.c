/*
 * cmd_hook.c - `mnemo hook claude-code`: the recall nudge, a Claude Code
 * UserPromptSubmit hook (docs/recall.md).
 *
 * It reads the hook's JSON from standard input, finds proper-noun candidates
 * in the prompt (src/nudge.c), searches the local index for the best few and
 * prints what it found as additional context for the model. It runs before
 * every prompt, so it never blocks one: whatever goes wrong (no index, bad
 * input, the deadline) it prints nothing and exits 0. A SIGALRM deadline ends
 * the process without output; the answer is written with SIGALRM blocked, in
 * one piece, so output is all or nothing. It reads the index and never
 * writes it.
 *
 * The detector is an internal module of the library (nudge.h), the one
 * header outside the public API this command includes.
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli.h"
#include "hook.h"
#include "nudge.h"

#define STDIN_CAP (1u << 20) /* the hook's JSON: larger input is ignored */
#define SNIPPET_CPS 160      /* code points quoted from each hit, from the matched line */

typedef hook_settings settings;

/* ------------------------------------------------------------------------
 * Environment
 * ---------------------------------------------------------------------- */

/* MNEMO_NUDGE_<NAME>, else CK_RECALL_NUDGE_<NAME>, else NULL. */
static const char *env(const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "MNEMO_NUDGE_%s", name);
    const char *v = getenv(key);
    if (v)
        return v;
    snprintf(key, sizeof key, "CK_RECALL_NUDGE_%s", name);
    return getenv(key);
}

static void debug(const settings *s, const char *what, const char *detail)
{
    if (s->debug)
        fprintf(stderr, "mnemo hook: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
}

/* An integer from LO to HI, else DEF (a bad value is not an error here). */
static int env_int(settings *s, const char *name, int lo, int hi, int def)
{
    const char *v = env(name);
    if (!v)
        return def;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    while (*end == ' ')
        end++;
    if (!*v || *end || errno || n < lo || n > hi) {
        debug(s, "ignoring a bad value, using the default", name);
        return def;
    }
    return (int)n;
}

static int env_bool(settings *s, const char *name, int def)
{
    const char *v = env(name);
    if (!v)
        return def;
    if (!strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
        !strcasecmp(v, "on"))
        return 1;
    if (!*v || !strcasecmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
        !strcasecmp(v, "off"))
        return 0;
    debug(s, "ignoring a bad value, using the default", name);
    return def;
}

/* ------------------------------------------------------------------------
 * The deadline
 * ---------------------------------------------------------------------- */

static char deadline_note[128]; /* for MNEMO_NUDGE_DEBUG, written as it fires */
static size_t deadline_note_len;

static void on_deadline(int sig)
{
    (void)sig;
    if (deadline_note_len) /* write(2) is safe in a handler; stdio is not */
        (void)!write(STDERR_FILENO, deadline_note, deadline_note_len);
    _exit(EXIT_OK); /* nothing was written: silence */
}

static void arm_deadline(int ms, int debug)
{
    if (debug) {
        int n = snprintf(deadline_note, sizeof deadline_note,
                         "mnemo hook: the deadline (%d ms, MNEMO_NUDGE_TIMEOUT_MS) fired "
                         "before an answer: nothing printed\n",
                         ms);
        deadline_note_len = n > 0 && (size_t)n < sizeof deadline_note ? (size_t)n : 0;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_deadline;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it;
    memset(&it, 0, sizeof it);
    it.it_value.tv_sec = ms / 1000;
    it.it_value.tv_usec = (ms % 1000) * 1000;
    setitimer(ITIMER_REAL, &it, NULL);
}

/* Writes all of S to standard output with the deadline held off, so the
 * answer is never cut short. */
static void emit(const char *s)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    size_t n = strlen(s), done = 0;
    while (done < n) {
        ssize_t w = write(STDOUT_FILENO, s + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
}

/* ------------------------------------------------------------------------
 * Input
 * ---------------------------------------------------------------------- */

/* Standard input, up to STDIN_CAP bytes; NULL when larger or unreadable. */
static char *read_stdin(size_t *len)
{
    size_t cap = 8192, n = 0;
    char *b = malloc(cap);
    while (b) {
        if (n == cap) {
            if (cap > STDIN_CAP) {
                free(b);
                return NULL;
            }
            char *nb = realloc(b, cap * 2);
            if (!nb)
                break;
            b = nb;
            cap *= 2;
        }
        ssize_t r = read(STDIN_FILENO, b + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        if (r == 0) {
            if (n > STDIN_CAP)
                break;
            *len = n;
            return b;
        }
        n += (size_t)r;
    }
    free(b);
    return NULL;
}

/* Does DIR look like an agent workspace (MEMORY.md, memory.md or memory/)? */
static int is_workspace(const char *dir)
{
    static const char *const names[] = {"MEMORY.md", "memory.md", "memory"};
    char path[4096];
    struct stat st;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path)
            return 0;
        if (stat(path, &st) == 0 && (i < 2 ? S_ISREG(st.st_mode) : S_ISDIR(st.st_mode)))
            return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * The answer
 * ---------------------------------------------------------------------- */

/* One line of the answer: a result and the terms that found it. */
typedef struct answer_line {
    const mnemo_result *r;
    size_t terms[20]; /* indexes of the candidates (MAX_TERMS is at most 20) */
    size_t nterms;
} answer_line;

/* Quoted text without a leading list marker ("- ", "* ", "+ "). */
static const char *unbullet(const char *s)
{
    if ((s[0] == '-' || s[0] == '*' || s[0] == '+') && s[1] == ' ')
        return s + 2;
    return s;
}

/* TERM as a quoted phrase: the term as written, not any of its words.
 * Caller frees; NULL on OOM. */
static char *phrase(const char *term)
{
    size_t tl = strlen(term), k = 0;
    char *q = malloc(tl + 3);
    if (!q)
        return NULL;
    q[k++] = '"';
    for (size_t j = 0; j < tl; j++)
        if (term[j] != '"')
            q[k++] = term[j];
    q[k++] = '"';
    q[k] = 0;
    return q;
}

/* TEXT's tokens as the index (QUERY 0) or a query (1) sees them: a JSON
 * array of {"token","start","end"}, or NULL. */
static json_t *tokens_of(mnemo *m, const char *text, int query)
{
    char *s = NULL;
    json_t *j = NULL;
    if (mnemo_tokenize_json(m, text, query, &s) == MNEMO_OK && s)
        j = json_loads(s, 0, NULL);
    mnemo_free(s);
    if (!json_is_array(j)) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* The byte offset in the snippet (tokens DOC) of the first match of a term
 * (tokens TERM): of its first token, else of any of them; -1 when none. */
static long first_match(const json_t *doc, const json_t *term)
{
    for (size_t pass = 0; pass < 2; pass++) {
        long best = -1;
        size_t nt = pass ? json_array_size(term) : json_array_size(term) > 0;
        for (size_t i = 0; i < nt; i++) {
            const char *t = json_string_value(json_object_get(json_array_get(term, i), "token"));
            size_t k;
            json_t *d;
            json_array_foreach(doc, k, d) {
                const char *dt = json_string_value(json_object_get(d, "token"));
                json_int_t at = json_integer_value(json_object_get(d, "start"));
                if (t && dt && !strcmp(t, dt) && at >= 0 && (best < 0 || at < best))
                    best = (long)at;
            }
        }
        if (best >= 0)
            return best;
    }
    return -1;
}

/* The quote of hit R: the line where one of its terms T[0..NT) matches
 * (see nudge_quote), else the passage's start. Caller frees; NULL on OOM. */
static char *quote(mnemo *m, const mnemo_result *r, const nudge_candidate *c, const size_t *t,
                   size_t nt)
{
    json_t *doc = tokens_of(m, r->snippet, 0);
    long at = -1;
    for (size_t j = 0; doc && j < nt; j++) {
        char *q = phrase(c[t[j]].term);
        json_t *term = q ? tokens_of(m, q, 1) : NULL;
        free(q);
        long x = term ? first_match(doc, term) : -1;
        json_decref(term);
        if (x >= 0 && (at < 0 || x < at))
            at = x;
    }
    json_decref(doc);
    return at >= 0 ? nudge_quote(r->snippet, (size_t)at, SNIPPET_CPS)
                   : nudge_shorten(r->snippet, SNIPPET_CPS);
}

/* Appends "- CITATION (TERMS): QUOTE" lines for up to MAX results, taking
 * the terms' results in turn (the best of each term first); a result found
 * by several terms is one line naming them all. The quote is the line
 * that matched, not the passage's first. Returns the number of lines
 * written, or -1 on out-of-memory. */
static int write_hits(FILE *f, mnemo *m, const nudge_candidate *c, size_t nc,
                      mnemo_results **res, int max)
{
    answer_line *v = calloc((size_t)max, sizeof *v);
    if (!v)
        return -1;
    int n = 0;
    /* Round robin over the terms; the first pass takes one hit a file, so
     * that a few notes do not crowd out the others. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t round = 0;; round++) {
            int any = 0;
            for (size_t t = 0; t < nc; t++) {
                if (!res[t] || round >= mnemo_results_count(res[t]))
                    continue;
                any = 1;
                const mnemo_result *r = mnemo_results_get(res[t], round);
                int k = 0, same_file = 0;
                while (k < n && strcmp(v[k].r->citation, r->citation) != 0) {
                    same_file |= strcmp(v[k].r->path, r->path) == 0;
                    k++;
                }
                if (k == n) {
                    if (n == max || (pass == 0 && same_file))
                        continue;
                    v[n++].r = r;
                }
                int named = 0;
                for (size_t j = 0; j < v[k].nterms; j++)
                    named |= v[k].terms[j] == t;
                if (!named && v[k].nterms < sizeof v[k].terms / sizeof *v[k].terms)
                    v[k].terms[v[k].nterms++] = t;
            }
            if (!any)
                break;
        }
    }
    for (int k = 0; k < n; k++) {
        char *snip = quote(m, v[k].r, c, v[k].terms, v[k].nterms);
        if (!snip) {
            free(v);
            return -1;
        }
        /* The citation as mnemo get takes it, quoted where the shell would
         * split it (a path with a space). */
        char word[4096];
        fprintf(f, "- %s (", cli_shell_word(v[k].r->citation, word, sizeof word));
        for (size_t j = 0; j < v[k].nterms; j++)
            fprintf(f, "%s%s", j ? ", " : "", c[v[k].terms[j]].term);
        fprintf(f, "): %s\n", unbullet(snip));
        free(snip);
    }
    free(v);
    return n;
}

/* {"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":TEXT}} */
static char *envelope(const char *text)
{
    json_t *o = json_pack("{s:{s:s,s:s}}", "hookSpecificOutput", "hookEventName",
                          "UserPromptSubmit", "additionalContext", text);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    char *line = s ? malloc(strlen(s) + 2) : NULL;
    if (line)
        snprintf(line, strlen(s) + 2, "%s\n", s);
    free(s);
    return line;
}

static int usage_error(const char *msg)
{
    cli_error("hook: %s (usage: mnemo hook claude-code)", msg);
    return EXIT_USAGE;
}

int hook_parse_input(const char *input, size_t len, json_t **root, const char **prompt,
                     const char **cwd, const char **why)
{
    json_error_t je;
    *root = NULL;
    *prompt = *cwd = NULL;
    json_t *j = json_loadb(input, len, 0, &je);
    if (!json_is_object(j)) {
        json_decref(j);
        *why = "standard input is not a JSON object";
        return -1;
    }
    const char *event = json_string_value(json_object_get(j, "hook_event_name"));
    if (event && strcmp(event, "UserPromptSubmit") != 0) {
        json_decref(j);
        *why = "not a UserPromptSubmit event";
        return -1;
    }
    if (!(*prompt = json_string_value(json_object_get(j, "prompt")))) {
        json_decref(j);
        *why = "no prompt in the input";
        return -1;
    }
    *cwd = json_string_value(json_object_get(j, "cwd"));
    *root = j;
    return 0;
}

char *hook_reply(mnemo *m, const char *prompt, const nudge_candidate *cand, size_t ncand,
                 const hook_settings *s)
{
    mnemo_results **res = NULL;
    char *extra_trig = NULL, *extra_recall = NULL, *text = NULL, *out = NULL;
    size_t text_len = 0;
    FILE *f = NULL;
    int rc;

    mnemo_search_opts so;
    mnemo_search_opts_init(&so);
    so.max_results = s->max_hits * 2; /* spares for one hit a file (write_hits) */
    if (ncand && !(res = calloc(ncand, sizeof *res)))
        goto done;
    int found = 0;
    for (size_t i = 0; i < ncand; i++) {
        char *q = phrase(cand[i].term);
        if (!q)
            goto done;
        rc = mnemo_search(m, q, &so, &res[i]);
        if (rc == MNEMO_INVALID) { /* nothing searchable in this term */
            debug(s, "nothing searchable in", q);
            free(q);
            continue;
        }
        if (rc) {
            debug(s, "search failed", mnemo_errmsg(m));
            free(q);
            goto done;
        }
        if (s->debug) {
            char n[64];
            snprintf(n, sizeof n, "%zu hits%s", mnemo_results_count(res[i]),
                     cand[i].weak && !mnemo_results_count(res[i]) ? " (a guess: not said)" : "");
            fprintf(stderr, "mnemo hook: search %s: %s\n", q, n);
        }
        free(q);
        found += mnemo_results_count(res[i]) > 0;
    }
    if (!s->triggers)
        debug(s, "trigger recall off", "--triggers or MNEMO_NUDGE_TRIGGERS=1 turns it on");
    if (!s->recall)
        debug(s, "memory recall off", "--recall or MNEMO_NUDGE_RECALL=1 turns it on");
    if (s->triggers && (rc = mnemo_recall_triggers(m, prompt, &extra_trig)) != MNEMO_OK) {
        debug(s, "trigger recall failed", mnemo_errmsg(m));
        goto done;
    }
    if (s->recall) {
        json_t *o = json_pack("{s:s}", "message", prompt);
        char *opts = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        rc = opts ? mnemo_memory_recall(m, opts, &extra_recall) : MNEMO_NOMEM;
        free(opts);
        if (rc) {
            debug(s, "memory recall failed", mnemo_errmsg(m));
            goto done;
        }
    }

    if (!(f = open_memstream(&text, &text_len)))
        goto done;
    if (found) {
        fputs("Local memory (mnemo) has notes on terms in this prompt; read more with "
              "`mnemo get CITATION` (path#Lx-Ly):\n",
              f);
        if (write_hits(f, m, cand, ncand, res, s->max_hits) < 0)
            goto done;
    }
    /* Terms found nowhere, but not the guesses (a name starting a
     * sentence, a Han-script name): those are worth a line only when found. */
    int first = 1;
    for (size_t i = 0; i < ncand; i++) {
        if ((res[i] && mnemo_results_count(res[i]) > 0) || cand[i].weak)
            continue;
        fprintf(f, "%s%s", first ? "no local hits for: " : ", ", cand[i].term);
        first = 0;
    }
    if (!first)
        fputc('\n', f);
    if (extra_trig && *extra_trig)
        fprintf(f, "Trigger recall:\n%s%s", extra_trig,
                extra_trig[strlen(extra_trig) - 1] == '\n' ? "" : "\n");
    if (extra_recall && strstr(extra_recall, "<recalled-memories"))
        fprintf(f, "%s%s", extra_recall,
                extra_recall[strlen(extra_recall) - 1] == '\n' ? "" : "\n");
    if (fclose(f) != 0) {
        f = NULL;
        goto done;
    }
    f = NULL;
    if (text_len == 0) {
        debug(s, "nothing to say", "no hits, and no triggers or memories recalled");
        goto done;
    }
    text[text_len - 1] = 0; /* the last newline */
    if (!(out = envelope(text)))
        goto done;

done:
    if (f)
        fclose(f);
    free(text);
    mnemo_free(extra_trig);
    mnemo_free(extra_recall);
    for (size_t i = 0; res && i < ncand; i++)
        mnemo_results_free(res[i]);
    free(res);
    return out;
}

/* The hook run proper. Returns nothing: every outcome is exit code 0. */
static void run(cli_args *a, const settings *s)
{
    size_t len = 0;
    char *input = read_stdin(&len);
    json_t *root = NULL;
    nudge_patterns *pats = NULL;
    nudge_candidate *cand = NULL;
    size_t ncand = 0;
    mnemo *m = NULL;
    const char *prompt, *cwd, *why;

    if (!input) {
        debug(s, "no input, or more than 1 MiB", NULL);
        goto done;
    }
    if (hook_parse_input(input, len, &root, &prompt, &cwd, &why)) {
        debug(s, why, NULL);
        goto done;
    }

    char *perr = NULL;
    if (nudge_patterns_parse(s->patterns, &pats, &perr)) {
        debug(s, "bad MNEMO_NUDGE_PATTERNS, using the defaults", perr);
        free(perr);
        if (nudge_patterns_parse(NULL, &pats, NULL))
            goto done;
    }
    if (nudge_candidates(prompt, pats, (size_t)s->max_terms, &cand, &ncand))
        goto done;
    if (s->debug) {
        fprintf(stderr, "mnemo hook: candidates (patterns %s, at most %d):",
                s->patterns && *s->patterns ? s->patterns : NUDGE_DEFAULT_PATTERNS, s->max_terms);
        for (size_t i = 0; i < ncand; i++)
            fprintf(stderr, "%s %s [%s%s]", i ? "," : "", cand[i].term, cand[i].pattern,
                    cand[i].weak ? ", a guess" : "");
        fputs(ncand ? "\n" : " none\n", stderr);
    }
    if (ncand == 0 && !s->triggers && !s->recall) {
        debug(s, "no candidates in the prompt", "nothing to search");
        goto done;
    }

    /* The workspace: --workspace or MNEMO_WORKSPACE if given, else the
     * session's directory when it holds agent memory, else the default. */
    if (!a->workspace && !getenv("MNEMO_WORKSPACE") && cwd && cwd[0] == '/' && is_workspace(cwd))
        a->workspace = cwd;
    /* Keyword search only: no embedding calls on the way to every prompt. */
    if (a->nsets < 64)
        a->sets[a->nsets++] = "provider=none";
    mnemo_config *cfg = NULL;
    if (cli_config(a, &cfg))
        goto done;
    int rc = mnemo_open(cfg, &m);
    mnemo_config_free(cfg);
    if (rc) {
        debug(s, "cannot open", m ? mnemo_errmsg(m) : mnemo_strerror(rc));
        goto done;
    }
    /* Never create an index: without one there is nothing to say. */
    struct stat st;
    if (stat(mnemo_db_path(m), &st) != 0) {
        debug(s, "no index yet", mnemo_db_path(m));
        goto done;
    }

    char *out = hook_reply(m, prompt, cand, ncand, s);
    if (out)
        emit(out);
    free(out);

done:
    mnemo_close(m);
    nudge_candidates_free(cand, ncand);
    nudge_patterns_free(pats);
    json_decref(root);
    free(input);
}

int cmd_hook(int argc, char **argv)
{
    static const cli_opt opts[] = {
        {"triggers", 0, NULL, "also add trigger recall (or MNEMO_NUDGE_TRIGGERS=1)"},
        {"recall", 0, NULL, "also add the recalled-memories block (or MNEMO_NUDGE_RECALL=1)"},
        {NULL, 0, NULL, NULL},
    };
    cli_args a;
    int code = cli_parse(argc, argv, "hook",
                         "mnemo hook claude-code [--triggers] [--recall] < hook-input.json\n\n"
                         "The recall nudge, a Claude Code UserPromptSubmit hook: searches the "
                         "index for the\nnames in the prompt and prints them as context. Always "
                         "exits 0; see docs/recall.md.\nEnvironment: MNEMO_NUDGE_TIMEOUT_MS "
                         "(1500), MNEMO_NUDGE_MAX_TERMS (3),\nMNEMO_NUDGE_MAX_HITS (5), "
                         "MNEMO_NUDGE_PATTERNS (" NUDGE_DEFAULT_PATTERNS "),\n"
                         "MNEMO_NUDGE_TRIGGERS, MNEMO_NUDGE_RECALL, MNEMO_NUDGE_DEBUG",
                         opts, &a);
    /* Even a command-line mistake exits 0: for UserPromptSubmit, Claude Code
     * reads exit code 2 as "block this prompt", and a typo in settings.json
     * must not block every prompt. The message goes to standard error. */
    if (code)
        return EXIT_OK;
    if (a.npos == 0) {
        usage_error("name the hook");
        return EXIT_OK;
    }
    if (strcmp(a.pos[0], "claude-code") != 0) {
        cli_error("hook: unknown hook '%s' (known: claude-code)", a.pos[0]);
        return EXIT_OK;
    }
    if (a.npos > 1) {
        usage_error("too many arguments");
        return EXIT_OK;
    }

    settings s = {0};
    s.debug = env_bool(&s, "DEBUG", 0);
    s.timeout_ms = env_int(&s, "TIMEOUT_MS", 1, 600000, 1500);
    arm_deadline(s.timeout_ms, s.debug);
    s.max_terms = env_int(&s, "MAX_TERMS", 1, 20, 3);
    s.max_hits = env_int(&s, "MAX_HITS", 1, 50, 5);
    s.triggers = a.val[0] != NULL || env_bool(&s, "TRIGGERS", 0);
    s.recall = a.val[1] != NULL || env_bool(&s, "RECALL", 0);
    s.patterns = env("PATTERNS");
    run(&a, &s);
    return EXIT_OK;
}
