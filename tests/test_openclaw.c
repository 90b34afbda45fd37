#include "test.h"
/*
 * test_openclaw.c - the OpenClaw integration, end to end: tests/openclaw/e2e.sh
 * runs a real OpenClaw Gateway (npm package openclaw, on Node 24) that loads
 * integrations/openclaw and answers memory_search / memory_get tool calls
 * through mnemo (see tests/openclaw/e2e.mjs for every check). OpenClaw and Node
 * 24 are installed once, outside the repository, by tests/openclaw/setup.sh
 * into MNEMO_TEST_JS_CACHE (default ~/.cache/mnemo-test of the real home, since
 * tests run with HOME in their own folder); CI runs setup.sh before the tests,
 * so this test only finds them there.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>


/* Runs a shell command with stdout and stderr into test_path(OUT); returns its
 * exit code. */
static int run_sh(const char *cmd, const char *out) {
  char full[4096];
  snprintf(full, sizeof full, "%s >'%s' 2>&1", cmd, test_path(out));
  int st = system(full);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

TEST(openclaw_e2e) {
  /* two Gateways and a few openclaw CLI processes (about 10 s each): more than the
   * runner's 120 s default on a loaded 2-CPU machine */
  alarm(420);
  setenv("MNEMO_JS_CACHE", test_js_cache(), 1);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "sh '%s/tests/openclaw/setup.sh'", test_src_dir());
  if (run_sh(cmd, "setup.out") != 0)
    test_fail(__FILE__, __LINE__, "tests/openclaw/setup.sh failed:\n%s",
              test_read(test_path("setup.out"), NULL));
  snprintf(cmd, sizeof cmd, "sh '%s/tests/openclaw/e2e.sh' '%s'",
           test_src_dir(), test_bin());
  int rc = run_sh(cmd, "e2e.out");
  char *out = test_read(test_path("e2e.out"), NULL);
  if (rc != 0)
    test_fail(__FILE__, __LINE__, "tests/openclaw/e2e.sh exited %d:\n%s", rc,
              out ? out : "");
  ASSERT_CONTAINS(out, "openclaw e2e: ok");
  ASSERT_CONTAINS(
      out, "memory_search via /tools/invoke: 200 with OpenClaw's result shape");
  ASSERT_CONTAINS(out, "memory_search through the daemon");
  ASSERT_CONTAINS(out, "openclaw memory status --json: mnemo's files");
  ASSERT_CONTAINS(out, "openclaw status --json --all: \"memory\" is mnemo's state");
  /* OpenClaw's memory search settings reach mnemo */
  ASSERT_CONTAINS(out, "memory.search.extraPaths: memory_search finds the note");
  ASSERT_CONTAINS(out, "the daemon the plugin started indexes memory.search.extraPaths");
  ASSERT_CONTAINS(out, "memory.search provider openai, model, remote.baseUrl");
  ASSERT_CONTAINS(out, "the API key is on no mnemo command line");
  ASSERT_CONTAINS(out, "openclaw memory status (text): the settings passed");
  ASSERT_CONTAINS(out, "a running daemon with another provider than the settings");
  ASSERT_NOT_CONTAINS(out, "FAIL");
  free(out);
}
