/*
 * map.h - a string-keyed open-addressing hash map to size_t values, for
 * in-memory lookups such as path -> file row during a sync. Keys are
 * borrowed: they must outlive the map.
 */
#ifndef MNEMO_MAP_H
#define MNEMO_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct map {
    const char **keys;
    size_t *vals;
    uint64_t *hashes;
    size_t cap, n;
} map;

void map_init(map *m);
void map_cleanup(map *m);
/* Inserts or replaces. MNEMO_OK or MNEMO_NOMEM. */
int map_put(map *m, const char *key, size_t val);
/* Returns 1 and stores the value when found. */
int map_get(const map *m, const char *key, size_t *val);

#endif
