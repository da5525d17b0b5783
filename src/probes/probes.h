/*
 * Probes collect facts and never judge or print. Each probe owns a key prefix (documented in
 * docs/facts.md) and runs in its own thread, so the slow ones (cuInit takes ~0.4 s on an H200
 * machine, the Python child seconds) overlap with the rest.
 */
#ifndef GPUVET_PROBES_H
#define GPUVET_PROBES_H
#include <stdbool.h>

#include "core/child.h"
#include "core/facts.h"

typedef struct probe_opts {
	bool fast;              /* NVML and files only: no cuInit, no Python; the fixed limits cached (probes/nvml_limits.h) */
	bool no_python;         /* skip the live Python probe */
	const char *python;     /* --python PATH */
	int python_timeout_ms;  /* --python-timeout */
	bool run_tree_python;   /* --run-tree-python: under --root, run the tree's interpreter (a warning) */
	/* the facts of an earlier check of this machine in which the kernel driver hung (gpuvet run's
	 * pre-flight; probes_driver_hung): the probes that call into it (PROBE_DRIVER) do not wait
	 * for it again; theirs are that check's facts where it has them */
	const facts *driver_hung;
	/* other work for the wait on the driver: run on a thread of its own once the children are
	 * started (never beside a fork), joined with the probes (the rules' tables: diagnose.c) */
	void (*beside)(void *arg);
	void *beside_arg;
} probe_opts;

enum {
	PROBE_USES_CUINIT = 1, /* skipped by --fast */
	PROBE_PYTHON_LIVE = 2, /* skipped by --fast and --no-python */
	PROBE_ISOLATED = 4,    /* loads vendor libraries: runs in a supervised child (core/child.h) */
	PROBE_DRIVER = 8,      /* calls into the kernel driver (nvmlInit, cuInit): see driver_hung */
};

typedef struct probe {
	const char *name;
	unsigned flags;
	void (*run)(facts *f, const probe_opts *o);
	/* PROBE_ISOLATED: seconds the child may take (GPUVET_DRIVER_TIMEOUT overrides), and what the
	 * parent puts when it did not report (the child's isolation.NAME.* facts are put already) */
	double child_timeout;
	void (*child_failed)(facts *f, const probe_opts *o, const gv_child_report *r);
} probe;

/* Under a deadline (gv_deadline_set), the time an isolated probe needs at least to say something
 * of use: with less left it is not started. */
#define PROBES_ISOLATED_MIN_SECONDS 0.5
/* Runs every registered probe (in parallel) and waits for all. */
void probes_run(facts *f, const probe_opts *o);
/* True when nvmlInit or cuInit did not answer in time in these facts (nvml.timeout, cuda.timeout). */
bool probes_driver_hung(const facts *f);
extern const probe probe_table[];

/* The probes, one per file in probes/. */
void probe_hardware(facts *f, const probe_opts *o);
void probe_python(facts *f, const probe_opts *o);
void probe_python_live(facts *f, const probe_opts *o);
void probe_toolkit(facts *f, const probe_opts *o);
void probe_loader(facts *f, const probe_opts *o);
void probe_devices(facts *f, const probe_opts *o);
void probe_env(facts *f, const probe_opts *o);
void probe_container(facts *f, const probe_opts *o);
void probe_nvml(facts *f, const probe_opts *o);
void probe_cudalib(facts *f, const probe_opts *o);
void probe_cuda(facts *f, const probe_opts *o);
void probe_kmsg(facts *f, const probe_opts *o);
/* The parent's facts when an isolated probe's child hung, crashed or exited. */
void probe_nvml_failed(facts *f, const probe_opts *o, const gv_child_report *r);
void probe_cudalib_failed(facts *f, const probe_opts *o, const gv_child_report *r);
void probe_cuda_failed(facts *f, const probe_opts *o, const gv_child_report *r);
void probe_loader_failed(facts *f, const probe_opts *o, const gv_child_report *r);
void probe_topology(facts *f, const probe_opts *o);
/* NVLink facts of one GPU (probes/nvlink.c), called by probe_nvml per GPU */
void probe_nvlink_gpu(facts *f, int gpu);
#endif
