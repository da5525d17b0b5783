/*
 * CUDA toolkits: every install found (/usr/local/cuda-*, /opt/cuda*, the HPC SDK, conda), its
 * version and where it was read, and what PATH's nvcc, CUDA_HOME / CUDA_PATH and /usr/local/cuda
 * point to.
 *
 * Facts: toolkit.*  (core/factkeys.def, docs/facts.md)
 */
#include <stdlib.h>

#include "core/factkeys.h"
#include "probes/probes.h"

/* where the toolkits are looked for */
#define TOOLKIT_PLACES "PATH's nvcc, CUDA_HOME, CUDA_PATH, /usr/local/cuda*, /opt/cuda*, /opt/nvidia/hpc_sdk, conda environments"
#include "toolkit/toolkits.h"

void probe_toolkit(facts *f, const probe_opts *o)
{
	cuda_env e;
	/* --fast: files only, nvcc is never started (a version may stay unknown) */
	cuda_env_scan(&e, !o->fast);
	facts_put_int(f, TOOLKIT_PLACES, (long long)e.n, FK_TOOLKIT_COUNT);
	for (size_t i = 0; i < e.n; i++) {
		const cuda_install *ci = &e.v[i];
		int n = (int)i;
		facts_put_str(f, ci->found_as, ci->root, FK_TOOLKIT_ROOT(d), n);
		facts_put_str(f, ci->root, ci->found_as, FK_TOOLKIT_FOUND_AS(d), n);
		facts_put_str(f, ci->root, ci->origin, FK_TOOLKIT_ORIGIN(d), n);
		if (ci->version) {
			facts_put_str(f, ci->version_source, ci->version, FK_TOOLKIT_VERSION(d), n);
			facts_put_str(f, ci->root, ci->version_source, FK_TOOLKIT_VERSION_SOURCE(d), n);
		} else {
			facts_put_state(f, FACT_ERROR, ci->root, ci->version_error, FK_TOOLKIT_VERSION(d), n);
		}
		if (ci->nvcc)
			facts_put_str(f, ci->root, ci->nvcc, FK_TOOLKIT_NVCC(d), n);
		else
			facts_put_state(f, FACT_ABSENT, ci->root, "no bin/nvcc", FK_TOOLKIT_NVCC(d), n);
		facts_put_str(f, ci->root, ci->nvcc ? "toolkit" : "runtime", FK_TOOLKIT_KIND(d), n);
		if (ci->lib_dir)
			facts_put_str(f, ci->root, ci->lib_dir, FK_TOOLKIT_LIB_DIR(d), n);
		if (ci->cudnn_version)
			facts_put_str(f, "include/cudnn_version.h", ci->cudnn_version, FK_TOOLKIT_CUDNN_VERSION(d), n);
		facts_put_bool(f, ci->root, ci->compat, FK_TOOLKIT_COMPAT(d), n);
	}
	if (e.path_nvcc) {
		facts_put_str(f, "PATH", e.path_nvcc, FK_TOOLKIT_PATH_NVCC);
		if (e.path_nvcc_install >= 0)
			facts_put_int(f, "PATH", e.path_nvcc_install, FK_TOOLKIT_PATH_NVCC_INSTALL);
	} else {
		facts_put_state(f, FACT_ABSENT, "PATH", "no nvcc in any PATH entry", FK_TOOLKIT_PATH_NVCC);
	}
	facts_put_int(f, "PATH", e.path_nvcc_count, FK_TOOLKIT_PATH_NVCC_COUNT);
	if (e.cuda_home) {
		facts_put_str(f, e.cuda_home_var, e.cuda_home, FK_TOOLKIT_CUDA_HOME);
		facts_put_str(f, "environment", e.cuda_home_var, FK_TOOLKIT_CUDA_HOME_VAR);
		facts_put_bool(f, e.cuda_home, e.cuda_home_exists, FK_TOOLKIT_CUDA_HOME_EXISTS);
		if (e.cuda_home_install >= 0)
			facts_put_int(f, e.cuda_home_var, e.cuda_home_install, FK_TOOLKIT_CUDA_HOME_INSTALL);
	} else {
		facts_put_state(f, FACT_ABSENT, "environment", "CUDA_HOME and CUDA_PATH are not set", FK_TOOLKIT_CUDA_HOME);
	}
	if (e.cuda_path) {
		facts_put_str(f, "CUDA_PATH", e.cuda_path, FK_TOOLKIT_CUDA_PATH);
		if (e.cuda_path_install >= 0)
			facts_put_int(f, "CUDA_PATH", e.cuda_path_install, FK_TOOLKIT_CUDA_PATH_INSTALL);
	}
	if (e.usr_local_cuda == LINK_ABSENT)
		facts_put_state(f, FACT_ABSENT, "/usr/local/cuda", "does not exist", FK_TOOLKIT_USR_LOCAL_CUDA);
	else
		facts_put_str(f, "/usr/local/cuda", cuda_link_state_name(e.usr_local_cuda), FK_TOOLKIT_USR_LOCAL_CUDA);
	if (e.usr_local_cuda_target)
		facts_put_str(f, "/usr/local/cuda", e.usr_local_cuda_target, FK_TOOLKIT_USR_LOCAL_CUDA_TARGET);
	if (e.usr_local_cuda_install >= 0)
		facts_put_int(f, "/usr/local/cuda", e.usr_local_cuda_install, FK_TOOLKIT_USR_LOCAL_CUDA_INSTALL);
	int active = cuda_env_active(&e);
	if (active >= 0)
		facts_put_int(f, "PATH, CUDA_HOME, /usr/local/cuda", active, FK_TOOLKIT_ACTIVE);
	cuda_env_free(&e);
}
