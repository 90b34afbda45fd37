#include "test.h"
/*
 * test_python.c - the Python package (python/), end to end: a fresh virtual
 * environment, the package built from the checkout by pip (its extension
 * links the library built from src/ by the Makefile), then its pytest suite
 * (python/tests: searches and memory calls compared with this mnemo's
 * --json, bad input, threads, leaks, the GIL). The wheels pip installs
 * (setuptools, wheel, pytest) come from tests/python/setup.sh's cache,
 * MNEMO_TEST_JS_CACHE (default ~/.cache/mnemo-test of the real home, since
 * tests run with HOME in their own folder), so no test downloads anything.
 * A Debian PostgreSQL server started here (tests/pg_server.h) is given to
 * python/tests/test_postgres.py as MNEMO_TEST_PG_URL.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pg_server.h"


/* Runs a shell command with stdout and stderr into test_path(OUT); returns its
 * exit code. */
static int run_sh(const char *cmd, const char *out)
{
    char full[8192];
    snprintf(full, sizeof full, "(%s) >'%s' 2>&1", cmd, test_path(out));
    int st = system(full);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Runs CMD and fails the test with its output (the last 6,000 characters)
 * unless it exits 0; returns the output (caller frees). */
static char *must_run(const char *what, const char *cmd, const char *out)
{
    int rc = run_sh(cmd, out);
    char *text = test_read(test_path(out), NULL);
    if (rc != 0) {
        size_t n = text ? strlen(text) : 0;
        test_fail(__FILE__, __LINE__, "%s exited %d:\n%s", what, rc,
                  text ? text + (n > 6000 ? n - 6000 : 0) : "");
    }
    return text;
}

/* Makes a virtual environment, test_path("venv"), with the build tools and
 * pytest. */
static void make_venv(void)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "MNEMO_JS_CACHE='%s' sh '%s/tests/python/setup.sh'", test_js_cache(),
             test_src_dir());
    free(must_run("tests/python/setup.sh", cmd, "setup.out"));
    char pyfile[1200];
    snprintf(pyfile, sizeof pyfile, "%s/python/python", test_js_cache());
    char *py = test_read(pyfile, NULL);
    ASSERT(py != NULL);
    py[strcspn(py, "\n")] = 0;
    const char *venv = test_path("venv");
    snprintf(cmd, sizeof cmd, "'%s' -m venv '%s'", py, venv);
    free(must_run("python -m venv", cmd, "venv.out"));
    free(py);
    /* From the cached wheels only; the package builds in the venv itself. */
    snprintf(cmd, sizeof cmd,
             "PIP_DISABLE_PIP_VERSION_CHECK=1 '%s/bin/pip' install -q --no-index --find-links "
             "'%s/python/wheels' -r '%s/tests/python/requirements.txt'",
             venv, test_js_cache(), test_src_dir());
    free(must_run("pip install (build tools, pytest)", cmd, "pip1.out"));
}

/* Installs the package from the checkout into the venv, as a user does. */
static void install_package(void)
{
    char cmd[4096];
    const char *venv = test_path("venv");
    snprintf(cmd, sizeof cmd,
             "PIP_DISABLE_PIP_VERSION_CHECK=1 '%s/bin/pip' install -q --no-index "
             "--no-build-isolation '%s/python'",
             venv, test_src_dir());
    free(must_run("pip install ./python", cmd, "pip2.out"));
}

static void check_sdist(void);

TEST(python_package)
{
    /* the library's build (reused from build/python/ after the first run),
     * two pip installs and the pytest suite: more than the runner's 120 s on a
     * loaded 2-CPU machine the first time */
    alarm(900);
    make_venv();
    install_package();
    char cmd[4096];
    /* Run from the test's folder, so that the package imported is the
     * installed one and not python/mnemo of the checkout. */
    pg_server pg;
    pg_debian_start(&pg);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && MNEMO_BIN='%s' MNEMO_TEST_PG_URL='%s' '%s/bin/python' -m pytest "
             "-p no:cacheprovider -q --basetemp='%s' '%s/python/tests'",
             test_dir(), test_bin(), pg_url(&pg), test_path("venv"), test_path("pytest-tmp"),
             test_src_dir());
    char *out = must_run("pytest python/tests", cmd, "pytest.out");
    pg_stop(&pg);
    ASSERT_CONTAINS(out, " passed");
    ASSERT_NOT_CONTAINS(out, " failed");
    ASSERT_NOT_CONTAINS(out, " error");
    ASSERT_NOT_CONTAINS(out, " skipped");
    free(out);
    /* the installed package is the compiled one, with its type information */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s/bin/python' -c 'import mnemo, os; "
             "d = os.path.dirname(mnemo.__file__); "
             "print(mnemo.version(), mnemo._mnemo.__file__.endswith(\".so\"), "
             "os.path.exists(os.path.join(d, \"py.typed\")), "
             "os.path.exists(os.path.join(d, \"_mnemo.pyi\")))'",
             test_dir(), test_path("venv"));
    out = must_run("import mnemo", cmd, "import.out");
    char want[64];
    snprintf(want, sizeof want, "%s True True True", mnemo_version());
    ASSERT_CONTAINS(out, want);
    free(out);
    check_sdist();
}

/* The source archive holds the library's sources, so that `pip install
 * mnemo-X.tar.gz` builds without the checkout. Called by python_package
 * once pip is done: both write python/mnemo.egg-info of the checkout. */
static void check_sdist(void)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s/python' && '%s/bin/python' -c 'from setuptools import build_meta as b; "
             "print(b.build_sdist(\"%s\"))' && tar tzf '%s'/mnemo-*.tar.gz",
             test_src_dir(), test_path("venv"), test_path("dist"), test_path("dist"));
    char *out = must_run("build_sdist", cmd, "sdist.out");
    ASSERT_CONTAINS(out, "/libmnemo/Makefile");
    ASSERT_CONTAINS(out, "/libmnemo/include/mnemo.h");
    ASSERT_CONTAINS(out, "/libmnemo/src/mnemo.c");
    ASSERT_CONTAINS(out, "/libmnemo/src/store/sqlite/lite.c");
    ASSERT_CONTAINS(out, "/ext/_mnemo.c");
    ASSERT_CONTAINS(out, "/mnemo/__init__.py");
    ASSERT_CONTAINS(out, "/mnemo/py.typed");
    ASSERT_CONTAINS(out, "/tests/test_search.py");
    free(out);
}
