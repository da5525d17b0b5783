#include <stdlib.h>
#include <string.h>

#include "core/factkeys.h"
#include "render/render.h"
#include "core/text.h"
#include "rules/rules.h"

static const char *sev_mark(severity s)
{
	return s == SEV_FAIL ? "FAIL" : s == SEV_WARN ? "WARN" : "info";
}

static const char *sev_color(severity s, bool on)
{
	return s == SEV_FAIL ? col_fail(on) : s == SEV_WARN ? col_warn(on) : col_dim(on);
}

static void verdict_line(FILE *out, const facts *f, const findings *fs, const render_opts *o)
{
	finding_counts c = findings_count(fs);
	bool on = o->color;
	bool failed = c.fail > 0 || (o->strict && c.warn > 0);
	if (failed)
		fprintf(out, "%sFAIL%s: ", col_fail(on), col_reset(on));
	else if (c.warn)
		fprintf(out, "%sOK with warnings%s: ", col_warn(on), col_reset(on));
	else
		fprintf(out, "%sOK%s: ", col_ok(on), col_reset(on));
	/* the first failure is the root cause; say it on the verdict line */
	if (c.fail > 0)
		fprintf(out, "%s", TEXT(fs->v[0].title));
	else {
		long long n = facts_int_or(f, -1, FK_NVML_DEVICE_COUNT);
		const char *drv = facts_str(f, FK_NVML_DRIVER_VERSION);
		if (n > 0)
			fprintf(out, "%lld GPU%s usable%s%s", n, n == 1 ? "" : "s", drv ? ", driver " : "", drv ? TEXT(drv) : "");
		else
			fprintf(out, "no problem found");
	}
	fprintf(out, " (%d fail, %d warn, %d info)\n", c.fail, c.warn, c.info);
}

/* What was found, layer by layer, in a few lines: the answer to "what do I have?" that users
 * otherwise piece together from nvidia-smi, nvcc --version and python -c "import torch". */
static void stack_summary(FILE *out, const facts *f, bool on)
{
	long long n = facts_int_or(f, -1, FK_NVML_DEVICE_COUNT);
	const char *name0 = facts_str(f, FK_NVML_GPU_NAME(d), 0);
	if (n > 0 && name0) {
		bool same = true;
		for (long long i = 1; i < n; i++) {
			const char *ni = facts_str(f, FK_NVML_GPU_NAME(lld), i);
			same &= ni && strcmp(ni, name0) == 0;
		}
		const char *cc = facts_str(f, FK_NVML_GPU_CC(d), 0);
		long long mem = facts_int_or(f, 0, FK_NVML_GPU_MEMORY_TOTAL_BYTES(d), 0);
		if (same)
			fprintf(out, "  %-9s %lld x %s", "GPUs", n, TEXT(name0));
		else
			fprintf(out, "  %-9s %lld GPUs of different models (first: %s)", "GPUs", n, TEXT(name0));
		if (cc)
			fprintf(out, ", compute capability %s", TEXT(cc));
		if (mem > 0)
			fprintf(out, ", %lld MiB", mem >> 20);
		fputc('\n', out);
	} else if (facts_int_or(f, 0, FK_HARDWARE_PCI_COUNT) > 0) {
		fprintf(out, "  %-9s %lld NVIDIA PCI device(s), not usable through NVML\n", "GPUs",
			facts_int_or(f, 0, FK_HARDWARE_PCI_COUNT));
	} else if (fact_seen_but_unknown(facts_get(f, FK_HARDWARE_PCI_COUNT)) ||
		   facts_int_or(f, 0, FK_HARDWARE_PCI_UNREADABLE) > 0) {
		fprintf(out, "  %-9s unknown: /sys/bus/pci/devices cannot be read whole\n", "GPUs");
	} else {
		fprintf(out, "  %-9s none found\n", "GPUs");
	}
	const char *drv = facts_str(f, FK_NVML_DRIVER_VERSION);
	const char *kmod = facts_str(f, FK_HARDWARE_KERNEL_MODULE_VERSION);
	const char *maxcuda = facts_str(f, FK_NVML_CUDA_VERSION);
	if (drv || kmod) {
		fprintf(out, "  %-9s %s", "driver", TEXT(drv ? drv : kmod));
		if (maxcuda)
			fprintf(out, " (runs CUDA %s and older)", TEXT(maxcuda));
		if (kmod && drv && strcmp(kmod, drv) != 0)
			fprintf(out, ", kernel module %s", TEXT(kmod));
		fputc('\n', out);
	} else if (facts_get(f, FK_HARDWARE_KERNEL_MODULE_VERSION) &&
		   facts_get(f, FK_HARDWARE_KERNEL_MODULE_VERSION)->state != FACT_ABSENT) {
		fprintf(out, "  %-9s unknown: /proc/driver/nvidia/version is there but does not say\n", "driver");
	} else {
		fprintf(out, "  %-9s none loaded\n", "driver");
	}
	long long tk = facts_int_or(f, 0, FK_TOOLKIT_COUNT);
	if (tk > 0) {
		long long act = facts_int_or(f, 0, FK_TOOLKIT_ACTIVE);
		const char *v = facts_str(f, FK_TOOLKIT_VERSION(lld), act);
		const char *root = facts_str(f, FK_TOOLKIT_ROOT(lld), act);
		fprintf(out, "  %-9s CUDA %s at %s", "toolkit", v ? TEXT(v) : "(version unknown)", root ? TEXT(root) : "?");
		if (facts_str(f, FK_TOOLKIT_PATH_NVCC))
			fprintf(out, ", nvcc on PATH");
		if (tk > 1)
			fprintf(out, " (%lld installs; gpuvet env lists them)", tk);
		fputc('\n', out);
	} else if (facts_get(f, FK_TOOLKIT_COUNT)) {
		fprintf(out, "  %-9s none (only needed to build CUDA extensions)\n", "toolkit");
	}
	const char *tv = facts_str(f, FK_PYTHON_TORCH_VERSION);
	const char *py = facts_str(f, FK_PYTHON_SELECTED);
	if (tv || py) {
		fprintf(out, "  %-9s %s", "python", py ? TEXT(py) : "?");
		if (tv) {
			const char *tc = facts_str(f, FK_PYTHON_TORCH_CUDA);
			fprintf(out, ", torch %s%s%s%s", TEXT(tv), tc ? " (CUDA " : "", tc ? TEXT(tc) : "", tc ? ")" : "");
		}
		fputc('\n', out);
	}
	(void)on;
}

static int cmp_layer(const void *a, const void *b)
{
	return layer_order(*(const char *const *)a) - layer_order(*(const char *const *)b);
}

void render_check_text(FILE *out, const facts *f, const findings *fs, const render_opts *o)
{
	bool on = o->color;
	verdict_line(out, f, fs, o);
	fputc('\n', out);
	stack_summary(out, f, on);
	render_topology_text(out, f, on);
	/* layers in display order, each with its findings in severity order */
	const char *layers[64];
	size_t nl = 0;
	for (size_t i = 0; i < fs->n && nl < GV_ARRAY_LEN(layers); i++) {
		bool seen = false;
		for (size_t j = 0; j < nl; j++)
			seen |= strcmp(layers[j], fs->v[i].layer) == 0;
		if (!seen)
			layers[nl++] = fs->v[i].layer;
	}
	qsort(layers, nl, sizeof(layers[0]), cmp_layer);
	for (size_t l = 0; l < nl; l++) {
		fprintf(out, "\n%s%s%s\n", col_bold(on), layer_title(layers[l]), col_reset(on));
		for (size_t i = 0; i < fs->n; i++) {
			const finding *x = &fs->v[i];
			if (strcmp(x->layer, layers[l]) != 0)
				continue;
			fprintf(out, "  %s%s%s %s %s[%s]%s\n", sev_color(x->sev, on), sev_mark(x->sev), col_reset(on),
				TEXT(x->title), col_dim(on), TEXT(x->id), col_reset(on));
			for (size_t e = 0; e < x->evidence.n; e++)
				fprintf(out, "       %s%s%s\n", col_dim(on), TEXT(x->evidence.v[e]), col_reset(on));
			for (size_t e = 0; e < x->fix.n; e++)
				fprintf(out, "       %s %s\n", e == 0 ? "fix:" : "    ", TEXT(x->fix.v[e]));
		}
	}
	if (o->verbose) {
		fprintf(out, "\n%sFacts%s\n", col_bold(on), col_reset(on));
		for (size_t i = 0; i < facts_count(f); i++) {
			const fact *ft = facts_at(f, i);
			char buf[512];
			fprintf(out, "  %-44s %s%s%s%s\n", TEXT(ft->key), TEXT(fact_value_text(ft, buf, sizeof(buf))),
				ft->source ? "  " : "", col_dim(on), ft->source ? TEXT(ft->source) : "");
			if (on)
				fputs(col_reset(on), out);
		}
		if (fs->nskipped) {
			fprintf(out, "\n%sRules skipped%s\n", col_bold(on), col_reset(on));
			for (size_t i = 0; i < fs->nskipped; i++)
				fprintf(out, "  %-32s %s\n", fs->skipped[i].id, TEXT(fs->skipped[i].reason));
		}
	} else if (fs->n) {
		fprintf(out, "\n%s(--verbose lists every fact; --json for scripts)%s\n", col_dim(on), col_reset(on));
	}
}
