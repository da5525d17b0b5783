/*
 * NVML (libnvidia-ml.so.1) loaded at run time with dlopen. The types below are our own
 * declarations of NVML's ABI (numbers and layouts from NVIDIA's public nvml.h); the toolkit's
 * header is never included, so gpuvet builds where no NVIDIA software is installed.
 *
 * Which library: GPUVET_NVML_LIB when set (a test double or a specific driver); otherwise
 * libnvidia-ml.so.1 through the loader; with --root active and GPUVET_NVML_LIB unset, the copy
 * inside the root tree's library directories (or none: "absent").
 *
 * Only the basic symbols are required (nvmlInit_v2 or nvmlInit, nvmlShutdown,
 * nvmlDeviceGetCount[_v2], nvmlDeviceGetHandleByIndex[_v2], nvmlErrorString). Every other symbol
 * may be missing (old drivers); its values then read as GV_V_UNSUPPORTED. Versioned symbols are
 * preferred (nvmlDeviceGetPciInfo_v3, then _v2, then the plain one).
 *
 * Everything here is thread-safe: the library is loaded once and nvmlInit called once (under a
 * mutex rather than pthread_once, so that tests can unload and load another double), and NVML
 * itself may be called from several threads: the probe and the sampler may snapshot at once.
 *
 * Typical use (the probe, the live sampler):
 *
 *	if (gv_nvml_init() != NVML_SUCCESS) ... gv_nvml_status() says why
 *	unsigned n; gv_nvml_device_count(&n);
 *	gv_nvml_device d;
 *	gv_nvml_device_snapshot(i, GV_NVML_ALL, &d);      once, for everything
 *	gv_nvml_device_snapshot(i, GV_NVML_DYNAMIC, &d);  every second: only what changes
 */
#ifndef GPUVET_NVIDIA_NVML_H
#define GPUVET_NVIDIA_NVML_H
#include <stdbool.h>
#include <stddef.h>

/* ---- NVML's ABI, as declared by us ---- */

typedef int nvmlReturn_t;
enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_ALREADY_INITIALIZED = 5,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_INSUFFICIENT_POWER = 8,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_IRQ_ISSUE = 11,
	NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_CORRUPTED_INFOROM = 14,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_RESET_REQUIRED = 16,
	NVML_ERROR_OPERATING_SYSTEM = 17,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_IN_USE = 19,
	NVML_ERROR_MEMORY = 20,
	NVML_ERROR_NO_DATA = 21,
	NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
	NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
	NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
	NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
	NVML_ERROR_DEPRECATED = 26,
	NVML_ERROR_NOT_READY = 27,
	NVML_ERROR_GPU_NOT_FOUND = 28,
	NVML_ERROR_INVALID_STATE = 29,
	NVML_ERROR_UNKNOWN = 999,
};

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

#define NVML_DEVICE_NAME_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80

/* nvmlPciInfo_t of _v2/_v3; the v1 call writes the same first 16 bytes (busId) and less. */
typedef struct nvmlPciInfo_st {
	char busIdLegacy[16];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;
	unsigned int pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
	unsigned int version; /* NVML_MEMORY_V2 */
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
/* NVML_STRUCT_VERSION(Memory, 2): sizeof | 2 << 24 */
#define NVML_MEMORY_V2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))

typedef struct nvmlUtilization_st {
	unsigned int gpu, memory;
} nvmlUtilization_t;

/* used by the _v1 process calls */
typedef struct nvmlProcessInfo_v1_st {
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;
/* used by the _v2 and _v3 process calls */
typedef struct nvmlProcessInfo_st {
	unsigned int pid;
	unsigned long long usedGpuMemory; /* NVML_VALUE_NOT_AVAILABLE when unknown */
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_t;
/* what the _v3 process calls of R535 drivers 535.43 to 535.86 fill instead, without a version
 * bump (a larger struct: reading it as nvmlProcessInfo_t shows one process, or garbage) */
typedef struct nvmlProcessInfo_v3_st {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
	unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessInfo_v3_t;
#define NVML_VALUE_NOT_AVAILABLE_ULL (~0ULL)

/* nvmlDeviceGetProcessUtilization: per process, over the samples since lastSeenTimeStamp */
typedef struct nvmlProcessUtilizationSample_st {
	unsigned int pid;
	unsigned long long timeStamp; /* CPU timestamp in microseconds */
	unsigned int smUtil, memUtil, encUtil, decUtil; /* percent */
} nvmlProcessUtilizationSample_t;

typedef struct nvmlGpuFabricInfo_st {
	unsigned char clusterUuid[16];
	nvmlReturn_t status;
	unsigned int cliqueId;
	unsigned char state; /* NVML_GPU_FABRIC_STATE_* */
} nvmlGpuFabricInfo_t;
/* for nvmlDeviceGetGpuFabricInfoV, which newer drivers prefer */
typedef struct nvmlGpuFabricInfo_v2_st {
	unsigned int version; /* NVML_GPU_FABRIC_INFO_V2 */
	unsigned char clusterUuid[16];
	nvmlReturn_t status;
	unsigned int cliqueId;
	unsigned char state;
	unsigned int healthMask;
} nvmlGpuFabricInfo_v2_t;
#define NVML_GPU_FABRIC_INFO_V2 ((unsigned int)(sizeof(nvmlGpuFabricInfo_v2_t) | (2u << 24)))
enum {
	NVML_GPU_FABRIC_STATE_NOT_SUPPORTED = 0,
	NVML_GPU_FABRIC_STATE_NOT_STARTED = 1,
	NVML_GPU_FABRIC_STATE_IN_PROGRESS = 2,
	NVML_GPU_FABRIC_STATE_COMPLETED = 3,
};

typedef struct nvmlEventData_st {
	nvmlDevice_t device;
	unsigned long long eventType;
	unsigned long long eventData; /* the Xid code for Xid events */
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlEventData_t;
#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x0000000000000008ULL

enum { /* nvmlValueType_t */
	NVML_VALUE_TYPE_DOUBLE = 0,
	NVML_VALUE_TYPE_UNSIGNED_INT = 1,
	NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
	NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
	NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
	NVML_VALUE_TYPE_SIGNED_INT = 5,
	NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
};
typedef union nvmlValue_st {
	double dVal;
	unsigned int uiVal;
	unsigned long ulVal;
	unsigned long long ullVal;
	long long sllVal;
	int siVal;
	unsigned short usVal;
} nvmlValue_t;
/* nvmlFieldValue_t: 40 bytes; scopeId is the link for NVLink fields, 0 for a device field */
typedef struct nvmlFieldValue_st {
	unsigned int fieldId;
	unsigned int scopeId;
	long long timestamp;   /* microseconds since 1970 */
	long long latencyUsec;
	int valueType;         /* NVML_VALUE_TYPE_* */
	nvmlReturn_t nvmlReturn;
	nvmlValue_t value;
} nvmlFieldValue_t;
#define NVML_FI_DEV_MEMORY_TEMP 82 /* C; HBM boards (GDDR boards answer NOT_SUPPORTED) */
/* the ECC mode and health values the snapshot asks as one batch (nvml.c, snap_batch) */
#define NVML_FI_DEV_ECC_CURRENT 1       /* 1 on, 0 off */
#define NVML_FI_DEV_ECC_PENDING 2       /* the mode after the next reboot */
#define NVML_FI_DEV_ECC_SBE_VOL_TOTAL 3 /* corrected, since the driver loaded */
#define NVML_FI_DEV_ECC_DBE_VOL_TOTAL 4 /* uncorrected, since the driver loaded */
#define NVML_FI_DEV_ECC_SBE_AGG_TOTAL 5 /* corrected, the board's lifetime */
#define NVML_FI_DEV_ECC_DBE_AGG_TOTAL 6 /* uncorrected, the board's lifetime */
#define NVML_FI_DEV_RETIRED_SBE 29      /* pages retired for multiple single-bit errors */
#define NVML_FI_DEV_RETIRED_DBE 30      /* pages retired for a double-bit error */
#define NVML_FI_DEV_RETIRED_PENDING 31  /* 1: a page waits to be retired (at the next reboot) */
#define NVML_FI_DEV_PCIE_REPLAY_COUNTER 94
#define NVML_FI_DEV_REMAPPED_COR 142     /* rows remapped for correctable errors */
#define NVML_FI_DEV_REMAPPED_UNC 143     /* rows remapped for uncorrectable errors */
#define NVML_FI_DEV_REMAPPED_PENDING 144 /* 1: a remap waits for a GPU reset */
#define NVML_FI_DEV_REMAPPED_FAILURE 145 /* 1: a row could not be remapped */
/* A field's value whatever its valueType, as an unsigned count (negatives as 0). */
unsigned long long gv_nvml_field_u64(const nvmlFieldValue_t *fv);

enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };            /* nvmlEnableState_t */
enum { NVML_TEMPERATURE_GPU = 0 };                                        /* nvmlTemperatureSensors_t */
enum {                                                                    /* nvmlTemperatureThresholds_t */
	NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
	NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
	NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2,
	NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3,
};
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 }; /* nvmlClockType_t */
enum {                                                                    /* nvmlComputeMode_t */
	NVML_COMPUTEMODE_DEFAULT = 0,
	NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
	NVML_COMPUTEMODE_PROHIBITED = 2,
	NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
};
enum { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };                   /* nvmlEccCounterType_t */
enum { NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1 };
enum { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };        /* nvmlPcieUtilCounter_t */
enum { NVML_DEVICE_MIG_DISABLE = 0, NVML_DEVICE_MIG_ENABLE = 1 };

/* nvmlClocksEventReasons (formerly ClocksThrottleReasons) bits */
#define NVML_CLOCKS_EVENT_REASON_GPU_IDLE 0x0000000000000001ULL
#define NVML_CLOCKS_EVENT_REASON_APPLICATIONS_CLOCKS_SETTING 0x0000000000000002ULL
#define NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP 0x0000000000000004ULL
#define NVML_CLOCKS_EVENT_REASON_HW_SLOWDOWN 0x0000000000000008ULL
#define NVML_CLOCKS_EVENT_REASON_SYNC_BOOST 0x0000000000000010ULL
#define NVML_CLOCKS_EVENT_REASON_SW_THERMAL_SLOWDOWN 0x0000000000000020ULL
#define NVML_CLOCKS_EVENT_REASON_HW_THERMAL_SLOWDOWN 0x0000000000000040ULL
#define NVML_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN 0x0000000000000080ULL
#define NVML_CLOCKS_EVENT_REASON_DISPLAY_CLOCK_SETTING 0x0000000000000100ULL

/* ---- loading ---- */

typedef struct gv_nvml_status {
	bool attempted;      /* gv_nvml_load ran */
	bool loaded;         /* the library opened and has the basic symbols */
	bool from_env;       /* GPUVET_NVML_LIB chose the file */
	char path[512];      /* the file opened (or tried); real path when the loader can say */
	char error[512];     /* dlerror() or the missing symbol, when !loaded */
	bool init_called;    /* gv_nvml_init ran */
	nvmlReturn_t init_rc; /* nvmlInit's result */
	double init_seconds;
} gv_nvml_status;

/* Loads the library once (thread-safe). True when it loaded with the basic symbols. */
bool gv_nvml_load(void);
/* nvmlInit_v2 (or nvmlInit) once per process; later calls return the first result (a forked
 * child initialises again: NVML's state does not survive fork). NVML_ERROR_LIBRARY_NOT_FOUND
 * when the library did not load, NVML_ERROR_FUNCTION_NOT_FOUND when basic symbols are missing.
 * Blocks as long as nvmlInit does (a wedged driver: minutes); callers that must not hang run it
 * under a deadline (probes/deadline.h). The status and error-string calls never wait for it. */
nvmlReturn_t gv_nvml_init(void);
/* gv_nvml_init as a stage of a supervised child (core/child.h: a hang or a crash in it names
 * nvmlInit_v2 and the library), *st read after it (init_seconds, path). */
nvmlReturn_t gv_nvml_init_staged(gv_nvml_status *st);
/* A copy of the loader and init state. */
void gv_nvml_status_get(gv_nvml_status *out);
/* nvmlShutdown when initialised; the next gv_nvml_init initialises again. */
void gv_nvml_shutdown(void);
/* Tests only (never with other threads running): shuts down, dlcloses, and forgets everything,
 * so the next gv_nvml_load reads GPUVET_NVML_LIB again. */
void gv_nvml_unload(void);

/* "NVML_ERROR_DRIVER_NOT_LOADED" for 9 (our table, works without the library). */
const char *gv_nvml_return_name(nvmlReturn_t rc);
/* NVML's own text (nvmlErrorString) when loaded, else our description. Never NULL. */
const char *gv_nvml_error_string(nvmlReturn_t rc);
/* Whether the library exports sym (looked up as given). */
bool gv_nvml_has_symbol(const char *sym);
/* The address of an optional symbol (NULL when absent or the library did not load). */
void *gv_nvml_symbol(const char *sym);

/* ---- values with a validity per field ---- */

typedef enum {
	GV_V_UNSET = 0,   /* not asked for in this snapshot */
	GV_V_OK,
	GV_V_UNSUPPORTED, /* symbol missing (old driver) or NVML_ERROR_NOT_SUPPORTED */
	GV_V_ERROR,       /* the call failed: rc holds the code, gv_nvml_error_string(rc) the text */
} gv_vstate;

/* The state a call's code gives its value: ok; unsupported for NVML_ERROR_NOT_SUPPORTED and for
 * NVML_ERROR_FUNCTION_NOT_FOUND (our code for a symbol the driver lacks); else an error. */
gv_vstate gv_nvml_vstate(nvmlReturn_t rc);
/* Records a call's code and the state it gives (gv_nvml_vstate) in a value's fields; true on
 * NVML_SUCCESS. */
bool gv_nvml_put_rc(gv_vstate *st, nvmlReturn_t *out_rc, nvmlReturn_t rc);

typedef struct gv_nv_u64 {
	gv_vstate st;
	nvmlReturn_t rc;
	unsigned long long v;
} gv_nv_u64;
/* gv_nvml_put_rc for a number, whose value is kept on success and 0 otherwise. */
void gv_nvml_u64_set(gv_nv_u64 *v, nvmlReturn_t rc, unsigned long long value);
/* One field through nvmlDeviceGetFieldValues (scope: the link for NVLink fields, else 0) into
 * out: the call's own failure, else the field's; unsupported when the symbol is missing. */
void gv_nvml_get_field(nvmlDevice_t dev, unsigned field_id, unsigned scope, gv_nv_u64 *out);

typedef struct gv_nv_dbl {
	gv_vstate st;
	nvmlReturn_t rc;
	double v;
} gv_nv_dbl;

typedef struct gv_nv_str {
	gv_vstate st;
	nvmlReturn_t rc;
	char v[NVML_DEVICE_NAME_BUFFER_SIZE];
} gv_nv_str;

/* True when ok; convenience for callers. */
#define GV_OK(field) ((field).st == GV_V_OK)

typedef struct gv_nvml_system {
	gv_nv_str driver_version;      /* "580.159.04" */
	gv_nv_str nvml_version;        /* "13.580.159.04" */
	gv_nv_u64 cuda_driver_version; /* 13000 */
} gv_nvml_system;
void gv_nvml_system_info(gv_nvml_system *out);

/* Number of GPUs (nvmlDeviceGetCount_v2 or nvmlDeviceGetCount); requires gv_nvml_init. */
nvmlReturn_t gv_nvml_device_count(unsigned *count);
/* The handle of GPU index (NVML order); the raw handle for calls not wrapped here. */
nvmlReturn_t gv_nvml_device_handle(unsigned index, nvmlDevice_t *out);
/* A PCI bus id as NVML prints it now ("00000000:18:00.0"), from any layout of nvmlPciInfo_t (the
 * v1 layout fills only the legacy 16-byte id, with a 4-digit domain); terminates pci's ids. */
void gv_nvml_pci_bus_id(nvmlPciInfo_t *pci, char *out, size_t n);
/* The start of a snapshot of GPU index: its handle, the result also kept in *handle_rc (a
 * snapshot's "nothing else is set unless SUCCESS"). */
nvmlReturn_t gv_nvml_snapshot_handle(unsigned index, nvmlDevice_t *dev, nvmlReturn_t *handle_rc);

#define GV_NVML_MAX_MIG 16
#define GV_NVML_MAX_PROCS 64

/* One MIG device (a compute instance of a GPU instance) behind nvmlDeviceGetMigDeviceHandleByIndex:
 * its ids (nvmlDeviceGetGpuInstanceId, nvmlDeviceGetComputeInstanceId), its name (NVML's "NVIDIA
 * H200 MIG 1g.18gb": the profile follows "MIG ") and its memory (nvmlDeviceGetMemoryInfo on the
 * MIG handle). Its uuid is gv_nvml_device's mig_uuid of the same slot. */
typedef struct gv_nvml_mig {
	gv_nv_u64 gpu_instance_id, compute_instance_id;
	gv_nv_str name;
	gv_nv_u64 memory_total, memory_used;
} gv_nvml_mig;
/* The profile of a MIG device's name ("1g.18gb" of "NVIDIA H200 MIG 1g.18gb"); "" when the name
 * has none. */
const char *gv_nvml_mig_profile(const char *name, char *out, size_t size);

typedef struct gv_nvml_process {
	unsigned pid;
	unsigned long long used_bytes; /* NVML_VALUE_NOT_AVAILABLE_ULL when unknown (e.g. containers) */
	bool graphics;                 /* from the graphics list, else compute */
	int sm_util;                   /* percent of the GPU's SM time, nvmlDeviceGetProcessUtilization; -1 unknown */
	char name[64];                 /* nvmlSystemGetProcessName; "" when unknown */
} gv_nvml_process;

/* What a snapshot fills; the sampler asks for GV_NVML_DYNAMIC each tick. The groups are unions
 * of parts, so that `check --fast` can leave out the slow parts it does not need (GV_NVML_FAST). */
enum {
	GV_NVML_NAMES = 1 << 0,    /* name, uuid, serial, pci, minor, cc, memory total */
	GV_NVML_MODES = 1 << 1,    /* persistence, compute mode, MIG mode + instances, ECC mode, fabric */
	GV_NVML_READINGS = 1 << 2, /* memory used/free, temperature, clock event reasons, pcie current */
	GV_NVML_HEALTH = 1 << 3,   /* ECC counters, retired pages, remapped rows */
	GV_NVML_PROC_LIST = 1 << 4, /* the compute and graphics processes */
	GV_NVML_PCIE_THROUGHPUT = 1 << 5, /* TX/RX: each direction samples ~20 ms, so only on request */
	GV_NVML_MIG = 1 << 6,      /* MIG mode and its devices (ids, name, memory) alone; GV_NVML_MODES reads them too */
	/* the board's fixed limits: max PCIe link, temperature thresholds, max clocks, default power
	 * limit; 1.5 to 3 ms a call on an H200 (driver 580), and the same for the whole boot */
	GV_NVML_LIMITS = 1 << 7,
	GV_NVML_ENERGY = 1 << 8,    /* the energy counter (3 ms on an H200) */
	GV_NVML_PROC_UTIL = 1 << 9, /* each process's SM share (two calls of 1.4 ms), after the list */
	/* the GPU's load: utilization (GPU, memory, encoder, decoder) and power draw, 1.6 ms on an
	 * H200 (driver 580; the draw is free after the enforced limit) */
	GV_NVML_LOAD = 1 << 10,
	GV_NVML_POWER_LIMIT = 1 << 11, /* the enforced power limit: 2.0 ms on an H200 */
	/* the current SM and memory clocks: about 1.1 ms on an H200 (driver 580), paid by the first
	 * of them; after the clock event reasons, which cost as much on their own */
	GV_NVML_CLOCKS = 1 << 12,
	GV_NVML_FAN = 1 << 13, /* the fan speed: 0.5 ms on an H200, which has no fan (not supported) */
	GV_NVML_IDENTITY = GV_NVML_NAMES | GV_NVML_LIMITS | GV_NVML_POWER_LIMIT,
	GV_NVML_DYNAMIC = GV_NVML_READINGS | GV_NVML_LOAD | GV_NVML_ENERGY | GV_NVML_CLOCKS | GV_NVML_FAN,
	GV_NVML_PROCESSES = GV_NVML_PROC_LIST | GV_NVML_PROC_UTIL,
	/* everything but the slow PCIe throughput */
	GV_NVML_ALL = GV_NVML_IDENTITY | GV_NVML_MODES | GV_NVML_DYNAMIC | GV_NVML_HEALTH | GV_NVML_PROCESSES,
	/* what `check --fast` asks: its limits come from the per-boot cache (probes/nvml_limits.c);
	 * the load, the enforced limit and the clocks only where a verdict reads them, the fan never
	 * (no verdict of check reads it; probes/nvml.c), the process list only where memory is in use */
	GV_NVML_FAST = GV_NVML_ALL & ~(GV_NVML_LIMITS | GV_NVML_ENERGY | GV_NVML_PROC_UTIL | GV_NVML_LOAD | GV_NVML_POWER_LIMIT |
				       GV_NVML_CLOCKS | GV_NVML_FAN | GV_NVML_PROC_LIST),
};

typedef struct gv_nvml_device {
	unsigned index;
	nvmlReturn_t handle_rc; /* nvmlDeviceGetHandleByIndex result; nothing else is set unless SUCCESS */
	/* identity */
	gv_nv_str name, uuid;
	gv_nv_str serial;         /* the board's serial number (what an RMA asks for) */
	gv_nv_str pci_bus_id;     /* "00000000:18:00.0" */
	gv_nv_u64 pci_device_id;  /* 0x233510de: device << 16 | vendor */
	gv_nv_u64 pci_subsystem_id;
	gv_nv_u64 minor_number;
	gv_nv_u64 cc_major, cc_minor;
	gv_nv_u64 memory_total;   /* bytes */
	gv_nv_u64 memory_reserved;
	gv_nv_u64 pcie_gen_max, pcie_width_max;
	gv_nv_u64 temp_slowdown_c, temp_shutdown_c, temp_gpu_max_c;
	gv_nv_u64 max_sm_clock_mhz, max_mem_clock_mhz;
	gv_nv_u64 power_limit_mw;  /* enforced */
	gv_nv_u64 power_default_limit_mw; /* the board's default: an enforced limit below it was lowered */
	/* modes */
	gv_nv_u64 persistence;     /* 1 on */
	gv_nv_u64 compute_mode;    /* NVML_COMPUTEMODE_* */
	gv_nv_u64 mig_mode, mig_pending;
	unsigned mig_count;         /* MIG devices found (when mig_mode is on) */
	gv_nv_str mig_uuid[GV_NVML_MAX_MIG];
	gv_nvml_mig mig[GV_NVML_MAX_MIG]; /* the same slots: ids, name, memory */
	gv_nv_u64 ecc_mode, ecc_pending;
	gv_nv_u64 fabric_state;    /* NVML_GPU_FABRIC_STATE_* */
	gv_nv_u64 fabric_status;   /* an nvmlReturn_t: the fabric's own error */
	/* dynamic */
	gv_nv_u64 memory_used, memory_free;
	gv_nv_u64 temperature_c;
	gv_nv_u64 memory_temperature_c; /* nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP) */
	gv_nv_u64 util_gpu, util_memory;
	gv_nv_u64 power_mw;
	gv_nv_u64 energy_mj;       /* since the driver loaded */
	gv_nv_u64 sm_clock_mhz, mem_clock_mhz;
	gv_nv_u64 clock_event_reasons;
	gv_nv_u64 fan_percent;
	gv_nv_u64 encoder_util, decoder_util; /* percent of NVENC / NVDEC time */
	gv_nv_u64 pcie_gen, pcie_width;
	gv_nv_u64 pcie_tx_kbps, pcie_rx_kbps;
	/* health */
	gv_nv_u64 ecc_corrected_volatile, ecc_corrected_aggregate;
	gv_nv_u64 ecc_uncorrected_volatile, ecc_uncorrected_aggregate;
	gv_nv_u64 retired_sbe, retired_dbe, retired_pending;
	gv_nv_u64 remapped_correctable, remapped_uncorrectable, remap_pending, remap_failure;
	gv_nv_u64 pcie_replay;     /* PCIe replays since the driver loaded (link-level retransmissions) */
	/* processes (compute then graphics, a pid that is in both is listed once) */
	gv_vstate procs_st;
	nvmlReturn_t procs_rc;
	unsigned nprocs;
	bool procs_truncated;
	gv_nvml_process procs[GV_NVML_MAX_PROCS];
	gv_vstate proc_util_st;          /* nvmlDeviceGetProcessUtilization, asked with the processes */
	unsigned long long proc_util_ts; /* the newest sample seen: the next call asks for later ones */
} gv_nvml_device;

/* A field that GV_NVML_LIMITS fills: its name and where it is in gv_nvml_device (a gv_nv_u64). */
typedef struct gv_nvml_limit_field {
	const char *name;
	size_t offset;
} gv_nvml_limit_field;
extern const gv_nvml_limit_field gv_nvml_limit_fields[];
extern const size_t gv_nvml_n_limit_fields;

/* The group of the optional parts (GV_NVML_LOAD, GV_NVML_POWER_LIMIT, GV_NVML_ENERGY,
 * GV_NVML_CLOCKS, GV_NVML_FAN) that fills
 * the field at `offset` in gv_nvml_device, 0 for any other: what `check --fast` says it did not
 * read, and why. */
unsigned gv_nvml_optional_group(size_t offset);

/* Fills what `what` asks for; other fields keep their value (so a sampler can keep identity
 * from a first GV_NVML_ALL call). Returns the handle lookup's result. */
nvmlReturn_t gv_nvml_device_snapshot(unsigned index, unsigned what, gv_nvml_device *d);
/* Resets every field to GV_V_UNSET. */
void gv_nvml_device_clear(gv_nvml_device *d);

/* "default", "exclusive_thread", "prohibited", "exclusive_process", or "unknown". */
const char *gv_nvml_compute_mode_name(unsigned long long mode);
/* "not_supported", "not_started", "in_progress", "completed", or "unknown". */
const char *gv_nvml_fabric_state_name(unsigned long long state);
/* Whether this driver's _v3 process calls fill nvmlProcessInfo_v3_t instead of nvmlProcessInfo_t:
 * R535 from 535.43 until 535.98 (which removed them; 535.104 brought them back with the old one). */
bool gv_nvml_procs_v3_layout(const char *driver_version);
/* The clock event (throttle) reasons, one entry a bit: its snake_case name (label values, JSON,
 * facts) and a few words (watch, health). */
typedef struct gv_nvml_clock_reason {
	unsigned long long bit;
	const char *name;
	const char *words;
} gv_nvml_clock_reason;
extern const gv_nvml_clock_reason gv_nvml_clock_reasons[];
extern const size_t gv_nvml_n_clock_reasons;
/* Names of the set clock event reason bits joined by ",": "gpu_idle,sw_power_cap"; "none" for 0. */
const char *gv_nvml_clock_reasons_text(unsigned long long mask, char *buf, size_t size);
/* The same as words joined by ", ": "idle, power cap"; unknown bits as "other (0x...)". */
const char *gv_nvml_clock_reasons_words(unsigned long long mask, char *buf, size_t size);
/* Reasons that mean the GPU is slowed against the user's will (thermal, hardware, power brake). */
#define GV_NVML_REASONS_BAD                                                                                   \
	(NVML_CLOCKS_EVENT_REASON_HW_SLOWDOWN | NVML_CLOCKS_EVENT_REASON_SW_THERMAL_SLOWDOWN |                 \
	 NVML_CLOCKS_EVENT_REASON_HW_THERMAL_SLOWDOWN | NVML_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN)

/* ---- GPM: the GPU performance monitoring counters (Hopper and newer, driver R520+) ----
 *
 * Our declarations of nvml.h's GPM types (CUDA 12.0 to 13.0, NVML_GPM_METRICS_GET_VERSION 1 and
 * NVML_GPM_SUPPORT_VERSION 1 throughout; 13.0's header sizes metrics[] NVML_GPM_METRIC_MAX =
 * 333, 12.0's 98). The driver reads and writes numMetrics entries only, so our request sizes the
 * array to the metrics we ask for (gpm_fields.h). A sample is an opaque handle
 * (nvmlGpmSample_t: struct nvmlGpmSample_st *). Metrics are computed between two samples taken
 * at least 100 ms apart; each metric carries its own return code. */
#include "nvidia/gpm_fields.h"

typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

typedef struct nvmlGpmMetric_st {
	unsigned int metricId;   /* in: NVML_GPM_METRIC_* */
	nvmlReturn_t nvmlReturn; /* out: this metric's status; value only valid on NVML_SUCCESS */
	double value;            /* out */
	struct {
		char *shortName, *longName, *unit;
	} metricInfo; /* out: may be NULL */
} nvmlGpmMetric_t;

/* nvmlGpmMetricsGet_t with metrics[] sized to gpuvet's list (see above) */
typedef struct gv_nvmlGpmMetricsGet_st {
	unsigned int version;    /* NVML_GPM_METRICS_GET_VERSION */
	unsigned int numMetrics; /* entries of metrics[] in use */
	nvmlGpmSample_t sample1, sample2;
	nvmlGpmMetric_t metrics[GV_GPM_N];
} gv_nvmlGpmMetricsGet_t;
#define NVML_GPM_METRICS_GET_VERSION 1

typedef struct nvmlGpmSupport_st {
	unsigned int version;           /* NVML_GPM_SUPPORT_VERSION */
	unsigned int isSupportedDevice; /* out */
} nvmlGpmSupport_t;
#define NVML_GPM_SUPPORT_VERSION 1

/* Whether a GPU can give GPM counters, and why not. */
typedef enum {
	GV_GPM_UNKNOWN = 0,   /* not asked yet */
	GV_GPM_ON,            /* supported: readings follow from the second sample on */
	GV_GPM_NO_SYMBOLS,    /* the driver library lacks nvmlGpm* (older than R520) */
	GV_GPM_UNSUPPORTED,   /* nvmlGpmQueryDeviceSupport: not this GPU (before Hopper) */
	GV_GPM_MIG,           /* MIG mode: device-level GPM is not available */
	GV_GPM_FAILED,        /* a GPM call failed (rc says which) */
} gv_gpm_support;
/* "supported", "driver without GPM", "not supported by this GPU", "MIG mode", "failed" */
const char *gv_gpm_support_text(gv_gpm_support s);
/* "supported", "driver_without_gpm", "not_supported", "mig", "failed" (fact values) */
const char *gv_gpm_support_name(gv_gpm_support s);

/* One GPU's GPM sampling state: two sample buffers, the newer kept for the next difference. */
typedef struct gv_gpm gv_gpm;
/* Asks nvmlGpmQueryDeviceSupport for GPU index (and its MIG mode); opens the sampler when
 * supported. *support says why not; *rc the failing call's code. NULL when not supported. */
gv_gpm *gv_gpm_open(unsigned index, gv_gpm_support *support, nvmlReturn_t *rc);
/* The same where the caller has just read the GPU's MIG mode (1 on, 0 off; -1 unknown: asked):
 * nvmlDeviceGetMigMode again cost 0.35 ms of check --fast on an H200. */
gv_gpm *gv_gpm_open_mig(unsigned index, int mig_enabled, gv_gpm_support *support, nvmlReturn_t *rc);
/* Takes a sample. From the second call on, fills out[GV_GPM_N] with the counters over the time
 * since the previous call, in base units (gpm_fields.h); GV_V_UNSET before that. Returns the
 * sample call's result. */
nvmlReturn_t gv_gpm_take(gv_gpm *g, gv_nv_dbl out[GV_GPM_N]);
void gv_gpm_close(gv_gpm *g);
/* NVML computes metrics over at least 100 ms: seconds still to wait before the next sample
 * gives them (0 when it may be taken now). */
#define GV_GPM_MIN_INTERVAL 0.1
double gv_gpm_wait(const gv_gpm *g);

/* ---- Xid events ---- */

typedef struct gv_nvml_events gv_nvml_events;
typedef struct gv_nvml_xid {
	int gpu_index;            /* NVML index of the device, -1 when not matched */
	unsigned long long xid;   /* the Xid code */
	unsigned gpu_instance, compute_instance;
} gv_nvml_xid;

/* Registers Xid critical error events on every GPU. NULL with *rc set when the driver cannot
 * (symbols missing: NVML_ERROR_NOT_SUPPORTED). GPUs that refuse registration are skipped. */
gv_nvml_events *gv_nvml_events_open(nvmlReturn_t *rc);
/* Waits up to timeout_ms for one event: NVML_SUCCESS with *out filled, NVML_ERROR_TIMEOUT, or
 * another error. */
nvmlReturn_t gv_nvml_events_wait(gv_nvml_events *ev, unsigned timeout_ms, gv_nvml_xid *out);
void gv_nvml_events_close(gv_nvml_events *ev);
#endif
