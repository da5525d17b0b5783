/*
 * The facts as the text cJSON prints for facts_to_json's tree, without the tree: check --json's
 * document is mostly its facts (about 200 KiB), and building, printing and deleting their tree
 * cost 1.85 ms of check --fast --json on an H100. The same bytes, formatted as cJSON_Print
 * formats an object whose members sit at depth (1: the document's own), so that a document can
 * take them as a raw item (render/check_json.c). tests/unit/test_core.c holds the two to the same
 * bytes.
 */
#ifndef GPUVET_FACTS_PRINT_H
#define GPUVET_FACTS_PRINT_H
#include "core/facts.h"

/* The facts object's text, malloc'd; depth is that of the object's members (2 in a document). */
char *facts_json_print(const facts *f, int depth);
#endif
