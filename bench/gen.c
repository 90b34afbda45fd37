/*
 * gen.c - synthetic agent workspaces for benchmarks.
 *
 *   gen DIR NOTES [SEED]
 *
 * Writes DIR/MEMORY.md (curated entries, some annotated), DIR/USER.md, and
 * NOTES dated notes under DIR/memory/YYYY/ (one or more a day, going back
 * from 2026-11-29), with headings, bullets, paragraphs, identifiers and, in
 * about one note in twenty, Chinese or Japanese text. Words follow a Zipf
 * distribution over a vocabulary of common English and technical words plus
 * a long tail of generated words. Also writes DIR.queries (200 queries, one
 * a line) drawn from the same distribution, and DIR.messages (200 inbound
 * messages for trigger recall, half naming a trigger phrase). Deterministic
 * for a seed.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_TRIG 512
static const char *trig[MAX_TRIG][2];
static int ntrig;

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double unit(void) { return (double)(next() >> 11) / 9007199254740992.0; }
static int pick(int n) { return (int)(next() % (uint64_t)n); }

static const char *const common[] = {
    "the", "of", "and", "to", "a", "in", "for", "is", "on", "that", "with", "we", "it", "this",
    "was", "be", "at", "from", "by", "not", "but", "have", "are", "after", "before", "need",
    "should", "will", "can", "more", "about", "when", "today", "tomorrow", "again", "still",
    "deploy", "release", "server", "database", "migration", "gateway", "service", "cluster",
    "config", "test", "flaky", "build", "pipeline", "error", "timeout", "latency", "cache",
    "queue", "worker", "index", "query", "schema", "backup", "restore", "alert", "incident",
    "postmortem", "rollback", "canary", "traffic", "memory", "disk", "network", "certificate",
    "token", "secret", "user", "customer", "team", "meeting", "review", "design", "decision",
    "plan", "roadmap", "priority", "bug", "fix", "patch", "upgrade", "version", "dependency",
    "library", "module", "function", "endpoint", "request", "response", "retry", "limit",
    "quota", "region", "replica", "primary", "failover", "monitoring", "dashboard", "metric",
    "log", "trace", "debug", "profile", "benchmark", "performance", "regression", "cost",
    "budget", "contract", "invoice", "travel", "flight", "hotel", "dinner", "call", "email",
    "document", "note", "summary", "question", "answer", "idea", "experiment", "result",
    "prefers", "likes", "dislikes", "always", "never", "usually", "morning", "evening", "week",
    "month", "quarter", "deadline", "launch", "feature", "flag", "rollout", "staging",
    "production", "kubernetes", "postgres", "redis", "kafka", "nginx", "terraform", "docker",
    "python", "golang", "rust", "typescript", "react", "compiler", "parser", "tokenizer",
    "search", "ranking", "embedding", "vector", "model", "prompt", "agent", "context", "window",
    "session", "transcript", "summary", "report", "slides", "invoice", "vendor", "security",
    "audit", "compliance", "privacy", "encryption", "password", "rotation", "onboarding",
    "hiring", "interview", "feedback", "promotion", "vacation", "holiday", "birthday",
    "project", "milestone", "sprint", "standup", "retro", "ticket", "issue", "branch", "merge",
    "conflict", "commit", "tag", "artifact", "registry", "image", "container", "pod", "node",
    "scheduler", "cron", "job", "batch", "stream", "event", "webhook", "api", "client", "sdk"};

static const char *const people[] = {"Priya", "Jonas", "Chris", "Mei", "Alex", "Sam", "Yuki",
                                     "Omar", "Lena", "Wang"};

static const char *const cjk_lines[] = {
    "和上海团队开会，讨论数据库迁移和服务器部署。",
    "下周完成迁移演练，王强负责监控和告警。",
    "客户要求在月底之前上线新的搜索功能。",
    "東京で顧客と打ち合わせ。デプロイの手順を説明した。",
    "サーバーの移行は来月に予定している。",
    "新しいキャッシュの設計について田中さんと相談した。",
};

#define TAIL 20000
static char tail[TAIL][12];
static double cdf[sizeof common / sizeof *common + TAIL];
static int nvocab;

static const char *word(int i)
{
    int nc = (int)(sizeof common / sizeof *common);
    return i < nc ? common[i] : tail[i - nc];
}

static void build_vocab(void)
{
    static const char *const syl[] = {"ka", "ro", "mi", "ten", "sul", "ba", "dor", "vi", "ne",
                                      "qua", "lis", "mon", "tra", "zu", "pel", "gor", "fi", "an"};
    int ns = (int)(sizeof syl / sizeof *syl);
    for (int i = 0; i < TAIL; i++) {
        char *w = tail[i];
        w[0] = 0;
        int n = 2 + pick(2);
        for (int k = 0; k < n; k++)
            strcat(w, syl[pick(ns)]);
    }
    nvocab = (int)(sizeof common / sizeof *common) + TAIL;
    double sum = 0;
    for (int i = 0; i < nvocab; i++)
        sum += 1.0 / pow(i + 1.0, 1.0);
    double acc = 0;
    for (int i = 0; i < nvocab; i++) {
        acc += 1.0 / pow(i + 1.0, 1.0) / sum;
        cdf[i] = acc;
    }
}

static int zipf(void)
{
    double u = unit();
    int lo = 0, hi = nvocab - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void identifier(FILE *f)
{
    switch (pick(7)) {
    case 0: fprintf(f, "`%s_%s_%s`", word(36 + pick(150)), word(36 + pick(150)), word(zipf())); break;
    case 1: fprintf(f, "`%s.%s.%s`", word(36 + pick(150)), word(36 + pick(150)), word(36 + pick(150))); break;
    case 2: fprintf(f, "acme/%s", word(36 + pick(150))); break;
    case 3: fprintf(f, "#%d", 100 + pick(900)); break;
    case 4: fprintf(f, "v%d.%d.%d", pick(4), pick(20), pick(10)); break;
    case 5: fprintf(f, "E%04d", pick(9999)); break;
    default: fprintf(f, "%s-%02d.internal", word(36 + pick(150)), pick(40)); break;
    }
}

static void sentence(FILE *f, int words)
{
    for (int i = 0; i < words; i++) {
        if (i)
            fputc(' ', f);
        if (pick(40) == 0)
            identifier(f);
        else if (pick(60) == 0)
            fputs(people[pick(10)], f);
        else
            fputs(word(zipf()), f);
    }
    fputs(".", f);
}

static void note(FILE *f, const char *date)
{
    fprintf(f, "# %s\n\n", date);
    int sections = 1 + pick(4);
    for (int s = 0; s < sections; s++) {
        fprintf(f, "## %s %s\n\n", word(36 + pick(200)), word(zipf()));
        int items = 2 + pick(6);
        for (int i = 0; i < items; i++) {
            if (pick(2)) {
                fputs("- ", f);
                sentence(f, 6 + pick(14));
                fputc('\n', f);
            } else {
                sentence(f, 10 + pick(20));
                fputc(' ', f);
                sentence(f, 8 + pick(16));
                fputs("\n\n", f);
            }
        }
        fputc('\n', f);
    }
    if (pick(20) == 0)
        for (int i = 0; i < 2 + pick(4); i++)
            fprintf(f, "%s\n", cjk_lines[pick(6)]);
}

static void mkdirs(const char *p)
{
    char b[4096];
    snprintf(b, sizeof b, "%s", p);
    for (char *s = b + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(b, 0755);
            *s = '/';
        }
    mkdir(b, 0755);
}

static void date_of(int days_back, char *out)
{
    /* Civil date for 2026-11-29 minus DAYS_BACK (days_from_civil inverse). */
    long z = 20421 - days_back + 719468; /* 20421 = days from 1970-01-01 to 2026-11-29 */
    long era = (z >= 0 ? z : z - 146096) / 146097;
    long doe = z - era * 146097;
    long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long y = yoe + era * 400;
    long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long mp = (5 * doy + 2) / 153;
    long d = doy - (153 * mp + 2) / 5 + 1;
    long m = mp < 10 ? mp + 3 : mp - 9;
    y += m <= 2;
    snprintf(out, 32, "%04ld-%02ld-%02ld", y % 10000, m, d);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: gen DIR NOTES [SEED]\n");
        return 2;
    }
    const char *dir = argv[1];
    if (strlen(dir) > 1000) {
        fprintf(stderr, "gen: path too long\n");
        return 2;
    }
    int n = atoi(argv[2]);
    if (argc > 3)
        rng ^= (uint64_t)strtoull(argv[3], NULL, 10) * 0x9e3779b97f4a7c15ull;
    build_vocab();
    char path[4096];
    snprintf(path, sizeof path, "%s/memory", dir);
    mkdirs(path);

    snprintf(path, sizeof path, "%s/MEMORY.md", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "gen: %s: %s\n", path, strerror(errno));
        return 1;
    }
    fputs("# Memory\n\n", f);
    int entries = n / 20 < 50 ? 50 : n / 20 > 2000 ? 2000 : n / 20;
    for (int i = 0; i < entries; i++) {
        if (i % 25 == 0)
            fprintf(f, "\n## %s\n\n", word(36 + pick(150)));
        fputs("- ", f);
        sentence(f, 8 + pick(20));
        if (pick(5) == 0)
            fprintf(f, " <!-- importance: %d -->", 1 + pick(10));
        if (pick(8) == 0) {
            const char *a = word(36 + pick(150)), *b = word(36 + pick(150));
            fprintf(f, " <!-- trigger: %s %s, %s -->", a, b, word(36 + pick(150)));
            if (ntrig < MAX_TRIG) {
                trig[ntrig][0] = a;
                trig[ntrig++][1] = b;
            }
        }
        fputc('\n', f);
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/USER.md", dir);
    f = fopen(path, "w");
    fputs("# User\n\n- Chris, platform engineer in Berlin.\n- Prefers dark mode.\n"
          "- Never deploy on Fridays.\n",
          f);
    fclose(f);

    int per_day = n / 1000 > 1 ? n / 1000 : 1;
    long bytes = 0;
    for (int i = 0; i < n; i++) {
        char date[32];
        date_of(i / per_day, date);
        int k = i % per_day;
        char sub[2048];
        snprintf(sub, sizeof sub, "%s/memory/%.4s", dir, date);
        if (k == 0)
            mkdirs(sub);
        if (k == 0)
            snprintf(path, sizeof path, "%s/%s.md", sub, date);
        else
            snprintf(path, sizeof path, "%s/%s-%s-%d.md", sub, date, word(36 + pick(150)), k);
        f = fopen(path, "w");
        if (!f) {
            fprintf(stderr, "gen: %s: %s\n", path, strerror(errno));
            return 1;
        }
        note(f, date);
        bytes += ftell(f);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s.queries", dir);
    f = fopen(path, "w");
    for (int q = 0; q < 200; q++) {
        int words = 2 + pick(5);
        for (int i = 0; i < words; i++) {
            if (i)
                fputc(' ', f);
            if (q % 20 == 0 && i == 0)
                fputs(cjk_lines[pick(6)], f);
            else if (q % 10 == 1 && i == 0)
                identifier(f);
            else
                fputs(word(20 + pick(400) + (pick(3) == 0 ? pick(3000) : 0)), f);
        }
        fputc('\n', f);
    }
    fclose(f);
    /* Inbound messages for trigger recall: half carry a trigger phrase,
     * words swapped, behind a channel tag; half are ordinary chatter. */
    snprintf(path, sizeof path, "%s.messages", dir);
    f = fopen(path, "w");
    for (int q = 0; q < 200; q++) {
        if (q % 2 == 0 && ntrig) {
            int t = pick(ntrig);
            fprintf(f, "[Telegram Chris +1m 2026-11-29 12:00 UTC] quick question about %s %s "
                       "before the meeting?\n",
                    trig[t][1], trig[t][0]);
        } else {
            fprintf(f, "what do you think about %s and %s today\n",
                    word(20 + pick(400) + pick(3000)), word(20 + pick(400) + pick(3000)));
        }
    }
    fclose(f);
    printf("%d notes, %d curated entries, %.1f MB of Markdown in %s\n", n, entries,
           (double)bytes / 1e6, dir);
    return 0;
}
