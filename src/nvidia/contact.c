#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/child.h"
#include "core/factkeys.h"
#include "nvidia/contact.h"
#include "nvidia/cuda.h"
#include "nvidia/nvml.h"

static void contact_body(facts *f, void *arg)
{
	(void)arg;
	gv_nvml_load();
	gv_nvml_status st;
	gv_nvml_status_get(&st);
	if (!st.loaded)
		return; /* the parent's own load says why, quickly: nothing ran */
	gv_child_stage("libnvidia-ml.so.1", st.path, "nvmlInit_v2");
	nvmlReturn_t rc = gv_nvml_init();
	gv_child_stage_end();
	facts_put_int(f, "nvmlInit_v2", rc, FK_CONTACT_INIT_CODE);
	if (rc != NVML_SUCCESS)
		return;
	unsigned n = 0;
	gv_child_stage("libnvidia-ml.so.1", st.path, "nvmlDeviceGetCount");
	rc = gv_nvml_device_count(&n);
	gv_child_stage_end();
	facts_put_int(f, "nvmlDeviceGetCount", rc, FK_CONTACT_COUNT_CODE);
}

bool gv_nvml_first_contact(char *err, size_t errsize)
{
	gv_nvml_status st;
	gv_nvml_status_get(&st);
	if (st.attempted)
		return true; /* this process has loaded it (or tried) already */
	gv_child_report r;
	gv_child *c = gv_child_start("nvml-contact", contact_body, NULL);
	if (gv_child_wait(c, gv_driver_timeout(30), NULL, &r) == GV_CHILD_OK)
		return true;
	char what[PATH_MAX + 300];
	gv_child_describe(&r, what, sizeof(what));
	snprintf(err, errsize, "%s %s", r.lib[0] ? r.lib : "libnvidia-ml.so.1", what);
	return false;
}

static void cuda_contact_body(facts *f, void *arg)
{
	(void)arg;
	if (!gv_cuda_load())
		return; /* the parent's own load says why */
	gv_cuda_status st;
	gv_cuda_status_get(&st);
	int v = 0;
	gv_child_stage("libcuda.so.1", st.path, "cuDriverGetVersion");
	CUresult rc = gv_cuda_api_get()->cuDriverGetVersion(&v);
	gv_child_stage_end();
	facts_put_int(f, "cuDriverGetVersion", rc, FK_CONTACT_CUDA_VERSION_CODE);
}

bool gv_cuda_first_contact(char *err, size_t errsize)
{
	gv_cuda_status st;
	gv_cuda_status_get(&st);
	if (st.attempted)
		return true;
	gv_child_report r;
	gv_child *c = gv_child_start("cuda-contact", cuda_contact_body, NULL);
	if (gv_child_wait(c, gv_driver_timeout(30), NULL, &r) == GV_CHILD_OK)
		return true;
	char what[PATH_MAX + 300];
	gv_child_describe(&r, what, sizeof(what));
	snprintf(err, errsize, "%s %s", r.lib[0] ? r.lib : "libcuda.so.1", what);
	return false;
}

int gv_nvml_init_quiet(void)
{
	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (saved >= 0 && null >= 0)
		dup2(null, STDOUT_FILENO);
	nvmlReturn_t rc = gv_nvml_init();
	fflush(stdout);
	if (saved >= 0 && null >= 0)
		dup2(saved, STDOUT_FILENO);
	if (saved >= 0)
		close(saved);
	if (null >= 0)
		close(null);
	return rc;
}
