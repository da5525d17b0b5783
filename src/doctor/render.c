/* The job doctor's verdict as text and as JSON (schema gpuvet.diagnose/1, docs/watch.md). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/util.h"
#include "doctor/doctor.h"

char *doctor_text(const doctor_evidence *ev, const doctor_verdict *v, const char *indent)
{
	strbuf b;
	sb_init(&b);
	sb_addf(&b, "job %u: %s [%s, %s]\n", ev->pid, v->title, v->id ? v->id : "?", doctor_level_name(v->level));
	for (size_t i = 0; i < v->nevidence; i++)
		sb_addf(&b, "%s%s\n", indent, v->evidence[i]);
	for (size_t i = 0; i < v->nnote; i++)
		sb_addf(&b, "%snote: %s\n", indent, v->note[i]);
	for (size_t i = 0; i < v->nfix; i++)
		sb_addf(&b, "%s-> %s\n", indent, v->fix[i]);
	return sb_steal(&b);
}

static cJSON *lines(const char (*arr)[DOCTOR_LINE_MAX], size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(arr[i]));
	return a;
}

cJSON *doctor_json(const doctor_evidence *ev, const doctor_verdict *v)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "schema", "gpuvet.diagnose/1");
	cJSON_AddStringToObject(root, "tool", "gpuvet " GPUVET_VERSION);
	cJSON *jb = cJSON_AddObjectToObject(root, "job");
	cJSON_AddNumberToObject(jb, "pid", ev->pid);
	cJSON_AddBoolToObject(jb, "running", ev->alive);
	cJSON_AddNumberToObject(jb, "seconds", ev->seconds);
	cJSON *cpu = cJSON_AddObjectToObject(jb, "cpu");
	cJSON_AddNumberToObject(cpu, "processes", ev->cpu.nprocs);
	cJSON_AddNumberToObject(cpu, "gpu_processes", ev->cpu.gpu_procs);
	cJSON_AddNumberToObject(cpu, "workers", ev->cpu.workers);
	cJSON_AddNumberToObject(cpu, "workers_saturated", ev->cpu.workers_busy);
	cJSON_AddNumberToObject(cpu, "workers_cores", ev->cpu.workers_cpu);
	cJSON_AddNumberToObject(cpu, "main_pid", ev->cpu.main_pid);
	cJSON_AddNumberToObject(cpu, "main_cores", ev->cpu.main_cpu);
	cJSON_AddNumberToObject(cpu, "main_busiest_thread_ratio", ev->cpu.main_thread);
	cJSON_AddNumberToObject(cpu, "compute_threads", ev->cpu.compute_threads);
	cJSON_AddNumberToObject(cpu, "compute_cores", ev->cpu.compute_cores);
	json_add_num(cpu, "workers_busy_ratio", ev->cpu.workers_demand);
	cJSON_AddNumberToObject(cpu, "dataloader_workers", ev->cpu.dataloader_workers);
	cJSON_AddNumberToObject(cpu, "compile_processes", ev->cpu.compilers);
	cJSON_AddNumberToObject(cpu, "compile_cores", ev->cpu.compilers_cpu);
	cJSON_AddNumberToObject(cpu, "compile_busiest_ratio", ev->cpu.compilers_demand);
	cJSON_AddNumberToObject(cpu, "job_cores", ev->cpu.job_cores);
	json_add_num(cpu, "idle_cores", ev->cpu.idle_cores);
	if (ev->cpu.cpus)
		cJSON_AddNumberToObject(cpu, "cpus_allowed", ev->cpu.cpus);
	else
		cJSON_AddNullToObject(cpu, "cpus_allowed");
	json_add_num(cpu, "cpu_quota_cores", ev->cpu.quota_cores);
	cJSON *waits = cJSON_AddObjectToObject(jb, "waits");
	const doctor_waits *ws = &ev->waits;
	cJSON_AddBoolToObject(waits, "sampled", ws->sampled);
	cJSON_AddBoolToObject(waits, "denied", ws->denied);
	cJSON_AddBoolToObject(waits, "wchan_only", ws->wchan_only);
	cJSON *wl = cJSON_AddArrayToObject(waits, "threads");
	for (int i = 0; i < ws->n; i++) {
		const doctor_wait *w = &ws->w[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddItemToArray(wl, x);
		cJSON_AddNumberToObject(x, "pid", w->pid);
		cJSON_AddNumberToObject(x, "tid", w->tid);
		cJSON_AddStringToObject(x, "name", w->comm);
		cJSON_AddBoolToObject(x, "gpu_process", w->gpu_process);
		cJSON_AddNumberToObject(x, "workers", w->workers);
		cJSON_AddStringToObject(x, "kind", wait_kind_name(w->kind));
		cJSON_AddStringToObject(x, "call", w->call);
		cJSON_AddStringToObject(x, "on", w->what);
		cJSON_AddBoolToObject(x, "page_faults", w->fault);
		if (w->mount.fstype[0]) { /* a storage wait: where its data lives */
			cJSON *st = cJSON_AddObjectToObject(x, "storage");
			cJSON_AddStringToObject(st, "file", w->data_file);
			cJSON_AddStringToObject(st, "fstype", w->mount.fstype);
			cJSON_AddStringToObject(st, "source", w->mount.source);
			cJSON_AddStringToObject(st, "mount", w->mount.point);
			if (w->remote)
				cJSON_AddStringToObject(st, "remote", w->remote->words);
			else
				cJSON_AddNullToObject(st, "remote");
		}
		cJSON_AddNumberToObject(x, "samples", w->samples);
		cJSON_AddNumberToObject(x, "ratio", w->samples ? (double)w->count / w->samples : 0);
	}
	cJSON *py = cJSON_AddArrayToObject(waits, "python_frames");
	for (size_t i = 0; i < ws->py.n; i++)
		cJSON_AddItemToArray(py, cJSON_CreateString(ws->py.frames[i]));
	if (ws->py_tried && !ws->py.n)
		cJSON_AddStringToObject(waits, "python_frames_why", ws->py.why);
	const dist_rank *dr = &ev->dist;
	if (dr->known) {
		cJSON *x = cJSON_AddObjectToObject(jb, "distributed");
		json_add_num(x, "rank", dr->rank >= 0 ? dr->rank : NAN);
		json_add_num(x, "world_size", dr->world >= 0 ? dr->world : NAN);
		if (dr->master[0])
			cJSON_AddStringToObject(x, "master", dr->master);
		else
			cJSON_AddNullToObject(x, "master");
		cJSON_AddBoolToObject(x, "hosts_store", dr->hosts_store);
		json_add_num(x, "store_port", dr->store_port ? dr->store_port : NAN);
		json_add_num(x, "store_connections", dr->store_clients >= 0 ? dr->store_clients : NAN);
		cJSON_AddBoolToObject(x, "connected_to_master", dr->to_master);
	} else {
		cJSON_AddNullToObject(jb, "distributed");
	}
	if (!isnan(ev->tune_tf32_gain)) {
		cJSON *t = cJSON_AddObjectToObject(jb, "tune");
		cJSON_AddNumberToObject(t, "amp_tf32_speedup", ev->tune_tf32_gain);
		cJSON_AddStringToObject(t, "source", ev->tune_source);
	}
	cJSON *gpus = cJSON_AddArrayToObject(root, "gpus");
	for (int i = 0; i < ev->ngpus; i++) {
		const doctor_gpu *g = &ev->gpus[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddItemToArray(gpus, x);
		cJSON_AddNumberToObject(x, "index", g->index);
		cJSON_AddStringToObject(x, "name", g->name);
		cJSON_AddNumberToObject(x, "samples", g->samples);
		json_add_num(x, "utilization_gpu_ratio", g->util);
		cJSON_AddBoolToObject(x, "gpm", g->gpm);
		cJSON *act = cJSON_AddObjectToObject(x, "activity");
		for (int k = 0; k < GV_GPM_N; k++) {
			char key[64];
			json_add_num(act, gv_gpm_json_key(k, key, sizeof(key)), g->gpm ? g->act[k] : NAN);
		}
		json_add_num(x, "memory_total_bytes", g->mem_total);
		json_add_num(x, "memory_used_bytes", g->mem_used);
		json_add_num(x, "job_memory_bytes", g->job_mem);
		json_add_num(x, "memory_growth_bytes_per_second", g->mem_growth);
		json_add_num(x, "memory_first_bytes", g->mem_first);
		json_add_num(x, "memory_last_bytes", g->mem_last);
		cJSON_AddBoolToObject(x, "memory_growth_steady", g->mem_steady);
		cJSON_AddStringToObject(x, "memory_growth_of", g->mem_growth_gpu ? "gpu" : "job");
		json_add_num(x, "other_memory_bytes", g->other_mem);
		json_add_num(x, "job_sm_util_ratio", g->job_sm);
		json_add_num(x, "other_sm_util_ratio", g->other_sm);
		cJSON_AddNumberToObject(x, "job_processes", g->job_procs);
		cJSON_AddNumberToObject(x, "other_processes", g->other_procs);
		json_add_num(x, "power_w", g->power);
		json_add_num(x, "power_limit_w", g->power_limit);
		json_add_num(x, "power_default_limit_w", g->power_default_limit);
		json_add_num(x, "temperature_max_c", g->temp_max);
		cJSON_AddNumberToObject(x, "power_cap_ratio", g->power_cap_frac);
		cJSON_AddNumberToObject(x, "thermal_slowdown_ratio", g->thermal_frac);
		cJSON_AddNumberToObject(x, "hw_slowdown_ratio", g->hw_slowdown_frac);
		json_add_num(x, "phase_change_seconds", g->phase_t);
		json_add_num(x, "busy_before_ratio", g->busy_before);
		json_add_num(x, "busy_after_ratio", g->busy_after);
	}
	cJSON *d = cJSON_AddObjectToObject(root, "diagnosis");
	cJSON_AddStringToObject(d, "id", v->id ? v->id : "");
	cJSON_AddStringToObject(d, "level", doctor_level_name(v->level));
	cJSON_AddStringToObject(d, "title", v->title);
	if (v->gpu >= 0)
		cJSON_AddNumberToObject(d, "gpu", v->gpu);
	else
		cJSON_AddNullToObject(d, "gpu");
	cJSON *e = cJSON_AddArrayToObject(d, "evidence");
	for (size_t i = 0; i < v->nevidence; i++)
		cJSON_AddItemToArray(e, cJSON_CreateString(v->evidence[i]));
	cJSON_AddItemToObject(d, "fix", lines(v->fix, v->nfix));
	cJSON_AddItemToObject(d, "notes", lines(v->note, v->nnote));
	return root;
}
