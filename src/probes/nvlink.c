/*
 * NVLink per GPU and link: state, version, speed, remote endpoint, error counters, traffic.
 * Called by the NVML probe for each GPU (in that GPU's thread, under NVML's deadline).
 *
 * Facts: nvml.gpu.N.nvlink.*  (docs/facts/nvidia.md)
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/factkeys.h"
#include "nvidia/nvlink.h"
#include "probes/probes.h"

static void put_state(facts *f, gv_vstate st, nvmlReturn_t rc, const char *source, const char *key)
{
	char why[256];
	if (st == GV_V_UNSUPPORTED) {
		facts_put_state(f, FACT_UNSUPPORTED, source, rc == NVML_ERROR_FUNCTION_NOT_FOUND
				? "this driver's NVML lacks the call" : "not supported on this GPU", "%s", key);
	} else {
		snprintf(why, sizeof(why), "%s (%d): %s", gv_nvml_return_name(rc), rc, gv_nvml_error_string(rc));
		facts_put_state(f, FACT_ERROR, source, why, "%s", key);
	}
}

/* The value under the key (a registry constant with the GPU and link), or its state; nothing for a
 * value not asked for. */
static void put_link_u64(facts *f, const gv_nv_u64 *v, unsigned long long scale, const char *source,
			 const char *keyfmt, ...) GV_PRINTF(5, 6);
static void put_link_u64(facts *f, const gv_nv_u64 *v, unsigned long long scale, const char *source,
			 const char *keyfmt, ...)
{
	char key[128];
	va_list ap;
	va_start(ap, keyfmt);
	vsnprintf(key, sizeof(key), keyfmt, ap);
	va_end(ap);
	if (v->st == GV_V_UNSET)
		return;
	if (v->st != GV_V_OK)
		put_state(f, v->st, v->rc, source, key);
	else
		facts_put_int(f, source, (long long)(v->v * scale), "%s", key);
}

void probe_nvlink_gpu(facts *f, int i)
{
	gv_nvlink_gpu *g = xcalloc(1, sizeof(*g));
	const char *src = "nvmlDeviceGetNvLinkState";
	if (gv_nvlink_snapshot((unsigned)i, GV_NVLINK_ALL, g) != NVML_SUCCESS) {
		free(g);
		return; /* the NVML probe reported the handle's failure */
	}
	if (g->st != GV_V_OK) {
		char key[64];
		snprintf(key, sizeof(key), FK_NVML_GPU_NVLINK_COUNT(d), i);
		put_state(f, g->st, g->rc, src, key);
		free(g);
		return;
	}
	facts_put_int(f, src, g->nlinks, FK_NVML_GPU_NVLINK_COUNT(d), i);
	int active = 0;
	for (unsigned l = 0; l < g->nlinks; l++) {
		const gv_nvlink_link *k = &g->link[l];
		if (k->active.st == GV_V_UNSET)
			continue;
		if (k->active.st != GV_V_OK) {
			char key[96];
			snprintf(key, sizeof(key), FK_NVML_GPU_NVLINK_STATE(d, u), i, l);
			put_state(f, k->active.st, k->active.rc, src, key);
			continue;
		}
		active += k->active.v != 0;
		facts_put_str(f, src, k->active.v ? "active" : "inactive", FK_NVML_GPU_NVLINK_STATE(d, u), i, l);
		put_link_u64(f, &k->version, 1, "nvmlDeviceGetNvLinkVersion", FK_NVML_GPU_NVLINK_VERSION(d, u), i, l);
		put_link_u64(f, &k->speed_mbps, 1, "nvmlDeviceGetFieldValues(NVML_FI_DEV_NVLINK_GET_SPEED)", FK_NVML_GPU_NVLINK_SPEED_MBPS(d, u),
			     i, l);
		const char *rt = "nvmlDeviceGetNvLinkRemoteDeviceType";
		if (k->remote_type.st == GV_V_OK) {
			facts_put_str(f, rt, gv_nvlink_remote_type_name(k->remote_type.v), FK_NVML_GPU_NVLINK_REMOTE_TYPE(d, u),
				      i, l);
		} else if (k->remote_type.st != GV_V_UNSET) {
			char key[96];
			snprintf(key, sizeof(key), FK_NVML_GPU_NVLINK_REMOTE_TYPE(d, u), i, l);
			put_state(f, k->remote_type.st, k->remote_type.rc, rt, key);
		}
		const char *rp = "nvmlDeviceGetNvLinkRemotePciInfo_v2";
		if (k->remote_bus_id.st == GV_V_OK) {
			facts_put_str(f, rp, k->remote_bus_id.v, FK_NVML_GPU_NVLINK_REMOTE_BUS_ID(d, u), i, l);
		} else if (k->remote_bus_id.st != GV_V_UNSET) {
			char key[96];
			snprintf(key, sizeof(key), FK_NVML_GPU_NVLINK_REMOTE_BUS_ID(d, u), i, l);
			put_state(f, k->remote_bus_id.st, k->remote_bus_id.rc, rp, key);
		}
		const char *ec = "nvmlDeviceGetNvLinkErrorCounter";
		put_link_u64(f, &k->crc_flit, 1, ec, FK_NVML_GPU_NVLINK_CRC_FLIT_ERRORS(d, u), i, l);
		put_link_u64(f, &k->crc_data, 1, ec, FK_NVML_GPU_NVLINK_CRC_DATA_ERRORS(d, u), i, l);
		put_link_u64(f, &k->replay, 1, ec, FK_NVML_GPU_NVLINK_REPLAY_ERRORS(d, u), i, l);
		put_link_u64(f, &k->recovery, 1, ec, FK_NVML_GPU_NVLINK_RECOVERY_ERRORS(d, u), i, l);
		const char *tp = "nvmlDeviceGetFieldValues(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX)";
		put_link_u64(f, &k->tx_kib, 1024, tp, FK_NVML_GPU_NVLINK_TX_BYTES(d, u), i, l);
		put_link_u64(f, &k->rx_kib, 1024, tp, FK_NVML_GPU_NVLINK_RX_BYTES(d, u), i, l);
	}
	facts_put_int(f, src, active, FK_NVML_GPU_NVLINK_ACTIVE_COUNT(d), i);
	free(g);
}
