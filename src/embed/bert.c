/*
 * bert.c - the BERT encoder (see bert.h).
 *
 * Per layer, over T tokens of hidden size H: Q, K, V = x Wq^T + bq, ...;
 * per text and head, softmax(Q K^T / sqrt(H / heads)) V; x = LN(x + ctx
 * Wo^T + bo); x = LN(x + GELU(x Wi^T + bi) Wo2^T + bo2). The embeddings
 * before it are word + position + token type 0, layer-normalised.
 */
#include "embed/bert.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embed/gemm.h"
#include "embed/gemma.h"
#include "embed/gguf.h"
#include "embed/safetensors.h"
#include "embed/tpool.h"
#include "embed/unigram.h"
#include "embed/wordpiece.h"
#include "mnemo.h"

#define MAX_PROMPT 512

typedef struct layer {
    const float *q, *qb, *k, *kb, *v, *vb, *o, *ob, *g1, *b1, *i, *ib, *o2, *o2b, *g2, *b2;
    gemm_w wq, wk, wv, wo, wi, wo2; /* the six matrices, prepared for the kernel */
} layer;

struct bert {
    gemma *gm;       /* an EmbeddingGemma GGUF: everything is gemma.h's */
    safetensors *st; /* the weights: a safetensors file */
    gguf *gg;        /* or a GGUF file */
    wordpiece *wp; /* the tokenizer: WordPiece (BERT) */
    unigram *ug;   /* or Unigram (XLM-RoBERTa) */
    int H, L, heads, I, maxpos, types, vocab, max_tokens, cls_pool;
    int pos0, pad; /* the first position id; the padding id */
    float eps;
    const float *wemb, *pemb, *temb, *eg, *eb;
    layer *layers;
    char qprompt[MAX_PROMPT], dprompt[MAX_PROMPT];
    int threads;
    tpool pool;
    void *cmap; /* the prepared file, mapped (see below), or NULL */
    size_t csize;
    const float *mats; /* its panels */
    const int8_t *q8;  /* its int8 panels and their scales (version 2), or NULL */
    const float *q8s;
    char fp[17];       /* the weights' fingerprint */
};

/* ----------------------------------------------------------------------
 * The prepared file (CACHE_NAME in an imported model folder), written by
 * bert_install and mapped at open so that nothing is parsed or packed
 * then: the tokenizer as a blob (wordpiece.h) and every layer's six
 * matrices as panels (gemm_pack), then (version 3) the same as int8 panels
 * and their scales and sums (gemm_quantize_to), each section 64-aligned. It names the
 * size and modification time of the weights and tokenizer files it was
 * made from; a file that does not match them, or does not hold together,
 * is ignored (the folder is then read as it is).
 * -------------------------------------------------------------------- */

#define CACHE_NAME "mnemo-encoder.bin"
#define CACHE_MAGIC "MNEMOENC"
#define CACHE_VERSION 3 /* 1 and 2 read too: float panels only (2's int8
                          * panels had another layout) */

typedef struct cache_hdr {
    char magic[8];
    uint32_t version, panel, L, H, I, tokenizer; /* 0 WordPiece, 1 Unigram */
    uint64_t w_size, w_mtime, t_size, t_mtime;
    uint64_t wp_off, wp_bytes, mats_off, mats_floats;
    /* version 2 on; a version 1 file has zeros here (its padding) */
    uint64_t q8_off, q8_bytes, qs_off, qs_floats;
} cache_hdr;

static uint64_t up64(uint64_t x) { return (x + 63) & ~(uint64_t)63; }

/* The identity of DIR's weights and tokenizer files. */
static void sources(const char *dir, uint64_t *ss, uint64_t *sm, uint64_t *ts, uint64_t *tm)
{
    char p[4096];
    struct stat sb;
    *ss = *sm = *ts = *tm = 0;
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    if (stat(p, &sb) != 0)
        snprintf(p, sizeof p, "%s/model.gguf", dir);
    if (stat(p, &sb) == 0) {
        *ss = (uint64_t)sb.st_size;
        *sm = (uint64_t)sb.st_mtim.tv_sec * 1000000000u + (uint64_t)sb.st_mtim.tv_nsec;
    }
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    if (stat(p, &sb) != 0) {
        snprintf(p, sizeof p, "%s/vocab.txt", dir);
        if (stat(p, &sb) != 0)
            return;
    }
    *ts = (uint64_t)sb.st_size;
    *tm = (uint64_t)sb.st_mtim.tv_sec * 1000000000u + (uint64_t)sb.st_mtim.tv_nsec;
}

static size_t mats_floats(const bert *b)
{
    return (size_t)b->L * (4 * gemm_packed_floats(b->H, b->H) + gemm_packed_floats(b->I, b->H) +
                           gemm_packed_floats(b->H, b->I));
}

static size_t q8_bytes(const bert *b)
{
    return (size_t)b->L * (4 * gemm_q8_bytes(b->H, b->H) + gemm_q8_bytes(b->I, b->H) +
                           gemm_q8_bytes(b->H, b->I));
}

static size_t scales_floats(const bert *b)
{
    return (size_t)b->L * (5 * gemm_q8_meta(b->H) + gemm_q8_meta(b->I));
}

/* Maps DIR's prepared file when it matches the folder (B's sizes read). */
static void cache_map(bert *b, const char *dir)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/" CACHE_NAME, dir);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat sb;
    void *m = NULL;
    if (fstat(fd, &sb) == 0 && (size_t)sb.st_size >= sizeof(cache_hdr))
        m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (!m || m == MAP_FAILED)
        return;
    cache_hdr h;
    memcpy(&h, m, sizeof h);
    uint64_t ss, sm, ts, tm, size = (uint64_t)sb.st_size;
    sources(dir, &ss, &sm, &ts, &tm);
    int ok = !memcmp(h.magic, CACHE_MAGIC, 8) && h.version >= 1 && h.version <= 3 &&
             h.panel == 16 &&
             h.L == (uint32_t)b->L && h.H == (uint32_t)b->H && h.I == (uint32_t)b->I &&
             h.w_size == ss && h.w_mtime == sm && h.t_size == ts && h.t_mtime == tm &&
             h.mats_floats == mats_floats(b) && h.wp_off % 64 == 0 && h.mats_off % 64 == 0 &&
             h.wp_off <= size && h.wp_bytes <= size - h.wp_off && h.mats_off <= size &&
             h.mats_floats <= (size - h.mats_off) / 4;
    const char *tb = (const char *)m + h.wp_off;
    if (ok && (h.tokenizer == 1 ? ug_from_blob(tb, (size_t)h.wp_bytes, &b->ug)
               : h.tokenizer == 0 ? wp_from_blob(tb, (size_t)h.wp_bytes, &b->wp)
                                  : MNEMO_CORRUPT) == MNEMO_OK) {
        b->cmap = m;
        b->csize = (size_t)size;
        b->mats = (const float *)(const void *)((const char *)m + h.mats_off);
        if (h.version >= 3 && h.q8_bytes == q8_bytes(b) && h.qs_floats == scales_floats(b) &&
            h.q8_off % 64 == 0 && h.qs_off % 64 == 0 && h.q8_off <= size &&
            h.q8_bytes <= size - h.q8_off && h.qs_off <= size &&
            h.qs_floats <= (size - h.qs_off) / 4) {
            b->q8 = (const int8_t *)m + h.q8_off;
            b->q8s = (const float *)(const void *)((const char *)m + h.qs_off);
        }
        return;
    }
    munmap(m, (size_t)size);
}

/* Writes B's prepared file into DIR (beside, then renamed). */
static int cache_write(const bert *b, const char *dir, buf *err)
{
    buf wpb;
    buf_init(&wpb, 0);
    int rc = b->ug ? ug_to_blob(b->ug, &wpb) : wp_to_blob(b->wp, &wpb);
    if (rc)
        return rc;
    cache_hdr h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, CACHE_MAGIC, 8);
    h.version = CACHE_VERSION;
    h.panel = 16;
    h.L = (uint32_t)b->L;
    h.H = (uint32_t)b->H;
    h.I = (uint32_t)b->I;
    h.tokenizer = b->ug ? 1 : 0;
    sources(dir, &h.w_size, &h.w_mtime, &h.t_size, &h.t_mtime);
    h.wp_off = up64(sizeof h);
    h.wp_bytes = wpb.len;
    h.mats_off = up64(h.wp_off + wpb.len);
    h.mats_floats = mats_floats(b);
    h.q8_off = up64(h.mats_off + h.mats_floats * 4);
    h.q8_bytes = q8_bytes(b);
    h.qs_off = up64(h.q8_off + h.q8_bytes);
    h.qs_floats = scales_floats(b);
    char p[8192], tmp[8300];
    snprintf(p, sizeof p, "%s/" CACHE_NAME, dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    FILE *f = fopen(tmp, "wb");
    size_t most = gemm_packed_floats(b->I > b->H ? b->I : b->H, b->I > b->H ? b->I : b->H);
    float *panel = malloc(most * sizeof *panel), *qs = malloc(scales_floats(b) * sizeof *qs);
    static const char zero[64] = {0};
    int ok = f && panel && qs && fwrite(&h, sizeof h, 1, f) == 1 &&
             fwrite(zero, 1, h.wp_off - sizeof h, f) == h.wp_off - sizeof h &&
             fwrite(wpb.data, 1, wpb.len, f) == wpb.len &&
             fwrite(zero, 1, h.mats_off - h.wp_off - wpb.len, f) == h.mats_off - h.wp_off - wpb.len;
    /* Every layer's six matrices, in order: as float panels, then (at
     * q8 == 1) as int8 panels (in PANEL's room), then their scales and sums. */
    size_t nqs = 0;
    uint64_t at = h.mats_off + h.mats_floats * 4;
    for (int q8 = 0; q8 < 2; q8++) {
        if (q8)
            ok = ok && fwrite(zero, 1, h.q8_off - at, f) == h.q8_off - at;
        for (int l = 0; ok && l < b->L; l++) {
            const layer *y = &b->layers[l];
            const float *ws[6] = {y->q, y->k, y->v, y->o, y->i, y->o2};
            int ns[6] = {b->H, b->H, b->H, b->H, b->I, b->H};
            int ks[6] = {b->H, b->H, b->H, b->H, b->H, b->I};
            for (int j = 0; ok && j < 6; j++) {
                size_t nf = gemm_packed_floats(ns[j], ks[j]);
                if (q8) {
                    size_t nb = gemm_q8_bytes(ns[j], ks[j]);
                    gemm_quantize_to(ws[j], ns[j], ks[j], (int8_t *)panel, qs + nqs);
                    nqs += gemm_q8_meta(ns[j]);
                    ok = fwrite(panel, 1, nb, f) == nb;
                } else {
                    gemm_pack(ws[j], ns[j], ks[j], panel);
                    ok = fwrite(panel, sizeof *panel, nf, f) == nf;
                }
            }
        }
    }
    at = h.q8_off + h.q8_bytes;
    ok = ok && fwrite(zero, 1, h.qs_off - at, f) == h.qs_off - at &&
         fwrite(qs, sizeof *qs, nqs, f) == nqs;
    if (f && (fflush(f) != 0 || fsync(fileno(f)) != 0))
        ok = 0;
    if (f && fclose(f) != 0)
        ok = 0;
    free(panel);
    free(qs);
    buf_cleanup(&wpb);
    if (!ok || rename(tmp, p) != 0) {
        buf_printf(err, "%s: %s", p, strerror(errno ? errno : EIO));
        unlink(tmp);
        return MNEMO_IO;
    }
    return MNEMO_OK;
}

/* The prepared file of B's kind into DIR. */
static int prepare_write(const bert *b, const char *dir, buf *err)
{
    return b->gm ? gemma_prepare_write(b->gm, dir, err) : cache_write(b, dir, err);
}

/* ----------------------------------------------------------------------
 * Loading
 * -------------------------------------------------------------------- */

static json_t *load_json(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return json_load_file(path, 0, NULL);
}

static int jint(json_t *c, const char *k, int dflt)
{
    json_t *v = json_object_get(c, k);
    return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

/* The GGUF name (llama.cpp's "bert" layout) of the Hugging Face tensor
 * HF: "encoder.layer.3.attention.self.query.weight" is
 * "blk.3.attn_q.weight". */
static void gguf_name(const char *hf, char *out, size_t n)
{
    static const char *const map[][2] = {
        {"embeddings.word_embeddings.", "token_embd."},
        {"embeddings.position_embeddings.", "position_embd."},
        {"embeddings.token_type_embeddings.", "token_types."},
        {"embeddings.LayerNorm.", "token_embd_norm."},
        {"attention.self.query.", "attn_q."},
        {"attention.self.key.", "attn_k."},
        {"attention.self.value.", "attn_v."},
        {"attention.output.dense.", "attn_output."},
        {"attention.output.LayerNorm.", "attn_output_norm."},
        {"intermediate.dense.", "ffn_up."},
        {"output.dense.", "ffn_down."},
        {"output.LayerNorm.", "layer_output_norm."},
    };
    char blk[32] = "";
    int li, used = 0;
    if (sscanf(hf, "encoder.layer.%d.%n", &li, &used) == 1 && used > 0) {
        snprintf(blk, sizeof blk, "blk.%d.", li);
        hf += used;
    }
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        size_t l = strlen(map[i][0]);
        if (!strncmp(hf, map[i][0], l)) {
            snprintf(out, n, "%s%s%s", blk, map[i][1], hf + l);
            return;
        }
    }
    snprintf(out, n, "%s%s", blk, hf);
}

/* Tensor PREFIX + NAME with the shape wanted (D1 = 0: one dimension). */
static const float *tensor(bert *b, const char *prefix, const char *name, int64_t d0, int64_t d1,
                           buf *err)
{
    char full[256];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    int64_t shape[4] = {0};
    int nd = 0;
    const float *t;
    if (b->gg) {
        char gn[512]; /* room for any name FULL maps to */
        gguf_name(full, gn, sizeof gn);
        t = gguf_f32(b->gg, gn, shape, &nd, err);
    } else {
        t = st_f32(b->st, full, shape, &nd, err);
    }
    if (!t)
        return NULL;
    if ((d1 == 0 && (nd != 1 || shape[0] != d0)) || (d1 > 0 && (nd != 2 || shape[0] != d0 ||
                                                                 shape[1] != d1))) {
        buf_printf(err, "tensor %s: shape does not match config.json", full);
        return NULL;
    }
    return t;
}

static void copy_prompt(char *dst, json_t *v)
{
    const char *s = json_string_value(v);
    snprintf(dst, MAX_PROMPT, "%s", s ? s : "");
}

/* Pooling, maximum length and prompts from the sentence-transformers
 * files, with the known defaults of model families that ship none. */
static void sentence_config(bert *b, const char *dir)
{
    json_t *pool = load_json(dir, "1_Pooling/config.json");
    b->cls_pool = json_is_true(json_object_get(pool, "pooling_mode_cls_token")) &&
                  !json_is_true(json_object_get(pool, "pooling_mode_mean_tokens"));
    json_decref(pool);
    json_t *sb = load_json(dir, "sentence_bert_config.json");
    int msl = jint(sb, "max_seq_length", 0);
    json_decref(sb);
    int most = b->maxpos - b->pos0;
    b->max_tokens = msl > 0 && msl <= most ? msl : most;
    json_t *st = load_json(dir, "config_sentence_transformers.json");
    json_t *pr = json_object_get(st, "prompts");
    copy_prompt(b->qprompt, json_object_get(pr, "query"));
    json_t *d = json_object_get(pr, "document");
    copy_prompt(b->dprompt, d ? d : json_object_get(pr, "passage"));
    json_decref(st);
}

/* The sizes of B from DIR/config.json. */
static int json_config(bert *b, const char *dir, buf *err)
{
    json_t *c = load_json(dir, "config.json");
    if (!c) {
        buf_printf(err, "%s: no config.json or model.gguf (not a model folder)", dir);
        return MNEMO_NOTFOUND;
    }
    int rc = MNEMO_OK;
    const char *type = json_string_value(json_object_get(c, "model_type"));
    const char *act = json_string_value(json_object_get(c, "hidden_act"));
    const char *pet = json_string_value(json_object_get(c, "position_embedding_type"));
    b->H = jint(c, "hidden_size", 0);
    b->L = jint(c, "num_hidden_layers", 0);
    b->heads = jint(c, "num_attention_heads", 0);
    b->I = jint(c, "intermediate_size", 0);
    b->maxpos = jint(c, "max_position_embeddings", 512);
    b->types = jint(c, "type_vocab_size", 2);
    b->vocab = jint(c, "vocab_size", 0);
    int xlmr = type && !strcmp(type, "xlm-roberta");
    b->pad = jint(c, "pad_token_id", xlmr ? 1 : 0);
    /* RoBERTa counts positions from the padding id + 1. */
    b->pos0 = xlmr ? b->pad + 1 : 0;
    json_t *eps = json_object_get(c, "layer_norm_eps");
    b->eps = json_is_number(eps) ? (float)json_number_value(eps) : 1e-12f;
    if (!type || (strcmp(type, "bert") && !xlmr)) {
        buf_printf(err, "%s: model_type %s is not supported (bert and xlm-roberta are)", dir,
                   type ? type : "none");
        rc = MNEMO_INVALID;
    } else if ((act && strcmp(act, "gelu")) || (pet && strcmp(pet, "absolute"))) {
        buf_printf(err, "%s: hidden_act %s / position_embedding_type %s not supported", dir,
                   act ? act : "-", pet ? pet : "-");
        rc = MNEMO_INVALID;
    }
    json_decref(c);
    return rc;
}

/* The GGUF file of DIR: DIR itself when it is a file, else DIR/model.gguf
 * when the folder has no config.json. */
static int gguf_file(const char *dir, char *out, size_t n)
{
    struct stat sb;
    if (stat(dir, &sb) == 0 && S_ISREG(sb.st_mode)) {
        snprintf(out, n, "%s", dir);
        return 1;
    }
    snprintf(out, n, "%s/config.json", dir);
    if (stat(out, &sb) == 0)
        return 0;
    snprintf(out, n, "%s/model.gguf", dir);
    return stat(out, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The sizes of B from its GGUF file's metadata (llama.cpp's "bert"
 * layout). */
static int gguf_config(bert *b, const char *path, int threads, buf *err)
{
    int rc = gguf_open(path, &b->gg, err);
    if (rc)
        return rc;
    if (gemma_is(b->gg)) {
        gguf *g = b->gg;
        b->gg = NULL;
        buf e;
        buf_init(&e, 4096);
        if ((rc = gemma_open(g, path, threads, &b->gm, &e)))
            buf_printf(err, "%s: %s", path, e.data ? e.data : "cannot be opened");
        buf_cleanup(&e);
        return rc;
    }
    char arch[64] = "";
    gguf_str(b->gg, "general.architecture", arch, sizeof arch);
    if (strcmp(arch, "bert")) {
        buf_printf(err, "%s: GGUF architecture %s is not supported (bert and gemma-embedding are)", path,
                   *arch ? arch : "none");
        return MNEMO_INVALID;
    }
    b->H = (int)gguf_int(b->gg, "bert.embedding_length", 0);
    b->L = (int)gguf_int(b->gg, "bert.block_count", 0);
    b->heads = (int)gguf_int(b->gg, "bert.attention.head_count", 0);
    b->I = (int)gguf_int(b->gg, "bert.feed_forward_length", 0);
    b->maxpos = (int)gguf_int(b->gg, "bert.context_length", 512);
    b->eps = (float)gguf_num(b->gg, "bert.attention.layer_norm_epsilon", 1e-12);
    b->pad = (int)gguf_int(b->gg, "tokenizer.ggml.padding_token_id", 0);
    int64_t shape[4] = {0};
    int nd = 0;
    const float *tt = gguf_f32(b->gg, "token_types.weight", shape, &nd, err);
    b->types = tt && nd == 2 ? (int)shape[0] : 0;
    if (gguf_f32(b->gg, "token_embd.weight", shape, &nd, err) && nd == 2)
        b->vocab = (int)shape[0];
    return MNEMO_OK;
}

/* A WordPiece vocabulary as llama.cpp stores it: a word start marked by a
 * leading U+2581, a continuation bare, specials ("[CLS]") as they are;
 * [CLS] is its BOS token. */
static int gguf_tokenizer(bert *b, const char *path, buf *err)
{
    char model[32] = "";
    gguf_str(b->gg, "tokenizer.ggml.model", model, sizeof model);
    const char **p = NULL;
    size_t *l = NULL;
    long n = strcmp(model, "bert") ? -1 : gguf_strings(b->gg, "tokenizer.ggml.tokens", &p, &l);
    if (n <= 0) {
        free(p);
        free(l);
        buf_printf(err, "%s: tokenizer %s is not supported (bert's WordPiece is)", path,
                   *model ? model : "none");
        return MNEMO_INVALID;
    }
    char **toks = calloc((size_t)n, sizeof *toks);
    int rc = toks ? MNEMO_OK : MNEMO_NOMEM;
    for (long i = 0; !rc && i < n; i++) {
        const char *t = p[i];
        size_t len = l[i];
        int mark = len >= 3 && !memcmp(t, "\xe2\x96\x81", 3);
        int special = len >= 2 && t[0] == '[' && t[len - 1] == ']';
        if (!(toks[i] = malloc(len + 3)))
            rc = MNEMO_NOMEM;
        else if (mark)
            snprintf(toks[i], len + 3, "%.*s", (int)(len - 3), t + 3);
        else if (special)
            snprintf(toks[i], len + 3, "%.*s", (int)len, t);
        else
            snprintf(toks[i], len + 3, "##%.*s", (int)len, t);
    }
    if (!rc)
        rc = wp_from_list((const char *const *)toks, (size_t)n, 1,
                          (int32_t)gguf_int(b->gg, "tokenizer.ggml.unknown_token_id", -1),
                          (int32_t)gguf_int(b->gg, "tokenizer.ggml.bos_token_id",
                                            gguf_int(b->gg, "tokenizer.ggml.cls_token_id", -1)),
                          (int32_t)gguf_int(b->gg, "tokenizer.ggml.seperator_token_id", -1),
                          &b->wp);
    for (long i = 0; toks && i < n; i++)
        free(toks[i]);
    free(toks);
    free(p);
    free(l);
    if (rc == MNEMO_INVALID)
        buf_printf(err, "%s: the vocabulary lacks [CLS], [SEP] or [UNK]", path);
    return rc;
}

int bert_open(const char *dir, int threads, bert **out, buf *err)
{
    *out = NULL;
    bert *b = calloc(1, sizeof *b);
    if (!b)
        return MNEMO_NOMEM;
    char path[4096];
    int is_gguf = gguf_file(dir, path, sizeof path);
    int rc = is_gguf ? gguf_config(b, path, threads, err) : json_config(b, dir, err);
    if (!rc && b->gm) {
        *out = b;
        return MNEMO_OK;
    }
    if (!rc && (b->H <= 0 || b->H > 8192 || b->L <= 0 || b->L > 128 || b->heads <= 0 ||
                b->H % b->heads || b->I <= 0 || b->I > 65536 || b->maxpos < 3 ||
                b->maxpos > 32768 || b->types < 1 || b->vocab <= 0 || b->pad < 0 ||
                b->pad >= b->vocab || b->pos0 > b->maxpos - 3)) {
        buf_printf(err, "%s: %s: sizes missing or out of range", dir,
                   is_gguf ? "GGUF metadata" : "config.json");
        rc = MNEMO_INVALID;
    }
    if (rc)
        goto fail;
    if (is_gguf) {
        gguf_fingerprint(b->gg, b->fp);
    } else {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        if ((rc = st_open(path, &b->st, err)))
            goto fail;
        st_fingerprint(b->st, b->fp);
    }
    cache_map(b, dir);
    if (is_gguf && !b->wp && (rc = gguf_tokenizer(b, dir, err)))
        goto fail;
    if (!b->wp && !b->ug) {
        snprintf(path, sizeof path, "%s/tokenizer.json", dir);
        if ((rc = ug_load(path, &b->ug, err)) == MNEMO_NOTFOUND)
            rc = wp_load(dir, &b->wp, err);
        if (rc)
            goto fail;
    }
    sentence_config(b, dir);
    if (b->gg) {
        /* llama.cpp's pooling types: 1 mean, 2 CLS. */
        int64_t pt = gguf_int(b->gg, "bert.pooling_type", 1);
        if (pt != 1 && pt != 2) {
            buf_printf(err, "%s: GGUF pooling type %lld is not supported (mean or CLS)", dir,
                       (long long)pt);
            rc = MNEMO_INVALID;
            goto fail;
        }
        b->cls_pool = pt == 2;
    }
    const char *pfx = b->gg || st_has(b->st, "embeddings.word_embeddings.weight") ? ""
                      : st_has(b->st, "bert.embeddings.word_embeddings.weight")    ? "bert."
                      : st_has(b->st, "roberta.embeddings.word_embeddings.weight") ? "roberta."
                                                                                   : "model.";
    int H = b->H, I = b->I;
    rc = MNEMO_CORRUPT;
    if (!(b->wemb = tensor(b, pfx, "embeddings.word_embeddings.weight", b->vocab, H, err)) ||
        !(b->pemb = tensor(b, pfx, "embeddings.position_embeddings.weight", b->maxpos, H, err)) ||
        !(b->temb = tensor(b, pfx, "embeddings.token_type_embeddings.weight", b->types, H, err)) ||
        !(b->eg = tensor(b, pfx, "embeddings.LayerNorm.weight", H, 0, err)) ||
        !(b->eb = tensor(b, pfx, "embeddings.LayerNorm.bias", H, 0, err)))
        goto fail;
    if (!(b->layers = calloc((size_t)b->L, sizeof *b->layers))) {
        rc = MNEMO_NOMEM;
        goto fail;
    }
    for (int l = 0; l < b->L; l++) {
        layer *y = &b->layers[l];
        char p[96];
        snprintf(p, sizeof p, "%sencoder.layer.%d.", pfx, l);
#define T(field, name, d0, d1)                                                                 \
    if (!(y->field = tensor(b, p, name, d0, d1, err)))                                         \
        goto fail;
        T(q, "attention.self.query.weight", H, H)
        T(qb, "attention.self.query.bias", H, 0)
        T(k, "attention.self.key.weight", H, H)
        T(kb, "attention.self.key.bias", H, 0)
        T(v, "attention.self.value.weight", H, H)
        T(vb, "attention.self.value.bias", H, 0)
        T(o, "attention.output.dense.weight", H, H)
        T(ob, "attention.output.dense.bias", H, 0)
        T(g1, "attention.output.LayerNorm.weight", H, 0)
        T(b1, "attention.output.LayerNorm.bias", H, 0)
        T(i, "intermediate.dense.weight", I, H)
        T(ib, "intermediate.dense.bias", I, 0)
        T(o2, "output.dense.weight", H, I)
        T(o2b, "output.dense.bias", H, 0)
        T(g2, "output.LayerNorm.weight", H, 0)
        T(b2, "output.LayerNorm.bias", H, 0)
#undef T
        if (b->mats) {
            /* The panels of the prepared file, in the same order. */
            const float *m = b->mats + (size_t)l * (4 * gemm_packed_floats(H, H) +
                                                    gemm_packed_floats(I, H) +
                                                    gemm_packed_floats(H, I));
            size_t hh = gemm_packed_floats(H, H);
            gemm_prepare_packed(&y->wq, y->q, m, H, H);
            gemm_prepare_packed(&y->wk, y->k, m + hh, H, H);
            gemm_prepare_packed(&y->wv, y->v, m + 2 * hh, H, H);
            gemm_prepare_packed(&y->wo, y->o, m + 3 * hh, H, H);
            gemm_prepare_packed(&y->wi, y->i, m + 4 * hh, I, H);
            gemm_prepare_packed(&y->wo2, y->o2, m + 4 * hh + gemm_packed_floats(I, H), H, I);
        } else if (gemm_prepare(&y->wq, y->q, H, H) || gemm_prepare(&y->wk, y->k, H, H) ||
                   gemm_prepare(&y->wv, y->v, H, H) || gemm_prepare(&y->wo, y->o, H, H) ||
                   gemm_prepare(&y->wi, y->i, I, H) || gemm_prepare(&y->wo2, y->o2, H, I)) {
            rc = MNEMO_NOMEM;
            goto fail;
        }
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    b->threads = threads > 0 ? threads : ncpu > 0 ? (int)ncpu : 1;
    if (b->threads > 64)
        b->threads = 64;
    *out = b;
    return MNEMO_OK;
fail:
    bert_close(b);
    return rc ? rc : MNEMO_CORRUPT;
}

int bert_is_model(const char *dir)
{
    char path[4096];
    if (gguf_file(dir, path, sizeof path)) {
        gguf *g = NULL;
        buf err;
        buf_init(&err, 1024);
        char arch[64] = "";
        if (gguf_open(path, &g, &err) == MNEMO_OK)
            gguf_str(g, "general.architecture", arch, sizeof arch);
        gguf_close(g);
        buf_cleanup(&err);
        return *arch != 0; /* any GGUF model: bert_open says what it lacks */
    }
    json_t *c = load_json(dir, "config.json");
    const char *type = json_string_value(json_object_get(c, "model_type"));
    int yes = type && (!strcmp(type, "bert") || !strcmp(type, "xlm-roberta"));
    json_decref(c);
    return yes;
}

/* The files of a model folder that the encoder reads. */
static const char *const model_files[] = {
    "config.json", "model.safetensors", "tokenizer.json", "vocab.txt", "tokenizer_config.json",
    "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json",
    "1_Pooling/config.json", "model.gguf", NULL};

const char *const *bert_model_files(void) { return model_files; }

static int copy_file(const char *from, const char *to)
{
    if (link(from, to) == 0)
        return 0;
    int in = open(from, O_RDONLY | O_CLOEXEC), rc = -1;
    if (in < 0)
        return -1;
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out >= 0) {
        char blk[1 << 16];
        ssize_t n;
        rc = 0;
        while ((n = read(in, blk, sizeof blk)) > 0)
            for (ssize_t o = 0; o < n;) {
                ssize_t w = write(out, blk + o, (size_t)(n - o));
                if (w <= 0) {
                    rc = -1;
                    break;
                }
                o += w;
            }
        if (n < 0 || fsync(out) != 0)
            rc = -1;
        if (close(out) != 0)
            rc = -1;
    }
    close(in);
    return rc;
}

static void remove_tree(const char *dir)
{
    char p[8192];
    for (int i = 0; model_files[i]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, model_files[i]);
        unlink(p);
    }
    snprintf(p, sizeof p, "%s/" CACHE_NAME, dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/1_Pooling", dir);
    rmdir(p);
    rmdir(dir);
}

int bert_install(const char *src, const char *dst, int *dims, buf *err)
{
    bert *b = NULL;
    int rc = bert_open(src, 1, &b, err);
    if (rc)
        return rc;
    *dims = bert_dims(b);
    bert_close(b);
    struct stat sb;
    if (stat(dst, &sb) == 0) {
        /* The imported folder itself: its prepared file made again (after
         * an upgrade changed the format, say), replaced in one rename. */
        char *a = realpath(src, NULL), *d = realpath(dst, NULL);
        int same = a && d && !strcmp(a, d);
        free(a);
        free(d);
        if (!same) {
            buf_printf(err, "%s exists already (remove it, import under another --name, or "
                       "import it onto itself to prepare it again)", dst);
            return MNEMO_INVALID;
        }
        if (!(rc = bert_open(dst, 1, &b, err)))
            rc = prepare_write(b, dst, err);
        bert_close(b);
        return rc;
    }
    char tmp[4096], from[8192], to[8192];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", dst, (long)getpid());
    remove_tree(tmp);
    snprintf(to, sizeof to, "%s/1_Pooling", tmp);
    if (mkdir(tmp, 0755) != 0 || mkdir(to, 0755) != 0) {
        buf_printf(err, "%s: %s", tmp, strerror(errno));
        rmdir(tmp);
        return MNEMO_IO;
    }
    int single = stat(src, &sb) == 0 && S_ISREG(sb.st_mode); /* a GGUF file */
    for (int i = 0; model_files[i]; i++) {
        if (single && strcmp(model_files[i], "model.gguf"))
            continue;
        if (single)
            snprintf(from, sizeof from, "%s", src);
        else
            snprintf(from, sizeof from, "%s/%s", src, model_files[i]);
        snprintf(to, sizeof to, "%s/%s", tmp, model_files[i]);
        if (stat(from, &sb) != 0)
            continue; /* optional file */
        if (copy_file(from, to) != 0) {
            buf_printf(err, "copying %s: %s", from, strerror(errno));
            remove_tree(tmp);
            return MNEMO_IO;
        }
    }
    /* The prepared file, then a check that the copy opens with it. */
    if ((rc = bert_open(tmp, 1, &b, err)) || (rc = prepare_write(b, tmp, err))) {
        bert_close(b);
        remove_tree(tmp);
        return rc;
    }
    bert_close(b);
    if ((rc = bert_open(tmp, 1, &b, err)) || !bert_prepared(b)) {
        if (!rc)
            buf_printf(err, "%s: the prepared file does not open", tmp);
        bert_close(b);
        remove_tree(tmp);
        return rc ? rc : MNEMO_IO;
    }
    bert_close(b);
    if (rename(tmp, dst) != 0) {
        buf_printf(err, "%s: %s", dst, strerror(errno));
        remove_tree(tmp);
        return MNEMO_IO;
    }
    return MNEMO_OK;
}

void bert_close(bert *b)
{
    if (!b)
        return;
    gemma_close(b->gm);
    tpool_stop(&b->pool);
    for (int l = 0; b->layers && l < b->L; l++) {
        layer *y = &b->layers[l];
        gemm_release(&y->wq);
        gemm_release(&y->wk);
        gemm_release(&y->wv);
        gemm_release(&y->wo);
        gemm_release(&y->wi);
        gemm_release(&y->wo2);
    }
    free(b->layers);
    wp_free(b->wp);
    ug_free(b->ug);
    gguf_close(b->gg);
    st_close(b->st);
    if (b->cmap)
        munmap(b->cmap, b->csize);
    free(b);
}

int bert_quantize(bert *b)
{
    if (b->gm)
        return gemma_quantize(b->gm);
    const int8_t *q = b->q8;
    const float *qs = b->q8s;
    for (int l = 0; l < b->L; l++) {
        layer *y = &b->layers[l];
        gemm_w *ws[] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->wi, &y->wo2};
        for (size_t i = 0; i < sizeof ws / sizeof *ws; i++) {
            if (q) { /* the prepared file's, in the same order */
                gemm_prepare_q8(ws[i], q, qs);
                q += gemm_q8_bytes(ws[i]->N, ws[i]->K);
                qs += gemm_q8_meta(ws[i]->N);
            } else if (gemm_quantize(ws[i])) {
                return MNEMO_NOMEM;
            }
        }
    }
    return MNEMO_OK;
}

int bert_dims(const bert *b) { return b->gm ? gemma_dims(b->gm) : b->H; }
int bert_prepared(const bert *b)
{
    if (b->gm)
        return gemma_prepared(b->gm);
    return !b->cmap ? 0 : b->q8 ? 2 : 1;
}
const char *bert_fingerprint(const bert *b)
{
    return b->gm ? gemma_fingerprint(b->gm) : b->fp;
}
int bert_max_tokens(const bert *b) { return b->gm ? gemma_max_tokens(b->gm) : b->max_tokens; }
int bert_layers(const bert *b) { return b->gm ? gemma_layers(b->gm) : b->L; }
const char *bert_query_prompt(const bert *b)
{
    return b->gm ? gemma_query_prompt(b->gm) : b->qprompt;
}
const char *bert_document_prompt(const bert *b)
{
    return b->gm ? gemma_document_prompt(b->gm) : b->dprompt;
}

int bert_tokenize(const bert *b, const char *text, size_t len, int32_t *ids)
{
    if (b->gm)
        return gemma_tokenize(b->gm, text, len, ids);
    int n = b->ug ? ug_encode(b->ug, text, len, ids, b->max_tokens)
                  : wp_encode(b->wp, text, len, ids, b->max_tokens);
    for (int i = 0; i < n; i++)
        if (ids[i] >= b->vocab)
            ids[i] = b->pad; /* not in the weights: as padding */
    return n;
}

/* ----------------------------------------------------------------------
 * Forward pass
 * -------------------------------------------------------------------- */

typedef struct fwd {
    const bert *b;
    int T, nseq;
    const int *start, *len; /* each text's first token and count */
    /* the residual step */
    const float *x;
    float *y;
    /* attention */
    const float *q, *k, *v;
    float *ctx, *scratch; /* scratch: SLOT_FLOATS per thread of the pool */
    size_t slot_floats;
    int maxlen;
    /* layer norm: y = LN(y + x) */
    const float *g, *beta;
} fwd;

/* Attention of one text and head: its queries in blocks of ATT_ROWS rows,
 * scores and the weighted values through the matrix kernels, on the
 * running thread's scratch. */
#define ATT_ROWS 48

static void attention_task(void *ud, int t)
{
    fwd *f = ud;
    const bert *b = f->b;
    int H = b->H, dh = H / b->heads, s = t / b->heads, h = t % b->heads;
    int st = f->start[s], n = f->len[s];
    size_t half = gemm_kv_floats(f->maxlen, dh);
    float *kb = f->scratch + (size_t)tpool_slot() * f->slot_floats, *vb = kb + half,
          *qb = vb + half, *sc = qb + (size_t)ATT_ROWS * dh;
    float scale = 1.0f / sqrtf((float)dh);
    gemm_kv a;
    gemm_kv_prepare(&a, f->k + (size_t)st * H + h * dh, f->v + (size_t)st * H + h * dh, H, n,
                    dh, kb, vb);
    for (int i0 = 0; i0 < n; i0 += ATT_ROWS) {
        int rows = n - i0 < ATT_ROWS ? n - i0 : ATT_ROWS;
        for (int i = 0; i < rows; i++)
            memcpy(qb + (size_t)i * dh, f->q + (size_t)(st + i0 + i) * H + h * dh,
                   (size_t)dh * sizeof *qb);
        gemm_kv_scores(&a, qb, rows, sc);
        for (int i = 0; i < rows; i++)
            gemm_softmax(sc + (size_t)i * n, n, scale);
        gemm_kv_context(&a, sc, rows, f->ctx + (size_t)(st + i0) * H + h * dh, H);
    }
}

static void layernorm_row(float *y, const float *g, const float *beta, int H, float eps)
{
    gemm_layernorm(y, g, beta, H, eps);
}

/* Rows of one task: y = LN(y + x). */
#define LN_ROWS 32

static void residual_ln_task(void *ud, int t)
{
    fwd *f = ud;
    int H = f->b->H, m1 = (t + 1) * LN_ROWS > f->T ? f->T : (t + 1) * LN_ROWS;
    for (int m = t * LN_ROWS; m < m1; m++) {
        float *y = f->y + (size_t)m * H;
        const float *x = f->x + (size_t)m * H;
        for (int i = 0; i < H; i++)
            y[i] += x[i];
        layernorm_row(y, f->g, f->beta, H, f->b->eps);
    }
}

static void residual_ln(tpool *p, fwd *f, float *y, const float *x, const float *g,
                        const float *beta)
{
    f->y = y;
    f->x = x;
    f->g = g;
    f->beta = beta;
    tpool_run(p, residual_ln_task, f, (f->T + LN_ROWS - 1) / LN_ROWS);
}

/* One forward pass over the texts' tokens IDS (T in all; text s from
 * START[s], LEN[s] tokens), pooled into OUT (nseq x H). */
static int forward(bert *b, const int32_t *ids, int T, const int *start, const int *len,
                   int nseq, float *out)
{
    int H = b->H, I = b->I;
    size_t th = (size_t)T * H;
    int maxlen = 0;
    for (int s = 0; s < nseq; s++)
        maxlen = len[s] > maxlen ? len[s] : maxlen;
    int dh = H / b->heads;
    size_t slot = 2 * gemm_kv_floats(maxlen, dh) + (size_t)ATT_ROWS * dh + (size_t)ATT_ROWS * maxlen;
    size_t acts = 6 * th + (size_t)T * I;
    float *buf0 = tpool_work(&b->pool, acts + (size_t)(b->pool.n + 1) * slot);
    if (!buf0)
        return MNEMO_NOMEM;
    float *scratch = buf0 + acts;
    float *x = buf0, *q = x + th, *k = q + th, *v = k + th, *ctx = v + th, *tmp = ctx + th,
          *inter = tmp + th;
    for (int s = 0; s < nseq; s++)
        for (int i = 0; i < len[s]; i++) {
            int t = start[s] + i;
            const float *we = b->wemb + (size_t)ids[t] * H, *pe = b->pemb + (size_t)(b->pos0 + i) * H;
            float *r = x + (size_t)t * H;
            for (int d = 0; d < H; d++)
                r[d] = we[d] + pe[d] + b->temb[d];
            layernorm_row(r, b->eg, b->eb, H, b->eps);
        }
    tpool *p = &b->pool;
    fwd f;
    memset(&f, 0, sizeof f);
    f.b = b;
    f.T = T;
    f.nseq = nseq;
    f.start = start;
    f.len = len;
    f.scratch = scratch;
    f.slot_floats = slot;
    f.maxlen = maxlen;
    for (int l = 0; l < b->L; l++) {
        const layer *y = &b->layers[l];
        tpool_out qkv[3] = {{&y->wq, y->qb, q, H, TPOOL_PLAIN},
                            {&y->wk, y->kb, k, H, TPOOL_PLAIN},
                            {&y->wv, y->vb, v, H, TPOOL_PLAIN}};
        tpool_linears(p, x, T, H, qkv, 3);
        f.q = q;
        f.k = k;
        f.v = v;
        f.ctx = ctx;
        tpool_run(p, attention_task, &f, nseq * b->heads);
        tpool_linear(p, ctx, &y->wo, y->ob, tmp, T, H, H, TPOOL_PLAIN);
        residual_ln(p, &f, x, tmp, y->g1, y->b1);
        tpool_linear(p, x, &y->wi, y->ib, inter, T, I, H, TPOOL_GELU);
        tpool_linear(p, inter, &y->wo2, y->o2b, tmp, T, H, I, TPOOL_PLAIN);
        residual_ln(p, &f, x, tmp, y->g2, y->b2);
    }
    for (int s = 0; s < nseq; s++) {
        float *o = out + (size_t)s * H;
        const float *r0 = x + (size_t)start[s] * H;
        if (b->cls_pool) {
            memcpy(o, r0, (size_t)H * sizeof *o);
        } else {
            for (int d = 0; d < H; d++)
                o[d] = 0;
            for (int i = 0; i < len[s]; i++)
                for (int d = 0; d < H; d++)
                    o[d] += r0[(size_t)i * H + d];
            for (int d = 0; d < H; d++)
                o[d] /= (float)len[s];
        }
        double nn = 0;
        for (int d = 0; d < H; d++)
            nn += (double)o[d] * o[d];
        float inv = nn > 0 ? (float)(1.0 / sqrt(nn)) : 0.0f;
        for (int d = 0; d < H; d++)
            o[d] *= inv;
    }
    return MNEMO_OK;
}

static int tokenize_cb(void *model, const char *text, size_t len, int32_t *ids)
{
    return bert_tokenize(model, text, len, ids);
}

static int forward_cb(void *model, const int32_t *ids, int T, const int *start, const int *len,
                      int nseq, float *out)
{
    return forward(model, ids, T, start, len, nseq, out);
}

int bert_threads_for(const bert *b, size_t bytes)
{
    return b->gm ? gemma_threads_for(b->gm, bytes)
                 : tpool_threads_for(&b->pool, b->threads - 1, bytes);
}

int bert_embed(bert *b, const char *const *texts, const size_t *lens, size_t n, float *out)
{
    if (b->gm)
        return gemma_embed(b->gm, texts, lens, n, out);
    tpool_ensure(&b->pool, b->threads - 1, lens, n);
    return tpool_batches(b, b->max_tokens, b->H, tokenize_cb, forward_cb, texts, lens, n, out);
}
