/*
 * cli.h - shared pieces of the mnemo command: option parsing, opening the
 * library with the layered configuration, error printing and exit codes.
 * Commands use only the public API (mnemo.h).
 */
#ifndef MNEMO_CLI_H
#define MNEMO_CLI_H

#include <stdio.h>

#include "mnemo.h"

/* Exit codes (documented in README.md). */
enum {
    EXIT_OK = 0,
    EXIT_ERROR = 1,    /* runtime failure: I/O, database, out of memory */
    EXIT_USAGE = 2,    /* bad command line or configuration */
    EXIT_NOTFOUND = 3, /* no such file, workspace or memory */
    EXIT_DENIED = 4,   /* path outside the memory roots */
    EXIT_CORRUPT = 5,  /* index damaged, foreign or from a newer mnemo */
    EXIT_BUSY = 6,     /* index locked by another process */
    EXIT_INVALID = 7   /* a file that cannot be read as a note: binary, too large, a FIFO */
};

typedef struct cli_opt {
    const char *name;  /* long name without dashes */
    char short_name;   /* 0 if none */
    const char *arg;   /* argument name, NULL for a flag; see cli_values */
    const char *help;
} cli_opt;

/* What shell completion offers for a value, by its argument name: the
 * words of a name such as "note|fact|all"; files for FILE, folders for DIR,
 * configuration keys for KEY=VALUE, the memory categories for CATEGORY and
 * CATEGORY,... (those with a default importance of their own; any other
 * name is a category too), the memory types for TYPE; nothing for free text (N, TEXT). Into OUT (N
 * bytes) as words, or one of "<file>", "<dir>", "<key=>" ; "" for
 * nothing. */
void cli_values(const char *arg, char *out, size_t n);

/* A command of cli/main.c's table. */
typedef struct cli_command {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
    const char *subs;  /* its subcommands, space-separated; NULL if none */
    const char *files; /* the subcommands whose arguments are files ("*": all) */
} cli_command;

/* A parsed command line: options by index into the command's table. */
typedef struct cli_args {
    const char *val[32]; /* option values ("" for a given flag), NULL when absent */
    const char *pos[256];
    int npos;
    /* Global options. */
    const char *workspace, *db, *config, *store;
    const char *sets[64];
    int nsets;
} cli_args;

/* Parses ARGV (after the command name) against OPTS plus the global options.
 * Prints an error and returns EXIT_USAGE on failure; returns -1 when help
 * was printed. */
int cli_parse(int argc, char **argv, const char *cmd, const char *usage, const cli_opt *opts,
              cli_args *a);

/* Instead of parsing, cli_parse hands the command's name, usage and
 * option table to FN and returns -1 while FN is set (for mnemo completion,
 * which reads every command's table by calling it with --help). */
typedef void (*cli_describe_fn)(void *ud, const char *cmd, const char *usage,
                                const cli_opt *opts);
void cli_set_describe(cli_describe_fn fn, void *ud);

/* The options every command takes (--workspace, --db, ...). */
const cli_opt *cli_global_opts(void);

/* Builds the configuration (defaults, files, environment, flags) and opens
 * the handle. Prints errors. Returns an exit code. */
int cli_open(const cli_args *a, mnemo **m);

/* Builds only the configuration. */
int cli_config(const cli_args *a, mnemo_config **cfg);

/* Maps a MNEMO_* status to an exit code. */
int cli_exit_code(int rc);

/* Prints "mnemo: <message>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints the last cli_error message as {"error":{"code":"usage",
 * "message":...}} on stdout, unless a JSON error was printed since: main
 * calls it when a command run with --json ends with EXIT_USAGE. */
void cli_json_usage(void);

/* The name in NAMES (NULL-terminated) WORD is most likely a typo of: at
 * most 1 edit away for words of up to 3 characters, else 2 (a swap of two
 * neighbours counts one), or the only name WORD begins; NULL if none. */
const char *cli_suggest(const char *word, const char *const *names);

/* Prints a JSON error object {"error":{"code","message"}} to stdout. */
void cli_json_error(int rc, const char *message);

/* Reports the failure RC of a call on M: the JSON error object on stdout
 * when JSON is set, the message on stderr. Returns the exit code. */
int cli_fail(mnemo *m, int rc, int json);

/* Prints S as a JSON string literal to F. */
void cli_json_string(FILE *f, const char *s);

/* Writes N bytes of S for a terminal: control characters (C0 but tab, DEL,
 * and C1 such as U+009B, the one-byte CSI) as \xNN, so that a file name or
 * a note cannot move the cursor, retitle the window or hide text. */
void cli_print_safe(FILE *f, const char *s, size_t n);

/* V for an error message, or a note in its place when it looks like a
 * credential: messages never repeat a secret. */
const char *cli_shown(const char *v);

/* The positional arguments joined with spaces; caller frees. NULL on OOM. */
char *cli_join(const cli_args *a);

/* Strict number parsing for option values. */
int cli_int(const char *s, const char *name, int lo, int hi, int *out);

/* S as one word of a shell command line, for hints to copy: S itself when
 * it holds only characters no shell reads specially (a '#' but first), else 'S' (a ' inside
 * as '\''). Into OUT (N bytes, cut to fit). Returns OUT. */
char *cli_shell_word(const char *s, char *out, size_t n);
int cli_double(const char *s, const char *name, double lo, double hi, double *out);

int cmd_index(int argc, char **argv);
int cmd_search(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_recall(int argc, char **argv);
int cmd_memory(int argc, char **argv);
int cmd_skill(int argc, char **argv);
int cmd_hook(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_ui(int argc, char **argv);

/* Sends GET /health to URL (http://host[:port][/]), waiting at most 1 s:
 * 0 with the reply's body in BODY, else -1 with the reason in WHY
 * (cmd_doctor.c). */
int cli_health(const char *url, char *body, size_t bodylen, char *why, size_t whylen);

/* The bash or zsh completion script for the commands CMDS (N of them),
 * from their option tables. Returns an exit code. */
int cli_completion(FILE *f, const char *shell, const cli_command *cmds, size_t n);

#endif
