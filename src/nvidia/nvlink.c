/* NVLink through NVML (nvlink.h): our own function types, symbols looked up per snapshot. */
#include "nvidia/nvlink.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"

typedef nvmlReturn_t (*state_fn)(nvmlDevice_t, unsigned, int *);
typedef nvmlReturn_t (*version_fn)(nvmlDevice_t, unsigned, unsigned *);
typedef nvmlReturn_t (*remote_pci_fn)(nvmlDevice_t, unsigned, nvmlPciInfo_t *);
typedef nvmlReturn_t (*remote_type_fn)(nvmlDevice_t, unsigned, int *);
typedef nvmlReturn_t (*error_fn)(nvmlDevice_t, unsigned, int, unsigned long long *);
typedef nvmlReturn_t (*fields_fn)(nvmlDevice_t, int, nvmlFieldValue_t *);

typedef struct nvlink_fns {
	state_fn state;
	version_fn version;
	remote_pci_fn remote_pci;
	remote_type_fn remote_type;
	error_fn error;
	fields_fn fields;
} nvlink_fns;

static void *first_sym(const char *a, const char *b)
{
	void *p = gv_nvml_symbol(a);
	return p || !b ? p : gv_nvml_symbol(b);
}

static void resolve(nvlink_fns *fn)
{
	*(void **)&fn->state = first_sym("nvmlDeviceGetNvLinkState", NULL);
	*(void **)&fn->version = first_sym("nvmlDeviceGetNvLinkVersion", NULL);
	*(void **)&fn->remote_pci = first_sym("nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetNvLinkRemotePciInfo");
	*(void **)&fn->remote_type = first_sym("nvmlDeviceGetNvLinkRemoteDeviceType", NULL);
	*(void **)&fn->error = first_sym("nvmlDeviceGetNvLinkErrorCounter", NULL);
	*(void **)&fn->fields = first_sym("nvmlDeviceGetFieldValues", NULL);
}

static void u64_missing(gv_nv_u64 *v)
{
	gv_nvml_u64_set(v, NVML_ERROR_FUNCTION_NOT_FOUND, 0);
}

/* A link index the GPU does not have: NVML answers NOT_SUPPORTED or INVALID_ARGUMENT. */
static bool no_such_link(nvmlReturn_t rc)
{
	return rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT;
}

static void snap_state(const nvlink_fns *fn, nvmlDevice_t dev, gv_nvlink_gpu *g)
{
	g->nlinks = 0;
	if (!fn->state) {
		gv_nvml_put_rc(&g->st, &g->rc, NVML_ERROR_FUNCTION_NOT_FOUND);
		return;
	}
	for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
		gv_nvlink_link *k = &g->link[l];
		memset(k, 0, sizeof(*k));
		int active = 0;
		nvmlReturn_t rc = fn->state(dev, l, &active);
		if (no_such_link(rc)) {
			k->active.st = GV_V_UNSET;
			continue;
		}
		gv_nvml_u64_set(&k->active, rc, active == NVML_FEATURE_ENABLED);
		g->nlinks = l + 1;
	}
	if (g->nlinks == 0) {
		gv_nvml_put_rc(&g->st, &g->rc, NVML_ERROR_NOT_SUPPORTED); /* a GPU without NVLink */
		return;
	}
	gv_nvml_put_rc(&g->st, &g->rc, NVML_SUCCESS);
	for (unsigned l = 0; l < g->nlinks; l++) {
		gv_nvlink_link *k = &g->link[l];
		if (k->active.st == GV_V_UNSET)
			continue;
		if (fn->version) {
			unsigned v = 0;
			nvmlReturn_t rc = fn->version(dev, l, &v);
			gv_nvml_u64_set(&k->version, rc, v);
		} else {
			u64_missing(&k->version);
		}
		if (fn->remote_type) {
			int t = 0;
			nvmlReturn_t rc = fn->remote_type(dev, l, &t);
			gv_nvml_u64_set(&k->remote_type, rc, (unsigned)t & 0xff);
		} else {
			u64_missing(&k->remote_type);
		}
		if (fn->remote_pci) {
			nvmlPciInfo_t pci;
			memset(&pci, 0, sizeof(pci));
			nvmlReturn_t rc = fn->remote_pci(dev, l, &pci);
			gv_nvml_pci_bus_id(&pci, k->remote_bus_id.v, sizeof(k->remote_bus_id.v));
			str_sanitize(k->remote_bus_id.v);
			gv_nvml_put_rc(&k->remote_bus_id.st, &k->remote_bus_id.rc, rc);
			if (rc != NVML_SUCCESS)
				k->remote_bus_id.v[0] = '\0';
		} else {
			gv_nvml_put_rc(&k->remote_bus_id.st, &k->remote_bus_id.rc, NVML_ERROR_FUNCTION_NOT_FOUND);
			k->remote_bus_id.v[0] = '\0';
		}
		gv_nvml_get_field(dev, NVML_FI_DEV_NVLINK_GET_SPEED, l, &k->speed_mbps);
	}
}

static void snap_errors(const nvlink_fns *fn, nvmlDevice_t dev, gv_nvlink_gpu *g)
{
	static const struct {
		int counter;
		size_t off;
	} counters[] = {
		{NVML_NVLINK_ERROR_DL_CRC_FLIT, offsetof(gv_nvlink_link, crc_flit)},
		{NVML_NVLINK_ERROR_DL_CRC_DATA, offsetof(gv_nvlink_link, crc_data)},
		{NVML_NVLINK_ERROR_DL_REPLAY, offsetof(gv_nvlink_link, replay)},
		{NVML_NVLINK_ERROR_DL_RECOVERY, offsetof(gv_nvlink_link, recovery)},
	};
	for (unsigned l = 0; l < g->nlinks; l++) {
		gv_nvlink_link *k = &g->link[l];
		if (k->active.st == GV_V_UNSET)
			continue;
		for (size_t c = 0; c < GV_ARRAY_LEN(counters); c++) {
			gv_nv_u64 *v = (gv_nv_u64 *)((char *)k + counters[c].off);
			if (!fn->error) {
				u64_missing(v);
				continue;
			}
			unsigned long long n = 0;
			nvmlReturn_t rc = fn->error(dev, l, counters[c].counter, &n);
			gv_nvml_u64_set(v, rc, n);
		}
	}
}

/* TX and RX of every link in one nvmlDeviceGetFieldValues call */
static void snap_traffic(const nvlink_fns *fn, nvmlDevice_t dev, gv_nvlink_gpu *g)
{
	nvmlFieldValue_t fv[2 * NVML_NVLINK_MAX_LINKS];
	unsigned links[NVML_NVLINK_MAX_LINKS], n = 0;
	memset(fv, 0, sizeof(fv));
	for (unsigned l = 0; l < g->nlinks; l++) {
		if (g->link[l].active.st == GV_V_UNSET)
			continue;
		fv[2 * n].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
		fv[2 * n].scopeId = l;
		fv[2 * n + 1].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
		fv[2 * n + 1].scopeId = l;
		links[n++] = l;
	}
	if (!n)
		return;
	nvmlReturn_t rc = fn->fields ? fn->fields(dev, (int)(2 * n), fv) : NVML_ERROR_FUNCTION_NOT_FOUND;
	for (unsigned i = 0; i < n; i++) {
		gv_nvlink_link *k = &g->link[links[i]];
		nvmlReturn_t tx = rc == NVML_SUCCESS ? fv[2 * i].nvmlReturn : rc;
		nvmlReturn_t rx = rc == NVML_SUCCESS ? fv[2 * i + 1].nvmlReturn : rc;
		gv_nvml_u64_set(&k->tx_kib, tx, gv_nvml_field_u64(&fv[2 * i]));
		gv_nvml_u64_set(&k->rx_kib, rx, gv_nvml_field_u64(&fv[2 * i + 1]));
	}
}

nvmlReturn_t gv_nvlink_snapshot(unsigned index, unsigned what, gv_nvlink_gpu *g)
{
	g->index = index;
	nvmlDevice_t dev;
	nvmlReturn_t rc = gv_nvml_snapshot_handle(index, &dev, &g->handle_rc);
	if (rc == NVML_SUCCESS)
		gv_nvlink_snapshot_dev(dev, what, g);
	return rc;
}

void gv_nvlink_snapshot_dev(nvmlDevice_t dev, unsigned what, gv_nvlink_gpu *g)
{
	nvlink_fns fn;
	resolve(&fn);
	if (what & GV_NVLINK_STATE)
		snap_state(&fn, dev, g);
	if (what & GV_NVLINK_ERRORS)
		snap_errors(&fn, dev, g);
	if (what & GV_NVLINK_TRAFFIC)
		snap_traffic(&fn, dev, g);
}

const char *gv_nvlink_remote_type_name(unsigned long long type)
{
	switch (type) {
	case NVML_NVLINK_DEVICE_TYPE_GPU: return "gpu";
	case NVML_NVLINK_DEVICE_TYPE_IBMNPU: return "ibmnpu";
	case NVML_NVLINK_DEVICE_TYPE_SWITCH: return "nvswitch";
	default: return "unknown";
	}
}
