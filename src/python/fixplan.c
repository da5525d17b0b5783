#include "python/fixplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/factkeys.h"
#include "core/util.h"
#include "core/shell.h"
#include "cuda/archlist.h"
#include "kb/kb_nvidia.h"

static void add_gpu(fix_machine *m, const char *name, const char *cc, const char *src)
{
	if (m->ngpus >= FIX_MAX_GPUS)
		return;
	fix_gpu *g = &m->gpus[m->ngpus++];
	memset(g, 0, sizeof(*g));
	str_copy(g->name, sizeof(g->name), name ? name : "GPU");
	if (cc && cc_parse(cc, &g->major, &g->minor)) {
		snprintf(g->cc, sizeof(g->cc), "%d.%d", g->major, g->minor);
		g->cc_source = src;
	}
}

void fix_machine_read(const facts *f, const kb *k, fix_machine *m)
{
	memset(m, 0, sizeof(*m));
	long long n = facts_int_or(f, 0, FK_NVML_DEVICE_COUNT);
	for (long long i = 0; i < n && i < FIX_MAX_GPUS; i++) {
		const char *name = facts_str(f, FK_NVML_GPU_NAME(lld), i);
		const char *cc = facts_str(f, FK_NVML_GPU_CC(lld), i);
		char kbcc[16];
		const char *src = "NVML";
		if (!cc && name && kb_gpu_cc(k, name, kbcc, sizeof(kbcc))) {
			cc = kbcc;
			src = "KB (by name)";
		}
		add_gpu(m, name, cc, src);
	}
	if (m->ngpus == 0) {
		n = facts_int_or(f, 0, FK_CUDA_DEVICE_COUNT);
		for (long long i = 0; i < n && i < FIX_MAX_GPUS; i++)
			add_gpu(m, facts_str(f, FK_CUDA_DEV_NAME(lld), i), facts_str(f, FK_CUDA_DEV_CC(lld), i), "CUDA");
	}
	if (m->ngpus == 0) {
		n = facts_int_or(f, 0, FK_PYTHON_LIVE_DEV_COUNT);
		for (long long i = 0; i < n && i < FIX_MAX_GPUS; i++)
			add_gpu(m, facts_str(f, FK_PYTHON_LIVE_DEV_NAME(lld), i), facts_str(f, FK_PYTHON_LIVE_DEV_CC(lld), i),
				"torch");
	}
	m->gpu_present = m->ngpus > 0 || facts_int_or(f, 0, FK_HARDWARE_PCI_COUNT) > 0;
	const char *drv = facts_str(f, FK_NVML_DRIVER_VERSION);
	if (!drv)
		drv = facts_str(f, FK_HARDWARE_KERNEL_MODULE_VERSION);
	if (drv)
		str_copy(m->driver, sizeof(m->driver), drv);
	m->driver_cuda = facts_int_or(f, 0, FK_NVML_CUDA_DRIVER_VERSION);
	if (!m->driver_cuda)
		m->driver_cuda = facts_int_or(f, 0, FK_CUDA_DRIVER_VERSION);
	if (m->driver_cuda > 0)
		snprintf(m->driver_cuda_text, sizeof(m->driver_cuda_text), "%lld.%lld", m->driver_cuda / 1000,
			 (m->driver_cuda % 1000) / 10);
	else if (m->driver[0])
		kb_driver_max_cuda(k, m->driver, m->driver_cuda_text, sizeof(m->driver_cuda_text));
	const fact *sel = facts_get(f, FK_PYTHON_SELECTED);
	const char *pv = sel && sel->state == FACT_OK ? facts_str(f, FK_PYTHON_VERSION) : NULL;
	if (pv)
		str_copy(m->python, sizeof(m->python), pv);
	/* refusals logged by the driver that is loaded now ("535.xx" names only the branch) */
	long long nref = facts_int_or(f, 0, FK_KMSG_REFUSED_COUNT);
	for (long long i = 0; i < nref && i < 16 && m->driver[0] && !m->refused[0]; i++) {
		const char *d = facts_str(f, FK_KMSG_REFUSED_DRIVER(lld), i);
		if (!d || !(version_cmp(d, m->driver) == 0 || (str_ends(d, ".xx") && atoi(d) == atoi(m->driver))))
			continue;
		const char *gpu = facts_str(f, FK_KMSG_REFUSED_GPU(lld), i);
		const char *pci = facts_str(f, FK_KMSG_REFUSED_PCI(lld), i);
		const char *id = facts_str(f, FK_KMSG_REFUSED_PCI_ID(lld), i);
		m->refused_legacy = (int)facts_int_or(f, 0, FK_KMSG_REFUSED_LEGACY_BRANCH(lld), i);
		if (m->refused_legacy)
			snprintf(m->refused, sizeof(m->refused),
				 "the kernel log: driver %s ignores the %s, which only the R%d legacy branch drives", d,
				 gpu ? gpu : "GPU", m->refused_legacy);
		else
			snprintf(m->refused, sizeof(m->refused),
				 "the kernel log: driver %s does not support the GPU at %s (PCI ID %s), a GPU newer than the "
				 "driver", d, pci ? pci : "?", id ? id : "?");
	}
}

/* Does the release have wheels for the interpreter's Python? Unknown either way: yes. */
static bool python_fits(const kb *k, const fix_machine *m, const torch_build *b)
{
	char lo[8], hi[8];
	if (!m->python[0] || !kb_torch_python(k, b->version, lo, sizeof(lo), hi, sizeof(hi)))
		return true;
	return version_cmp(m->python, lo) >= 0 && version_cmp(m->python, hi) <= 0;
}

/* The chosen build needs another Python: 3.12 when the build takes it (widely packaged, every
 * current release has wheels for it), else the nearest end of its range. */
static void set_need_python(const kb *k, const fix_machine *m, const torch_build *b, fix_choice *c)
{
	char lo[8], hi[8];
	if (!kb_torch_python(k, b->version, lo, sizeof(lo), hi, sizeof(hi)))
		return;
	c->need_python = true;
	const char *want = version_cmp("3.12", lo) < 0 ? lo : version_cmp("3.12", hi) > 0 ? hi : "3.12";
	str_copy(c->python_need, sizeof(c->python_need), want);
	snprintf(c->python_range, sizeof(c->python_range), "%s to %s", lo, hi);
	(void)m; /* fix_pyenv_plan says why, with the interpreter's version */
}

/* A GPU the driver cannot drive at all (too old for its architecture, or a branch after the
 * architecture's last): recorded in c, first such GPU named. */
static void check_driver_drives(const kb *k, const fix_machine *m, fix_choice *c)
{
	int branch = atoi(m->driver);
	if (m->refused[0]) {
		c->driver_cannot = true;
		str_copy(c->driver_cannot_why, sizeof(c->driver_cannot_why), m->refused);
		c->driver_branch_max = m->refused_legacy;
	}
	for (int i = 0; i < m->ngpus && m->driver[0]; i++) {
		const fix_gpu *g = &m->gpus[i];
		char why[200];
		if (!g->cc[0] || kb_driver_drives(k, m->driver, g->major, g->minor, why, sizeof(why)) != 0)
			continue;
		kb_arch_driver a;
		if (kb_arch_driver_lookup(k, g->major, g->minor, &a) && a.last_branch > 0 && branch > a.last_branch &&
		    (!c->driver_branch_max || a.last_branch < c->driver_branch_max))
			c->driver_branch_max = a.last_branch;
		if (!c->driver_cannot)
			snprintf(c->driver_cannot_why, sizeof(c->driver_cannot_why), "driver %s cannot drive the %s: %s",
				 m->driver, g->name, why);
		c->driver_cannot = true;
	}
}

/* Does the build's CUDA run on a driver of branch <= max (the Kepler case: R470 at most)? */
static bool cuda_within_branch(const kb *k, const torch_build *b, int max)
{
	char tk[32] = "", compat[32] = "";
	if (max <= 0)
		return true;
	if (!kb_cuda_min_driver(k, b->cuda, tk, sizeof(tk), compat, sizeof(compat)) || !tk[0])
		return false;
	return atoi(tk) <= max;
}

/* Does the build carry code for every GPU? *ptx_only when one is reached only through PTX. */
static bool covers_all(const torch_build *b, const fix_machine *m, bool *ptx_only)
{
	*ptx_only = false;
	if (!b->arch[0])
		return false;
	for (int i = 0; i < m->ngpus; i++) {
		if (!m->gpus[i].cc[0])
			continue; /* unknown capability: cannot rule the build out */
		char how[96];
		if (!arch_tokens_cover(b->arch, m->gpus[i].major, m->gpus[i].minor, how, sizeof(how)))
			return false;
		if (strstr(how, "PTX"))
			*ptx_only = true;
	}
	return true;
}

static bool driver_known(const fix_machine *m)
{
	return m->driver[0] || m->driver_cuda > 0;
}

/* Higher is better: newer release, SASS over PTX, native over MVC, then newer CUDA (native) or
 * older CUDA (MVC: closer to the driver). */
static int better(const torch_build *a, bool a_ptx, drv_fit a_fit, const torch_build *b, bool b_ptx, drv_fit b_fit)
{
	int c = version_cmp(a->version, b->version);
	if (c)
		return c;
	if (a_ptx != b_ptx)
		return a_ptx ? -1 : 1;
	if (a_fit != b_fit)
		return a_fit == DRV_FIT_NATIVE ? 1 : b_fit == DRV_FIT_NATIVE ? -1 : 0;
	c = version_cmp(a->cuda, b->cuda);
	return a_fit == DRV_FIT_MVC ? -c : c;
}

static void fill_pip(const kb *k, fix_choice *c)
{
	snprintf(c->index_url, sizeof(c->index_url), "https://download.pytorch.org/whl/%s", c->build.variant);
	c->torchvision_verified = false;
	if (!kb_torchvision(k, c->build.version, c->torchvision, sizeof(c->torchvision), &c->torchvision_verified))
		c->torchvision[0] = '\0';
	int a, b, p = -1;
	int parts = version_parse(c->build.version, &a, &b, &p);
	char torch_pin[32];
	/* a KB row names a release ("2.11"); pip then takes its newest patch */
	/* quoted: an unquoted '*' is a shell glob */
	if (parts >= 3)
		snprintf(torch_pin, sizeof(torch_pin), "\"torch==%d.%d.%d\"", a, b, p);
	else
		snprintf(torch_pin, sizeof(torch_pin), "\"torch==%d.%d.*\"", a, b);
	if (c->torchvision[0])
		snprintf(c->pip_args, sizeof(c->pip_args), "%s \"torchvision==%s.*\" --index-url %s", torch_pin,
			 c->torchvision, c->index_url);
	else /* unpinned: pip picks the torchvision that matches this torch */
		snprintf(c->pip_args, sizeof(c->pip_args), "%s torchvision --index-url %s", torch_pin, c->index_url);
}

void fix_choose(const kb *k, const fix_machine *m, fix_choice *c)
{
	memset(c, 0, sizeof(*c));
	torch_build *all;
	size_t n = kb_torch_builds(k, &all);
	if (!n) {
		snprintf(c->why, sizeof(c->why), "the knowledge base has no PyTorch builds (torch_cuda.csv)");
		return;
	}
	if (!m->gpu_present && !driver_known(m)) {
		/* no NVIDIA GPU: the CPU wheel of the newest release (smaller, and honest about it) */
		const torch_build *nb = NULL, *nb_any = &all[0];
		for (size_t i = 0; i < n; i++) {
			if (version_cmp(all[i].version, nb_any->version) > 0)
				nb_any = &all[i];
			if (python_fits(k, m, &all[i]) && (!nb || version_cmp(all[i].version, nb->version) > 0))
				nb = &all[i];
		}
		bool py_short = !nb;
		if (!nb)
			nb = nb_any;
		c->found = true;
		c->cpu_only = true;
		c->build = *nb;
		str_copy(c->build.variant, sizeof(c->build.variant), "cpu");
		c->build.cuda[0] = c->build.arch[0] = c->build.cudnn[0] = c->build.nccl[0] = '\0';
		fill_pip(k, c);
		snprintf(c->why, sizeof(c->why), "no NVIDIA GPU on this machine: the CPU build of torch %s (a CUDA build "
			 "would only add gigabytes of unused libraries)", c->build.version);
		if (py_short)
			set_need_python(k, m, &c->build, c);
		free(all);
		return;
	}
	check_driver_drives(k, m, c);
	/* newest: the newest build covering the GPUs (for after a driver upgrade); best: the best one
	 * this driver runs; each preferring builds with wheels for this Python (_any: regardless) */
	int best = -1, newest = -1, best_any = -1, newest_any = -1;
	bool best_ptx = false, newest_ptx = false, best_any_ptx = false, newest_any_ptx = false;
	drv_fit best_fit = DRV_FIT_UNKNOWN, best_any_fit = DRV_FIT_UNKNOWN;
	for (size_t i = 0; i < n; i++) {
		bool ptx;
		if (!covers_all(&all[i], m, &ptx) || !cuda_within_branch(k, &all[i], c->driver_branch_max))
			continue;
		bool pyok = python_fits(k, m, &all[i]);
		for (int pass = 0; pass < 2; pass++) {
			if (pass == 0 && !pyok)
				continue;
			int *nw = pass ? &newest_any : &newest;
			bool *nwp = pass ? &newest_any_ptx : &newest_ptx;
			int vc = *nw < 0 ? 1 : version_cmp(all[i].version, all[*nw].version);
			if (vc > 0 || (vc == 0 && *nwp && !ptx) ||
			    (vc == 0 && ptx == *nwp && version_cmp(all[i].cuda, all[*nw].cuda) < 0)) {
				*nw = (int)i;
				*nwp = ptx;
			}
		}
		if (c->driver_cannot)
			continue; /* no build runs until the driver drives the GPU */
		drv_fit fit = driver_known(m) ? kb_driver_fit(k, m->driver, m->driver_cuda, all[i].cuda, NULL, 0)
					      : DRV_FIT_UNKNOWN;
		if (driver_known(m) && fit != DRV_FIT_NATIVE && fit != DRV_FIT_MVC)
			continue;
		/* no driver to judge by: only the release's default variant, the safe pick */
		if (!driver_known(m) && !all[i].is_default)
			continue;
		if (best_any < 0 || better(&all[i], ptx, fit, &all[best_any], best_any_ptx, best_any_fit) > 0) {
			best_any = (int)i;
			best_any_ptx = ptx;
			best_any_fit = fit;
		}
		if (pyok && (best < 0 || better(&all[i], ptx, fit, &all[best], best_ptx, best_fit) > 0)) {
			best = (int)i;
			best_ptx = ptx;
			best_fit = fit;
		}
	}
	bool py_short = false;
	if (best < 0 && best_any >= 0) {
		best = best_any;
		best_ptx = best_any_ptx;
		best_fit = best_any_fit;
		py_short = true;
	}
	if (newest < 0 && newest_any >= 0) {
		newest = newest_any;
		newest_ptx = newest_any_ptx;
		if (best < 0)
			py_short = true; /* the build after a driver upgrade needs another Python */
	}
	char gpus[256] = "";
	for (int i = 0; i < m->ngpus && strlen(gpus) < 200; i++)
		if (m->gpus[i].cc[0] && !strstr(gpus, m->gpus[i].cc))
			snprintf(gpus + strlen(gpus), sizeof(gpus) - strlen(gpus), "%s%s", gpus[0] ? ", " : "", m->gpus[i].cc);
	if (best >= 0) {
		c->found = true;
		c->build = all[best];
		c->fit = best_fit;
		c->ptx_only = best_ptx;
		fill_pip(k, c);
		if (driver_known(m))
			snprintf(c->why, sizeof(c->why),
				 "torch %s %s: the newest release in the KB whose build this driver (%s%s%s) runs%s%s%s",
				 c->build.version, c->build.variant, m->driver[0] ? m->driver : "",
				 m->driver[0] && m->driver_cuda_text[0] ? ", CUDA " : m->driver_cuda_text[0] ? "CUDA " : "",
				 m->driver_cuda_text, c->fit == DRV_FIT_MVC ? " through minor-version compatibility" : "",
				 gpus[0] ? " and whose architecture list covers compute capability " : "", gpus);
		else
			snprintf(c->why, sizeof(c->why), "torch %s %s: the newest release's default build (no driver to judge by)%s%s",
				 c->build.version, c->build.variant, gpus[0] ? "; it covers compute capability " : "", gpus);
		if (py_short)
			set_need_python(k, m, &c->build, c);
	} else if (newest >= 0) {
		c->need_driver = true;
		c->newest = all[newest];
		char tk[32] = "", compat[32] = "";
		if (kb_cuda_min_driver(k, c->newest.cuda, tk, sizeof(tk), compat, sizeof(compat)))
			str_copy(c->driver_need, sizeof(c->driver_need), tk);
		/* the driver must also be one that drives every GPU here */
		for (int i = 0; i < m->ngpus && c->driver_need[0]; i++) {
			kb_arch_driver a;
			if (m->gpus[i].cc[0] && kb_arch_driver_lookup(k, m->gpus[i].major, m->gpus[i].minor, &a) &&
			    a.min_driver[0] && version_cmp(a.min_driver, c->driver_need) > 0)
				str_copy(c->driver_need, sizeof(c->driver_need), a.min_driver);
		}
		if (c->driver_branch_max)
			c->driver_need[0] = '\0'; /* a branch at most, not a minimum: said by driver_branch_max */
		if (c->driver_cannot)
			snprintf(c->why, sizeof(c->why), "%s; the newest PyTorch that covers it is torch %s %s (CUDA %s)%s%s%s",
				 c->driver_cannot_why, c->newest.version, c->newest.variant, c->newest.cuda,
				 c->driver_need[0] ? ", which needs driver >= " : "", c->driver_need,
				 c->driver_branch_max ? ", which that branch runs" : "");
		else
			snprintf(c->why, sizeof(c->why),
			 "no PyTorch build in the KB both covers compute capability %s and runs on driver %s%s%s%s; the newest "
			 "that covers it is torch %s %s (CUDA %s), which needs driver >= %s",
			 gpus[0] ? gpus : "(unknown)", m->driver[0] ? m->driver : "(unknown)",
			 m->driver_cuda_text[0] ? " (CUDA " : "", m->driver_cuda_text, m->driver_cuda_text[0] ? ")" : "",
			 c->newest.version, c->newest.variant, c->newest.cuda, c->driver_need[0] ? c->driver_need : "(unknown)");
		if (py_short)
			set_need_python(k, m, &c->newest, c);
	} else {
		snprintf(c->why, sizeof(c->why),
			 "no PyTorch build in the KB carries code for compute capability %s: build PyTorch from source with "
			 "TORCH_CUDA_ARCH_LIST covering it, or use a newer GPU",
			 gpus[0] ? gpus : "(unknown)");
	}
	free(all);
}

void fix_choice_of(const kb *k, const torch_build *b, fix_choice *c)
{
	memset(c, 0, sizeof(*c));
	c->found = true;
	c->build = *b;
	c->fit = DRV_FIT_NATIVE;
	fill_pip(k, c);
	snprintf(c->why, sizeof(c->why), "torch %s %s", b->version, b->variant);
}

void fix_pip_line(const fix_choice *c, const char *python, char *out, size_t n)
{
	if (!c->found) {
		str_copy(out, n, "");
		return;
	}
	if (python && *python)
		snprintf(out, n, "%s -m pip install --upgrade %s", python, c->pip_args);
	else
		snprintf(out, n, "pip install --upgrade %s", c->pip_args);
}

void fix_conda_line(const fix_choice *c, char *out, size_t n)
{
	if (!c->found) {
		str_copy(out, n, "");
		return;
	}
	int a = 0, b = 0;
	version_parse(c->build.version, &a, &b, NULL);
	bool official = a < 2 || (a == 2 && b <= 5); /* the pytorch conda channel stopped after 2.5 */
	int cm = 0, cn = 0;
	version_parse(c->build.cuda, &cm, &cn, NULL);
	if (c->cpu_only)
		snprintf(out, n, official ? "conda install pytorch==%d.%d.* torchvision cpuonly -c pytorch"
					  : "conda install -c conda-forge \"pytorch=%d.%d.*=cpu*\" torchvision",
			 a, b);
	else if (official && cm >= 11 && !(cm == 11 && cn < 6))
		snprintf(out, n, "conda install pytorch==%d.%d.* torchvision%s%s%s pytorch-cuda=%s -c pytorch -c nvidia", a, b,
			 c->torchvision[0] ? "==" : "", c->torchvision, c->torchvision[0] ? ".*" : "", c->build.cuda);
	else if (official)
		snprintf(out, n, "conda install pytorch==%d.%d.* torchvision%s%s%s cudatoolkit=%s -c pytorch", a, b,
			 c->torchvision[0] ? "==" : "", c->torchvision, c->torchvision[0] ? ".*" : "", c->build.cuda);
	else
		snprintf(out, n, "conda install -c conda-forge \"pytorch=%d.%d.*=cuda*\" torchvision \"cuda-version=%s\"", a,
			 b, c->build.cuda);
}

const char *fix_conda_note(const fix_choice *c)
{
	int a = 0, b = 0;
	if (!c->found)
		return NULL;
	version_parse(c->build.version, &a, &b, NULL);
	if (a < 2 || (a == 2 && b <= 5))
		return NULL;
	return "the pytorch conda channel has no builds after 2.5; whether conda-forge has this one is not in the KB; "
	       "inside a conda environment the pip line works too";
}

bool fix_base_image(const kb *k, const fix_machine *m, const char *cuda, char *out, size_t n)
{
	const csv_table *t = kb_table(k, "cuda_driver");
	int want_a, want_b;
	if (!t || !cuda || version_parse(cuda, &want_a, &want_b, NULL) < 2)
		return false;
	/* the image's CUDA must not be newer than the driver: containers check NVIDIA_REQUIRE_CUDA */
	char img[16];
	str_copy(img, sizeof(img), cuda);
	if (m->driver_cuda_text[0] && version_cmp(m->driver_cuda_text, cuda) < 0)
		str_copy(img, sizeof(img), m->driver_cuda_text);
	version_parse(img, &want_a, &want_b, NULL);
	char best[32] = "";
	for (size_t r = 0; r < t->nrows; r++) {
		int a, b, p = 0;
		const char *rel = csv_cell(t, r, "release");
		const char *tk = csv_cell(t, r, "min_linux_driver_toolkit");
		if (version_parse(rel, &a, &b, &p) < 3 || a != want_a || b != want_b || !*tk)
			continue;
		if (m->driver[0] && version_cmp(m->driver, tk) < 0)
			continue;
		char v[32];
		snprintf(v, sizeof(v), "%d.%d.%d", a, b, p);
		if (!best[0] || version_cmp(v, best) > 0)
			str_copy(best, sizeof(best), v);
	}
	if (!best[0])
		return false;
	const char *os = (want_a > 12 || (want_a == 12 && want_b >= 5)) ? "ubuntu24.04"
			 : (want_a == 12 || (want_a == 11 && want_b >= 7)) ? "ubuntu22.04"
									   : "ubuntu20.04";
	snprintf(out, n, "%s-runtime-%s", best, os);
	return true;
}

char *fix_dockerfile(const kb *k, const fix_machine *m, const fix_choice *c)
{
	if (!c->found)
		return NULL;
	char tag[64];
	strbuf sb;
	sb_init(&sb);
	if (c->cpu_only) {
		sb_add(&sb, "# Generated by gpuvet fix: no NVIDIA GPU here, so the CPU build of PyTorch.\n"
			    "FROM python:3.12-slim\nENV PIP_NO_CACHE_DIR=1\n");
		sb_addf(&sb, "RUN pip install %s\n", c->pip_args);
		sb_add(&sb, "CMD [\"python\", \"-c\", \"import torch; print(torch.__version__)\"]\n");
		return sb_steal(&sb);
	}
	sb_addf(&sb, "# Generated by gpuvet fix for driver %s (CUDA %s)", m->driver[0] ? m->driver : "unknown",
		m->driver_cuda_text[0] ? m->driver_cuda_text : "unknown");
	for (int i = 0; i < m->ngpus && i < 8; i++)
		if (m->gpus[i].cc[0] && (i == 0 || strcmp(m->gpus[i].name, m->gpus[i - 1].name) != 0))
			sb_addf(&sb, "%s %s (sm_%d%d)", i ? "," : " and", m->gpus[i].name, m->gpus[i].major, m->gpus[i].minor);
	sb_add(&sb, ".\n# PyTorch wheels bring their own CUDA runtime, cuBLAS and cuDNN; the base image only has to\n"
		    "# be one this driver runs (its CUDA no newer than the driver's).\n");
	if (fix_base_image(k, m, c->build.cuda, tag, sizeof(tag))) {
		sb_addf(&sb, "FROM nvidia/cuda:%s\n", tag);
		sb_add(&sb, "# (NVIDIA retires old tags; if this one is gone pick the newest X.Y.Z-runtime tag of the\n"
			    "#  same CUDA X.Y from https://hub.docker.com/r/nvidia/cuda/tags)\n");
	} else {
		sb_add(&sb, "# the KB does not know a CUDA image release for this driver: pick an nvidia/cuda runtime tag\n"
			    "# whose CUDA is not newer than the driver's\n");
		sb_addf(&sb, "FROM nvidia/cuda:%s.0-runtime-ubuntu22.04\n", c->build.cuda);
	}
	sb_add(&sb, "ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1\n"
		    "RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv python3-pip \\\n"
		    " && rm -rf /var/lib/apt/lists/*\n"
		    "RUN python3 -m venv /opt/venv\n"
		    "ENV PATH=/opt/venv/bin:$PATH\n");
	sb_addf(&sb, "RUN pip install %s\n", c->pip_args);
	sb_add(&sb, "# check at build time that the wheel is a CUDA build, at run time that the GPU is reachable:\n"
		    "RUN python -c \"import torch; assert torch.version.cuda, 'CPU-only wheel'; print(torch.__version__, "
		    "torch.version.cuda)\"\n"
		    "CMD [\"python\", \"-c\", \"import torch; print(torch.cuda.is_available(), torch.cuda.get_device_name(0))\"]\n"
		    "# run with: docker run --rm --gpus all IMAGE\n");
	return sb_steal(&sb);
}

void cudnn_version_text(long long v, char *out, size_t n)
{
	if (v <= 0) {
		str_copy(out, n, "");
		return;
	}
	/* cuDNN 9 encodes major*10000 + minor*100 + patch; cuDNN 8 and older major*1000 + minor*100 + patch */
	if (v >= 90000)
		snprintf(out, n, "%lld.%lld.%lld", v / 10000, (v % 10000) / 100, v % 100);
	else
		snprintf(out, n, "%lld.%lld.%lld", v / 1000, (v % 1000) / 100, v % 100);
}

/* "/usr/bin/python3.11" -> "python3.11-venv"; "python3" and "python" -> "python3-venv" (the
 * package of the distribution's default Python, Debian and Ubuntu alike). */
static void venv_package(const char *python, char *out, size_t n)
{
	const char *base = strrchr(python, '/');
	base = base ? base + 1 : python;
	int a, b;
	if (str_starts(base, "python") && version_parse(base + 6, &a, &b, NULL) >= 2)
		snprintf(out, n, "python%d.%d-venv", a, b);
	else
		str_copy(out, n, "python3-venv");
}

static bool is_distribution_python(const char *python)
{
	return str_starts(python, "/usr/bin/") || str_starts(python, "/bin/");
}

void fix_pyenv_plan(const facts *f, const fix_choice *c, fix_pyenv *p)
{
	memset(p, 0, sizeof(*p));
	const fact *sel = facts_get(f, FK_PYTHON_SELECTED);
	const char *py = sel && sel->state == FACT_OK ? sel->str : NULL;
	const char *kind = facts_str(f, FK_PYTHON_KIND);
	const char *ver = facts_str(f, FK_PYTHON_VERSION);
	bool conda = facts_true(f, FK_PYTHON_CONDA_ENV) || (kind && strcmp(kind, "conda") == 0);
	/* the interpreter as a word of the lines below: quoted, or a comment refusing it (the paths
	 * under ~ are gpuvet's own and stay unquoted, so that the shell expands the ~) */
	char qpy[4608];
	shell_word_or_comment(qpy, sizeof(qpy), "the interpreter", py ? py : "python3");
	str_copy(p->python, sizeof(p->python), qpy);

	if (c && c->need_python) {
		/* a Python the chosen build has wheels for, in an environment of its own */
		char env[32];
		snprintf(env, sizeof(env), "py%s", c->python_need);
		p->switched = true;
		if (conda) {
			sl_pushf(&p->prep, "conda create -y -n torch-%s python=%s", env, c->python_need);
			sl_pushf(&p->prep, "conda activate torch-%s", env);
			str_copy(p->python, sizeof(p->python), "python");
		} else {
			/* apt has only the distribution's Python: uv fetches a standalone CPython */
			sl_push(&p->prep, "command -v curl >/dev/null || sudo apt-get install -y curl");
			sl_push(&p->prep, "curl -LsSf https://astral.sh/uv/install.sh | sh");
			sl_pushf(&p->prep, "~/.local/bin/uv venv --seed --python %s ~/venv-%s", c->python_need, env);
			snprintf(p->python, sizeof(p->python), "~/venv-%s/bin/python", env);
		}
		snprintf(p->why, sizeof(p->why),
			 "torch %s has wheels for Python %s only, and this interpreter is Python %s: Python %s goes into %s of "
			 "its own; run your programs with %s",
			 c->need_driver ? c->newest.version : c->build.version, c->python_range, ver ? ver : "?", c->python_need,
			 conda ? "a conda environment" : "a venv", conda ? "that environment active" : p->python);
		return;
	}
	if (!py) {
		sl_push(&p->prep, "sudo apt-get install -y python3 python3-venv");
		sl_push(&p->prep, "python3 -m venv ~/venv");
		str_copy(p->python, sizeof(p->python), "~/venv/bin/python");
		p->switched = true;
		snprintf(p->why, sizeof(p->why), "no Python interpreter here: the distribution's Python 3 and a venv for torch; "
						 "run your programs with ~/venv/bin/python (or . ~/venv/bin/activate)");
		return;
	}
	bool managed = facts_true(f, FK_PYTHON_EXTERNALLY_MANAGED);
	const fact *pm = facts_get(f, FK_PYTHON_PIP_MODULE);
	bool no_pip = pm && pm->state == FACT_OK && !pm->i;
	const fact *ep = facts_get(f, FK_PYTHON_ENSUREPIP);
	bool no_ensurepip = ep && ep->state == FACT_OK && !ep->i;
	char pkg[32];
	venv_package(py, pkg, sizeof(pkg));
	if (managed) {
		/* PEP 668: pip refuses the system interpreter (rightly: it would fight apt); a venv */
		const fact *mk = facts_get(f, FK_PYTHON_EXTERNALLY_MANAGED);
		if (no_ensurepip)
			sl_pushf(&p->prep, "sudo apt-get install -y %s", pkg);
		sl_pushf(&p->prep, "%s -m venv ~/venv", qpy);
		str_copy(p->python, sizeof(p->python), "~/venv/bin/python");
		p->switched = true;
		snprintf(p->why, sizeof(p->why),
			 "%s is externally managed (PEP 668: %s), so pip refuses to install into it: torch goes into a "
			 "venv%s%s%s; run your programs with ~/venv/bin/python (or . ~/venv/bin/activate)",
			 py, mk && mk->source ? mk->source : "EXTERNALLY-MANAGED", no_ensurepip ? " (-m venv needs " : "",
			 no_ensurepip ? pkg : "", no_ensurepip ? ": ensurepip is missing)" : "");
		return;
	}
	if (!no_pip)
		return;
	/* No module named pip */
	if (conda) {
		sl_push(&p->prep, "conda install -y pip");
	} else if (kind && strcmp(kind, "system") == 0 && is_distribution_python(py)) {
		sl_push(&p->prep, "sudo apt-get install -y python3-pip");
	} else if (!no_ensurepip) {
		sl_pushf(&p->prep, "%s -m ensurepip --upgrade", qpy);
	} else {
		sl_pushf(&p->prep, "sudo apt-get install -y %s", pkg);
		sl_pushf(&p->prep, "%s -m ensurepip --upgrade", qpy);
	}
	snprintf(p->why, sizeof(p->why), "%s has no pip (No module named pip): %s first", py, p->prep.v[0]);
}

void fix_pyenv_free(fix_pyenv *p)
{
	sl_free(&p->prep);
}
