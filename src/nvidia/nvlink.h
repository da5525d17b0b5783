/*
 * NVLink through NVML: per GPU and link, state, version, speed, the remote endpoint (a GPU, an
 * NVSwitch, an IBM NPU), the data-link error counters and the traffic counters. Our own
 * declarations of NVML's ABI (numbers and layouts from NVIDIA's public nvml.h), symbols resolved
 * through the library nvml.c loaded (gv_nvml_symbol); every one of them is optional: a driver
 * without it, or a GPU without NVLink, reads as GV_V_UNSUPPORTED per value.
 *
 *	gv_nvlink_gpu g;
 *	gv_nvlink_snapshot(i, GV_NVLINK_ALL, &g);        check: everything
 *	gv_nvlink_snapshot(i, GV_NVLINK_TRAFFIC, &g);    a sampler: the counters only
 */
#ifndef GPUVET_NVIDIA_NVLINK_H
#define GPUVET_NVIDIA_NVLINK_H
#include "nvidia/nvml.h"

/* ---- NVML's ABI, as declared by us ---- */

#define NVML_NVLINK_MAX_LINKS 18

enum { /* nvmlNvLinkErrorCounter_t */
	NVML_NVLINK_ERROR_DL_REPLAY = 0,
	NVML_NVLINK_ERROR_DL_RECOVERY = 1,
	NVML_NVLINK_ERROR_DL_CRC_FLIT = 2,
	NVML_NVLINK_ERROR_DL_CRC_DATA = 3,
	NVML_NVLINK_ERROR_DL_ECC_DATA = 4,
};
enum { /* nvmlIntNvLinkDeviceType_t */
	NVML_NVLINK_DEVICE_TYPE_GPU = 0x00,
	NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01,
	NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02,
	NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF,
};
/* field ids (nvml.h NVML_FI_DEV_*) */
#define NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON 90
#define NVML_FI_DEV_NVLINK_LINK_COUNT 91
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138 /* KiB, cumulative; scopeId = link */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139
#define NVML_FI_DEV_NVLINK_GET_SPEED 164          /* MB/s; scopeId = link */

/* ---- values ---- */

typedef struct gv_nvlink_link {
	gv_nv_u64 active;       /* nvmlDeviceGetNvLinkState: 1 active; unsupported: no such link */
	gv_nv_u64 version;      /* nvmlDeviceGetNvLinkVersion: 4 on Hopper */
	gv_nv_u64 speed_mbps;   /* field NVML_FI_DEV_NVLINK_GET_SPEED (MB/s), per link */
	gv_nv_u64 remote_type;  /* NVML_NVLINK_DEVICE_TYPE_* */
	gv_nv_str remote_bus_id; /* nvmlDeviceGetNvLinkRemotePciInfo_v2: "00000000:38:00.0" */
	gv_nv_u64 crc_flit, crc_data, replay, recovery; /* nvmlDeviceGetNvLinkErrorCounter */
	gv_nv_u64 tx_kib, rx_kib; /* fields THROUGHPUT_DATA_TX/RX: cumulative KiB of payload */
} gv_nvlink_link;

enum {
	GV_NVLINK_STATE = 1 << 0,   /* state, version, speed, remote */
	GV_NVLINK_ERRORS = 1 << 1,  /* error counters */
	GV_NVLINK_TRAFFIC = 1 << 2, /* TX/RX counters */
	GV_NVLINK_ALL = 0x7,
};

typedef struct gv_nvlink_gpu {
	unsigned index;
	nvmlReturn_t handle_rc;
	/* links that exist: the first nvmlDeviceGetNvLinkState that does not answer
	 * NOT_SUPPORTED/INVALID_ARGUMENT for a link index; 0 when the GPU has no NVLink */
	unsigned nlinks;
	gv_nvlink_link link[NVML_NVLINK_MAX_LINKS];
	/* the state call itself: unsupported (symbol missing or no NVLink on this GPU), error, ok */
	gv_vstate st;
	nvmlReturn_t rc;
} gv_nvlink_gpu;

/* Fills what `what` asks for on GPU index (NVML order); other fields keep their value. Requires
 * gv_nvml_init. Returns the handle lookup's result. GV_NVLINK_ERRORS and _TRAFFIC use the links
 * found by an earlier or the same GV_NVLINK_STATE. */
nvmlReturn_t gv_nvlink_snapshot(unsigned index, unsigned what, gv_nvlink_gpu *g);
/* The same with the device's handle already at hand (a sampler keeps it between samples). */
void gv_nvlink_snapshot_dev(nvmlDevice_t dev, unsigned what, gv_nvlink_gpu *g);

/* "gpu", "ibmnpu", "nvswitch", "unknown" */
const char *gv_nvlink_remote_type_name(unsigned long long type);
#endif
