/*
 * The answer of the live PyTorch probe (data/probe_torch.py): one line "GPUVET-PROBE-JSON:{...}"
 * somewhere in the child's stdout. Parsing treats it as hostile input: wrong types, huge arrays,
 * NaN written as text, absurd numbers and control characters give unknown facts, never a crash.
 */
#ifndef GPUVET_PROBE_OUT_H
#define GPUVET_PROBE_OUT_H
#include <stddef.h>

#include "core/facts.h"

#define PROBE_MARKER "GPUVET-PROBE-JSON:"
#define PROBE_SCHEMA "gpuvet.probe_torch/1"

enum {
	PROBE_OUT_OK = 0,
	PROBE_OUT_NO_MARKER = -1, /* the child printed no result line */
	PROBE_OUT_BAD_JSON = -2,  /* the result line is not a JSON object */
	PROBE_OUT_BAD_SCHEMA = -3 /* a JSON object, but not this probe's */
};

/* Parses the child's stdout (len bytes, need not be NUL-terminated) and puts python.live.* facts
 * (docs/facts/python.md). The library paths it reports are kept as given; callers add versions.
 * err gets a short description of a failure. */
int probe_out_parse(const char *out, size_t len, facts *f, char *err, size_t errn);
#endif
