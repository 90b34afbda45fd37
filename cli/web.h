/*
 * web.h - the page `mnemo serve` answers at / (the files of web/, built
 * into the binary by scripts/embed-web; see docs/ui.md).
 */
#ifndef MNEMO_CLI_WEB_H
#define MNEMO_CLI_WEB_H

#include <stddef.h>

typedef struct web_file {
    const char *path;          /* "/index.html", "/app.js" ... */
    const unsigned char *data; /* LEN bytes, then a 0 */
    size_t len;
} web_file;

/* The page's files, ending with a NULL path. */
extern const web_file web_files[];

#endif
