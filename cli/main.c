/*
 * main.c - the mnemo command: dispatch to cmd_*.c.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int cmd_completion(int argc, char **argv);

static const cli_command commands[] = {
    {"index", cmd_index, "index the workspace's memory (incremental; --force, --watch)", NULL, NULL},
    {"search", cmd_search, "search the memory index", NULL, NULL},
    {"get", cmd_get, "read lines of a memory file", NULL, "*"},
    {"status", cmd_status, "show the index, its last sync and skipped files", NULL, NULL},
    {"config", cmd_config, "show the configuration, list its keys, set or unset one in a file",
     "show keys set unset path", NULL},
    {"tokenize", cmd_tokenize, "show how text is tokenized (debugging)", NULL, NULL},
    {"model", cmd_model,
     "import an embedding model (a transformer model folder, or a static table: GloVe, "
     "word2vec, model2vec) or pull one from the Hugging Face hub",
     "import pull", "import"},
    {"embed", cmd_embed, "the vectors the configured provider gives, as JSON", NULL, NULL},
    {"recall", cmd_recall, "the <recalled-memories> block, or trigger recall (--triggers)", NULL,
     NULL},
    {"memory", cmd_memory, "store, search, list, change and export structured memories",
     "add update delete purge get list history confirm search export import recover",
     "export import recover"},
    {"skill", cmd_skill, "the memory_search skill (arguments in SKILL_ARGS)", NULL, NULL},
    {"serve", cmd_serve, "the HTTP daemon: JSON API and MCP at /mcp, on loopback", NULL, NULL},
    {"ui", cmd_ui, "the memory browser: start or reuse the daemon, open its page", NULL, NULL},
    {"mcp", cmd_mcp, "MCP server over standard input and output", NULL, NULL},
    {"hook", cmd_hook, "agent hooks: claude-code (the recall nudge for UserPromptSubmit)",
     "claude-code", NULL},
    {"doctor", cmd_doctor, "check the config, index, provider, daemon and agent wiring", NULL,
     NULL},
    {"completion", cmd_completion, "print the bash or zsh completion script", "bash zsh", NULL},
};
#define NCOMMANDS (sizeof commands / sizeof *commands)

static void usage(FILE *f)
{
    fprintf(f, "usage: mnemo [--workspace DIR] [--db FILE] [--store URI] COMMAND [options]\n\n"
               "mnemo %s - memory search for AI agents\n\ncommands:\n",
            mnemo_version());
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "  %-10s %s\n", "help", "help COMMAND [SUBCOMMAND] is COMMAND [SUBCOMMAND] --help");
    fprintf(f, "\nRun 'mnemo COMMAND --help' for a command's options.\n");
}

static int cmd_completion(int argc, char **argv)
{
    static const cli_opt opts[] = {{NULL, 0, NULL, NULL}};
    cli_args a;
    int code = cli_parse(argc, argv, "completion",
                         "mnemo completion bash|zsh\n\n"
                         "Prints the completion script, made from the commands' option "
                         "tables:\n  source <(mnemo completion bash)      (in ~/.bashrc)\n"
                         "  mnemo completion zsh > ~/.zfunc/_mnemo  (a folder in $fpath)",
                         opts, &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    if (a.npos != 1) {
        cli_error("completion: name the shell: mnemo completion bash|zsh");
        return EXIT_USAGE;
    }
    return cli_completion(stdout, a.pos[0], commands, NCOMMANDS);
}

/* Does the command line ask for JSON (--json, or -j, before any "--")? */
static int wants_json(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            break;
        /* -j alone or first in a bundle (-jn5); every command's -j is --json. */
        if (!strcmp(argv[i], "--json") || !strncmp(argv[i], "-j", 2))
            return 1;
    }
    return 0;
}

static int run(int argc, char **argv)
{
    /* Global options may come before the command: move them after it. */
    char *args[1024];
    int n = 0;
    const char *cmd = NULL;
    if (argc > 1000) {
        cli_error("too many arguments");
        return EXIT_USAGE;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!cmd && a[0] == '-') {
            if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
                usage(stdout);
                return EXIT_OK;
            }
            if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
                printf("mnemo %s\n", mnemo_version());
                return EXIT_OK;
            }
            args[n++] = argv[i];
            int takes = (!strcmp(a, "--workspace") || !strcmp(a, "-w") || !strcmp(a, "--db") ||
                         !strcmp(a, "--store") || !strcmp(a, "--config") || !strcmp(a, "-c") || !strcmp(a, "--set"));
            if (takes && i + 1 < argc)
                args[n++] = argv[++i];
            continue;
        }
        if (!cmd) {
            cmd = a;
            continue;
        }
        args[n++] = argv[i];
    }
    if (!cmd) {
        usage(stderr);
        cli_error("no command given (mnemo --help lists them)");
        return EXIT_USAGE;
    }
    if (!strcmp(cmd, "help")) {
        /* help COMMAND [SUBCOMMAND]: the same as COMMAND [SUBCOMMAND] --help. */
        for (int i = 0; i < n; i++) {
            if (args[i][0] != '-') {
                cmd = args[i];
                memmove(args + i, args + i + 1, (size_t)(n - i - 1) * sizeof *args);
                args[n - 1] = "--help";
                break;
            }
        }
        if (!strcmp(cmd, "help")) {
            usage(stdout);
            return EXIT_OK;
        }
    }
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(cmd, commands[i].name))
            return commands[i].fn(n, args);
    const char *names[NCOMMANDS + 2];
    for (size_t i = 0; i < NCOMMANDS; i++)
        names[i] = commands[i].name;
    names[NCOMMANDS] = "help";
    names[NCOMMANDS + 1] = NULL;
    const char *near = cli_suggest(cmd, names);
    if (!near)
        usage(stderr);
    if (near)
        cli_error("unknown command '%s'; did you mean '%s'?", cli_shown(cmd), near);
    else
        cli_error("unknown command '%s' (mnemo --help lists the commands)", cli_shown(cmd));
    return EXIT_USAGE;
}

int main(int argc, char **argv)
{
    int code = run(argc, argv);
    /* Under --json a usage error is also JSON on standard output. */
    if (code == EXIT_USAGE && wants_json(argc, argv))
        cli_json_usage();
    return code;
}
