/*
 * test_bedrock.c - the Amazon Bedrock provider against tests/bedrock_server.py,
 * a loopback stand-in that checks each request's SigV4 signature with
 * botocore's signer (independent of ours) and each model family's body,
 * and refuses what the real service refuses. Credential sources and their
 * precedence (credential_process too), regions (the profile's too), model
 * ids with prefixes and suffixes, throttling,
 * an expired session, and that no key is ever printed or stored.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "embed/bedrock.h"
#include "embed/sigv4.h"
#include "test.h"

#define AKID "AKIDTESTEXAMPLE7Q2Z"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYzEXAMPLEKEY"
#define TOKEN "FwoGZXIvYXdzEXAMPLESESSIONTOKEN0123456789abcdef"
#define BEARER "ABSKQmVkcm9ja0FQSUtleS1leGFtcGxlLXRva2Vu"

typedef struct server {
    pid_t pid;
    char url[64];  /* baseUrl=http://127.0.0.1:PORT */
    char log[512];
} server;

/* Starts bedrock_server.py with ARGS; fails the test when it does not come up. */
static server start(const char *args)
{
    server s;
    int port = test_py_server("bedrock_server.py", args,
                              "(is botocore installed? scripts/install-deps installs it)", &s.pid,
                              s.log, sizeof s.log);
    snprintf(s.url, sizeof s.url, "baseUrl=http://127.0.0.1:%d", port);
    return s;
}

static void stop(server *s) { test_py_server_stop(s->pid); }

/* How many times NEEDLE is in the server's log. */
static int logged(const server *s, const char *needle) { return test_count_in_file(s->log, needle); }

/* No AWS setting from the machine running the tests. */
static void clean_env(void)
{
    static const char *const vars[] = {
        "AWS_ACCESS_KEY_ID",  "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
        "AWS_PROFILE",        "AWS_REGION",            "AWS_DEFAULT_REGION",
        "AWS_CONFIG_FILE",    "AWS_SHARED_CREDENTIALS_FILE", "AWS_BEARER_TOKEN_BEDROCK"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        unsetenv(vars[i]);
    setenv("HOME", test_dir(), 1);
}

static void env_keys(void)
{
    setenv("AWS_ACCESS_KEY_ID", AKID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
}

static void notes(void)
{
    test_write("ws/memory/a.md", "The deploy key rotates every Monday.\n");
    test_write("ws/memory/b.md", "Grandma's apple pie needs cinnamon.\n");
    test_write("ws/memory/c.md", "Backups run nightly to the Frankfurt bucket.\n");
}

/* A fresh index each time: no vector comes from an earlier one's cache. */
#define fresh_db test_fresh_db

/* Syncs with the provider and the settings given, expecting it to work. */
static mnemo_sync_stats sync_with(const server *s, const char *a, const char *b)
{
    mnemo *m = test_open("ws", fresh_db(), "provider=bedrock", s->url, a, b, NULL);
    mnemo_sync_stats st;
    int rc = mnemo_sync(m, NULL, &st);
    if (rc)
        test_fail(__FILE__, __LINE__, "sync: %s", mnemo_errmsg(m));
    mnemo_close(m);
    return st;
}

/* Syncs expecting a failure; returns its message (to free). */
static char *sync_fails(const server *s, const char *a)
{
    mnemo *m = test_open("ws", fresh_db(), "provider=bedrock", s->url, a, NULL);
    ASSERT(mnemo_sync(m, NULL, NULL) != 0);
    char *msg = strdup(mnemo_errmsg(m));
    mnemo_close(m);
    ASSERT_NOT_CONTAINS(msg, SECRET);
    ASSERT_NOT_CONTAINS(msg, TOKEN);
    ASSERT_NOT_CONTAINS(msg, BEARER);
    return msg;
}

/* Titan v2 (the default model), signed with keys from the environment:
 * one input a request, in parallel up to embedConcurrency, each signature
 * checked by botocore; a wrong secret is refused, so the check is real. */
TEST(bedrock_titan_signed_requests)
{
    clean_env();
    env_keys();
    notes();
    server s = start("--access-key " AKID " --secret '" SECRET "' --delay-ms 100");
    mnemo_sync_stats st = sync_with(&s, "embedConcurrency=3", NULL);
    ASSERT_EQ(st.chunks_embedded, 3);
    /* The notes and the engine's own fixed texts, one request each. */
    int ok = logged(&s, "\"status\": 200");
    ASSERT(ok >= 3);
    ASSERT_EQ(logged(&s, "\"n\":"), ok);
    ASSERT_EQ(logged(&s, "\"inputs\": 1,"), ok);
    ASSERT_EQ(logged(&s, "\"model\": \"amazon.titan-embed-text-v2:0\""), ok);
    ASSERT_EQ(logged(&s, "\"dims\": 1024"), ok);
    ASSERT_EQ(logged(&s, "\"path\": \"/model/amazon.titan-embed-text-v2%3A0/invoke\""), ok);
    ASSERT_EQ(logged(&s, "\"signed\": \"content-type;host;x-amz-date\""), ok);
    ASSERT_EQ(logged(&s, "\"max_in_flight\": 4,"), 0); /* embedConcurrency holds */
    ASSERT(logged(&s, "\"max_in_flight\": 3,") > 0);  /* and is used */
    /* A wrong secret: botocore computes another signature. */
    setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-key-0000000000000000000000", 1);
    char *msg = sync_fails(&s, NULL);
    ASSERT_CONTAINS(msg, "bedrock: 403 SignatureDoesNotMatch");
    ASSERT_CONTAINS(msg, "credentials from the environment (AWS_ACCESS_KEY_ID)");
    free(msg);
    ASSERT(logged(&s, "\"error\": \"SignatureDoesNotMatch\"") >= 1);
    stop(&s);
}

/* Every model family: its body (checked by the server) and its answer. */
TEST(bedrock_model_families)
{
    clean_env();
    env_keys();
    notes();
    server s = start("--access-key " AKID " --secret '" SECRET "'");
    static const struct {
        const char *model, *dims;
        const char *family;
        int requests, width;
    } cases[] = {
        {"model=amazon.titan-embed-text-v2:0", "dimensions=256", "titan-v2", 3, 256},
        {"model=amazon.titan-embed-text-v2:0", "dimensions=512", "titan-v2", 3, 512},
        {"model=amazon.titan-embed-text-v1", NULL, "titan-v1", 3, 1536},
        {"model=amazon.titan-embed-g1-text-02", NULL, "titan-v1", 3, 1536},
        {"model=cohere.embed-english-v3", NULL, "cohere-v3", 1, 1024},
        {"model=cohere.embed-multilingual-v3", NULL, "cohere-v3", 1, 1024},
        {"model=cohere.embed-v4:0", NULL, "cohere-v4", 1, 1536},
        {"model=cohere.embed-v4:0", "dimensions=512", "cohere-v4", 1, 512},
        {"model=amazon.nova-2-multimodal-embeddings-v1:0", NULL, "nova", 3, 1024},
        {"model=amazon.nova-2-multimodal-embeddings-v1:0", "dimensions=384", "nova", 3, 384},
    };
    int single = 0; /* requests of a family that takes one input a request */
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char fam[64], dims[64];
        snprintf(fam, sizeof fam, "\"family\": \"%s\"", cases[i].family);
        snprintf(dims, sizeof dims, "\"dims\": %d,", cases[i].width);
        int before = logged(&s, fam), dbefore = logged(&s, dims);
        int rbefore = logged(&s, "\"n\":");
        mnemo_sync_stats st = sync_with(&s, cases[i].model, cases[i].dims);
        ASSERT_EQ(st.chunks_embedded, 3);
        int requests = logged(&s, "\"n\":") - rbefore;
        ASSERT_EQ(logged(&s, fam) - before, requests);
        ASSERT_EQ(logged(&s, dims) - dbefore, requests);
        if (cases[i].requests == 3)
            single = requests;
        else /* Cohere: batches */
            ASSERT(single > 0 && requests * 4 <= single);
    }
    ASSERT_EQ(logged(&s, "\"status\": 200"), logged(&s, "\"n\":"));
    /* Cohere's batch says what it is; the document type while indexing. */
    ASSERT(logged(&s, "\"input_type\": \"search_document\"") >= 4);
    ASSERT(logged(&s, "\"input_type\": \"GENERIC_INDEX\"") >= 6);
    /* A size the model does not make, and an unknown model: clear errors. */
    mnemo *m = test_open("ws", fresh_db(), "provider=bedrock", s.url, "dimensions=300", NULL);
    ASSERT(mnemo_sync(m, NULL, NULL) != 0);
    ASSERT_CONTAINS(mnemo_errmsg(m), "256,512,1024 dimensions, not 300");
    mnemo_close(m);
    m = test_open("ws", fresh_db(), "provider=bedrock", s.url, "model=amazon.titan-nope", NULL);
    ASSERT(mnemo_sync(m, NULL, NULL) != 0);
    ASSERT_CONTAINS(mnemo_errmsg(m), "unknown embedding model 'amazon.titan-nope'");
    mnemo_close(m);
    stop(&s);
}

/* Search: the query goes out as a query (Cohere search_query, Nova
 * GENERIC_RETRIEVAL) and finds its note by meaning. */
TEST(bedrock_query_types)
{
    clean_env();
    env_keys();
    notes();
    server s = start("--access-key " AKID " --secret '" SECRET "'");
    const char *models[] = {"model=cohere.embed-english-v3",
                            "model=amazon.nova-2-multimodal-embeddings-v1:0"};
    const char *types[] = {"\"input_type\": \"search_query\"",
                           "\"input_type\": \"GENERIC_RETRIEVAL\""};
    for (size_t i = 0; i < 2; i++) {
        mnemo *m = test_open("ws", fresh_db(), "provider=bedrock", s.url, models[i], NULL);
        test_sync(m);
        char *j = test_search_json(m, "cinnamon pie", 5);
        ASSERT_CONTAINS(j, "\"mode\":\"hybrid\"");
        ASSERT_CONTAINS(j, "memory/b.md");
        free(j);
        mnemo_close(m);
        ASSERT(logged(&s, types[i]) >= 1);
    }
    stop(&s);
}

/* AWS_BEARER_TOKEN_BEDROCK: sent as a bearer token, and it wins over keys. */
TEST(bedrock_bearer_token)
{
    clean_env();
    env_keys();
    setenv("AWS_BEARER_TOKEN_BEDROCK", BEARER, 1);
    notes();
    server s = start("--bearer " BEARER);
    mnemo_sync_stats st = sync_with(&s, NULL, NULL);
    ASSERT_EQ(st.chunks_embedded, 3);
    ASSERT_EQ(logged(&s, "\"auth\": \"bearer\""), logged(&s, "\"status\": 200"));
    ASSERT_EQ(logged(&s, "\"auth\": \"sigv4\""), 0);
    setenv("AWS_BEARER_TOKEN_BEDROCK", "ABSK-a-wrong-token-000000000000", 1);
    char *msg = sync_fails(&s, NULL);
    ASSERT_CONTAINS(msg, "403 AccessDeniedException");
    ASSERT_CONTAINS(msg, "credentials from AWS_BEARER_TOKEN_BEDROCK");
    ASSERT_NOT_CONTAINS(msg, "ABSK-a-wrong-token");
    free(msg);
    stop(&s);
}

/* Keys in the environment win over the shared files; then the credentials
 * file, then the config file, for AWS_PROFILE or the default profile; a
 * session token is sent and signed. Nothing found: every source tried is
 * named with what is missing. */
TEST(bedrock_credential_sources)
{
    clean_env();
    notes();
    test_write(".aws/credentials", "[default]\naws_access_key_id = AKIDFILEDEFAULT000\n"
                                   "aws_secret_access_key = file-default-secret-000000000000\n"
                                   "[work]\naws_access_key_id = " AKID "\n"
                                   "aws_secret_access_key = " SECRET "\n"
                                   "aws_session_token = " TOKEN "\n");
    test_write(".aws/config", "[default]\nregion = us-east-1\n[profile cfg]\n"
                              "aws_access_key_id = " AKID "\naws_secret_access_key = " SECRET
                              "\n");
    server s = start("--access-key " AKID " --secret '" SECRET "'");
    server st = start("--access-key " AKID " --secret '" SECRET "' --token " TOKEN);
    /* The environment's keys over the file's default profile. */
    env_keys();
    ASSERT_EQ(sync_with(&s, NULL, NULL).chunks_embedded, 3);
    /* Without them the default profile is used: its key is refused. */
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    char *msg = sync_fails(&s, NULL);
    ASSERT_CONTAINS(msg, "UnrecognizedClientException");
    ASSERT_CONTAINS(msg, "profile 'default' in ");
    free(msg);
    /* AWS_PROFILE=work: the credentials file's profile with a session. */
    setenv("AWS_PROFILE", "work", 1);
    ASSERT_EQ(sync_with(&st, NULL, NULL).chunks_embedded, 3);
    int ok = logged(&st, "\"status\": 200");
    ASSERT(ok >= 3);
    ASSERT_EQ(logged(&st, "\"session\": true"), ok);
    ASSERT_EQ(logged(&st, "\"signed\": \"content-type;host;x-amz-date;x-amz-security-token\""),
              ok);
    /* AWS_PROFILE=cfg: only in the config file, as [profile cfg]. */
    setenv("AWS_PROFILE", "cfg", 1);
    ASSERT_EQ(sync_with(&s, NULL, NULL).chunks_embedded, 3);
    /* The files named by AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE. */
    setenv("AWS_SHARED_CREDENTIALS_FILE", test_path("elsewhere/credentials"), 1);
    setenv("AWS_CONFIG_FILE", test_path("elsewhere/config"), 1);
    setenv("AWS_PROFILE", "ghost", 1);
    test_write("elsewhere/config", "[profile other]\nregion = eu-west-1\n");
    msg = sync_fails(&s, NULL);
    ASSERT_CONTAINS(msg, "no AWS credentials");
    ASSERT_CONTAINS(msg, "AWS_BEARER_TOKEN_BEDROCK (unset)");
    ASSERT_CONTAINS(msg, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (unset)");
    ASSERT_CONTAINS(msg, "profile 'ghost' (AWS_PROFILE)");
    ASSERT_CONTAINS(msg, "elsewhere/credentials (no such file)");
    ASSERT_CONTAINS(msg, "elsewhere/config (no such profile)");
    free(msg);
    test_write("elsewhere/credentials", "[ghost]\naws_access_key_id = " AKID "\n");
    msg = sync_fails(&s, NULL);
    ASSERT_CONTAINS(msg, "lacks aws_access_key_id or aws_secret_access_key");
    free(msg);
    /* Half the keys in the environment: said so. */
    setenv("AWS_ACCESS_KEY_ID", AKID, 1);
    msg = sync_fails(&s, NULL);
    ASSERT_CONTAINS(msg, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
    free(msg);
    stop(&s);
    stop(&st);
}

/* The region signed for: AWS_REGION, then AWS_DEFAULT_REGION, then the
 * profile's region in the config file, then us-east-1; a bedrock-runtime
 * host in baseUrl names its own. Failures say where the region came from. */
TEST(bedrock_region_resolution)
{
    clean_env();
    env_keys();
    notes();
    server west = start("--access-key " AKID " --secret '" SECRET "' --region us-west-2");
    server east = start("--access-key " AKID " --secret '" SECRET "' --region us-east-1");
    char *msg = sync_fails(&west, NULL); /* signed for us-east-1 */
    ASSERT_CONTAINS(msg, "SignatureDoesNotMatch");
    ASSERT_CONTAINS(msg, "region us-east-1 from the default");
    free(msg);
    /* The default profile's region in ~/.aws/config */
    test_write(".aws/config", "[default]\nregion = us-west-2\n[profile eu]\nregion = eu-west-1\n");
    ASSERT_EQ(sync_with(&west, NULL, NULL).chunks_embedded, 3);
    msg = sync_fails(&east, NULL);
    ASSERT_CONTAINS(msg, "region us-west-2 from profile 'default' in ");
    ASSERT_CONTAINS(msg, ".aws/config");
    free(msg);
    /* AWS_PROFILE's, in the file AWS_CONFIG_FILE names */
    test_write("other/config", "[profile east]\nregion = us-east-1\n");
    setenv("AWS_CONFIG_FILE", test_path("other/config"), 1);
    setenv("AWS_PROFILE", "east", 1);
    ASSERT_EQ(sync_with(&east, NULL, NULL).chunks_embedded, 3);
    setenv("AWS_PROFILE", "nowhere", 1); /* a profile without a region: the default */
    ASSERT_EQ(sync_with(&east, NULL, NULL).chunks_embedded, 3);
    unsetenv("AWS_CONFIG_FILE");
    setenv("AWS_PROFILE", "eu", 1);
    char r[32], src[320];
    bedrock_region("", r, sizeof r, src, sizeof src);
    ASSERT_STR_EQ(r, "eu-west-1");
    ASSERT_CONTAINS(src, "profile 'eu' in ");
    unsetenv("AWS_PROFILE");
    /* The environment over the profile (us-west-2) */
    setenv("AWS_DEFAULT_REGION", "us-east-1", 1);
    ASSERT_EQ(sync_with(&east, NULL, NULL).chunks_embedded, 3);
    setenv("AWS_DEFAULT_REGION", "us-west-2", 1);
    ASSERT_EQ(sync_with(&west, NULL, NULL).chunks_embedded, 3);
    setenv("AWS_REGION", "us-east-1", 1); /* over AWS_DEFAULT_REGION */
    ASSERT_EQ(sync_with(&east, NULL, NULL).chunks_embedded, 3);
    stop(&west);
    stop(&east);
    bedrock_region("https://bedrock-runtime.eu-central-1.amazonaws.com", r, sizeof r, src,
                   sizeof src);
    ASSERT_STR_EQ(r, "eu-central-1");
    ASSERT_STR_EQ(src, "baseUrl");
    bedrock_region("https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com/", r, sizeof r, NULL,
                   0);
    ASSERT_STR_EQ(r, "us-gov-west-1");
    bedrock_region("https://proxy.example.com/bedrock", r, sizeof r, src, sizeof src);
    ASSERT_STR_EQ(r, "us-east-1");
    ASSERT_STR_EQ(src, "AWS_REGION");
    unsetenv("AWS_REGION");
    unsetenv("AWS_DEFAULT_REGION");
    bedrock_region("", r, sizeof r, src, sizeof src);
    ASSERT_STR_EQ(r, "us-west-2"); /* the default profile's */
    test_write(".aws/config", "[default]\n");
    bedrock_region("", r, sizeof r, NULL, 0);
    ASSERT_STR_EQ(r, "us-east-1");
}

/* Writes an executable script REL that prints BODY (and records its
 * arguments in REL.args); returns its path. */
static const char *script(const char *rel, const char *body)
{
    static char path[1024];
    char text[4096];
    snprintf(path, sizeof path, "%s", test_path(rel));
    snprintf(text, sizeof text, "#!/bin/sh\nprintf '%%s\\n' \"$@\" >'%s.args'\n%s\n", path, body);
    test_write(rel, text);
    ASSERT_EQ(chmod(path, 0755), 0);
    return path;
}

/* Keys from a profile's credential_process: run without a shell (its
 * words split as botocore splits them), after the environment, the
 * credentials file and the config file's keys; its failures said without
 * a secret. */
TEST(bedrock_credential_process)
{
    clean_env();
    notes();
    server s = start("--access-key " AKID " --secret '" SECRET "'");
    server st = start("--access-key " AKID " --secret '" SECRET "' --token " TOKEN);
    server wrong = start("--access-key " AKID " --secret 'another-secret-0000000000000000000000'");
    const char *good = script("bin/creds", "echo '{\"Version\": 1, \"AccessKeyId\": \"" AKID
                                           "\", \"SecretAccessKey\": \"" SECRET
                                           "\", \"SessionToken\": \"" TOKEN
                                           "\", \"Expiration\": \"2999-01-01T00:00:00Z\"}'");
    char conf[8192];
    snprintf(conf, sizeof conf,
             "[profile proc]\ncredential_process = %s --flag \"two words\" 'a $HOME' x\\ y\n"
             "[profile both]\naws_access_key_id = " AKID "\naws_secret_access_key = " SECRET
             "\ncredential_process = %s\n",
             good, good);
    test_write(".aws/config", conf);
    setenv("AWS_PROFILE", "proc", 1);
    ASSERT_EQ(sync_with(&st, NULL, NULL).chunks_embedded, 3);
    int ok = logged(&st, "\"status\": 200");
    ASSERT(ok >= 3);
    ASSERT_EQ(logged(&st, "\"session\": true"), ok);
    char *args = test_read(test_path("bin/creds.args"), NULL);
    ASSERT_STR_EQ(args, "--flag\ntwo words\na $HOME\nx y\n"); /* no shell expanded $HOME */
    free(args);
    /* A refused request names the source of the keys */
    char *msg = sync_fails(&wrong, NULL);
    ASSERT_CONTAINS(msg, "bedrock: 403 ");
    ASSERT_CONTAINS(msg, "credentials from credential_process of profile 'proc' in ");
    free(msg);

    /* Precedence: the config file's keys over its credential_process (no session), the
     * credentials file's over both, the environment's over all */
    setenv("AWS_PROFILE", "both", 1);
    ASSERT_EQ(sync_with(&s, NULL, NULL).chunks_embedded, 3);
    ASSERT_EQ(logged(&s, "\"session\": true"), 0);
    test_write(".aws/credentials", "[both]\naws_access_key_id = AKIDFILEBOTH000000\n"
                                   "aws_secret_access_key = file-both-secret-0000000000000\n");
    msg = sync_fails(&s, NULL);
    ASSERT_CONTAINS(msg, "UnrecognizedClientException");
    ASSERT_CONTAINS(msg, "credentials from profile 'both' in ");
    ASSERT_CONTAINS(msg, ".aws/credentials");
    free(msg);
    env_keys();
    ASSERT_EQ(sync_with(&s, NULL, NULL).chunks_embedded, 3);
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");

    /* A credential_process in the credentials file is used too */
    snprintf(conf, sizeof conf, "[proc2]\ncredential_process = %s\n", good);
    test_write(".aws/credentials", conf);
    setenv("AWS_PROFILE", "proc2", 1);
    ASSERT_EQ(sync_with(&st, NULL, NULL).chunks_embedded, 3);

    /* Failures: clear, and no secret from the output */
    static const struct {
        const char *body, *says;
    } bad[] = {
        {"exit 3", "exited with status 3"},
        {"echo 'not json " SECRET "'", "printed no JSON object"},
        {"echo '{\"Version\": 2, \"AccessKeyId\": \"" AKID "\", \"SecretAccessKey\": \"" SECRET
         "\"}'",
         "printed a Version other than 1"},
        {"echo '{\"Version\": 1, \"AccessKeyId\": \"" AKID "\"}'",
         "printed no AccessKeyId or SecretAccessKey"},
        {"echo '{\"Version\": 1, \"AccessKeyId\": \"" AKID "\", \"SecretAccessKey\": \"" SECRET
         "\", \"Expiration\": \"2001-02-03T04:05:06Z\"}'",
         "expired at 2001-02-03T04:05:06Z"},
        {"echo '{\"Version\": 1, \"AccessKeyId\": \"" AKID "\", \"SecretAccessKey\": \"" SECRET
         "\", \"Expiration\": \"next tuesday\"}'",
         "an Expiration that is not an ISO 8601 time"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(conf, sizeof conf, "[proc2]\ncredential_process = %s\n",
                 script("bin/bad", bad[i].body));
        test_write(".aws/credentials", conf);
        msg = sync_fails(&st, NULL);
        ASSERT_CONTAINS(msg, "bedrock: credential_process of profile 'proc2' in ");
        ASSERT_CONTAINS(msg, bad[i].says);
        free(msg);
    }
    test_write(".aws/credentials", "[proc2]\ncredential_process = /nonexistent/helper --x\n");
    msg = sync_fails(&st, NULL);
    ASSERT_CONTAINS(msg, "could not be run");
    free(msg);
    test_write(".aws/credentials", "[proc2]\ncredential_process = helper 'unclosed\n");
    msg = sync_fails(&st, NULL);
    ASSERT_CONTAINS(msg, "an unclosed quote");
    free(msg);
    stop(&s);
    stop(&st);
    stop(&wrong);
}

/* Inference-profile prefixes and throughput suffixes name the same
 * family; the id is sent as it is, percent-encoded. */
TEST(bedrock_model_prefixes_stripped)
{
    ASSERT(bedrock_find("us.amazon.titan-embed-text-v2:0") == bedrock_find("amazon.titan-embed-text-v2:0"));
    ASSERT(bedrock_find("global.cohere.embed-v4:0")->family == BEDROCK_COHERE_V4);
    ASSERT(bedrock_find("apac.cohere.embed-multilingual-v3")->family == BEDROCK_COHERE_V3);
    ASSERT(bedrock_find("eu.amazon.nova-2-multimodal-embeddings-v1:0")->family == BEDROCK_NOVA);
    ASSERT(bedrock_find("amazon.titan-embed-text-v1:2:8k")->family == BEDROCK_TITAN_V1);
    ASSERT(bedrock_find("amazon.titan-embed-text-v2:0:8k")->family == BEDROCK_TITAN_V2);
    ASSERT(bedrock_find("amazon.titan-embed-text-v3") == NULL);
    ASSERT(bedrock_find("xx.amazon.titan-embed-text-v2:0") == NULL);
    clean_env();
    env_keys();
    notes();
    server s = start("--access-key " AKID " --secret '" SECRET "'");
    ASSERT_EQ(sync_with(&s, "model=us.amazon.titan-embed-text-v2:0", NULL).chunks_embedded, 3);
    int ok = logged(&s, "\"status\": 200");
    ASSERT_EQ(logged(&s, "\"path\": \"/model/us.amazon.titan-embed-text-v2%3A0/invoke\""), ok);
    ASSERT_EQ(sync_with(&s, "model=eu.cohere.embed-v4:0", NULL).chunks_embedded, 3);
    ASSERT(logged(&s, "\"family\": \"cohere-v4\"") >= 1);
    ASSERT_EQ(logged(&s, "\"status\": 200"), logged(&s, "\"n\":"));
    stop(&s);
}

/* ThrottlingException (429) is retried; an expired session is an error
 * that says so and names where the credentials came from. */
TEST(bedrock_throttling_and_expiry)
{
    clean_env();
    env_keys();
    setenv("AWS_SESSION_TOKEN", TOKEN, 1);
    notes();
    server s = start("--access-key " AKID " --secret '" SECRET "' --token " TOKEN
                     " --throttle 2");
    ASSERT_EQ(sync_with(&s, "embedConcurrency=1", NULL).chunks_embedded, 3);
    ASSERT_EQ(logged(&s, "\"error\": \"ThrottlingException\""), 2);
    ASSERT_EQ(logged(&s, "\"status\": 429"), 2);
    ASSERT_EQ(logged(&s, "\"status\": 200") + 2, logged(&s, "\"n\":"));
    stop(&s);
    s = start("--access-key " AKID " --secret '" SECRET "' --token " TOKEN " --expired");
    char *msg = sync_fails(&s, NULL);
    ASSERT_CONTAINS(msg, "bedrock: 403 ExpiredTokenException");
    ASSERT_CONTAINS(msg, "the environment (AWS_ACCESS_KEY_ID, AWS_SESSION_TOKEN) have expired");
    free(msg);
    stop(&s);
}

/* The command line end to end: index and search with --set, and no key
 * in any output, the index, or the server's log. */
TEST(bedrock_cli_end_to_end)
{
    clean_env();
    env_keys();
    setenv("AWS_SESSION_TOKEN", TOKEN, 1);
    notes();
    server s = start("--access-key " AKID " --secret '" SECRET "' --token " TOKEN);
    char set_url[96];
    snprintf(set_url, sizeof set_url, "%s", s.url);
    char *out = NULL, *err = NULL;
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "--set", "provider=bedrock", "--set", set_url,
                       "index", NULL),
              0);
    const char *secrets[] = {SECRET, TOKEN, BEARER};
    for (size_t i = 0; i < 3; i++) {
        ASSERT_NOT_CONTAINS(out, secrets[i]);
        ASSERT_NOT_CONTAINS(err, secrets[i]);
    }
    free(out);
    free(err);
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "--set", "provider=bedrock", "--set", set_url,
                       "--json", "search", "nightly backups Frankfurt", NULL),
              0);
    ASSERT_CONTAINS(out, "memory/c.md");
    ASSERT_CONTAINS(out, "\"provider\":\"bedrock\"");
    ASSERT_CONTAINS(out, "\"mode\":\"hybrid\"");
    for (size_t i = 0; i < 3; i++) {
        ASSERT_NOT_CONTAINS(out, secrets[i]);
        ASSERT_NOT_CONTAINS(err, secrets[i]);
    }
    free(out);
    free(err);
    ASSERT(logged(&s, "\"status\": 200") >= 4);
    /* A refused request's error on the command line: still no key. */
    setenv("AWS_SECRET_ACCESS_KEY", "wrong" SECRET, 1);
    ASSERT(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                    test_path("db.sqlite"), "--set", "provider=bedrock", "--set", set_url,
                    "search", "apple pie", NULL) != 0);
    ASSERT_CONTAINS(err, "SignatureDoesNotMatch");
    for (size_t i = 0; i < 3; i++) {
        ASSERT_NOT_CONTAINS(out, secrets[i]);
        ASSERT_NOT_CONTAINS(err, secrets[i]);
    }
    free(out);
    free(err);
    stop(&s);
    /* The index and the server's log hold no key (binary-safe search). */
    const char *files[] = {test_path("db.sqlite"), s.log};
    for (size_t f = 0; f < 2; f++) {
        size_t n;
        char *t = test_read(files[f], &n);
        ASSERT(t != NULL);
        for (size_t i = 0; i < 3; i++)
            ASSERT(memmem(t, n, secrets[i], strlen(secrets[i])) == NULL);
        free(t);
    }
}

/* provider auto never sends notes to Bedrock on its own, whatever AWS
 * credentials the environment holds: only a provider named bedrock does. */
TEST(bedrock_auto_does_not_pick_it)
{
    clean_env();
    env_keys();
    setenv("AWS_BEARER_TOKEN_BEDROCK", BEARER, 1);
    static const char *const keys[] = {"OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
                                       "VOYAGE_API_KEY", "MISTRAL_API_KEY"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        unsetenv(keys[i]);
    notes();
    server s = start("--bearer " BEARER);
    mnemo *m = test_open("ws", "db.sqlite", s.url, NULL);
    test_sync(m);
    char *j = test_search_json(m, "apple pie", 5);
    ASSERT_CONTAINS(j, "\"mode\":\"keyword\"");
    ASSERT_CONTAINS(j, "memory/b.md");
    free(j);
    mnemo_close(m);
    ASSERT_EQ(logged(&s, "\"n\":"), 0);
    stop(&s);
}
