/* serve's metric families (serve/metrics.c) over snapshots made of any bytes: names, owners
 * (pods, Slurm jobs, containers, the kubelet's allocations), MIG devices, Xids, processes, in both
 * namings and both formats. What comes out must be an exposition whose every line is a comment
 * or a sample, never a refused name, and OpenMetrics must end in "# EOF". */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "expo/expo.h"
#include "serve/metrics.h"

typedef struct reader {
	const uint8_t *p;
	size_t n;
} reader;

static unsigned byte(reader *r)
{
	if (!r->n)
		return 0;
	r->n--;
	return *r->p++;
}

/* a string of up to 40 bytes of the input, NUL-terminated within size */
static void text(reader *r, char *out, size_t size)
{
	size_t len = byte(r) % 41;
	if (len >= size)
		len = size - 1;
	size_t i = 0;
	for (; i < len && r->n; i++)
		out[i] = (char)byte(r);
	out[i] = '\0';
}

static sval value(reader *r)
{
	unsigned b = byte(r);
	if (b % 5 == 0)
		return (sval){0, SV_NA};
	return sv_ok((double)b * (b & 1 ? 1e9 : 0.01));
}

static void some_owner(reader *r, owner *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = (owner_kind)(byte(r) % 4);
	text(r, o->pod_uid, sizeof(o->pod_uid));
	text(r, o->namespace_, sizeof(o->namespace_));
	text(r, o->pod, sizeof(o->pod));
	text(r, o->container, sizeof(o->container));
	text(r, o->job, sizeof(o->job));
	text(r, o->user, sizeof(o->user));
	text(r, o->container_id, sizeof(o->container_id));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	reader r = {data, size};
	snapshot *s = snapshot_new(1 + (int)(byte(&r) % 3));
	s->kubelet_checkpoint = (int)(byte(&r) % 3) - 1;
	text(&r, s->driver_version, sizeof(s->driver_version));
	for (int i = 0; i < s->ngpus; i++) {
		gpu_sample *g = &s->gpus[i];
		text(&r, g->uuid, sizeof(g->uuid));
		text(&r, g->name, sizeof(g->name));
		g->lost = byte(&r) % 7 == 0;
		g->temp = value(&r);
		g->mem_used = value(&r);
		g->mem_total = value(&r);
		g->energy_mj = value(&r);
		g->nproc = byte(&r) % 5;
		for (size_t k = 0; k < g->nproc; k++) {
			gpu_process *p = &g->procs[k];
			p->pid = byte(&r);
			text(&r, p->name, sizeof(p->name));
			str_copy(p->type, sizeof(p->type), "compute");
			p->used_bytes = value(&r);
			p->sm_util = value(&r);
			some_owner(&r, &p->owner);
		}
		g->nalloc = byte(&r) % 4;
		for (size_t k = 0; k < g->nalloc; k++) {
			some_owner(&r, &g->alloc[k].owner);
			g->alloc[k].gpu_instance = (int)(byte(&r) % 9) - 1;
		}
		g->mig_mode = value(&r);
		g->nmig = byte(&r) % 4;
		for (size_t k = 0; k < g->nmig; k++) {
			text(&r, g->mig[k].uuid, sizeof(g->mig[k].uuid));
			text(&r, g->mig[k].profile, sizeof(g->mig[k].profile));
			g->mig[k].gpu_instance = (int)(byte(&r) % 16) - 1;
			g->mig[k].compute_instance = (int)(byte(&r) % 4) - 1;
			g->mig[k].mem_used = value(&r);
			g->mig[k].mem_total = value(&r);
		}
		g->nxid = byte(&r) % 3;
		for (size_t k = 0; k < g->nxid; k++)
			g->xids[k] = (xid_count){.code = byte(&r), .count = byte(&r), .last_time = byte(&r)};
	}
	for (int fmt = 0; fmt < 2; fmt++)
		for (int dcgm = 0; dcgm < 2; dcgm++) {
			strbuf sb;
			sb_init(&sb);
			expo e;
			expo_init(&e, &sb, fmt ? EXPO_OPENMETRICS : EXPO_TEXT);
			metrics_input in = {.snap = s, .dcgm = dcgm, .processes = true, .process_series_max = 3,
					    .hostname = "h"};
			metrics_render(&e, &in);
			expo_finish(&e);
			if (e.bad || (fmt && !str_ends(sb.buf ? sb.buf : "", "# EOF\n")))
				__builtin_trap();
			/* every line: a comment or NAME{...} VALUE / NAME VALUE, one line each */
			for (const char *p = sb.buf; p && *p;) {
				const char *nl = strchr(p, '\n');
				if (!nl || (p[0] != '#' && !(p[0] == '_' || (p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z'))))
					__builtin_trap();
				p = nl + 1;
			}
			sb_free(&sb);
		}
	snapshot_free(s);
	return 0;
}
