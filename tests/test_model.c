/*
 * test_model.c - static embedding tables: GloVe text (plain and gzip),
 * word2vec text and binary, model2vec folders (F32 and F16, WordPiece),
 * and damaged tables.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#include "embed/model.h"
#include "test.h"
#include "util/buf.h"

static const char glove[] = "the 0.1 0.1 0.1 0.1\n"
                            "car 1 0 0 0\n"
                            "automobile 0.95 0.1 0 0\n"
                            "kitten 0 1 0 0\n"
                            "cat 0.1 0.95 0 0\n"
                            "red 0 0 1 0\n"
                            "broken line 1 2\n"
                            "sleeps 0 0 0 1\n";

static model *open_table(const char *src, const char *dst)
{
    buf err;
    buf_init(&err, 0);
    size_t words = 0;
    int dims = 0;
    int rc = model_import(test_path(src), test_path(dst), 0, &err, &words, &dims);
    if (rc)
        test_fail(__FILE__, __LINE__, "import %s: %s", src, err.data);
    buf_cleanup(&err);
    model *m;
    buf_init(&err, 0);
    rc = model_open(test_path(dst), &m, &err);
    if (rc)
        test_fail(__FILE__, __LINE__, "open %s: %s", dst, err.data);
    buf_cleanup(&err);
    return m;
}

static float cosine_of(model *m, const char *a, const char *b)
{
    tok *t;
    ASSERT_OK(tok_new("none", 0, &t));
    float va[8], vb[8];
    model_embed(m, t, a, strlen(a), va);
    model_embed(m, t, b, strlen(b), vb);
    tok_free(t);
    float s = 0;
    for (int i = 0; i < model_dims(m); i++)
        s += va[i] * vb[i];
    return s;
}

TEST(model_glove_text_and_gzip)
{
    test_write("glove.txt", glove);
    gzFile gz = gzopen(test_path("glove.txt.gz"), "wb");
    gzwrite(gz, glove, (unsigned)strlen(glove));
    gzclose(gz);
    const char *srcs[] = {"glove.txt", "glove.txt.gz"};
    for (int i = 0; i < 2; i++) {
        model *m = open_table(srcs[i], "t.mnv");
        ASSERT_EQ(model_dims(m), 4);
        ASSERT_EQ(model_words(m), 7); /* the malformed line is skipped */
        tok *t;
        ASSERT_OK(tok_new("none", 0, &t));
        float v[4];
        ASSERT_EQ(model_embed(m, t, "Car!", 4, v), 1);
        ASSERT_NEAR(v[0], 1.0, 1e-6);
        ASSERT_EQ(model_embed(m, t, "zebra quagga", 12, v), 0);
        ASSERT_NEAR(v[0], 0, 0);
        /* Unit length with several words. */
        ASSERT_EQ(model_embed(m, t, "red car sleeps", 14, v), 3);
        ASSERT_NEAR(v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3], 1.0, 1e-5);
        tok_free(t);
        /* Paraphrases are close, unrelated words are not. */
        ASSERT(cosine_of(m, "my car", "the automobile") > 0.95);
        ASSERT(cosine_of(m, "my car", "the kitten") < 0.3);
        model_close(m);
    }
}

TEST(model_word2vec_text_and_binary)
{
    test_write("w2v.txt", "3 2\ncar 1 0\nkitten 0 1\ncat 0.1 0.9\n");
    model *m = open_table("w2v.txt", "a.mnv");
    ASSERT_EQ(model_words(m), 3);
    ASSERT_EQ(model_dims(m), 2);
    model_close(m);
    /* Binary: "count dims\n", then word, space, float32s (with and
     * without the newline some writers add). */
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "3 2\n");
    float v1[2] = {1, 0}, v2[2] = {0, 1}, v3[2] = {0.6f, 0.8f};
    buf_puts(&b, "car ");
    buf_append(&b, v1, sizeof v1);
    buf_puts(&b, "\nkitten ");
    buf_append(&b, v2, sizeof v2);
    buf_puts(&b, "cat ");
    buf_append(&b, v3, sizeof v3);
    test_write_n("w2v.bin", b.data, b.len);
    buf_cleanup(&b);
    m = open_table("w2v.bin", "b.mnv");
    ASSERT_EQ(model_words(m), 3);
    ASSERT_NEAR(cosine_of(m, "cat", "kitten"), 0.8, 1e-5);
    model_close(m);
    /* A truncated binary file is refused with a message. */
    test_write("bad.bin", "3 2\ncar \x01\x02");
    buf err;
    buf_init(&err, 0);
    ASSERT_EQ(model_import(test_path("bad.bin"), test_path("c.mnv"), 0, &err, NULL, NULL),
              MNEMO_INVALID);
    ASSERT_CONTAINS(err.data, "truncated");
    buf_cleanup(&err);
}

static uint16_t to_half(float f)
{
    /* Exact for the small dyadic values used here. */
    if (f == 0)
        return 0;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    uint32_t sign = (bits >> 16) & 0x8000, exp = ((bits >> 23) & 0xff) - 127 + 15,
             man = (bits >> 13) & 0x3ff;
    return (uint16_t)(sign | (exp << 10) | man);
}

static void write_model2vec(const char *dir, int f16)
{
    /* Vocabulary: WordPiece with ## continuations. */
    char rel[256];
    snprintf(rel, sizeof rel, "%s/tokenizer.json", dir);
    test_write(rel, "{\"model\":{\"type\":\"WordPiece\",\"continuing_subword_prefix\":\"##\","
                    "\"vocab\":{\"[UNK]\":0,\"car\":1,\"auto\":2,\"##mobile\":3,\"kit\":4,"
                    "\"##ten\":5}}}");
    float rows[6][4] = {{0, 0, 0, 0},   {1, 0, 0, 0},     {0.5f, 0.5f, 0, 0},
                        {1, 0, 0, 0.5f}, {0, 1, 0, 0},     {0, 1, 0.5f, 0}};
    buf b, h;
    buf_init(&b, 0);
    buf_init(&h, 0);
    size_t bytes = 6 * 4 * (f16 ? 2 : 4);
    buf_printf(&h, "{\"embeddings\":{\"dtype\":\"%s\",\"shape\":[6,4],\"data_offsets\":[0,%zu]}}",
               f16 ? "F16" : "F32", bytes);
    uint64_t hl = h.len;
    buf_append(&b, &hl, 8);
    buf_append(&b, h.data, h.len);
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 4; c++) {
            if (f16) {
                uint16_t x = to_half(rows[r][c]);
                buf_append(&b, &x, 2);
            } else {
                buf_append(&b, &rows[r][c], 4);
            }
        }
    snprintf(rel, sizeof rel, "%s/model.safetensors", dir);
    test_write_n(rel, b.data, b.len);
    buf_cleanup(&b);
    buf_cleanup(&h);
}

TEST(model_model2vec_folders)
{
    write_model2vec("m32", 0);
    write_model2vec("m16", 1);
    const char *dirs[] = {"m32", "m16"};
    for (int i = 0; i < 2; i++) {
        model *m = open_table(dirs[i], "m.mnv");
        ASSERT_EQ(model_dims(m), 4);
        tok *t;
        ASSERT_OK(tok_new("none", 0, &t));
        float v[4];
        /* "Automobile" = auto + ##mobile, mean-pooled and normalised. */
        ASSERT_EQ(model_embed(m, t, "Automobile!", 11, v), 2);
        float want[4] = {0.75f, 0.25f, 0, 0.25f};
        float norm = sqrtf(0.75f * 0.75f + 0.25f * 0.25f * 2);
        for (int d = 0; d < 4; d++)
            ASSERT_NEAR(v[d], want[d] / norm, 1e-3);
        /* Unknown words contribute nothing. */
        ASSERT_EQ(model_embed(m, t, "zzz kitten", 10, v), 2);
        tok_free(t);
        model_close(m);
    }
}

TEST(model_damaged_tables_refused)
{
    buf err;
    buf_init(&err, 0);
    model *m = NULL;
    test_write("junk.mnv", "MNEMOVEC but then nothing sensible at all, just text");
    ASSERT_EQ(model_open(test_path("junk.mnv"), &m, &err), MNEMO_CORRUPT);
    ASSERT_CONTAINS(err.data, "mnemo model import");
    buf_reset(&err);
    ASSERT_EQ(model_open(test_path("missing.mnv"), &m, &err), MNEMO_NOTFOUND);
    /* A valid table cut short. */
    test_write("glove.txt", glove);
    ASSERT_OK(model_import(test_path("glove.txt"), test_path("ok.mnv"), 0, &err, NULL, NULL));
    size_t len;
    char *data = test_read(test_path("ok.mnv"), &len);
    test_write_n("cut.mnv", data, len - 20);
    free(data);
    ASSERT_EQ(model_open(test_path("cut.mnv"), &m, &err), MNEMO_CORRUPT);
    ASSERT(m == NULL);
    buf_cleanup(&err);
}
