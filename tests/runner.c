/*
 * runner.c - the test runner: each test in a forked child, in its own
 * temporary folder, with a timeout; failures print file:line and both
 * values; a closing "N passed, N failed" line.
 *
 *   tests/run [-v] [-jN] [NAME...]   run all tests, or those whose names
 *                                    start with one of the NAMEs
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define MAX_TESTS 1024
#define TIMEOUT_S 120

typedef struct test {
    const char *name;
    test_fn fn;
} test;

static test tests[MAX_TESTS];
static const char *current = "";
static int ntests;

void test_register(const char *name, test_fn fn)
{
    if (ntests < MAX_TESTS)
        tests[ntests++] = (test){name, fn};
}

void test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "  [%s] %s:%d: ", current, file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    exit(1);
}

void test_setup(const char *name); /* util.c */
void test_teardown(void);

static int cmp_test(const void *a, const void *b)
{
    return strcmp(((const test *)a)->name, ((const test *)b)->name);
}

static int selected(const char *name, int argc, char **argv, int first)
{
    int any = 0;
    for (int i = first; i < argc; i++) {
        if (argv[i][0] == '-')
            continue;
        any = 1;
        if (strncmp(name, argv[i], strlen(argv[i])) == 0)
            return 1;
    }
    return !any;
}

typedef struct running {
    pid_t pid;
    int idx;
    double start;
} running;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    int verbose = 0, jobs = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v"))
            verbose = 1;
        else if (!strncmp(argv[i], "-j", 2))
            jobs = atoi(argv[i] + 2) > 0 ? atoi(argv[i] + 2) : 1;
    }
    if (getenv("MNEMO_TEST_JOBS"))
        jobs = atoi(getenv("MNEMO_TEST_JOBS")) > 0 ? atoi(getenv("MNEMO_TEST_JOBS")) : 1;
    qsort(tests, (size_t)ntests, sizeof *tests, cmp_test);
    setvbuf(stdout, NULL, _IOLBF, 0);

    int passed = 0, failed = 0, next = 0;
    running run[16];
    int nrun = 0;
    const char *failures[MAX_TESTS];
    int nfail = 0;
    for (;;) {
        while (nrun < jobs && next < ntests) {
            int i = next++;
            if (!selected(tests[i].name, argc, argv, 1))
                continue;
            fflush(stdout);
            fflush(stderr);
            pid_t pid = fork();
            if (pid == 0) {
                alarm(TIMEOUT_S);
                current = tests[i].name;
                test_setup(tests[i].name);
                tests[i].fn();
                test_teardown();
                exit(0);
            }
            run[nrun++] = (running){pid, i, now()};
        }
        if (nrun == 0)
            break;
        int status;
        pid_t pid = wait(&status);
        if (pid < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int k = 0; k < nrun; k++) {
            if (run[k].pid != pid)
                continue;
            const char *name = tests[run[k].idx].name;
            double ms = (now() - run[k].start) * 1000;
            if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
                passed++;
                if (verbose)
                    printf("ok   %s (%.0f ms)\n", name, ms);
            } else {
                failed++;
                failures[nfail++] = name;
                if (WIFSIGNALED(status))
                    printf("FAIL %s (signal %d%s)\n", name, WTERMSIG(status),
                           WTERMSIG(status) == SIGALRM ? ": timed out" : "");
                else
                    printf("FAIL %s (exit %d)\n", name, WEXITSTATUS(status));
            }
            run[k] = run[--nrun];
            break;
        }
    }
    if (nfail) {
        printf("\nfailed:");
        for (int i = 0; i < nfail; i++)
            printf(" %s", failures[i]);
        printf("\n");
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
