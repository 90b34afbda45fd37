/*
 * mcp.h - the Model Context Protocol server: JSON-RPC 2.0 messages in,
 * responses out, over any transport (mnemo mcp on stdio, mnemo serve at
 * /mcp). The tools are the operations of api.h.
 */
#ifndef MNEMO_CLI_MCP_H
#define MNEMO_CLI_MCP_H

#include <stddef.h>

#include "mnemo.h"

/* Handles one message (an object or a batch array) of LEN bytes. Returns
 * the response text (caller frees), or NULL when none is due: the message
 * held only notifications or responses. Never fails silently: a message
 * that is not JSON gets a parse error response. */
char *mcp_handle(mnemo *m, const char *msg, size_t len);

/* ON: before each tool that reads the notes (memory_search, memory_recall,
 * memory_status), bring the index up to date with what changed since the
 * last (mnemo_refresh): for a server with no watcher of its own (mnemo mcp
 * on stdio; mnemo serve watches). */
void mcp_keep_fresh(int on);

/* 1 when VERSION is a protocol version this server speaks. */
int mcp_version_supported(const char *version);

#endif
