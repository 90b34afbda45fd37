/*
 * test_pull.c - `mnemo model pull` against tests/models/hub_server.py, a
 * hub on a loopback port that answers as the Hugging Face hub does
 * (metadata with sizes and checksums, resolve URLs redirecting to a CDN,
 * ranges): a download checked and imported, one cut short and resumed,
 * a wrong checksum refused, a missing repository or revision explained.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

static pid_t hub_pid;
static char hub_url[64];

/* Starts the hub over test_path("hub") with EXTRA options (or NULL). */
static void start_hub(const char *opt, const char *arg)
{
    char script[1024], root[1024], port[1024], log[1024];
    snprintf(script, sizeof script, "%s/tests/models/hub_server.py", test_src_dir());
    snprintf(root, sizeof root, "%s", test_path("hub"));
    snprintf(port, sizeof port, "%s", test_path("hub.port"));
    snprintf(log, sizeof log, "%s", test_path("hub.log"));
    hub_pid = fork();
    ASSERT(hub_pid >= 0);
    if (hub_pid == 0) {
        if (opt)
            execlp("python3", "python3", script, root, port, log, opt, arg, (char *)NULL);
        else
            execlp("python3", "python3", script, root, port, log, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        char *p = test_read(port, NULL);
        if (p) {
            snprintf(hub_url, sizeof hub_url, "http://127.0.0.1:%d", atoi(p));
            free(p);
            setenv("HF_ENDPOINT", hub_url, 1);
            return;
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    test_fail(__FILE__, __LINE__, "hub_server.py did not start");
}

static void stop_hub(void)
{
    kill(hub_pid, SIGTERM);
    waitpid(hub_pid, NULL, 0);
    unlink(test_path("hub.port"));
}

static void make_repo(void)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/models/bert_ref.py' make '%s' >/dev/null",
             test_src_dir(), test_path("hub/acme/tiny-bert"));
    ASSERT_EQ(system(cmd), 0);
}

static const char *models_set(void)
{
    static char s[1100];
    snprintf(s, sizeof s, "modelsDir=%s", test_path("models"));
    return s;
}

static int exists(const char *rel)
{
    struct stat sb;
    return stat(test_path(rel), &sb) == 0;
}

TEST(pull_downloads_checks_and_imports_a_model)
{
    make_repo();
    start_hub(NULL, NULL);
    setenv("HF_TOKEN", "hf_secret_token_1234", 1);
    char *o = NULL, *e = NULL;
    int rc = test_cli(&o, &e, NULL, "--set", models_set(), "model", "pull", "acme/tiny-bert",
                      "--json", NULL);
    if (rc != 0)
        test_fail(__FILE__, __LINE__, "pull failed (%d): %s", rc, e ? e : "");
    ASSERT_CONTAINS(o, "\"name\":\"tiny-bert\"");
    ASSERT_CONTAINS(o, "\"provider\":\"local\"");
    ASSERT_CONTAINS(o, "\"dims\":32");
    ASSERT_CONTAINS(o, "\"commit\":\"");
    ASSERT_NOT_CONTAINS(o, "hf_secret");
    ASSERT_NOT_CONTAINS(e, "hf_secret");
    free(o);
    free(e);
    /* The folder and its prepared file; the staging folder gone. */
    ASSERT(exists("models/tiny-bert/mnemo-encoder.bin"));
    ASSERT(exists("models/tiny-bert/1_Pooling/config.json"));
    ASSERT(!exists("models/.pull-tiny-bert"));
    /* What the hub saw: the metadata, a resolve that redirected to the
     * CDN, the token on each request. */
    char *log = test_read(test_path("hub.log"), NULL);
    ASSERT_CONTAINS(log, "/api/models/acme/tiny-bert/revision/main?blobs=true");
    ASSERT_CONTAINS(log, "/resolve/");
    ASSERT_CONTAINS(log, "/cdn/acme/tiny-bert/model.safetensors - auth");
    ASSERT_NOT_CONTAINS(log, " - -\n");
    free(log);
    /* The pulled model embeds as the folder it came from. */
    char src[1100], *v1 = NULL, *v2 = NULL;
    snprintf(src, sizeof src, "model=%s", test_path("hub/acme/tiny-bert"));
    ASSERT_EQ(test_cli(&v1, NULL, NULL, "--set", models_set(), "--set", "provider=local", "--set",
                       "model=tiny-bert", "embed", "--query", "tea over coffee", NULL),
              0);
    ASSERT_EQ(test_cli(&v2, NULL, NULL, "--set", "provider=local", "--set", src, "embed",
                       "--query", "tea over coffee", NULL),
              0);
    ASSERT_STR_EQ(strstr(v1, "\"vectors\""), strstr(v2, "\"vectors\""));
    free(v1);
    free(v2);
    /* Pulling again under the same name is refused, nothing touched. */
    rc = test_cli(NULL, &e, NULL, "--set", models_set(), "model", "pull", "acme/tiny-bert", NULL);
    ASSERT(rc != 0);
    ASSERT_CONTAINS(e, "exists already");
    free(e);
    stop_hub();
}

TEST(pull_resumes_a_download_cut_short)
{
    make_repo();
    start_hub("--cut", "model.safetensors");
    char *e = NULL;
    int rc = test_cli(NULL, &e, NULL, "--set", models_set(), "model", "pull", "acme/tiny-bert",
                      NULL);
    ASSERT(rc != 0);
    ASSERT_CONTAINS(e, "model.safetensors");
    free(e);
    ASSERT(!exists("models/tiny-bert"));
    struct stat part, whole;
    ASSERT_EQ(stat(test_path("models/.pull-tiny-bert/model.safetensors.part"), &part), 0);
    ASSERT_EQ(stat(test_path("hub/acme/tiny-bert/model.safetensors"), &whole), 0);
    ASSERT(part.st_size > 0 && part.st_size < whole.st_size);
    /* The second run asks for the rest only. */
    char *o = NULL;
    rc = test_cli(&o, &e, NULL, "--set", models_set(), "model", "pull", "acme/tiny-bert", NULL);
    if (rc != 0)
        test_fail(__FILE__, __LINE__, "resume failed (%d): %s", rc, e ? e : "");
    ASSERT_CONTAINS(o, "pulled acme/tiny-bert as 'tiny-bert'");
    free(o);
    free(e);
    char *log = test_read(test_path("hub.log"), NULL), want[128];
    snprintf(want, sizeof want, "/cdn/acme/tiny-bert/model.safetensors bytes=%lld-",
             (long long)part.st_size);
    ASSERT_CONTAINS(log, want);
    free(log);
    ASSERT(exists("models/tiny-bert/model.safetensors"));
    ASSERT(!exists("models/.pull-tiny-bert"));
    stop_hub();
}

TEST(pull_refuses_a_wrong_checksum)
{
    make_repo();
    start_hub("--bad-sha", "model.safetensors");
    char *e = NULL;
    int rc = test_cli(NULL, &e, NULL, "--set", models_set(), "model", "pull", "acme/tiny-bert",
                      NULL);
    ASSERT(rc != 0);
    ASSERT_CONTAINS(e, "model.safetensors: checksum mismatch (SHA-256");
    free(e);
    ASSERT(!exists("models/tiny-bert"));
    ASSERT(!exists("models/.pull-tiny-bert/model.safetensors.part"));
    ASSERT(!exists("models/.pull-tiny-bert/model.safetensors"));
    stop_hub();
}

TEST(pull_explains_what_the_hub_lacks)
{
    make_repo();
    test_write("hub/acme/onnx-only/config.json", "{\"model_type\": \"bert\"}");
    test_write("hub/acme/onnx-only/model.onnx", "onnx");
    test_write("hub/acme/onnx-only/tokenizer.json", "{}");
    start_hub(NULL, NULL);
    unsetenv("HF_TOKEN");
    char *e = NULL;
    ASSERT(test_cli(NULL, &e, NULL, "--set", models_set(), "model", "pull", "acme/nope", NULL) !=
           0);
    ASSERT_CONTAINS(e, "acme/nope: not found on the hub (404: Repository not found)");
    ASSERT_CONTAINS(e, "HF_TOKEN");
    free(e);
    ASSERT(test_cli(NULL, &e, NULL, "--set", models_set(), "model", "pull", "acme/tiny-bert",
                    "--revision", "v9", NULL) != 0);
    ASSERT_CONTAINS(e, "Invalid rev id: v9");
    free(e);
    ASSERT(test_cli(NULL, &e, NULL, "--set", models_set(), "model", "pull", "acme/onnx-only",
                    NULL) != 0);
    ASSERT_CONTAINS(e, "has no model.safetensors");
    free(e);
    ASSERT(test_cli(NULL, &e, NULL, "--set", models_set(), "model", "pull", "../etc", NULL) != 0);
    ASSERT_CONTAINS(e, "is not a repository name");
    free(e);
    /* A hub that is not there. */
    stop_hub();
    ASSERT(test_cli(NULL, &e, NULL, "--set", models_set(), "model", "pull", "acme/tiny-bert",
                    NULL) != 0);
    ASSERT_CONTAINS(e, "127.0.0.1");
    free(e);
}
