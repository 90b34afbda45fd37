#include "nudge.h"

int nudge_placeholder(void) { return 0; }
