/* release.known-bad: a torch, cuDNN, NCCL or driver release on this machine that has a public
 * report of a defect on this kind of machine, and a release that fixed it. The releases are data,
 * data/known_bad.csv (sourced in data/SOURCES.md); this file only matches them to the facts. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/factkeys.h"
#include "rules/registry.h"
#include "rules/rules_nvidia.h"

/* "1.8.0+cu102" -> "1.8.0" (into buf) */
static const char *release_of(const char *v, char *buf, size_t n)
{
	str_copy(buf, n, v ? v : "");
	buf[strcspn(buf, "+ ")] = '\0';
	return buf;
}

/* Whether version lies in "A" or the inclusive range "A-B". */
static bool in_range(const char *version, const char *range)
{
	char v[64], lo[64], hi[64];
	release_of(version, v, sizeof(v));
	if (!v[0] || !range || !*range)
		return false;
	const char *dash = strchr(range, '-');
	if (!dash)
		return version_cmp(v, range) == 0;
	size_t n = (size_t)(dash - range) < sizeof(lo) - 1 ? (size_t)(dash - range) : sizeof(lo) - 1;
	memcpy(lo, range, n);
	lo[n] = '\0';
	str_copy(hi, sizeof(hi), dash + 1);
	return version_cmp(v, lo) >= 0 && version_cmp(v, hi) <= 0;
}

/* cudnn.version() as an integer: 8005 -> 8.0.5, 90100 -> 9.1.0 */
static void cudnn_int_text(long long v, char *buf, size_t n)
{
	if (v >= 90000)
		snprintf(buf, n, "%lld.%lld.%lld", v / 10000, (v % 10000) / 100, v % 100);
	else
		snprintf(buf, n, "%lld.%lld.%lld", v / 1000, (v % 1000) / 100, v % 100);
}

/* The version of a component on this machine and where it was read; false when unknown. */
static bool component_version(const facts *f, const char *comp, char *ver, size_t n, const char **how)
{
	const char *s;
	if (strcmp(comp, "torch") == 0) {
		if ((s = facts_str(f, FK_PYTHON_LIVE_TORCH_VERSION)) || (s = facts_str(f, FK_PYTHON_TORCH_VERSION))) {
			str_copy(ver, n, s);
			*how = "torch.__version__";
			return true;
		}
		return false;
	}
	if (strcmp(comp, "driver") == 0) {
		if ((s = facts_str(f, FK_NVML_DRIVER_VERSION)) || (s = facts_str(f, FK_HARDWARE_KERNEL_MODULE_VERSION))) {
			str_copy(ver, n, s);
			*how = "the NVIDIA driver";
			return true;
		}
		return false;
	}
	const char *lib = strcmp(comp, "cudnn") == 0 ? "cudnn" : strcmp(comp, "nccl") == 0 ? "nccl" : NULL;
	if (!lib)
		return false;
	long long iv;
	if (strcmp(lib, "cudnn") == 0 && facts_int(f, &iv, FK_PYTHON_LIVE_CUDNN_VERSION) && iv > 0) {
		cudnn_int_text(iv, ver, n);
		*how = "torch.backends.cudnn.version()";
		return true;
	}
	if (strcmp(lib, "nccl") == 0 && (s = facts_str(f, FK_PYTHON_LIVE_NCCL_VERSION))) {
		str_copy(ver, n, s);
		*how = "torch.cuda.nccl.version()";
		return true;
	}
	static const char *const cu[] = {"cu13", "cu12", "cu11"};
	for (size_t i = 0; i < GV_ARRAY_LEN(cu); i++) {
		char pkg[64];
		snprintf(pkg, sizeof(pkg), "nvidia-%s-%s", lib, cu[i]);
		if ((s = facts_str(f, FK_PYTHON_PIP, pkg))) {
			str_copy(ver, n, s);
			*how = "the pip package";
			return true;
		}
	}
	for (long long p = 0; p < facts_int_or(f, 0, FK_LOADER_PICK_COUNT) && p < 256; p++) {
		const char *name = facts_str(f, FK_LOADER_PICK_NAME(lld), p);
		if (name && strcmp(name, lib) == 0 && (s = facts_str(f, FK_LOADER_PICK_VERSION(lld), p))) {
			str_copy(ver, n, s);
			*how = "the library the loader picks";
			return true;
		}
	}
	return false;
}

/* Whether the machine has the hardware of a row; what matched into buf. */
static bool hardware_matches(const facts *f, const char *hw, char *buf, size_t n)
{
	buf[0] = '\0';
	if (!hw || !*hw)
		return true;
	int gpus = nv_gpu_count(f);
	if (strncmp(hw, "sm_", 3) == 0 && strlen(hw) >= 5) {
		char want[8];
		snprintf(want, sizeof(want), "%c.%s", hw[3], hw + 4);
		for (int i = 0; i < gpus; i++) {
			const char *cc = facts_str(f, FK_NVML_GPU_CC(d), i);
			if (!cc)
				cc = facts_str(f, FK_CUDA_DEV_CC(d), i);
			if (cc && strcmp(cc, want) == 0) {
				char label[160];
				snprintf(buf, n, "%s, compute capability %s", nv_gpu_label(f, i, label, sizeof(label)), cc);
				return true;
			}
		}
		return false;
	}
	if (strcmp(hw, "nvswitch") == 0) {
		for (int i = 0; i < gpus; i++) {
			const char *st = facts_str(f, FK_NVML_GPU_FABRIC_STATE(d), i);
			if (st && strcmp(st, "not_supported") != 0) {
				snprintf(buf, n, "an NVSwitch system (fabric state %s)", st);
				return true;
			}
		}
		return false;
	}
	if (strcmp(hw, "multi-gpu") == 0 && gpus >= 2) {
		snprintf(buf, n, "%d GPUs", gpus);
		return true;
	}
	return false;
}

/* "env.cuda_launch_blocking=1": a fact that must have that value. */
static bool condition_holds(const facts *f, const char *cond)
{
	if (!cond || !*cond)
		return true;
	const char *eq = strchr(cond, '=');
	if (!eq || eq == cond || (size_t)(eq - cond) >= 128)
		return false;
	char key[128];
	memcpy(key, cond, (size_t)(eq - cond));
	key[eq - cond] = '\0';
	const char *v = facts_str(f, "%s", key);
	long long iv;
	char num[32];
	if (!v && facts_int(f, &iv, "%s", key)) {
		snprintf(num, sizeof(num), "%lld", iv);
		v = num;
	}
	return v && strcmp(v, eq + 1) == 0;
}

static const char *component_name(const char *c)
{
	return strcmp(c, "torch") == 0 ? "torch" : strcmp(c, "cudnn") == 0 ? "cuDNN" : strcmp(c, "nccl") == 0 ? "NCCL"
	       : strcmp(c, "driver") == 0 ? "NVIDIA driver" : c;
}

static void known_bad_fix(const facts *f, finding *x, const char *comp, const char *fixed)
{
	const char *py = facts_str(f, FK_PYTHON_SELECTED);
	if (strcmp(comp, "torch") == 0)
		finding_fix(x, "%s -m pip install 'torch>=%s'   (gpuvet fix prints the build that fits this driver)",
			    py ? py : "python3", fixed);
	else if (strcmp(comp, "driver") == 0)
		finding_fix(x, "upgrade the NVIDIA driver to %s or newer (sudo apt install nvidia-driver-N, or NVIDIA's "
			       "installer), then reboot", fixed);
	else {
		/* the pip package of torch's CUDA major: cu117 -> nvidia-nccl-cu11 */
		const char *v = facts_str(f, FK_PYTHON_TORCH_VARIANT);
		char cu[8] = "cu12";
		if (v && str_starts(v, "cu") && strlen(v) >= 4)
			snprintf(cu, sizeof(cu), "cu%.2s", v + 2);
		finding_fix(x, "use %s %s or newer: a torch release that ships it, or pip install -U 'nvidia-%s-%s>=%s' "
			       "(torch pins these: check torch.cudnn-mismatch afterwards)",
			    component_name(comp), fixed, comp, cu, fixed);
	}
}

static void known_bad(rule_ctx *c)
{
	const facts *f = c->facts;
	const csv_table *t = c->kb ? kb_table(c->kb, "known_bad") : NULL;
	if (!t)
		return;
	finding *x = NULL;
	for (size_t r = 0; r < t->nrows; r++) {
		const char *comp = csv_cell(t, r, "component");
		char ver[64];
		const char *how = NULL;
		if (!component_version(f, comp, ver, sizeof(ver), &how) || !in_range(ver, csv_cell(t, r, "affected")))
			continue;
		const char *variant = csv_cell(t, r, "variant");
		const char *have_variant = facts_str(f, FK_PYTHON_TORCH_VARIANT);
		if (*variant && (!have_variant || strcmp(variant, have_variant) != 0))
			continue;
		char hw[224];
		if (!hardware_matches(f, csv_cell(t, r, "hardware"), hw, sizeof(hw)) ||
		    !condition_holds(f, csv_cell(t, r, "condition")))
			continue;
		const char *fixed = csv_cell(t, r, "fixed_in");
		if (!x)
			x = rule_emit(c, "%s %s is a release with a known defect%s%s: fixed in %s", component_name(comp), ver,
				      hw[0] ? " on " : "", hw[0] ? hw : "", fixed);
		else
			finding_evidence(x, "also %s %s (%s): fixed in %s", component_name(comp), ver, how, fixed);
		finding_evidence(x, "%s %s (%s): %s", component_name(comp), ver, how, csv_cell(t, r, "symptom"));
		if (*variant)
			finding_evidence(x, "the %s build of torch", variant);
		if (hw[0])
			finding_evidence(x, "on this machine: %s", hw);
		const char *cond = csv_cell(t, r, "condition");
		if (*cond && str_starts(cond, "env.")) { /* env.cuda_launch_blocking=1 -> CUDA_LAUNCH_BLOCKING=1 */
			char var[128];
			str_copy(var, sizeof(var), cond + 4);
			for (char *p = var; *p && *p != '='; p++)
				*p = (char)toupper((unsigned char)*p);
			finding_evidence(x, "and here %s", var);
		} else if (*cond) {
			finding_evidence(x, "and here %s", cond);
		}
		finding_evidence(x, "source: %s", csv_cell(t, r, "source_url"));
		known_bad_fix(f, x, comp, fixed);
	}
	if (x)
		x->rank = 30;
}

const rule rules_known_bad[] = {
	{"release.known-bad", "python", SEV_WARN, "", known_bad,
	 "a torch, cuDNN, NCCL or driver release with a known defect on this hardware (data/known_bad.csv)"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
