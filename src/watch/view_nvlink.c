/* watch's NVLink: one line per GPU under its row (text), an "nvlink" object (JSON). */
#include <cjson/cJSON.h>
#include <stdio.h>

#include "core/util.h"
#include "watch/view.h"

static int active_links(const gpu_sample *g, int *known)
{
	int a = 0;
	*known = 0;
	for (int l = 0; l < g->nvlinks && l < SNAP_MAX_NVLINKS; l++)
		if (sv_has(g->nvlink[l].active)) {
			(*known)++;
			a += g->nvlink[l].active.v != 0;
		}
	return a;
}

static double errors_sum(const gpu_sample *g)
{
	double n = 0;
	for (int l = 0; l < g->nvlinks && l < SNAP_MAX_NVLINKS; l++) {
		const snap_nvlink *k = &g->nvlink[l];
		const sval *v[] = {&k->crc_flit, &k->crc_data, &k->replay, &k->recovery};
		for (size_t i = 0; i < GV_ARRAY_LEN(v); i++)
			if (sv_has(*v[i]))
				n += v[i]->v;
	}
	return n;
}

static const char *rate(char *buf, size_t size, sval v)
{
	if (!sv_has(v))
		snprintf(buf, size, "n/a");
	else if (v.v >= 1e9)
		snprintf(buf, size, "%.1f GB/s", v.v / 1e9);
	else
		snprintf(buf, size, "%.1f MB/s", v.v / 1e6);
	return buf;
}

void view_nvlink_text(FILE *out, const gpu_sample *g)
{
	if (g->lost || g->nvlinks <= 0)
		return;
	int known = 0, a = active_links(g, &known);
	char tx[32], rx[32];
	fprintf(out, "    nvlink: %d of %d links up, tx %s, rx %s, %.0f link errors since the driver loaded\n", a, known,
		rate(tx, sizeof(tx), g->nvlink_tx_bps), rate(rx, sizeof(rx), g->nvlink_rx_bps), errors_sum(g));
}

void view_nvlink_json(struct cJSON *x, const gpu_sample *g)
{
	if (g->lost || g->nvlinks <= 0) {
		cJSON_AddNullToObject(x, "nvlink");
		return;
	}
	cJSON *o = cJSON_AddObjectToObject(x, "nvlink");
	int known = 0, a = active_links(g, &known);
	cJSON_AddNumberToObject(o, "links", known);
	cJSON_AddNumberToObject(o, "active", a);
	if (sv_has(g->nvlink_tx_bps))
		cJSON_AddNumberToObject(o, "tx_bytes_per_second", g->nvlink_tx_bps.v);
	else
		cJSON_AddNullToObject(o, "tx_bytes_per_second");
	if (sv_has(g->nvlink_rx_bps))
		cJSON_AddNumberToObject(o, "rx_bytes_per_second", g->nvlink_rx_bps.v);
	else
		cJSON_AddNullToObject(o, "rx_bytes_per_second");
	cJSON_AddNumberToObject(o, "errors", errors_sum(g));
	cJSON *down = cJSON_AddArrayToObject(o, "down");
	for (int l = 0; l < g->nvlinks && l < SNAP_MAX_NVLINKS; l++)
		if (sv_has(g->nvlink[l].active) && g->nvlink[l].active.v == 0)
			cJSON_AddItemToArray(down, cJSON_CreateNumber(l));
}
