/*
 * glob.h - path glob matching for extraPaths patterns: '*' and '?' stay
 * within one path segment, a double star crosses segments (a double star
 * followed by a slash also matches no folder at all), [abc] and [!a-z]
 * classes. A pattern without '/' is matched
 * against the base name, as in .gitignore.
 */
#ifndef MNEMO_GLOB_H
#define MNEMO_GLOB_H

/* Returns 1 when PATH (relative, '/'-separated) matches PATTERN. */
int glob_match(const char *pattern, const char *path);

#endif
