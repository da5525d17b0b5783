#include "watch/view.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/sysroot.h"
#include "core/util.h"
#include "health/conditions.h"
#include "nvidia/nvml.h"
#include "sampler/fields.h"

/* ------------------------------------------------------------------ formatting */

const char *fmt_bytes(char *buf, size_t size, sval v)
{
	if (sv_has(v))
		return bytes_words(buf, size, v.v);
	str_copy(buf, size, "n/a");
	return buf;
}

const char *fmt_val(char *buf, size_t size, sval v, const char *unit)
{
	if (!sv_has(v))
		str_copy(buf, size, v.st == SV_ERR ? "err" : "n/a");
	else
		snprintf(buf, size, "%.0f%s", v.v, unit);
	return buf;
}

static bool show_gpu(const view_opts *o, const gpu_sample *g)
{
	return !o || !o->job || job_on_gpu(o->job, g, NULL);
}

/* "owner": {"kind": "pod", "namespace", "pod", "container", "container_id", "pod_uid"} or
 * {"kind": "slurm", "job", "step", "user"} or {"kind": "container", "runtime", "container_id"};
 * null for the host's own processes. */
static void add_owner(cJSON *e, const owner *o)
{
	if (o->kind == OWNER_NONE) {
		cJSON_AddNullToObject(e, "owner");
		return;
	}
	cJSON *x = cJSON_AddObjectToObject(e, "owner");
	static const char *const kinds[] = {"none", "pod", "slurm", "container"};
	cJSON_AddStringToObject(x, "kind", kinds[o->kind]);
	const struct {
		const char *key, *v;
	} f[] = {{"namespace", o->namespace_}, {"pod", o->pod},   {"container", o->container}, {"pod_uid", o->pod_uid},
		 {"runtime", o->runtime},      {"container_id", o->container_id}, {"job", o->job}, {"step", o->step},
		 {"user", o->user},	      {"job_gpus", o->job_gpus}};
	for (size_t i = 0; i < GV_ARRAY_LEN(f); i++)
		if (f[i].v[0])
			cJSON_AddStringToObject(x, f[i].key, f[i].v);
}

static bool show_proc(const view_opts *o, const gpu_process *p)
{
	return !o || !o->job || job_has(o->job, p->pid);
}

const char *view_gpu_name(char *buf, size_t size, const char *name, int width)
{
	if (!name)
		name = "";
	if (width < 1 || size < 2) {
		if (size)
			buf[0] = '\0';
		return buf;
	}
	size_t w = (size_t)width < size - 1 ? (size_t)width : size - 1;
	if (strlen(name) > w && strncmp(name, "NVIDIA ", 7) == 0)
		name += 7;
	size_t n = strlen(name);
	if (n <= w) {
		memcpy(buf, name, n + 1);
		return buf;
	}
	size_t k = w - 1;
	while (k > 0 && name[k - 1] == ' ')
		k--;
	memcpy(buf, name, k);
	buf[k] = '~';
	buf[k + 1] = '\0';
	return buf;
}

void view_text(FILE *out, const snapshot *s, const health_tracker *h, const view_opts *o)
{
	char when[32] = "";
	time_t t = (time_t)s->wall_time;
	struct tm tm;
	if (localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(out, "gpuvet watch  %s  driver %s  %d GPU%s  health: %s\n", when,
		s->driver_version[0] ? s->driver_version : "n/a", s->ngpus, s->ngpus == 1 ? "" : "s",
		health_state_name(health_overall(h)));
	if (o && o->job) {
		if (!o->job->alive)
			fprintf(out, "process %u: not running\n", o->job->root);
		else
			fprintf(out, "following process %u and %zu descendant%s\n", o->job->root, o->job->n - 1,
				o->job->n == 2 ? "" : "s");
	}
	fprintf(out, "\n%-3s %-22s %5s %5s %-19s %5s %5s %-11s %8s %-7s %s\n", "GPU", "NAME", "UTIL", "MEMU", "MEMORY",
		"TEMP", "SLOWD", "POWER", "SM", "PCIE", "HEALTH");
	int shown = 0;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		if (!show_gpu(o, g))
			continue;
		shown++;
		char util[16], memu[16], used[16], total[16], temp[16], margin[16], pw[16], pl[16], sm[16], pcie[24], mem[40],
			power[32];
		fmt_val(util, sizeof(util), g->util_gpu, "%");
		fmt_val(memu, sizeof(memu), g->util_mem, "%");
		fmt_bytes(used, sizeof(used), g->mem_used);
		fmt_bytes(total, sizeof(total), g->mem_total);
		snprintf(mem, sizeof(mem), "%s/%s", used, total);
		fmt_val(temp, sizeof(temp), g->temp, "C");
		/* the margin to the slowdown threshold says more than the temperature alone */
		if (sv_has(g->temp) && sv_has(g->temp_slowdown))
			snprintf(margin, sizeof(margin), "-%.0fC", g->temp_slowdown.v - g->temp.v);
		else
			str_copy(margin, sizeof(margin), "n/a");
		fmt_val(pw, sizeof(pw), g->power, "");
		fmt_val(pl, sizeof(pl), g->power_limit, "W");
		snprintf(power, sizeof(power), "%s/%s", pw, pl);
		fmt_val(sm, sizeof(sm), g->sm_clock, "MHz");
		if (sv_has(g->pcie_gen) && sv_has(g->pcie_width))
			snprintf(pcie, sizeof(pcie), "%.0fx%.0f%s", g->pcie_gen.v, g->pcie_width.v,
				 (sv_has(g->pcie_width_max) && g->pcie_width.v < g->pcie_width_max.v) ? "!" : "");
		else
			str_copy(pcie, sizeof(pcie), "n/a");
		char name[32];
		view_gpu_name(name, sizeof(name), g->lost ? "(lost)" : g->name, 22);
		fprintf(out, "%-3d %-22s %5s %5s %-19s %5s %5s %-11s %8s %-7s %s\n", g->index, name, util, memu, mem, temp,
			margin, power, sm, pcie,
			health_state_name(health_gpu(h, g->index)));
		if (g->gpm_support == GV_GPM_ON && !g->lost) {
			/* the GPM columns of nvidia/gpm_fields.h */
			char line[256];
			size_t len = 0;
			for (int k = 0; k < GV_GPM_N && len < sizeof(line) - 32; k++) {
				if (!gv_gpm_fields[k].column[0])
					continue;
				char v[16];
				if (sv_has(g->gpm[k]))
					snprintf(v, sizeof(v), "%.0f%%", g->gpm[k].v * 100);
				else
					str_copy(v, sizeof(v), g->gpm[k].st == SV_ERR ? "err" : "n/a");
				len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s %s", len ? "  " : "",
							gv_gpm_fields[k].column, v);
			}
			fprintf(out, "    activity: %s\n", line);
		} else if (g->gpm_support && g->gpm_support != GV_GPM_ON && !g->lost) {
			fprintf(out, "    activity: n/a (GPM: %s)\n", gv_gpm_support_text((gv_gpm_support)g->gpm_support));
		}
		if (sv_has(g->clock_reasons) && ((unsigned long long)g->clock_reasons.v & ~(unsigned long long)CLK_GPU_IDLE)) {
			char words[200];
			unsigned long long r = (unsigned long long)g->clock_reasons.v;
			clocks_verdict cv = clocks_judge(r, health_busy(g), sv_has(g->power_limit) ? g->power_limit.v : NAN,
							 sv_has(g->power_default_limit) ? g->power_default_limit.v : NAN);
			if (cv.level == CLOCKS_INFO && (r & ~(unsigned long long)(CLK_GPU_IDLE | CLK_SW_POWER_CAP)) == 0)
				fprintf(out, "    clocks at the power limit under load: expected, not degraded\n");
			else
				fprintf(out, "    clocks held back by: %s\n", clock_reasons_text(r, words, sizeof(words)));
		}
		view_nvlink_text(out, g);
	}
	if (o && o->job && o->job->alive && shown == 0)
		fprintf(out, "(%s%s hold no GPU)\n", job_text(o->job, (char[320]){0}, 320),
			o->job->pod[0] || o->job->slurm[0] ? "'s processes" : " and its descendants");

	bool header = false;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		for (size_t k = 0; k < g->nproc; k++) {
			const gpu_process *p = &g->procs[k];
			if (!show_proc(o, p))
				continue;
			if (!header) {
				fprintf(out, "\n%-3s %-8s %-10s %-9s %-16s %10s  %-28s %s\n", "GPU", "PID", "USER", "TYPE", "NAME", "MEMORY",
					"POD / JOB", "COMMAND");
				header = true;
			}
			char mem[16], own[320];
			fprintf(out, "%-3d %-8u %-10.10s %-9s %-16.16s %10s  %-28.60s %.100s\n", g->index, p->pid,
				p->user[0] ? p->user : "?", p->type, p->name[0] ? p->name : "?",
				fmt_bytes(mem, sizeof(mem), p->used_bytes),
				owner_text(&p->owner, own, sizeof(own)), p->cmdline);
		}
		if (sv_has(g->nprocs) && g->nprocs.v > (double)g->nproc)
			fprintf(out, "%-3d (%.0f more processes not listed)\n", g->index, g->nprocs.v - (double)g->nproc);
	}
	if (h && h->nmsg) {
		fprintf(out, "\n");
		for (size_t m = 0; m < h->nmsg; m++) {
			const health_msg *msg = &h->msgs[m];
			if (s && o && o->job) {
				const gpu_sample *g = snapshot_gpu(s, msg->gpu);
				if (g && !show_gpu(o, g))
					continue;
			}
			fprintf(out, "GPU %d %-9s %s: %s\n      -> %s\n", msg->gpu, health_state_name(msg->state), msg->id,
				msg->text, msg->action);
		}
	}
}

/* ------------------------------------------------------------------ JSON */

static void add_val(cJSON *o, const char *key, sval v, double scale)
{
	if (sv_has(v))
		cJSON_AddNumberToObject(o, key, v.v * scale);
	else
		cJSON_AddNullToObject(o, key);
}

cJSON *view_json(const snapshot *s, const health_tracker *h, const view_opts *o)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "schema", "gpuvet.watch/1");
	cJSON_AddStringToObject(root, "tool", "gpuvet " GPUVET_VERSION);
	cJSON_AddNumberToObject(root, "time", s->wall_time);
	cJSON_AddStringToObject(root, "driver_version", s->driver_version);
	if (s->cuda_driver_version)
		cJSON_AddNumberToObject(root, "cuda_driver_version", s->cuda_driver_version);
	else
		cJSON_AddNullToObject(root, "cuda_driver_version");
	cJSON_AddStringToObject(root, "health", health_state_name(health_overall(h)));
	if (o && o->job) {
		cJSON *j = cJSON_AddObjectToObject(root, "job");
		cJSON_AddNumberToObject(j, "pid", o->job->root);
		cJSON_AddBoolToObject(j, "running", o->job->alive);
		cJSON *pids = cJSON_AddArrayToObject(j, "pids");
		for (size_t i = 0; i < o->job->n; i++)
			cJSON_AddItemToArray(pids, cJSON_CreateNumber(o->job->pids[i]));
	}
	cJSON *gpus = cJSON_AddArrayToObject(root, "gpus");
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		if (!show_gpu(o, g))
			continue;
		cJSON *x = cJSON_CreateObject();
		cJSON_AddItemToArray(gpus, x);
		cJSON_AddNumberToObject(x, "index", g->index);
		cJSON_AddStringToObject(x, "name", g->name);
		cJSON_AddStringToObject(x, "uuid", g->uuid);
		cJSON_AddStringToObject(x, "pci_bus_id", g->pci_bus_id);
		cJSON_AddBoolToObject(x, "lost", g->lost);
		if (g->lost)
			cJSON_AddStringToObject(x, "error", g->error);
		/* every plain reading from one table (sampler/fields.h), the reasons as names */
		for (size_t k = 0; k < n_snap_fields; k++) {
			const snap_field *f = &snap_fields[k];
			if (!f->json || f->off == offsetof(gpu_sample, nprocs))
				continue;
			sval v;
			memcpy(&v, (const char *)g + f->off, sizeof(v));
			add_val(x, f->json, v, f->json_scale);
		}
		cJSON *reasons = cJSON_AddArrayToObject(x, "clock_event_reasons");
		if (sv_has(g->clock_reasons))
			for (size_t r = 0; r < gv_nvml_n_clock_reasons; r++)
				if ((unsigned long long)g->clock_reasons.v & gv_nvml_clock_reasons[r].bit)
					cJSON_AddItemToArray(reasons, cJSON_CreateString(gv_nvml_clock_reasons[r].name));
		cJSON *act = cJSON_AddObjectToObject(x, "activity");
		cJSON_AddStringToObject(act, "gpm", g->gpm_support ? gv_gpm_support_text((gv_gpm_support)g->gpm_support)
								  : "not read");
		for (int k = 0; k < GV_GPM_N; k++) {
			char key[64];
			add_val(act, gv_gpm_json_key(k, key, sizeof(key)), g->gpm[k], 1);
		}
		view_nvlink_json(x, g);
		cJSON *xids = cJSON_AddArrayToObject(x, "xids");
		for (size_t k = 0; k < g->nxid; k++) {
			cJSON *e = cJSON_CreateObject();
			cJSON_AddNumberToObject(e, "xid", g->xids[k].code);
			cJSON_AddNumberToObject(e, "count", (double)g->xids[k].count);
			cJSON_AddItemToArray(xids, e);
		}
		add_val(x, "process_count", g->nprocs, 1);
		cJSON *procs = cJSON_AddArrayToObject(x, "processes");
		for (size_t k = 0; k < g->nproc; k++) {
			const gpu_process *p = &g->procs[k];
			if (!show_proc(o, p))
				continue;
			cJSON *e = cJSON_CreateObject();
			cJSON_AddNumberToObject(e, "pid", p->pid);
			cJSON_AddStringToObject(e, "type", p->type);
			cJSON_AddStringToObject(e, "name", p->name);
			cJSON_AddStringToObject(e, "command", p->cmdline);
			if (p->user[0])
				cJSON_AddStringToObject(e, "user", p->user);
			else
				cJSON_AddNullToObject(e, "user");
			add_owner(e, &p->owner);
			add_val(e, "memory_bytes", p->used_bytes, 1);
			add_val(e, "sm_util_ratio", p->sm_util, 0.01);
			cJSON_AddItemToArray(procs, e);
		}
		cJSON_AddStringToObject(x, "health", health_state_name(health_gpu(h, g->index)));
		cJSON *conds = cJSON_AddArrayToObject(x, "conditions");
		for (size_t m = 0; h && m < h->nmsg; m++) {
			const health_msg *msg = &h->msgs[m];
			if (msg->gpu != g->index)
				continue;
			cJSON *e = cJSON_CreateObject();
			cJSON_AddStringToObject(e, "id", msg->id);
			cJSON_AddStringToObject(e, "state", health_state_name(msg->state));
			cJSON_AddStringToObject(e, "message", msg->text);
			cJSON_AddStringToObject(e, "action", msg->action);
			cJSON_AddItemToArray(conds, e);
		}
	}
	return root;
}

/* ------------------------------------------------------------------ sparkline history */

void ring_push(gpu_ring *r, double t, const gpu_sample *g)
{
	size_t i = (r->head + r->n) % RING_LEN;
	if (r->n == RING_LEN)
		r->head = (r->head + 1) % RING_LEN;
	else
		r->n++;
	r->t[i] = t;
	r->util[i] = sv_has(g->util_gpu) ? (float)(g->util_gpu.v / 100) : NAN;
	r->mem[i] = sv_has(g->mem_used) && sv_has(g->mem_total) && g->mem_total.v > 0
			    ? (float)(g->mem_used.v / g->mem_total.v)
			    : NAN;
}

void ring_series(const gpu_ring *r, double now, double span, int width, int which, float *out)
{
	if (width <= 0)
		return;
	double *sum = xcalloc((size_t)width, sizeof(*sum));
	int *cnt = xcalloc((size_t)width, sizeof(*cnt));
	double start = now - span;
	for (size_t k = 0; k < r->n; k++) {
		size_t i = (r->head + k) % RING_LEN;
		if (r->t[i] < start || r->t[i] > now)
			continue;
		int col = (int)((r->t[i] - start) / span * width);
		if (col >= width)
			col = width - 1;
		if (col < 0)
			col = 0;
		float v = which == 0 ? r->util[i] : r->mem[i];
		if (isnan(v))
			continue;
		sum[col] += v;
		cnt[col]++;
	}
	for (int c = 0; c < width; c++)
		out[c] = cnt[c] ? (float)(sum[c] / cnt[c]) : NAN;
	free(sum);
	free(cnt);
}
