/* The Xid catalogue (data/xid.csv): what an Xid code means and what to do about it. */
#ifndef GPUVET_KB_XID_H
#define GPUVET_KB_XID_H
#include <stdbool.h>

#include "kb/kb.h"

typedef struct xid_info {
	const char *meaning; /* "" when the catalogue does not know the code */
	const char *action;
	bool severe; /* the GPU needs attention (reset, drain, RMA), not only the application */
} xid_info;

/* Looks the code up; false (and generic text in *out) when the catalogue lacks it. */
bool kb_xid_lookup(const kb *k, unsigned code, xid_info *out);
#endif
