/*
 * cmd_get.c - `mnemo get PATH`: read lines of a memory file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "cli.h"

int cmd_get(int argc, char **argv)
{
    static const cli_opt opts[] = {
        {"from", 0, "N", "first line, 1-based (default 1)"},
        {"lines", 'n', "M", "number of lines (default 120; output stops at 12,000 characters)"},
        {"json", 'j', NULL, "print JSON"},
        {NULL, 0, NULL, NULL},
    };
    cli_args a;
    int code = cli_parse(argc, argv, "get", "mnemo get PATH [--from N] [--lines M] [--json]",
                         opts, &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    if (a.npos != 1 || !*a.pos[0]) {
        cli_error("get: expected one PATH (usage: mnemo get PATH [--from N] [--lines M])");
        return EXIT_USAGE;
    }
    int from = 0, lines = 0, json = a.val[2] != NULL; /* 0: the citation's, else the defaults */
    if (a.val[0] && (code = cli_int(a.val[0], "from", 1, 1 << 30, &from)))
        return code;
    if (a.val[1] && (code = cli_int(a.val[1], "lines", 1, 1 << 20, &lines)))
        return code;
    mnemo *m;
    if ((code = cli_open(&a, &m)))
        return code;
    if (!strncmp(a.pos[0], "memory://", 9)) {
        /* A stored fact, as a search result cites it. */
        json_t *args = json_pack("{s:s}", "path", a.pos[0]);
        char *out = NULL, *err = NULL;
        int rc = api_run(m, api_find("get"), args, &out, &err);
        json_decref(args);
        if (rc) {
            code = cli_fail(m, rc, json);
            free(out);
            free(err);
            mnemo_close(m);
            return code;
        }
        json_t *j = json_loads(out, 0, NULL);
        if (json)
            puts(out);
        else
            printf("%s\n", json_string_value(json_object_get(j, "text")));
        json_decref(j);
        free(out);
        free(err);
        mnemo_close(m);
        return EXIT_OK;
    }
    mnemo_excerpt e;
    int rc = mnemo_get(m, a.pos[0], from, lines, &e);
    if (rc) {
        code = cli_fail(m, rc, json);
        /* The command line was fine (cli_parse checked it): the file it names
         * is what cannot be read as a note. */
        if (rc == MNEMO_INVALID)
            code = EXIT_INVALID;
        mnemo_close(m);
        return code;
    }
    char hint[8192] = "", word[4096];
    if (e.truncated)
        snprintf(hint, sizeof hint,
                 "lines %d-%d of %d shown; continue with: mnemo get %s --from %d", e.from, e.to,
                 e.total_lines, cli_shell_word(e.path, word, sizeof word), e.next_from);
    if (json) {
        json_t *j = api_excerpt_json(&e);
        char *t = api_dump(j);
        json_decref(j);
        if (t)
            puts(t);
        free(t);
    } else {
        fputs(e.text, stdout);
        if (e.truncated)
            fprintf(stderr, "-- %s\n", hint);
    }
    mnemo_excerpt_cleanup(&e);
    mnemo_close(m);
    return EXIT_OK;
}
