/*
 * serve's NVLink families (docs/serve.md): per GPU and link, state, error counters and payload
 * bytes (counters: rate() gives the traffic). With --dcgm-compat also the DCGM exporter's per-GPU
 * DCGM_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL and DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL (families: metrics.h). The traffic rates (gpuvet_gpu_nvlink_tx/rx_bytes_per_second,
 * DCGM_FI_PROF_NVLINK_TX/RX_BYTES) are GPM's (nvidia/gpm_fields.h): one family, one writer.
 * Pure, like metrics.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "serve/metrics.h"

#define L(field) offsetof(snap_nvlink, field)
#define NO_FIELD SIZE_MAX

static sval link_field(const snap_nvlink *k, size_t off)
{
	sval v;
	memcpy(&v, (const char *)k + off, sizeof(v));
	return v;
}

/* gpu, uuid, link, and one more label */
static void sample_link(expo *e, double v, const gpu_sample *g, int link, const char *n1, const char *v1)
{
	char idx[16], lk[16];
	snprintf(idx, sizeof(idx), "%d", g->index);
	snprintf(lk, sizeof(lk), "%d", link);
	const char *names[] = {"gpu", "uuid", "link", n1};
	const char *values[] = {idx, g->uuid, lk, v1};
	expo_sample_v(e, v, n1 ? 4 : 3, names, values);
}

static bool has_links(const gpu_sample *g)
{
	return !g->lost && g->nvlinks > 0;
}

static void render_ours(expo *e, const snapshot *s)
{
	static const struct {
		size_t off;
		const char *type;
	} errs[] = {
		{L(crc_flit), "crc_flit"}, {L(crc_data), "crc_data"}, {L(replay), "replay"}, {L(recovery), "recovery"},
	};
	bool declared = false;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		for (int l = 0; has_links(g) && l < g->nvlinks; l++) {
			if (!sv_has(g->nvlink[l].active))
				continue;
			metrics_declare(e, &declared, MF_NVLINK_UP);
			sample_link(e, g->nvlink[l].active.v, g, l, NULL, NULL);
		}
	}
	declared = false;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		for (int l = 0; has_links(g) && l < g->nvlinks; l++)
			for (size_t k = 0; k < GV_ARRAY_LEN(errs); k++) {
				sval v = link_field(&g->nvlink[l], errs[k].off);
				if (!sv_has(v))
					continue;
				metrics_declare(e, &declared, MF_NVLINK_ERRORS);
				sample_link(e, v.v, g, l, "type", errs[k].type);
			}
	}
	declared = false;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		for (int l = 0; has_links(g) && l < g->nvlinks; l++) {
			const snap_nvlink *k = &g->nvlink[l];
			if (!sv_has(k->tx_bytes) && !sv_has(k->rx_bytes))
				continue;
			metrics_declare(e, &declared, MF_NVLINK_DATA_BYTES);
			if (sv_has(k->tx_bytes))
				sample_link(e, k->tx_bytes.v, g, l, "direction", "tx");
			if (sv_has(k->rx_bytes))
				sample_link(e, k->rx_bytes.v, g, l, "direction", "rx");
		}
	}
}

/* DCGM's labels, those of every other DCGM family (metrics.c) */
static void dcgm_sample(expo *e, double v, const gpu_sample *g, const metrics_input *in)
{
	gpu_labels l;
	metrics_gpu_labels(&l, g, true, in);
	expo_sample_v(e, v, l.n, l.names, l.values);
}

static void render_dcgm(expo *e, const snapshot *s, const metrics_input *in)
{
	/* DCGM's totals over all links (of one link field, or of two: off2), typed counter as
	 * dcgm-exporter types them (metrics.h's table). BANDWIDTH_TOTAL (DCGM field 449, since renamed
	 * DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL) is in dcgm-exporter's default set: here the payload
	 * bytes both ways since the driver loaded, so rate() gives the traffic. */
	static const struct {
		metric_family_id id;
		size_t off, off2;
	} totals[] = {
		{.id = MF_DCGM_NVLINK_CRC_FLIT, .off = L(crc_flit), .off2 = NO_FIELD},
		{.id = MF_DCGM_NVLINK_CRC_DATA, .off = L(crc_data), .off2 = NO_FIELD},
		{.id = MF_DCGM_NVLINK_REPLAY, .off = L(replay), .off2 = NO_FIELD},
		{.id = MF_DCGM_NVLINK_RECOVERY, .off = L(recovery), .off2 = NO_FIELD},
		{.id = MF_DCGM_NVLINK_BANDWIDTH, .off = L(tx_bytes), .off2 = L(rx_bytes)},
	};
	for (size_t k = 0; k < GV_ARRAY_LEN(totals); k++) {
		bool declared = false;
		for (int i = 0; i < s->ngpus; i++) {
			const gpu_sample *g = &s->gpus[i];
			double sum = 0;
			bool any = false;
			for (int l = 0; has_links(g) && l < g->nvlinks; l++) {
				size_t offs[2] = {totals[k].off, totals[k].off2};
				for (int f = 0; f < 2 && offs[f] != NO_FIELD; f++) {
					sval v = link_field(&g->nvlink[l], offs[f]);
					if (sv_has(v))
						sum += v.v, any = true;
				}
			}
			if (!any)
				continue;
			metrics_declare(e, &declared, totals[k].id);
			dcgm_sample(e, sum, g, in);
		}
	}
}

void metrics_render_nvlink(expo *e, const snapshot *s, const metrics_input *in)
{
	render_ours(e, s);
	if (in->dcgm)
		render_dcgm(e, s, in);
}
