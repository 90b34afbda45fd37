/*
 * cmd_tokenize.c - `mnemo tokenize TEXT`: the tokens the index would store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_tokenize(int argc, char **argv)
{
    static const cli_opt opts[] = {
        {"query", 'q', NULL, "tokenize as a query (marks stop words)"},
        {NULL, 0, NULL, NULL},
    };
    cli_args a;
    int code = cli_parse(argc, argv, "tokenize", "mnemo tokenize [--query] TEXT...", opts, &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    if (!a.npos) {
        cli_error("tokenize: no text given");
        return EXIT_USAGE;
    }
    char *text = cli_join(&a);
    if (!text)
        return EXIT_ERROR;
    mnemo *m;
    if ((code = cli_open(&a, &m))) {
        free(text);
        return code;
    }
    char *out = NULL;
    int rc = mnemo_tokenize_json(m, text, a.val[0] != NULL, &out);
    if (rc)
        cli_error("%s", mnemo_errmsg(m));
    else
        puts(out);
    mnemo_free(out);
    free(text);
    mnemo_close(m);
    return cli_exit_code(rc);
}
