/*
 * The job doctor: what holds a training job back, from what its GPUs and its processes did
 * over a few seconds. The live pipeline (doctor_live, below) is its one entry point, for
 * `gpuvet watch --pid` (the running verdict), `watch --pid PID --diagnose S` and `gpuvet run`:
 * it takes the sampler's snapshots and the job (sampler/job.h), sums each GPU over a window
 * (sampler/summary.h), reads the job's threads' CPU time and, while its GPUs idle, what they
 * wait on (sampler/jobcpu.h, sampler/waits.h), and doctor_diagnose names one cause, the figures
 * behind it and the fix. docs/watch.md lists the classes and their thresholds
 * (doctor_thresholds_default).
 *
 * doctor_diagnose is pure (evidence in, verdict out): tests feed it hand-made evidence.
 */
#ifndef GPUVET_DOCTOR_H
#define GPUVET_DOCTOR_H
#include <stdbool.h>
#include <stddef.h>

#include "health/conditions.h"
#include "nvidia/gpm_fields.h"
#include "sampler/job.h"
#include "sampler/mounts.h"
#include "sampler/pystack.h"
#include "sampler/rendezvous.h"
#include "sampler/summary.h"
#include "sampler/waits.h"

#define DOCTOR_MAX_GPUS 16
#define DOCTOR_MAX_LINES 12
#define DOCTOR_LINE_MAX 512

/* What one of the job's GPUs did over the window: the per-GPU window summary
 * (sampler/summary.h), the job's processes as the job. */
typedef gpu_summary doctor_gpu;

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
	double workers_demand;  /* the workers' mean share of the window their busiest thread ran or waited to
				 * run (PyTorch's DataLoader workers alone where they are named pt_data_worker),
				 * 0-1; NAN without workers */
	int dataloader_workers; /* workers whose thread is named pt_data_worker (PyTorch names them so) */
	int compilers;          /* processes of the job that compile kernels (wait_compile_process: a C/C++
				 * compiler, ptxas, nvcc, Inductor's compile workers); not among the workers */
	double compilers_cpu;   /* cores they used together */
	double compilers_demand; /* the busiest one's demand (as workers_demand: ran or waited to run), 0-1 */
	double job_cores;       /* cores the whole job used */
	double idle_cores;      /* cores the job could use that stayed idle over the window: the idle time of
				 * the CPUs of its affinity, at most its cgroup quota's rest; NAN unknown */
	int cpus;               /* CPUs the job may run on (its affinity); 0 unknown */
	double quota_cores;     /* its cgroup's CPU quota in cores; NAN none */
	double main_age;        /* seconds since the main GPU process started, at the window's end; NAN unknown */
	/* CPU work spread over threads in a GPU process (torch ops on CPU tensors, tokenizers, numpy):
	 * its threads that each used at least JOBCPU_BUSY_MIN_CORES of a core, the libraries' service
	 * threads left out (wait_service_thread), in the GPU process with the most such cores */
	int compute_threads;
	double compute_cores;
} doctor_cpu;

/* What a thread of the job waited on, over the samples of the window in which the job's GPUs
 * were idle (sampler/waits.h). */
#define DOCTOR_MAX_WAITS 6
typedef struct doctor_wait {
	unsigned pid, tid;
	char comm[16];      /* the thread's name */
	bool gpu_process;   /* a thread of a process holding a GPU (else a worker's) */
	int workers;        /* > 0: the same wait of this many workers' main threads, summed */
	int samples;        /* samples of the thread(s) */
	int count;          /* samples in this wait */
	wait_kind kind;
	char call[24];      /* "read"; "" unknown (wchan only) */
	bool fault;         /* in page faults, outside any call (memory-mapped data, swap) */
	unsigned listen_port; /* it waits for connections (accept, an event loop): the listening TCP port; 0 */
	unsigned peer_port;   /* it waits on a connected TCP socket: the peer's port; 0 */
	char terminal[40];  /* the terminal it reads (a prompt, pdb): "/dev/pts/3"; "" none */
	char what[200];     /* a path, "a TCP socket to 10.0.0.5:29500", "a pipe to pid 4250 (python)"; "" */
	/* a storage wait: the data file it reads and the mount that holds it (fstype "" unknown) */
	char data_file[160];
	mount_info mount;
	const mount_remote *remote; /* storage that is no local disk (NFS, Lustre, FUSE, 9p); NULL */
} doctor_wait;

typedef struct doctor_waits {
	bool sampled;       /* threads were sampled */
	bool denied;        /* neither root nor the job's user: not read */
	long uid;           /* the job's user, -1 unknown */
	bool wchan_only;    /* the system calls could not be read (Yama, another user): kernel functions only */
	int n;
	doctor_wait w[DOCTOR_MAX_WAITS]; /* w[0]: the main thread of the GPU process, when sampled */
	char interactive[24]; /* the main GPU process is "a Jupyter kernel", "an IPython shell"; "" */
	bool py_tried;      /* py-spy was looked for */
	pystack py;         /* its frames of the main thread, or why none */
} doctor_waits;

typedef struct doctor_evidence {
	unsigned pid;            /* the job's root process */
	bool alive;
	double seconds;          /* how long it was watched */
	int ngpus;               /* GPUs the job holds (gpus[]) */
	doctor_gpu gpus[DOCTOR_MAX_GPUS];
	doctor_cpu cpu;
	doctor_waits waits;
	dist_rank dist;          /* the main GPU process as a torch.distributed rank (read with the waits) */
	double tune_tf32_gain;   /* speed-up `gpuvet tune` measured for AMP/TF32 on this GPU class, NAN unknown */
	char tune_source[96];    /* e.g. "gpuvet tune run 12 on NVIDIA H200, resnet50 amp" */
} doctor_evidence;

/* Below this busy share (SM active, or utilization without GPM) a GPU waits most of the time:
 * the default of doctor_thresholds.idle, and when the live pipeline samples the job's waits. */
#define DOCTOR_IDLE_BUSY 0.50

typedef struct doctor_thresholds {
	double busy;             /* SM active (or utilization without GPM) at or above: the GPU is the bottleneck, 0.80 */
	double idle;             /* below: the GPU waits most of the time, 0.50 */
	double tensor_bound;     /* tensor pipes active at or above, 0.50 */
	double tensor_idle;      /* tensor pipes below: not used, 0.05 */
	double dram_bound;       /* DRAM bandwidth at or above, 0.50 */
	double fp32_busy;        /* FP32 pipe at or above: fp32 math, 0.15 */
	double fp64_bound;       /* FP64 pipe (or DFMA tensor) at or above, 0.30 */
	double busy_thread;      /* a thread at or above this fraction of a core is saturated, 0.85 */
	launch_limits launch;    /* kernels too small to fill the GPU: launch_tiny_kernels, health/conditions.h */
	double mem_full;         /* the job's (or the GPU's) memory at or above this share of the total, 0.95 */
	double other_mem;        /* other processes' memory at or above this share of the total, 0.10 */
	double other_sm;         /* other processes' SM time at or above: a note, 0.20 */
	double imbalance_low;    /* a GPU of the job below this while another is at or above busy, 0.20 */
	double pcie_rx_high;     /* host-to-device bytes/s at or above: copies matter, 1e9 */
	double pcie_tx_sync;     /* device-to-host bytes/s at or above (more than comes in), the SMs idle and
				  * the host busy: results copied off each step, 0.5e9 */
	double workers_busy;     /* DataLoader workers busy (ran or waited to run) this share of the window on
				  * average, not saturated, with a core idle: too few of them, 0.60 */
	double mem_growth_rate;  /* the job's memory growing at least this fast (bytes/s), steadily, 1 MiB/s */
	double mem_growth_bytes; /* and by at least this much over the window, 64 MiB */
	double slowdown_frac;    /* thermal or hardware slowdown in at least this share of samples, 0.10 */
	double limit_lowered;    /* enforced power limit below this share of the default, 0.95 */
	double compile_busy;     /* a compiler process of the job at least this busy (ran or waited to run)
				  * while the GPU is not busy: job.compiling, 0.5 */
	int cpu_threads;         /* a GPU process with at least this many busy threads (compute_threads) */
	double cpu_cores;        /* using at least this many cores between them, the GPU idle: job.cpu-compute; 3, 2.5 */
} doctor_thresholds;
void doctor_thresholds_default(doctor_thresholds *t);

typedef enum { DOCTOR_OK = 0, DOCTOR_INFO, DOCTOR_WARN } doctor_level;

typedef struct doctor_verdict {
	const char *id;          /* "job.tensor-bound" ...: docs/watch.md */
	doctor_level level;      /* ok: the GPU works at what it should; warn: speed is lost */
	char title[DOCTOR_LINE_MAX];
	int gpu;                 /* the GPU concerned, -1 for the job */
	size_t nevidence, nfix, nnote;
	/* wide enough for the longest line the doctor writes (a unit test holds it to that) */
	char evidence[DOCTOR_MAX_LINES][DOCTOR_LINE_MAX];
	char fix[DOCTOR_MAX_LINES][DOCTOR_LINE_MAX];
	char note[DOCTOR_MAX_LINES][DOCTOR_LINE_MAX];
	bool cut; /* a line did not fit (a bug: the tests look for it) */ /* secondary observations (power cap at full load, memory) */
} doctor_verdict;

/* The one verdict for the evidence; t NULL for the defaults. */
void doctor_diagnose(const doctor_evidence *ev, const doctor_thresholds *t, doctor_verdict *out);
const char *doctor_level_name(doctor_level l); /* "ok", "info", "warn" */

/* ---- the live pipeline: snapshots and /proc in, verdicts out ---- */

/* One window's evidence and verdict. */
typedef struct doctor_result {
	doctor_evidence ev;
	doctor_verdict v;
} doctor_result;

typedef struct doctor_live_opts {
	double window;   /* seconds a verdict covers; 0: one window, until doctor_live_finish */
	const char *db;  /* the history database for the gains `gpuvet tune` measured: NULL the default one,
			  * not read with GPUVET_NO_HISTORY */
	bool stacks;     /* a waiting job's Python frames (py-spy) in its verdict */
} doctor_live_opts;

/* The one doctor of watch --pid (its running verdict), watch --diagnose (one window) and run (the
 * verdict most windows gave). Feed it every snapshot (after job_rescan): the first only starts a
 * window (GPM needs two samples); a window ends at the first snapshot `window` seconds after its
 * start, and the next begins there. A window's verdict quotes tune's gain for fp32 math and, with
 * stacks, py-spy's frames for a waiting job. Not thread-safe: one feeder at a time. */
typedef struct doctor_live doctor_live;
doctor_live *doctor_live_new(const doctor_live_opts *o);
void doctor_live_feed(doctor_live *d, const struct snapshot *s, job *j);
/* The last complete window's verdict; NULL before the first. */
const doctor_result *doctor_live_last(const doctor_live *d);
/* Ends the open window (when it has a sample) and returns the last window's verdict; NULL when
 * there was none. */
const doctor_result *doctor_live_finish(doctor_live *d, job *j);
/* gpuvet run's lines: the verdict most windows that found the job on a GPU gave (the latest of
 * those), "the job doctor, N of M windows of W s: ..."; where the job held a GPU for no whole
 * window, the utilisation verdict (the mean utilization of each of its GPUs against watch's
 * 70%); NULL when it held one for less than min_seconds. */
char *doctor_live_report(doctor_live *d, double min_seconds);
void doctor_live_free(doctor_live *d);

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
