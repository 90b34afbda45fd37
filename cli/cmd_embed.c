/*
 * cmd_embed.c - `mnemo embed [--query|--document] TEXT...`: the vectors the
 * configured provider gives, as JSON, to check a model against another
 * implementation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_embed(int argc, char **argv)
{
    static const cli_opt opts[] = {
        {"query", 'q', NULL, "embed as queries (the query prefix and input type)"},
        {"document", 'd', NULL, "embed as documents (the default)"},
        {NULL, 0, NULL, NULL},
    };
    cli_args a;
    int code = cli_parse(argc, argv, "embed", "mnemo embed [--query|--document] TEXT...", opts,
                         &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    if (a.val[0] && a.val[1]) {
        cli_error("embed: --query and --document exclude each other");
        return EXIT_USAGE;
    }
    if (!a.npos) {
        cli_error("embed: no text given (each argument is one text)");
        return EXIT_USAGE;
    }
    mnemo *m;
    if ((code = cli_open(&a, &m)))
        return code;
    char *out = NULL;
    int rc = mnemo_embed_json(m, a.pos, (size_t)a.npos, a.val[0] != NULL, &out);
    if (rc)
        cli_error("%s", mnemo_errmsg(m));
    else
        puts(out);
    mnemo_free(out);
    mnemo_close(m);
    return cli_exit_code(rc);
}
