/*
 * cmd_recall.c - `mnemo recall`: what to put in front of an agent's reply.
 * Recall runs before every reply, so it never fails loudly: any error is a
 * warning on stderr, nothing on stdout, exit code 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The message: the arguments, or standard input for "-" (capped). */
static char *read_message(const cli_args *a)
{
    if (a->npos == 1 && strcmp(a->pos[0], "-") == 0) {
        size_t cap = 1 << 16, n = 0;
        char *s = malloc(cap + 1);
        if (!s)
            return NULL;
        size_t r;
        while (n < cap && (r = fread(s + n, 1, cap - n, stdin)) > 0)
            n += r;
        s[n] = 0;
        return s;
    }
    return cli_join(a);
}

int cmd_recall(int argc, char **argv)
{
    static const cli_opt opts[] = {
        {"triggers", 't', NULL, "curated entries whose trigger phrases occur in the message"},
        {NULL, 0, NULL, NULL},
    };
    cli_args a;
    int code = cli_parse(argc, argv, "recall", "mnemo recall --triggers MESSAGE... (or - for stdin)",
                         opts, &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    if (!a.val[0]) {
        cli_error("recall: say what to recall: --triggers MESSAGE");
        return EXIT_USAGE;
    }
    char *message = read_message(&a);
    if (!message)
        return EXIT_OK;
    mnemo *m;
    if (cli_open(&a, &m)) {
        free(message);
        return EXIT_OK; /* the error is printed; recall never blocks */
    }
    char *out = NULL;
    int rc = mnemo_recall_triggers(m, message, &out);
    if (rc && rc != MNEMO_NOTFOUND)
        cli_error("recall: %s", mnemo_errmsg(m));
    else if (out && *out)
        fputs(out, stdout);
    mnemo_free(out);
    free(message);
    mnemo_close(m);
    return EXIT_OK;
}
