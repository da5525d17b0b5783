/*
 * The facts of a library child (core/child.h) as bytes for its report pipe. Both ends are the
 * same program (a fork without exec), so the layout is this build's own: no version, no byte
 * order. JSON did this before (facts_to_json, cJSON's printer and parser, facts_from_json and a
 * merge): 0.5 ms on the check's critical path at the end of the NVML child on an H100, and an
 * integral real came back an integer. These bytes carry every field as it was.
 */
#ifndef GPUVET_FACTS_WIRE_H
#define GPUVET_FACTS_WIRE_H
#include <stdbool.h>
#include <stddef.h>

#include "core/facts.h"

/* Every current fact of f, in order; *len bytes, malloc'd. */
char *facts_wire_pack(const facts *f, size_t *len);
/* Puts the facts of buf into dst, in order, as puts would; false, and dst untouched, when buf is
 * not whole (cut short, a field out of range, bytes after the last fact). */
bool facts_wire_unpack(facts *dst, const char *buf, size_t len);
#endif
