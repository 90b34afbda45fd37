/*
 * nudge.c - proper-noun candidates in a prompt (see nudge.h).
 *
 * The built-in detectors scan the prompt by hand rather than with regular
 * expressions: they need Unicode categories (katakana, accented letters
 * next to ASCII), sentence boundaries and stop lists, and they stay linear
 * on a megabyte of text. Every detector reports spans; the spans are then
 * ranked (pattern, position) and taken greedily, skipping duplicates and
 * overlaps, so a CamelCase word inside a repo slug is not reported twice.
 */
#include "nudge.h"

#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "mnemo.h"

enum { K_REPO, K_ISSUE, K_CAMEL, K_CAPS, K_CAPITAL, K_KATAKANA, K_HAN, K_START, K_REGEX };

static const char *const builtin_names[] = {"repo",     "issue", "camel", "caps",
                                            "capital",  "katakana", "han", "start"};
#define NBUILTIN (sizeof builtin_names / sizeof *builtin_names)

#define MAX_PATTERNS 16
#define PER_PATTERN_MAX 256 /* spans kept per pattern: bounds the work on huge prompts */
#define TERM_MAX 200

typedef struct pattern {
    int kind;
    char *name;
    regex_t re;
} pattern;

struct nudge_patterns {
    pattern v[MAX_PATTERNS];
    size_t n;
};

/* ------------------------------------------------------------------------
 * Stop lists
 * ---------------------------------------------------------------------- */

/* ALL-CAPS words too common in prompts to be names. */
static const char *const caps_stop[] = {
    "AND", "ANY", "ALL", "API", "APIS", "ARE", "ASAP", "ASCII", "BUT", "CAN", "CHANGELOG",
    "CLI", "CPU", "CSS", "CSV", "DELETE", "DNS", "DONE", "EOF", "ERROR", "FALSE", "FIXME", "FOR",
    "FROM", "FYI", "GET", "GMT", "GPU", "GUI", "HACK", "HAS", "HEAD", "HOW", "HTML", "HTTP",
    "HTTPS", "IDE", "IMHO", "IMO", "IMPORTANT", "JSON", "LGTM", "LICENSE", "LLM", "MUST", "NEVER",
    "NEW", "NOT", "NOTE", "NOW", "NULL", "ONLY", "PATCH", "PDF", "PLEASE", "POST", "PUT", "RAM",
    "README", "SDK", "SHOULD", "SQL", "SSD", "SSH", "SSL", "STDERR", "STDIN", "STDOUT", "TCP",
    "THE", "THIS", "THAT", "TLDR", "TLS", "TODO", "TOML", "TRUE", "TSV", "UDP", "URI", "URL",
    "URLS", "USB", "UTC", "UTF", "UUID", "WARNING", "WHAT", "WHEN", "WHO", "WHY", "WIP", "WITH",
    "XML", "XXX", "YAML", "YES", "YOU",
};

/* Units and titles that look like CamelCase. */
static const char *const camel_stop[] = {"GHz", "GiB", "KiB", "MHz", "MiB", "PhD", "TiB",
                                         "kHz", "kWh", "mAh"};

/* Capitalised words that are not names even inside a sentence. */
static const char *const capital_stop[] = {
    "Also",    "And",     "April",    "August",   "But",      "Can",     "Claude",    "Could",
    "December", "English", "February", "For",      "Friday",   "Hello",   "Here",      "How",
    "January", "Japanese", "July",    "June",     "March",    "May",     "Monday",    "Not",
    "November", "October", "Okay",    "Please",   "Saturday", "September", "Should",  "Sunday",
    "Thanks",  "That",    "The",      "Then",     "There",    "These",   "This",      "Those",
    "Thursday", "Tuesday", "Wednesday", "What",   "When",     "Where",   "Which",     "Who",
    "Why",     "Will",    "With",     "Would",    "Yes",      "You",     "Your",
};

/* Words that begin a prompt's sentences and are not names there: the
 * "start" pattern leaves them (with capital_stop's). */
static const char *const start_stop[] = {
    "About", "Actually", "Add", "After", "Again", "All", "Always", "Another", "Any", "Anyway",
    "Apply", "Are", "Ask", "Back", "Basically", "Because", "Been", "Before", "Being", "Both",
    "Build", "Bump", "Call", "Change", "Check", "Clean", "Commit", "Compare", "Continue",
    "Convert", "Cool", "Copy", "Create", "Currently", "Debug", "Delete", "Deploy", "Describe",
    "Did", "Disable", "Does", "Doing", "Done", "Draft", "Each", "Edit", "Either", "Enable",
    "Even", "Every", "Explain", "Export", "Find", "Finally", "First", "Fix", "Format", "Get",
    "Give", "Going", "Good", "Great", "Had", "Has", "Have", "Help", "Hey", "Hmm", "However",
    "Implement", "Import", "Improve", "Install", "Instead", "Its", "Just", "Keep", "Last",
    "Later", "Let", "Lets", "List", "Load", "Look", "Looks", "Make", "Maybe", "Merge",
    "Might", "Migrate", "Move", "Much", "Must", "Need", "Never", "Next", "Nice", "None",
    "Note", "Now", "Once", "Only", "Open", "Other", "Our", "Perhaps", "Plan", "Print", "Pull",
    "Push", "Put", "Read", "Really", "Recently", "Refactor", "Release", "Remember", "Remove",
    "Rename", "Replace", "Reply", "Report", "Reset", "Restart", "Restore", "Review", "Revert",
    "Rewrite", "Right", "Run", "Save", "Schedule", "Search", "Second", "See", "Seems", "Send",
    "Set", "Share", "She", "Ship", "Show", "Since", "Skip", "Some", "Sometimes", "Sorry",
    "Sort", "Sounds", "Split", "Start", "Still", "Stop", "Such", "Summarise", "Summarize",
    "Sure", "Switch", "Sync", "Take", "Tell", "Test", "Thank", "Their", "They", "Though",
    "Today", "Tomorrow", "Tonight", "Try", "Turn", "Undo", "Update", "Upgrade", "Use",
    "Usually", "Verify", "Wait", "Want", "Was", "Well", "Were", "While", "Why", "Write",
    "Yesterday", "Yet",
};

/* Chinese surnames that are seldom words of their own: the "han" pattern
 * takes one with the one or two characters after it as a name. */
static const char *const han_surnames[] = {
    "王", "李", "张", "刘", "陈", "杨", "赵", "黄", "周", "吴", "徐", "孙", "胡", "朱",
    "郭", "罗", "梁", "宋", "郑", "谢", "韩", "唐", "冯", "董", "萧", "曹", "袁", "邓",
    "许", "傅", "沈", "曾", "彭", "吕", "苏", "卢", "蒋", "蔡", "贾", "魏", "薛", "叶",
    "潘", "杜", "戴", "夏", "钟", "汪", "姜", "姚", "谭", "廖", "邹", "熊", "陆", "郝",
    "孔", "崔", "邱", "秦", "顾", "侯", "邵", "孟", "雷", "钱", "汤", "尹", "黎", "贺",
    "赖", "龚",
};
/* What follows a name in a sentence: a verb or particle that ends it. */
static const char *const han_after[] = {
    "说", "的", "和", "跟", "与", "是", "在", "负", "要", "让", "把", "给", "问", "找",
    "先", "女", "老", "经", "总", "今", "昨", "明", "已", "也", "都", "会", "能", "想",
    "觉", "回", "发", "提", "对", "还", "就", "又", "从", "去", "来", "做", "写",
};

/* owner/name pairs that are ordinary words, and owners that are folders. */
static const char *const slash_stop[] = {
    "and/or",       "either/or",  "he/she",  "she/he",    "his/her",    "him/her",
    "yes/no",       "on/off",     "true/false", "read/write", "input/output", "tcp/ip",
    "client/server", "pros/cons", "km/h",    "w/o",
};
static const char *const owner_stop[] = {
    "app",  "bin",   "build", "cli",    "config",  "dev",    "dist", "doc",     "docs",
    "etc",  "home",  "include", "lib",  "memory",  "node_modules", "opt", "scripts",
    "src",  "test",  "tests", "tmp",    "usr",     "var",
};
/* Name endings that make owner/name a file path rather than a repository. */
static const char *const path_ext[] = {".md", ".c", ".h", ".py", ".json", ".txt", ".yml",
                                       ".yaml", ".toml", ".sh", ".go", ".rs", ".ts", ".html",
                                       ".css", ".log"};

/* Common katakana loanwords: words, not names. */
static const char *const katakana_stop[] = {
    "ファイル", "データ", "テスト", "コード", "エラー", "ユーザー", "ユーザ", "サーバー",
    "サーバ", "メモリ", "メモリー", "プログラム", "システム", "バージョン", "コマンド",
    "ページ", "リスト", "ツール", "タスク", "メール", "メッセージ", "ログ", "スクリプト",
};

static int in_list(const char *s, size_t n, const char *const *list, size_t count, int fold)
{
    for (size_t i = 0; i < count; i++) {
        if (strlen(list[i]) != n)
            continue;
        if (fold ? strncasecmp(list[i], s, n) == 0 : memcmp(list[i], s, n) == 0)
            return 1;
    }
    return 0;
}
#define IN_LIST(s, n, list, fold) in_list(s, n, list, sizeof list / sizeof *list, fold)

/* ------------------------------------------------------------------------
 * Pattern sets
 * ---------------------------------------------------------------------- */

/* *err = A B C (the message parts), when ERR is not NULL. */
static void set_err(char **err, const char *a, const char *b, const char *c)
{
    if (!err)
        return;
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    *err = malloc(n);
    if (*err)
        snprintf(*err, n, "%s%s%s", a, b, c);
}

static int has_pattern(const nudge_patterns *p, const char *name)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->v[i].name, name) == 0)
            return 1;
    return 0;
}

/* Appends one item (a built-in name or re:EXPR, already unescaped). */
static int add_item(nudge_patterns *p, const char *item, char **err)
{
    if (strncmp(item, "re:", 3) == 0) {
        if (item[3] == 0) {
            set_err(err, "pattern '", item, "': empty expression");
            return MNEMO_INVALID;
        }
        if (has_pattern(p, item))
            return MNEMO_OK;
        if (p->n >= MAX_PATTERNS) {
            set_err(err, "pattern '", item, "': more than 16 patterns");
            return MNEMO_INVALID;
        }
        pattern *t = &p->v[p->n];
        int rc = regcomp(&t->re, item + 3, REG_EXTENDED);
        if (rc) {
            char msg[160];
            regerror(rc, &t->re, msg, sizeof msg);
            regfree(&t->re);
            size_t n = strlen(item) + strlen(msg) + 32;
            if (err && (*err = malloc(n)) != NULL)
                snprintf(*err, n, "pattern '%s': %s", item, msg);
            return MNEMO_INVALID;
        }
        if (!(t->name = strdup(item))) {
            regfree(&t->re);
            return MNEMO_NOMEM;
        }
        t->kind = K_REGEX;
        p->n++;
        return MNEMO_OK;
    }
    if (strcasecmp(item, "default") == 0 || strcasecmp(item, "defaults") == 0) {
        for (size_t k = 0; k < NBUILTIN; k++) {
            int rc = add_item(p, builtin_names[k], err);
            if (rc)
                return rc;
        }
        return MNEMO_OK;
    }
    for (size_t k = 0; k < NBUILTIN; k++) {
        if (strcasecmp(item, builtin_names[k]) != 0)
            continue;
        if (has_pattern(p, builtin_names[k]))
            return MNEMO_OK;
        if (p->n >= MAX_PATTERNS) {
            set_err(err, "pattern '", item, "': more than 16 patterns");
            return MNEMO_INVALID;
        }
        if (!(p->v[p->n].name = strdup(builtin_names[k])))
            return MNEMO_NOMEM;
        p->v[p->n].kind = (int)k;
        p->n++;
        return MNEMO_OK;
    }
    set_err(err, "unknown pattern '", item,
            "' (expected repo, issue, camel, caps, capital, katakana, han, start, default or "
            "re:EXPR)");
    return MNEMO_INVALID;
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int nudge_patterns_parse(const char *spec, nudge_patterns **out, char **err)
{
    *out = NULL;
    if (err)
        *err = NULL;
    const char *s = spec;
    while (s && is_blank(*s))
        s++;
    if (!s || !*s)
        s = NUDGE_DEFAULT_PATTERNS;
    nudge_patterns *p = calloc(1, sizeof *p);
    char *item = malloc(strlen(s) + 1);
    int rc = MNEMO_OK;
    if (!p || !item) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    while (*s) {
        while (is_blank(*s))
            s++;
        size_t n = 0;
        if (strncmp(s, "re:", 3) == 0) {
            /* Everything up to the next unescaped comma, "\," standing for ','. */
            while (*s && *s != ',') {
                if (*s == '\\' && s[1] == ',') {
                    item[n++] = ',';
                    s += 2;
                } else if (*s == '\\' && s[1]) {
                    item[n++] = *s++;
                    item[n++] = *s++;
                } else {
                    item[n++] = *s++;
                }
            }
        } else {
            while (*s && *s != ',')
                item[n++] = *s++;
            while (n && is_blank(item[n - 1]))
                n--;
        }
        item[n] = 0;
        if (*s == ',')
            s++;
        if (n && (rc = add_item(p, item, err)))
            goto done;
    }
    if (p->n == 0) {
        set_err(err, "no patterns in '", spec ? spec : "", "'");
        rc = MNEMO_INVALID;
    }
done:
    free(item);
    if (rc) {
        nudge_patterns_free(p);
        return rc;
    }
    *out = p;
    return MNEMO_OK;
}

void nudge_patterns_free(nudge_patterns *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        if (p->v[i].kind == K_REGEX)
            regfree(&p->v[i].re);
        free(p->v[i].name);
    }
    free(p);
}

size_t nudge_patterns_count(const nudge_patterns *p) { return p ? p->n : 0; }

const char *nudge_patterns_name(const nudge_patterns *p, size_t i)
{
    return p && i < p->n ? p->v[i].name : NULL;
}

/* ------------------------------------------------------------------------
 * Spans
 * ---------------------------------------------------------------------- */

typedef struct span {
    size_t start, end; /* byte range of the term */
    size_t rank;       /* index of the pattern */
} span;

typedef struct spans {
    span *v;
    size_t n, cap;
    size_t per_pattern; /* spans added by the current pattern */
} spans;

/* Adds a span; returns 1 when the current pattern has found enough. */
static int add_span(spans *s, size_t start, size_t end, size_t rank, int *nomem)
{
    if (end <= start)
        return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        span *v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            *nomem = 1;
            return 1;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (span){start, end, rank};
    return ++s->per_pattern >= PER_PATTERN_MAX;
}

static int is_alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
static int is_upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
static int is_lower(unsigned char c) { return c >= 'a' && c <= 'z'; }
static int is_letter(unsigned char c) { return is_upper(c) || is_lower(c); }

/* The code point that ends just before byte I (-1 at the start or on an
 * invalid sequence). */
/* The code point at S (N bytes on): its length, or 1 with *CP = -1 when
 * the bytes there are not valid UTF-8. */
static int decode(const char *s, size_t n, int32_t *cp)
{
    utf8proc_int32_t c;
    utf8proc_ssize_t l = utf8proc_iterate((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &c);
    if (l <= 0) {
        *cp = -1;
        return 1;
    }
    *cp = c;
    return (int)l;
}

static int32_t cp_before(const char *s, size_t i)
{
    if (i == 0)
        return -1;
    size_t j = i - 1;
    while (j > 0 && i - j < 4 && ((unsigned char)s[j] & 0xC0) == 0x80)
        j--;
    int32_t cp;
    int len = decode(s + j, i - j, &cp);
    return (size_t)len == i - j ? cp : -1;
}

static int32_t cp_at(const char *s, size_t len, size_t i)
{
    if (i >= len)
        return -1;
    int32_t cp;
    decode(s + i, len - i, &cp);
    return cp;
}

/* A letter of a script written with spaces (accented Latin, Cyrillic ...):
 * an ASCII run touching one is part of a longer word, not a word itself. */
static int foreign_letter(int32_t cp)
{
    if (cp < 0x80 || mnemo_is_cjk(cp))
        return 0;
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL ||
           c == UTF8PROC_CATEGORY_LT || c == UTF8PROC_CATEGORY_LM ||
           c == UTF8PROC_CATEGORY_LO || c == UTF8PROC_CATEGORY_MN;
}

/* ---- repo slugs: owner/name ---- */

static int owner_char(unsigned char c) { return is_alnum(c) || c == '-'; }
static int name_char(unsigned char c) { return is_alnum(c) || c == '.' || c == '_' || c == '-'; }

static int has_letter(const char *s, size_t a, size_t b)
{
    for (size_t i = a; i < b; i++)
        if (is_letter((unsigned char)s[i]))
            return 1;
    return 0;
}

static int ends_with_ci(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && strncasecmp(s + n - k, suffix, k) == 0;
}

static void find_repos(const char *s, size_t len, size_t rank, spans *out, int *nomem)
{
    for (size_t i = 1; i + 1 < len; i++) {
        if (s[i] != '/')
            continue;
        size_t a = i, b = i + 1;
        while (a > 0 && owner_char((unsigned char)s[a - 1]))
            a--;
        while (a < i && s[a] == '-')
            a++;
        while (b < len && name_char((unsigned char)s[b]))
            b++;
        while (b > i + 1 && (s[b - 1] == '.' || s[b - 1] == '-' || s[b - 1] == '_'))
            b--;
        if (i - a < 2 || b - (i + 1) < 2 || i - a > 39 || b - (i + 1) > 100)
            continue;
        if (!has_letter(s, a, i) || !has_letter(s, i + 1, b))
            continue;
        /* github.com/owner/name is a slug even inside a URL. */
        int github = a >= 11 && strncasecmp(s + a - 11, "github.com/", 11) == 0;
        unsigned char before = a ? (unsigned char)s[a - 1] : ' ';
        unsigned char after = b < len ? (unsigned char)s[b] : ' ';
        if (!github && (name_char(before) || strchr("/@:~\\", before) || after == '/'))
            continue;
        if (is_alnum(after) || after == '_' || foreign_letter(cp_before(s, a)) ||
            foreign_letter(cp_at(s, len, b)))
            continue;
        if (IN_LIST(s + a, b - a, slash_stop, 1) || IN_LIST(s + a, i - a, owner_stop, 1))
            continue;
        int file = 0;
        for (size_t k = 0; k < sizeof path_ext / sizeof *path_ext; k++)
            file |= ends_with_ci(s + i + 1, b - i - 1, path_ext[k]);
        if (file)
            continue;
        if (add_span(out, a, b, rank, nomem))
            return;
        i = b;
    }
}

/* ---- issue references: #123 ---- */

static void find_issues(const char *s, size_t len, size_t rank, spans *out, int *nomem)
{
    for (size_t i = 0; i + 1 < len; i++) {
        if (s[i] != '#' || !(s[i + 1] >= '0' && s[i + 1] <= '9'))
            continue;
        if (i > 0 && (s[i - 1] == '&' || s[i - 1] == '#'))
            continue; /* HTML entity, ## heading */
        size_t b = i + 1;
        while (b < len && s[b] >= '0' && s[b] <= '9')
            b++;
        if (b - i - 1 > 7 || (b < len && (is_alnum((unsigned char)s[b]) || s[b] == '_')))
            continue;
        if (add_span(out, i, b, rank, nomem))
            return;
        i = b - 1;
    }
}

/* ---- ASCII words: CamelCase, ALL-CAPS, Capitalised ---- */

typedef struct word {
    size_t start, end;
    int foreign; /* touches a non-ASCII letter of a spaced script */
} word;

static int word_char(unsigned char c) { return is_alnum(c) || c == '_'; }

/* The ASCII words of S ([A-Za-z0-9_] runs), for the three word patterns. */
static word *split_words(const char *s, size_t len, size_t *n, int *nomem)
{
    size_t cap = 64, k = 0;
    word *v = malloc(cap * sizeof *v);
    if (!v) {
        *nomem = 1;
        return NULL;
    }
    for (size_t i = 0; i < len;) {
        if (!word_char((unsigned char)s[i])) {
            i++;
            continue;
        }
        size_t b = i;
        while (b < len && word_char((unsigned char)s[b]))
            b++;
        if (k == cap) {
            word *w = realloc(v, cap * 2 * sizeof *v);
            if (!w) {
                free(v);
                *nomem = 1;
                return NULL;
            }
            v = w;
            cap *= 2;
        }
        v[k++] = (word){i, b, foreign_letter(cp_before(s, i)) || foreign_letter(cp_at(s, len, b))};
        i = b;
    }
    *n = k;
    return v;
}

static int is_camel(const char *s, size_t a, size_t b)
{
    if (b - a < 3)
        return 0;
    int lower = 0, inner_upper = 0;
    for (size_t i = a; i < b; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '_')
            return 0;
        lower |= is_lower(c);
        inner_upper |= i > a && is_upper(c);
    }
    return lower && inner_upper;
}

/* Upper-case letters, digits and underscores, led by a letter. */
static int caps_shape(const char *s, size_t a, size_t b)
{
    if (!is_upper((unsigned char)s[a]))
        return 0;
    for (size_t i = a; i < b; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(is_upper(c) || (c >= '0' && c <= '9') || c == '_'))
            return 0;
    }
    return 1;
}

static int letters_only_caps(const char *s, size_t a, size_t b)
{
    for (size_t i = a; i < b; i++)
        if (!is_upper((unsigned char)s[i]))
            return 0;
    return 1;
}

/* "Word": one capital, then lower-case letters only. */
static int capital_shape(const char *s, size_t a, size_t b)
{
    if (b - a < 3 || !is_upper((unsigned char)s[a]))
        return 0;
    for (size_t i = a + 1; i < b; i++)
        if (!is_lower((unsigned char)s[i]))
            return 0;
    return 1;
}

/* Only spaces, tabs and light punctuation between two words on one line. */
static int adjacent(const char *s, const word *x, const word *y)
{
    if (y->start - x->end > 3)
        return 0;
    for (size_t i = x->end; i < y->start; i++)
        if (!strchr(" \t,;:-'\"", s[i]))
            return 0;
    return 1;
}

/* Does the word at A start a sentence? Walks back over blanks, opening
 * quotes and brackets, and list or heading markers at the start of a line. */
static int sentence_start(const char *s, size_t a)
{
    size_t i = a;
    while (i > 0 && strchr(" \t\"'([{*_`>", s[i - 1]))
        i--;
    if (i == 0 || s[i - 1] == '\n' || s[i - 1] == '\r')
        return 1;
    char c = s[i - 1];
    if (c == '.' || c == '!' || c == '?' || c == ':' || c == ';')
        return 1;
    /* Markers: "- ", "+ ", "# ", "1) " with only blanks before them ("1." ends above). */
    size_t j = i;
    while (j > 0 && (s[j - 1] == '-' || s[j - 1] == '+' || s[j - 1] == '#' ||
                     (s[j - 1] >= '0' && s[j - 1] <= '9') || s[j - 1] == ')'))
        j--;
    if (j < i) {
        while (j > 0 && (s[j - 1] == ' ' || s[j - 1] == '\t'))
            j--;
        if (j == 0 || s[j - 1] == '\n' || s[j - 1] == '\r')
            return 1;
    }
    int32_t cp = cp_before(s, i);
    /* Japanese and Chinese full stops and marks, full-width ! ? and quotes. */
    return cp == 0x3002 || cp == 0xFF01 || cp == 0xFF1F || cp == 0xFF0E || cp == 0x300C ||
           cp == 0x300E || cp == 0x201C;
}

/* Lines in Title Case (most words capitalised) say nothing about names.
 * Returns the flag for the line holding word K; *next gets the index of the
 * first word after that line, so a caller asks once per line. */
static int title_case_line(const char *s, size_t len, const word *w, size_t nw, size_t k,
                           size_t *next)
{
    size_t ls = w[k].start, le = w[k].end;
    while (ls > 0 && s[ls - 1] != '\n')
        ls--;
    while (le < len && s[le] != '\n')
        le++;
    size_t words = 0, caps = 0;
    size_t j = k;
    while (j > 0 && w[j - 1].start >= ls)
        j--;
    for (; j < nw && w[j].end <= le; j++) {
        if (w[j].end - w[j].start < 2 || !is_letter((unsigned char)s[w[j].start]))
            continue;
        words++;
        caps += is_upper((unsigned char)s[w[j].start]);
    }
    *next = j;
    return words >= 3 && caps * 5 >= words * 4;
}

/* The run of adjacent upper-case words (letters only) around word K, which
 * must be one: its first index in *lo and its end in *hi. */
static void caps_run(const char *s, const word *w, size_t nw, size_t k, size_t *lo, size_t *hi)
{
    size_t a = k, b = k + 1;
    while (a > 0 && adjacent(s, &w[a - 1], &w[a]) &&
           letters_only_caps(s, w[a - 1].start, w[a - 1].end))
        a--;
    while (b < nw && adjacent(s, &w[b - 1], &w[b]) && letters_only_caps(s, w[b].start, w[b].end))
        b++;
    *lo = a;
    *hi = b;
}

static void find_words(const char *s, size_t len, const word *w, size_t nw, int kind, size_t rank,
                       spans *out, int *nomem)
{
    /* Per-line and per-run facts, computed once: linear on long prompts. */
    size_t line_next = 0, run_lo = 1, run_hi = 0;
    int title = 0;
    for (size_t k = 0; k < nw; k++) {
        size_t a = w[k].start, b = w[k].end;
        if (w[k].foreign)
            continue;
        if (kind == K_CAMEL) {
            if (!is_camel(s, a, b) || IN_LIST(s + a, b - a, camel_stop, 0))
                continue;
        } else if (kind == K_CAPS) {
            if (b - a < 3 || !caps_shape(s, a, b) || !has_letter(s, a, b) ||
                IN_LIST(s + a, b - a, caps_stop, 0))
                continue;
            /* Shouting: three or more upper-case words in a row. */
            if (letters_only_caps(s, a, b)) {
                if (k < run_lo || k >= run_hi)
                    caps_run(s, w, nw, k, &run_lo, &run_hi);
                if (run_hi - run_lo >= 3)
                    continue;
            }
        } else {
            /* Capitalised words: inside a sentence (capital), or a name that
             * starts one (start: "Priya wants an update"), which must not be a
             * common opener and must have a lower-case word after it. */
            if (!capital_shape(s, a, b) || IN_LIST(s + a, b - a, capital_stop, 0) ||
                sentence_start(s, a) != (kind == K_START))
                continue;
            if (kind == K_START &&
                (IN_LIST(s + a, b - a, start_stop, 0) || k + 1 >= nw ||
                 !adjacent(s, &w[k], &w[k + 1]) || !is_lower((unsigned char)s[w[k + 1].start])))
                continue;
            if (k >= line_next)
                title = title_case_line(s, len, w, nw, k, &line_next);
            if (title)
                continue;
            /* A contraction ("Don't", "Isn't") but not a possessive ("Priya's"). */
            if (b + 1 < len && s[b] == '\'' && is_letter((unsigned char)s[b + 1]) &&
                !(s[b + 1] == 's' && (b + 2 >= len || !word_char((unsigned char)s[b + 2]))))
                continue;
        }
        if (add_span(out, a, b, rank, nomem))
            return;
    }
}

/* ---- katakana runs ---- */

static int katakana_letter(int32_t cp)
{
    return (cp >= 0x30A1 && cp <= 0x30FA) || (cp >= 0x31F0 && cp <= 0x31FF) ||
           (cp >= 0xFF66 && cp <= 0xFF9D && cp != 0xFF70);
}
/* Marks that continue a run: prolonged sound, iteration, (half-width) voicing. */
static int katakana_mark(int32_t cp)
{
    return cp == 0x30FC || cp == 0x30FD || cp == 0x30FE || cp == 0xFF70 || cp == 0xFF9E ||
           cp == 0xFF9F;
}

static void find_katakana(const char *s, size_t len, size_t rank, spans *out, int *nomem)
{
    size_t i = 0;
    while (i < len) {
        int32_t cp;
        int l = decode(s + i, len - i, &cp);
        if (!katakana_letter(cp)) {
            i += (size_t)l;
            continue;
        }
        size_t a = i, end = i, letters = 0;
        while (i < len) {
            l = decode(s + i, len - i, &cp);
            if (katakana_letter(cp)) {
                letters++;
                i += (size_t)l;
                end = i;
            } else if (katakana_mark(cp) || cp == 0x30FB || cp == 0xFF65) {
                /* A middle dot joins two names (ジョン・スミス); a trailing one does not. */
                i += (size_t)l;
                if (katakana_mark(cp))
                    end = i;
            } else {
                break;
            }
        }
        if (letters < 2 || IN_LIST(s + a, end - a, katakana_stop, 0))
            continue;
        if (add_span(out, a, end, rank, nomem))
            return;
    }
}

/* ---- Han-script names ---- */

static int han_char(int32_t cp)
{
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0xF900 && cp <= 0xFAFF);
}

/* Kana or a CJK mark next to a Han run: it is inside Japanese or Chinese
 * text, not a name set among other words. */
static int cjk_context(int32_t cp)
{
    return (cp >= 0x3000 && cp <= 0x30FF) || (cp >= 0xFF00 && cp <= 0xFFEF);
}

/* Names in Han script: a run of two to four Han characters set among other
 * words (王芳 owns the cutover), or in Chinese text a common surname with
 * the one or two characters before a verb or particle (王芳负责, 李明说). */
static void find_han(const char *s, size_t len, size_t rank, spans *out, int *nomem)
{
    size_t i = 0;
    while (i < len) {
        int32_t cp;
        int l = decode(s + i, len - i, &cp);
        if (!han_char(cp)) {
            i += (size_t)(l > 0 ? l : 1);
            continue;
        }
        size_t a = i, at[64], nc = 0;
        while (i < len) {
            l = decode(s + i, len - i, &cp);
            if (l <= 0 || !han_char(cp))
                break;
            if (nc < 64)
                at[nc++] = i;
            i += (size_t)l;
        }
        size_t e = i;
        int32_t before = cp_before(s, a), after = cp_at(s, len, e);
        if (nc >= 2 && nc <= 4 && !cjk_context(before) && !cjk_context(after) &&
            !foreign_letter(before) && !foreign_letter(after)) {
            if (add_span(out, a, e, rank, nomem))
                return;
            continue;
        }
        for (size_t k = 0; k + 1 < nc; k++) {
            size_t sl = at[k + 1] - at[k];
            if (!IN_LIST(s + at[k], sl, han_surnames, 0))
                continue;
            /* Surname and one character, or two, before what ends a name. */
            size_t end = 0;
            for (size_t g = 1; g <= 2 && !end; g++) {
                size_t next = k + 1 + g;
                size_t stop = next < nc ? at[next] : e;
                size_t after_len = next + 1 < nc ? at[next + 1] - stop : e - stop;
                if (next > nc)
                    break;
                if (next == nc || IN_LIST(s + stop, after_len, han_after, 0))
                    end = stop;
            }
            if (end && add_span(out, at[k], end, rank, nomem))
                return;
            if (end)
                while (k + 1 < nc && at[k + 1] < end)
                    k++;
        }
    }
}

/* ---- regular expressions ---- */

static void find_regex(const char *s, size_t len, const regex_t *re, size_t rank, spans *out,
                       int *nomem)
{
    size_t off = 0;
    regmatch_t m[2];
    while (off <= len) {
        if (regexec(re, s + off, 2, m, off ? REG_NOTBOL : 0) != 0)
            return;
        size_t ms = off + (size_t)m[0].rm_so, me = off + (size_t)m[0].rm_eo;
        size_t ts = ms, te = me;
        if (re->re_nsub >= 1 && m[1].rm_so >= 0) {
            ts = off + (size_t)m[1].rm_so;
            te = off + (size_t)m[1].rm_eo;
        }
        while (ts < te && is_blank(s[ts]))
            ts++;
        while (te > ts && is_blank(s[te - 1]))
            te--;
        if (te > ts && add_span(out, ts, te, rank, nomem))
            return;
        if (me > off)
            off = me;
        else if (off < len) { /* empty match: step over one code point */
            int32_t cp;
            off += (size_t)decode(s + off, len - off, &cp);
        } else
            return;
    }
}

/* ------------------------------------------------------------------------
 * Ranking
 * ---------------------------------------------------------------------- */

static int span_cmp(const void *x, const void *y)
{
    const span *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->end > b->end) - (a->end < b->end);
}

void nudge_candidates_free(nudge_candidate *c, size_t n)
{
    if (!c)
        return;
    for (size_t i = 0; i < n; i++)
        free(c[i].term);
    free(c);
}

int nudge_candidates(const char *prompt, const nudge_patterns *p, size_t max,
                     nudge_candidate **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!prompt || !p || max == 0)
        return MNEMO_OK;
    size_t len = strlen(prompt);
    spans sp = {0};
    word *words = NULL;
    size_t nwords = 0;
    int nomem = 0, rc = MNEMO_OK, need_words = 0;
    for (size_t r = 0; r < p->n; r++)
        need_words |= p->v[r].kind == K_CAMEL || p->v[r].kind == K_CAPS ||
                      p->v[r].kind == K_CAPITAL || p->v[r].kind == K_START;
    if (need_words && !(words = split_words(prompt, len, &nwords, &nomem)))
        goto done;
    for (size_t r = 0; r < p->n && !nomem; r++) {
        sp.per_pattern = 0;
        switch (p->v[r].kind) {
        case K_REPO: find_repos(prompt, len, r, &sp, &nomem); break;
        case K_ISSUE: find_issues(prompt, len, r, &sp, &nomem); break;
        case K_CAMEL:
        case K_CAPS:
        case K_CAPITAL:
        case K_START:
            find_words(prompt, len, words, nwords, p->v[r].kind, r, &sp, &nomem);
            break;
        case K_KATAKANA: find_katakana(prompt, len, r, &sp, &nomem); break;
        case K_HAN: find_han(prompt, len, r, &sp, &nomem); break;
        default: find_regex(prompt, len, &p->v[r].re, r, &sp, &nomem); break;
        }
    }
    if (nomem || sp.n == 0)
        goto done;
    if (sp.n > 1)
        qsort(sp.v, sp.n, sizeof *sp.v, span_cmp);
    nudge_candidate *c = calloc(max < sp.n ? max : sp.n, sizeof *c);
    if (!c) {
        nomem = 1;
        goto done;
    }
    size_t k = 0;
    for (size_t i = 0; i < sp.n && k < max; i++) {
        size_t a = sp.v[i].start, b = sp.v[i].end;
        size_t tl = b - a;
        if (tl > TERM_MAX) { /* cut at a code-point boundary */
            tl = TERM_MAX;
            while (tl > 0 && ((unsigned char)prompt[a + tl] & 0xC0) == 0x80)
                tl--;
        }
        int skip = 0;
        for (size_t j = 0; j < k && !skip; j++) {
            size_t ca = c[j].offset, cb = ca + strlen(c[j].term);
            skip = (a < cb && ca < b) ||
                   (strlen(c[j].term) == tl && strncasecmp(c[j].term, prompt + a, tl) == 0);
        }
        if (skip || tl == 0)
            continue;
        if (!(c[k].term = strndup(prompt + a, tl))) {
            nudge_candidates_free(c, k);
            nomem = 1;
            goto done;
        }
        c[k].pattern = p->v[sp.v[i].rank].name;
        c[k].weak = p->v[sp.v[i].rank].kind == K_START || p->v[sp.v[i].rank].kind == K_HAN;
        c[k].offset = a;
        k++;
    }
    if (k == 0)
        free(c);
    else {
        *out = c;
        *n = k;
    }
done:
    if (nomem)
        rc = MNEMO_NOMEM;
    free(words);
    free(sp.v);
    return rc;
}

/* ------------------------------------------------------------------------
 * Quotes
 * ---------------------------------------------------------------------- */

char *nudge_shorten(const char *text, size_t maxcp)
{
    size_t len = text ? strlen(text) : 0;
    char *o = malloc(len + 4);
    if (!o)
        return NULL;
    size_t n = 0, cps = 0, i = 0;
    int space = 0, cut = 0;
    while (i < len && is_blank(text[i]))
        i++;
    while (i < len) {
        if (is_blank(text[i])) {
            space = 1;
            i++;
            continue;
        }
        if (space) {
            if (cps + 1 >= maxcp) {
                cut = 1;
                break;
            }
            o[n++] = ' ';
            cps++;
            space = 0;
        }
        if (cps >= maxcp) {
            cut = 1;
            break;
        }
        int32_t cp;
        int l = decode(text + i, len - i, &cp);
        if (cp < 0) { /* invalid byte: dropped, the quote stays valid UTF-8 */
            i++;
            continue;
        }
        memcpy(o + n, text + i, (size_t)l);
        n += (size_t)l;
        i += (size_t)l;
        cps++;
    }
    if (cut) {
        memcpy(o + n, "\xe2\x80\xa6", 3); /* … */
        n += 3;
    }
    o[n] = 0;
    return o;
}

char *nudge_quote(const char *text, size_t at, size_t maxcp)
{
    size_t len = text ? strlen(text) : 0;
    if (at > len)
        at = len;
    size_t line = at;
    while (line > 0 && text[line - 1] != '\n')
        line--;
    /* A match deep into its line keeps a little of what leads to it. */
    size_t lead = maxcp / 4, cps = 0;
    for (size_t i = line; i < at; i++)
        cps += ((unsigned char)text[i] & 0xC0) != 0x80;
    size_t from = line;
    if (cps > lead) {
        size_t p = at;
        for (size_t k = 0; p > line && k < lead;) {
            p--;
            k += ((unsigned char)text[p] & 0xC0) != 0x80;
        }
        size_t w = p; /* start at a word when one begins before the match */
        while (w < at && w > line && !is_blank(text[w - 1]))
            w++;
        from = w < at ? w : p;
    }
    if (from == line)
        return nudge_shorten(text + from, maxcp);
    char *s = nudge_shorten(text + from, maxcp > 1 ? maxcp - 1 : 1);
    char *o = s ? malloc(strlen(s) + 4) : NULL;
    if (o) {
        memcpy(o, "\xe2\x80\xa6", 3); /* … */
        memcpy(o + 3, s, strlen(s) + 1);
    }
    free(s);
    return o;
}
