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
    {"config", cmd_config, "show the effective configuration or list its keys"},
    {"tokenize", cmd_tokenize, "show how text is tokenized (debugging)"},
    {"model", cmd_model, "import a static embedding table (GloVe, word2vec, model2vec)"},
    {"embed", cmd_embed, "the vectors the configured provider gives, as JSON"},
    {"recall", cmd_recall, "the <recalled-memories> block, or trigger recall (--triggers)"},
    {"memory", cmd_memory, "store, search, list, change and export structured memories"},
    {"skill", cmd_skill, "the memory_search skill (arguments in SKILL_ARGS)"},
    {"serve", cmd_serve, "the HTTP daemon: JSON API and MCP at /mcp, on loopback"},
    {"mcp", cmd_mcp, "MCP server over standard input and output"},
    {"hook", cmd_hook, "agent hooks: claude-code (the recall nudge for UserPromptSubmit)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: mnemo [--workspace DIR] [--db FILE] [--store URI] COMMAND [options]\n\n"
               "mnemo %s - memory search for AI agents\n\ncommands:\n",
            mnemo_version());
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\nRun 'mnemo COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv)
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
        return EXIT_USAGE;
    }
    if (!strcmp(cmd, "help")) {
        usage(stdout);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(cmd, commands[i].name))
            return commands[i].fn(n, args);
    cli_error("unknown command '%s'", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
