/*
 * test_typed.c - the typed memory API (mnemo_memory, mnemo_memory_opts,
 * mnemo_memories, mnemo_search_all_typed, mnemo_index_count) on every
 * storage backend: each typed answer equals the JSON function's for the
 * same input, field by field (and mnemo_hits_json the text of
 * mnemo_search_all byte for byte), and bad input is refused with a
 * message while nothing stored is lost.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"

static void at(const char *iso) { setenv("MNEMO_NOW", iso, 1); }

/* Unix seconds T as the JSON records write them, "" for none. */
static void iso(int64_t t, char out[32])
{
    out[0] = 0;
    time_t tt = (time_t)t;
    struct tm tm;
    if (t && gmtime_r(&tt, &tm))
        strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void time_eq(json_t *j, const char *key, int64_t t)
{
    char want[32];
    iso(t, want);
    const char *got = json_string_value(json_object_get(j, key));
    ASSERT_STR_EQ(got ? got : "", want);
}

/* The typed record R says what the JSON record J says. */
static void same_record(const mnemo_memory *r, json_t *j)
{
    static const char *const keys[] = {"id",      "text",     "category", "type",
                                       "subject", "user_id",  "agent_id", "run_id"};
    const char *vals[] = {r->id, r->text, r->category, r->type, r->subject, r->user_id,
                          r->agent_id, r->run_id};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        ASSERT_STR_EQ(vals[i], json_string_value(json_object_get(j, keys[i])));
    ASSERT_EQ(r->importance, json_number_value(json_object_get(j, "importance")));
    char *md = json_dumps(json_object_get(j, "metadata"),
                          JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    ASSERT_STR_EQ(r->metadata, md);
    free(md);
    json_t *tr = json_object_get(j, "triggers");
    ASSERT_EQ(r->ntriggers, json_array_size(tr));
    for (size_t i = 0; i < r->ntriggers; i++)
        ASSERT_STR_EQ(r->triggers[i], json_string_value(json_array_get(tr, i)));
    time_eq(j, "created_at", r->created_at);
    time_eq(j, "updated_at", r->updated_at);
    time_eq(j, "expires_at", r->expires_at);
    time_eq(j, "last_confirmed_at", r->last_confirmed_at);
    time_eq(j, "deleted_at", r->deleted_at);
    ASSERT_EQ(r->confirmations, json_integer_value(json_object_get(j, "confirmations")));
    json_t *sc = json_object_get(j, "score"), *rel = json_object_get(j, "relevance");
    ASSERT_EQ(r->score, sc ? json_number_value(sc) : -1);
    ASSERT_EQ(r->relevance, rel ? json_number_value(rel) : -1);
    ASSERT_EQ(r->duplicate, json_is_true(json_object_get(j, "duplicate")));
}

/* The set S holds what the JSON array A holds, in order. */
static void same_set(const mnemo_memories *s, json_t *a)
{
    ASSERT_EQ(mnemo_memories_count(s), json_array_size(a));
    for (size_t i = 0; i < json_array_size(a); i++)
        same_record(mnemo_memories_get(s, i), json_array_get(a, i));
    ASSERT(mnemo_memories_get(s, json_array_size(a)) == NULL);
}

static json_t *parsed(char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    mnemo_free(text);
    ASSERT(j != NULL);
    return j;
}

static mnemo_memory *add_typed(mnemo *m, const char *text, const char *category, const char *user)
{
    mnemo_memory rec, *out = NULL;
    mnemo_memory_init(&rec);
    rec.text = text;
    rec.category = category;
    rec.user_id = user;
    if (mnemo_memory_add_typed(m, &rec, &out))
        test_fail(__FILE__, __LINE__, "add %s: %s", text, mnemo_errmsg(m));
    return out;
}

BACKEND_TEST(backend_mem_typed_equals_json)
{
    at("2026-11-01T09:00:00Z");
    test_mkdir("ws");
    test_write("ws/MEMORY.md", "# Memory\n\n- The staging cluster is called ember.\n");
    mnemo *m = be_open("ws", NULL);
    long long files = -1;
    ASSERT_EQ(mnemo_index_count(m, &files), MNEMO_NOTFOUND);
    ASSERT_OK(mnemo_sync(m, NULL, NULL));
    ASSERT_OK(mnemo_index_count(m, &files));
    ASSERT_EQ(files, 1);

    /* Add: every field the caller gives, the rest defaulted as for JSON. */
    static const char *const trig[] = {"ui", "theme"};
    mnemo_memory rec, *a = NULL;
    mnemo_memory_init(&rec);
    rec.text = "User prefers dark mode in the staging cluster console";
    rec.category = "Preference";
    rec.user_id = "alice";
    rec.metadata = "{\"b\":1,\"a\":{\"z\":[1,2.5,\"x\"],\"c\":null}}";
    rec.triggers = trig;
    rec.ntriggers = 2;
    ASSERT_OK(mnemo_memory_add_typed(m, &rec, &a));
    ASSERT_EQ(strlen(a->id), 36);
    ASSERT_STR_EQ(a->category, "preference");
    ASSERT_NEAR(a->importance, 0.85, 1e-9);
    ASSERT_STR_EQ(a->type, "fact");
    ASSERT_STR_EQ(a->subject, "user");
    ASSERT_STR_EQ(a->run_id, "");
    ASSERT_STR_EQ(a->metadata, "{\"a\":{\"c\":null,\"z\":[1,2.5,\"x\"]},\"b\":1}");
    ASSERT_EQ(a->ntriggers, 2);
    ASSERT_STR_EQ(a->triggers[1], "theme");
    ASSERT_EQ(a->created_at, 1793523600); /* 2026-11-01T09:00:00Z */
    ASSERT_EQ(a->expires_at, 0);
    ASSERT_EQ(a->duplicate, 0);
    ASSERT_EQ(a->score, -1);

    /* Get: the JSON function's record, field by field. */
    mnemo_memory *g = NULL;
    char *out = NULL;
    ASSERT_OK(mnemo_memory_get_typed(m, a->id, &g));
    ASSERT_OK(mnemo_memory_get(m, a->id, &out));
    json_t *j = parsed(out);
    same_record(g, j);
    same_record(a, j);
    json_decref(j);
    mnemo_memory_free(g);

    /* A duplicate is the stored memory, said to be one. */
    mnemo_memory *d = add_typed(m, " User prefers dark mode in the staging cluster console\n",
                                NULL, "alice");
    ASSERT_STR_EQ(d->id, a->id);
    ASSERT_EQ(d->duplicate, 1);
    mnemo_memory_free(d);
    at("2026-11-02T09:00:00Z");
    mnemo_memory *b = add_typed(m, "The staging cluster runs in Frankfurt", "operational", "alice");
    at("2026-11-03T09:00:00Z");
    mnemo_memory *c = add_typed(m, "Bob keeps the staging cluster keys", NULL, "bob");

    /* List: the same page, total and order as the JSON list. */
    mnemo_memory_opts o;
    mnemo_memory_opts_init(&o);
    o.user_id = "alice";
    o.limit = 1;
    mnemo_memories *s = NULL;
    ASSERT_OK(mnemo_memory_list_typed(m, &o, &s));
    ASSERT_OK(mnemo_memory_list(m, "{\"user_id\":\"alice\",\"limit\":1}", &out));
    j = parsed(out);
    same_set(s, json_object_get(j, "memories"));
    ASSERT_EQ(mnemo_memories_total(s), json_integer_value(json_object_get(j, "total")));
    ASSERT_EQ(mnemo_memories_total(s), 2);
    ASSERT_STR_EQ(mnemo_memories_get(s, 0)->id, b->id); /* newest first */
    ASSERT(mnemo_memories_mode(s) == NULL);
    ASSERT(mnemo_memories_unreadable(s, 0, NULL) == NULL);
    ASSERT(mnemo_memories_warning(s) == NULL);
    json_decref(j);
    mnemo_memories_free(s);

    /* Search: the same results, scores and mode. */
    static const char *const cats[] = {"operational", "preference"};
    mnemo_memory_opts_init(&o);
    o.user_id = "alice";
    o.categories = cats;
    o.ncategories = 2;
    ASSERT_OK(mnemo_memory_search_typed(m, "staging cluster", &o, &s));
    ASSERT_OK(mnemo_memory_search(
        m, "staging cluster", "{\"user_id\":\"alice\",\"categories\":\"operational,preference\"}",
        &out));
    j = parsed(out);
    same_set(s, json_object_get(j, "results"));
    ASSERT_EQ(mnemo_memories_count(s), 2);
    ASSERT_EQ(mnemo_memories_total(s), json_integer_value(json_object_get(j, "total")));
    ASSERT_STR_EQ(mnemo_memories_mode(s), json_string_value(json_object_get(j, "mode")));
    ASSERT(mnemo_memories_get(s, 0)->score > 0);
    json_decref(j);
    mnemo_memories_free(s);

    /* Notes and facts together: byte for byte the JSON of mnemo_search_all. */
    mnemo_search_all_opts ao;
    mnemo_search_all_opts_init(&ao);
    ao.facts.user_id = "alice";
    ao.notes.max_results = 5;
    mnemo_hits *h = NULL;
    ASSERT_OK(mnemo_search_all_typed(m, "staging cluster", &ao, &h));
    ASSERT_OK(mnemo_search_all(m, "staging cluster", "{\"user_id\":\"alice\",\"limit\":5}", &out));
    char *typed = mnemo_hits_json(h);
    ASSERT_STR_EQ(typed, out);
    mnemo_free(typed);
    j = parsed(out);
    json_t *res = json_object_get(j, "results");
    ASSERT_EQ(mnemo_hits_count(h), json_array_size(res));
    ASSERT_EQ(mnemo_hits_count(h), 3); /* the note and alice's two facts */
    size_t notes = 0, facts = 0;
    for (size_t i = 0; i < mnemo_hits_count(h); i++) {
        json_t *r = json_array_get(res, i);
        const mnemo_memory *f = mnemo_hits_fact(h, i);
        const mnemo_result *n = mnemo_hits_note(h, i);
        ASSERT((f != NULL) != (n != NULL));
        ASSERT_STR_EQ(f ? "fact" : "note", json_string_value(json_object_get(r, "kind")));
        ASSERT_NEAR(mnemo_hits_score(h, i), json_number_value(json_object_get(r, "score")),
                    0.00005);
        if (f) {
            ASSERT_STR_EQ(f->id, json_string_value(json_object_get(r, "id")));
            ASSERT_STR_EQ(f->user_id, "alice");
            facts++;
        } else {
            ASSERT_STR_EQ(n->path, json_string_value(json_object_get(r, "path")));
            notes++;
        }
    }
    ASSERT_EQ(notes, 1);
    ASSERT_EQ(facts, 2);
    ASSERT(mnemo_hits_notes(h) != NULL);
    ASSERT_STR_EQ(mnemo_hits_mode(h), json_string_value(json_object_get(j, "mode")));
    ASSERT(mnemo_hits_warning(h) == NULL);
    ASSERT_EQ(mnemo_hits_score(h, 99), -1);
    json_decref(j);
    mnemo_hits_free(h);

    /* The notes' min_score bars the facts too, typed as in JSON. */
    ao.notes.min_score = 0.6;
    ASSERT_OK(mnemo_search_all_typed(m, "staging cluster", &ao, &h));
    ASSERT_OK(mnemo_search_all(m, "staging cluster",
                               "{\"user_id\":\"alice\",\"limit\":5,\"minScore\":0.6}", &out));
    typed = mnemo_hits_json(h);
    ASSERT_STR_EQ(typed, out);
    for (size_t i = 0; i < mnemo_hits_count(h); i++)
        ASSERT(mnemo_hits_score(h, i) >= 0.6);
    mnemo_free(typed);
    mnemo_free(out);
    mnemo_hits_free(h);
    ao.notes.min_score = 2; /* out of range: refused where memory search refuses it */
    ASSERT_EQ(mnemo_search_all_typed(m, "staging cluster", &ao, &h), MNEMO_INVALID);
    ASSERT(h == NULL);
    ASSERT_CONTAINS(mnemo_errmsg(m), "min_score must be a number from 0 to 1");

    /* Facts alone, of another user. */
    mnemo_search_all_opts_init(&ao);
    ASSERT_OK(mnemo_search_kinds(m, "facts", &ao.kinds));
    ASSERT_EQ(ao.kinds, MNEMO_KIND_FACT);
    ao.facts.user_id = "bob";
    ASSERT_OK(mnemo_search_all_typed(m, "staging cluster keys", &ao, &h));
    ASSERT_OK(mnemo_search_all(m, "staging cluster keys",
                               "{\"kinds\":\"facts\",\"userId\":\"bob\"}", &out));
    typed = mnemo_hits_json(h);
    ASSERT_STR_EQ(typed, out);
    ASSERT_EQ(mnemo_hits_count(h), 1);
    ASSERT_STR_EQ(mnemo_hits_fact(h, 0)->id, c->id);
    ASSERT(mnemo_hits_notes(h) == NULL);
    mnemo_free(typed);
    mnemo_free(out);
    mnemo_hits_free(h);

    mnemo_memory_free(a);
    mnemo_memory_free(b);
    mnemo_memory_free(c);
    mnemo_close(m);
}

/* A typed call refused: MNEMO_INVALID, a message naming what is wrong, no
 * answer. */
#define REFUSED(call, out, msg)                                                                \
    do {                                                                                       \
        ASSERT_EQ((call), MNEMO_INVALID);                                                      \
        ASSERT((out) == NULL);                                                                 \
        ASSERT_CONTAINS(mnemo_errmsg(m), msg);                                                 \
    } while (0)

BACKEND_TEST(backend_mem_typed_bad_input)
{
    at("2026-11-01T09:00:00Z");
    test_mkdir("ws");
    mnemo *m = be_open("ws", NULL);
    mnemo_memory *kept = add_typed(m, "The build runs on Fridays", NULL, NULL);
    mnemo_memory rec, *out = NULL;
    mnemo_memory_init(&rec);
    rec.text = "caf\xc3 au lait"; /* a cut UTF-8 sequence */
    REFUSED(mnemo_memory_add_typed(m, &rec, &out), out, "not valid UTF-8");
    REFUSED(mnemo_memory_add_typed(m, NULL, &out), out, "no memory given");
    rec.text = NULL;
    REFUSED(mnemo_memory_add_typed(m, &rec, &out), out, "needs text");
    rec.text = "Fine text";
    rec.subject = "us\xff";
    REFUSED(mnemo_memory_add_typed(m, &rec, &out), out, "subject is not valid UTF-8");
    rec.subject = NULL;
    rec.metadata = "{\"a\":";
    REFUSED(mnemo_memory_add_typed(m, &rec, &out), out, "metadata: invalid JSON");
    rec.metadata = "[1]";
    REFUSED(mnemo_memory_add_typed(m, &rec, &out), out, "metadata must be a JSON object");
    rec.metadata = NULL;
    rec.importance = 1.5;
    REFUSED(mnemo_memory_add_typed(m, &rec, &out), out, "importance must be a number from 0 to 1");
    rec.importance = NAN;
    REFUSED(mnemo_memory_add_typed(m, &rec, &out), out, "importance must be a number from 0 to 1");
    rec.importance = -1;
    rec.type = "opinion";
    REFUSED(mnemo_memory_add_typed(m, &rec, &out), out, "type 'opinion' is not one of");
    rec.type = NULL;
    rec.text = "the key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD";
    REFUSED(mnemo_memory_add_typed(m, &rec, &out), out, "credential");
    mnemo_memory *g = NULL;
    REFUSED(mnemo_memory_get_typed(m, NULL, &g), g, "no memory id");
    ASSERT_EQ(mnemo_memory_get_typed(m, "00000000-0000-4000-8000-000000000000", &g),
              MNEMO_NOTFOUND);
    ASSERT(g == NULL);

    mnemo_memory_opts o;
    mnemo_memories *s = NULL;
    mnemo_memory_opts_init(&o);
    o.scope = "yesterday";
    REFUSED(mnemo_memory_list_typed(m, &o, &s), s, "scope 'yesterday' is not all");
    mnemo_memory_opts_init(&o);
    o.offset = -1;
    REFUSED(mnemo_memory_list_typed(m, &o, &s), s, "offset must be a whole number");
    mnemo_memory_opts_init(&o);
    o.min_score = 2;
    REFUSED(mnemo_memory_search_typed(m, "build", &o, &s), s, "min_score must be");
    mnemo_memory_opts_init(&o);
    o.filters = "{\"colour\":";
    REFUSED(mnemo_memory_search_typed(m, "build", &o, &s), s, "filter");
    static const char *const nocat[] = {NULL};
    mnemo_memory_opts_init(&o);
    o.categories = nocat;
    o.ncategories = 1;
    REFUSED(mnemo_memory_list_typed(m, &o, &s), s, "categories must be");
    REFUSED(mnemo_memory_search_typed(m, NULL, NULL, &s), s, "empty query");

    int kinds = -1;
    REFUSED(mnemo_search_kinds(m, "facts,opinions", &kinds), (void *)NULL, "'opinions' is not");
    mnemo_search_all_opts ao;
    mnemo_search_all_opts_init(&ao);
    ao.kinds = 8;
    mnemo_hits *h = NULL;
    REFUSED(mnemo_search_all_typed(m, "build", &ao, &h), h, "kinds must name");
    mnemo_search_all_opts_init(&ao);
    ao.kinds = MNEMO_KIND_FACT;
    ao.facts.type = "opinion";
    REFUSED(mnemo_search_all_typed(m, "build", &ao, &h), h, "type 'opinion'");
    char *text = NULL;
    REFUSED(mnemo_search_all(m, "build", "{\"kinds\":\"fact\",\"colour\":\"red\"}", &text), text,
            "unknown option 'colour'");

    /* Nothing refused was stored, nothing stored was lost. */
    mnemo_memory_opts_init(&o);
    ASSERT_OK(mnemo_memory_list_typed(m, &o, &s));
    ASSERT_EQ(mnemo_memories_count(s), 1);
    ASSERT_STR_EQ(mnemo_memories_get(s, 0)->id, kept->id);
    mnemo_memories_free(s);
    /* The destructors take NULL. */
    mnemo_memory_free(NULL);
    mnemo_memories_free(NULL);
    mnemo_hits_free(NULL);
    mnemo_memory_free(kept);
    mnemo_close(m);
}
