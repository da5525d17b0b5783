/*
 * A snapshot: what every GPU showed at one moment, as the sampler read it through NVML. It is a
 * plain value (no pointers into NVML), so the exporter can keep the last good one while the
 * next is being taken, watch can keep a history of them, and tests can build one by hand.
 *
 * Every reading carries its own state: a value read, "n/a" (the driver lacks the symbol or the
 * GPU does not support it) or an error (the call failed this time). A missing reading never
 * hides the others.
 */
#ifndef GPUVET_SNAPSHOT_H
#define GPUVET_SNAPSHOT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fleet/attrib.h"
#include "nvidia/gpm_fields.h"
#include "nvidia/nvml.h"

typedef enum { SV_NONE = 0, SV_OK, SV_NA, SV_ERR } sval_state;

/* One reading. SV_NONE (the zero value) means "not sampled", shown like n/a. */
typedef struct sval {
	double v;
	uint8_t st;
} sval;

static inline sval sv_ok(double v)
{
	return (sval){v, SV_OK};
}
static inline bool sv_has(sval s)
{
	return s.st == SV_OK;
}
/* An NVML reading times scale, its state carried over: unsupported is n/a, an error stays one. */
sval sv_from_nvml(gv_nv_u64 f, double scale);

/* Clock event (throttle) reasons: NVML's bit values. */
enum {
	CLK_GPU_IDLE = 0x1,
	CLK_APP_CLOCKS = 0x2,
	CLK_SW_POWER_CAP = 0x4,
	CLK_HW_SLOWDOWN = 0x8,
	CLK_SYNC_BOOST = 0x10,
	CLK_SW_THERMAL = 0x20,
	CLK_HW_THERMAL = 0x40,
	CLK_HW_POWER_BRAKE = 0x80,
	CLK_DISPLAY_CLOCKS = 0x100,
};

/* The reasons set in mask, as words joined by ", " ("idle" when only idle; "none" when 0); the
 * names and words of each bit: gv_nvml_clock_reasons (nvidia/nvml.h). */
const char *clock_reasons_text(unsigned long long mask, char *buf, size_t size);
/* Reasons that slow a busy GPU down for a cause worth acting on (not idle, not application or
 * display clock settings). */
#define CLK_ACTIONABLE (CLK_SW_POWER_CAP | CLK_HW_SLOWDOWN | CLK_SW_THERMAL | CLK_HW_THERMAL | CLK_HW_POWER_BRAKE)

typedef struct gpu_process {
	unsigned pid;
	char type[12];     /* "compute", "graphics" */
	char name[64];     /* /proc/PID/comm */
	char cmdline[256]; /* /proc/PID/cmdline, arguments joined by spaces, sanitized */
	sval used_bytes;
	sval sm_util;      /* percent of the GPU's SM time (nvmlDeviceGetProcessUtilization) */
	owner owner;       /* whose job: a pod's container, a Slurm job (fleet/attrib.h) */
	char user[32];     /* the process's user: its real uid's name, "uid N" when unlisted, "" unread */
	sval cpu_seconds;  /* user + system CPU time since it started (/proc/PID/stat); a rate needs
			      two snapshots */
} gpu_process;

#define SNAP_MAX_PROCS 64
#define SNAP_MAX_XID_CODES 16

/* Xid events seen on one GPU since the sampler started, counted per code. */
typedef struct xid_count {
	unsigned code;
	unsigned long long count;
	double last_time; /* now_seconds() of the last one */
} xid_count;

/* One MIG device of a GPU in MIG mode (nvidia/nvml.h's gv_nvml_mig). */
#define SNAP_MAX_MIG 16
typedef struct snap_mig {
	char uuid[80];          /* "MIG-..." */
	char profile[32];       /* "1g.18gb"; "" when NVML's name has none */
	int gpu_instance;       /* nvmlDeviceGetGpuInstanceId; -1 when unknown */
	int compute_instance;   /* nvmlDeviceGetComputeInstanceId; -1 when unknown */
	sval mem_used, mem_total; /* bytes */
} snap_mig;

/* A pod's container the kubelet allocated the GPU to (fleet/kubelet.h: its device-plugin
 * checkpoint), whether or not it runs anything on the GPU yet. */
#define SNAP_MAX_ALLOCS 8
typedef struct gpu_alloc {
	owner owner;        /* OWNER_POD: pod_uid and container; namespace and pod where the node names them */
	int gpu_instance;   /* the MIG device's GPU instance; -1 for the GPU (or a share of it) */
	char resource[64];  /* "nvidia.com/gpu" */
} gpu_alloc;

/* One NVLink link in a sample (sampler/nvlink_sample.c). */
#define SNAP_MAX_NVLINKS 18
typedef struct snap_nvlink {
	sval active;                              /* 1 active, 0 inactive */
	sval tx_bytes, rx_bytes;                  /* payload since the driver loaded */
	sval crc_flit, crc_data, replay, recovery; /* error counters since the driver loaded */
} snap_nvlink;

typedef struct gpu_sample {
	int index; /* NVML index */
	char uuid[80];
	char name[96];
	char serial[32];     /* the board's serial number; "" when NVML has none */
	char pci_bus_id[32]; /* "00000000:18:00.0" */
	int minor;           /* /dev/nvidiaN, -1 when unknown */
	bool lost;           /* NVML cannot reach the GPU (handle or GPU_IS_LOST): values are stale */
	char error[96];      /* why, when lost */

	sval util_gpu, util_mem; /* percent */
	sval mem_used, mem_total; /* bytes */
	sval temp, temp_slowdown, temp_shutdown; /* C */
	sval mem_temp;                           /* C: device memory (HBM) */
	sval power, power_limit;                  /* W */
	sval cc;                                  /* compute capability as major.minor (9.0) */
	sval power_default_limit;                 /* W: the board's default; a lower power_limit was lowered */
	sval energy_mj;                           /* millijoules since the driver loaded */
	sval mem_reserved;                        /* bytes the driver keeps for itself (NVML memory info v2) */
	sval enc_util, dec_util;                  /* percent of time NVENC / NVDEC worked */
	sval sm_clock, mem_clock, sm_clock_max, mem_clock_max; /* MHz */
	sval clock_reasons;                                    /* bit mask (CLK_*) */
	sval pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
	sval pcie_tx_kbps, pcie_rx_kbps; /* KB/s over NVML's 20 ms window */
	sval ecc_corr_volatile, ecc_uncorr_volatile, ecc_corr_aggregate, ecc_uncorr_aggregate;
	sval retired_sbe, retired_dbe, retired_pending;
	sval remap_corr, remap_uncorr, remap_pending, remap_failure;
	sval pcie_replay; /* PCIe replays since the driver loaded */
	sval fan; /* percent of maximum speed */

	/* GPM activity counters (nvidia/gpm_fields.h: GV_GPM_*), in base units (ratio 0-1, bytes per
	 * second) over the time since the previous take; SV_NONE before the second take, SV_NA where
	 * the GPU or driver has no GPM (gpm_support says why) */
	uint8_t gpm_support; /* gv_gpm_support (nvidia/nvml.h) */
	sval gpm[GV_GPM_N];

	sval nprocs; /* processes holding the GPU (compute and graphics), may exceed procs[] */
	size_t nproc;
	gpu_process procs[SNAP_MAX_PROCS];

	/* the pods the kubelet allocated the GPU to (sampler/alloc.c) */
	size_t nalloc;
	gpu_alloc alloc[SNAP_MAX_ALLOCS];

	/* MIG: the mode (SV_NA without MIG) and, when on, its devices */
	sval mig_mode;
	size_t nmig;
	snap_mig mig[SNAP_MAX_MIG];

	size_t nxid;
	xid_count xids[SNAP_MAX_XID_CODES];
	unsigned long long xid_total;

	/* NVLink: link slots (0: none, or not read), per link, and the GPU's traffic over all links
	 * between the last two samples */
	int nvlinks;
	snap_nvlink nvlink[SNAP_MAX_NVLINKS];
	sval nvlink_tx_bps, nvlink_rx_bps; /* bytes per second */
} gpu_sample;

typedef struct snapshot {
	double time;      /* now_seconds() (monotonic) when taken */
	double wall_time; /* seconds since the epoch when taken */
	char driver_version[32];
	char nvml_version[32];
	int cuda_driver_version; /* 13000 for 13.0; 0 when unknown */
	/* the kubelet's device-plugin checkpoint (fleet/kubelet.h): 0 none on this node, 1 read,
	 * -1 there but unreadable or not a checkpoint (gpuvet_kubelet_checkpoint_up) */
	int kubelet_checkpoint;
	int ngpus;
	gpu_sample *gpus; /* ngpus */
} snapshot;

snapshot *snapshot_new(int ngpus);
void snapshot_free(snapshot *s);
snapshot *snapshot_dup(const snapshot *s);
/* Finds a GPU by NVML index; NULL when absent. */
const gpu_sample *snapshot_gpu(const snapshot *s, int index);
/* True when the GPU runs the process. */
bool gpu_has_pid(const gpu_sample *g, unsigned pid);
#endif
