/* Rules of the toolkit layer: is there a CUDA toolkit, is it on PATH, do PATH, CUDA_HOME and
 * /usr/local/cuda agree, and does the driver run what it builds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/loader.h"
#include "core/shell.h"
#include "rules/cuda_facts.h"
#include "rules/registry.h"

/* The install a fix should point at: CUDA_HOME's, /usr/local/cuda's, else the newest with nvcc. */
static int preferred_install(const facts *f)
{
	int i = cf_int(f, "toolkit.cuda_home_install");
	if (i >= 0 && facts_str(f, "toolkit.%d.nvcc", i))
		return i;
	i = cf_int(f, "toolkit.usr_local_cuda_install");
	if (i >= 0 && facts_str(f, "toolkit.%d.nvcc", i))
		return i;
	int best = -1;
	for (int k = 0; k < cf_install_count(f); k++) {
		if (!facts_str(f, "toolkit.%d.nvcc", k))
			continue;
		if (best < 0 || version_cmp(facts_str(f, "toolkit.%d.version", k), facts_str(f, "toolkit.%d.version", best)) > 0)
			best = k;
	}
	return best;
}

static void toolkit_none(rule_ctx *c)
{
	const facts *f = c->facts;
	if (cf_install_count(f) > 0 || facts_str(f, "toolkit.path_nvcc"))
		return;
	finding *x = rule_emit(c, "no CUDA toolkit (nvcc) is installed");
	finding_evidence(x, "no nvcc in any PATH entry");
	finding_evidence(x, "nothing under /usr/local/cuda*, /opt/cuda*, /opt/nvidia/hpc_sdk or conda environments");
	const char *home = facts_str(f, "toolkit.cuda_home");
	if (home)
		finding_evidence(x, "%s=%s holds no CUDA install", facts_str(f, "toolkit.cuda_home_var"), home);
	finding_fix(x, "nothing to do to run PyTorch: its wheels bring their own CUDA runtime libraries");
	char max[32], why[256];
	if (cf_driver_max_cuda(f, c->kb, max, sizeof(max), why, sizeof(why))) {
		int a = 0, b = 0;
		version_parse(max, &a, &b, NULL);
		finding_fix(x, "to compile CUDA code or build extensions, install a toolkit this driver runs (%s): "
			       "sudo apt install cuda-toolkit-%d-%d (NVIDIA's apt repository), "
			       "or conda install -c nvidia cuda-nvcc=%s",
			    why, a, b, max);
	} else {
		finding_fix(x, "to compile CUDA code or build extensions: install the toolkit matching torch.version.cuda "
			       "(sudo apt install cuda-toolkit-X-Y from NVIDIA's apt repository, or conda install -c nvidia "
			       "cuda-nvcc)");
	}
}

static void nvcc_not_on_path(rule_ctx *c)
{
	const facts *f = c->facts;
	if (facts_str(f, "toolkit.path_nvcc"))
		return;
	int i = preferred_install(f);
	if (i < 0)
		return;
	const char *root = facts_str(f, "toolkit.%d.root", i);
	char label[512];
	finding *x = rule_emit(c, "a CUDA toolkit is installed but nvcc is not on PATH");
	finding_evidence(x, "installed: %s", cf_install_label(f, i, label, sizeof(label)));
	finding_evidence(x, "no nvcc in any PATH entry");
	char *bin = xasprintf("%s/bin", root);
	char qb[4096], ql[8192];
	if (shell_word(qb, sizeof(qb), bin)) {
		char *line = xasprintf("export PATH=%s:$PATH", qb);
		finding_fix_export(x, "PATH", line + strlen("export PATH="), NULL);
		if (shell_word(ql, sizeof(ql), line))
			finding_fix(x, "to keep it: echo %s >> ~/.bashrc", ql);
		free(line);
	} else {
		finding_fix_refused(x, "the toolkit directory", root);
	}
	free(bin);
}

/* "PATH's nvcc", "CUDA_HOME", "/usr/local/cuda": which install each points at */
static void pointer_evidence(finding *x, const facts *f)
{
	char label[512];
	int i = cf_int(f, "toolkit.path_nvcc_install");
	const char *nvcc = facts_str(f, "toolkit.path_nvcc");
	if (nvcc)
		finding_evidence(x, "PATH's nvcc: %s -> %s", nvcc, i >= 0 ? cf_install_label(f, i, label, sizeof(label)) : "?");
	else
		finding_evidence(x, "PATH's nvcc: none");
	const char *home = facts_str(f, "toolkit.cuda_home");
	i = cf_int(f, "toolkit.cuda_home_install");
	if (home)
		finding_evidence(x, "%s=%s -> %s", facts_str(f, "toolkit.cuda_home_var"), home,
				 i >= 0 ? cf_install_label(f, i, label, sizeof(label)) : "does not exist");
	else
		finding_evidence(x, "CUDA_HOME: not set");
	const char *ulc = facts_str(f, "toolkit.usr_local_cuda");
	i = cf_int(f, "toolkit.usr_local_cuda_install");
	if (ulc && i >= 0)
		finding_evidence(x, "/usr/local/cuda -> %s", cf_install_label(f, i, label, sizeof(label)));
	else if (ulc)
		finding_evidence(x, "/usr/local/cuda: %s%s%s", ulc, facts_str(f, "toolkit.usr_local_cuda_target") ? " link to " : "",
				 facts_str(f, "toolkit.usr_local_cuda_target") ? facts_str(f, "toolkit.usr_local_cuda_target") : "");
	else
		finding_evidence(x, "/usr/local/cuda: does not exist");
}

static void toolkit_multiple(rule_ctx *c)
{
	const facts *f = c->facts;
	int n = cf_install_count(f);
	if (n < 2)
		return;
	finding *x = rule_emit(c, "%d CUDA installs on this machine", n);
	char label[512];
	for (int i = 0; i < n; i++)
		finding_evidence(x, "%s", cf_install_label(f, i, label, sizeof(label)));
	pointer_evidence(x, f);
	int a = cf_int(f, "toolkit.active");
	char mm[32];
	if (a >= 0 && cf_install_mm(f, a, mm, sizeof(mm)))
		finding_fix(x, "switch this shell to one of them: eval \"$(gpuvet env use %s)\"", mm);
	else
		finding_fix(x, "switch this shell to one of them: eval \"$(gpuvet env use X.Y)\"");
	finding_fix(x, "gpuvet env lists them; gpuvet env --scan finds stray library copies to clean up");
}

static void toolkit_inconsistent(rule_ctx *c)
{
	const facts *f = c->facts;
	int p = cf_int(f, "toolkit.path_nvcc_install");
	int h = cf_int(f, "toolkit.cuda_home_install");
	int u = cf_int(f, "toolkit.usr_local_cuda_install");
	const char *home = facts_str(f, "toolkit.cuda_home");
	const char *var = facts_str(f, "toolkit.cuda_home_var");
	bool home_missing = home && !facts_true(f, "toolkit.cuda_home_exists");
	/* the reference is what a build uses: PATH's nvcc, else CUDA_HOME, else /usr/local/cuda */
	int ref = p >= 0 ? p : (h >= 0 ? h : u);
	bool home_off = home && (home_missing || (h >= 0 && ref >= 0 && h != ref));
	bool link_off = u >= 0 && ref >= 0 && u != ref;
	int cp = cf_int(f, "toolkit.cuda_path_install");
	bool cpath_off = cp >= 0 && ref >= 0 && cp != ref;
	if (!home_off && !link_off && !cpath_off)
		return;
	finding *x;
	if (home_missing && !link_off && !cpath_off)
		x = rule_emit(c, "%s points to a directory that does not exist", var);
	else
		x = rule_emit(c, "PATH's nvcc, CUDA_HOME and /usr/local/cuda point to different CUDA installs");
	pointer_evidence(x, f);
	if (cpath_off)
		finding_evidence(x, "CUDA_PATH=%s points to yet another install", facts_str(f, "toolkit.cuda_path"));
	if (ref < 0) {
		finding_fix_unset(x, var, NULL);
		return;
	}
	const char *root = facts_str(f, "toolkit.%d.root", ref);
	char mm[32];
	bool have_mm = cf_install_mm(f, ref, mm, sizeof(mm));
	finding_evidence(x, "builds use %s (%s)", root, p >= 0 ? "PATH's nvcc" : var ? var : "/usr/local/cuda");
	char qr[4096], qu[4096];
	if (!shell_word(qr, sizeof(qr), root)) {
		finding_fix_refused(x, "the toolkit directory", root);
		return;
	}
	if (home_off)
		finding_fix_export(x, var ? var : "CUDA_HOME", qr, NULL);
	if (cpath_off)
		finding_fix_export(x, "CUDA_PATH", qr, NULL);
	const char *uroot = facts_str(f, "toolkit.%d.root", u);
	char *ubin = xasprintf("%s/bin", uroot ? uroot : "/usr/local/cuda");
	if (link_off && shell_word(qu, sizeof(qu), ubin))
		finding_fix(x, "sudo ln -sfn %s /usr/local/cuda   (or use the install /usr/local/cuda points to: "
			       "export PATH=%s:$PATH)",
			    qr, qu);
	else if (link_off)
		finding_fix(x, "sudo ln -sfn %s /usr/local/cuda", qr);
	free(ubin);
	if (have_mm)
		finding_fix(x, "or set everything for this shell at once: eval \"$(gpuvet env use %s)\"", mm);
}

static void symlink_dangling(rule_ctx *c)
{
	const facts *f = c->facts;
	const char *s = facts_str(f, "toolkit.usr_local_cuda");
	if (!s || (strcmp(s, "dangling") != 0 && strcmp(s, "loop") != 0))
		return;
	const char *target = facts_str(f, "toolkit.usr_local_cuda_target");
	finding *x = rule_emit(c, strcmp(s, "loop") == 0 ? "/usr/local/cuda is a symlink loop"
							  : "/usr/local/cuda points to a directory that does not exist");
	finding_evidence(x, "/usr/local/cuda -> %s (%s)", target ? target : "?",
			 strcmp(s, "loop") == 0 ? "the links never end in a directory" : "missing");
	/* the newest real install with nvcc */
	int best = -1;
	for (int i = 0; i < cf_install_count(f); i++) {
		const char *r = facts_str(f, "toolkit.%d.root", i);
		if (!r || !facts_str(f, "toolkit.%d.nvcc", i))
			continue;
		if (best < 0 || version_cmp(facts_str(f, "toolkit.%d.version", i), facts_str(f, "toolkit.%d.version", best)) > 0)
			best = i;
	}
	finding_evidence(x, "builds and tools that default to /usr/local/cuda (CMake, PyTorch extensions) will not find CUDA");
	char qb[4096];
	if (best >= 0 && shell_word(qb, sizeof(qb), facts_str(f, "toolkit.%d.root", best)))
		finding_fix(x, "sudo ln -sfn %s /usr/local/cuda", qb);
	else if (best >= 0)
		finding_fix_refused(x, "the toolkit directory", facts_str(f, "toolkit.%d.root", best));
	else
		finding_fix(x, "no CUDA toolkit is installed to point it to: sudo rm /usr/local/cuda");
}

static void newer_than_driver(rule_ctx *c)
{
	const facts *f = c->facts;
	char max[32], why[256];
	if (!cf_driver_max_cuda(f, c->kb, max, sizeof(max), why, sizeof(why)))
		return; /* no driver seen: other findings say so */
	int i = cf_int(f, "toolkit.active");
	if (i < 0)
		return;
	char mm[32];
	if (!cf_install_mm(f, i, mm, sizeof(mm)) || version_cmp(mm, max) <= 0)
		return;
	if (facts_true(f, "toolkit.%d.compat", i))
		return; /* the forward-compatibility package is there */
	char label[512];
	finding *x = rule_emit(c, "the CUDA %s toolkit in use is newer than the driver supports (CUDA %s)", mm, max);
	finding_evidence(x, "toolkit in use: %s", cf_install_label(f, i, label, sizeof(label)));
	finding_evidence(x, "%s", why);
	bool same_major = cf_major(mm) == cf_major(max);
	if (same_major)
		finding_evidence(x, "same major version: most programs it builds still run (minor-version compatibility), "
				    "but PTX it emits cannot be JIT-compiled by this driver and newer APIs fail");
	else
		finding_evidence(x, "different major version: programs it builds fail with \"CUDA driver version is "
				    "insufficient for CUDA runtime version\"");
	finding_evidence(x, "no cuda-compat package under %s/compat", facts_str(f, "toolkit.%d.root", i));
	char tk_min[64] = "", compat_min[64] = "";
	if (kb_cuda_min_driver(c->kb, mm, tk_min, sizeof(tk_min), compat_min, sizeof(compat_min)))
		finding_fix(x, "upgrade the driver to %s or newer (CUDA %s's own driver)", tk_min, mm);
	else
		finding_fix(x, "upgrade the driver to one that supports CUDA %s", mm);
	int a = 0, b = 0;
	version_parse(mm, &a, &b, NULL);
	const char *llp = facts_str(f, "loader.ld_library_path");
	char *rest = llp ? loader_path_without_stubs(llp) : NULL;
	bool had_stubs = llp && strcmp(rest, llp) != 0; /* a rewritten path drops the stubs */
	finding_fix(x, "datacenter GPUs only (not GeForce/RTX): sudo apt install cuda-compat-%d-%d, then "
		       "export LD_LIBRARY_PATH=/usr/local/cuda-%d.%d/compat%s%s",
		    a, b, a, b, had_stubs ? (*rest ? ":" : "") : ":$LD_LIBRARY_PATH", had_stubs ? rest : "");
	free(rest);
	/* an installed toolkit the driver does run */
	int fit = -1;
	char fm[32], best[32] = "";
	for (int k = 0; k < cf_install_count(f); k++)
		if (facts_str(f, "toolkit.%d.nvcc", k) && cf_install_mm(f, k, fm, sizeof(fm)) && version_cmp(fm, max) <= 0 &&
		    (fit < 0 || version_cmp(fm, best) > 0)) {
			fit = k;
			str_copy(best, sizeof(best), fm);
		}
	if (fit >= 0)
		finding_fix(x, "or use the installed CUDA %s toolkit, which this driver runs: eval \"$(gpuvet env use %s)\"",
			    best, best);
}

const rule rules_toolkit[] = {
	{"toolkit.none", "toolkit", SEV_INFO, "toolkit.count", toolkit_none,
	 "no CUDA toolkit: no nvcc on PATH and no toolkit directory"},
	{"toolkit.nvcc-not-on-path", "toolkit", SEV_WARN, "toolkit.count", nvcc_not_on_path,
	 "a toolkit is installed but nvcc is not on PATH"},
	{"toolkit.multiple", "toolkit", SEV_INFO, "toolkit.count", toolkit_multiple,
	 "several CUDA installs; which one PATH, CUDA_HOME and /usr/local/cuda point to"},
	{"toolkit.inconsistent", "toolkit", SEV_WARN, "toolkit.count", toolkit_inconsistent,
	 "PATH's nvcc, CUDA_HOME and /usr/local/cuda disagree (or CUDA_HOME is missing)"},
	{"toolkit.symlink-dangling", "toolkit", SEV_WARN, "toolkit.count", symlink_dangling,
	 "/usr/local/cuda points to a missing directory"},
	{"toolkit.newer-than-driver", "toolkit", SEV_WARN, "toolkit.count", newer_than_driver,
	 "the toolkit in use is newer than the driver's CUDA (no cuda-compat package)"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
