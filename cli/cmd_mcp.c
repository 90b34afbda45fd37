/*
 * cmd_mcp.c - `mnemo mcp`.
 */
#include "cli.h"

int cmd_mcp(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("mcp: not built yet");
    return EXIT_USAGE;
}
