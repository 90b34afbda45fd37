/*
 * gemma.c - EmbeddingGemma from a GGUF file (see gemma.h), as llama.cpp's
 * gemma-embedding graph runs it.
 *
 * Over T tokens of hidden size H: x = token_embd[id] * sqrt(H); per layer
 * h = RMS(x) attn_norm; q, k, v = h Wq^T, h Wk^T, h Wv^T (grouped-query:
 * heads query heads share kv_heads key/value heads); each head of q and k
 * RMS-normalised (attn_q_norm, attn_k_norm) and rotated (RoPE, NeoX
 * halves; base rope.freq_base on global layers, 10000 on sliding ones);
 * per text softmax(q k^T / sqrt(head_dim)) v, bidirectional, on sliding
 * layers only keys within sliding_window / 2 positions either side (every
 * sixth layer is global: layers 5, 11, ...); x += RMS(ctx Wo^T)
 * post_attention_norm; x += RMS((GELU_tanh(h Wg^T) * (h Wu^T)) Wd^T)
 * post_ffw_norm with h = RMS(x) ffn_norm; at the end RMS(x) output_norm,
 * the mean over each text's tokens, dense_2 and dense_3 when present,
 * and L2 normalisation. The GGUF converter stores Gemma's norm weights
 * with the 1 already added (Gemma3RMSNorm scales by 1 + w), so they are
 * used as they are.
 */
#include "embed/gemma.h"

#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embed/gemm.h"
#include "embed/spm.h"
#include "embed/tpool.h"
#include "mnemo.h"

#define ARCH "gemma-embedding"
#define SWA_PATTERN 6      /* llama.cpp: set_swa_pattern(6) */
#define SWA_BASE 10000.0   /* llama.cpp: rope_freq_base_train_swa */

typedef struct glayer {
    const float *an, *qn, *kn, *pan, *fn, *pfn; /* norms */
    gemm_w wq, wk, wv, wo, wg, wu, wd;
    int swa;
} glayer;

struct gemma {
    gguf *gg;
    spm *tok;
    int H, L, heads, kvh, dh, I, ctx, vocab, max_tokens, window, dims, d2;
    float eps;
    double base;
    glayer *layers;
    const float *onorm;
    gemm_w dense2, dense3;
    int has_dense;
    int threads;
    tpool pool;
    char fp[17];
    void *cmap; /* the prepared file, mapped, or NULL */
    size_t csize;
    const int8_t *q8; /* its int8 panels of the layers' matrices, or NULL */
    const float *q8s; /* and their scales and sums */
    int kern;   /* the kernel its panels were taken for */
};

int gemma_is(const gguf *g)
{
    char arch[64] = "";
    gguf_str(g, "general.architecture", arch, sizeof arch);
    return !strcmp(arch, ARCH);
}

static int64_t key(const gemma *m, const char *k, int64_t dflt)
{
    char full[128];
    snprintf(full, sizeof full, ARCH ".%s", k);
    return gguf_int(m->gg, full, dflt);
}

static double keynum(const gemma *m, const char *k, double dflt)
{
    char full[128];
    snprintf(full, sizeof full, ARCH ".%s", k);
    return gguf_num(m->gg, full, dflt);
}

/* Tensor NAME of shape D0 (x D1; D1 = 0: one dimension). */
static const float *tensor(gemma *m, const char *name, int64_t d0, int64_t d1, buf *err)
{
    int64_t shape[4] = {0};
    int nd = 0;
    const float *t = gguf_f32(m->gg, name, shape, &nd, err);
    if (!t)
        return NULL;
    if ((d1 == 0 && (nd != 1 || shape[0] != d0)) ||
        (d1 > 0 && (nd != 2 || shape[0] != d0 || shape[1] != d1))) {
        buf_printf(err, "tensor %s: shape does not match the metadata", name);
        return NULL;
    }
    return t;
}

static int matrix(gemma *m, gemm_w *w, const char *name, int N, int K, buf *err)
{
    const float *t = tensor(m, name, N, K, err);
    if (!t)
        return MNEMO_CORRUPT;
    return gemm_prepare(w, t, N, K) ? MNEMO_NOMEM : MNEMO_OK;
}

static int tokenizer(gemma *m, buf *err)
{
    char model[32] = "";
    gguf_str(m->gg, "tokenizer.ggml.model", model, sizeof model);
    if (strcmp(model, "llama")) {
        buf_printf(err, "GGUF tokenizer %s is not supported for " ARCH " (llama's SentencePiece is)",
                   *model ? model : "none");
        return MNEMO_INVALID;
    }
    const char **p = NULL;
    size_t *l = NULL;
    float *scores = NULL;
    int32_t *types = NULL;
    long n = gguf_strings(m->gg, "tokenizer.ggml.tokens", &p, &l);
    long ns = gguf_floats(m->gg, "tokenizer.ggml.scores", &scores);
    long nt = gguf_ints(m->gg, "tokenizer.ggml.token_type", &types);
    int rc = MNEMO_OK;
    if (n <= 0 || (ns >= 0 && ns != n) || (nt >= 0 && nt != n)) {
        buf_printf(err, "GGUF vocabulary missing or its scores and types do not match it");
        rc = MNEMO_CORRUPT;
    } else {
        spm_cfg c;
        c.bos = (int32_t)gguf_int(m->gg, "tokenizer.ggml.bos_token_id", 1);
        c.eos = (int32_t)gguf_int(m->gg, "tokenizer.ggml.eos_token_id", 2);
        c.unk = (int32_t)gguf_int(m->gg, "tokenizer.ggml.unknown_token_id", 0);
        c.add_bos = (int)gguf_int(m->gg, "tokenizer.ggml.add_bos_token", 1);
        c.add_eos = (int)gguf_int(m->gg, "tokenizer.ggml.add_eos_token", 0);
        c.add_space_prefix = (int)gguf_int(m->gg, "tokenizer.ggml.add_space_prefix", 1);
        if (c.unk < 0 || c.unk >= n)
            c.unk = -1;
        rc = spm_new(p, l, scores, types, (size_t)n, &c, &m->tok, err);
    }
    free(p);
    free(l);
    free(scores);
    free(types);
    return rc;
}

/* ----------------------------------------------------------------------
 * The matrices, in the prepared file's order: each layer's q, k, v,
 * output, gate, up and down, then dense_2 and dense_3.
 * -------------------------------------------------------------------- */

typedef struct mat {
    gemm_w *w;
    char name[48];
    int N, K;
} mat;

static int nmats(const gemma *m) { return 7 * m->L + (m->has_dense ? 2 : 0); }

static mat mat_at(gemma *m, int i)
{
    mat r;
    int H = m->H, Q = m->heads * m->dh, KV = m->kvh * m->dh, I = m->I;
    if (i >= 7 * m->L) {
        int d = i - 7 * m->L;
        r.w = d ? &m->dense3 : &m->dense2;
        snprintf(r.name, sizeof r.name, "dense_%d.weight", d ? 3 : 2);
        r.N = d ? m->dims : m->d2;
        r.K = d ? m->d2 : H;
        return r;
    }
    static const char *const names[7] = {"attn_q", "attn_k", "attn_v", "attn_output",
                                         "ffn_gate", "ffn_up", "ffn_down"};
    glayer *y = &m->layers[i / 7];
    gemm_w *ws[7] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->wg, &y->wu, &y->wd};
    int ns[7] = {Q, KV, KV, H, I, I, H}, ks[7] = {H, H, H, Q, H, H, I};
    int j = i % 7;
    r.w = ws[j];
    snprintf(r.name, sizeof r.name, "blk.%d.%s.weight", i / 7, names[j]);
    r.N = ns[j];
    r.K = ks[j];
    return r;
}

static size_t mats_floats(gemma *m)
{
    size_t n = 0;
    for (int i = 0, c = nmats(m); i < c; i++) {
        mat mt = mat_at(m, i);
        n += gemm_packed_floats(mt.N, mt.K);
    }
    return n;
}

#define PREP_MAGIC "MNEMOGEM"
#define PREP_VERSION 1

typedef struct prep_hdr {
    char magic[8];
    uint32_t version, panel, L, H, Q, KV, I, d2, dims, dense;
    uint64_t w_size, w_mtime, tok_off, tok_bytes, mats_off, mats_floats;
    uint64_t q8_off, q8_bytes, qs_off, qs_floats; /* 0 when K is past Q8_MAX_K */
} prep_hdr;

#define Q8_MAX_K 8192 /* gemm_quantize keeps longer rows float */

/* The int8 forms of the layers' matrices (the first 7 L): bytes and the
 * floats of their scales and sums; 0 when one stays float. */
static size_t q8_sizes(gemma *m, size_t *meta)
{
    size_t b = 0;
    *meta = 0;
    for (int i = 0; i < 7 * m->L; i++) {
        mat mt = mat_at(m, i);
        if (mt.K > Q8_MAX_K)
            return *meta = 0;
        b += gemm_q8_bytes(mt.N, mt.K);
        *meta += gemm_q8_meta(mt.N);
    }
    return b;
}

/* The prepared file of the folder holding PATH when PATH is its
 * model.gguf (else 0), and that file's size and modification time. */
static int prep_paths(const char *path, char *out, size_t n, uint64_t *size, uint64_t *mtime)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    struct stat sb;
    if (strcmp(base, "model.gguf") || stat(path, &sb) != 0)
        return 0;
    *size = (uint64_t)sb.st_size;
    *mtime = (uint64_t)sb.st_mtim.tv_sec * 1000000000u + (uint64_t)sb.st_mtim.tv_nsec;
    int dl = slash ? (int)(slash - path) : 1;
    snprintf(out, n, "%.*s/" GEMMA_PREPARED, dl, slash ? path : ".");
    return 1;
}

static uint64_t up64(uint64_t x) { return (x + 63) & ~(uint64_t)63; }

/* The header of M's prepared file with a tokenizer blob of TOK bytes. */
static void prep_header(gemma *m, prep_hdr *h, uint64_t tok)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, PREP_MAGIC, 8);
    h->version = PREP_VERSION;
    h->panel = 16;
    h->L = (uint32_t)m->L;
    h->H = (uint32_t)m->H;
    h->Q = (uint32_t)(m->heads * m->dh);
    h->KV = (uint32_t)(m->kvh * m->dh);
    h->I = (uint32_t)m->I;
    h->d2 = (uint32_t)m->d2;
    h->dims = (uint32_t)m->dims;
    h->dense = (uint32_t)m->has_dense;
    h->tok_off = up64(sizeof *h);
    h->tok_bytes = tok;
    h->mats_off = up64(h->tok_off + tok);
    h->mats_floats = mats_floats(m);
    size_t meta, q8 = q8_sizes(m, &meta);
    if (q8) {
        h->q8_off = up64(h->mats_off + h->mats_floats * 4);
        h->q8_bytes = q8;
        h->qs_off = up64(h->q8_off + q8);
        h->qs_floats = meta;
    }
}

/* Takes M's matrices from the prepared file beside PATH when it matches:
 * 1, else 0. */
static int prepared_map(gemma *m, const char *path)
{
    char p[4096];
    uint64_t size, mtime;
    if (!path || !prep_paths(path, p, sizeof p, &size, &mtime))
        return 0;
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat sb;
    void *map = NULL;
    if (fstat(fd, &sb) == 0 && (size_t)sb.st_size >= sizeof(prep_hdr))
        map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (!map || map == MAP_FAILED)
        return 0;
    prep_hdr h, want;
    memcpy(&h, map, sizeof h);
    uint64_t fsize = (uint64_t)sb.st_size;
    prep_header(m, &want, h.tok_bytes < fsize ? h.tok_bytes : 0);
    if (memcmp(&h, &want, offsetof(prep_hdr, w_size)) || h.w_size != size ||
        h.w_mtime != mtime || h.tok_off != want.tok_off || h.tok_bytes != want.tok_bytes ||
        h.tok_bytes == 0 || h.tok_bytes > fsize - h.tok_off || h.mats_off != want.mats_off ||
        h.mats_floats != want.mats_floats ||
        h.q8_off != want.q8_off || h.q8_bytes != want.q8_bytes || h.qs_off != want.qs_off ||
        h.qs_floats != want.qs_floats || h.mats_off > fsize ||
        h.mats_floats > (fsize - h.mats_off) / 4 || h.q8_off > fsize ||
        h.q8_bytes > fsize - h.q8_off || h.qs_off > fsize || h.qs_floats > (fsize - h.qs_off) / 4) {
        munmap(map, (size_t)fsize);
        return 0;
    }
    if (spm_from_blob((const char *)map + h.tok_off, (size_t)h.tok_bytes, &m->tok)) {
        munmap(map, (size_t)fsize);
        return 0;
    }
    const float *panels = (const float *)(const void *)((const char *)map + h.mats_off);
    for (int i = 0, n = nmats(m); i < n; i++) {
        mat mt = mat_at(m, i);
        gemm_prepare_packed(mt.w, NULL, panels, mt.N, mt.K);
        panels += gemm_packed_floats(mt.N, mt.K);
    }
    m->cmap = map;
    m->csize = (size_t)fsize;
    m->kern = gemm_kernel();
    if (h.q8_bytes) {
        m->q8 = (const int8_t *)map + h.q8_off;
        m->q8s = (const float *)(const void *)((const char *)map + h.qs_off);
    }
    return 1;
}

/* The matrices' own weights, for what the panels do not serve (int8
 * weights; another kernel than the panels were taken for). */
static int widen_all(gemma *m)
{
    buf err;
    buf_init(&err, 1024);
    int rc = MNEMO_OK;
    for (int i = 0, n = nmats(m); !rc && i < n; i++) {
        mat mt = mat_at(m, i);
        if (mt.w->w || mt.w->q)
            continue;
        const float *t = tensor(m, mt.name, mt.N, mt.K, &err);
        if (!t)
            rc = MNEMO_CORRUPT;
        else
            mt.w->w = t;
    }
    buf_cleanup(&err);
    return rc;
}

int gemma_prepared(const gemma *m) { return m->cmap != NULL; }

int gemma_prepare_write(const gemma *m_, const char *dir, buf *err)
{
    gemma *m = (gemma *)m_; /* mat_at hands out pointers into it; nothing is changed */
    char p[4096], tmp[4200], gg[4096];
    uint64_t size, mtime;
    snprintf(gg, sizeof gg, "%s/model.gguf", dir);
    if (!prep_paths(gg, p, sizeof p, &size, &mtime)) {
        buf_printf(err, "%s: not found", gg);
        return MNEMO_IO;
    }
    int rc = widen_all(m);
    if (rc) {
        buf_printf(err, "%s: weights unreadable", gg);
        return rc;
    }
    buf tok;
    buf_init(&tok, 0);
    if ((rc = spm_to_blob(m->tok, &tok))) {
        buf_cleanup(&tok);
        return rc;
    }
    prep_hdr h;
    prep_header(m, &h, tok.len);
    h.w_size = size;
    h.w_mtime = mtime;
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    FILE *f = fopen(tmp, "wb");
    size_t most = 0;
    for (int i = 0, n = nmats(m); i < n; i++) {
        mat mt = mat_at(m, i);
        size_t nf = gemm_packed_floats(mt.N, mt.K);
        most = nf > most ? nf : most;
    }
    float *panel = malloc((most ? most : 1) * sizeof *panel);
    static const char zero[64] = {0};
    int ok = f && panel && fwrite(&h, sizeof h, 1, f) == 1 &&
             fwrite(zero, 1, h.tok_off - sizeof h, f) == h.tok_off - sizeof h &&
             fwrite(tok.data, 1, tok.len, f) == tok.len &&
             fwrite(zero, 1, h.mats_off - h.tok_off - tok.len, f) ==
                 h.mats_off - h.tok_off - tok.len;
    buf_cleanup(&tok);
    for (int i = 0, n = nmats(m); ok && i < n; i++) {
        mat mt = mat_at(m, i);
        size_t nf = gemm_packed_floats(mt.N, mt.K);
        gemm_pack(mt.w->w, mt.N, mt.K, panel);
        ok = fwrite(panel, sizeof *panel, nf, f) == nf;
    }
    /* The layers' int8 panels (in PANEL's room: never larger than the
     * float ones), then their scales and sums. */
    float *qs = h.q8_bytes ? malloc(h.qs_floats * sizeof *qs) : NULL;
    uint64_t at = h.mats_off + h.mats_floats * 4;
    if (h.q8_bytes)
        ok = ok && qs && fwrite(zero, 1, h.q8_off - at, f) == h.q8_off - at;
    size_t nqs = 0;
    for (int i = 0; ok && h.q8_bytes && i < 7 * m->L; i++) {
        mat mt = mat_at(m, i);
        size_t nb = gemm_q8_bytes(mt.N, mt.K);
        gemm_quantize_to(mt.w->w, mt.N, mt.K, (int8_t *)panel, qs + nqs);
        nqs += gemm_q8_meta(mt.N);
        ok = fwrite(panel, 1, nb, f) == nb;
    }
    at = h.q8_off + h.q8_bytes;
    if (h.q8_bytes)
        ok = ok && fwrite(zero, 1, h.qs_off - at, f) == h.qs_off - at &&
             fwrite(qs, sizeof *qs, nqs, f) == nqs;
    free(qs);
    free(panel);
    if (f && (fflush(f) != 0 || fsync(fileno(f)) != 0))
        ok = 0;
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok || rename(tmp, p) != 0) {
        buf_printf(err, "%s: cannot be written", p);
        unlink(tmp);
        return MNEMO_IO;
    }
    return MNEMO_OK;
}

int gemma_open(gguf *g, const char *path, int threads, gemma **out, buf *err)
{
    *out = NULL;
    gemma *m = calloc(1, sizeof *m);
    if (!m) {
        gguf_close(g);
        return MNEMO_NOMEM;
    }
    m->gg = g;
    int rc = MNEMO_INVALID;
    m->H = (int)key(m, "embedding_length", 0);
    m->L = (int)key(m, "block_count", 0);
    m->heads = (int)key(m, "attention.head_count", 0);
    m->kvh = (int)key(m, "attention.head_count_kv", m->heads);
    m->dh = (int)key(m, "attention.key_length", m->heads > 0 ? m->H / m->heads : 0);
    int dv = (int)key(m, "attention.value_length", m->dh);
    m->I = (int)key(m, "feed_forward_length", 0);
    m->ctx = (int)key(m, "context_length", 2048);
    m->window = (int)key(m, "attention.sliding_window", 0);
    m->eps = (float)keynum(m, "attention.layer_norm_rms_epsilon", 1e-6);
    m->base = keynum(m, "rope.freq_base", 1000000.0);
    int64_t pool = key(m, "pooling_type", 1);
    char scaling[32] = "";
    gguf_str(g, ARCH ".rope.scaling.type", scaling, sizeof scaling);
    if (m->H <= 0 || m->H > 8192 || m->L <= 0 || m->L > 128 || m->heads <= 0 ||
        m->heads > 256 || m->kvh <= 0 || m->heads % m->kvh || m->dh <= 0 || m->dh > 1024 ||
        m->dh % 2 || m->I <= 0 || m->I > 65536 || m->ctx < 3 || m->ctx > 32768 ||
        m->window < 0 || !(m->eps > 0) || !(m->base > 0)) {
        buf_printf(err, ARCH " GGUF metadata: sizes missing or out of range");
        goto fail;
    }
    if (dv != m->dh) {
        buf_printf(err, ARCH ": value_length %d unlike key_length %d is not supported", dv, m->dh);
        goto fail;
    }
    if (pool != 1) {
        buf_printf(err, ARCH ": pooling type %lld is not supported (mean is)", (long long)pool);
        goto fail;
    }
    if (*scaling && strcmp(scaling, "none")) {
        buf_printf(err, ARCH ": rope scaling %s is not supported", scaling);
        goto fail;
    }
    int64_t shape[4];
    int nd = 0;
    if (!gguf_shape(g, "token_embd.weight", shape, &nd) || nd != 2 || shape[1] != m->H) {
        buf_printf(err, "tensor token_embd.weight: missing, of a type not read, or misshapen");
        rc = MNEMO_CORRUPT;
        goto fail;
    }
    m->vocab = (int)shape[0];
    rc = MNEMO_CORRUPT;
    int H = m->H, Q = m->heads * m->dh, KV = m->kvh * m->dh, I = m->I;
    if (!(m->layers = calloc((size_t)m->L, sizeof *m->layers))) {
        rc = MNEMO_NOMEM;
        goto fail;
    }
    for (int l = 0; l < m->L; l++) {
        glayer *y = &m->layers[l];
        char n[96];
        y->swa = m->window > 0 && l % SWA_PATTERN < SWA_PATTERN - 1;
#define NORM(field, name, d)                                                                   \
    snprintf(n, sizeof n, "blk.%d." name ".weight", l);                                        \
    if (!(y->field = tensor(m, n, d, 0, err)))                                                 \
        goto fail;
        NORM(an, "attn_norm", H)
        NORM(qn, "attn_q_norm", m->dh)
        NORM(kn, "attn_k_norm", m->dh)
        NORM(pan, "post_attention_norm", H)
        NORM(fn, "ffn_norm", H)
        NORM(pfn, "post_ffw_norm", H)
#undef NORM
        rc = MNEMO_CORRUPT;
    }
    (void)Q;
    (void)KV;
    (void)I;
    if (!(m->onorm = tensor(m, "output_norm.weight", H, 0, err)))
        goto fail;
    m->dims = H;
    int h2 = gguf_has(g, "dense_2.weight"), h3 = gguf_has(g, "dense_3.weight");
    if (h2 != h3) {
        buf_printf(err, ARCH ": dense_2 without dense_3 (or the reverse) is not supported");
        rc = MNEMO_INVALID;
        goto fail;
    }
    if (h2) {
        if (!gguf_shape(g, "dense_2.weight", shape, &nd) || nd != 2 || shape[1] != H ||
            shape[0] <= 0 || shape[0] > 65536) {
            buf_printf(err, "tensor dense_2.weight: of a type not read or misshapen");
            goto fail;
        }
        m->d2 = (int)shape[0];
        if (!gguf_shape(g, "dense_3.weight", shape, &nd) || nd != 2 || shape[1] != m->d2 ||
            shape[0] <= 0 || shape[0] > 65536) {
            buf_printf(err, "tensor dense_3.weight: of a type not read or misshapen");
            rc = MNEMO_CORRUPT;
            goto fail;
        }
        m->dims = (int)shape[0];
        if (m->dims != H) {
            buf_printf(err, ARCH ": dense_3 gives %d dimensions, not the hidden size %d (as "
                            "llama.cpp requires)", m->dims, H);
            rc = MNEMO_INVALID;
            goto fail;
        }
        m->has_dense = 1;
    }
    /* The tokenizer and the matrices: the prepared file's, or the
     * vocabulary read and the weights widened and packed. */
    if (!prepared_map(m, path)) {
        if ((rc = tokenizer(m, err)))
            goto fail;
        for (int i = 0, n = nmats(m); i < n; i++) {
            mat mt = mat_at(m, i);
            if ((rc = matrix(m, mt.w, mt.name, mt.N, mt.K, err)))
                goto fail;
        }
    }
    m->max_tokens = m->ctx;
    gguf_fingerprint(g, m->fp);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    m->threads = threads > 0 ? threads : ncpu > 0 ? (int)ncpu : 1;
    if (m->threads > 64)
        m->threads = 64;
    *out = m;
    return MNEMO_OK;
fail:
    gemma_close(m);
    return rc ? rc : MNEMO_CORRUPT;
}

void gemma_close(gemma *m)
{
    if (!m)
        return;
    tpool_stop(&m->pool);
    for (int l = 0; m->layers && l < m->L; l++) {
        glayer *y = &m->layers[l];
        gemm_w *ws[] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->wg, &y->wu, &y->wd};
        for (size_t i = 0; i < sizeof ws / sizeof *ws; i++)
            gemm_release(ws[i]);
    }
    gemm_release(&m->dense2);
    gemm_release(&m->dense3);
    free(m->layers);
    spm_free(m->tok);
    gguf_close(m->gg);
    if (m->cmap)
        munmap(m->cmap, m->csize);
    free(m);
}

int gemma_quantize(gemma *m)
{
    if (m->q8) { /* the prepared file's */
        const int8_t *q = m->q8;
        const float *s = m->q8s;
        for (int i = 0; i < 7 * m->L; i++) {
            mat mt = mat_at(m, i);
            gemm_prepare_q8(mt.w, q, s);
            q += gemm_q8_bytes(mt.N, mt.K);
            s += gemm_q8_meta(mt.N);
        }
        return MNEMO_OK;
    }
    if (widen_all(m))
        return MNEMO_CORRUPT;
    for (int l = 0; l < m->L; l++) {
        glayer *y = &m->layers[l];
        gemm_w *ws[] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->wg, &y->wu, &y->wd};
        for (size_t i = 0; i < sizeof ws / sizeof *ws; i++)
            if (gemm_quantize(ws[i]))
                return MNEMO_NOMEM;
    }
    return MNEMO_OK;
}

int gemma_dims(const gemma *m) { return m->dims; }
int gemma_layers(const gemma *m) { return m->L; }
int gemma_max_tokens(const gemma *m) { return m->max_tokens; }
const char *gemma_fingerprint(const gemma *m) { return m->fp; }
const char *gemma_query_prompt(const gemma *m)
{
    (void)m;
    return "task: search result | query: ";
}
const char *gemma_document_prompt(const gemma *m)
{
    (void)m;
    return "title: none | text: ";
}

int gemma_tokenize(const gemma *m, const char *text, size_t len, int32_t *ids)
{
    int n = spm_encode(m->tok, text, len, ids, m->max_tokens);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->vocab)
            ids[i] = 0; /* not in the weights: as padding */
    return n;
}

/* ----------------------------------------------------------------------
 * Forward pass
 * -------------------------------------------------------------------- */

typedef struct gfwd {
    const gemma *m;
    const glayer *y;
    int T, nseq, maxlen;
    const int *start, *len;
    const int32_t *ids;
    float *x, *q, *k, *v, *ctx, *tmp;
    const float *cs_g, *cs_s; /* cos, sin per position and pair: global, sliding */
    float *scratch;
    size_t slot_floats;
    const float *norm; /* the residual step's norm */
} gfwd;

#define ROWS 32

static void rms_row(float *y, const float *w, int n, float eps)
{
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += (double)y[i] * y[i];
    float inv = (float)(1.0 / sqrt(ss / n + eps));
    for (int i = 0; i < n; i++)
        y[i] = y[i] * inv * w[i];
}

/* The rows of a text's token: its position within its text. */
static int position(const gfwd *f, int t)
{
    int lo = 0, hi = f->nseq - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (f->start[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return t - f->start[lo];
}

static void rope(float *r, const float *cs, int dh)
{
    int half = dh / 2;
    for (int i = 0; i < half; i++) {
        float c = cs[2 * i], s = cs[2 * i + 1], a = r[i], b = r[i + half];
        r[i] = a * c - b * s;
        r[i + half] = a * s + b * c;
    }
}

/* Per token: each head of q and k normalised and rotated. */
static void qk_task(void *ud, int task)
{
    gfwd *f = ud;
    const gemma *m = f->m;
    int dh = m->dh, Q = m->heads * dh, KV = m->kvh * dh;
    int t1 = (task + 1) * ROWS > f->T ? f->T : (task + 1) * ROWS;
    const float *tab = f->y->swa ? f->cs_s : f->cs_g;
    for (int t = task * ROWS; t < t1; t++) {
        const float *cs = tab + (size_t)position(f, t) * dh;
        for (int h = 0; h < m->heads; h++) {
            float *r = f->q + (size_t)t * Q + (size_t)h * dh;
            rms_row(r, f->y->qn, dh, m->eps);
            rope(r, cs, dh);
        }
        for (int h = 0; h < m->kvh; h++) {
            float *r = f->k + (size_t)t * KV + (size_t)h * dh;
            rms_row(r, f->y->kn, dh, m->eps);
            rope(r, cs, dh);
        }
    }
}

#define ATT_ROWS 48

/* Attention of one text and query head (its key/value head shared by
 * heads / kv_heads query heads), the window on sliding layers. */
static void attention_task(void *ud, int task)
{
    gfwd *f = ud;
    const gemma *m = f->m;
    int dh = m->dh, Q = m->heads * dh, KV = m->kvh * dh;
    int s = task / m->heads, h = task % m->heads, kv = h / (m->heads / m->kvh);
    int st = f->start[s], n = f->len[s];
    size_t hs = gemm_kv_floats(f->maxlen, dh);
    float *kb = f->scratch + (size_t)tpool_slot() * f->slot_floats, *vb = kb + hs,
          *qb = vb + hs, *sc = qb + (size_t)ATT_ROWS * dh;
    int half = f->y->swa ? m->window / 2 : n;
    float scale = 1.0f / sqrtf((float)dh);
    gemm_kv a;
    gemm_kv_prepare(&a, f->k + (size_t)st * KV + (size_t)kv * dh,
                    f->v + (size_t)st * KV + (size_t)kv * dh, KV, n, dh, kb, vb);
    for (int i0 = 0; i0 < n; i0 += ATT_ROWS) {
        int rows = n - i0 < ATT_ROWS ? n - i0 : ATT_ROWS;
        for (int i = 0; i < rows; i++)
            memcpy(qb + (size_t)i * dh, f->q + (size_t)(st + i0 + i) * Q + (size_t)h * dh,
                   (size_t)dh * sizeof *qb);
        gemm_kv_scores(&a, qb, rows, sc);
        for (int i = 0; i < rows; i++) {
            /* Keys within HALF positions either side (llama.cpp's
             * symmetric window); the rest weigh 0. */
            float *r = sc + (size_t)i * n;
            int p = i0 + i, lo = p - half < 0 ? 0 : p - half, hi = p + half >= n ? n - 1 : p + half;
            for (int j = 0; j < lo; j++)
                r[j] = 0;
            for (int j = hi + 1; j < n; j++)
                r[j] = 0;
            gemm_softmax(r + lo, hi - lo + 1, scale);
        }
        gemm_kv_context(&a, sc, rows, f->ctx + (size_t)(st + i0) * Q + (size_t)h * dh, Q);
    }
}

/* x += RMS(tmp) norm, per row. */
static void residual_task(void *ud, int task)
{
    gfwd *f = ud;
    int H = f->m->H, t1 = (task + 1) * ROWS > f->T ? f->T : (task + 1) * ROWS;
    for (int t = task * ROWS; t < t1; t++) {
        float *r = f->tmp + (size_t)t * H, *x = f->x + (size_t)t * H;
        rms_row(r, f->norm, H, f->m->eps);
        for (int i = 0; i < H; i++)
            x[i] += r[i];
    }
}

/* tmp = RMS(x) norm, per row. */
static void norm_task(void *ud, int task)
{
    gfwd *f = ud;
    int H = f->m->H, t1 = (task + 1) * ROWS > f->T ? f->T : (task + 1) * ROWS;
    for (int t = task * ROWS; t < t1; t++) {
        float *r = f->tmp + (size_t)t * H;
        memcpy(r, f->x + (size_t)t * H, (size_t)H * sizeof *r);
        rms_row(r, f->norm, H, f->m->eps);
    }
}

/* cos and sin of position p times each pair's frequency, BASE. */
static void rope_table(float *tab, int maxlen, int dh, double base)
{
    for (int p = 0; p < maxlen; p++)
        for (int i = 0; i < dh / 2; i++) {
            double th = p * pow(base, -2.0 * i / dh);
            tab[(size_t)p * dh + 2 * (size_t)i] = (float)cos(th);
            tab[(size_t)p * dh + 2 * (size_t)i + 1] = (float)sin(th);
        }
}

static int forward(gemma *m, const int32_t *ids, int T, const int *start, const int *len,
                   int nseq, float *out)
{
    int H = m->H, dh = m->dh, Q = m->heads * dh, KV = m->kvh * dh, I = m->I;
    int maxlen = 0;
    for (int s = 0; s < nseq; s++)
        maxlen = len[s] > maxlen ? len[s] : maxlen;
    size_t th = (size_t)T * H;
    size_t slot = 2 * gemm_kv_floats(maxlen, dh) + (size_t)ATT_ROWS * dh + (size_t)ATT_ROWS * maxlen;
    size_t big = (size_t)T * (size_t)(Q > I ? Q : I);
    size_t acts = 2 * th + (size_t)T * Q + 2 * (size_t)T * KV + 3 * big;
    size_t pd = (size_t)nseq * (size_t)(m->d2 > H ? m->d2 : H), sc = (size_t)(m->pool.n + 1) * slot;
    float *x = tpool_work(&m->pool, acts + sc + 2 * (size_t)maxlen * dh + 2 * (pd ? pd : 1));
    if (!x)
        return MNEMO_NOMEM;
    float *scratch = x + acts, *tabs = scratch + sc, *pooled = tabs + 2 * (size_t)maxlen * dh;
    float *h = x + th, *q = h + th, *k = q + (size_t)T * Q, *v = k + (size_t)T * KV,
          *ctx = v + (size_t)T * KV, *g = ctx + big, *u = g + big;
    rope_table(tabs, maxlen, dh, m->base);
    rope_table(tabs + (size_t)maxlen * dh, maxlen, dh, SWA_BASE);
    float scale = sqrtf((float)H);
    int rc = MNEMO_OK;
    for (int t = 0; t < T && !rc; t++) {
        float *r = x + (size_t)t * H;
        rc = gguf_row(m->gg, "token_embd.weight", ids[t], r);
        for (int d = 0; d < H; d++)
            r[d] *= scale;
    }
    if (rc)
        return rc;
    tpool *p = &m->pool;
    gfwd f;
    memset(&f, 0, sizeof f);
    f.m = m;
    f.T = T;
    f.nseq = nseq;
    f.maxlen = maxlen;
    f.start = start;
    f.len = len;
    f.ids = ids;
    f.x = x;
    f.q = q;
    f.k = k;
    f.v = v;
    f.ctx = ctx;
    f.cs_g = tabs;
    f.cs_s = tabs + (size_t)maxlen * dh;
    f.scratch = scratch;
    f.slot_floats = slot;
    int rowtasks = (T + ROWS - 1) / ROWS;
    for (int l = 0; l < m->L; l++) {
        const glayer *y = &m->layers[l];
        f.y = y;
        f.tmp = h;
        f.norm = y->an;
        tpool_run(p, norm_task, &f, rowtasks);
        tpool_out qkv[3] = {{&y->wq, NULL, q, Q, TPOOL_PLAIN},
                            {&y->wk, NULL, k, KV, TPOOL_PLAIN},
                            {&y->wv, NULL, v, KV, TPOOL_PLAIN}};
        tpool_linears(p, h, T, H, qkv, 3);
        tpool_run(p, qk_task, &f, rowtasks);
        tpool_run(p, attention_task, &f, nseq * m->heads);
        tpool_linear(p, ctx, &y->wo, NULL, h, T, H, Q, TPOOL_PLAIN);
        f.norm = y->pan;
        tpool_run(p, residual_task, &f, rowtasks);
        f.norm = y->fn;
        tpool_run(p, norm_task, &f, rowtasks);
        tpool_out gu[2] = {{&y->wg, NULL, g, I, TPOOL_GELU_TANH}, {&y->wu, NULL, u, I, TPOOL_PLAIN}};
        tpool_linears(p, h, T, H, gu, 2);
        for (size_t i = 0; i < (size_t)T * I; i++)
            g[i] *= u[i];
        tpool_linear(p, g, &y->wd, NULL, h, T, H, I, TPOOL_PLAIN);
        f.norm = y->pfn;
        tpool_run(p, residual_task, &f, rowtasks);
    }
    f.tmp = h;
    f.norm = m->onorm;
    tpool_run(p, norm_task, &f, rowtasks);
    for (int s = 0; s < nseq; s++) {
        float *o = pooled + (size_t)s * H;
        for (int d = 0; d < H; d++)
            o[d] = 0;
        for (int i = 0; i < len[s]; i++)
            for (int d = 0; d < H; d++)
                o[d] += h[(size_t)(start[s] + i) * H + d];
        for (int d = 0; d < H; d++)
            o[d] /= (float)len[s];
    }
    const float *e = pooled;
    if (m->has_dense) {
        float *mid = pooled + pd;
        tpool_linear(p, pooled, &m->dense2, NULL, mid, nseq, m->d2, H, TPOOL_PLAIN);
        tpool_linear(p, mid, &m->dense3, NULL, pooled, nseq, m->dims, m->d2, TPOOL_PLAIN);
    }
    for (int s = 0; s < nseq; s++) {
        const float *r = e + (size_t)s * m->dims;
        float *o = out + (size_t)s * m->dims;
        double nn = 0;
        for (int d = 0; d < m->dims; d++)
            nn += (double)r[d] * r[d];
        float inv = nn > 0 ? (float)(1.0 / sqrt(nn)) : 0.0f;
        for (int d = 0; d < m->dims; d++)
            o[d] = r[d] * inv;
    }
    return MNEMO_OK;
}

static int tokenize_cb(void *model, const char *text, size_t len, int32_t *ids)
{
    return gemma_tokenize(model, text, len, ids);
}

static int forward_cb(void *model, const int32_t *ids, int T, const int *start, const int *len,
                      int nseq, float *out)
{
    return forward(model, ids, T, start, len, nseq, out);
}

int gemma_threads_for(const gemma *m, size_t bytes)
{
    return tpool_threads_for(&m->pool, m->threads - 1, bytes);
}

int gemma_embed(gemma *m, const char *const *texts, const size_t *lens, size_t n, float *out)
{
    /* The panels are the SIMD kernels': the scalar one reads the weights. */
    if (m->cmap && (gemm_kernel() != m->kern || m->kern == GEMM_SCALAR) && widen_all(m))
        return MNEMO_CORRUPT;
    tpool_ensure(&m->pool, m->threads - 1, lens, n);
    return tpool_batches(m, m->max_tokens, m->dims, tokenize_cb, forward_cb, texts, lens, n, out);
}
