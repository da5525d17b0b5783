#include <stdio.h>
#include <string.h>

#include "core/child.h"
#include "core/util.h"
#include "core/factkeys.h"
#include "nvidia/contact.h"
#include "nvidia/cuda.h"
#include "nvidia/nvml.h"

/* Runs body in a supervised child under the driver deadline; false with err ("libcuda.so.1
 * crashed with SIGSEGV in dlopen (FILE)") when it did not come back. */
static bool contact_in_child(const char *name, gv_child_body body, const char *soname, char *err, size_t errsize,
			     gv_child *started)
{
	gv_child_report r;
	gv_child *c = started ? started : gv_child_start(name, body, NULL);
	if (gv_child_wait(c, gv_driver_timeout(30), NULL, &r) == GV_CHILD_OK)
		return true;
	char what[PATH_MAX + 300];
	gv_child_describe(&r, what, sizeof(what));
	snprintf(err, errsize, "%s %s", r.lib[0] ? r.lib : soname, what);
	return false;
}

static void contact_body(facts *f, void *arg)
{
	(void)arg;
	gv_nvml_load();
	gv_nvml_status st;
	gv_nvml_status_get(&st);
	if (!st.loaded)
		return; /* the parent's own load says why, quickly: nothing ran */
	nvmlReturn_t rc = gv_nvml_init_staged(&st);
	facts_put_int(f, "nvmlInit_v2", rc, FK_CONTACT_INIT_CODE);
	if (rc != NVML_SUCCESS)
		return;
	unsigned n = 0;
	gv_child_stage("libnvidia-ml.so.1", st.path, "nvmlDeviceGetCount");
	rc = gv_nvml_device_count(&n);
	gv_child_stage_end();
	facts_put_int(f, "nvmlDeviceGetCount", rc, FK_CONTACT_COUNT_CODE);
}

/* the child gv_nvml_first_contact_start began, waited for by the first gv_nvml_first_contact */
static gv_child *early_contact;

void gv_nvml_first_contact_start(void)
{
	gv_nvml_status st;
	gv_nvml_status_get(&st);
	if (!st.attempted && !early_contact)
		early_contact = gv_child_start("nvml-contact", contact_body, NULL);
}

bool gv_nvml_first_contact(char *err, size_t errsize)
{
	gv_child *started = early_contact;
	early_contact = NULL;
	gv_nvml_status st;
	gv_nvml_status_get(&st);
	if (st.attempted && !started)
		return true; /* this process has loaded it (or tried) already */
	return contact_in_child("nvml-contact", contact_body, "libnvidia-ml.so.1", err, errsize, started);
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
	return contact_in_child("cuda-contact", cuda_contact_body, "libcuda.so.1", err, errsize, NULL);
}

int gv_nvml_init_quiet(void)
{
	stdout_muted m;
	stdout_mute(&m);
	nvmlReturn_t rc = gv_nvml_init();
	stdout_unmute(&m);
	return rc;
}
