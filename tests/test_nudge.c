/*
 * test_nudge.c - the recall nudge: the proper-noun detector (cli/nudge.c)
 * on English and Japanese prompts, its guards, ranking and pattern sets;
 * and `mnemo hook claude-code` end to end: hits with citations, the no-hits
 * line, the output cap, silence on every failure (no index, bad input,
 * the deadline), the environment variables and their aliases.
 */
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nudge.h"
#include "test.h"

/* ------------------------------------------------------------------------
 * The detector
 * ---------------------------------------------------------------------- */

/* The candidates of PROMPT under SPEC (NULL: defaults), joined by '|'. */
static char *terms(const char *prompt, const char *spec, size_t max)
{
    nudge_patterns *p;
    char *err = NULL;
    if (nudge_patterns_parse(spec, &p, &err))
        test_fail(__FILE__, __LINE__, "patterns '%s': %s", spec, err ? err : "?");
    nudge_candidate *c;
    size_t n;
    ASSERT_OK(nudge_candidates(prompt, p, max, &c, &n));
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(c[i].term) + 1;
    char *s = calloc(1, len);
    for (size_t i = 0; i < n; i++) {
        if (i)
            strncat(s, "|", len - strlen(s) - 1);
        strncat(s, c[i].term, len - strlen(s) - 1);
    }
    nudge_candidates_free(c, n);
    nudge_patterns_free(p);
    return s;
}

#define ASSERT_TERMS(prompt, spec, max, want)                                                  \
    do {                                                                                       \
        char *got_ = terms(prompt, spec, max);                                                 \
        if (strcmp(got_, want) != 0)                                                           \
            test_fail(__FILE__, __LINE__, "candidates of \"%s\":\n  want \"%s\"\n  got  \"%s\"", \
                      prompt, want, got_);                                                     \
        free(got_);                                                                            \
    } while (0)

TEST(nudge_detect_english)
{
    ASSERT_TERMS("Where is PaymentsAPI hosted?", NULL, 10, "PaymentsAPI");
    ASSERT_TERMS("Deploy the thing", NULL, 10, "");
    ASSERT_TERMS("See acme/billing and issue #123 before the ACME rollout.", NULL, 10,
                 "acme/billing|#123|ACME");
    ASSERT_TERMS("can you ask Priya whether the deploy went out?", NULL, 10, "Priya");
    ASSERT_TERMS("what does getUserName return for XMLParser inputs", NULL, 10,
                 "getUserName|XMLParser");
    ASSERT_TERMS("bump MAX_RETRY_COUNT and K8S limits", NULL, 10, "MAX_RETRY_COUNT|K8S");
    ASSERT_TERMS("see https://github.com/acme/billing/pull/3 for it", NULL, 10, "acme/billing");
}

TEST(nudge_detect_sentence_starts)
{
    ASSERT_TERMS("Deploy it. Then ask Priya about it!", NULL, 10, "Priya");
    /* A name may start a sentence too ("start", after the others): a
     * capitalised word that is not a common one, a lower-case word after. */
    ASSERT_TERMS("Priya said so", NULL, 10, "Priya");
    ASSERT_TERMS("Priya wants an update on the cutover", NULL, 10, "Priya");
    ASSERT_TERMS("Deploy the fix. Check the logs, then Sam.", NULL, 10, "Sam");
    ASSERT_TERMS("Please ask Priya. Alice agreed.", NULL, 10, "Priya|Alice");
    ASSERT_TERMS("fix this:\n- Stripe keys rotate\n1) Berlin office\n# Heading words", NULL, 10,
                 "Stripe|Berlin|Heading");
    ASSERT_TERMS("Priya", NULL, 10, ""); /* a word alone: nothing says it is a name */
    ASSERT_TERMS("Priya, Sam", "start", 10, "");
    ASSERT_TERMS("done? \"Maybe\" she said", NULL, 10, "");
    ASSERT_TERMS("we met Tom in Berlin on Monday", NULL, 10, "Tom|Berlin");
}

TEST(nudge_detect_han_names)
{
    ASSERT_TERMS("王芳 owns the billing cutover", NULL, 10, "王芳");
    ASSERT_TERMS("ask 欧阳娜娜 about it", NULL, 10, "欧阳娜娜");
    ASSERT_TERMS("请问王芳负责什么", NULL, 10, "王芳");
    ASSERT_TERMS("李明说明天发布", NULL, 10, "李明");
    ASSERT_TERMS("找张伟问问", NULL, 10, "张伟");
    ASSERT_TERMS("今天的会议推迟了", NULL, 10, "");
    ASSERT_TERMS("田中さんに聞いて", NULL, 10, "");
    ASSERT_TERMS("东京的服务器", "han", 10, "");
}

TEST(nudge_detect_false_positives)
{
    ASSERT_TERMS("and/or I/O he/she 24/7 2026/11/02 src/main.c docs/search.md", NULL, 10, "");
    ASSERT_TERMS("fetch https://example.com/foo/bar and user@host:team/repo", NULL, 10, "");
    ASSERT_TERMS("THIS IS VERY URGENT", NULL, 10, "");
    ASSERT_TERMS("send JSON over HTTP to the API, TODO: fix the CLI", NULL, 10, "");
    ASSERT_TERMS("a 5 GHz radio with 16 GiB and &#123; escapes", NULL, 10, "");
    ASSERT_TERMS("How To Fix The Build Quickly", NULL, 10, "");
    ASSERT_TERMS("it works but Don't touch it, ask Claude", NULL, 10, "");
    ASSERT_TERMS("the Café opened", NULL, 10, "");
    ASSERT_TERMS("use the MüllerAPI", NULL, 10, "");
}

TEST(nudge_detect_japanese)
{
    ASSERT_TERMS("デプロイの手順を教えて", NULL, 10, "デプロイ");
    ASSERT_TERMS("昨日、ペイメントゲートウェイでエラーが出た。", NULL, 10,
                 "ペイメントゲートウェイ");
    ASSERT_TERMS("PaymentsAPIのデプロイはどこ？", NULL, 10, "PaymentsAPI|デプロイ");
    ASSERT_TERMS("ジョン・スミスに連絡して", NULL, 10, "ジョン・スミス");
    ASSERT_TERMS("ﾃﾞﾌﾟﾛｲは明日", NULL, 10, "ﾃﾞﾌﾟﾛｲ");
    ASSERT_TERMS("東京で打ち合わせ。ファイルを送る", NULL, 10, "");
    ASSERT_TERMS("Stripeの設定を確認", NULL, 10, "");  /* sentence start */
    ASSERT_TERMS("設定はStripeで確認", NULL, 10, "Stripe");
}

TEST(nudge_rank_and_dedupe)
{
    /* Pattern order first, then position. */
    ASSERT_TERMS("ACME said FooBar broke #12 in acme/web via デプロイ and Priya", NULL, 10,
                 "acme/web|#12|FooBar|ACME|Priya|デプロイ");
    ASSERT_TERMS("ACME said FooBar broke #12 in acme/web", NULL, 2, "acme/web|#12");
    /* Duplicates (ASCII case-insensitive) and overlaps go. */
    ASSERT_TERMS("ACME and ACME again, FooBar and FooBar", NULL, 10, "FooBar|ACME");
    ASSERT_TERMS("see acme/PaymentsAPI", NULL, 10, "acme/PaymentsAPI");
    ASSERT_TERMS("FooBar and foobar", "camel,re:(foo[a-z]+)", 10, "FooBar");
    /* Repeated prompts do not grow without bound. */
    size_t n = 300 * 8 + 1;
    char *big = calloc(1, n);
    for (int i = 0; i < 300; i++)
        memcpy(big + i * 8, "FooBar, ", 8);
    ASSERT_TERMS(big, NULL, 3, "FooBar");
    free(big);
}

TEST(nudge_detect_garbage)
{
    /* Edges and invalid UTF-8: no crash, nothing made up. */
    ASSERT_TERMS("\xe3\x83", NULL, 10, "");
    ASSERT_TERMS("\xe3\x83\x87\xe3\x83", NULL, 10, "");
    ASSERT_TERMS("/", NULL, 10, "");
    ASSERT_TERMS("ab/", NULL, 10, "");
    ASSERT_TERMS("#", NULL, 10, "");
    ASSERT_TERMS("ー・ー", NULL, 10, "");
    ASSERT_TERMS("\xff" "FooBar\xff", NULL, 10, "FooBar");
    ASSERT_TERMS("", NULL, 10, "");
    /* Random prompts over a nasty alphabet: every term is the prompt's own
     * bytes at its offset. */
    static const char *const atoms[] = {"A", "b", "Z", "/", "#", "1", " ", ".", "\n", "-", "_",
                                        "'", "デ", "ー", "・", "é", "\xff", "\xe3", "ﾃ", "。",
                                        "Foo", "BAR", "acme/x", "#12"};
    nudge_patterns *p;
    ASSERT_OK(nudge_patterns_parse("default,re:[a-z]+", &p, NULL));
    unsigned seed = 12345;
    for (int round = 0; round < 3000; round++) {
        char prompt[256] = "";
        size_t len = 0;
        for (int i = 0; i < 40; i++) {
            seed = seed * 1103515245u + 12345u;
            const char *a = atoms[(seed >> 16) % (sizeof atoms / sizeof *atoms)];
            size_t n = strlen(a);
            if (len + n >= sizeof prompt)
                break;
            memcpy(prompt + len, a, n);
            len += n;
        }
        prompt[len] = 0;
        nudge_candidate *c;
        size_t n;
        ASSERT_OK(nudge_candidates(prompt, p, 20, &c, &n));
        for (size_t i = 0; i < n; i++) {
            size_t tl = strlen(c[i].term);
            ASSERT(tl > 0 && c[i].offset + tl <= len);
            ASSERT(memcmp(prompt + c[i].offset, c[i].term, tl) == 0);
        }
        nudge_candidates_free(c, n);
    }
    nudge_patterns_free(p);
}

TEST(nudge_patterns_syntax)
{
    nudge_patterns *p;
    char *err = NULL;
    ASSERT_OK(nudge_patterns_parse(NULL, &p, NULL));
    ASSERT_EQ(nudge_patterns_count(p), 8);
    ASSERT_STR_EQ(nudge_patterns_name(p, 0), "repo");
    ASSERT_STR_EQ(nudge_patterns_name(p, 5), "katakana");
    ASSERT_STR_EQ(nudge_patterns_name(p, 7), "start");
    nudge_patterns_free(p);
    ASSERT_OK(nudge_patterns_parse(" CAPS , camel,caps ", &p, NULL));
    ASSERT_EQ(nudge_patterns_count(p), 2);
    ASSERT_STR_EQ(nudge_patterns_name(p, 0), "caps");
    nudge_patterns_free(p);
    ASSERT_OK(nudge_patterns_parse("re:x{1\\,3}y,default", &p, NULL));
    ASSERT_EQ(nudge_patterns_count(p), 9);
    ASSERT_STR_EQ(nudge_patterns_name(p, 0), "re:x{1,3}y");
    nudge_patterns_free(p);

    ASSERT_EQ(nudge_patterns_parse("repo,bogus", &p, &err), MNEMO_INVALID);
    ASSERT(p == NULL);
    ASSERT_CONTAINS(err, "bogus");
    free(err);
    ASSERT_EQ(nudge_patterns_parse("re:(", &p, &err), MNEMO_INVALID);
    ASSERT_CONTAINS(err, "re:(");
    free(err);
    ASSERT_EQ(nudge_patterns_parse(" , ,", &p, NULL), MNEMO_INVALID);
    char many[400] = "";
    for (int i = 0; i < 17; i++) {
        char item[24];
        snprintf(item, sizeof item, "re:a%d,", i);
        strncat(many, item, sizeof many - strlen(many) - 1);
    }
    ASSERT_EQ(nudge_patterns_parse(many, &p, NULL), MNEMO_INVALID);

    /* Order is rank; a group picks the term out of the match. */
    ASSERT_TERMS("FooBar and ACME", "caps,camel", 10, "ACME|FooBar");
    ASSERT_TERMS("see TICKET-42 and TICKET-7", "re:TICKET-[0-9]+", 10, "TICKET-42|TICKET-7");
    ASSERT_TERMS("owner: alice, owner: bob", "re:owner: ([a-z]+)", 10, "alice|bob");
    ASSERT_TERMS("xxy xy", "re:x{1\\,3}y", 10, "xxy|xy");
    ASSERT_TERMS("abc", "re:z*", 10, ""); /* empty matches only */
}

TEST(nudge_shorten_quotes)
{
    char *s = nudge_shorten("  - a\n\n  b\tc  ", 100);
    ASSERT_STR_EQ(s, "- a b c");
    free(s);
    s = nudge_shorten("デプロイ手順はステージングから", 4);
    ASSERT_STR_EQ(s, "デプロイ…");
    free(s);
    s = nudge_shorten("one two three", 5);
    ASSERT_STR_EQ(s, "one t…");
    free(s);
    s = nudge_shorten("ok\xff!", 10);
    ASSERT_STR_EQ(s, "ok!");
    free(s);
}

TEST(nudge_quote_starts_at_the_match)
{
    const char *t = "# Heading\nfirst line\n- the Match line\nafter";
    char *s = nudge_quote(t, (size_t)(strstr(t, "Match") - t), 100);
    ASSERT_STR_EQ(s, "- the Match line after"); /* from its line's start */
    free(s);
    /* Deep into a long line: a word about MAXCP/4 before, marked. */
    t = "aaaa bbbb cccc dddd eeee ffff gggg hhhh Match and the rest of it";
    s = nudge_quote(t, (size_t)(strstr(t, "Match") - t), 20);
    ASSERT_STR_EQ(s, "\xe2\x80\xa6hhhh Match and the\xe2\x80\xa6");
    free(s);
    s = nudge_quote("abc", 99, 100); /* past the end: the last line */
    ASSERT_STR_EQ(s, "abc");
    free(s);
}

/* ------------------------------------------------------------------------
 * mnemo hook claude-code
 * ---------------------------------------------------------------------- */

static const char *memory_md =
    "# Memory\n"
    "\n"
    "- PaymentsAPI is hosted on the eu-west cluster, owned by acme/billing.\n"
    "- Issue #412 tracks the retry bug in the PaymentsAPI client.\n"
    "- デプロイ手順はステージングから始める。\n"
    "- TICKET-42 is the migration ticket. <!-- trigger: billing outage -->\n";

static void workspace(void)
{
    test_write("ws/MEMORY.md", memory_md);
    test_write("ws/memory/2026-11-02.md",
               "# Standup\n\nPaymentsAPI latency went up after the deploy.\n\n"
               "Priya owns the PaymentsAPI dashboards.\n\n"
               "Rollback plan for PaymentsAPI: flip the flag.\n");
    test_write("ws/memory/projects/payments.md", "PaymentsAPI runs three replicas.\n");
    test_write("ws/memory/projects/oncall.md", "Page the PaymentsAPI owner first.\n");
    test_write("ws/memory/projects/costs.md", "PaymentsAPI costs 40 EUR a day.\n");
    ASSERT_EQ(test_cli(NULL, NULL, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "index", "--quiet", NULL),
              0);
}

static char *input(const char *prompt)
{
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s}", "session_id", "abc", "transcript_path",
                          "/tmp/t.jsonl", "cwd", "/nonexistent", "hook_event_name",
                          "UserPromptSubmit", "prompt", prompt);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

/* Runs the hook on the test workspace with INPUT_JSON; returns the exit code. */
static int hook(char **out, const char *input_json, const char *db)
{
    return test_cli(out, NULL, input_json, "--workspace", test_path("ws"), "--db",
                    test_path(db ? db : "db.sqlite"), "hook", "claude-code", NULL);
}

/* The additionalContext of the hook's output (caller frees). */
static char *context(const char *out)
{
    json_error_t je;
    json_t *o = json_loads(out, 0, &je);
    if (!o)
        test_fail(__FILE__, __LINE__, "output is not JSON (%s):\n%s", je.text, out);
    json_t *h = json_object_get(o, "hookSpecificOutput");
    ASSERT_STR_EQ(json_string_value(json_object_get(h, "hookEventName")), "UserPromptSubmit");
    const char *c = json_string_value(json_object_get(h, "additionalContext"));
    ASSERT(c != NULL);
    char *s = strdup(c);
    json_decref(o);
    return s;
}

/* Hit lines ("- path#L..") in a context. */
static int hit_lines(const char *ctx)
{
    int n = 0;
    for (const char *p = ctx; (p = strstr(p, "\n- ")) != NULL; p++)
        n++;
    return n;
}

TEST(nudge_cli_hits)
{
    workspace();
    struct stat before, after;
    ASSERT_EQ(stat(test_path("db.sqlite"), &before), 0);
    char *in = input("Where is PaymentsAPI hosted? And who owns acme/billing?");
    char *out;
    ASSERT_EQ(hook(&out, in, NULL), 0);
    char *ctx = context(out);
    ASSERT_CONTAINS(ctx, "MEMORY.md#L3-L3 (acme/billing, PaymentsAPI): PaymentsAPI is hosted");
    ASSERT_CONTAINS(ctx, "memory/2026-11-02.md#L");
    ASSERT_NOT_CONTAINS(ctx, "no local hits");
    ASSERT(out[strlen(out) - 1] == '\n' && strchr(out, '\n') == out + strlen(out) - 1);
    /* Read only: the index is untouched. */
    ASSERT_EQ(stat(test_path("db.sqlite"), &after), 0);
    ASSERT_EQ(after.st_size, before.st_size);
    ASSERT_EQ(after.st_mtime, before.st_mtime);
    free(ctx);
    free(out);
    free(in);

    in = input("デプロイの手順を教えて");
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ctx = context(out);
    ASSERT_CONTAINS(ctx, "MEMORY.md#L5-L5 (デプロイ): デプロイ手順はステージングから始める。");
    free(ctx);
    free(out);
    free(in);
}

/* A hit in a file whose path has a space: the citation is quoted as the
 * shell needs it, and mnemo get reads it as given. */
TEST(nudge_cli_quotes_paths_with_spaces)
{
    workspace();
    test_write("ws/memory/team notes.md", "# Team\n\nZanzibarGateway is owned by Ola.\n");
    ASSERT_EQ(test_cli(NULL, NULL, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "index", "--quiet", NULL),
              0);
    char *in = input("Who owns ZanzibarGateway?");
    char *out;
    ASSERT_EQ(hook(&out, in, NULL), 0);
    char *ctx = context(out);
    const char *hit = strstr(ctx, "\n- 'memory/team notes.md#L");
    if (!hit)
        test_fail(__FILE__, __LINE__, "no quoted hit line:\n%s", ctx);
    /* The quoted citation, unquoted as a shell would, reads the line. */
    char cit[256];
    ASSERT_EQ(sscanf(hit, "\n- '%255[^']'", cit), 1);
    char *got;
    ASSERT_EQ(test_cli(&got, NULL, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "get", cit, NULL),
              0);
    ASSERT_CONTAINS(got, "ZanzibarGateway is owned by Ola.");
    free(got);
    /* A plain path stays as it is. */
    ASSERT_NOT_CONTAINS(ctx, "'MEMORY.md");
    free(ctx);
    free(out);
    free(in);
}

/* The hit line quotes the line that matched, not the passage's first
 * (a heading and long lines before it), and inside a long line the part
 * around the match. */
TEST(nudge_cli_quotes_the_matched_line)
{
    workspace();
    const char *filler = "We went through the planning items one by one and talked about "
                         "hiring, the offsite, the travel budget and the laptop policy. ";
    char note[4096];
    snprintf(note, sizeof note,
             "# Retro\n\n%s\n%s\nThe ListInvoicesByCustomer call regressed.\n\n# Plan\n\n"
             "%s%s%sThen Bob said ListOrdersByCustomer got slow after the migration. %s%s%s%s\n",
             filler, filler, filler, filler, filler, filler, filler, filler, filler);
    test_write("ws/memory/2026-11-04.md", note);
    ASSERT_EQ(test_cli(NULL, NULL, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "index", "--quiet", NULL),
              0);
    char *in = input("ListOrdersByCustomer got slow again; and ListInvoicesByCustomer?");
    char *out;
    ASSERT_EQ(hook(&out, in, NULL), 0);
    char *ctx = context(out);
    ASSERT_CONTAINS(ctx, "(ListInvoicesByCustomer): The ListInvoicesByCustomer call regressed.");
    ASSERT_CONTAINS(ctx, "(ListOrdersByCustomer): \xe2\x80\xa6");
    ASSERT_CONTAINS(ctx, "Then Bob said ListOrdersByCustomer got slow");
    ASSERT_NOT_CONTAINS(ctx, "): # Retro");
    /* Each quote stays within its cap: 160 code points and the "…". */
    for (const char *p = ctx; (p = strstr(p, "\n- ")) != NULL; p++) {
        const char *q = strstr(p, "): ") + 3, *e = strchr(p + 1, '\n');
        size_t cps = 0;
        for (const char *x = q; x < (e ? e : q + strlen(q)); x++)
            cps += ((unsigned char)*x & 0xC0) != 0x80;
        ASSERT(cps <= 161);
    }
    free(ctx);
    free(out);
    free(in);
}

TEST(nudge_cli_no_hits_line)
{
    workspace();
    char *in = input("what about ZanzibarQueue and #999?");
    char *out;
    ASSERT_EQ(hook(&out, in, NULL), 0);
    char *ctx = context(out);
    ASSERT_STR_EQ(ctx, "no local hits for: #999, ZanzibarQueue");
    free(ctx);
    free(out);
    free(in);
    /* Some terms found, some not. */
    in = input("is ZanzibarQueue like PaymentsAPI?");
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ctx = context(out);
    ASSERT_CONTAINS(ctx, "(PaymentsAPI)");
    ASSERT_CONTAINS(ctx, "\nno local hits for: ZanzibarQueue");
    free(ctx);
    free(out);
    free(in);
}

TEST(nudge_cli_max_hits)
{
    workspace();
    char *in = input("tell me about PaymentsAPI");
    char *out;
    ASSERT_EQ(hook(&out, in, NULL), 0);
    char *ctx = context(out);
    ASSERT_EQ(hit_lines(ctx), 5); /* the default cap, with more matches than that */
    free(ctx);
    free(out);
    setenv("MNEMO_NUDGE_MAX_HITS", "2", 1);
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ctx = context(out);
    ASSERT_EQ(hit_lines(ctx), 2);
    free(ctx);
    free(out);
    free(in);
}

TEST(nudge_cli_max_terms)
{
    workspace();
    char *in = input("compare AlphaOne, BetaTwo, GammaThree and DeltaFour");
    char *out;
    ASSERT_EQ(hook(&out, in, NULL), 0);
    char *ctx = context(out);
    ASSERT_STR_EQ(ctx, "no local hits for: AlphaOne, BetaTwo, GammaThree");
    free(ctx);
    free(out);
    setenv("MNEMO_NUDGE_MAX_TERMS", "1", 1);
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ctx = context(out);
    ASSERT_STR_EQ(ctx, "no local hits for: AlphaOne");
    free(ctx);
    free(out);
    free(in);
}

TEST(nudge_cli_silent_without_candidates)
{
    workspace();
    char *in = input("Deploy the thing please");
    char *out;
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ASSERT_STR_EQ(out, "");
    free(out);
    free(in);
    /* Another event than UserPromptSubmit. */
    ASSERT_EQ(hook(&out, "{\"hook_event_name\":\"Stop\",\"prompt\":\"PaymentsAPI\"}", NULL), 0);
    ASSERT_STR_EQ(out, "");
    free(out);
}

TEST(nudge_cli_no_index)
{
    test_write("ws/MEMORY.md", memory_md);
    char *in = input("Where is PaymentsAPI hosted?");
    char *out, *err;
    ASSERT_EQ(test_cli(&out, &err, in, "--workspace", test_path("ws"), "--db",
                       test_path("none.sqlite"), "hook", "claude-code", NULL),
              0);
    ASSERT_STR_EQ(out, "");
    ASSERT_STR_EQ(err, "");
    struct stat st;
    ASSERT(stat(test_path("none.sqlite"), &st) != 0);
    ASSERT(stat(test_path("none.sqlite.lock"), &st) != 0);
    free(out);
    free(err);
    free(in);
}

TEST(nudge_cli_bad_input)
{
    workspace();
    static const char *const bad[] = {
        "",
        "not json",
        "{\"prompt\":\"PaymentsAPI\"",
        "[\"PaymentsAPI\"]",
        "\"PaymentsAPI\"",
        "{\"prompt\":42}",
        "{\"session_id\":\"x\"}",
        "{\"prompt\":\"PaymentsAPI\"} trailing",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *out;
        ASSERT_EQ(hook(&out, bad[i], NULL), 0);
        if (*out)
            test_fail(__FILE__, __LINE__, "output for input %zu: %s", i, out);
        free(out);
    }
    /* The same prompt works when the input is well formed... */
    char *out;
    ASSERT_EQ(hook(&out, "{\"prompt\":\"PaymentsAPI\"}", NULL), 0);
    ASSERT_CONTAINS(out, "MEMORY.md#L3");
    free(out);
    /* ...but not inside more than 1 MiB of input. */
    size_t pad = (1u << 20) + 100;
    char *big = malloc(pad + 64);
    int k = snprintf(big, 64, "{\"prompt\":\"PaymentsAPI ");
    memset(big + k, 'a', pad);
    snprintf(big + k + pad, 64, "\"}");
    ASSERT_EQ(hook(&out, big, NULL), 0);
    ASSERT_STR_EQ(out, "");
    free(out);
    free(big);
}

/* Holds the index locked, as a writer in exclusive locking mode does: a
 * reader then waits for the busy timeout (5 s by default). */
static sqlite3 *lock_index(void)
{
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open(test_path("db.sqlite"), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE", NULL, NULL, NULL),
              SQLITE_OK);
    return db;
}

static double elapsed_ms(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

TEST(nudge_cli_timeout)
{
    workspace();
    sqlite3 *db = lock_index();
    char *in = input("Where is PaymentsAPI hosted?");
    char *out;
    struct timespec t0;
    /* The lock holds the search up: with a 300 ms busy timeout and no
     * deadline to speak of, the hook gives up after those 300 ms... */
    setenv("MNEMO_BUSY_TIMEOUT_MS", "300", 1);
    setenv("MNEMO_NUDGE_TIMEOUT_MS", "60000", 1);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ASSERT_EQ(hook(&out, in, NULL), 0);
    double ms = elapsed_ms(&t0);
    ASSERT_STR_EQ(out, "");
    ASSERT(ms >= 290);
    free(out);
    /* ...and with the default 5 s busy timeout, the 100 ms deadline ends it. */
    unsetenv("MNEMO_BUSY_TIMEOUT_MS");
    setenv("MNEMO_NUDGE_TIMEOUT_MS", "100", 1);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ms = elapsed_ms(&t0);
    ASSERT_STR_EQ(out, "");
    ASSERT(ms >= 90 && ms < 3000); /* far below the 5 s wait, even on a loaded machine */
    free(out);
    free(in);
    sqlite3_close(db);
    /* Unlocked, the same run answers. */
    ASSERT_EQ(hook(&out, in = input("Where is PaymentsAPI hosted?"), NULL), 0);
    ASSERT_CONTAINS(out, "PaymentsAPI");
    free(out);
    free(in);
}

/* Names anywhere in the prompt: at its start, in Han script, and an issue
 * written inside a slug; a guess that memory lacks is not listed. With
 * MNEMO_NUDGE_DEBUG every step is named, the deadline too. */
TEST(nudge_cli_names_anywhere)
{
    workspace();
    test_write("ws/memory/2026-11-20.md", "# 2026-11-20\n\n- Reviewed acme/gateway#412 with "
                                          "Priya.\n- 王芳 owns the billing cutover.\n");
    ASSERT_EQ(test_cli(NULL, NULL, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "index", "--quiet", NULL),
              0);
    char *in = input("Priya wants an update on #412"), *out, *ctx;
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ctx = context(out);
    ASSERT_CONTAINS(ctx, "memory/2026-11-20.md#L1-L4 (Priya, #412): Reviewed acme/gateway#412 "
                         "with Priya.");
    ASSERT_NOT_CONTAINS(ctx, "no local hits");
    free(ctx);
    free(out);
    free(in);
    in = input("王芳负责什么？");
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ctx = context(out);
    ASSERT_CONTAINS(ctx, "memory/2026-11-20.md#L4-L4 (王芳): ");
    ASSERT_CONTAINS(ctx, "王芳 owns the billing cutover.");
    free(ctx);
    free(out);
    free(in);
    /* A guess found nowhere says nothing; a sure term does. */
    in = input("Quentin asked about ZanzibarQueue");
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ctx = context(out);
    ASSERT_STR_EQ(ctx, "no local hits for: ZanzibarQueue");
    free(ctx);
    free(out);
    free(in);

    setenv("MNEMO_NUDGE_DEBUG", "1", 1);
    char *err = NULL;
    in = input("Quentin asked about nothing");
    ASSERT_EQ(test_cli(&out, &err, in, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "hook", "claude-code", NULL),
              0);
    ASSERT_STR_EQ(out, "");
    ASSERT_CONTAINS(err, "candidates (patterns repo,issue,camel,caps,capital,katakana,han,start");
    ASSERT_CONTAINS(err, "Quentin [start, a guess]");
    ASSERT_CONTAINS(err, "search \"Quentin\": 0 hits (a guess: not said)");
    ASSERT_CONTAINS(err, "trigger recall off");
    ASSERT_CONTAINS(err, "memory recall off");
    ASSERT_CONTAINS(err, "nothing to say");
    free(out);
    free(err);
    /* The deadline, when it fires, says so. */
    sqlite3 *db = lock_index();
    setenv("MNEMO_NUDGE_TIMEOUT_MS", "100", 1);
    ASSERT_EQ(test_cli(&out, &err, in, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "hook", "claude-code", NULL),
              0);
    ASSERT_STR_EQ(out, "");
    ASSERT_CONTAINS(err, "the deadline (100 ms, MNEMO_NUDGE_TIMEOUT_MS) fired before an answer");
    sqlite3_close(db);
    unsetenv("MNEMO_NUDGE_TIMEOUT_MS");
    unsetenv("MNEMO_NUDGE_DEBUG");
    free(out);
    free(err);
    free(in);
}

TEST(nudge_cli_env_aliases)
{
    workspace();
    char *in = input("tell me about PaymentsAPI");
    char *out, *ctx;
    setenv("CK_RECALL_NUDGE_MAX_HITS", "1", 1);
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ctx = context(out);
    ASSERT_EQ(hit_lines(ctx), 1);
    free(ctx);
    free(out);
    /* MNEMO_ wins over the alias. */
    setenv("MNEMO_NUDGE_MAX_HITS", "3", 1);
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ctx = context(out);
    ASSERT_EQ(hit_lines(ctx), 3);
    free(ctx);
    free(out);
    /* A bad value is the default (5), not an error. */
    unsetenv("CK_RECALL_NUDGE_MAX_HITS");
    setenv("MNEMO_NUDGE_MAX_HITS", "lots", 1);
    setenv("MNEMO_NUDGE_TIMEOUT_MS", "-5", 1);
    setenv("MNEMO_NUDGE_MAX_TERMS", "0", 1);
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ctx = context(out);
    ASSERT_EQ(hit_lines(ctx), 5);
    free(ctx);
    free(out);
    unsetenv("MNEMO_NUDGE_MAX_HITS");
    unsetenv("MNEMO_NUDGE_TIMEOUT_MS");
    unsetenv("MNEMO_NUDGE_MAX_TERMS");
    free(in);
    /* CK_RECALL_NUDGE_TIMEOUT_MS and CK_RECALL_NUDGE_PATTERNS. */
    in = input("is ZanzibarQueue in ZULU?");
    setenv("CK_RECALL_NUDGE_PATTERNS", "caps", 1);
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ctx = context(out);
    ASSERT_STR_EQ(ctx, "no local hits for: ZULU");
    free(ctx);
    free(out);
    free(in);
    sqlite3 *db = lock_index();
    setenv("CK_RECALL_NUDGE_TIMEOUT_MS", "50", 1);
    in = input("is PaymentsAPI hosted?");
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ASSERT_EQ(hook(&out, in, NULL), 0); /* 5 s without the deadline */
    ASSERT(elapsed_ms(&t0) < 1000);
    ASSERT_STR_EQ(out, "");
    free(out);
    free(in);
    sqlite3_close(db);
}

TEST(nudge_cli_patterns_env)
{
    workspace();
    char *in = input("what is TICKET-42 about?");
    char *out, *ctx;
    /* By default only TICKET is a candidate (caps); this pattern keeps the number. */
    setenv("MNEMO_NUDGE_PATTERNS", "re:TICKET-[0-9]+", 1);
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ctx = context(out);
    ASSERT_CONTAINS(ctx, "MEMORY.md#L6-L6 (TICKET-42): TICKET-42 is the migration ticket.");
    free(ctx);
    free(out);
    free(in);
    /* A bad set falls back to the defaults. */
    setenv("MNEMO_NUDGE_PATTERNS", "bogus", 1);
    in = input("where is PaymentsAPI?");
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ctx = context(out);
    ASSERT_CONTAINS(ctx, "(PaymentsAPI)");
    free(ctx);
    free(out);
    free(in);
}

TEST(nudge_cli_workspace_from_cwd)
{
    test_write("ws/MEMORY.md", memory_md);
    test_mkdir("elsewhere");
    /* Indexed at its default place (under XDG_DATA_HOME), no --db. */
    ASSERT_EQ(test_cli(NULL, NULL, NULL, "--workspace", test_path("ws"), "index", "--quiet", NULL),
              0);
    char in[2048];
    snprintf(in, sizeof in, "{\"cwd\":\"%s\",\"prompt\":\"where is PaymentsAPI?\"}",
             test_path("ws"));
    char *out;
    ASSERT_EQ(test_cli(&out, NULL, in, "hook", "claude-code", NULL), 0);
    ASSERT_CONTAINS(out, "MEMORY.md#L3-L3 (PaymentsAPI)");
    free(out);
    /* A cwd without memory is not a workspace: the default (here: no index). */
    snprintf(in, sizeof in, "{\"cwd\":\"%s\",\"prompt\":\"where is PaymentsAPI?\"}",
             test_path("elsewhere"));
    ASSERT_EQ(test_cli(&out, NULL, in, "hook", "claude-code", NULL), 0);
    ASSERT_STR_EQ(out, "");
    free(out);
    /* --workspace wins over cwd. */
    snprintf(in, sizeof in, "{\"cwd\":\"%s\",\"prompt\":\"where is PaymentsAPI?\"}",
             test_path("ws"));
    ASSERT_EQ(test_cli(&out, NULL, in, "--workspace", test_path("elsewhere"), "hook",
                       "claude-code", NULL),
              0);
    ASSERT_STR_EQ(out, "");
    free(out);
}

TEST(nudge_cli_triggers_and_recall)
{
    workspace();
    char *in = input("the billing outage hit PaymentsAPI again");
    char *out, *ctx;
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ctx = context(out);
    ASSERT_NOT_CONTAINS(ctx, "Trigger recall");
    free(ctx);
    free(out);
    setenv("MNEMO_NUDGE_TRIGGERS", "1", 1);
    ASSERT_EQ(hook(&out, in, NULL), 0);
    ctx = context(out);
    ASSERT_CONTAINS(ctx, "Trigger recall:\n- TICKET-42 is the migration ticket.");
    ASSERT_CONTAINS(ctx, "(PaymentsAPI)");
    free(ctx);
    free(out);
    unsetenv("MNEMO_NUDGE_TRIGGERS");
    free(in);

    /* The recalled-memories block, with --recall. */
    ASSERT_EQ(test_cli(NULL, NULL, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "memory", "add", "Never deploy PaymentsAPI on Fridays",
                       "--category", "rule", NULL),
              0);
    in = input("can we deploy PaymentsAPI on friday?");
    ASSERT_EQ(test_cli(&out, NULL, in, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "hook", "claude-code", "--recall", NULL),
              0);
    ctx = context(out);
    ASSERT_CONTAINS(ctx, "<recalled-memories");
    ASSERT_CONTAINS(ctx, "Never deploy PaymentsAPI on Fridays");
    free(ctx);
    free(out);
    free(in);
}

TEST(nudge_cli_usage)
{
    char *err;
    /* Mistakes are reported, but exit 0: exit 2 would block the prompt. */
    char *out;
    ASSERT_EQ(test_cli(&out, &err, NULL, "hook", NULL), 0);
    ASSERT_CONTAINS(err, "mnemo hook claude-code");
    ASSERT_STR_EQ(out, "");
    free(err);
    free(out);
    ASSERT_EQ(test_cli(NULL, &err, NULL, "hook", "cursor", NULL), 0);
    ASSERT_CONTAINS(err, "unknown hook 'cursor'");
    free(err);
    ASSERT_EQ(test_cli(NULL, &err, NULL, "hook", "claude-code", "extra", NULL), 0);
    ASSERT_CONTAINS(err, "too many arguments");
    free(err);
    ASSERT_EQ(test_cli(&out, &err, "{\"prompt\":\"PaymentsAPI\"}", "hook", "claude-code",
                       "--bogus", NULL),
              0);
    ASSERT_CONTAINS(err, "bogus");
    ASSERT_STR_EQ(out, "");
    free(err);
    free(out);
    ASSERT_EQ(test_cli(&out, NULL, NULL, "hook", "--help", NULL), 0);
    ASSERT_CONTAINS(out, "MNEMO_NUDGE_TIMEOUT_MS");
    free(out);
}
