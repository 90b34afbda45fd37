/*
 * test_copilot.c - the GitHub Copilot provider against tests/copilot_server.py,
 * a loopback stand-in for GitHub's token exchange and Copilot's models and
 * embeddings API that checks the GitHub token, the editor headers and the
 * Copilot token's life. The exchange, the cache file and its reuse by
 * later processes, refreshes, a token the server stopped taking, the API
 * base, the model choice, refusals, and that no token is ever printed or
 * stored beyond the cache file.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "embed/copilot.h"
#include "test.h"

#define GH "gho_TestGitHubToken0123456789abcdefABCDEF"

typedef struct server {
    pid_t pid;
    int port;
    char base[64];  /* baseUrl=http://127.0.0.1:PORT */
    char xurl[128]; /* copilotTokenUrl=http://127.0.0.1:PORT/copilot_internal/v2/token */
    char log[512];
} server;

/* Starts copilot_server.py with ARGS; fails the test when it does not come up. */
static server start(const char *args)
{
    server s;
    char all[4096];
    snprintf(all, sizeof all, "--gh-token " GH " %s", args);
    s.port = test_py_server("copilot_server.py", all, NULL, &s.pid, s.log, sizeof s.log);
    snprintf(s.base, sizeof s.base, "baseUrl=http://127.0.0.1:%d", s.port);
    snprintf(s.xurl, sizeof s.xurl,
             "copilotTokenUrl=http://127.0.0.1:%d/copilot_internal/v2/token", s.port);
    return s;
}

static void stop(server *s) { test_py_server_stop(s->pid); }

/* How many times NEEDLE is in the server's log. */
static int logged(const server *s, const char *needle) { return test_count_in_file(s->log, needle); }

#define EXCHANGED "\"path\": \"/copilot_internal/v2/token\", \"auth\": \"token\", \"editor_version\": \"vscode/1.96.2\", \"token_n\""
#define LISTED "\"path\": \"/models\", \"auth\": \"bearer\""
#define EMBEDDED "\"path\": \"/embeddings\", \"auth\": \"bearer\""

/* No GitHub or Copilot setting from the machine running the tests. */
static void clean_env(void)
{
    static const char *const vars[] = {"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN",
                                       "COPILOT_GITHUB_DOMAIN", "OPENAI_API_KEY",
                                       "GEMINI_API_KEY", "GOOGLE_API_KEY", "VOYAGE_API_KEY",
                                       "MISTRAL_API_KEY"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        unsetenv(vars[i]);
}

static void notes(void)
{
    test_write("ws/memory/a.md", "The deploy key rotates every Monday.\n");
    test_write("ws/memory/b.md", "Grandma's apple pie needs cinnamon.\n");
    test_write("ws/memory/c.md", "Backups run nightly to the Frankfurt bucket.\n");
}

#define fresh_db test_fresh_db

/* Syncs a fresh index with the server, expecting it to work. */
static mnemo_sync_stats sync_with(const server *s, const char *a, const char *b)
{
    mnemo *m = test_open("ws", fresh_db(), "provider=github-copilot", s->base, s->xurl, a, b,
                         NULL);
    mnemo_sync_stats st;
    if (mnemo_sync(m, NULL, &st))
        test_fail(__FILE__, __LINE__, "sync: %s", mnemo_errmsg(m));
    mnemo_close(m);
    return st;
}

/* Syncs expecting a failure; returns its message (to free). */
static char *sync_fails(const server *s, const char *a, const char *b)
{
    mnemo *m = test_open("ws", fresh_db(), "provider=github-copilot", s->base, s->xurl, a, b,
                         NULL);
    ASSERT(mnemo_sync(m, NULL, NULL) != 0);
    char *msg = strdup(mnemo_errmsg(m));
    mnemo_close(m);
    ASSERT_NOT_CONTAINS(msg, GH);
    ASSERT_NOT_CONTAINS(msg, "8kp=");
    return msg;
}

/* The cache files: how many, and the path of the last one. */
static int cache_files(char *path, size_t n)
{
    const char *dir = test_path("home/.cache/mnemo/copilot");
    DIR *d = opendir(dir);
    int count = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        count++;
        if (path)
            snprintf(path, n, "%s/%s", dir, de->d_name);
    }
    if (d)
        closedir(d);
    return count;
}

/* The Copilot token in the cache file (to free). */
static char *cached_token(void)
{
    char path[1024];
    ASSERT_EQ(cache_files(path, sizeof path), 1);
    char *t = test_read(path, NULL);
    ASSERT(t != NULL);
    char *p = strstr(t, "\"token\":\"");
    ASSERT(p != NULL);
    p += 9;
    char *tok = strndup(p, strcspn(p, "\""));
    free(t);
    ASSERT(strstr(tok, "proxy-ep=") != NULL);
    return tok;
}

/* One exchange (GitHub token as "token T" with the editor headers), one
 * models list, embeddings with the Copilot token as the bearer; the token
 * is cached in a private file, and another process uses it with no
 * exchange and no list. */
TEST(copilot_exchange_and_cache_reuse)
{
    clean_env();
    setenv("GH_TOKEN", GH, 1);
    notes();
    server s = start("");
    ASSERT_EQ(sync_with(&s, NULL, NULL).chunks_embedded, 3);
    ASSERT_EQ(logged(&s, EXCHANGED), 1);
    ASSERT_EQ(logged(&s, LISTED), 1);
    int ok = logged(&s, "\"status\": 200");
    ASSERT(ok >= 3);
    ASSERT_EQ(logged(&s, "\"model\": \"text-embedding-3-small\", \"keys\": [\"input\", \"model\"]"),
              ok - 2);
    ASSERT_EQ(logged(&s, "\"status\": 4"), 0);
    char path[1024];
    ASSERT_EQ(cache_files(path, sizeof path), 1);
    struct stat st;
    ASSERT_OK(stat(path, &st));
    ASSERT_EQ(st.st_mode & 0777, 0600);
    ASSERT_OK(stat(test_path("home/.cache/mnemo/copilot"), &st));
    ASSERT_EQ(st.st_mode & 0777, 0700);
    char *name = strrchr(path, '/') + 1;
    ASSERT(strncmp(name, "token-", 6) == 0);
    /* Another process: the cached token, no exchange, no list. */
    char *out = NULL, *err = NULL;
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("cli.sqlite"), "--set", "provider=github-copilot", "--set",
                       s.base, "--set", s.xurl, "--json", "search", "cinnamon pie", NULL),
              0);
    ASSERT_CONTAINS(out, "memory/b.md");
    ASSERT_CONTAINS(out, "\"mode\":\"hybrid\"");
    free(out);
    free(err);
    ASSERT_EQ(logged(&s, EXCHANGED), 1);
    ASSERT_EQ(logged(&s, LISTED), 1);
    ASSERT(logged(&s, EMBEDDED) > ok - 2);
    /* Another GitHub token has a file of its own. */
    setenv("GH_TOKEN", GH "x", 1);
    char *msg = sync_fails(&s, NULL, NULL);
    ASSERT_CONTAINS(msg, "401");
    free(msg);
    ASSERT_EQ(cache_files(NULL, 0), 1);
    stop(&s);
}

/* A token with under 5 minutes left is exchanged again by the next
 * process; one just received is used, however short its life. */
TEST(copilot_refresh_near_expiry)
{
    clean_env();
    setenv("GH_TOKEN", GH, 1);
    notes();
    server s = start("--ttl 240");
    ASSERT_EQ(sync_with(&s, NULL, NULL).chunks_embedded, 3);
    ASSERT_EQ(logged(&s, EXCHANGED), 1);
    ASSERT_EQ(sync_with(&s, NULL, NULL).chunks_embedded, 3);
    ASSERT_EQ(logged(&s, EXCHANGED), 2);
    /* The new token was listed with again: a list belongs to a token. */
    ASSERT_EQ(logged(&s, LISTED), 2);
    ASSERT_EQ(logged(&s, "\"status\": 401"), 0);
    stop(&s);
    /* A long-lived one is not. */
    s = start("--ttl 3600");
    ASSERT_EQ(sync_with(&s, NULL, NULL).chunks_embedded, 3);
    ASSERT_EQ(sync_with(&s, NULL, NULL).chunks_embedded, 3);
    ASSERT_EQ(logged(&s, EXCHANGED), 1);
    stop(&s);
}

/* The server stops taking a token before the time it gave (or the cache
 * holds one it never issued): the 401 leads to one new exchange and the
 * requests are sent again. */
TEST(copilot_refused_token_reexchanged)
{
    clean_env();
    setenv("GH_TOKEN", GH, 1);
    notes();
    server s = start("--ttl 2 --reported-ttl 3600");
    ASSERT_EQ(sync_with(&s, NULL, NULL).chunks_embedded, 3);
    int before = logged(&s, EXCHANGED);
    sleep(3);
    ASSERT_EQ(sync_with(&s, NULL, NULL).chunks_embedded, 3);
    ASSERT(logged(&s, "\"error\": \"expired\", \"status\": 401") >= 1);
    ASSERT_EQ(logged(&s, EXCHANGED), before + 1);
    stop(&s);
    /* A token the server never issued, cached as valid for an hour. */
    char path[1024], body[512];
    ASSERT_EQ(cache_files(path, sizeof path), 1);
    unlink(path);
    s = start("");
    ASSERT_EQ(sync_with(&s, NULL, NULL).chunks_embedded, 3);
    ASSERT_EQ(cache_files(path, sizeof path), 1);
    snprintf(body, sizeof body,
             "{\"token\":\"tid=forged;proxy-ep=proxy.localhost\",\"expires_at\":%ld,"
             "\"obtained_at\":%ld,\"models_base\":\"http://127.0.0.1:%d\",\"models\":"
             "\"text-embedding-3-small\"}",
             (long)time(NULL) + 3600, (long)time(NULL), s.port);
    FILE *f = fopen(path, "w");
    ASSERT(f != NULL);
    fputs(body, f);
    fclose(f);
    ASSERT_EQ(sync_with(&s, "embedConcurrency=1", NULL).chunks_embedded, 3);
    ASSERT_EQ(logged(&s, "\"error\": \"expired\""), 0);
    ASSERT_EQ(logged(&s, "\"status\": 401"), 1);
    ASSERT_EQ(logged(&s, EXCHANGED), 2);
    char *tok = cached_token();
    ASSERT_NOT_CONTAINS(tok, "forged");
    free(tok);
    stop(&s);
}

/* The API base: the token's proxy-ep (proxy.X -> https://api.X), else the
 * default; baseUrl wins over it. COPILOT_GITHUB_DOMAIN moves the exchange. */
TEST(copilot_proxy_ep_and_base_url)
{
    char b[256];
    copilot_api_base("tid=1;exp=2;sku=x;proxy-ep=proxy.individual.githubcopilot.com;8kp=1:a", b,
                     sizeof b);
    ASSERT_STR_EQ(b, "https://api.individual.githubcopilot.com");
    copilot_api_base("tid=1; proxy-ep=proxy.business.githubcopilot.com", b, sizeof b);
    ASSERT_STR_EQ(b, "https://api.business.githubcopilot.com");
    copilot_api_base("tid=1;proxy-ep=copilot-proxy.example.com:8443", b, sizeof b);
    ASSERT_STR_EQ(b, "https://copilot-proxy.example.com:8443");
    copilot_api_base("tid=1;exp=2", b, sizeof b);
    ASSERT_STR_EQ(b, COPILOT_DEFAULT_BASE);
    copilot_api_base("tid=1;proxy-ep=evil.example/path?x", b, sizeof b);
    ASSERT_STR_EQ(b, COPILOT_DEFAULT_BASE);
    clean_env();
    setenv("GH_TOKEN", GH, 1);
    notes();
    server s = start("--proxy-ep 'proxy.localhost:{port}'");
    /* No baseUrl: the models are asked for at https://api.localhost:PORT,
     * which this plain-HTTP server cannot answer. */
    mnemo *m = test_open("ws", fresh_db(), "provider=github-copilot", s.xurl,
                         "embedQueryTimeoutMs=1500", NULL);
    ASSERT(mnemo_sync(m, NULL, NULL) != 0);
    char want[128];
    snprintf(want, sizeof want, "https://api.localhost:%d/models", s.port);
    ASSERT_CONTAINS(mnemo_errmsg(m), want);
    mnemo_close(m);
    ASSERT_EQ(logged(&s, EXCHANGED), 1);
    ASSERT_EQ(logged(&s, LISTED), 0);
    /* baseUrl: the same cached token, its models listed here. */
    ASSERT_EQ(sync_with(&s, NULL, NULL).chunks_embedded, 3);
    ASSERT_EQ(logged(&s, EXCHANGED), 1);
    ASSERT_EQ(logged(&s, LISTED), 1);
    /* COPILOT_GITHUB_DOMAIN: the exchange at https://api.DOMAIN/... */
    setenv("COPILOT_GITHUB_DOMAIN", "localhost:1", 1);
    m = test_open("ws", fresh_db(), "provider=github-copilot", s.base, NULL);
    ASSERT(mnemo_sync(m, NULL, NULL) != 0);
    ASSERT_CONTAINS(mnemo_errmsg(m), "https://api.localhost:1/copilot_internal/v2/token");
    mnemo_close(m);
    stop(&s);
}

/* text-embedding-3-small when offered and no model is set, else the first
 * embedding model offered; a model that is not offered (a chat model, a
 * typo) is an error naming the ones that are. */
TEST(copilot_model_choice)
{
    clean_env();
    setenv("GH_TOKEN", GH, 1);
    notes();
    server s = start("");
    char *msg = sync_fails(&s, "model=gpt-4o", NULL);
    ASSERT_CONTAINS(msg, "model 'gpt-4o' is not offered for embeddings (offered: "
                         "text-embedding-3-small,text-embedding-ada-002)");
    free(msg);
    ASSERT_EQ(logged(&s, EMBEDDED), 0);
    ASSERT_EQ(sync_with(&s, "model=text-embedding-ada-002", NULL).chunks_embedded, 3);
    ASSERT(logged(&s, "\"model\": \"text-embedding-ada-002\"") >= 1);
    stop(&s);
    s = start("--embedding-models copilot-embed-a,copilot-embed-b");
    mnemo *m = test_open("ws", fresh_db(), "provider=github-copilot", s.base, s.xurl, NULL);
    test_sync(m);
    char *j = test_search_json(m, "apple pie", 5);
    ASSERT_CONTAINS(j, "memory/b.md");
    free(j);
    mnemo_close(m);
    int n = logged(&s, EMBEDDED);
    ASSERT(n >= 2);
    ASSERT_EQ(logged(&s, "\"model\": \"copilot-embed-a\""), n);
    stop(&s);
}

/* Refusals say what is wrong without a token: no GitHub token (the
 * variables tried), a bad one (401), an account without Copilot (403,
 * 404). COPILOT_GITHUB_TOKEN comes before GH_TOKEN; apiKeyEnv names
 * another variable. */
TEST(copilot_exchange_errors)
{
    clean_env();
    notes();
    server s = start("");
    char *msg = sync_fails(&s, NULL, NULL);
    ASSERT_CONTAINS(msg, "no GitHub token (set COPILOT_GITHUB_TOKEN, GH_TOKEN or GITHUB_TOKEN");
    free(msg);
    ASSERT_EQ(logged(&s, "\"path\""), 0);
    setenv("GITHUB_TOKEN", "ghp_notTheRightToken00000000000000000", 1);
    msg = sync_fails(&s, NULL, NULL);
    ASSERT_CONTAINS(msg, "the GitHub token from GITHUB_TOKEN was refused (401 from http://127.0.0.1:");
    ASSERT_CONTAINS(msg, "Bad credentials");
    ASSERT_NOT_CONTAINS(msg, "notTheRightToken");
    free(msg);
    setenv("GH_TOKEN", GH, 1); /* before GITHUB_TOKEN */
    ASSERT_EQ(sync_with(&s, NULL, NULL).chunks_embedded, 3);
    setenv("COPILOT_GITHUB_TOKEN", "ghu_wrongCopilotToken000000000000000", 1); /* before GH_TOKEN */
    msg = sync_fails(&s, NULL, NULL);
    ASSERT_CONTAINS(msg, "from COPILOT_GITHUB_TOKEN was refused");
    free(msg);
    setenv("MY_GITHUB", GH, 1);
    ASSERT_EQ(sync_with(&s, "apiKeyEnv=MY_GITHUB", NULL).chunks_embedded, 3);
    unsetenv("MY_GITHUB");
    msg = sync_fails(&s, "apiKeyEnv=MY_GITHUB", NULL);
    ASSERT_CONTAINS(msg, "no GitHub token (set MY_GITHUB");
    free(msg);
    stop(&s);
    unsetenv("COPILOT_GITHUB_TOKEN");
    /* A token that has expired when it arrives (a clock that is wrong). */
    s = start("--reported-ttl -60");
    msg = sync_fails(&s, NULL, NULL);
    ASSERT_CONTAINS(msg, "the Copilot token from http://127.0.0.1:");
    ASSERT_CONTAINS(msg, "has expired already");
    free(msg);
    ASSERT_EQ(logged(&s, LISTED), 0);
    ASSERT_EQ(cache_files(NULL, 0), 1); /* the earlier server's only */
    stop(&s);
    static const char *const refusals[] = {"--exchange-status 403", "--exchange-status 404"};
    for (size_t i = 0; i < 2; i++) {
        s = start(refusals[i]);
        msg = sync_fails(&s, NULL, NULL);
        ASSERT_CONTAINS(msg, "this GitHub account has no Copilot access");
        ASSERT_CONTAINS(msg, i == 0 ? "(403 from" : "(404 from");
        if (i == 0)
            ASSERT_CONTAINS(msg, "Copilot is not enabled for this account");
        free(msg);
        stop(&s);
    }
}

/* The headers setting replaces an editor header by name, on the exchange,
 * the list and the embeddings alike. */
TEST(copilot_editor_headers_setting)
{
    clean_env();
    setenv("GH_TOKEN", GH, 1);
    notes();
    server s = start("--editor-version mnemo-test/1.0");
    char *msg = sync_fails(&s, NULL, NULL);
    ASSERT_CONTAINS(msg, "unexpected Editor-Version");
    free(msg);
    ASSERT_EQ(sync_with(&s, "headers={\"editor-version\":\"mnemo-test/1.0\",\"X-Team\":\"mem\"}",
                        NULL)
                  .chunks_embedded,
              3);
    int ok = logged(&s, "\"status\": 200");
    ASSERT(ok >= 4);
    ASSERT_EQ(logged(&s, "\"editor_version\": \"mnemo-test/1.0\""), ok);
    stop(&s);
}

/* The command line end to end: neither token in any output, the index,
 * the server's log, or the cache folder beyond the cache file's Copilot
 * token; the GitHub token is nowhere in the cache folder. */
TEST(copilot_tokens_never_shown)
{
    clean_env();
    setenv("COPILOT_GITHUB_TOKEN", GH, 1);
    notes();
    server s = start("");
    char *out = NULL, *err = NULL;
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "--set", "provider=github-copilot", "--set",
                       s.base, "--set", s.xurl, "index", NULL),
              0);
    char *tok = cached_token();
    const char *secrets[] = {GH, tok};
    for (size_t i = 0; i < 2; i++) {
        ASSERT_NOT_CONTAINS(out, secrets[i]);
        ASSERT_NOT_CONTAINS(err, secrets[i]);
    }
    free(out);
    free(err);
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "--set", "provider=github-copilot", "--set",
                       s.base, "--set", s.xurl, "--json", "status", "--deep", NULL),
              0);
    ASSERT_CONTAINS(out, "\"provider\": \"github-copilot\"");
    for (size_t i = 0; i < 2; i++) {
        ASSERT_NOT_CONTAINS(out, secrets[i]);
        ASSERT_NOT_CONTAINS(err, secrets[i]);
    }
    free(out);
    free(err);
    /* A refusal on the command line: still no token. */
    ASSERT(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                    test_path("db.sqlite"), "--set", "provider=github-copilot", "--set", s.base,
                    "--set", s.xurl, "--set", "model=gpt-4o", "search", "apple pie", NULL) != 0);
    ASSERT_CONTAINS(err, "not offered for embeddings");
    for (size_t i = 0; i < 2; i++) {
        ASSERT_NOT_CONTAINS(out, secrets[i]);
        ASSERT_NOT_CONTAINS(err, secrets[i]);
    }
    free(out);
    free(err);
    stop(&s);
    const char *files[] = {test_path("db.sqlite"), s.log};
    for (size_t f = 0; f < 2; f++) {
        size_t n;
        char *t = test_read(files[f], &n);
        ASSERT(t != NULL);
        for (size_t i = 0; i < 2; i++)
            ASSERT(memmem(t, n, secrets[i], strlen(secrets[i])) == NULL);
        free(t);
    }
    /* The cache folder: one file, with the Copilot token and not the
     * GitHub one. */
    char path[1024];
    ASSERT_EQ(cache_files(path, sizeof path), 1);
    size_t n;
    char *t = test_read(path, &n);
    ASSERT(memmem(t, n, tok, strlen(tok)) != NULL);
    ASSERT(memmem(t, n, GH, strlen(GH)) == NULL);
    ASSERT(memmem(t, n, "gho_", 4) == NULL);
    free(t);
    free(tok);
}

/* provider auto never sends notes to Copilot on its own, whatever GitHub
 * tokens the environment holds; a provider named github-copilot that
 * cannot work is an error, not a quiet fall back to keywords. */
TEST(copilot_provider_policy)
{
    clean_env();
    setenv("GH_TOKEN", GH, 1);
    setenv("COPILOT_GITHUB_TOKEN", GH, 1);
    notes();
    server s = start("");
    mnemo *m = test_open("ws", "db.sqlite", s.base, s.xurl, NULL);
    test_sync(m);
    char *j = test_search_json(m, "apple pie", 5);
    ASSERT_CONTAINS(j, "\"mode\":\"keyword\"");
    ASSERT_CONTAINS(j, "memory/b.md");
    free(j);
    mnemo_close(m);
    ASSERT_EQ(logged(&s, "\"path\""), 0);
    ASSERT_EQ(cache_files(NULL, 0), 0);
    stop(&s);
    /* Explicit, with the server gone: the sync fails and says so. */
    char *msg = sync_fails(&s, NULL, NULL);
    ASSERT_CONTAINS(msg, "github-copilot: cannot reach http://127.0.0.1:");
    free(msg);
}

/* mnemo doctor --json ARG (e.g. --no-probe) on the test workspace with
 * the settings A, B and C (NULL: none); returns its output (to free). */
static char *doctor(const char *arg, const char *a, const char *b, const char *c)
{
    char *out = NULL, *err = NULL;
    test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db", test_path("doctor.sqlite"),
             "--set", a ? a : "maxResults=6", "--set", b ? b : "maxResults=6", "--set",
             c ? c : "maxResults=6", "doctor", "--json", arg, NULL);
    ASSERT(out != NULL);
    ASSERT_NOT_CONTAINS(err, GH);
    free(err);
    return out;
}

#define CREDS "\"name\":\"credentials\",\"status\":"

/* doctor's credentials line, found without a request: what is missing and
 * the fix, an API key's variable, an AWS profile, Copilot's GitHub token
 * and cached token; never a secret. --no-probe sends no test query. */
TEST(copilot_doctor_credentials)
{
    clean_env();
    notes();
    char *out = doctor("--no-probe", "provider=openai", NULL, NULL);
    ASSERT_CONTAINS(out, CREDS "\"fail\",\"detail\":\"no API key (OPENAI_API_KEY unset)\","
                         "\"fix\":\"export OPENAI_API_KEY=...");
    free(out);
    setenv("OPENAI_API_KEY", "sk-doctor-SECRET-0123456789", 1);
    out = doctor("--no-probe", "provider=openai", NULL, NULL);
    ASSERT_CONTAINS(out, CREDS "\"ok\",\"detail\":\"API key from OPENAI_API_KEY\"");
    ASSERT_CONTAINS(out, "(not probed: --no-probe)");
    ASSERT_NOT_CONTAINS(out, "SECRET");
    free(out);
    unsetenv("OPENAI_API_KEY");
    /* Bedrock: nothing, then a profile in the shared credentials file. */
    setenv("AWS_SHARED_CREDENTIALS_FILE", test_path("aws/credentials"), 1);
    setenv("AWS_CONFIG_FILE", test_path("aws/config"), 1);
    out = doctor("--no-probe", "provider=bedrock", NULL, NULL);
    ASSERT_CONTAINS(out, CREDS "\"fail\",\"detail\":\"bedrock: no AWS credentials");
    ASSERT_CONTAINS(out, "\"fix\":\"set AWS_BEARER_TOKEN_BEDROCK, or AWS_ACCESS_KEY_ID");
    free(out);
    test_write("aws/credentials", "[work]\naws_access_key_id = AKIDDOCTOR00000000\n"
                                  "aws_secret_access_key = doctor-SECRET-aws-0000000000\n");
    setenv("AWS_PROFILE", "work", 1);
    out = doctor("--no-probe", "provider=bedrock", NULL, NULL);
    ASSERT_CONTAINS(out, CREDS "\"ok\",\"detail\":\"AWS keys from profile 'work' in ");
    ASSERT_NOT_CONTAINS(out, "SECRET");
    ASSERT_NOT_CONTAINS(out, "AKIDDOCTOR");
    free(out);
    unsetenv("AWS_PROFILE");
    /* Copilot: no GitHub token; then one, and no cached Copilot token. */
    server s = start("");
    out = doctor("--no-probe", "provider=github-copilot", s.base, s.xurl);
    ASSERT_CONTAINS(out, CREDS "\"fail\",\"detail\":\"no GitHub token (COPILOT_GITHUB_TOKEN, "
                         "GH_TOKEN or GITHUB_TOKEN unset)\"");
    ASSERT_CONTAINS(out, "export GH_TOKEN=$(gh auth token)");
    free(out);
    ASSERT_EQ(logged(&s, "\"path\""), 0);
    setenv("GH_TOKEN", GH, 1);
    out = doctor("--no-probe", "provider=github-copilot", s.base, s.xurl);
    ASSERT_CONTAINS(out, CREDS "\"ok\",\"detail\":\"GitHub token from GH_TOKEN; no cached "
                         "Copilot token: the next request exchanges it at http://127.0.0.1:");
    free(out);
    /* Opening the provider exchanged it (no test query): now it is cached. */
    ASSERT_EQ(logged(&s, EXCHANGED), 1);
    ASSERT_EQ(logged(&s, EMBEDDED), 0);
    int before = logged(&s, "\"path\"");
    out = doctor("--no-probe", "provider=github-copilot", s.base, s.xurl);
    ASSERT_CONTAINS(out, CREDS "\"ok\",\"detail\":\"GitHub token from GH_TOKEN; cached "
                         "Copilot token valid until 20");
    char *tok = cached_token();
    ASSERT_NOT_CONTAINS(out, tok);
    ASSERT_NOT_CONTAINS(out, GH);
    free(out);
    ASSERT_EQ(logged(&s, "\"path\""), before); /* no request at all */
    /* Without --no-probe: one test query. */
    out = doctor("--json", "provider=github-copilot", s.base, s.xurl);
    ASSERT_CONTAINS(out, "answers a test query");
    ASSERT_NOT_CONTAINS(out, tok);
    free(out);
    ASSERT_EQ(logged(&s, EMBEDDED), 1);
    free(tok);
    stop(&s);
}
