/*
 * fuzz_records.c - libFuzzer harness for what callers hand the library as
 * JSON: the first byte picks one. 0: a config file (mnemo_config_load_file).
 * 1: memory import lines and add records (mem_import_each, validated, not
 * stored). 2: memory search and list options (the bodies of the HTTP and
 * MCP memory calls). Each must accept or refuse with a message, never
 * crash; a refusal always says why.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/core.h"
#include "engine/memjson.h"
#include "engine/memory.h"
#include "mnemo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static mnemo *m;

static int no_store(mnemo *h, void *ud, json_t *o, mem_fields *f, size_t line)
{
    (void)h, (void)ud, (void)o, (void)line;
    if (f->text && !*f->text)
        abort(); /* validation lets no empty text through */
    return 0;
}

static void setup(void)
{
    if (m)
        return;
    mnemo_config *cfg;
    if (mnemo_config_new(&cfg) || mnemo_config_set(cfg, "workspace", "/tmp", "fuzz", NULL) ||
        mnemo_config_set(cfg, "db", "/tmp/mnemo-fuzz-records.sqlite", "fuzz", NULL) ||
        mnemo_open(cfg, &m))
        abort();
    mnemo_config_free(cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    setup();
    int which = data[0] % 3;
    size_t n = size - 1;
    char *s = malloc(n + 1);
    if (!s)
        return 0;
    memcpy(s, data + 1, n);
    s[n] = 0;
    if (which == 0) {
        char path[64];
        snprintf(path, sizeof path, "/tmp/mnemo-fuzz-config-%ld.json", (long)getpid());
        FILE *f = fopen(path, "wb");
        if (f) {
            fwrite(s, 1, n, f);
            fclose(f);
            mnemo_config *cfg;
            char *err = NULL;
            if (mnemo_config_new(&cfg) == 0) {
                if (mnemo_config_load_file(cfg, path, &err) != 0 && (!err || !*err))
                    abort();
                mnemo_config_free(cfg);
            }
            free(err);
            unlink(path);
        }
    } else if (which == 1) {
        if (mem_import_each(m, s, n, no_store, NULL) != 0 && !*mnemo_errmsg(m))
            abort();
    } else {
        for (int search = 0; search < 2; search++) {
            mem_opts o;
            int rc = mem_opts_parse(m, s, search, &o);
            mem_opts_cleanup(&o); /* owed whatever the outcome */
            if (rc != 0 && !*mnemo_errmsg(m))
                abort();
        }
    }
    free(s);
    return 0;
}
