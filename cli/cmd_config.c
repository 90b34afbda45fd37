/*
 * cmd_config.c - `mnemo config show|keys`: the effective configuration.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cmd_config(int argc, char **argv)
{
    static const cli_opt opts[] = {
        {"sources", 's', NULL, "show where each value came from"},
        {NULL, 0, NULL, NULL},
    };
    cli_args a;
    int code = cli_parse(argc, argv, "config", "mnemo config show [--sources] | mnemo config keys",
                         opts, &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    const char *sub = a.npos ? a.pos[0] : "show";
    if (!strcmp(sub, "keys")) {
        const char *env, *help, *name;
        for (size_t i = 0; (name = mnemo_config_key(i, &env, &help)) != NULL; i++)
            printf("%-16s %-26s %s\n", name, env, help);
        return EXIT_OK;
    }
    if (strcmp(sub, "show") != 0) {
        cli_error("config: unknown subcommand '%s' (show or keys)", sub);
        return EXIT_USAGE;
    }
    mnemo_config *cfg;
    if ((code = cli_config(&a, &cfg)))
        return code;
    char *s = mnemo_config_json(cfg, a.val[0] != NULL);
    if (s)
        puts(s);
    mnemo_free(s);
    mnemo_config_free(cfg);
    return s ? EXIT_OK : EXIT_ERROR;
}
