/* Shared pieces of gpuvet bench: groups, progress, time limits, the speedup tables. */
#include "bench/bench.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "diagnose/diagnose.h"

static const struct {
	const char *name;
	unsigned bit;
} group_names[] = {
	{"gemm", BENCH_G_GEMM},         {"memory", BENCH_G_MEMORY}, {"transfer", BENCH_G_TRANSFER},
	{"launch", BENCH_G_LAUNCH},     {"multi", BENCH_G_MULTI},   {"cpu", BENCH_G_CPU},
	{"all", BENCH_G_ALL},
};

bool bench_parse_groups(const char *list, unsigned *out, const char **bad)
{
	static char badbuf[64];
	strlist parts = {0};
	sl_split(&parts, list ? list : "", ", ", false);
	unsigned mask = 0;
	bool ok = parts.n > 0;
	for (size_t i = 0; i < parts.n && ok; i++) {
		bool found = false;
		for (size_t g = 0; g < GV_ARRAY_LEN(group_names); g++)
			if (strcmp(parts.v[i], group_names[g].name) == 0) {
				mask |= group_names[g].bit;
				found = true;
			}
		if (!found) {
			str_copy(badbuf, sizeof(badbuf), parts.v[i]);
			if (bad)
				*bad = badbuf;
			ok = false;
		}
	}
	if (!parts.n && bad)
		*bad = "";
	sl_free(&parts);
	if (ok)
		*out = mask;
	return ok;
}

static double t_start;

void bench_progress(bench_ctx *c, const char *fmt, ...)
{
	if (!c->o->progress)
		return;
	if (t_start == 0)
		t_start = now_seconds();
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	c->step++;
	fprintf(stderr, "\r\033[Kgpuvet bench: %s ... (%.0f s)", s, now_seconds() - t_start);
	fflush(stderr);
	free(s);
}

void bench_progress_done(bench_ctx *c)
{
	if (c->o->progress && c->step) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
}

double bench_limit(const bench_ctx *c, double full_seconds)
{
	double s = full_seconds * (c->o->quick ? 0.5 : 1.0);
	if (c->o->limit_scale > 0)
		s *= c->o->limit_scale;
	return s;
}

unsigned long long bench_mem_available(void)
{
	FILE *fp = fopen("/proc/meminfo", "r");
	if (!fp)
		return 0;
	char line[256];
	unsigned long long avail_kb = 0;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "MemAvailable: %llu kB", &avail_kb) == 1)
			break;
	fclose(fp);
	return avail_kb * 1024;
}

/* A verified, measured figure's median and size; false otherwise. Values, not pointers: adding
 * figures moves the report's array. */
static bool measured(const bench_report *r, const char *id, double *median, long long *size)
{
	const bench_figure *f = report_find(r, id);
	if (!f || f->skipped || f->st.n == 0 || f->verified == VERIFY_FAILED)
		return false;
	*median = f->st.median;
	*size = f->size;
	return true;
}

static void ratio(bench_ctx *c, const char *id, const char *title, double num, double den, const char *how)
{
	if (!(den > 0) || !(num > 0))
		return;
	double v = num / den;
	bench_figure *f = report_add(c->r, id, "speedup", "x", "%s", title);
	stats_summarise(&v, 1, &f->st);
	figure_set_note(f, "%s", how);
}

void bench_speedups(bench_ctx *c)
{
	double fp32, m;
	long long fp32_size, size;
	static const bench_dtype mixed[] = {DT_TF32, DT_FP16, DT_BF16, DT_FP8, DT_INT8, DT_FP64};
	bool have32 = measured(c->r, "gemm.fp32", &fp32, &fp32_size);
	for (size_t i = 0; have32 && i < GV_ARRAY_LEN(mixed); i++) {
		const char *name = dtype_get(mixed[i])->name;
		char id[48], fid[32], title[64], how[128];
		snprintf(fid, sizeof(fid), "gemm.%s", name);
		if (!measured(c->r, fid, &m, &size) || size != fp32_size)
			continue;
		snprintf(id, sizeof(id), "speedup.%s_vs_fp32", name);
		snprintf(title, sizeof(title), "%s vs fp32 GEMM", name);
		snprintf(how, sizeof(how), "%.1f vs %.1f at %lld", m, fp32, fp32_size);
		ratio(c, id, title, m, fp32, how);
	}
	static const bench_dtype cpu_types[] = {DT_FP32, DT_FP64};
	for (size_t i = 0; i < GV_ARRAY_LEN(cpu_types); i++) {
		const char *name = dtype_get(cpu_types[i])->name;
		char id[48], cid[32], gid[48], title[64], how[128];
		double cpu, gpu;
		long long cpu_size, gpu_size;
		snprintf(cid, sizeof(cid), "cpu.gemm.%s", name);
		if (!measured(c->r, cid, &cpu, &cpu_size))
			continue;
		snprintf(gid, sizeof(gid), "gemm.%s", name);
		bool have = measured(c->r, gid, &gpu, &gpu_size) && gpu_size == cpu_size;
		if (!have) {
			snprintf(gid, sizeof(gid), "gemm.%s.n%lld", name, cpu_size);
			have = measured(c->r, gid, &gpu, &gpu_size);
		}
		if (!have)
			continue;
		snprintf(id, sizeof(id), "speedup.gpu_vs_cpu.%s", name);
		snprintf(title, sizeof(title), "GPU vs CPU %s GEMM %lldx%lld", name, cpu_size, cpu_size);
		snprintf(how, sizeof(how), "%.2f vs %.3f TFLOP/s", gpu, cpu);
		ratio(c, id, title, gpu, cpu, how);
	}
}

void bench_judge(facts *f, const kb *k, findings *out)
{
	/* only the bench layer: the other layers' rules judge `gpuvet check`'s facts */
	diagnose_opts o = {.kb = k, .layer = "bench"};
	diagnose(f, &o, out);
}
