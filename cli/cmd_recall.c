/*
 * cmd_recall.c - `mnemo recall`: what to put in front of an agent's reply.
 * Recall runs before every reply, so it never fails loudly: any error is a
 * warning on stderr, nothing on stdout, exit code 0.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
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
        {"user", 0, "U", "whose memories (default: config userId)"},
        {"agent", 0, "A", "agent id"},
        {"run", 0, "R", "run (session) id, for --strategy always"},
        {"message", 'm', "TEXT", "the inbound message (- reads standard input)"},
        {"strategy", 0, "smart|always|manual", "smart (default), always (adds session memory), manual (nothing)"},
        {"json", 'j', NULL, "print {\"recalled\",\"triggers\"} (both kinds, as POST /v1/recall)"},
        {NULL, 0, NULL, NULL},
    };
    cli_args a;
    int code = cli_parse(argc, argv, "recall",
                         "mnemo recall [--user U] [--message TEXT|-] [--strategy smart|always|"
                         "manual] [--agent A] [--run R]\n"
                         "       mnemo recall --triggers MESSAGE... (or - for stdin)\n"
                         "       mnemo recall --json [--triggers] --message TEXT ...",
                         opts, &a);
    /* Hooks run recall before every prompt: an unknown option (a newer
     * hook's, a typo in its settings) is a warning on stderr, no output and
     * exit code 0, as any other failure here. */
    if (code)
        return EXIT_OK;
    int triggers = a.val[0] != NULL;
    int json = a.val[6] != NULL;
    if (triggers && a.npos == 0 && !(json && a.val[4])) {
        cli_error("recall: say what to recall: --triggers MESSAGE");
        return EXIT_USAGE;
    }
    if ((!triggers || json) && a.val[4] && a.npos) {
        cli_error("recall: give the message once: --message TEXT or as arguments");
        return EXIT_USAGE;
    }
    char *message = NULL;
    if ((!triggers || json) && a.val[4]) {
        cli_args b = a;
        b.npos = 1;
        b.pos[0] = a.val[4];
        message = read_message(&b);
    } else if (a.npos) {
        message = read_message(&a);
    }
    if (a.npos && !message)
        return EXIT_OK;
    mnemo *m;
    if (cli_open(&a, &m)) {
        free(message);
        return EXIT_OK; /* the error is printed; recall never blocks */
    }
    char *out = NULL;
    int rc;
    /* The recall options: the scope, the strategy, the message. */
    json_t *o = json_object();
    const char *keys[] = {NULL, "user_id", "agent_id", "run_id", NULL, "strategy"};
    for (int i = 1; i < 6; i++)
        if (keys[i] && a.val[i])
            json_object_set_new(o, keys[i], json_string(a.val[i]));
    if (message)
        json_object_set_new(o, "message", json_string(message));
    if (json) { /* --json: the daemon's /v1/recall reply */
        if (triggers)
            json_object_set_new(o, "triggers", json_true());
        char *err = NULL;
        rc = api_run(m, api_find("recall"), o, &out, &err);
        json_decref(o);
        if (rc)
            cli_error("recall: %s", err);
        else
            puts(out);
        free(out);
        free(err);
        free(message);
        mnemo_close(m);
        return EXIT_OK;
    }
    if (triggers) {
        rc = mnemo_recall_triggers(m, message, &out);
    } else {
        char *opt = json_dumps(o, JSON_COMPACT);
        rc = opt ? mnemo_memory_recall(m, opt, &out) : MNEMO_NOMEM;
        free(opt);
    }
    json_decref(o);
    if (rc && rc != MNEMO_NOTFOUND)
        cli_error("recall: %s", mnemo_errmsg(m));
    else if (!rc && out && *out)
        fputs(out, stdout);
    if (!rc && mnemo_warning(m)) /* memories left out: the block is not all there is */
        fprintf(stderr, "mnemo: recall: warning: %s\n", mnemo_warning(m));
    mnemo_free(out);
    free(message);
    mnemo_close(m);
    return EXIT_OK;
}
