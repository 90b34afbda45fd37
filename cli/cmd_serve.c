/*
 * cmd_serve.c - `mnemo serve`.
 */
#include "cli.h"

int cmd_serve(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("serve: not built yet");
    return EXIT_USAGE;
}
