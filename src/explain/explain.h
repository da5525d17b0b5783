/*
 * From recognised error signatures to the report `gpuvet explain` and `gpuvet run` print: the
 * probes that decide the signatures' causes run (the live Python probe only when a cause needs
 * it), the rules judge, and each error is printed with the cause that holds, its evidence and fix,
 * and the causes ruled out. When no candidate holds, or nothing was recognised, the whole check
 * runs and is printed after the explanation.
 */
#ifndef GPUVET_EXPLAIN_EXPLAIN_H
#define GPUVET_EXPLAIN_EXPLAIN_H
#include <stdbool.h>
#include <stdio.h>

#include "explain/match.h"
#include "probes/probes.h"

typedef struct explain_opts {
	probe_opts po;          /* --fast, --no-python, --python, --python-timeout */
	const char *facts_file; /* --facts: judge recorded facts instead of probing */
	bool json, verbose;
	bool no_fallback;       /* gpuvet run: no full check when nothing was recognised */
	FILE *out;
	const char *command;    /* "explain" or "run": in the header line */
} explain_opts;

/* The error catalogue of the global knowledge base; NULL with the error printed when the table
 * does not load. Free with sig_catalogue_free. */
sig_catalogue *explain_catalogue(void);
/* Prints the report for the hits of a finished scan; returns check's exit status (1 when a fail
 * finding holds, 0 otherwise, 2 when --facts does not load). */
int explain_report(const sig_catalogue *c, const sig_hit *hits, size_t nhits, unsigned long lines,
		   const explain_opts *o);
#endif
