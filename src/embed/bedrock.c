/*
 * bedrock.c - Amazon Bedrock's embedding models (see bedrock.h).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed/bedrock.h"
#include "embed/sigv4.h"

static const bedrock_model models[] = {
    {"amazon.titan-embed-text-v2:0", BEDROCK_TITAN_V2, 1024, 1, "256,512,1024"},
    {"amazon.titan-embed-text-v1", BEDROCK_TITAN_V1, 1536, 1, "1536"},
    {"amazon.titan-embed-g1-text-02", BEDROCK_TITAN_V1, 1536, 1, "1536"},
    {"cohere.embed-english-v3", BEDROCK_COHERE_V3, 1024, 96, "1024"},
    {"cohere.embed-multilingual-v3", BEDROCK_COHERE_V3, 1024, 96, "1024"},
    {"cohere.embed-v4:0", BEDROCK_COHERE_V4, 1536, 96, "256,512,1024,1536"},
    {"amazon.nova-2-multimodal-embeddings-v1:0", BEDROCK_NOVA, 1024, 1, "256,384,1024,3072"},
};

/* Inference profiles name a model with the geography in front. */
static const char *const prefixes[] = {"us.", "eu.", "apac.", "global.", "us-gov.", "ca.",
                                       "jp.", "au."};

const bedrock_model *bedrock_find(const char *model)
{
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
        size_t l = strlen(prefixes[i]);
        if (!strncmp(model, prefixes[i], l)) {
            model += l;
            break;
        }
    }
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        const char *id = models[i].id;
        size_t l = strlen(id);
        if (strncmp(model, id, l) != 0)
            continue;
        const char *rest = model + l;
        /* exact, or a throughput suffix: ":0:8k" after a bare id, ":8k" after a versioned one */
        if (!*rest || (*rest == ':' && rest[1] && strchr(rest + 1, '/') == NULL))
            return &models[i];
    }
    return NULL;
}

const char *bedrock_models(void)
{
    return "amazon.titan-embed-text-v2:0, amazon.titan-embed-text-v1, "
           "amazon.titan-embed-g1-text-02, cohere.embed-english-v3, "
           "cohere.embed-multilingual-v3, cohere.embed-v4:0, "
           "amazon.nova-2-multimodal-embeddings-v1:0";
}

int bedrock_size_ok(const bedrock_model *m, int dims)
{
    char want[16];
    snprintf(want, sizeof want, "%d", dims);
    for (const char *p = m->sizes; *p;) {
        size_t l = strcspn(p, ",");
        if (l == strlen(want) && !strncmp(p, want, l))
            return 1;
        p += l + (p[l] == ',');
    }
    return 0;
}

void bedrock_region(const char *base_url, char *out, size_t n, char *src, size_t srcn)
{
    const char *h = base_url ? strstr(base_url, "://") : NULL;
    if (h) {
        h += 3;
        static const char *const hosts[] = {"bedrock-runtime-fips.", "bedrock-runtime."};
        for (size_t i = 0; i < 2; i++) {
            size_t l = strlen(hosts[i]);
            if (strncmp(h, hosts[i], l) != 0)
                continue;
            const char *r = h + l, *dot = strchr(r, '.');
            if (dot && dot > r && (size_t)(dot - r) < n && !strncmp(dot, ".amazonaws.com", 14)) {
                snprintf(out, n, "%.*s", (int)(dot - r), r);
                if (src)
                    snprintf(src, srcn, "baseUrl");
                return;
            }
        }
    }
    static const char *const vars[] = {"AWS_REGION", "AWS_DEFAULT_REGION"};
    for (size_t i = 0; i < 2; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            snprintf(out, n, "%s", v);
            if (src)
                snprintf(src, srcn, "%s", vars[i]);
            return;
        }
    }
    if (aws_config_region(out, n, src, srcn))
        return;
    snprintf(out, n, "us-east-1");
    if (src)
        snprintf(src, srcn, "the default: no AWS_REGION, AWS_DEFAULT_REGION or profile region");
}

/* Hands the numbers of array V to FN as vector INDEX. */
static int one(json_t *v, size_t index, float *scratch, size_t cap, jsonvec_fn fn, void *ud,
               char *err, size_t errlen)
{
    if (!json_is_array(v)) {
        snprintf(err, errlen, "a vector that is not an array");
        return -1;
    }
    size_t d = json_array_size(v);
    if (d > cap) {
        snprintf(err, errlen, "a vector of %zu numbers, more than %zu", d, cap);
        return -1;
    }
    for (size_t i = 0; i < d; i++) {
        json_t *x = json_array_get(v, i);
        if (!json_is_number(x)) {
            snprintf(err, errlen, "a vector with a value that is not a number");
            return -1;
        }
        scratch[i] = (float)json_number_value(x);
    }
    if (fn(ud, index, scratch, d)) {
        snprintf(err, errlen, "a refused vector");
        return -1;
    }
    return 0;
}

long bedrock_scan(const char *s, size_t n, float *scratch, size_t cap, jsonvec_fn fn, void *ud,
                  char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(s, n, 0, &je);
    long got = -1;
    if (!json_is_object(root)) {
        snprintf(err, errlen, "invalid JSON (%s)", root ? "not an object" : je.text);
        goto done;
    }
    json_t *single = json_object_get(root, "embedding");
    json_t *many = json_object_get(root, "embeddings");
    if (json_is_object(many))
        many = json_object_get(many, "float");
    if (json_is_array(single)) {
        got = one(single, 0, scratch, cap, fn, ud, err, errlen) ? -1 : 1;
        goto done;
    }
    if (!json_is_array(many)) {
        snprintf(err, errlen, "no \"embedding\" or \"embeddings\"");
        goto done;
    }
    size_t i;
    json_t *v;
    json_array_foreach(many, i, v)
    {
        json_t *inner = json_is_object(v) ? json_object_get(v, "embedding") : v;
        if (one(inner, i, scratch, cap, fn, ud, err, errlen))
            goto done;
    }
    got = (long)json_array_size(many);
done:
    json_decref(root);
    return got;
}
