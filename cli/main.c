/*
 * main.c - the mnemo command: dispatch to cmd_*.c.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"index", cmd_index, "index the workspace's memory (incremental; --force, --watch)"},
    {"search", cmd_search, "search the memory index"},
    {"get", cmd_get, "read lines of a memory file"},
    {"status", cmd_status, "show the index, its last sync and skipped files"},
    {"config", cmd_config, "show the configuration, list its keys, set or unset one in a file"},
    {"tokenize", cmd_tokenize, "show how text is tokenized (debugging)"},
    {"model", cmd_model, "import a static embedding table (GloVe, word2vec, model2vec)"},
    {"embed", cmd_embed, "the vectors the configured provider gives, as JSON"},
    {"recall", cmd_recall, "the <recalled-memories> block, or trigger recall (--triggers)"},
    {"memory", cmd_memory, "store, search, list, change and export structured memories"},
    {"skill", cmd_skill, "the memory_search skill (arguments in SKILL_ARGS)"},
    {"serve", cmd_serve, "the HTTP daemon: JSON API and MCP at /mcp, on loopback"},
    {"mcp", cmd_mcp, "MCP server over standard input and output"},
    {"hook", cmd_hook, "agent hooks: claude-code (the recall nudge for UserPromptSubmit)"},
    {"doctor", cmd_doctor, "check the config, index, provider, daemon and agent wiring"},
};
#define NCOMMANDS (sizeof commands / sizeof *commands)

static void usage(FILE *f)
{
    fprintf(f, "usage: mnemo [--workspace DIR] [--db FILE] [--store URI] COMMAND [options]\n\n"
               "mnemo %s - memory search for AI agents\n\ncommands:\n",
            mnemo_version());
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\nRun 'mnemo COMMAND --help' for a command's options.\n");
}

/* Does the command line ask for JSON (--json, or -j, before any "--")? */
static int wants_json(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            break;
        if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"))
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
        usage(stdout);
        return EXIT_OK;
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
