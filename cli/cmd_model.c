/*
 * cmd_model.c - `mnemo model import PATH`: static embedding tables and
 * transformer model folders.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Default table name: the file or folder name without extensions. */
static void default_name(const char *src, char *out, size_t n)
{
    size_t len = strlen(src);
    while (len > 1 && src[len - 1] == '/')
        len--;
    const char *base = src;
    for (size_t i = 0; i < len; i++)
        if (src[i] == '/')
            base = src + i + 1;
    size_t bl = (size_t)(src + len - base);
    snprintf(out, n, "%.*s", (int)bl, base);
    static const char *const exts[] = {".gz", ".txt", ".bin", ".vec"};
    for (size_t k = 0; k < sizeof exts / sizeof *exts; k++) {
        size_t el = strlen(exts[k]), ol = strlen(out);
        if (ol > el && strcmp(out + ol - el, exts[k]) == 0)
            out[ol - el] = 0;
    }
}

int cmd_model(int argc, char **argv)
{
    static const cli_opt opts[] = {
        {"name", 0, "NAME", "table name (default: the file name without extensions)"},
        {"max-words", 0, "N", "keep only the N most frequent words"},
        {"json", 'j', NULL, "print JSON"},
        {NULL, 0, NULL, NULL},
    };
    cli_args a;
    int code = cli_parse(argc, argv, "model",
                         "mnemo model import PATH [--name NAME] [--max-words N] [--json]", opts,
                         &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    if (a.npos != 2 || strcmp(a.pos[0], "import") != 0) {
        cli_error("model: usage: mnemo model import PATH [--name NAME] [--max-words N]");
        return EXIT_USAGE;
    }
    int max_words = 0;
    if (a.val[1] && (code = cli_int(a.val[1], "max-words", 1, 1 << 30, &max_words)))
        return code;
    char name[256];
    if (a.val[0])
        snprintf(name, sizeof name, "%s", a.val[0]);
    else
        default_name(a.pos[1], name, sizeof name);
    mnemo *m;
    if ((code = cli_open(&a, &m)))
        return code;
    char *out = NULL;
    int rc = mnemo_model_import(m, a.pos[1], name, (size_t)max_words, &out);
    if (rc) {
        code = cli_fail(m, rc, a.val[2] != NULL);
        mnemo_close(m);
        return code;
    }
    if (a.val[2]) {
        puts(out);
    } else {
        printf("imported %s as '%s'\n%s\n", a.pos[1], name, out);
        const char *prov = strstr(out, "\"provider\":\"local\"") ? "local" : "static";
        printf("use it with: mnemo --set provider=%s --set model=%s index\n"
               "or in mnemo.json: {\"provider\": \"%s\", \"model\": \"%s\"}\n",
               prov, name, prov, name);
    }
    mnemo_free(out);
    mnemo_close(m);
    return EXIT_OK;
}
