/*
 * latency.c - runs a command many times as fresh processes and reports
 * wall-clock latency percentiles and peak memory (max RSS).
 *
 *   latency [-n RUNS] [-w WARMUP] [-q QUERIES] -- CMD ARG...
 *
 * With -q, each run substitutes the next line of QUERIES for the argument
 * "{}". Output goes to /dev/null; a non-zero exit fails the benchmark.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int runs = 100, warmup = 3, i = 1;
    const char *qfile = NULL;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-w") && i + 1 < argc)
            warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-q") && i + 1 < argc)
            qfile = argv[++i];
    }
    if (i >= argc - 1) {
        fprintf(stderr, "usage: latency [-n RUNS] [-w WARMUP] [-q QUERIES] -- CMD ARG...\n");
        return 2;
    }
    char **cmd = argv + i + 1;
    int ncmd = argc - i - 1;
    char *queries[4096];
    int nq = 0;
    if (qfile) {
        FILE *f = fopen(qfile, "r");
        char line[1024];
        while (f && nq < 4096 && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            if (*line)
                queries[nq++] = strdup(line);
        }
        if (f)
            fclose(f);
        if (!nq) {
            fprintf(stderr, "latency: no queries in %s\n", qfile);
            return 2;
        }
    }
    double *t = calloc((size_t)runs, sizeof *t);
    long max_rss = 0;
    char **args = calloc((size_t)ncmd + 1, sizeof *args);
    for (int r = -warmup; r < runs; r++) {
        for (int k = 0; k < ncmd; k++)
            args[k] = (nq && !strcmp(cmd[k], "{}")) ? queries[(r + warmup) % nq] : cmd[k];
        double t0 = now();
        pid_t pid = fork();
        if (pid == 0) {
            int fd = open("/dev/null", O_WRONLY);
            dup2(fd, 1);
            execvp(args[0], args);
            _exit(127);
        }
        int status;
        struct rusage ru;
        wait4(pid, &status, 0, &ru);
        double dt = now() - t0;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "latency: run failed (status %d)\n", status);
            return 1;
        }
        if (r >= 0) {
            t[r] = dt;
            if (ru.ru_maxrss > max_rss)
                max_rss = ru.ru_maxrss;
        }
    }
    qsort(t, (size_t)runs, sizeof *t, cmp);
    double sum = 0;
    for (int r = 0; r < runs; r++)
        sum += t[r];
    printf("runs %d  mean %.2f ms  p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  max %.2f ms  "
           "peak RSS %.1f MB\n",
           runs, sum / runs * 1000, t[runs / 2] * 1000, t[runs * 9 / 10] * 1000,
           t[(runs * 99) / 100 < runs ? (runs * 99) / 100 : runs - 1] * 1000, t[runs - 1] * 1000,
           (double)max_rss / 1024.0);
    return 0;
}
