#include "sampler/nvlink_sample.h"

void nvlink_sample(unsigned index, nvlink_track *t, bool full, double now, gpu_sample *out)
{
	unsigned what = GV_NVLINK_TRAFFIC;
	if (full || !t->have_state)
		what |= GV_NVLINK_STATE | GV_NVLINK_ERRORS;
	/* the handle once per state read: one lookup per GPU every health tick, not every sample */
	if ((what & GV_NVLINK_STATE) && gv_nvml_device_handle(index, &t->dev) != NVML_SUCCESS)
		t->dev = NULL;
	if (!t->dev)
		return;
	gv_nvlink_snapshot_dev(t->dev, what, &t->g);
	if (what & GV_NVLINK_STATE)
		t->have_state = true;
	out->nvlinks = 0;
	out->nvlink_tx_bps = out->nvlink_rx_bps = (sval){0, SV_NONE};
	if (t->g.st != GV_V_OK)
		return;
	int n = (int)t->g.nlinks < SNAP_MAX_NVLINKS ? (int)t->g.nlinks : SNAP_MAX_NVLINKS;
	out->nvlinks = n;
	double tx = 0, rx = 0;
	bool have_tx = false, have_rx = false;
	for (int l = 0; l < n; l++) {
		const gv_nvlink_link *k = &t->g.link[l];
		snap_nvlink *o = &out->nvlink[l];
		o->active = sv_from_nvml(k->active, 1);
		o->tx_bytes = sv_from_nvml(k->tx_kib, 1024);
		o->rx_bytes = sv_from_nvml(k->rx_kib, 1024);
		o->crc_flit = sv_from_nvml(k->crc_flit, 1);
		o->crc_data = sv_from_nvml(k->crc_data, 1);
		o->replay = sv_from_nvml(k->replay, 1);
		o->recovery = sv_from_nvml(k->recovery, 1);
		if (sv_has(o->tx_bytes))
			tx += o->tx_bytes.v, have_tx = true;
		if (sv_has(o->rx_bytes))
			rx += o->rx_bytes.v, have_rx = true;
	}
	/* a rate needs two readings; counters that went back (driver reload) start again */
	double dt = now - t->last_time;
	if (t->last_time > 0 && dt > 0) {
		if (have_tx && tx >= t->last_tx)
			out->nvlink_tx_bps = sv_ok((tx - t->last_tx) / dt);
		if (have_rx && rx >= t->last_rx)
			out->nvlink_rx_bps = sv_ok((rx - t->last_rx) / dt);
	}
	if (have_tx || have_rx) {
		t->last_time = now;
		t->last_tx = tx;
		t->last_rx = rx;
	}
}
