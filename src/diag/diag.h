/*
 * gpuvet diag: active tests that prove each GPU sound under load, in run levels as dcgmi diag's
 * (1 readiness in seconds, 2 about two minutes, 3 about fifteen, 4 longer). Each test gives, per
 * GPU (or for the node), pass / warn / fail / skip with its figure, the figure expected and the
 * margin; what is not a pass is a finding (DIAG_FINDINGS: one id for text, JSON, JUnit and the
 * history) with its evidence and what to do.
 *
 * The tests are declared once (DIAG_TESTS), the run levels once (diag_levels in tests.c), the
 * findings once (DIAG_FINDINGS); --help, the JSON, the docs' table and the catalogue read them.
 * The GPU work stands on bench's parts (the CUDA session, cuBLASLt GEMM plans, the memory-test
 * and compare kernels, the transfers and stream kernels, NVML's monitor) and never changes a
 * GPU setting.
 */
#ifndef GPUVET_DIAG_H
#define GPUVET_DIAG_H
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/findings.h"
#include "core/util.h"

typedef enum { DIAG_PASS = 0, DIAG_SKIP, DIAG_WARN, DIAG_FAIL } diag_status;
const char *diag_status_name(diag_status s); /* "pass", "skip", "warn", "fail" */

typedef enum { DIAG_SCOPE_NODE, DIAG_SCOPE_GPU } diag_scope;

/*
 * The tests, in the order they run: X(ID, name, level, scope, dcgm, what). level: the lowest
 * run level that runs it; dcgm: the dcgmi diag test (or gpu-burn / nvbandwidth feature) it
 * stands for. health runs last: it compares the counters at the start with those at the end.
 */
#define DIAG_TESTS(X)                                                                                               \
	X(DEPLOYMENT, "deployment", 1, DIAG_SCOPE_NODE, "software (deployment)",                                  \
	  "the fail findings of `gpuvet check --fast`, and cuInit with every GPU it lists")                      \
	X(GEMM, "gemm", 1, DIAG_SCOPE_GPU, "diagnostic / sm stress; gpu-burn",                                   \
	  "GEMMs through cuBLASLt checked against the CPU, then repeated with every result compared with the "   \
	  "first (silent data corruption); level 1 one precision for seconds, level 2 on every tensor-core "      \
	  "precision (and fp64 on HPC parts) for the stress time")                                                \
	X(MEMORY, "memory", 1, DIAG_SCOPE_GPU, "memory; memtest (cuda_memtest)",                                  \
	  "memtest86 patterns written and read back: level 1 and 2 over a slice, level 3 over at least 95% of "  \
	  "the free memory, level 4 several passes")                                                               \
	X(PCIE, "pcie", 1, DIAG_SCOPE_GPU, "pcie (host-device bandwidth); nvbandwidth",                          \
	  "pinned host-to-device and device-to-host copies against the link's expected speed, the link's "       \
	  "generation and width while it carries them, and its replay counter")                                   \
	X(BANDWIDTH, "bandwidth", 2, DIAG_SCOPE_GPU, "memory bandwidth",                                          \
	  "device memory bandwidth (stream triad) against the GPU class's expected figure")                      \
	X(POWER, "power", 3, DIAG_SCOPE_GPU, "targeted power; targeted stress",                                   \
	  "the heaviest GEMM back to back for minutes: the board must reach its enforced power limit with "      \
	  "throughput steady, every result compared, no thermal or hardware slowdown")                            \
	X(P2P, "p2p", 2, DIAG_SCOPE_NODE, "pcie (p2p); nvbandwidth",                                              \
	  "GPU-to-GPU copies over NVLink or PCIe between every pair")                                             \
	X(NCCL, "nccl", 2, DIAG_SCOPE_NODE, "nccl tests", "an NCCL all-reduce over every GPU")                    \
	X(HEALTH, "health", 1, DIAG_SCOPE_GPU, "(DCGM health watches)",                                           \
	  "ECC errors, row remapping, retired pages, PCIe replays and Xid events that appeared during the run")

#define DIAG_TI_(ID, ...) DIAG_T_##ID,
typedef enum { DIAG_TESTS(DIAG_TI_) DIAG_NTESTS } diag_test_id;
#undef DIAG_TI_

typedef struct diag_test_info {
	const char *name;
	int level;
	diag_scope scope;
	const char *dcgm;
	const char *what;
} diag_test_info;
extern const diag_test_info diag_tests[DIAG_NTESTS];
/* The test called name; -1 when none. */
int diag_test_find(const char *name);

/*
 * What each run level runs and for how long. The times are the GPU work per GPU; the levels'
 * targets are on an H200 (docs/diag.md has what they took).
 */
typedef struct diag_level {
	int level;
	const char *name;       /* quick, medium, long, xlong */
	const char *target;     /* "10 s" */
	double gemm_seconds;    /* the repeated GEMMs, over all precisions */
	bool gemm_all_types;    /* every tensor-core precision (else the first of them) */
	double memory_fraction; /* of the free memory */
	long long memory_max_bytes; /* 0: no cap */
	bool memory_all_patterns;
	int memory_passes;
	bool memory_all_bits;   /* walking ones over all 64 bit positions */
	long long pcie_bytes;
	double power_seconds;   /* 0: no power test */
} diag_level;
extern const diag_level diag_levels[4];
/* "1".."4" or quick/medium/long/xlong; NULL when neither */
const diag_level *diag_level_parse(const char *s);

/*
 * The findings, one table: X(ID, "id", test, severity, title, action). The title is completed by
 * the test (figures); the action is what an admin does. Evidence comes from the test.
 */
#define DIAG_RMA "collect `nvidia-bug-report.sh` and the board's serial number for an RMA"
#define DIAG_FINDINGS(X)                                                                                           \
	X(DEPLOYMENT, "diag.deployment", DIAG_T_DEPLOYMENT, SEV_FAIL, "the GPU stack is not deployed right",       \
	  "fix what `gpuvet check` says first; diag's GPU tests need a working driver and cuInit")                \
	X(GEMM_WRONG, "diag.gemm-wrong", DIAG_T_GEMM, SEV_FAIL, "a GEMM computed a wrong result",                 \
	  "take the GPU out of service: wrong results are silent data corruption; run `gpuvet diag -r 3` "        \
	  "again after a reset (nvidia-smi -r) to confirm, then " DIAG_RMA)                                      \
	X(GEMM_SLOW, "diag.gemm-slow", DIAG_T_GEMM, SEV_WARN, "GEMM throughput below what this GPU should do",    \
	  "look at the clocks and throttle reasons in the evidence (cooling, power delivery), compare with the " \
	  "GPU's peers; reseat or RMA a GPU that stays slow")                                                     \
	X(MEMORY_ERRORS, "diag.memory-errors", DIAG_T_MEMORY, SEV_FAIL, "device memory read back wrong",          \
	  "drain the node; reset the GPU (nvidia-smi -r with no process on it: row remapping takes effect at "   \
	  "reset) and run `gpuvet diag -r 3` again; errors that remain mean " DIAG_RMA)                          \
	X(PCIE_SLOW, "diag.pcie-slow", DIAG_T_PCIE, SEV_WARN, "host-device copies slower than the link should carry", \
	  "check the slot, riser and BIOS PCIe settings, the NUMA placement of the process (numactl), and the "  \
	  "GPU's peers")                                                                                           \
	X(PCIE_DOWNTRAINED, "diag.pcie-downtrained", DIAG_T_PCIE, SEV_FAIL,                                        \
	  "the PCIe link ran below its generation or width under load",                                          \
	  "reseat the GPU and its riser or cable; a link that trains down under load is a signal-integrity "     \
	  "fault of the slot, riser or board")                                                                     \
	X(PCIE_REPLAYS, "diag.pcie-replays", DIAG_T_PCIE, SEV_WARN, "the PCIe link retransmitted during the run", \
	  "replays mean a marginal link: reseat the GPU and its riser; many of them (thousands a minute) slow "  \
	  "every copy")                                                                                            \
	X(BANDWIDTH_SLOW, "diag.bandwidth-slow", DIAG_T_BANDWIDTH, SEV_WARN,                                        \
	  "device memory bandwidth below what this GPU should do",                                               \
	  "look at the memory clock and temperature in the evidence; compare with the GPU's peers; RMA a GPU "   \
	  "that stays slow")                                                                                       \
	X(POWER_LOW, "diag.power-low", DIAG_T_POWER, SEV_WARN, "the board did not hold its power limit under load", \
	  "a board that cannot draw its limit with clocks below their maximum is held back by something else: "  \
	  "the throttle reasons in the evidence say what (cooling, power delivery)")                             \
	X(THROTTLED, "diag.throttled", DIAG_T_POWER, SEV_WARN, "the GPU slowed down under load",                   \
	  "thermal slowdown: check airflow, fans and inlet temperature; hardware slowdown or power brake: the "   \
	  "board's power supply or an external signal (a failing PSU, a chassis alarm)")                         \
	X(UNSTABLE, "diag.throughput-sag", DIAG_T_POWER, SEV_WARN, "throughput fell during the run",               \
	  "throughput that falls over minutes is heat building up: check cooling; compare with the GPU's peers")  \
	X(ECC, "diag.ecc-errors", DIAG_T_HEALTH, SEV_FAIL, "ECC errors appeared during the run",                  \
	  "uncorrected errors: drain the node and reset the GPU, then run `gpuvet diag -r 3`; errors that come " \
	  "back mean " DIAG_RMA "; corrected errors alone: watch their rate")                                     \
	X(REMAP, "diag.row-remap", DIAG_T_HEALTH, SEV_FAIL, "the GPU remapped memory rows, or failed to",          \
	  "a pending remap takes effect at the next GPU reset (nvidia-smi -r, or a reboot); a remap failure "    \
	  "means " DIAG_RMA)                                                                                       \
	X(XID, "diag.xid", DIAG_T_HEALTH, SEV_FAIL, "the driver reported an Xid error during the run",             \
	  "the Xid's meaning and resolution are in the evidence (NVIDIA's Xid catalogue); a GPU fault: "          \
	  "reset the GPU and run diag again, then " DIAG_RMA)                                                     \
	X(PEER, "diag.peer-outlier", -1, SEV_WARN, "slower than the other GPUs of its kind",                       \
	  "the outlier is the GPU to look at: compare its clocks, temperature and link with its peers'; reseat " \
	  "or RMA it if it stays behind")                                                                          \
	X(HISTORY, "diag.history-drop", -1, SEV_WARN, "slower than this GPU measured before",                       \
	  "something changed: the driver, the cooling, the board; `gpuvet history compare` shows the two runs")  \
	X(P2P_FAIL, "diag.p2p", DIAG_T_P2P, SEV_FAIL, "GPU-to-GPU copies failed or ran slow",                      \
	  "check `nvidia-smi topo -m`, the NVLink state (gpuvet check) and the fabric manager on NVSwitch "       \
	  "systems; on PCIe, ACS and the IOMMU can block peer traffic")                                           \
	X(NCCL_FAIL, "diag.nccl", DIAG_T_NCCL, SEV_FAIL, "the NCCL all-reduce failed or ran slow",                 \
	  "run with NCCL_DEBUG=INFO for the transport NCCL chose; check NVLink and P2P first")                   \
	X(HUNG, "diag.hung", -1, SEV_FAIL, "a test did not finish within its deadline",                            \
	  "a GPU that stops answering needs a reset (nvidia-smi -r) or a reboot; look at the kernel log for an " \
	  "Xid; then " DIAG_RMA)                                                                                   \
	X(ERROR, "diag.cuda-error", -1, SEV_FAIL, "the GPU failed a test with a CUDA error",                       \
	  "an illegal address or a launch failure in gpuvet's own verified kernels is a fault of the GPU or its " \
	  "driver: look at the kernel log for an Xid, reset the GPU and run diag again")                         \
	X(BUSY, "diag.gpu-busy", -1, SEV_WARN, "other processes use the GPU: it was not tested",                   \
	  "run diag on an idle GPU (drain it first), or with --force to test what is free")

#define DIAG_FI_(ID, ...) DIAG_F_##ID,
typedef enum { DIAG_FINDINGS(DIAG_FI_) DIAG_NFINDINGS } diag_finding_id;
#undef DIAG_FI_

typedef struct diag_finding_info {
	const char *id;
	int test; /* diag_test_id, -1 any */
	severity sev;
	const char *title;
	const char *action;
} diag_finding_info;
extern const diag_finding_info diag_findings[DIAG_NFINDINGS];

/* One test's outcome on one GPU (gpu -1: the node). */
typedef struct diag_result {
	int test;          /* diag_test_id */
	int gpu;           /* CUDA ordinal; -1 node */
	diag_status st;
	char metric[48];   /* the figure's name: "gemm.bf16", "memory.errors", "pcie.h2d" */
	char unit[16];
	double value;      /* NAN when the test has no figure */
	double expected;   /* NAN when nothing is expected */
	char expected_src[160]; /* where expected comes from */
	double seconds;
	char summary[400]; /* one line */
	strlist evidence;
	int finding;       /* the most severe diag_finding_id of a warn or fail, -1 none */
	severity sev;      /* of that finding */
	/* every finding of the result (a power test can be held back and throttled at once): one
	 * finding each, sharing the result's evidence */
	int nfindings;
	int findings[4];
	severity sevs[4];
	/* more figures of the same test, for the history and peers (metric = value unit) */
	size_t nextra;
	struct diag_figure {
		char metric[48];
		char unit[16];
		double value;
		int better; /* 1 higher is better, -1 lower, 0 neither */
	} extra[16];
} diag_result;

typedef struct diag_gpu {
	int ordinal;    /* CUDA */
	int nvml;       /* NVML index, -1 unknown */
	char name[128];
	char uuid[96];
	char bus_id[32];
	char serial[32];
	bool tested;    /* false: skipped as a whole (busy, deployment) */
	bool mig;       /* a MIG instance (CUDA names it "... MIG 1g.10gb"): a slice of the board, so no
			 * class figure and no power test apply; its peers are the instances of its profile */
	char skip_reason[256];
	diag_status st; /* the worst of its results */
} diag_gpu;

typedef enum { DIAG_INJECT_NONE = 0, DIAG_INJECT_GEMM, DIAG_INJECT_MEMORY } diag_inject;

typedef struct diag_opts {
	const diag_level *level;
	bool tests[DIAG_NTESTS]; /* what runs (from the level, or --test) */
	bool tests_given;        /* --test named them */
	const char *gpus;        /* --gpus LIST of CUDA ordinals; NULL all */
	double duration;         /* --duration S: the stress tests' time; 0 the level's */
	int gemm_n;              /* --size N: the GEMMs' n (the power test's is twice it); 0: 8192 */
	diag_inject inject;
	bool force;
	bool progress;
	bool no_history;
	const char *db;
	double limit_scale; /* the deadlines (tests, slow machines) */
} diag_opts;

typedef struct diag_run {
	const diag_opts *o;
	int argc;
	char **argv;
	char host[256];
	char started_utc[32];
	double seconds;
	char driver[32];
	char cuda_driver[16];
	diag_gpu *gpus;
	int ngpus;
	diag_result *res;
	size_t nres, cap;
	findings fs;            /* one per result that is not a pass, plus deployment's check findings */
	bool interrupted;       /* SIGINT / SIGTERM: partial */
	int signal;
	bool internal_error;
	bool usage_error;       /* --gpus named a GPU that is not there */
	char error[512];        /* why nothing could be tested */
	long long history_id;   /* 0 not stored */
} diag_run;

/* Runs what o asks; never returns NULL. stop: set by a signal handler (the run ends within 2 s,
 * its results kept). */
diag_run *diag_run_all(const diag_opts *o, int argc, char **argv, volatile sig_atomic_t *stop);
void diag_run_free(diag_run *r);
/* What prints the run when a test hangs (the watchdog's hook ends the process after it). */
void diag_set_hang_hook(void (*emit)(diag_run *r));
/* 0 all pass (or warn), 1 a GPU failed, 3 internal error; 128 + signal when interrupted. */
int diag_exit_code(const diag_run *r);

/* Renderers (render.c). */
void diag_render_text(FILE *out, const diag_run *r, bool color);
struct cJSON *diag_render_json(const diag_run *r);
void diag_render_junit(FILE *out, const diag_run *r);
/* The --help table of tests and levels. */
void diag_print_tests(FILE *out);

/* Results (result.c): a new result of the run, its status and finding. */
diag_result *diag_result_add(diag_run *r, int test, int gpu);
void diag_result_set(diag_result *x, diag_status st, const char *fmt, ...) GV_PRINTF(3, 4);
/* Makes x a warn or fail with finding f (its severity unless sev_override >= 0). */
void diag_result_finding(diag_result *x, diag_finding_id f, int sev_override);
void diag_result_figure(diag_result *x, const char *metric, double value, const char *unit, int better);
/* The run's findings from its results (after peers and history): one per result that is not a
 * pass, with the GPU in the title and the evidence and action as its lines. */
void diag_collect_findings(diag_run *r);

/* Judging (judge.c), pure. */
/* Expected figure of metric for a GPU name from the knowledge base (data/diag_expected.csv):
 * value, the warn and fail fractions, the source. False when the table has none. */
typedef struct diag_expect {
	double value;
	double warn_below; /* fraction of value: 0.85 */
	double fail_below;
	char source[160];
} diag_expect;
bool diag_expected(const char *gpu_name, const char *metric, diag_expect *out);
/* value against e: pass, warn or fail, margin in percent into *margin. */
diag_status diag_judge_figure(double value, const diag_expect *e, bool higher_better, double *margin);
/* Peers: each GPU's figure against the median of the other GPUs of the same name; warn below
 * 90% of it, fail below 75%. Adds diag.peer-outlier results. */
#define DIAG_PEER_WARN 0.90
#define DIAG_PEER_FAIL 0.75
void diag_judge_peers(diag_run *r);
/* Each speed against the same GPU's (by UUID) in the last diag run of the history at db (NULL:
 * the default); adds diag.history-drop results. Nothing without a previous run. */
void diag_judge_history(diag_run *r, const char *db);

/* What appeared between two samples of one GPU (t_health.c): ECC, retired pages, remapped rows,
 * Xid events, a GPU lost; into x (its status, finding, evidence, value: the kinds of error). */
struct gpu_sample;
void diag_judge_health(const struct gpu_sample *before, const struct gpu_sample *after, diag_result *x);
/* The power test's verdict (t_stress.c) from its steady part: the mean and highest power, the
 * enforced limit (W, 0 unknown), the clock event reasons seen, the highest temperature, and the
 * throughput of the first and last fifth of the batches; into x. */
void diag_judge_power(double mean_w, double max_w, double limit_w, unsigned long long reasons, double temp_max_c,
		      double tflops_first, double tflops_last, diag_result *x);
/* The multi-GPU tests' verdicts (t_multi.c) from bench's figures of the p2p and nccl groups. */
struct bench_report;
void diag_judge_p2p(const struct bench_report *rep, bool context_broken, diag_result *x);
void diag_judge_nccl(const struct bench_report *rep, diag_result *x);

/* Fleet (merge.c): many nodes' `diag --json` documents (texts[i], read from files[i]) into one
 * table with the outliers against the fleet's median per GPU class; 0 all pass, 1 a fail or an
 * outlier that fails, 2 a text that is not a diag document (the error names its file). */
int diag_merge(int nfiles, char *const *files, char *const *texts, bool json, FILE *out);
#endif
