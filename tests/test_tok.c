/*
 * test_tok.c - the tokenizer: normalisation, stemming, stop words, CJK
 * bigrams, identifiers, and hostile input.
 */
#include <stdlib.h>

#include "test.h"
#include "text/tok.h"
#include "util/buf.h"
#include "util/utf8.h"

/* Renders tokens as "a b =whole +part !stop". */
static int render(void *ud, int flags, const char *token, int len, int start, int end)
{
    buf *b = ud;
    ASSERT(start >= 0 && end >= start);
    ASSERT(utf8_valid(token, (size_t)len));
    ASSERT(len > 0 && len <= TOK_MAX_BYTES);
    if (b->len)
        buf_putc(b, ' ');
    if (flags & TOKF_WHOLE)
        buf_putc(b, '=');
    if (flags & TOKF_PART)
        buf_putc(b, '+');
    if (flags & TOKF_STOP)
        buf_putc(b, '!');
    buf_append(b, token, (size_t)len);
    return 0;
}

static char *toks(const char *lang, const char *text, int query)
{
    tok *t;
    ASSERT_OK(tok_new(lang, 1, &t));
    buf b;
    buf_init(&b, 0);
    ASSERT_OK(tok_run(t, text, strlen(text), query, render, &b));
    tok_free(t);
    buf_putc(&b, 0);
    return buf_detach(&b);
}

#define ASSERT_TOKS(lang, text, query, want)                                                   \
    do {                                                                                       \
        char *got_ = toks(lang, text, query);                                                  \
        ASSERT_STR_EQ(got_, want);                                                             \
        free(got_);                                                                            \
    } while (0)

TEST(tok_stemming_and_case)
{
    ASSERT_TOKS("english", "Running runs RAN quickly", 0, "run run ran quick");
    ASSERT_TOKS("english", "migrations migrated Migrating", 0, "migrat migrat migrat");
    ASSERT_TOKS("none", "Running runs", 0, "running runs");
    ASSERT_TOKS("german", "Häuser Haus", 0, "haus haus");
}

TEST(tok_unicode_normalisation)
{
    /* Accents stripped, compatibility forms folded, ligatures expanded. */
    ASSERT_TOKS("none", "Café CAFÉ cafe\xcc\x81", 0, "cafe cafe cafe");
    ASSERT_TOKS("none", "\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\xa3 \xef\xac\x81le", 0, "abc file");
    ASSERT_TOKS("english", "user's user\xe2\x80\x99s", 0, "user user");
}

TEST(tok_stop_words_only_marked_in_queries)
{
    ASSERT_TOKS("english", "the gateway is broken", 0, "the gateway is broken");
    ASSERT_TOKS("english", "the gateway is broken", 1, "!the gateway !is broken");
    /* Only the English list exists. */
    ASSERT_TOKS("none", "the gateway", 1, "the gateway");
}

TEST(tok_cjk_bigrams)
{
    ASSERT_TOKS("english", "数据库迁移", 0, "数据 据库 库迁 迁移");
    ASSERT_TOKS("english", "猫", 0, "猫");
    ASSERT_TOKS("english", "東京でデプロイ", 0, "東京 京で でデ デプ プロ ロイ");
    ASSERT_TOKS("english", "Python入门 guide", 0, "python 入门 guid");
    ASSERT_TOKS("english", "한국어", 0, "한국 국어");
    /* Halfwidth katakana is folded to fullwidth, voiced marks composed. */
    ASSERT_TOKS("english", "ﾃﾞﾌﾟﾛｲ", 0, "デプ プロ ロイ");
    /* CJK punctuation separates runs. */
    ASSERT_TOKS("english", "部署。服务器", 0, "部署 服务 务器");
}

TEST(tok_identifiers_whole_and_parts)
{
    ASSERT_TOKS("english", "max_retry_count", 0, "=max_retry_count +max +retri +count");
    ASSERT_TOKS("english", "gateway.bind.port", 0, "=gateway.bind.port +gateway +bind +port");
    ASSERT_TOKS("english", "acme/gateway", 0, "=acme/gateway +acm +gateway");
    ASSERT_TOKS("english", "see #412 now", 0, "see =#412 +412 now");
    ASSERT_TOKS("english", "v2.4.1", 0, "=v2.4.1 +v2 +4 +1");
    ASSERT_TOKS("english", "deploy/k8s/values.yaml", 0,
                "=deploy/k8s/values.yaml +deploy +k8s +valu +yaml");
    ASSERT_TOKS("english", "ECONNREFUSED E0308", 0, "econnrefus e0308");
    ASSERT_TOKS("english", "HTTPServer getUserName", 0,
                "=httpserver +http +server =getusername +get +user +name");
    ASSERT_TOKS("english", "https://github.com/acme/api", 0,
                "=https://github.com/acme/api +https +github +com +acm +api");
    /* A trailing period or colon is punctuation, not a connector. */
    ASSERT_TOKS("english", "port 8080. Note: done", 0, "port 8080 note done");
    ASSERT_TOKS("english", "2026-11-29", 0, "=2026-11-29 +2026 +11 +29");
}

TEST(tok_hostile_input)
{
    /* Invalid UTF-8, NULs inside, a 10k-character word, long CJK runs. */
    char big[20000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    char *s = toks("english", big, 0);
    ASSERT(strlen(s) <= TOK_MAX_BYTES);
    free(s);
    s = toks("english", "ab\xff\xfe cd \xe6\x97", 0);
    ASSERT_STR_EQ(s, "ab cd");
    free(s);
    buf b;
    buf_init(&b, 0);
    for (int i = 0; i < 2000; i++)
        buf_puts(&b, "日本");
    s = toks("english", b.data, 0);
    ASSERT(strlen(s) > 1000);
    free(s);
    buf_cleanup(&b);
    s = toks("english", "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.a.b.c.d.e.f.g.h.i.j", 0);
    ASSERT(strlen(s) > 0);
    free(s);
    s = toks("english", "", 0);
    ASSERT_STR_EQ(s, "");
    free(s);
}

TEST(tok_unknown_language_rejected)
{
    tok *t = NULL;
    ASSERT_EQ(tok_new("klingon", 1, &t), MNEMO_INVALID);
    ASSERT(t == NULL);
    ASSERT(tok_language_valid("english"));
    ASSERT(tok_language_valid("none"));
    ASSERT(!tok_language_valid(""));
}

TEST(tok_word_matches_run)
{
    tok *t;
    ASSERT_OK(tok_new("english", 1, &t));
    char out[TOK_MAX_BYTES + 1];
    int n = tok_word(t, "Migrations", 10, out);
    ASSERT_STR_EQ(out, "migrat");
    ASSERT_EQ(n, 6);
    /* The stem cache returns the same answer the second time. */
    n = tok_word(t, "Migrations", 10, out);
    ASSERT_STR_EQ(out, "migrat");
    tok_free(t);
}
