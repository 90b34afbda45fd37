/*
 * cmd_hook.c - `mnemo hook claude-code`: the recall nudge.
 */
#include "cli.h"

int cmd_hook(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return EXIT_OK;
}
