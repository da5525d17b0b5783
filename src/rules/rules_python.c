/*
 * Rules of the Python and PyTorch layer, CUDA extensions, and the loader rules that concern torch:
 * is torch installed and a CUDA build, does this driver run it, does it carry code for these
 * GPUs, which libraries does it really load, does CUDA work from inside it.
 *
 * Facts come from probes/python.c (static, python.*) and probes/python_live.c (python.live.*);
 * where both know something the live answer wins, since it is what torch itself saw. When
 * is_available() is False, torch.cuda-unavailable names the one root cause and gives it a low rank
 * so it prints first; this table must therefore run after the driver, device, environment and
 * container tables (see src/rules/registry.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/factkeys.h"
#include "kb/kb_torch.h"
#include "cuda/archlist.h"
#include "python/fixplan.h"
#include "parse/pyparse.h"
#include "loader/loader.h"
#include "core/shell.h"
#include "rules/registry.h"

enum { RANK_ROOT_CAUSE = 1, RANK_SYMPTOM = 2 };

/* ---- what torch is, preferring the live answer ---- */

static bool live_ok(const facts *f)
{
	const char *s = facts_str(f, FK_PYTHON_LIVE_STATUS);
	return s && strcmp(s, "ok") == 0;
}

static bool live_torch(const facts *f)
{
	return live_ok(f) && facts_true(f, FK_PYTHON_LIVE_TORCH_INSTALLED);
}

static bool torch_installed(const facts *f)
{
	if (live_ok(f) && facts_get(f, FK_PYTHON_LIVE_TORCH_INSTALLED))
		return facts_true(f, FK_PYTHON_LIVE_TORCH_INSTALLED);
	return facts_true(f, FK_PYTHON_TORCH_INSTALLED);
}

static const char *torch_version(const facts *f)
{
	const char *v = live_torch(f) ? facts_str(f, FK_PYTHON_LIVE_TORCH_VERSION) : NULL;
	return v ? v : facts_str(f, FK_PYTHON_TORCH_VERSION);
}

/* torch.version.cuda; NULL for a CPU (or ROCm) build or when unknown. */
static const char *torch_cuda(const facts *f)
{
	if (live_torch(f) && facts_get(f, FK_PYTHON_LIVE_TORCH_VERSION))
		return facts_str(f, FK_PYTHON_LIVE_TORCH_CUDA);
	return facts_str(f, FK_PYTHON_TORCH_CUDA);
}

static bool torch_is_rocm(const facts *f)
{
	return (live_torch(f) && facts_str(f, FK_PYTHON_LIVE_TORCH_HIP)) || facts_str(f, FK_PYTHON_TORCH_HIP);
}

static bool torch_cuda_known_none(const facts *f)
{
	if (live_torch(f) && facts_get(f, FK_PYTHON_LIVE_TORCH_VERSION)) {
		const fact *x = facts_get(f, FK_PYTHON_LIVE_TORCH_CUDA);
		return x && x->state == FACT_ABSENT;
	}
	const fact *x = facts_get(f, FK_PYTHON_TORCH_CUDA);
	return x && x->state == FACT_ABSENT;
}

static const char *python_path(const facts *f)
{
	const char *p = facts_str(f, FK_PYTHON_SELECTED);
	return p ? p : "python3";
}

/* The interpreter as a word of a fix command: quoted for the shell, or a comment that refuses it. */
static const char *python_cmd(const facts *f)
{
	static _Thread_local char buf[4096 + 512];
	return shell_word_or_comment(buf, sizeof(buf), "the interpreter", python_path(f));
}

/* The arch list torch carries and where it was read. */
static const char *torch_arch(const facts *f, const kb *k, char *buf, size_t n, const char **source)
{
	const char *live = live_torch(f) ? facts_str(f, FK_PYTHON_LIVE_CUDA_ARCH_LIST) : NULL;
	if (live && *live) {
		*source = "torch.cuda.get_arch_list()";
		return live;
	}
	const char *st = facts_str(f, FK_PYTHON_TORCH_ARCH);
	if (st && *st) {
		*source = facts_true(f, FK_PYTHON_TORCH_ARCH_COMPLETE) ? "the .nv_fatbin of libtorch_cuda.so"
								       : "the .nv_fatbin of libtorch_cuda.so (partly read)";
		return st;
	}
	const char *ver = torch_version(f);
	const char *cuda = torch_cuda(f);
	char variant[16];
	torch_build b;
	if (ver && cuda && torch_cuda_variant(cuda, variant, sizeof(variant)) && kb_torch_build(k, ver, variant, &b) &&
	    b.arch[0]) {
		str_copy(buf, n, b.arch);
		*source = b.arch_verified ? "the knowledge base" : "the knowledge base (secondary source)";
		return buf;
	}
	return NULL;
}

/* The pip line for the build that fits, after the lines that make it work where it is pasted
 * (a venv for an externally-managed interpreter, pip itself, the Python the build needs), or the
 * driver first when no build runs on this one. */
static void add_pip_fix(finding *x, const facts *f, const kb *k, const char *lead)
{
	fix_machine m;
	fix_machine_read(f, k, &m);
	fix_choice ch;
	fix_choose(k, &m, &ch);
	fix_pyenv pe;
	fix_pyenv_plan(f, &ch, &pe);
	if (ch.need_driver) {
		if (ch.driver_branch_max)
			finding_fix(x, "install the R%d NVIDIA driver (the last branch that drives this GPU), then reboot",
				    ch.driver_branch_max);
		else
			finding_fix(x, "upgrade the NVIDIA driver to >= %s, then reboot",
				    ch.driver_need[0] ? ch.driver_need : "(unknown to the KB)");
		lead = "then: ";
	}
	if (ch.found || ch.need_driver) {
		fix_choice after;
		if (ch.need_driver)
			fix_choice_of(k, &ch.newest, &after);
		for (size_t i = 0; i < pe.prep.n; i++)
			finding_fix(x, "%s%s", i == 0 && lead ? lead : "", pe.prep.v[i]);
		char line[768];
		fix_pip_line(ch.need_driver ? &after : &ch, pe.python, line, sizeof(line));
		finding_fix(x, "%s%s", pe.prep.n == 0 && lead ? lead : "", line);
		if (pe.why[0])
			finding_fix(x, "(%s)", pe.why);
		finding_fix(x, "(%s%s)", ch.why, ch.need_driver ? "" : "; `gpuvet fix` prints the conda alternative and a Dockerfile");
	} else {
		finding_fix(x, "%s", ch.why);
	}
	fix_pyenv_free(&pe);
}

/* ---- torch.not-installed ---- */

static void torch_not_installed(rule_ctx *c)
{
	const facts *f = c->facts;
	if (torch_installed(f))
		return;
	const fact *sel = facts_get(f, FK_PYTHON_SELECTED);
	finding *x;
	if (!sel || sel->state != FACT_OK) {
		x = rule_emit(c, "no Python interpreter was found, so there is no PyTorch to examine");
		finding_evidence(x, "looked at --python, VIRTUAL_ENV, CONDA_PREFIX, python3/python on PATH, conda and "
				    "virtualenv directories");
		add_pip_fix(x, f, c->kb, NULL);
		return;
	}
	const fact *ex = facts_get(f, FK_PYTHON_EXISTS);
	if (ex && ex->state == FACT_OK && !ex->i) {
		x = rule_emit(c, "the Python interpreter %s does not exist", python_path(f));
		finding_evidence(x, "given by %s", facts_str(f, FK_PYTHON_SELECTED_ORIGIN) ? facts_str(f, FK_PYTHON_SELECTED_ORIGIN)
											     : "?");
		finding_fix(x, "give the path of an existing interpreter: gpuvet check --python /path/to/venv/bin/python");
		return;
	}
	x = rule_emit(c, "PyTorch is not installed for %s", python_path(f));
	const char *ver = facts_str(f, FK_PYTHON_VERSION);
	finding_evidence(x, "interpreter %s (%s, Python %s), found through %s", python_path(f),
			 facts_str(f, FK_PYTHON_KIND) ? facts_str(f, FK_PYTHON_KIND) : "?", ver ? ver : "?",
			 facts_str(f, FK_PYTHON_SELECTED_ORIGIN) ? facts_str(f, FK_PYTHON_SELECTED_ORIGIN) : "?");
	long long nsite = facts_int_or(f, 0, FK_PYTHON_SITE_COUNT);
	for (long long i = 0; i < nsite && i < 6; i++)
		finding_evidence(x, "no torch in %s", facts_str(f, FK_PYTHON_SITE_PATH(lld), i));
	if (live_ok(f))
		finding_evidence(x, "the interpreter itself says: No module named 'torch'");
	add_pip_fix(x, f, c->kb, NULL);
}

/* ---- torch.cpu-build ---- */

static bool gpu_present(const facts *f)
{
	return facts_int_or(f, 0, FK_NVML_DEVICE_COUNT) > 0 || facts_int_or(f, 0, FK_HARDWARE_PCI_COUNT) > 0 ||
	       facts_int_or(f, 0, FK_CUDA_DEVICE_COUNT) > 0;
}

static void torch_cpu_build(rule_ctx *c)
{
	const facts *f = c->facts;
	if (!torch_installed(f) || !gpu_present(f))
		return;
	const char *ver = torch_version(f);
	char label[32];
	torch_version_label(ver, label, sizeof(label));
	bool rocm = torch_is_rocm(f);
	bool cpu = strcmp(label, "cpu") == 0 || (torch_cuda_known_none(f) && !rocm);
	if (!cpu && !rocm)
		return;
	finding *x = rocm ? rule_emit(c, "torch %s is a ROCm (AMD) build: it cannot use the NVIDIA GPU", ver ? ver : "?")
			  : rule_emit(c, "torch %s is a CPU-only build: it cannot use the NVIDIA GPU", ver ? ver : "?");
	finding_evidence(x, "torch.__version__ = %s, torch.version.cuda = None", ver ? ver : "?");
	if (facts_str(f, FK_PYTHON_TORCH_LOCATION))
		finding_evidence(x, "installed in %s", facts_str(f, FK_PYTHON_TORCH_LOCATION));
	const char *conda_cpu = facts_str(f, FK_PYTHON_CONDA_VERSION, "cpuonly");
	if (conda_cpu)
		finding_evidence(x, "the conda package cpuonly is installed: it forces CPU builds of pytorch");
	long long n = facts_int_or(f, 0, FK_NVML_DEVICE_COUNT);
	if (n > 0)
		finding_evidence(x, "%lld NVIDIA GPU%s present (%s)", n, n == 1 ? "" : "s",
				 facts_str(f, FK_NVML_GPU_NAME(d), 0) ? facts_str(f, FK_NVML_GPU_NAME(d), 0) : "?");
	else
		finding_evidence(x, "an NVIDIA GPU is on the PCI bus");
	/* the CPU build goes first where the new one is installed into the same interpreter; pip
	 * refuses to uninstall from an externally-managed one as it refuses to install, and the venv
	 * the fix makes there starts empty */
	if (!facts_true(f, FK_PYTHON_EXTERNALLY_MANAGED)) {
		finding_fix(x, "%s -m pip uninstall -y torch torchvision torchaudio", python_cmd(f));
		add_pip_fix(x, f, c->kb, "then: ");
	} else {
		add_pip_fix(x, f, c->kb, NULL);
	}
	if (conda_cpu)
		finding_fix(x, "in conda: conda remove cpuonly first");
}

/* ---- torch.driver-too-old ---- */

static void torch_driver_too_old(rule_ctx *c)
{
	const facts *f = c->facts;
	const char *cuda = torch_cuda(f);
	if (!torch_installed(f) || !cuda)
		return;
	fix_machine m;
	fix_machine_read(f, c->kb, &m);
	if (!m.driver[0] && m.driver_cuda <= 0)
		return;
	char need[32];
	drv_fit fit = kb_driver_fit(c->kb, m.driver, m.driver_cuda, cuda, need, sizeof(need));
	if (fit != DRV_FIT_TOO_OLD)
		return;
	finding *x = rule_emit(c, "torch %s needs CUDA %s, which driver %s does not run", torch_version(f), cuda,
			       m.driver[0] ? m.driver : m.driver_cuda_text);
	finding_evidence(x, "torch.version.cuda = %s", cuda);
	if (m.driver[0])
		finding_evidence(x, "driver %s supports CUDA up to %s", m.driver,
				 m.driver_cuda_text[0] ? m.driver_cuda_text : "(unknown)");
	else
		finding_evidence(x, "the driver supports CUDA up to %s", m.driver_cuda_text);
	char tk[32] = "", compat[32] = "";
	if (kb_cuda_min_driver(c->kb, cuda, tk, sizeof(tk), compat, sizeof(compat)))
		finding_evidence(x, "CUDA %s needs driver >= %s%s%s%s", cuda, tk, compat[0] ? " (or >= " : "", compat,
				 compat[0] ? " through minor-version compatibility)" : "");
	const char *w = facts_str(f, FK_PYTHON_LIVE_CUDA_WARNING);
	if (w)
		finding_evidence(x, "torch says: %s", w);
	finding_fix(x, "upgrade the NVIDIA driver to >= %s (for example sudo apt install nvidia-driver-%.3s), then reboot",
		    tk[0] ? tk : need, tk[0] ? tk : need);
	add_pip_fix(x, f, c->kb, "or keep the driver and install the newest torch it runs: ");
}

/* ---- torch.arch-unsupported and ext.arch-missing ---- */

static void torch_arch_unsupported(rule_ctx *c)
{
	const facts *f = c->facts;
	if (!torch_installed(f) || !torch_cuda(f))
		return;
	fix_machine m;
	fix_machine_read(f, c->kb, &m);
	char buf[512];
	const char *source = NULL;
	const char *arch = torch_arch(f, c->kb, buf, sizeof(buf), &source);
	if (!arch)
		return;
	finding *miss = NULL, *jit = NULL;
	for (int i = 0; i < m.ngpus; i++) {
		fix_gpu *g = &m.gpus[i];
		if (!g->cc[0])
			continue;
		char how[128];
		bool ok = arch_tokens_cover(arch, g->major, g->minor, how, sizeof(how));
		if (!ok) {
			if (!miss) {
				miss = rule_emit(c, "torch %s has no code for the %s (compute capability %s, sm_%d%d)",
						 torch_version(f), g->name, g->cc, g->major, g->minor);
				finding_evidence(miss, "torch's architectures (from %s): %s", source, arch);
				const char *w = facts_str(f, FK_PYTHON_LIVE_CUDA_WARNING);
				if (w && strstr(w, "capability"))
					finding_evidence(miss, "torch says: %s", w);
				finding_evidence(miss, "kernels fail with \"no kernel image is available for execution on the "
						       "device\"");
			}
			finding_evidence(miss, "GPU %d: %s, compute capability %s (%s): not covered", i, g->name, g->cc,
					 g->cc_source ? g->cc_source : "?");
		} else if (strstr(how, "PTX")) {
			if (!jit) {
				jit = rule_emit_sev(c, SEV_INFO, "torch %s reaches the %s only through PTX JIT compilation",
						    torch_version(f), g->name);
				finding_evidence(jit, "torch's architectures (from %s): %s", source, arch);
				finding_fix(jit, "it works, but the first use of each kernel compiles it (slow start, "
						 "cache in ~/.nv/ComputeCache); a build with SASS for sm_%d%d avoids that",
					    g->major, g->minor);
			}
			finding_evidence(jit, "GPU %d: %s, compute capability %s: covered by %s", i, g->name, g->cc, how);
		}
	}
	if (miss)
		add_pip_fix(miss, f, c->kb, NULL);
}

static void ext_arch_missing(rule_ctx *c)
{
	const facts *f = c->facts;
	const fact *count = facts_get(f, FK_PYTHON_EXT_COUNT);
	if (count && count->type != FV_INT) { /* --fast: the scan did not run; never "none found" */
		findings_skip(c->out, c->rule->id, "fact %s: %s", FK_PYTHON_EXT_COUNT,
			      count->error ? count->error : "not collected");
		return;
	}
	fix_machine m;
	fix_machine_read(f, c->kb, &m);
	long long n = facts_int_or(f, 0, FK_PYTHON_EXT_COUNT);
	for (long long e = 0; e < n; e++) {
		const char *arch = facts_str(f, FK_PYTHON_EXT_ARCH(lld), e);
		const char *path = facts_str(f, FK_PYTHON_EXT_PATH(lld), e);
		const char *pkg = facts_str(f, FK_PYTHON_EXT_PACKAGE(lld), e);
		if (!arch || !*arch || !path)
			continue;
		finding *x = NULL;
		char want[64] = "";
		for (int i = 0; i < m.ngpus; i++) {
			fix_gpu *g = &m.gpus[i];
			if (!g->cc[0] || arch_tokens_cover(arch, g->major, g->minor, NULL, 0))
				continue;
			if (!x) {
				x = rule_emit(c, "the CUDA extension %s has no code for the %s (sm_%d%d)", pkg ? pkg : path,
					      g->name, g->major, g->minor);
				finding_evidence(x, "%s carries: %s", path, arch);
				snprintf(want, sizeof(want), "%d.%d", g->major, g->minor);
			}
			finding_evidence(x, "GPU %d: %s, compute capability %s: not covered", i, g->name, g->cc);
		}
		if (!x)
			continue;
		char dist[128];
		pyparse_normalize_name(pkg ? pkg : "the-package", dist, sizeof(dist));
		if (strcmp(dist, "flash-attn-2-cuda") == 0)
			str_copy(dist, sizeof(dist), "flash-attn");
		finding_fix(x, "install a wheel of %s built for sm_%s, or rebuild it for this GPU:", dist, want);
		finding_fix(x, "TORCH_CUDA_ARCH_LIST=\"%s\" %s -m pip install --no-cache-dir --force-reinstall "
			       "--no-build-isolation --no-binary %s %s",
			    want, python_cmd(f), dist, dist);
		x->rank = 50;
	}
}

/* ---- torch.bf16-unsupported ---- */

static void torch_bf16(rule_ctx *c)
{
	const facts *f = c->facts;
	if (!torch_installed(f) || !torch_cuda(f))
		return;
	fix_machine m;
	fix_machine_read(f, c->kb, &m);
	finding *x = NULL;
	for (int i = 0; i < m.ngpus; i++) {
		fix_gpu *g = &m.gpus[i];
		if (!g->cc[0] || g->major >= 8)
			continue;
		if (!x) {
			x = rule_emit(c, "the %s (compute capability %s) has no native bfloat16: bf16 autocast is emulated or "
					 "slow",
				      g->name, g->cc);
			if (g->major >= 7)
				finding_fix(x, "use fp16 autocast with a GradScaler: torch.autocast(\"cuda\", dtype=torch.float16) "
					       "and torch.amp.GradScaler(\"cuda\"); fp16 tensor cores need compute capability "
					       ">= 7.0, which this GPU has");
			else
				finding_fix(x, "this GPU has no tensor cores (compute capability < 7.0): train in fp32; fp16 "
					       "autocast saves memory but gives little speed");
		}
		finding_evidence(x, "GPU %d: %s, compute capability %s (bf16 needs >= 8.0)", i, g->name, g->cc);
	}
}

/* ---- torch.multiple ---- */

static void torch_multiple(rule_ctx *c)
{
	const facts *f = c->facts;
	long long n = facts_int_or(f, 0, FK_PYTHON_TORCH_INSTALLS_COUNT);
	if (n > 1) {
		finding *x = rule_emit(c, "%lld copies of torch are reachable from %s; the first one wins", n, python_path(f));
		for (long long i = 0; i < n && i < 8; i++)
			finding_evidence(x, "%s %s%s", facts_str(f, FK_PYTHON_TORCH_INSTALLS_PATH(lld), i),
					 facts_str(f, FK_PYTHON_TORCH_INSTALLS_VERSION(lld), i)
						 ? facts_str(f, FK_PYTHON_TORCH_INSTALLS_VERSION(lld), i)
						 : "(version unknown)",
					 i == 0 ? "  <- imported" : "  (hidden)");
		const char *first = facts_str(f, FK_PYTHON_TORCH_INSTALLS_PATH(d), 0);
		if (first && strstr(first, "/.local/lib/"))
			finding_fix(x, "the user site (~/.local) shadows the environment's torch: %s -m pip uninstall torch "
				       "(run outside the environment with --user installs), or run with PYTHONNOUSERSITE=1",
				    "python3");
		else
			finding_fix(x, "remove the copies you do not use: %s -m pip uninstall torch (repeat until one is left), "
				       "then reinstall the one you want",
				    python_cmd(f));
		return;
	}
	/* torch elsewhere, but not for the interpreter in use */
	if (!torch_installed(f) && facts_get(f, FK_PYTHON_SELECTED) && facts_str(f, FK_PYTHON_SELECTED)) {
		long long k = facts_int_or(f, 0, FK_PYTHON_INTERPRETERS_COUNT);
		finding *x = NULL;
		for (long long i = 0; i < k; i++) {
			const char *tv = facts_str(f, FK_PYTHON_INTERPRETERS_TORCH(lld), i);
			const char *p = facts_str(f, FK_PYTHON_INTERPRETERS_PATH(lld), i);
			if (!tv || !p || strcmp(p, python_path(f)) == 0)
				continue;
			if (!x) {
				x = rule_emit(c, "torch is installed for another interpreter, not for %s", python_path(f));
				finding_evidence(x, "in use: %s (found through %s), no torch", python_path(f),
						 facts_str(f, FK_PYTHON_SELECTED_ORIGIN) ? facts_str(f, FK_PYTHON_SELECTED_ORIGIN)
											: "?");
				finding_fix(x, "run your program with the interpreter that has torch (%s), or activate its "
					       "environment; `gpuvet check --python PATH` examines another one",
					    p);
			}
			finding_evidence(x, "%s has torch %s", p, tv);
		}
		if (x)
			return;
	}
	/* an activated environment that PATH does not lead to */
	const char *origin = facts_str(f, FK_PYTHON_SELECTED_ORIGIN);
	const char *pp = facts_str(f, FK_PYTHON_PATH_PYTHON);
	long long sel = facts_int_or(f, -1, FK_PYTHON_SELECTED_INDEX);
	if (origin && pp && sel >= 0 && (strcmp(origin, "VIRTUAL_ENV") == 0 || strcmp(origin, "CONDA_PREFIX") == 0)) {
		const char *prefix = facts_str(f, FK_PYTHON_PREFIX);
		if (prefix && !str_starts(pp, prefix)) {
			finding *x = rule_emit(c, "%s points at %s, but python3 on PATH is %s", origin, prefix, pp);
			finding_evidence(x, "the environment is set but its bin directory is not first on PATH");
			char *act = xasprintf("%s/bin/activate", prefix);
			char qa[4608], qp[4608];
			if (shell_word(qa, sizeof(qa), act) && shell_word(qp, sizeof(qp), prefix))
				finding_fix(x, "activate it again: . %s (venv) or conda activate %s", qa, qp);
			else
				finding_fix_refused(x, "the environment", prefix);
			free(act);
		}
	}
}

/* ---- torch.conda-cudatoolkit ---- */

static void torch_conda_cudatoolkit(rule_ctx *c)
{
	const facts *f = c->facts;
	if (!facts_true(f, FK_PYTHON_CONDA_ENV) || !torch_installed(f))
		return;
	const char *cuda = torch_cuda(f);
	const char *tk = facts_str(f, FK_PYTHON_CONDA_VERSION, "cudatoolkit");
	if (!tk)
		tk = facts_str(f, FK_PYTHON_CONDA_VERSION, "cuda-version");
	const char *cudnn = facts_str(f, FK_PYTHON_CONDA_VERSION, "cudnn");
	const char *build = facts_str(f, FK_PYTHON_CONDA_BUILD, "pytorch");
	char bcuda[16] = "", bcudnn[32] = "";
	bool bcpu = false;
	if (build)
		pyparse_conda_torch_build(build, bcuda, sizeof(bcuda), bcudnn, sizeof(bcudnn), &bcpu);
	/* torch's own cuDNN: the live answer, the conda build string, the wheel pin, the KB */
	char want_cudnn[32] = "";
	long long lv = facts_int_or(f, 0, FK_PYTHON_LIVE_CUDNN_VERSION);
	if (live_torch(f) && lv > 0)
		cudnn_version_text(lv, want_cudnn, sizeof(want_cudnn));
	else if (bcudnn[0])
		str_copy(want_cudnn, sizeof(want_cudnn), bcudnn);
	finding *x = NULL;
	if (tk && cuda && lib_versions_differ(tk, cuda, 2)) {
		x = rule_emit(c, "the conda environment's CUDA toolkit %s differs from torch's CUDA %s", tk, cuda);
		finding_evidence(x, "conda package %s %s in %s/conda-meta",
				 facts_str(f, FK_PYTHON_CONDA_VERSION, "cudatoolkit") ? "cudatoolkit" : "cuda-version", tk,
				 facts_str(f, FK_PYTHON_PREFIX));
		finding_evidence(x, "torch %s was built with CUDA %s", torch_version(f), cuda);
	}
	if (cudnn && want_cudnn[0] && lib_versions_differ(cudnn, want_cudnn, 2)) {
		if (!x)
			x = rule_emit(c, "the conda environment's cuDNN %s differs from torch's cuDNN %s", cudnn, want_cudnn);
		finding_evidence(x, "conda package cudnn %s; torch uses cuDNN %s", cudnn, want_cudnn);
	}
	if (!x)
		return;
	finding_evidence(x, "a mismatched toolkit or cuDNN in the environment's lib/ can be picked up by extensions or "
			    "through LD_LIBRARY_PATH");
	finding_fix(x, "remove the stray packages: conda remove --force cudatoolkit cudnn   (pip wheels of torch bring "
		       "their own), or install the matching ones: conda install cudatoolkit=%s",
		    cuda ? cuda : "X.Y");
}

/* ---- cuDNN ---- */

static bool is_cudnn_error(const char *s)
{
	return s && (strstr(s, "CUDNN_STATUS") || strstr(s, "cuDNN error") || strstr(s, "cudnn") ||
		     strstr(s, "cuDNN"));
}

static void torch_cudnn_disabled(rule_ctx *c)
{
	const facts *f = c->facts;
	if (!live_torch(f) || !torch_cuda(f))
		return;
	const fact *en = facts_get(f, FK_PYTHON_LIVE_CUDNN_ENABLED);
	const fact *av = facts_get(f, FK_PYTHON_LIVE_CUDNN_AVAILABLE);
	if (en && en->state == FACT_OK && !en->i) {
		finding *x = rule_emit(c, "cuDNN is disabled in torch (torch.backends.cudnn.enabled is False)");
		finding_evidence(x, "convolutions fall back to much slower native kernels");
		finding_fix(x, "remove torch.backends.cudnn.enabled = False from your code or its imports; do not "
			       "disable cuDNN globally to work around CUDNN_STATUS_* errors, fix their cause (gpuvet check "
			       "names it)");
	} else if (av && av->state == FACT_OK && !av->i) {
		finding *x = rule_emit(c, "torch %s is a CUDA build but cuDNN is not available to it", torch_version(f));
		const char *e = facts_str(f, FK_PYTHON_LIVE_CUDNN_ERROR);
		if (e)
			finding_evidence(x, "%s", e);
		finding_evidence(x, "torch.backends.cudnn.is_available() = False");
		const char *pin = NULL;
		for (long long i = 0; i < facts_int_or(f, 0, FK_PYTHON_LIB_COUNT) && !pin; i++) {
			const char *so = facts_str(f, FK_PYTHON_LIB_SONAME(lld), i);
			if (so && str_starts(so, "libcudnn.so"))
				pin = facts_str(f, FK_PYTHON_LIB_EXPECTED_PACKAGE(lld), i);
		}
		finding_fix(x, "reinstall torch's cuDNN: %s -m pip install --force-reinstall %s", python_cmd(f),
			    pin ? pin : "nvidia-cudnn-cu12 (or -cu13, matching torch.version.cuda)");
	}
}

/* The cuDNN files the process mapped, with their versions ("" unknown). */
static int mapped_cudnn(const facts *f, const char **paths, const char **versions, int max)
{
	int n = 0;
	long long m = facts_int_or(f, 0, FK_PYTHON_LIVE_MAPS_COUNT);
	for (long long i = 0; i < m && n < max; i++) {
		const char *name = facts_str(f, FK_PYTHON_LIVE_MAPS_NAME(lld), i);
		if (!name || !str_starts(name, "libcudnn"))
			continue;
		paths[n] = facts_str(f, FK_PYTHON_LIVE_MAPS_REAL(lld), i);
		versions[n] = facts_str(f, FK_PYTHON_LIVE_MAPS_VERSION(lld), i);
		if (!versions[n])
			versions[n] = "";
		n++;
	}
	return n;
}

static const char *cudnn_pin(const facts *f, const char **pkg)
{
	static const char *const names[] = {"nvidia-cudnn-cu13", "nvidia-cudnn-cu12", "nvidia-cudnn-cu11"};
	for (size_t i = 0; i < GV_ARRAY_LEN(names); i++) {
		const char *v = facts_str(f, FK_PYTHON_TORCH_REQUIRES, names[i]);
		if (v) {
			*pkg = names[i];
			return v;
		}
	}
	return NULL;
}

static void torch_cudnn_mismatch(rule_ctx *c)
{
	const facts *f = c->facts;
	if (!torch_installed(f) || !torch_cuda(f))
		return;
	finding *x = NULL;
	const char *paths[32], *vers[32];
	int n = live_torch(f) ? mapped_cudnn(f, paths, vers, 32) : 0;
	char runtime[32] = "";
	long long lv = facts_int_or(f, 0, FK_PYTHON_LIVE_CUDNN_VERSION);
	if (live_torch(f) && lv > 0)
		cudnn_version_text(lv, runtime, sizeof(runtime));
	/* mixed copies in one process, or a mapped file of another version than cudnn.version() */
	for (int i = 0; i < n; i++) {
		bool mixed = false;
		for (int j = 0; j < i; j++)
			mixed |= lib_versions_differ(vers[i], vers[j], 3);
		bool off = runtime[0] && lib_versions_differ(vers[i], runtime, 3);
		if (!mixed && !off)
			continue;
		if (!x) {
			x = rule_emit(c, "torch mapped cuDNN files of different versions%s%s", runtime[0] ? "; cudnn.version() is " : "",
				      runtime);
			for (int k = 0; k < n; k++)
				finding_evidence(x, "mapped %s (%s)", paths[k] ? paths[k] : "?", vers[k][0] ? vers[k] : "version unknown");
		}
	}
	const char *pkg = NULL;
	const char *pin = cudnn_pin(f, &pkg);
	const char *inst = pkg ? facts_str(f, FK_PYTHON_PIP, pkg) : NULL;
	if (pin && inst && lib_versions_differ(pin, inst, 3)) {
		if (!x)
			x = rule_emit(c, "torch %s pins %s==%s but %s is installed", torch_version(f), pkg, pin, inst);
		finding_evidence(x, "torch's METADATA: Requires-Dist %s==%s; installed: %s %s", pkg, pin, pkg, inst);
	} else if (pin && runtime[0] && lib_versions_differ(pin, runtime, 3)) {
		if (!x)
			x = rule_emit(c, "torch %s runs with cuDNN %s but its wheel pins %s", torch_version(f), runtime, pin);
		finding_evidence(x, "torch.backends.cudnn.version() = %lld; METADATA pins %s==%s", lv, pkg, pin);
	}
	if (!x)
		return;
	bool shadowed = false; /* lib.shadowed runs first: point at it only when it is shown */
	for (size_t i = 0; i < c->out->n && !shadowed; i++)
		shadowed = strcmp(c->out->v[i].id, "lib.shadowed") == 0;
	if (shadowed)
		finding_evidence(x, "see lib.shadowed for which copy the loader picks and why");
	if (pin && pkg)
		finding_fix(x, "%s -m pip install --force-reinstall %s==%s", python_cmd(f), pkg, pin);
	finding_fix(x, "and keep other cuDNN directories off LD_LIBRARY_PATH%s", shadowed ? " (see lib.shadowed)" : "");
}

/* ---- lib.shadowed (loader) ---- */

static const char *lib_friendly(const char *so)
{
	static const struct {
		const char *prefix, *name;
	} names[] = {{"libcudnn", "cuDNN"},       {"libcublasLt", "cuBLASLt"}, {"libcublas", "cuBLAS"},
		     {"libcudart", "CUDA runtime"}, {"libnccl", "NCCL"},      {"libnvrtc", "NVRTC"},
		     {"libnvJitLink", "nvJitLink"}, {"libcusparseLt", "cuSPARSELt"}, {"libcusparse", "cuSPARSE"},
		     {"libcufft", "cuFFT"},         {"libcurand", "cuRAND"},  {"libcusolver", "cuSOLVER"},
		     {"libcupti", "CUPTI"}};
	for (size_t i = 0; i < GV_ARRAY_LEN(names); i++)
		if (str_starts(so, names[i].prefix))
			return names[i].name;
	return so;
}

/* The directory part of a path, into buf. */
static const char *dir_part(const char *path, char *buf, size_t n)
{
	str_copy(buf, n, path);
	char *slash = strrchr(buf, '/');
	if (slash && slash != buf)
		*slash = '\0';
	return buf;
}

/* LD_LIBRARY_PATH without the directories in drop (the exact export line). */
static void ld_path_without(const char *value, const strlist *drop, char *out, size_t n)
{
	strlist parts = {0};
	sl_split(&parts, value ? value : "", ":", false);
	strbuf sb;
	sb_init(&sb);
	for (size_t i = 0; i < parts.n; i++) {
		char d[512];
		str_copy(d, sizeof(d), parts.v[i]);
		size_t l = strlen(d);
		while (l > 1 && d[l - 1] == '/')
			d[--l] = '\0';
		if (sl_contains(drop, d))
			continue;
		if (sb.len)
			sb_addc(&sb, ':');
		sb_add(&sb, parts.v[i]);
	}
	str_copy(out, n, sb.buf ? sb.buf : "");
	sb_free(&sb);
	sl_free(&parts);
}

/* Is a mapped library (live) or the picked one (static) for lib index i another file than torch's? */
static void lib_shadowed(rule_ctx *c)
{
	const facts *f = c->facts;
	long long n = facts_int_or(f, 0, FK_PYTHON_LIB_COUNT);
	finding *x = NULL;
	bool versions_differ = false;
	strlist drop = {0};
	bool via_rpath = false, first_differ = false;
	char title[256] = "";
	for (long long i = 0; i < n; i++) {
		const char *so = facts_str(f, FK_PYTHON_LIB_SONAME(lld), i);
		const char *exp = facts_str(f, FK_PYTHON_LIB_EXPECTED(lld), i);
		const char *exp_real = facts_str(f, FK_PYTHON_LIB_EXPECTED_REAL(lld), i);
		const char *exp_ver = facts_str(f, FK_PYTHON_LIB_EXPECTED_VERSION(lld), i);
		if (!so || !exp)
			continue;
		const char *got = NULL, *got_ver = NULL, *how = NULL;
		if (live_torch(f) && facts_int_or(f, 0, FK_PYTHON_LIVE_MAPS_COUNT) > 0) {
			/* what the process really mapped under this soname: /proc/self/maps names the file behind
			 * the links, "libcudnn.so.9.14.0" for "libcudnn.so.9", so match on the soname as a prefix */
			long long m = facts_int_or(f, 0, FK_PYTHON_LIVE_MAPS_COUNT);
			size_t sl = strlen(so);
			for (long long k = 0; k < m && !got; k++) {
				const char *path = facts_str(f, FK_PYTHON_LIVE_MAPS_PATH(lld), k);
				const char *real = facts_str(f, FK_PYTHON_LIVE_MAPS_REAL(lld), k);
				const char *base = path ? strrchr(path, '/') : NULL;
				if (!base || strncmp(base + 1, so, sl) != 0 || (base[1 + sl] != '\0' && base[1 + sl] != '.'))
					continue;
				if (exp_real ? strcmp(real ? real : path, exp_real) != 0 : strcmp(path, exp) != 0) {
					got = real ? real : path;
					got_ver = facts_str(f, FK_PYTHON_LIVE_MAPS_VERSION(lld), k);
					how = "mapped by the running torch (/proc/self/maps)";
				}
			}
		} else {
			const char *picked = facts_str(f, FK_PYTHON_LIB_PICKED(lld), i);
			const char *preal = facts_str(f, FK_PYTHON_LIB_PICKED_REAL(lld), i);
			bool same = picked && (strcmp(picked, exp) == 0 || (preal && exp_real && strcmp(preal, exp_real) == 0));
			if (picked && !same) {
				got = picked;
				got_ver = facts_str(f, FK_PYTHON_LIB_PICKED_VERSION(lld), i);
				how = facts_str(f, FK_PYTHON_LIB_PICKED_VIA(lld), i);
				if (how && strcmp(how, "RPATH") == 0)
					via_rpath = true;
			}
		}
		if (!got)
			continue;
		bool differ = lib_versions_differ(got_ver, exp_ver, 2);
		versions_differ |= differ;
		if (!x)
			x = rule_emit(c, "another copy of %s shadows the one torch ships", lib_friendly(so));
		if (differ && !first_differ) {
			first_differ = true;
			snprintf(title, sizeof(title), "%s %s shadows the %s %s that torch ships", lib_friendly(so),
				 got_ver ? got_ver : "?", lib_friendly(so), exp_ver ? exp_ver : "?");
		}
		finding_evidence(x, "%s: torch expects %s (%s%s%s), the loader gives it %s (%s) via %s", so, exp,
				 exp_ver ? exp_ver : "version unknown",
				 facts_str(f, FK_PYTHON_LIB_EXPECTED_PACKAGE(lld), i) ? ", " : "",
				 facts_str(f, FK_PYTHON_LIB_EXPECTED_PACKAGE(lld), i) ? facts_str(f, FK_PYTHON_LIB_EXPECTED_PACKAGE(lld), i)
										   : "",
				 got, got_ver ? got_ver : "version unknown", how ? how : "?");
		char d[512];
		dir_part(got, d, sizeof(d));
		const char *picked = facts_str(f, FK_PYTHON_LIB_PICKED(lld), i);
		char pd[512];
		if (picked)
			dir_part(picked, pd, sizeof(pd));
		if (!sl_contains(&drop, d))
			sl_push(&drop, d);
		if (picked && !sl_contains(&drop, pd))
			sl_push(&drop, pd);
	}
	if (!x) {
		sl_free(&drop);
		return;
	}
	x->sev = versions_differ ? SEV_FAIL : SEV_WARN;
	if (first_differ) {
		free(x->title);
		x->title = xstrdup(title);
	}
	const char *llp = facts_str(f, FK_PYTHON_LD_LIBRARY_PATH);
	if (llp) {
		char rest[2048];
		ld_path_without(llp, &drop, rest, sizeof(rest));
		char *clean = loader_path_without_stubs(rest); /* stubs never stay on a rewritten path */
		str_copy(rest, sizeof(rest), clean);
		free(clean);
		finding_evidence(x, "LD_LIBRARY_PATH=%s", llp);
		char q[sizeof(rest) + 512];
		if (rest[0] && shell_word(q, sizeof(q), rest))
			finding_fix_export(x, "LD_LIBRARY_PATH", q, NULL);
		else if (rest[0])
			finding_fix_refused(x, "the LD_LIBRARY_PATH value", rest);
		else
			finding_fix_unset(x, "LD_LIBRARY_PATH", NULL);
		finding_fix(x, "and remove the line that adds it from ~/.bashrc (or the job script), so torch loads its own "
			       "libraries through its RUNPATH");
	} else if (via_rpath) {
		finding_fix(x, "torch's own RPATH points at another directory: reinstall torch (%s -m pip install "
			       "--force-reinstall torch)",
			    python_cmd(f));
	} else {
		finding_fix(x, "remove the duplicate package that provides these files, or reinstall torch so its own "
			       "copies are found first: %s -m pip install --force-reinstall torch",
			    python_cmd(f));
	}
	sl_free(&drop);
}

/* ---- torch.libraries: which copies torch really uses ---- */

static void torch_libraries(rule_ctx *c)
{
	const facts *f = c->facts;
	if (!torch_installed(f) || !torch_cuda(f))
		return;
	static const char *const key_libs[] = {"libcudnn.so", "libcublas.so", "libcudart.so", "libnccl.so"};
	bool live = live_torch(f) && facts_int_or(f, 0, FK_PYTHON_LIVE_MAPS_COUNT) > 0;
	long long nl = facts_int_or(f, 0, FK_PYTHON_LIB_COUNT);
	strlist ev = {0};
	char title[512] = "", others[256] = "";
	for (size_t k = 0; k < GV_ARRAY_LEN(key_libs); k++) {
		const char *path = NULL, *ver = NULL, *pkg = NULL;
		long long li = -1;
		for (long long i = 0; i < nl && li < 0; i++) {
			const char *so = facts_str(f, FK_PYTHON_LIB_SONAME(lld), i);
			if (so && str_starts(so, key_libs[k]))
				li = i;
		}
		if (live) {
			long long m = facts_int_or(f, 0, FK_PYTHON_LIVE_MAPS_COUNT);
			for (long long i = 0; i < m && !path; i++) {
				const char *name = facts_str(f, FK_PYTHON_LIVE_MAPS_NAME(lld), i);
				if (name && str_starts(name, key_libs[k])) {
					path = facts_str(f, FK_PYTHON_LIVE_MAPS_REAL(lld), i);
					ver = facts_str(f, FK_PYTHON_LIVE_MAPS_VERSION(lld), i);
					pkg = facts_str(f, FK_PYTHON_LIVE_MAPS_PACKAGE(lld), i);
				}
			}
		} else if (li >= 0) {
			path = facts_str(f, FK_PYTHON_LIB_PICKED(lld), li);
			ver = facts_str(f, FK_PYTHON_LIB_PICKED_VERSION(lld), li);
			const char *exp = facts_str(f, FK_PYTHON_LIB_EXPECTED(lld), li);
			if (exp && strcmp(exp, path ? path : "") == 0)
				pkg = facts_str(f, FK_PYTHON_LIB_EXPECTED_PACKAGE(lld), li);
		}
		if (!path)
			continue;
		char v[64] = "";
		if (k == 0 && live && facts_int_or(f, 0, FK_PYTHON_LIVE_CUDNN_VERSION) > 0)
			cudnn_version_text(facts_int_or(f, 0, FK_PYTHON_LIVE_CUDNN_VERSION), v, sizeof(v));
		const char *shown = ver ? ver : v[0] ? v : "(version unknown)";
		sl_pushf(&ev, "%s %s%s%s%s: %s", lib_friendly(key_libs[k]), shown, pkg ? " from pip (" : "", pkg ? pkg : "",
			 pkg ? ")" : "", path);
		if (k == 0)
			snprintf(title, sizeof(title), "torch %s cuDNN %s%s%s", live ? "loads" : "would load", shown,
				 pkg ? " from pip, " : "", pkg ? pkg : "");
		/* other copies on the loader path that torch does not use */
		long long nc = li >= 0 ? facts_int_or(f, 0, FK_PYTHON_LIB_COPIES_COUNT(lld), li) : 0;
		const char *used_real = live ? path : facts_str(f, FK_PYTHON_LIB_PICKED_REAL(lld), li);
		for (long long k2 = 0; k2 < nc && k2 < 16; k2++) {
			const char *cp = facts_str(f, FK_PYTHON_LIB_COPY_PATH(lld, lld), li, k2);
			const char *cr = facts_str(f, FK_PYTHON_LIB_COPY_REAL(lld, lld), li, k2);
			if (!cp || strcmp(cp, path) == 0 || (cr && used_real && strcmp(cr, used_real) == 0))
				continue;
			const char *cv = facts_str(f, FK_PYTHON_LIB_COPY_VERSION(lld, lld), li, k2);
			const char *via = facts_str(f, FK_PYTHON_LIB_COPY_VIA(lld, lld), li, k2);
			sl_pushf(&ev, "  another %s on the loader path, not used by torch: %s (%s, found through %s)",
				 lib_friendly(key_libs[k]), cp, cv ? cv : "version unknown", via ? via : "?");
			if (k == 0 && !others[0])
				snprintf(others, sizeof(others), "; another cuDNN %s on the loader path (%s) is not used by torch",
					 cv ? cv : "(version unknown)", cp);
		}
	}
	if (!ev.n)
		return;
	finding *x = title[0] ? rule_emit(c, "%s%s", title, others)
			      : rule_emit(c, "the CUDA libraries torch %s", live ? "loads" : "would load");
	finding_evidence(x, "%s", live ? "read from the running torch's /proc/self/maps"
				       : "from the loader model (no live probe): LD_LIBRARY_PATH, torch's RUNPATH, ld.so.cache");
	for (size_t i = 0; i < ev.n; i++)
		finding_evidence(x, "%s", ev.v[i]);
	sl_free(&ev);
}

/* ---- toolkit.vs-torch ---- */

static void toolkit_vs_torch(rule_ctx *c)
{
	const facts *f = c->facts;
	const char *cuda = torch_cuda(f);
	/* the toolkit in use (PATH's nvcc, else CUDA_HOME, else /usr/local/cuda): toolkit layer's facts */
	long long active = facts_int_or(f, -1, FK_TOOLKIT_ACTIVE);
	const char *nvcc = active >= 0 ? facts_str(f, FK_TOOLKIT_VERSION(lld), active) : NULL;
	const char *where = active >= 0 ? facts_str(f, FK_TOOLKIT_ROOT(lld), active) : NULL;
	if (!nvcc || !cuda || !torch_installed(f))
		return;
	int na, nb, ta, tb;
	if (version_parse(nvcc, &na, &nb, NULL) < 2 || version_parse(cuda, &ta, &tb, NULL) < 2 || (na == ta && nb == tb))
		return;
	finding *x = rule_emit_sev(c, na != ta ? SEV_WARN : SEV_INFO, "nvcc is CUDA %d.%d but torch was built with CUDA %d.%d",
				   na, nb, ta, tb);
	finding_evidence(x, "the CUDA toolkit in use: %s%s%s", nvcc, where ? " at " : "", where ? where : "");
	finding_evidence(x, "torch %s: torch.version.cuda = %s", torch_version(f), cuda);
	if (na != ta) {
		finding_evidence(x, "building CUDA extensions (torch.utils.cpp_extension, flash-attn, apex...) against a "
				    "toolkit of another major fails: \"The detected CUDA version (%d.%d) mismatches the version "
				    "that was used to compile PyTorch (%d.%d)\"",
				 na, nb, ta, tb);
		finding_fix(x, "for extension builds install CUDA %d.%d and point at it: export CUDA_HOME=/usr/local/cuda-%d.%d "
			       "PATH=/usr/local/cuda-%d.%d/bin:$PATH (gpuvet env use %d.%d)",
			    ta, tb, ta, tb, ta, tb, ta, tb);
		finding_fix(x, "running torch itself needs no toolkit: the wheel brings its own CUDA libraries");
	} else {
		finding_fix(x, "same major: extensions build and run; nothing to do (torch checks only the major)");
	}
}

/* ---- cudnn.init-failed ---- */

static void cudnn_init_failed(rule_ctx *c)
{
	const facts *f = c->facts;
	if (!live_torch(f))
		return;
	const char *conv = facts_str(f, FK_PYTHON_LIVE_SMOKE_CONV);
	const char *err = facts_str(f, FK_PYTHON_LIVE_CUDNN_ERROR);
	const char *text = conv && strcmp(conv, "ok") != 0 && is_cudnn_error(conv) ? conv : is_cudnn_error(err) ? err : NULL;
	if (!text)
		return;
	finding *x = rule_emit(c, "cuDNN failed to initialise in torch");
	finding_evidence(x, "conv2d on the GPU: %s", text);
	bool cause = false;
	/* memory: cuDNN's handle needs workspace; another process holding the GPU's memory starves it */
	long long n = facts_int_or(f, 0, FK_NVML_DEVICE_COUNT);
	for (long long i = 0; i < n; i++) {
		long long used = facts_int_or(f, -1, FK_NVML_GPU_MEMORY_USED_BYTES(lld), i);
		long long total = facts_int_or(f, -1, FK_NVML_GPU_MEMORY_TOTAL_BYTES(lld), i);
		long long procs = facts_int_or(f, 0, FK_NVML_GPU_PROCESSES_COUNT(lld), i);
		if (used < 0 || total <= 0 || used * 10 < total * 9)
			continue;
		finding_evidence(x, "cause: GPU %lld memory is nearly full, %lld of %lld MiB used by %lld other process%s "
				    "(see gpu.memory-held)",
				 i, used >> 20, total >> 20, procs, procs == 1 ? "" : "es");
		finding_fix(x, "free the GPU: stop the other processes (nvidia-smi --query-compute-apps=pid,process_name,"
			       "used_memory --format=csv), or choose another GPU with CUDA_VISIBLE_DEVICES");
		cause = true;
	}
	for (size_t i = 0; i < c->out->n; i++) {
		finding *o = &c->out->v[i];
		if (strcmp(o->id, "lib.shadowed") == 0 || strcmp(o->id, "torch.cudnn-mismatch") == 0 ||
		    strcmp(o->id, "release.known-bad") == 0) {
			finding_evidence(x, "cause: %s (%s)", o->title, o->id);
			for (size_t k = 0; k < o->fix.n && k < 2; k++)
				finding_fix_copy(x, o, k);
			o->rank = RANK_ROOT_CAUSE;
			cause = true;
		}
	}
	if (!cause) {
		finding_evidence(x, "no memory pressure or library mix-up seen; a cuDNN built for another CUDA major than "
				    "torch's also fails this way");
		add_pip_fix(x, f, c->kb, "reinstall torch with its own cuDNN: ");
	}
	x->rank = RANK_SYMPTOM;
}

/* ---- torch.smoke-failed ---- */

static void torch_smoke_failed(rule_ctx *c)
{
	const facts *f = c->facts;
	if (!live_torch(f) || !facts_true(f, FK_PYTHON_LIVE_CUDA_AVAILABLE))
		return;
	const char *mm = facts_str(f, FK_PYTHON_LIVE_SMOKE_MATMUL);
	const char *cv = facts_str(f, FK_PYTHON_LIVE_SMOKE_CONV);
	bool mm_bad = mm && strcmp(mm, "ok") != 0;
	bool cv_bad = cv && strcmp(cv, "ok") != 0 && !is_cudnn_error(cv); /* cuDNN errors: cudnn.init-failed */
	if (!mm_bad && !cv_bad)
		return;
	long long dev = facts_int_or(f, 0, FK_PYTHON_LIVE_SMOKE_DEVICE);
	finding *x = rule_emit(c, "a small %s on GPU %lld %s", mm_bad && cv_bad ? "matmul and conv2d" : mm_bad ? "matmul" : "conv2d",
			       dev, (mm_bad && strstr(mm, "wrong result")) || (cv_bad && strstr(cv, "wrong result")) ? "gave wrong results" : "failed");
	if (mm_bad)
		finding_evidence(x, "matmul 128x128: %s", mm);
	if (cv_bad)
		finding_evidence(x, "conv2d 2x3x32x32: %s", cv);
	const char *e = mm_bad ? mm : cv;
	if (strstr(e, "no kernel image")) {
		finding_fix(x, "torch has no code for this GPU's architecture: see torch.arch-unsupported");
		add_pip_fix(x, f, c->kb, NULL);
	} else if (strstr(e, "out of memory")) {
		finding_fix(x, "the GPU's memory is taken: stop the other processes (nvidia-smi) or pick another GPU with "
			       "CUDA_VISIBLE_DEVICES");
	} else if (strstr(e, "CUBLAS_STATUS")) {
		finding_fix(x, "cuBLAS could not start: check GPU memory (gpu.busy) and that the cuBLAS torch loads is its own "
			       "(lib.shadowed)");
	} else if (strstr(e, "wrong result")) {
		finding_fix(x, "a GPU that computes wrong results is faulty or unstable: check ECC errors (nvidia-smi -q -d "
			       "ECC), clocks and temperature; drain it and reset it, RMA if it repeats");
	} else {
		finding_fix(x, "run the same operation by hand with CUDA_LAUNCH_BLOCKING=1 to see where it fails: %s -c "
			       "\"import torch; a=torch.randn(128,128,device='cuda'); print((a@a).sum())\"",
			    python_cmd(f));
	}
}

/* ---- torch.import-failed ---- */

static void torch_import_failed(rule_ctx *c)
{
	const facts *f = c->facts;
	const char *e = live_ok(f) ? facts_str(f, FK_PYTHON_LIVE_TORCH_IMPORT_ERROR) : NULL;
	if (!e)
		return;
	finding *x = rule_emit(c, "import torch fails in %s", python_path(f));
	finding_evidence(x, "%s", e);
	/* libraries the loader model finds nowhere */
	long long n = facts_int_or(f, 0, FK_PYTHON_LIB_COUNT);
	for (long long i = 0; i < n; i++)
		if (facts_int_or(f, -1, FK_PYTHON_LIB_COPIES_COUNT(lld), i) == 0)
			finding_evidence(x, "%s is on no path the loader searches", facts_str(f, FK_PYTHON_LIB_SONAME(lld), i));
	const char *so = strstr(e, "lib");
	if (strstr(e, "undefined symbol") || strstr(e, "version `")) {
		finding_fix(x, "a library of another version is loaded instead of torch's own: see lib.shadowed; usually "
			       "`unset LD_LIBRARY_PATH` or removing a CUDA/cuDNN directory from it fixes this");
	} else if (so && strstr(e, "cannot open shared object file")) {
		char lib[128];
		str_copy(lib, sizeof(lib), so);
		lib[strcspn(lib, ": ")] = '\0';
		finding_fix(x, "%s is missing: reinstall torch with its dependencies: %s -m pip install --force-reinstall "
			       "torch (the nvidia-* wheels provide %s)",
			    lib, python_cmd(f), lib);
	} else {
		finding_fix(x, "reinstall torch: %s -m pip install --force-reinstall torch", python_cmd(f));
	}
	x->rank = RANK_ROOT_CAUSE;
}

/* ---- python.probe-failed ---- */

static void python_probe_failed(rule_ctx *c)
{
	const facts *f = c->facts;
	const fact *st = facts_get(f, FK_PYTHON_LIVE_STATUS);
	if (!st || st->state != FACT_ERROR)
		return;
	const char *kind = facts_str(f, FK_PYTHON_LIVE_FAILURE);
	const char *py = facts_str(f, FK_PYTHON_LIVE_INTERPRETER);
	finding *x = rule_emit(c, "the live PyTorch probe %s", !kind ? "failed"
							 : strcmp(kind, "timeout") == 0 ? "hung and was stopped"
							 : strcmp(kind, "crash") == 0 ? "crashed"
							 : strcmp(kind, "flood") == 0 ? "flooded its output"
							 : strcmp(kind, "spawn") == 0 ? "could not start"
										       : "gave no usable answer");
	finding_evidence(x, "%s", st->error ? st->error : "?");
	const char *tail = facts_str(f, FK_PYTHON_LIVE_STDERR_TAIL);
	if (tail) {
		/* the last two lines of stderr are where Python puts the error */
		const char *end = tail + strlen(tail);
		while (end > tail && (end[-1] == '\n' || end[-1] == ' '))
			end--;
		const char *p = end;
		int lines = 0;
		while (p > tail && lines < 2) {
			p--;
			if (*p == '\n')
				lines++;
		}
		if (*p == '\n')
			p++;
		finding_evidence(x, "stderr: %.*s", (int)(end - p), p);
	}
	finding_evidence(x, "the static checks of this layer still ran; facts from the running torch are missing");
	if (kind && strcmp(kind, "timeout") == 0)
		finding_fix(x, "a first import after installation can be slow: gpuvet check --python-timeout 60; if it still "
			       "hangs, run %s -c \"import torch; print(torch.cuda.is_available())\" and see where it stops "
			       "(a GPU in a bad state hangs cuInit: check dmesg for Xid errors)",
			    py ? py : "python3");
	else
		finding_fix(x, "run it by hand to see the error: %s -c \"import torch; print(torch.__version__, "
			       "torch.cuda.is_available())\"",
			    py ? py : "python3");
}

/* ---- torch.cuda-unavailable: the symptom, linked to its one root cause ---- */

/* What torch's own warning text means, when no rule named a cause. */
static void explain_warning(finding *x, const char *w, const facts *f, const kb *k)
{
	if (!w) {
		finding_fix(x, "run %s -c \"import torch; torch.cuda.init()\" to see CUDA's own error", python_cmd(f));
		return;
	}
	if (strstr(w, "Found no NVIDIA driver")) {
		finding_evidence(x, "cause: the NVIDIA driver is not installed or not loaded (no libcuda, or no kernel module)");
		finding_fix(x, "install the NVIDIA driver and reboot; `gpuvet check` without --fast shows which part is missing");
	} else if (strstr(w, "too old") || strstr(w, "Error 35") || strstr(w, "driver version is insufficient")) {
		finding_evidence(x, "cause: the driver is older than torch's CUDA needs");
		add_pip_fix(x, f, k, "install the newest torch this driver runs: ");
	} else if (strstr(w, "Error 804") || strstr(w, "forward compatibility")) {
		finding_evidence(x, "cause: CUDA forward-compatibility libraries (cuda-compat) are loaded on a GPU that does "
				    "not support them");
		finding_fix(x, "remove /usr/local/cuda*/compat from LD_LIBRARY_PATH and /etc/ld.so.conf.d, then sudo ldconfig");
	} else if (strstr(w, "Error 803")) {
		finding_evidence(x, "cause: the user-space driver (libcuda) and the kernel module are of different versions");
		finding_fix(x, "reboot after a driver update; remove cuda-compat libraries from LD_LIBRARY_PATH");
	} else if (strstr(w, "Error 999") || strstr(w, "unknown error")) {
		finding_evidence(x, "cause: CUDA reports an unknown error; after suspend/resume the nvidia_uvm module is "
				    "often broken");
		finding_fix(x, "sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm   (or reboot)");
	} else if (strstr(w, "Error 100") || strstr(w, "no CUDA-capable device")) {
		finding_evidence(x, "cause: no GPU is visible to this process");
		finding_fix(x, "check CUDA_VISIBLE_DEVICES (unset it, or list valid indices/UUIDs) and, in a container, "
			       "docker run --gpus all");
	} else if (strstr(w, "Error 304") || strstr(w, "Error 3:") || strstr(w, "initialization error")) {
		finding_evidence(x, "cause: CUDA could not initialise: device nodes (/dev/nvidia*, /dev/nvidia-uvm) missing "
				    "or not accessible");
		finding_fix(x, "sudo nvidia-modprobe -u -c=0, and add the user to the group that owns /dev/nvidia*");
	} else {
		finding_fix(x, "run %s -c \"import torch; torch.cuda.init()\" to see CUDA's own error", python_cmd(f));
	}
}

static void torch_cuda_unavailable(rule_ctx *c)
{
	const facts *f = c->facts;
	if (!live_torch(f))
		return;
	const fact *av = facts_get(f, FK_PYTHON_LIVE_CUDA_AVAILABLE);
	if (!av || av->state != FACT_OK || av->i)
		return;
	/* the root cause: the fail finding of the most fundamental rule marked root_cause */
	long ri = rules_root_cause(c->out);
	const char *w = facts_str(f, FK_PYTHON_LIVE_CUDA_WARNING);
	const char *e = facts_str(f, FK_PYTHON_LIVE_CUDA_ERROR);
	char *root_id = ri >= 0 ? xstrdup(c->out->v[ri].id) : NULL;
	char *root_title = ri >= 0 ? xstrdup(c->out->v[ri].title) : NULL;
	if (ri >= 0 && c->out->v[ri].rank > RANK_ROOT_CAUSE)
		c->out->v[ri].rank = RANK_ROOT_CAUSE;
	/* by index: findings_add can reallocate the array */
	finding *x = rule_emit(c, "torch.cuda.is_available() is False%s%s", root_id ? ": " : "", root_title ? root_title : "");
	x->rank = RANK_SYMPTOM;
	if (w)
		finding_evidence(x, "torch says: %s", w);
	if (e)
		finding_evidence(x, "error: %s", e);
	finding_evidence(x, "torch %s, torch.version.cuda = %s", torch_version(f), torch_cuda(f) ? torch_cuda(f) : "None");
	if (root_id) {
		finding_evidence(x, "root cause: %s (%s)", root_title, root_id);
		const finding *root = &c->out->v[ri];
		for (size_t i = 0; i < root->fix.n && i < 3; i++)
			finding_fix_copy(x, root, i);
	} else {
		explain_warning(x, w ? w : e, f, c->kb);
	}
	free(root_id);
	free(root_title);
}

/* ---- python.environments: what was examined ---- */

static void python_environments(rule_ctx *c)
{
	const facts *f = c->facts;
	long long n = facts_int_or(f, 0, FK_PYTHON_INTERPRETERS_COUNT);
	long long sel = facts_int_or(f, -1, FK_PYTHON_SELECTED_INDEX);
	if (n <= 0 || sel < 0)
		return;
	const char *tv = torch_version(f);
	finding *x = rule_emit(c, "examined %s (Python %s, %s, found through %s): %s%s%s", python_path(f),
			       facts_str(f, FK_PYTHON_VERSION) ? facts_str(f, FK_PYTHON_VERSION) : "?",
			       facts_str(f, FK_PYTHON_KIND) ? facts_str(f, FK_PYTHON_KIND) : "?",
			       facts_str(f, FK_PYTHON_SELECTED_ORIGIN) ? facts_str(f, FK_PYTHON_SELECTED_ORIGIN) : "?",
			       tv ? "torch " : "no torch", tv ? tv : "", n > 1 ? "; other interpreters below" : "");
	for (long long i = 0; i < n && i < 16; i++) {
		if (i == sel)
			continue;
		const char *t = facts_str(f, FK_PYTHON_INTERPRETERS_TORCH(lld), i);
		finding_evidence(x, "%s (Python %s, %s, %s): %s%s", facts_str(f, FK_PYTHON_INTERPRETERS_PATH(lld), i),
				 facts_str(f, FK_PYTHON_INTERPRETERS_VERSION(lld), i) ? facts_str(f, FK_PYTHON_INTERPRETERS_VERSION(lld), i) : "?",
				 facts_str(f, FK_PYTHON_INTERPRETERS_KIND(lld), i), facts_str(f, FK_PYTHON_INTERPRETERS_ORIGIN(lld), i),
				 t ? "torch " : "no torch", t ? t : "");
	}
	if (n > 1)
		finding_fix(x, "gpuvet check --python PATH examines another one");
	x->rank = 200;
}

/* ---- torch.newer-than-kb ---- */

/* An installed torch newer than every release of the knowledge base: its recommendations (the
 * build fix picks, the newest release it names) lag what can be installed. The torch versions
 * seen: the examined interpreter's (live, then its files) and every other interpreter's. */
static void torch_newer_than_kb(rule_ctx *c)
{
	const facts *f = c->facts;
	torch_build *all;
	size_t n = kb_torch_builds(c->kb, &all);
	char newest[16] = "";
	for (size_t i = 0; i < n; i++)
		if (!newest[0] || version_cmp(all[i].version, newest) > 0)
			str_copy(newest, sizeof(newest), all[i].version);
	free(all);
	if (!newest[0])
		return;
	struct seen {
		const char *version, *where;
	} v[66];
	size_t nv = 0;
	const char *live = live_torch(f) ? facts_str(f, FK_PYTHON_LIVE_TORCH_VERSION) : NULL;
	const char *own = facts_str(f, FK_PYTHON_TORCH_VERSION);
	if (live || own)
		v[nv++] = (struct seen){live ? live : own, python_path(f)};
	long long ni = facts_int_or(f, 0, FK_PYTHON_INTERPRETERS_COUNT);
	for (long long i = 0; i < ni && i < 64; i++) {
		const char *t = facts_str(f, FK_PYTHON_INTERPRETERS_TORCH(lld), i);
		const char *p = facts_str(f, FK_PYTHON_INTERPRETERS_PATH(lld), i);
		if (t)
			v[nv++] = (struct seen){t, p ? p : "?"};
	}
	finding *x = NULL;
	for (size_t i = 0; i < nv; i++) {
		char rel[16];
		torch_version_release(v[i].version, rel, sizeof(rel));
		int a, b;
		if (version_parse(rel, &a, &b, NULL) < 2 || version_cmp(rel, newest) <= 0)
			continue;
		bool dup = false;
		for (size_t k = 0; k < i; k++)
			dup |= strcmp(v[k].version, v[i].version) == 0 && strcmp(v[k].where, v[i].where) == 0;
		if (dup)
			continue;
		if (!x)
			x = rule_emit(c, "torch %s is newer than any PyTorch release in gpuvet's knowledge base (the newest it "
					 "knows: %s): the builds it recommends can be older than what can be installed",
				      rel, newest);
		finding_evidence(x, "torch %s installed for %s", v[i].version, v[i].where);
	}
	if (!x)
		return;
	finding_evidence(x, "knowledge base: data/torch_cuda.csv lists PyTorch up to %s", newest);
	finding_fix(x, "a newer gpuvet knows newer releases; `gpuvet check --kb DIR` reads newer tables in the meantime "
		       "(data/SOURCES.md says where each row comes from)");
}

const rule rules_python[] = {
	{"python.environments", "python", SEV_INFO, FK_PYTHON_INTERPRETERS_COUNT, python_environments,
	 "the Python interpreters found and the one examined"},
	{"python.probe-failed", "python", SEV_WARN, FK_PYTHON_LIVE_STATUS, python_probe_failed,
	 "the live PyTorch probe hung, crashed, flooded or answered garbage"},
	{"torch.not-installed", "python", SEV_INFO, FK_PYTHON_TORCH_INSTALLED, torch_not_installed,
	 "no torch in the chosen interpreter (or no interpreter)"},
	{"torch.import-failed", "python", SEV_FAIL, FK_PYTHON_LIVE_STATUS, torch_import_failed,
	 "import torch raises in the chosen interpreter", .root_cause = 19},
	{"torch.cpu-build", "python", SEV_FAIL, FK_PYTHON_TORCH_INSTALLED, torch_cpu_build,
	 "a CPU-only (or ROCm) torch while an NVIDIA GPU is present", .root_cause = 15},
	{"torch.driver-too-old", "python", SEV_FAIL, FK_PYTHON_TORCH_INSTALLED, torch_driver_too_old,
	 "torch's CUDA needs a newer driver than the installed one", .root_cause = 16},
	{"torch.arch-unsupported", "python", SEV_FAIL, FK_PYTHON_TORCH_INSTALLED, torch_arch_unsupported,
	 "torch's architecture list does not cover a GPU's compute capability"},
	{"torch.multiple", "python", SEV_WARN, FK_PYTHON_TORCH_INSTALLED, torch_multiple,
	 "several torch installs, or torch only in another interpreter"},
	{"torch.conda-cudatoolkit", "python", SEV_WARN, FK_PYTHON_TORCH_INSTALLED, torch_conda_cudatoolkit,
	 "conda cudatoolkit/cudnn packages that differ from torch's"},
	{"lib.shadowed", "loader", SEV_FAIL, FK_PYTHON_TORCH_INSTALLED, lib_shadowed,
	 "another copy of a CUDA library shadows the one torch ships", .root_cause = 18},
	{"torch.cudnn-mismatch", "python", SEV_WARN, FK_PYTHON_TORCH_INSTALLED, torch_cudnn_mismatch,
	 "the cuDNN torch mapped differs from cudnn.version() or the wheel's pin"},
	{"torch.cudnn-disabled", "python", SEV_WARN, FK_PYTHON_TORCH_INSTALLED, torch_cudnn_disabled,
	 "cudnn.enabled is False or cuDNN unavailable in a CUDA build"},
	{"torch.libraries", "python", SEV_INFO, FK_PYTHON_TORCH_INSTALLED, torch_libraries,
	 "which cuDNN, cuBLAS, CUDA runtime and NCCL files torch uses, and other copies on the loader path"},
	{"toolkit.vs-torch", "toolkit", SEV_INFO, FK_PYTHON_TORCH_INSTALLED " " FK_TOOLKIT_COUNT, toolkit_vs_torch,
	 "nvcc's CUDA version differs from torch.version.cuda"},
	{"ext.arch-missing", "ext", SEV_FAIL, FK_PYTHON_EXT_COUNT, ext_arch_missing,
	 "a CUDA extension module carries no code for a GPU here"},
	{"torch.bf16-unsupported", "python", SEV_INFO, FK_PYTHON_TORCH_INSTALLED, torch_bf16,
	 "compute capability below 8.0: no native bfloat16"},
	{"cudnn.init-failed", "loader", SEV_FAIL, FK_PYTHON_LIVE_STATUS, cudnn_init_failed,
	 "cuDNN fails to initialise in torch (memory, shadowed or mismatched libraries)"},
	{"torch.smoke-failed", "python", SEV_FAIL, FK_PYTHON_LIVE_STATUS, torch_smoke_failed,
	 "a small matmul or conv2d on the GPU fails or gives wrong results"},
	{"torch.cuda-unavailable", "python", SEV_FAIL, FK_PYTHON_LIVE_STATUS, torch_cuda_unavailable,
	 "torch.cuda.is_available() is False; names the root cause"},
	{"torch.newer-than-kb", "python", SEV_INFO, FK_PYTHON_INTERPRETERS_COUNT, torch_newer_than_kb,
	 "an installed torch is newer than every PyTorch release in the knowledge base"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
