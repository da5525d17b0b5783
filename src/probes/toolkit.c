/*
 * CUDA toolkits: every install found (/usr/local/cuda-*, /opt/cuda*, the HPC SDK, conda), its
 * version and where it was read, and what PATH's nvcc, CUDA_HOME / CUDA_PATH and /usr/local/cuda
 * point to.
 *
 * Facts: toolkit.*  (see docs/facts/toolkit.md)
 */
#include <stdlib.h>

#include "probes/probes.h"
#include "toolkit/toolkits.h"

void probe_toolkit(facts *f, const probe_opts *o)
{
	cuda_env e;
	/* --fast: files only, nvcc is never started (a version may stay unknown) */
	cuda_env_scan(&e, !o->fast);
	facts_put_int(f, NULL, (long long)e.n, "toolkit.count");
	for (size_t i = 0; i < e.n; i++) {
		const cuda_install *ci = &e.v[i];
		int n = (int)i;
		facts_put_str(f, ci->found_as, ci->root, "toolkit.%d.root", n);
		facts_put_str(f, NULL, ci->found_as, "toolkit.%d.found_as", n);
		facts_put_str(f, NULL, ci->origin, "toolkit.%d.origin", n);
		if (ci->version) {
			facts_put_str(f, ci->version_source, ci->version, "toolkit.%d.version", n);
			facts_put_str(f, NULL, ci->version_source, "toolkit.%d.version_source", n);
		} else {
			facts_put_state(f, FACT_ERROR, ci->root, ci->version_error, "toolkit.%d.version", n);
		}
		if (ci->nvcc)
			facts_put_str(f, NULL, ci->nvcc, "toolkit.%d.nvcc", n);
		else
			facts_put_state(f, FACT_ABSENT, ci->root, "no bin/nvcc", "toolkit.%d.nvcc", n);
		facts_put_str(f, NULL, ci->nvcc ? "toolkit" : "runtime", "toolkit.%d.kind", n);
		if (ci->lib_dir)
			facts_put_str(f, NULL, ci->lib_dir, "toolkit.%d.lib_dir", n);
		if (ci->cudnn_version)
			facts_put_str(f, "include/cudnn_version.h", ci->cudnn_version, "toolkit.%d.cudnn_version", n);
		facts_put_bool(f, NULL, ci->compat, "toolkit.%d.compat", n);
	}
	if (e.path_nvcc) {
		facts_put_str(f, "PATH", e.path_nvcc, "toolkit.path_nvcc");
		if (e.path_nvcc_install >= 0)
			facts_put_int(f, NULL, e.path_nvcc_install, "toolkit.path_nvcc_install");
	} else {
		facts_put_state(f, FACT_ABSENT, "PATH", "no nvcc in any PATH entry", "toolkit.path_nvcc");
	}
	facts_put_int(f, "PATH", e.path_nvcc_count, "toolkit.path_nvcc_count");
	if (e.cuda_home) {
		facts_put_str(f, e.cuda_home_var, e.cuda_home, "toolkit.cuda_home");
		facts_put_str(f, NULL, e.cuda_home_var, "toolkit.cuda_home_var");
		facts_put_bool(f, e.cuda_home, e.cuda_home_exists, "toolkit.cuda_home_exists");
		if (e.cuda_home_install >= 0)
			facts_put_int(f, NULL, e.cuda_home_install, "toolkit.cuda_home_install");
	} else {
		facts_put_state(f, FACT_ABSENT, "environment", "CUDA_HOME and CUDA_PATH are not set", "toolkit.cuda_home");
	}
	if (e.cuda_path) {
		facts_put_str(f, "CUDA_PATH", e.cuda_path, "toolkit.cuda_path");
		if (e.cuda_path_install >= 0)
			facts_put_int(f, NULL, e.cuda_path_install, "toolkit.cuda_path_install");
	}
	if (e.usr_local_cuda == LINK_ABSENT)
		facts_put_state(f, FACT_ABSENT, "/usr/local/cuda", "does not exist", "toolkit.usr_local_cuda");
	else
		facts_put_str(f, "/usr/local/cuda", cuda_link_state_name(e.usr_local_cuda), "toolkit.usr_local_cuda");
	if (e.usr_local_cuda_target)
		facts_put_str(f, "/usr/local/cuda", e.usr_local_cuda_target, "toolkit.usr_local_cuda_target");
	if (e.usr_local_cuda_install >= 0)
		facts_put_int(f, NULL, e.usr_local_cuda_install, "toolkit.usr_local_cuda_install");
	int active = cuda_env_active(&e);
	if (active >= 0)
		facts_put_int(f, NULL, active, "toolkit.active");
	cuda_env_free(&e);
}
