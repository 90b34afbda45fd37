/*
 * sigv4.h - AWS credentials and Signature Version 4, for Amazon Bedrock.
 *
 * Credentials come from the environment (AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), then from the shared files
 * (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials, then AWS_CONFIG_FILE
 * or ~/.aws/config) for the profile AWS_PROFILE or "default", then from the
 * profile's credential_process, in the order AWS's own SDKs read them.
 * Requests are signed as AWS's SDK (botocore) signs them for services other
 * than S3.
 */
#ifndef MNEMO_SIGV4_H
#define MNEMO_SIGV4_H

#include <stddef.h>
#include <time.h>

#include "util/buf.h"

typedef struct aws_creds {
    char *access_key, *secret_key, *token; /* token NULL without a session */
    char source[512];                      /* where they came from, for messages */
} aws_creds;

/* Finds credentials. MNEMO_UNAVAILABLE when none is complete, with the
 * sources tried and what is missing in ERR (never a key). */
int aws_creds_load(aws_creds *c, buf *err);
/* The profile's region in the config file (AWS_CONFIG_FILE or
 * ~/.aws/config, profile AWS_PROFILE or "default"): 1 with it in OUT and
 * where it came from in SRC (may be NULL), 0 when the profile sets none. */
int aws_config_region(char *out, size_t n, char *src, size_t srcn);
/* Wipes and frees the keys. */
void aws_creds_clear(aws_creds *c);

/* Signs a request to URL (as it will be sent) for SERVICE in REGION at
 * time NOW. Appends to HEADERS the lines to send, one a line:
 * "x-amz-date: ...", "x-amz-security-token: ..." (with a session) and
 * "Authorization: AWS4-HMAC-SHA256 ...". CONTENT_TYPE is signed with the
 * host and those headers. */
int sigv4_sign(const aws_creds *c, const char *region, const char *service, const char *method,
               const char *url, const char *content_type, const void *body, size_t blen,
               time_t now, buf *headers);

#endif
