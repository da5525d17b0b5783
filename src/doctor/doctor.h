/*
 * The job doctor: what holds a training job back, from what its GPUs and its processes did
 * over a few seconds. `gpuvet watch --pid PID --diagnose S` collects the evidence (GPU
 * snapshots from the sampler, CPU time of every thread of the job's process tree from
 * /proc/PID/task/TID/stat) and doctor_diagnose names one cause, the figures behind it and the
 * fix. docs/watch.md lists the classes and their thresholds (doctor_thresholds_default).
 *
 * doctor_diagnose is pure (evidence in, verdict out): tests feed it hand-made evidence, and
 * other commands (gpuvet run) can feed it evidence they collected themselves.
 */
#ifndef GPUVET_DOCTOR_H
#define GPUVET_DOCTOR_H
#include <stdbool.h>
#include <stddef.h>

#include "nvidia/gpm_fields.h"

#define DOCTOR_MAX_GPUS 16
#define DOCTOR_MAX_LINES 8

/* What one of the job's GPUs did, averaged over the samples; NAN where unknown. */
typedef struct doctor_gpu {
	int index;
	char name[96];
	int samples;
	double util;              /* NVML utilization.gpu, ratio 0-1 */
	bool gpm;                 /* GPM counters were read (act[] holds means) */
	double act[GV_GPM_N];     /* GPM means in base units (ratio, bytes per second) */
	double cc;                /* compute capability (9.0), 0 when unknown */
	double mem_total, mem_used; /* bytes, the GPU's */
	double job_mem;           /* bytes the job's processes hold on it (max over samples) */
	double other_mem;         /* bytes other processes hold on it (max over samples) */
	double job_sm, other_sm;  /* share of SM time of the job's / the others' processes
				   * (nvmlDeviceGetProcessUtilization, means; NAN unknown) */
	int job_procs;            /* processes of the job holding this GPU */
	bool by_fd;               /* known from the job's open /dev/nvidiaN, not NVML's process list
				   * (another PID namespace): job and other memory unknown */
	int other_procs;
	double power, power_limit, power_default_limit; /* W, means; limits as read */
	double temp_max;          /* C */
	/* fractions of the samples in which the clock event reason was set */
	double power_cap_frac, thermal_frac, hw_slowdown_frac;
} doctor_gpu;

/* What the job's processes did on the CPU over the window. */
typedef struct doctor_cpu {
	double seconds;         /* window */
	int nprocs;             /* processes of the job seen */
	int gpu_procs;          /* of them, those holding a GPU (the ranks, the main process) */
	int workers;            /* the others (DataLoader workers, launchers) */
	int workers_busy;       /* workers whose busiest thread is at or above busy_thread (as main_thread) */
	double main_cpu;        /* cores used by the busiest GPU-holding process (all threads) */
	double main_thread;     /* the busiest thread of a GPU-holding process: the share of the window it
				 * ran or waited to run (schedstat; CPU time alone without it), 0-1 */
	unsigned main_pid, main_tid;
	double workers_cpu;     /* cores used by all workers together */
} doctor_cpu;

typedef struct doctor_evidence {
	unsigned pid;            /* the job's root process */
	bool alive;
	double seconds;          /* how long it was watched */
	int ngpus;               /* GPUs the job holds (gpus[]) */
	doctor_gpu gpus[DOCTOR_MAX_GPUS];
	doctor_cpu cpu;
	double tune_tf32_gain;   /* speed-up `gpuvet tune` measured for AMP/TF32 on this GPU class, NAN unknown */
	char tune_source[96];    /* e.g. "gpuvet tune run 12 on NVIDIA H200, resnet50 amp" */
} doctor_evidence;

typedef struct doctor_thresholds {
	double busy;             /* SM active (or utilization without GPM) at or above: the GPU is the bottleneck, 0.80 */
	double idle;             /* below: the GPU waits most of the time, 0.50 */
	double tensor_bound;     /* tensor pipes active at or above, 0.50 */
	double tensor_idle;      /* tensor pipes below: not used, 0.05 */
	double dram_bound;       /* DRAM bandwidth at or above, 0.50 */
	double fp32_busy;        /* FP32 pipe at or above: fp32 math, 0.15 */
	double fp64_bound;       /* FP64 pipe (or DFMA tensor) at or above, 0.30 */
	double busy_thread;      /* a thread at or above this fraction of a core is saturated, 0.85 */
	double launch_gap;       /* utilization minus SM active at or above, 0.15 */
	double launch_sm;        /* SM active below this fraction of utilization: kernels too small to fill the GPU, 0.25 */
	double mem_full;         /* the job's (or the GPU's) memory at or above this share of the total, 0.95 */
	double other_mem;        /* other processes' memory at or above this share of the total, 0.10 */
	double other_sm;         /* other processes' SM time at or above: a note, 0.20 */
	double imbalance_low;    /* a GPU of the job below this while another is at or above busy, 0.20 */
	double pcie_rx_high;     /* host-to-device bytes/s at or above: copies matter, 1e9 */
	double pcie_tx_sync;     /* device-to-host bytes/s at or above (more than comes in), the SMs idle and
				  * the host busy: results copied off each step, 0.5e9 */
	double slowdown_frac;    /* thermal or hardware slowdown in at least this share of samples, 0.10 */
	double limit_lowered;    /* enforced power limit below this share of the default, 0.95 */
} doctor_thresholds;
void doctor_thresholds_default(doctor_thresholds *t);

typedef enum { DOCTOR_OK = 0, DOCTOR_INFO, DOCTOR_WARN } doctor_level;

typedef struct doctor_verdict {
	const char *id;          /* "job.tensor-bound" ...: docs/watch.md */
	doctor_level level;      /* ok: the GPU works at what it should; warn: speed is lost */
	char title[160];
	int gpu;                 /* the GPU concerned, -1 for the job */
	size_t nevidence, nfix, nnote;
	char evidence[DOCTOR_MAX_LINES][200];
	char fix[DOCTOR_MAX_LINES][240];
	char note[DOCTOR_MAX_LINES][240]; /* secondary observations (power cap at full load, memory) */
} doctor_verdict;

/* The one verdict for the evidence; t NULL for the defaults. */
void doctor_diagnose(const doctor_evidence *ev, const doctor_thresholds *t, doctor_verdict *out);
const char *doctor_level_name(doctor_level l); /* "ok", "info", "warn" */

/* ---- collecting the evidence (watch --diagnose) ---- */

struct snapshot;
struct job;
typedef struct doctor_acc doctor_acc;
/* Starts a window for the job (reads every thread's CPU time now). */
doctor_acc *doctor_acc_new(const struct job *j);
/* Adds one snapshot (the job's GPUs are those its processes hold). */
void doctor_acc_add(doctor_acc *a, const struct snapshot *s, const struct job *j);
/* Ends the window (CPU time again) and fills the evidence. */
void doctor_acc_finish(doctor_acc *a, const struct job *j, doctor_evidence *ev);
void doctor_acc_free(doctor_acc *a);

/* The running verdict of watch --pid: a new window every `window` seconds; the verdict of the
 * last complete window stays until the next. Zero-initialise, set window. */
typedef struct doctor_running {
	double window; /* seconds, 10 when 0 */
	doctor_acc *acc;
	double started;
	bool have;     /* a window completed: ev and v hold its verdict */
	doctor_evidence ev;
	doctor_verdict v;
} doctor_running;
void doctor_running_feed(doctor_running *r, const struct snapshot *s, const struct job *j);
void doctor_running_free(doctor_running *r);

/* The speed-up `gpuvet tune` measured on a GPU named gpu_name for its best precision setting
 * (TF32, AMP bf16, AMP fp16) over fp32, from the newest such tune run in the history database
 * at db (NULL: the default path); *source says which run. False (gain NAN) when none. */
bool doctor_tune_gain(const char *db, const char *gpu_name, double *gain, char *source, size_t ssize);

/* The verdict as text: "job PID: TITLE [ID, LEVEL]", then the evidence, notes ("note: ") and
 * fixes ("-> "), each line indented by indent. malloc'd. */
char *doctor_text(const doctor_evidence *ev, const doctor_verdict *v, const char *indent);

/* JSON of a verdict with its evidence figures (schema gpuvet.diagnose/1, docs/watch.md). */
struct cJSON;
struct cJSON *doctor_json(const doctor_evidence *ev, const doctor_verdict *v);
#endif
