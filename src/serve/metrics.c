#include "serve/metrics.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nvidia/nvml.h"
#include "sampler/fields.h"

#define F(field) offsetof(gpu_sample, field)

/* The plain per-GPU families come from sampler/fields.h: gpuvet's names, and with
 * --dcgm-compat the DCGM exporter's names, units and meaning (its etc/default-counters.csv), for
 * dashboards written against it (Grafana 12239). DCGM's counters carry no "_total"; they are
 * typed untyped so that promtool's lint stays quiet while the names stay DCGM's. Left out:
 * DCGM_FI_DEV_PCIE_REPLAY_COUNTER (promtool rejects "counter" in a name). The profiling fields
 * (DCGM_FI_PROF_*) are NVML's GPM counters, from nvidia/gpm_fields.h (render_gpm). */
static metric_type mtype(char t)
{
	return t == 'c' ? MT_COUNTER : t == 'u' ? MT_UNTYPED : MT_GAUGE;
}

static sval field(const gpu_sample *g, size_t offset)
{
	sval v;
	memcpy(&v, (const char *)g + offset, sizeof(v));
	return v;
}


/* Whose job holds the GPU, as dcgm-exporter names it: pod, namespace, container for the first
 * Kubernetes pod among its processes, hpc_job for the first Slurm job (dcgm-exporter's HPC job
 * mapping label). None when the GPU's processes are the host's. */
static void owner_labels(gpu_labels *l, const gpu_sample *g)
{
	const owner *pod = NULL, *job = NULL;
	for (size_t k = 0; k < g->nproc; k++) {
		const owner *o = &g->procs[k].owner;
		if (o->kind == OWNER_POD && !pod)
			pod = o;
		else if (o->kind == OWNER_SLURM && !job)
			job = o;
	}
	if (pod && pod->pod[0]) {
		l->names[l->n] = "pod", l->values[l->n++] = pod->pod;
		l->names[l->n] = "namespace", l->values[l->n++] = pod->namespace_;
		if (pod->container[0])
			l->names[l->n] = "container", l->values[l->n++] = pod->container;
	}
	if (job)
		l->names[l->n] = "hpc_job", l->values[l->n++] = job->job;
}

void metrics_gpu_labels(gpu_labels *l, const gpu_sample *g, bool dcgm, const metrics_input *in)
{
	snprintf(l->index, sizeof(l->index), "%d", g->index);
	l->names[0] = "gpu", l->values[0] = l->index;
	if (!dcgm) {
		l->names[1] = "uuid", l->values[1] = g->uuid;
		l->n = 2;
		owner_labels(l, g);
		return;
	}
	snprintf(l->device, sizeof(l->device), "nvidia%d", g->minor >= 0 ? g->minor : g->index);
	l->names[1] = "UUID", l->values[1] = g->uuid;
	l->names[2] = "pci_bus_id", l->values[2] = g->pci_bus_id;
	l->names[3] = "device", l->values[3] = l->device;
	l->names[4] = "Hostname", l->values[4] = in->hostname ? in->hostname : "";
	l->n = 5;
	if (in->snap && in->snap->driver_version[0])
		l->names[l->n] = "DCGM_FI_DRIVER_VERSION", l->values[l->n++] = in->snap->driver_version;
	if (in->dcgm_model_name)
		l->names[l->n] = "modelName", l->values[l->n++] = g->name;
	owner_labels(l, g);
}

static void our_labels(gpu_labels *l, const gpu_sample *g)
{
	metrics_gpu_labels(l, g, false, NULL);
}

void metrics_family_once(expo *e, bool *declared, const char *name, metric_type type, const char *help)
{
	if (!*declared)
		expo_family(e, name, type, help);
	*declared = true;
}

/* The same labels plus one or two more. */
static void sample_plus(expo *e, double v, const gpu_labels *l, const char *n1, const char *v1, const char *n2,
			const char *v2)
{
	const char *names[16], *values[16];
	size_t n = l->n;
	memcpy(names, l->names, n * sizeof(*names));
	memcpy(values, l->values, n * sizeof(*values));
	if (n1)
		names[n] = n1, values[n++] = v1;
	if (n2)
		names[n] = n2, values[n++] = v2;
	expo_sample_v(e, v, n, names, values);
}

static void render_field_families(expo *e, const snapshot *s, bool dcgm, const metrics_input *in)
{
	for (size_t f = 0; f < n_snap_fields; f++) {
		const snap_field *sf = &snap_fields[f];
		const char *name = dcgm ? sf->dcgm : sf->prom;
		if (!name)
			continue;
		bool declared = false;
		for (int i = 0; i < s->ngpus; i++) {
			const gpu_sample *g = &s->gpus[i];
			sval v = field(g, sf->off);
			if (!sv_has(v) || g->lost)
				continue; /* n/a: no sample rather than a made-up value */
			metrics_family_once(e, &declared, name, mtype(dcgm ? sf->dcgm_type : sf->prom_type),
					    dcgm ? sf->dcgm_help : sf->prom_help);
			gpu_labels l;
			metrics_gpu_labels(&l, g, dcgm, in);
			expo_sample_v(e, v.v * (dcgm ? sf->dcgm_scale : sf->prom_scale), l.n, l.names, l.values);
		}
	}
}

/* The GPM activity counters, one family per row of nvidia/gpm_fields.h: gpuvet's name, and
 * DCGM's with --dcgm-compat. Absent where the GPU has no GPM (never a made-up value); DCGM's
 * graphics-engine field alone falls back to NVML's utilization.gpu there, so the DCGM
 * dashboard's utilization panel keeps working (docs/serve.md). */
static void render_gpm(expo *e, const snapshot *s, bool dcgm, const metrics_input *in)
{
	bool any = false;
	for (int i = 0; i < s->ngpus && !any; i++)
		any = !s->gpus[i].lost && s->gpus[i].gpm_support != 0;
	if (!dcgm && any) {
		expo_family(e, "gpuvet_gpu_gpm_supported", MT_GAUGE,
			    "1 when gpuvet reads the GPU's GPM activity counters (NVML GPM: Hopper and newer), 0 when not.");
		for (int i = 0; i < s->ngpus; i++) {
			const gpu_sample *g = &s->gpus[i];
			if (g->lost || !g->gpm_support)
				continue;
			gpu_labels l;
			our_labels(&l, g);
			expo_sample_v(e, g->gpm_support == GV_GPM_ON ? 1 : 0, l.n, l.names, l.values);
		}
	}
	for (int k = 0; k < GV_GPM_N; k++) {
		const gv_gpm_field *f = &gv_gpm_fields[k];
		const char *name = dcgm ? f->dcgm_name : f->prom_name;
		bool declared = false;
		for (int i = 0; i < s->ngpus; i++) {
			const gpu_sample *g = &s->gpus[i];
			if (g->lost)
				continue;
			sval v = g->gpm[k];
			if (!sv_has(v) && dcgm && k == GV_GPM_GRAPHICS && g->gpm_support != GV_GPM_ON && sv_has(g->util_gpu))
				v = sv_ok(g->util_gpu.v * 0.01);
			if (!sv_has(v))
				continue;
			metrics_family_once(e, &declared, name, MT_GAUGE, f->help);
			gpu_labels l;
			metrics_gpu_labels(&l, g, dcgm, in);
			expo_sample_v(e, v.v, l.n, l.names, l.values);
		}
	}
}

static void render_info(expo *e, const snapshot *s)
{
	expo_family(e, "gpuvet_gpu_info", MT_GAUGE,
		    "Identity of each GPU; always 1. Join on gpu and uuid for the name and bus id.");
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		gpu_labels l;
		our_labels(&l, g);
		char minor[16];
		snprintf(minor, sizeof(minor), "%d", g->minor);
		const char *names[] = {"gpu", "uuid", "name", "pci_bus_id", "minor_number", "driver_version"};
		const char *values[] = {l.index, g->uuid, g->name, g->pci_bus_id, g->minor >= 0 ? minor : NULL,
					s->driver_version[0] ? s->driver_version : NULL};
		expo_sample_v(e, 1, GV_ARRAY_LEN(names), names, values);
	}
}

static void render_throttle(expo *e, const snapshot *s)
{
	bool declared = false;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		if (!sv_has(g->clock_reasons) || g->lost)
			continue;
		metrics_family_once(e, &declared, "gpuvet_gpu_throttle_reason", MT_GAUGE,
				    "1 when this clock event reason holds the clocks back (NVML clock event reasons).");
		gpu_labels l;
		our_labels(&l, g);
		unsigned long long mask = (unsigned long long)g->clock_reasons.v;
		for (size_t r = 0; r < gv_nvml_n_clock_reasons; r++)
			sample_plus(e, (mask & gv_nvml_clock_reasons[r].bit) ? 1 : 0, &l, "reason", gv_nvml_clock_reasons[r].name, NULL, NULL);
	}
}

static void render_pcie_throughput(expo *e, const snapshot *s)
{
	bool declared = false;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		if (g->lost || (!sv_has(g->pcie_tx_kbps) && !sv_has(g->pcie_rx_kbps)))
			continue;
		metrics_family_once(e, &declared, "gpuvet_gpu_pcie_throughput_bytes_per_second", MT_GAUGE,
				    "PCIe throughput over NVML's last 20 ms window, by direction (tx: GPU to host).");
		gpu_labels l;
		our_labels(&l, g);
		if (sv_has(g->pcie_tx_kbps))
			sample_plus(e, g->pcie_tx_kbps.v * 1024, &l, "direction", "tx", NULL, NULL);
		if (sv_has(g->pcie_rx_kbps))
			sample_plus(e, g->pcie_rx_kbps.v * 1024, &l, "direction", "rx", NULL, NULL);
	}
}

static void render_ecc(expo *e, const snapshot *s)
{
	static const struct {
		size_t off;
		const char *type, *scope;
	} ecc[] = {
		{F(ecc_corr_volatile), "corrected", "volatile"},
		{F(ecc_uncorr_volatile), "uncorrected", "volatile"},
		{F(ecc_corr_aggregate), "corrected", "aggregate"},
		{F(ecc_uncorr_aggregate), "uncorrected", "aggregate"},
	};
	bool declared = false;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		if (g->lost)
			continue;
		gpu_labels l;
		our_labels(&l, g);
		for (size_t k = 0; k < GV_ARRAY_LEN(ecc); k++) {
			sval v = field(g, ecc[k].off);
			if (!sv_has(v))
				continue;
			metrics_family_once(e, &declared, "gpuvet_gpu_ecc_errors_total", MT_COUNTER,
					    "ECC errors; scope volatile counts since the driver loaded, aggregate over the GPU's life.");
			sample_plus(e, v.v, &l, "type", ecc[k].type, "scope", ecc[k].scope);
		}
	}
}

static void render_pair(expo *e, const snapshot *s, const char *name, const char *help, const char *label, size_t off1,
			const char *v1, size_t off2, const char *v2)
{
	bool declared = false;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		sval a = field(g, off1), b = field(g, off2);
		if (g->lost || (!sv_has(a) && !sv_has(b)))
			continue;
		metrics_family_once(e, &declared, name, MT_GAUGE, help);
		gpu_labels l;
		our_labels(&l, g);
		if (sv_has(a))
			sample_plus(e, a.v, &l, label, v1, NULL, NULL);
		if (sv_has(b))
			sample_plus(e, b.v, &l, label, v2, NULL, NULL);
	}
}

static void render_xid(expo *e, const snapshot *s, bool dcgm, const metrics_input *in)
{
	expo_family(e, "gpuvet_gpu_xid_errors_total", MT_COUNTER,
		    "Xid events seen since gpuvet started (NVML events and kernel log), by code.");
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		gpu_labels l;
		our_labels(&l, g);
		for (size_t k = 0; k < g->nxid; k++) {
			char code[16];
			snprintf(code, sizeof(code), "%u", g->xids[k].code);
			sample_plus(e, (double)g->xids[k].count, &l, "xid", code, NULL, NULL);
		}
	}
	if (!dcgm)
		return;
	expo_family(e, "DCGM_FI_DEV_XID_ERRORS", MT_GAUGE, "Value of the last XID error encountered.");
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		unsigned last = 0;
		double t = -1;
		for (size_t k = 0; k < g->nxid; k++)
			if (g->xids[k].last_time > t)
				t = g->xids[k].last_time, last = g->xids[k].code;
		gpu_labels l;
		metrics_gpu_labels(&l, g, true, in);
		expo_sample_v(e, last, l.n, l.names, l.values);
	}
}

static void render_dcgm_fb_free(expo *e, const snapshot *s, const metrics_input *in)
{
	bool declared = false;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		if (g->lost || !sv_has(g->mem_used) || !sv_has(g->mem_total))
			continue;
		metrics_family_once(e, &declared, "DCGM_FI_DEV_FB_FREE", MT_GAUGE, "Framebuffer memory free (in MiB).");
		gpu_labels l;
		metrics_gpu_labels(&l, g, true, in);
		double free_mib = (g->mem_total.v - g->mem_used.v) / (1024.0 * 1024.0);
		expo_sample_v(e, free_mib < 0 ? 0 : free_mib, l.n, l.names, l.values);
	}
}

static void render_health(expo *e, const snapshot *s, const health_tracker *h)
{
	expo_family(e, "gpuvet_gpu_health", MT_GAUGE,
		    "1 for the GPU's current health state (healthy, degraded, unhealthy), 0 for the others.");
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		gpu_labels l;
		our_labels(&l, g);
		health_state st = health_gpu(h, g->index);
		for (int k = HEALTH_HEALTHY; k <= HEALTH_UNHEALTHY; k++)
			sample_plus(e, st == (health_state)k ? 1 : 0, &l, "state", health_state_name((health_state)k), NULL,
				    NULL);
	}
	expo_family(e, "gpuvet_gpu_condition", MT_GAUGE,
		    "Active health conditions (gpu.hot, gpu.throttled, gpu.input-bound, ...), with the state each causes.");
	/* one series per GPU and condition id: a GPU with two Xid codes keeps the worse state */
	for (size_t m = 0; m < h->nmsg; m++) {
		const health_msg *msg = &h->msgs[m];
		bool dup = false;
		for (size_t k = 0; k < m && !dup; k++)
			dup = h->msgs[k].gpu == msg->gpu && strcmp(h->msgs[k].id, msg->id) == 0;
		if (dup)
			continue;
		health_state worst = msg->state;
		for (size_t k = m + 1; k < h->nmsg; k++)
			if (h->msgs[k].gpu == msg->gpu && strcmp(h->msgs[k].id, msg->id) == 0 && h->msgs[k].state > worst)
				worst = h->msgs[k].state;
		const gpu_sample *g = snapshot_gpu(s, msg->gpu);
		if (!g)
			continue;
		gpu_labels l;
		our_labels(&l, g);
		sample_plus(e, 1, &l, "condition", msg->id, "state", health_state_name(worst));
	}
}

static void render_processes(expo *e, const snapshot *s, size_t max_series)
{
	expo_family(e, "gpuvet_process_gpu_memory_bytes", MT_GAUGE,
		    "Device memory used by each process holding a GPU (per-process series, --processes); past "
		    "--process-series, the rest of a GPU's processes are summed in one series with pid=\"other\".");
	size_t series = 0, folded = 0;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		gpu_labels l;
		our_labels(&l, g);
		double rest = 0;
		size_t nrest = 0;
		for (size_t k = 0; k < g->nproc; k++) {
			const gpu_process *p = &g->procs[k];
			double mem = sv_has(p->used_bytes) ? p->used_bytes.v : NAN;
			if (series >= max_series) {
				if (!isnan(mem))
					rest += mem;
				nrest++;
				continue;
			}
			char pid[16];
			snprintf(pid, sizeof(pid), "%u", p->pid);
			const char *names[10] = {"gpu", "uuid", "pid", "name", "type"};
			const char *values[10] = {l.index, g->uuid, pid, p->name, p->type};
			size_t n = 5;
			const owner *o = &p->owner;
			if (o->kind == OWNER_POD && o->pod[0]) {
				names[n] = "pod", values[n++] = o->pod;
				names[n] = "namespace", values[n++] = o->namespace_;
				if (o->container[0])
					names[n] = "container", values[n++] = o->container;
			} else if (o->kind == OWNER_SLURM) {
				names[n] = "hpc_job", values[n++] = o->job;
			}
			expo_sample_v(e, mem, n, names, values);
			series++;
		}
		if (nrest) {
			const char *names[] = {"gpu", "uuid", "pid"};
			const char *values[] = {l.index, g->uuid, "other"};
			expo_sample_v(e, rest, GV_ARRAY_LEN(names), names, values);
			folded += nrest;
		}
	}
	expo_family(e, "gpuvet_process_series_folded", MT_GAUGE,
		    "Processes summed into pid=\"other\" because the per-process series reached --process-series.");
	expo_sample_v(e, (double)folded, 0, NULL, NULL);
}

static void render_findings(expo *e, const metrics_input *in)
{
	expo_family(e, "gpuvet_finding", MT_GAUGE,
		    "Findings of the periodic gpuvet check (docs/findings.md), 1 each; none when all is well.");
	for (size_t i = 0; i < in->nfindings; i++)
		expo_sample(e, 1, "id", in->findings[i].id, "severity", severity_name(in->findings[i].sev), NULL);
	expo_family(e, "gpuvet_check_timestamp_seconds", MT_GAUGE, "When the periodic check last finished (Unix time).");
	expo_sample(e, in->check_wall_time, NULL);
	expo_family(e, "gpuvet_check_duration_seconds", MT_GAUGE, "How long the periodic check took.");
	expo_sample(e, in->check_seconds, NULL);
}

void metrics_render(expo *e, const metrics_input *in)
{
	expo_family(e, "gpuvet_build_info", MT_GAUGE, "gpuvet's version; always 1.");
	expo_sample(e, 1, "version", GPUVET_VERSION, NULL);
	const snapshot *s = in->snap;
	if (s) {
		expo_family(e, "gpuvet_gpus", MT_GAUGE, "GPUs NVML reports.");
		expo_sample(e, s->ngpus, NULL);
		render_info(e, s);
		render_field_families(e, s, false, in);
		render_gpm(e, s, false, in);
		render_throttle(e, s);
		render_pcie_throughput(e, s);
		render_ecc(e, s);
		render_pair(e, s, "gpuvet_gpu_retired_pages", "Pages retired, by cause (single-bit, double-bit errors).",
			    "cause", F(retired_sbe), "sbe", F(retired_dbe), "dbe");
		render_pair(e, s, "gpuvet_gpu_remapped_rows", "Rows remapped, by the kind of error that caused it.", "type",
			    F(remap_corr), "correctable", F(remap_uncorr), "uncorrectable");
		render_xid(e, s, in->dcgm, in);
		metrics_render_nvlink(e, s, in);
		if (in->health)
			render_health(e, s, in->health);
		if (in->processes)
			render_processes(e, s, in->process_series_max ? in->process_series_max : METRICS_PROCESS_SERIES_DEFAULT);
		if (in->dcgm) {
			render_field_families(e, s, true, in);
			render_gpm(e, s, true, in);
			render_dcgm_fb_free(e, s, in);
		}
	}
	if (in->have_check)
		render_findings(e, in);
}

void metrics_render_status(expo *e, const metrics_status *st)
{
	expo_family(e, "gpuvet_sampler_up", MT_GAUGE,
		    "1 when the last NVML sample succeeded; 0 while failing (the GPU series then repeat the last good sample).");
	expo_sample(e, st->sampler_up ? 1 : 0, NULL);
	expo_family(e, "gpuvet_sample_age_seconds", MT_GAUGE,
		    "Age of the GPU series served: seconds since the last good NVML sample.");
	expo_sample(e, st->sample_age, NULL);
	expo_family(e, "gpuvet_sample_timestamp_seconds", MT_GAUGE, "When the last good NVML sample was taken (Unix time).");
	expo_sample(e, st->last_sample_wall, NULL);
	expo_family(e, "gpuvet_sample_interval_seconds", MT_GAUGE, "The sampling interval (--interval).");
	expo_sample(e, st->interval, NULL);
	expo_family(e, "gpuvet_samples_total", MT_COUNTER, "NVML samples taken successfully.");
	expo_sample(e, (double)st->samples_total, NULL);
	expo_family(e, "gpuvet_sampler_errors_total", MT_COUNTER, "NVML samples that failed.");
	expo_sample(e, (double)st->errors_total, NULL);
}
