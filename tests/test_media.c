/*
 * test_media.c - images and audio as memory (multimodal): content
 * sniffing, which files are admitted and why others are not, their
 * embedding through Gemini's batchEmbedContents with inline data (checked
 * by the provider server, which decodes it), the media leg's calibration
 * that lets a clearly matching image surface beside text, kinds, changes
 * on disk, and get; on every backend (backend.h): a PostgreSQL server
 * without pgvector skips the media, saying why.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "provider_server.h"
#include "test.h"
#include "text/media.h"

#define PNG "\x89PNG\r\n\x1a\n"
#define MP3 "ID3\x03\x00\x00\x00\x00\x00\x00"
#define DIMS 256 /* the cosines of unrelated vectors spread by about 1/16 */

TEST(media_sniff_by_content)
{
    static const struct {
        const char *bytes;
        size_t n;
        const char *mime;
    } cases[] = {
        {PNG "IHDR", 12, "image/png"},
        {"\xff\xd8\xff\xe0JFIF", 8, "image/jpeg"},
        {"GIF89a..", 8, "image/gif"},
        {"RIFF\x10\0\0\0WEBPVP8 ", 16, "image/webp"},
        {"\0\0\0\x18" "ftypheic\0\0\0\0", 16, "image/heic"},
        {"\0\0\0\x18" "ftypmif1\0\0\0\0", 16, "image/heif"},
        {"RIFF\x10\0\0\0WAVEfmt ", 16, "audio/wav"},
        {"OggS\0\x02", 6, "audio/ogg"},
        {"fLaC\0\0\0\x22", 8, "audio/flac"},
        {MP3, 10, "audio/mpeg"},
        {"\xff\xfb\x90\x64", 4, "audio/mpeg"},
        {"\xff\xf1\x50\x80", 4, "audio/aac"},
        {"\0\0\0\x20" "ftypM4A \0\0\0\0", 16, "audio/mp4"},
        {"\0\0\0\x20" "ftypisom\0\0\0\0", 16, NULL}, /* a video container */
        {"# just text\n", 12, NULL},
        {"\x89PN", 3, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *got = media_sniff(cases[i].bytes, cases[i].n);
        if (!cases[i].mime)
            ASSERT(got == NULL);
        else
            ASSERT_STR_EQ(got, cases[i].mime);
    }
    ASSERT_EQ(media_of_name("a/b/Photo.JPG"), MEDIA_IMAGE);
    ASSERT_EQ(media_of_name("x.opus"), MEDIA_AUDIO);
    ASSERT_EQ(media_of_name("x.md"), 0);
    ASSERT_EQ(media_of_name("png"), 0);
}

/* An "image": a PNG signature and what the provider server's model sees
 * in it, then filler. */
static void write_image(const char *rel, const char *caption)
{
    char b[512];
    int n = snprintf(b, sizeof b, PNG "IHDR caption:%s\n", caption);
    memset(b + n, 0x5a, sizeof b - (size_t)n);
    test_write_n(rel, b, sizeof b);
}

static void write_audio(const char *rel, const char *caption)
{
    char b[256];
    memcpy(b, MP3, 10);
    int n = 10 + snprintf(b + 10, sizeof b - 10, "caption:%s\n", caption);
    memset(b + n, 0x11, sizeof b - (size_t)n);
    test_write_n(rel, b, sizeof b);
}

/* A handle on ws/ with Gemini's multimodal model at server S, on the
 * current backend (backend.h). */
static mnemo *open_media(provider_server *s, const char *model, const char *extra)
{
    char base[160], mdl[96], dims[32];
    snprintf(base, sizeof base, "baseUrl=%s/v1beta", ps_url(s));
    snprintf(mdl, sizeof mdl, "model=%s", model);
    snprintf(dims, sizeof dims, "dimensions=%d", DIMS);
    setenv("GEMINI_API_KEY", "gemini-media-key", 1);
    return be_open("ws", "provider=gemini", mdl, base, dims, "extraPaths=[\"media\"]",
                   "multimodal={\"enabled\":true}", extra ? extra : "chunkTokens=400", NULL);
}

/* Why a PostgreSQL server without pgvector skips the media. */
#define NO_PGVECTOR                                                                               \
    "images and audio are not indexed: this PostgreSQL server has no pgvector, and images and "  \
    "audio are found by their vectors"

/* Whether M's status says every media file was skipped for want of
 * pgvector (the backend has no vectors), the notes beside them indexed. */
static void expect_no_pgvector(mnemo *m, const mnemo_sync_stats *st, size_t media)
{
    ASSERT_EQ(st->files_skipped, media);
    char *js = NULL;
    ASSERT_OK(mnemo_status_json(m, 0, &js));
    ASSERT_CONTAINS(js, NO_PGVECTOR);
    mnemo_free(js);
}

static void media_workspace(void)
{
    test_write("ws/MEMORY.md", "# Memory\n\n- The quarterly report is due on Friday.\n");
    test_write("ws/memory/2026-11-02.md", "- Lunch with Dana about the budget.\n");
    test_write("ws/media/notes.md", "Printer codes: 4411 for the second floor.\n");
    write_image("ws/media/photos/img-0142.png", "tabby cat asleep on the green sofa");
    write_audio("ws/media/voice/memo.mp3", "reminder to water the tomato plants");
}

static json_t *search_json(mnemo *m, const char *q, const char *kinds)
{
    char opts[128];
    snprintf(opts, sizeof opts, "{\"kinds\":\"%s\",\"limit\":6}", kinds);
    char *s = NULL;
    int rc = mnemo_search_all(m, q, opts, &s);
    if (rc)
        test_fail(__FILE__, __LINE__, "search %s: %s", q, mnemo_errmsg(m));
    json_t *j = json_loads(s, 0, NULL);
    mnemo_free(s);
    ASSERT(j != NULL);
    return j;
}

/* The result for PATH in J, or NULL. */
static json_t *result_for(json_t *j, const char *path)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(j, "results"), i, r)
        if (json_string_value(json_object_get(r, "path")) &&
            !strcmp(json_string_value(json_object_get(r, "path")), path))
            return r;
    return NULL;
}

BACKEND_TEST(media_indexed_embedded_and_found)
{
    ps_options o = {.dims = DIMS};
    provider_server *s = ps_start(&o);
    ASSERT(s != NULL);
    media_workspace();
    mnemo *m = open_media(s, "gemini-embedding-2-preview", NULL);
    mnemo_sync_stats st = test_sync(m);
    if (!be_has_vectors()) {
        /* Skipped, saying why; the notes beside them are found. */
        expect_no_pgvector(m, &st, 2);
        json_t *j = search_json(m, "Printer codes", "note");
        ASSERT(result_for(j, "media/notes.md") != NULL);
        json_decref(j);
        j = search_json(m, "img-0142", "media");
        ASSERT_EQ(json_array_size(json_object_get(j, "results")), 0);
        json_decref(j);
        mnemo_close(m);
        ps_stop(s);
        return;
    }
    ASSERT_EQ(st.files_skipped, 0);
    ASSERT_EQ(st.files_added, 5);
    ASSERT(st.embed_warning == NULL);
    if (be_kind() == BE_SQLITE) {
        ASSERT_EQ(test_sql_int(test_path("db.sqlite"),
                               "SELECT count(*) FROM files WHERE mime = 'image/png' AND "
                               "path = 'media/photos/img-0142.png'"),
                  1);
        ASSERT_EQ(test_sql_int(test_path("db.sqlite"),
                               "SELECT count(*) FROM files WHERE mime = 'audio/mpeg'"),
                  1);
        ASSERT_EQ(test_sql_int(test_path("db.sqlite"), "SELECT count(*) FROM chunk_vectors "
                                                       "WHERE chunk_id >= 2199023255552"),
                  2);
    }

    /* The query shares no word with the label: only the picture's vector
     * can find it, though a text vector would score higher for any note. */
    json_t *j = search_json(m, "tabby cat asleep on the green sofa", "all");
    json_t *r = result_for(j, "media/photos/img-0142.png");
    ASSERT(r != NULL);
    ASSERT_STR_EQ(json_string_value(json_object_get(r, "kind")), "media");
    ASSERT_STR_EQ(json_string_value(json_object_get(r, "mimeType")), "image/png");
    ASSERT_EQ(json_integer_value(json_object_get(r, "startLine")), 1);
    ASSERT_EQ(json_integer_value(json_object_get(r, "endLine")), 1);
    ASSERT_STR_EQ(json_string_value(json_object_get(r, "snippet")),
                  "Image file: media/photos/img-0142.png");
    if (json_real_value(json_object_get(r, "vectorScore")) <= 0.5)
        test_fail(__FILE__, __LINE__, "weak media score: %s", json_dumps(j, JSON_COMPACT));
    ASSERT(result_for(j, "media/voice/memo.mp3") == NULL); /* unrelated */
    char *kinds = json_dumps(json_object_get(j, "kinds"), JSON_COMPACT);
    ASSERT_CONTAINS(kinds, "media");
    free(kinds);
    json_decref(j);
    /* Its citation opens as what the file is, not its bytes. */
    mnemo_excerpt e;
    ASSERT_OK(mnemo_get(m, "media/photos/img-0142.png", 1, 1, &e));
    ASSERT_CONTAINS(e.text, "Type: image/png");
    ASSERT_NOT_CONTAINS(e.text, "PNG");
    mnemo_excerpt_cleanup(&e);
    /* The list of the index's files names them media, the note beside
     * them under the extra path an extra note. */
    char *fl = NULL;
    ASSERT_OK(mnemo_files(m, NULL, &fl));
    ASSERT_CONTAINS(fl, "{\"path\":\"media/photos/img-0142.png\",\"kind\":\"media\"");
    ASSERT_CONTAINS(fl, "{\"path\":\"media/voice/memo.mp3\",\"kind\":\"media\"");
    ASSERT_CONTAINS(fl, "{\"path\":\"media/notes.md\",\"kind\":\"extra\"");
    ASSERT_CONTAINS(fl, "{\"path\":\"memory/2026-11-02.md\",\"kind\":\"memory\"");
    mnemo_free(fl);

    /* Audio the same way; media alone; notes alone. */
    j = search_json(m, "reminder to water the tomato plants", "media");
    r = result_for(j, "media/voice/memo.mp3");
    ASSERT(r != NULL);
    ASSERT_STR_EQ(json_string_value(json_object_get(r, "mimeType")), "audio/mpeg");
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(j, "results"), i, x)
        ASSERT_STR_EQ(json_string_value(json_object_get(x, "kind")), "media");
    json_decref(j);
    j = search_json(m, "tabby cat asleep on the green sofa", "note");
    ASSERT(result_for(j, "media/photos/img-0142.png") == NULL);
    json_decref(j);
    /* Unrelated words find no picture. */
    j = search_json(m, "zebra crossing timetable", "media");
    ASSERT_EQ(json_array_size(json_object_get(j, "results")), 0);
    json_decref(j);
    mnemo_close(m);
    ps_stop(s);
}

BACKEND_TEST(media_request_carries_the_file)
{
    ps_options o = {.dims = DIMS};
    provider_server *s = ps_start(&o);
    ASSERT(s != NULL);
    write_image("ws/media/one.png", "a lighthouse at dusk");
    mnemo *m = open_media(s, "gemini-embedding-2-preview", NULL);
    mnemo_sync_stats st = test_sync(m); /* the fixed texts (calib.h) are embedded last */
    if (!be_has_vectors()) {
        expect_no_pgvector(m, &st, 1);
        mnemo_close(m);
        ps_stop(s);
        return;
    }
    write_image("ws/media/one.png", "a lighthouse at dawn");
    test_sync(m);
    /* The last request was the picture's: its label and the file itself,
     * as a document. */
    char *body = ps_last_body(s);
    ASSERT(body != NULL);
    json_t *j = json_loads(body, 0, NULL);
    free(body);
    json_t *req = json_array_get(json_object_get(j, "requests"), 0);
    ASSERT_STR_EQ(json_string_value(json_object_get(req, "taskType")), "RETRIEVAL_DOCUMENT");
    json_t *parts = json_object_get(json_object_get(req, "content"), "parts");
    ASSERT_EQ(json_array_size(parts), 2);
    ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(parts, 0), "text")),
                  "Image file: media/one.png");
    json_t *inl = json_object_get(json_array_get(parts, 1), "inlineData");
    ASSERT_STR_EQ(json_string_value(json_object_get(inl, "mimeType")), "image/png");
    /* The data decodes to the file's bytes (base64 by Python's rules). */
    size_t flen = 0;
    char *file = test_read(test_path("ws/media/one.png"), &flen);
    ASSERT(file != NULL);
    test_write("b64.txt", json_string_value(json_object_get(inl, "data")));
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import base64,sys; sys.stdout.buffer.write(base64.b64decode("
             "open(\"%s\").read(), validate=True))' > %s",
             test_path("b64.txt"), test_path("decoded.bin"));
    ASSERT_EQ(system(cmd), 0);
    size_t dlen = 0;
    char *dec = test_read(test_path("decoded.bin"), &dlen);
    ASSERT(dec != NULL);
    ASSERT_EQ(dlen, flen);
    ASSERT(memcmp(dec, file, flen) == 0);
    free(dec);
    free(file);
    json_decref(j);
    mnemo_close(m);
    ps_stop(s);
}

BACKEND_TEST(media_refused_by_content_size_kind_and_link)
{
    ps_options o = {.dims = DIMS};
    provider_server *s = ps_start(&o);
    ASSERT(s != NULL);
    write_image("ws/media/real.png", "a red kite");
    test_write("ws/media/fake.png", "this is text wearing a png name\n");
    char big[3000];
    memcpy(big, PNG, 8);
    memset(big + 8, 7, sizeof big - 8);
    test_write_n("ws/media/big.png", big, sizeof big);
    write_audio("ws/media/sound.png", "a bell"); /* audio under an image's name */
    write_audio("ws/media/song.mp3", "a bell");
    ASSERT_EQ(symlink("real.png", test_path("ws/media/link.png")), 0);
    write_image("ws/memory/in-memory-folder.png", "a boat"); /* not an extra path */
    mnemo *m = open_media(s, "gemini-embedding-2-preview",
                          "multimodal={\"enabled\":true,\"modalities\":[\"image\"],"
                          "\"maxFileBytes\":2048}");
    mnemo_sync_stats st = test_sync(m);
    if (!be_has_vectors()) { /* what is looked at first: the store takes none */
        expect_no_pgvector(m, &st, 5);
        mnemo_close(m);
        ps_stop(s);
        return;
    }
    char *js = NULL;
    ASSERT_OK(mnemo_status_json(m, 0, &js));
    ASSERT_CONTAINS(js, "media/fake.png");
    ASSERT_CONTAINS(js, "not an image file: its content is no image or audio format");
    ASSERT_CONTAINS(js, "too large (3000 bytes, limit 2048)");
    ASSERT_CONTAINS(js, "audio content (audio/mpeg), and multimodal.modalities leaves out audio");
    ASSERT_CONTAINS(js, "symlink (not followed)");
    ASSERT_NOT_CONTAINS(js, "song.mp3");          /* audio is not asked for: not listed */
    ASSERT_NOT_CONTAINS(js, "in-memory-folder"); /* only the extra paths hold media */
    mnemo_free(js);
    if (be_kind() == BE_SQLITE)
        ASSERT_EQ(test_sql_int(test_path("db.sqlite"),
                               "SELECT count(*) FROM files WHERE status = 0 AND mime IS NOT NULL"),
                  1);
    json_t *j = search_json(m, "a red kite", "media");
    ASSERT(result_for(j, "media/real.png") != NULL);
    ASSERT_EQ(json_array_size(json_object_get(j, "results")), 1);
    json_decref(j);
    mnemo_close(m);
    /* A larger limit admits the large one at the next sync, unchanged on disk. */
    m = open_media(s, "gemini-embedding-2-preview",
                   "multimodal={\"enabled\":true,\"modalities\":\"image\",\"maxFileBytes\":4096}");
    test_sync(m);
    js = NULL;
    ASSERT_OK(mnemo_status_json(m, 0, &js));
    ASSERT_NOT_CONTAINS(js, "too large (3000 bytes");
    mnemo_free(js);
    if (be_kind() == BE_SQLITE)
        ASSERT_EQ(test_sql_int(test_path("db.sqlite"),
                               "SELECT count(*) FROM files WHERE status = 0 AND path = "
                               "'media/big.png'"),
                  1);
    mnemo_close(m);
    ps_stop(s);
}

BACKEND_TEST(media_need_a_provider_that_embeds_them)
{
    ps_options o = {.dims = DIMS};
    provider_server *s = ps_start(&o);
    ASSERT(s != NULL);
    media_workspace();
    /* A text model: the notes are indexed, the media skipped with why. */
    mnemo *m = open_media(s, "gemini-embedding-001", NULL);
    mnemo_sync_stats st = test_sync(m);
    if (!be_has_vectors()) { /* the store's reason comes first */
        expect_no_pgvector(m, &st, 2);
        mnemo_close(m);
        ps_stop(s);
        return;
    }
    ASSERT_EQ(st.files_skipped, 2);
    char *js = NULL;
    ASSERT_OK(mnemo_status_json(m, 0, &js));
    ASSERT_CONTAINS(js, "images and audio are not indexed: provider gemini model "
                        "gemini-embedding-001 embeds no images or audio (gemini with model "
                        "gemini-embedding-2-preview does)");
    mnemo_free(js);
    mnemo_close(m);
    /* The multimodal model takes them at the next sync, files unchanged;
     * the notes' vectors are the model's too. */
    m = open_media(s, "gemini-embedding-2-preview", NULL);
    st = test_sync(m);
    ASSERT_EQ(st.files_skipped, 0);
    if (be_kind() == BE_SQLITE)
        ASSERT_EQ(test_sql_int(test_path("db.sqlite"),
                               "SELECT count(*) FROM files WHERE status = 0 AND mime IS NOT NULL"),
                  2);
    json_t *j = search_json(m, "reminder to water the tomato plants", "media");
    ASSERT(result_for(j, "media/voice/memo.mp3") != NULL);
    json_decref(j);
    mnemo_close(m);
    ps_stop(s);
}

BACKEND_TEST(media_change_on_disk_is_reindexed)
{
    ps_options o = {.dims = DIMS};
    provider_server *s = ps_start(&o);
    ASSERT(s != NULL);
    media_workspace();
    mnemo *m = open_media(s, "gemini-embedding-2-preview", NULL);
    mnemo_sync_stats first = test_sync(m);
    if (!be_has_vectors()) {
        expect_no_pgvector(m, &first, 2);
        mnemo_close(m);
        ps_stop(s);
        return;
    }
    int before = ps_requests(s);
    /* Nothing changed: nothing is read or sent again. */
    mnemo_sync_stats st = test_sync(m);
    ASSERT_EQ(st.files_unchanged, 5);
    ASSERT_EQ(ps_requests(s), before);
    /* The picture is replaced: a new vector from the new content. */
    write_image("ws/media/photos/img-0142.png", "golden retriever chasing a frisbee");
    st = test_sync(m);
    ASSERT_EQ(st.files_changed, 1);
    ASSERT_EQ(st.chunks_embedded, 1);
    json_t *j = search_json(m, "golden retriever chasing a frisbee", "media");
    ASSERT(result_for(j, "media/photos/img-0142.png") != NULL);
    json_decref(j);
    j = search_json(m, "tabby cat asleep on the green sofa", "media");
    ASSERT(result_for(j, "media/photos/img-0142.png") == NULL);
    json_decref(j);
    /* Gone from disk, gone from the index. */
    ASSERT_EQ(unlink(test_path("ws/media/photos/img-0142.png")), 0);
    st = test_sync(m);
    ASSERT_EQ(st.files_removed, 1);
    if (be_kind() == BE_SQLITE)
        ASSERT_EQ(test_sql_int(test_path("db.sqlite"),
                               "SELECT count(*) FROM files WHERE mime = 'image/png'"),
                  0);
    j = search_json(m, "golden retriever chasing a frisbee", "media");
    ASSERT(result_for(j, "media/photos/img-0142.png") == NULL);
    json_decref(j);
    j = search_json(m, "reminder to water the tomato plants", "media");
    ASSERT(result_for(j, "media/voice/memo.mp3") != NULL); /* the other one stays */
    json_decref(j);
    /* Text under the audio's name: skipped, no longer media. */
    test_write("ws/media/voice/memo.mp3", "tomato plants: water them on Sunday\n");
    st = test_sync(m);
    ASSERT_EQ(st.files_skipped, 1);
    j = search_json(m, "reminder to water the tomato plants", "media");
    ASSERT_EQ(json_array_size(json_object_get(j, "results")), 0);
    json_decref(j);
    if (be_kind() == BE_SQLITE)
        ASSERT_EQ(test_sql_int(test_path("db.sqlite"),
                               "SELECT count(*) FROM files WHERE mime IS NOT NULL"),
                  0);
    mnemo_close(m);
    ps_stop(s);
}

TEST(media_cli_search_and_get)
{
    ps_options o = {.dims = DIMS};
    provider_server *s = ps_start(&o);
    ASSERT(s != NULL);
    media_workspace();
    char base[160];
    snprintf(base, sizeof base, "baseUrl=%s/v1beta", ps_url(s));
    setenv("GEMINI_API_KEY", "gemini-media-key", 1);
    char *out = NULL, *err = NULL;
    const char *ws = test_path("ws"), *db = test_path("db.sqlite");
    int code = test_cli(&out, &err, NULL, "index", "-w", ws, "--db", db, "--set",
                        "provider=gemini", "--set", "model=gemini-embedding-2-preview", "--set", "dimensions=256", "--set",
                        base, "--set", "extraPaths=media", "--set", "multimodal.enabled=true",
                        NULL);
    ASSERT_EQ(code, 0);
    free(out);
    free(err);
    code = test_cli(&out, &err, NULL, "search", "-w", ws, "--db", db, "--set", "provider=gemini",
                    "--set", "model=gemini-embedding-2-preview", "--set", "dimensions=256",
                    "--set", base, "--set",
                    "extraPaths=media", "--set", "multimodal.enabled=true", "--kinds", "media",
                    "--json", "tabby cat asleep on the green sofa", NULL);
    ASSERT_EQ(code, 0);
    ASSERT_CONTAINS(out, "\"kind\":\"media\"");
    ASSERT_CONTAINS(out, "media/photos/img-0142.png");
    free(out);
    free(err);
    /* get prints what the file is, not its bytes. */
    code = test_cli(&out, &err, NULL, "get", "-w", ws, "--db", db, "--set", "extraPaths=media",
                    "--set", "multimodal.enabled=true", "media/photos/img-0142.png#L1-L1", NULL);
    ASSERT_EQ(code, 0);
    ASSERT_CONTAINS(out, "image/png");
    ASSERT_CONTAINS(out, "512 bytes");
    ASSERT_NOT_CONTAINS(out, "PNG");
    free(out);
    free(err);
    ps_stop(s);
}

BACKEND_TEST(media_refresh_follows_a_new_picture)
{
    /* What mnemo mcp does before a search: only what changed is synced. */
    if (!be_has_vectors())
        return; /* no media there (media_indexed_embedded_and_found) */
    ps_options o = {.dims = DIMS};
    provider_server *s = ps_start(&o);
    ASSERT(s != NULL);
    media_workspace();
    mnemo *m = open_media(s, "gemini-embedding-2-preview", NULL);
    ASSERT_OK(mnemo_refresh(m, NULL, NULL)); /* the first call syncs */
    write_image("ws/media/photos/img-0200.png", "a paper boat on a puddle");
    int synced = 0;
    ASSERT_OK(mnemo_refresh(m, &synced, NULL));
    ASSERT_EQ(synced, 1);
    json_t *j = search_json(m, "a paper boat on a puddle", "media");
    ASSERT(result_for(j, "media/photos/img-0200.png") != NULL);
    json_decref(j);
    mnemo_close(m);
    ps_stop(s);
}


BACKEND_TEST(media_search_says_when_multimodal_is_off)
{
    test_write("ws/MEMORY.md", "- The whiteboard photo is in media/.\n");
    write_image("ws/media/whiteboard.png", "a whiteboard full of arrows");
    mnemo *m = be_open("ws", "provider=none", "extraPaths=[\"media\"]", NULL);
    test_sync(m);
    json_t *j = search_json(m, "whiteboard", "media");
    ASSERT_EQ(json_array_size(json_object_get(j, "results")), 0);
    ASSERT_CONTAINS(json_string_value(json_object_get(j, "warning")),
                    "no images or audio are indexed: multimodal is off");
    json_decref(j);
    /* A note search says nothing of it, and the picture is no note. */
    j = search_json(m, "whiteboard", "note");
    ASSERT(json_object_get(j, "warning") == NULL);
    ASSERT(result_for(j, "MEMORY.md") != NULL);
    ASSERT(result_for(j, "media/whiteboard.png") == NULL);
    json_decref(j);
    mnemo_close(m);
}
