/*
 * cmd_ui.c - `mnemo ui`: the memory browser (docs/ui.md). Reuses the
 * daemon that answers GET /health on the address, or starts `mnemo serve`
 * there in the background; then opens the page in the browser ($BROWSER,
 * else xdg-open) and prints its URL, which is all it can do without one.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* Whether a mnemo daemon answers at URL. */
static int answers(const char *url)
{
    char body[4096], why[256];
    return cli_health(url, body, sizeof body, why, sizeof why) == 0 &&
           strstr(body, "\"service\":\"mnemo\"") != NULL;
}

/* Whether PROG is an executable on $PATH (or a path). */
static int on_path(const char *prog)
{
    if (strchr(prog, '/'))
        return access(prog, X_OK) == 0;
    const char *path = getenv("PATH");
    char dir[4096];
    while (path && *path) {
        size_t n = strcspn(path, ":");
        if (n && n < sizeof dir - strlen(prog) - 2) {
            snprintf(dir, sizeof dir, "%.*s/%s", (int)n, path, prog);
            if (access(dir, X_OK) == 0)
                return 1;
        }
        path += n + (path[n] == ':');
    }
    return 0;
}

/* Starts `mnemo [global options] serve --listen ADDR` in its own session,
 * its output into LOG. */
static pid_t start_daemon(const cli_args *a, const char *addr, const char *log)
{
    char *argv[160];
    int n = 0;
    static char self[4096];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    self[k > 0 ? k : 0] = 0;
    argv[n++] = k > 0 ? self : "mnemo";
    if (a->config) {
        argv[n++] = "--config";
        argv[n++] = (char *)a->config;
    }
    if (a->workspace) {
        argv[n++] = "--workspace";
        argv[n++] = (char *)a->workspace;
    }
    if (a->db) {
        argv[n++] = "--db";
        argv[n++] = (char *)a->db;
    }
    if (a->store) {
        argv[n++] = "--store";
        argv[n++] = (char *)a->store;
    }
    for (int i = 0; i < a->nsets && n < 150; i++) {
        argv[n++] = "--set";
        argv[n++] = (char *)a->sets[i];
    }
    argv[n++] = "serve";
    argv[n++] = "--listen";
    argv[n++] = (char *)addr;
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        int fi = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int fo = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fi >= 0)
            dup2(fi, 0);
        if (fo >= 0) {
            dup2(fo, 1);
            dup2(fo, 2);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

/* Opens URL with $BROWSER or xdg-open, in the background. 0 when one was
 * started. */
static int open_browser(const char *url)
{
    const char *b = getenv("BROWSER");
    const char *prog = b && *b ? b : "xdg-open";
    if (!on_path(prog))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (fd >= 0) {
            dup2(fd, 0);
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execlp(prog, prog, url, (char *)NULL);
        _exit(127);
    }
    if (pid < 0)
        return -1;
    /* a browser that fails at once (no display) says so by its exit */
    for (int i = 0; i < 20; i++) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
        usleep(50000);
    }
    return 0;
}

int cmd_ui(int argc, char **argv)
{
    enum { O_LISTEN, O_NO_OPEN };
    static const cli_opt opts[] = {
        [O_LISTEN] = {"listen", 'l', "ADDR", "host:port of the daemon (default 127.0.0.1:7373)"},
        [O_NO_OPEN] = {"no-open", 0, NULL, "print the URL, do not open a browser"},
        {NULL, 0, NULL, NULL},
    };
    cli_args a;
    int code = cli_parse(argc, argv, "ui",
                         "mnemo [--workspace DIR] ui [--listen HOST:PORT] [--no-open]", opts, &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    const char *addr = a.val[O_LISTEN] ? a.val[O_LISTEN] : "127.0.0.1:7373";
    if (!*addr || strchr(addr, '/') || !strchr(addr, ':')) {
        cli_error("ui: --listen %s: give HOST:PORT", addr);
        return EXIT_USAGE;
    }
    char url[512];
    snprintf(url, sizeof url, "http://%s/", addr);
    if (answers(url)) {
        fprintf(stderr, "mnemo ui: reusing the daemon that answers at %s\n", url);
    } else {
        char log[512];
        const char *tmp = getenv("TMPDIR");
        snprintf(log, sizeof log, "%s/mnemo-ui-%u.log", tmp && *tmp ? tmp : "/tmp",
                 (unsigned)getuid());
        pid_t pid = start_daemon(&a, addr, log);
        if (pid < 0) {
            cli_error("ui: cannot start the daemon: %s", strerror(errno));
            return EXIT_ERROR;
        }
        int up = 0;
        for (int i = 0; i < 300 && !up; i++) { /* up to 30 s: the first sync indexes */
            int st;
            if (waitpid(pid, &st, WNOHANG) == pid) {
                cli_error("ui: mnemo serve exited (%d); its output is in %s",
                          WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), log);
                return EXIT_ERROR;
            }
            up = answers(url);
            if (!up)
                usleep(100000);
        }
        if (!up) {
            cli_error("ui: the daemon (pid %d) does not answer at %s; its output is in %s",
                      (int)pid, url, log);
            return EXIT_ERROR;
        }
        fprintf(stderr, "mnemo ui: started the daemon (pid %d) at %s; stop it with kill %d\n",
                (int)pid, url, (int)pid);
    }
    printf("%s\n", url);
    fflush(stdout);
    if (a.val[O_NO_OPEN])
        return EXIT_OK;
    if (open_browser(url) != 0)
        fprintf(stderr, "mnemo ui: no browser could be opened (set $BROWSER); open %s\n", url);
    return EXIT_OK;
}
