/* Renderers turn facts and findings into text, JSON or JUnit; they compute nothing. */
#ifndef GPUVET_RENDER_H
#define GPUVET_RENDER_H
#include <stdbool.h>
#include <stdio.h>

#include "core/color.h"
#include "core/facts.h"
#include "core/findings.h"

typedef struct render_opts {
	bool color;
	bool verbose; /* list every fact */
	bool strict;  /* warn counts as failure in the verdict */
	double seconds;
} render_opts;

void render_check_text(FILE *out, const facts *f, const findings *fs, const render_opts *o);
/* The GPU/NIC path matrix of the topology.* facts (render/topology_text.c); nothing without paths. */
void render_topology_text(FILE *out, const facts *f, bool color);
/* One finding of the gpuvet.check/1 document (id, severity, layer, title, evidence, fix, fixes). */
struct cJSON *render_finding_json(const finding *x);
/* A JSON document's head, the same in every gpuvet document that carries it: {"schema": schema,
 * "tool": {"name": "gpuvet", "version": GPUVET_VERSION}}; the caller adds the rest. */
struct cJSON *render_json_document(const char *schema);
/* The gpuvet.check/1 document; caller frees with cJSON_Delete. */
struct cJSON *render_check_json(const facts *f, const findings *fs, const render_opts *o);
/* raw as XML text (attr: inside an attribute's quotes), sanitized first (core/text.h): the JUnit
 * writers of check and diag. */
void render_xml_escape(FILE *out, const char *raw, bool attr);
/* requires: the --require expressions (one test case each), may be NULL. */
void render_check_junit(FILE *out, const findings *fs, const strlist *requires, const render_opts *o);

#endif
