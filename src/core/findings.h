/* Findings: what the rules concluded, each with a stable id, evidence and the exact fix. */
#ifndef GPUVET_FINDINGS_H
#define GPUVET_FINDINGS_H
#include <stddef.h>

#include "core/util.h"

typedef enum { SEV_INFO = 0, SEV_WARN = 1, SEV_FAIL = 2 } severity;

typedef struct finding {
	char *id;    /* stable, dotted, lower case: "driver.nouveau" */
	char *layer; /* layer of the rule that made it: "driver", "toolkit", ... */
	severity sev;
	char *title;
	strlist evidence;
	strlist fix;
	int rank; /* lower first within a severity; root causes get a low rank */
} finding;

typedef struct skipped_rule {
	char *id;
	char *reason;
} skipped_rule;

typedef struct findings {
	finding *v;
	size_t n, cap;
	skipped_rule *skipped;
	size_t nskipped, capskipped;
} findings;

void findings_init(findings *fs);
void findings_free(findings *fs);
finding *findings_add(findings *fs, const char *id, const char *layer, severity sev, const char *titlefmt, ...)
	GV_PRINTF(5, 6);
void finding_evidence(finding *f, const char *fmt, ...) GV_PRINTF(2, 3);
void finding_fix(finding *f, const char *fmt, ...) GV_PRINTF(2, 3);
void findings_skip(findings *fs, const char *id, const char *reasonfmt, ...) GV_PRINTF(3, 4);
const finding *findings_find(const findings *fs, const char *id);
/* Orders by severity (fail first), then rank, keeping the rule order otherwise. */
void findings_sort(findings *fs);

const char *severity_name(severity s);
bool severity_parse(const char *name, severity *out);

typedef struct finding_counts {
	int fail, warn, info;
} finding_counts;
finding_counts findings_count(const findings *fs);
#endif
