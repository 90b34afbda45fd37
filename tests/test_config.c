/*
 * test_config.c - defaults, validation, files, environment and layering.
 */
#include <stdlib.h>

#include "test.h"

TEST(config_defaults_and_validation)
{
    mnemo_config *c;
    ASSERT_OK(mnemo_config_new(&c));
    ASSERT_STR_EQ(mnemo_config_get(c, "chunkTokens"), "400");
    ASSERT_STR_EQ(mnemo_config_get(c, "chunkOverlap"), "80");
    ASSERT_STR_EQ(mnemo_config_get(c, "maxResults"), "6");
    ASSERT_STR_EQ(mnemo_config_get(c, "language"), "english");
    ASSERT(mnemo_config_get(c, "nope") == NULL);
    char *err = NULL;
    ASSERT_EQ(mnemo_config_set(c, "maxResults", "abc", "t", &err), MNEMO_INVALID);
    ASSERT_CONTAINS(err, "maxResults");
    mnemo_free(err);
    err = NULL;
    ASSERT_EQ(mnemo_config_set(c, "minScore", "1.5", "t", &err), MNEMO_INVALID);
    ASSERT_CONTAINS(err, "out of range");
    mnemo_free(err);
    err = NULL;
    ASSERT_EQ(mnemo_config_set(c, "language", "klingon", "t", &err), MNEMO_INVALID);
    ASSERT_CONTAINS(err, "english");
    mnemo_free(err);
    err = NULL;
    ASSERT_EQ(mnemo_config_set(c, "bogus", "1", "t", &err), MNEMO_INVALID);
    mnemo_free(err);
    err = NULL;
    ASSERT_OK(mnemo_config_set(c, "stopWords", "off", "t", NULL));
    ASSERT_STR_EQ(mnemo_config_get(c, "stopWords"), "false");
    ASSERT_OK(mnemo_config_set(c, "extraPaths", "notes, docs=*.txt", "t", NULL));
    ASSERT_STR_EQ(mnemo_config_get(c, "extraPaths"),
                  "[\"notes\",{\"path\":\"docs\",\"pattern\":\"*.txt\"}]");
    ASSERT_EQ(mnemo_config_set(c, "extraPaths", "[1,2]", "t", &err), MNEMO_INVALID);
    mnemo_free(err);
    mnemo_config_free(c);
}

TEST(config_layers_file_env_flag)
{
    test_write("ws/mnemo.json", "{\"maxResults\": 9, \"minScore\": 0.5, \"$schema\": \"x\"}");
    test_write("home/.config/mnemo/config.json", "{\"maxResults\": 3, \"chunkTokens\": 200}");
    setenv("MNEMO_MIN_SCORE", "0.25", 1);
    mnemo_config *c;
    ASSERT_OK(mnemo_config_new(&c));
    ASSERT_OK(mnemo_config_set(c, "workspace", test_path("ws"), "flag", NULL));
    char *err = NULL;
    int rc = mnemo_config_load_standard(c, NULL, &err);
    if (rc)
        test_fail(__FILE__, __LINE__, "%s", err);
    ASSERT_STR_EQ(mnemo_config_get(c, "maxResults"), "9");    /* workspace beats user file */
    ASSERT_STR_EQ(mnemo_config_get(c, "chunkTokens"), "200"); /* user file beats default */
    ASSERT_STR_EQ(mnemo_config_get(c, "minScore"), "0.25");   /* environment beats files */
    char *j = mnemo_config_json(c, 1);
    ASSERT_CONTAINS(j, "\"source\": \"MNEMO_MIN_SCORE\"");
    mnemo_free(j);
    ASSERT_OK(mnemo_config_set(c, "minScore", "0.4", "flag", NULL));
    j = mnemo_config_json(c, 0);
    ASSERT_CONTAINS(j, "\"minScore\": 0.4");
    mnemo_free(j);
    mnemo_config_free(c);
}

TEST(config_file_errors_name_the_problem)
{
    test_write("bad.json", "{\"maxResults\": 5,,}");
    test_write("unknown.json", "{\"maxResult\": 5}");
    test_write("type.json", "{\"maxResults\": \"many\"}");
    test_write("array.json", "[1]");
    mnemo_config *c;
    ASSERT_OK(mnemo_config_new(&c));
    char *err = NULL;
    ASSERT_EQ(mnemo_config_load_file(c, test_path("bad.json"), &err), MNEMO_INVALID);
    ASSERT_CONTAINS(err, "bad.json:1:");
    mnemo_free(err);
    err = NULL;
    ASSERT_EQ(mnemo_config_load_file(c, test_path("unknown.json"), &err), MNEMO_INVALID);
    ASSERT_CONTAINS(err, "maxResult");
    mnemo_free(err);
    err = NULL;
    ASSERT_EQ(mnemo_config_load_file(c, test_path("type.json"), &err), MNEMO_INVALID);
    ASSERT_CONTAINS(err, "maxResults");
    mnemo_free(err);
    err = NULL;
    ASSERT_EQ(mnemo_config_load_file(c, test_path("array.json"), &err), MNEMO_INVALID);
    mnemo_free(err);
    err = NULL;
    ASSERT_EQ(mnemo_config_load_file(c, test_path("missing.json"), &err), MNEMO_NOTFOUND);
    ASSERT_STR_EQ(mnemo_config_get(c, "maxResults"), "6"); /* untouched by failures */
    mnemo_config_free(c);
}

TEST(config_default_db_under_xdg_data_home)
{
    test_mkdir("ws");
    mnemo_config *c;
    ASSERT_OK(mnemo_config_new(&c));
    ASSERT_OK(mnemo_config_set(c, "workspace", test_path("ws"), "t", NULL));
    mnemo *m;
    ASSERT_OK(mnemo_open(c, &m));
    ASSERT_CONTAINS(mnemo_db_path(m), "/home/.local/share/mnemo/ws-");
    ASSERT_CONTAINS(mnemo_db_path(m), ".sqlite");
    mnemo_close(m);
    ASSERT_OK(mnemo_config_set(c, "workspace", test_path("nope"), "t", NULL));
    ASSERT_EQ(mnemo_open(c, &m), MNEMO_NOTFOUND);
    ASSERT_CONTAINS(mnemo_errmsg(m), "nope");
    mnemo_close(m);
    mnemo_config_free(c);
}
