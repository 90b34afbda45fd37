/*
 * bedrock.h - Amazon Bedrock's embedding models: which family a model id
 * belongs to (the family decides the body and the answer's shape), the
 * region of a request, and reading the vectors out of an answer.
 */
#ifndef MNEMO_BEDROCK_H
#define MNEMO_BEDROCK_H

#include <stddef.h>

#include "util/jsonvec.h"

enum { BEDROCK_TITAN_V2, BEDROCK_TITAN_V1, BEDROCK_COHERE_V3, BEDROCK_COHERE_V4, BEDROCK_NOVA };

typedef struct bedrock_model {
    const char *id;  /* without an inference-profile prefix or throughput suffix */
    int family;
    int dims;        /* default */
    int max_inputs;  /* per request */
    const char *sizes; /* the dimensions it accepts, "256,512,1024" */
} bedrock_model;

/* The model of MODEL: an inference-profile prefix (us., eu., apac.,
 * global., ...) and a provisioned-throughput suffix (":...k" after the
 * version, e.g. ":0:8k") are ignored. NULL for an unknown model. */
const bedrock_model *bedrock_find(const char *model);
/* The known model ids, comma-separated, for messages. */
const char *bedrock_models(void);
/* Does SIZES ("256,512,1024") hold DIMS? */
int bedrock_size_ok(const bedrock_model *m, int dims);

/* The region: BASE_URL's host when it is bedrock-runtime.REGION.amazonaws.com
 * (or bedrock-runtime-fips), then AWS_REGION, AWS_DEFAULT_REGION, the
 * profile's region in the AWS config file, then us-east-1. SRC (may be
 * NULL) says which, for messages. */
void bedrock_region(const char *base_url, char *out, size_t n, char *src, size_t srcn);

/* Reads the vectors of an answer as jsonvec_scan does: {"embedding":[...]}
 * (Titan), {"embeddings":[[...], ...]} or {"embeddings":{"float":[[...]]}}
 * (Cohere), {"embeddings":[{"embedding":[...]}]} (Nova). */
long bedrock_scan(const char *s, size_t n, float *scratch, size_t cap, jsonvec_fn fn, void *ud,
                  char *err, size_t errlen);

#endif
