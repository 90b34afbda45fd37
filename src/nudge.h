/*
 * nudge.h - proper-noun candidates in a prompt, for the recall nudge
 * (mnemo hook claude-code).
 */
#ifndef MNEMO_NUDGE_H
#define MNEMO_NUDGE_H

int nudge_placeholder(void);

#endif
