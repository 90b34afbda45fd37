/*
 * cmd_mcp.c - `mnemo mcp`: the MCP server over standard input and output,
 * one JSON-RPC message per line (the stdio transport). Diagnostics go to
 * standard error; standard output carries only protocol messages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mcp.h"

#define MAX_MESSAGE (16u << 20)

int cmd_mcp(int argc, char **argv)
{
    static const cli_opt opts[] = {{NULL, 0, NULL, NULL}};
    cli_args a;
    int code = cli_parse(argc, argv, "mcp",
                         "mnemo [--workspace DIR] mcp   (MCP over stdio: configure it as the "
                         "command of an MCP server in your agent)",
                         opts, &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    mnemo *m;
    if ((code = cli_open(&a, &m)))
        return code;
    mcp_keep_fresh(1); /* no watcher runs here: sync what changed before a search */
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = 0;
        if (n == 0)
            continue;
        char *resp;
        if ((size_t)n > MAX_MESSAGE)
            resp = strdup("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
                          "\"message\":\"Invalid Request: message larger than 16 MiB\"}}");
        else
            resp = mcp_handle(m, line, (size_t)n);
        if (resp) {
            fputs(resp, stdout);
            fputc('\n', stdout);
            fflush(stdout);
            free(resp);
        }
        if (cap > MAX_MESSAGE) { /* do not keep a huge buffer around */
            free(line);
            line = NULL;
            cap = 0;
        }
    }
    free(line);
    mnemo_close(m);
    return EXIT_OK;
}
