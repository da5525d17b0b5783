#include "rules/cuda_facts.h"

#include <stdio.h>
#include <string.h>

#include "core/factkeys.h"
#include "core/util.h"

const char *cf_driver_version(const facts *f)
{
	const char *v = facts_str(f, FK_NVML_DRIVER_VERSION);
	return v ? v : facts_str(f, FK_HARDWARE_KERNEL_MODULE_VERSION);
}

bool cf_driver_max_cuda(const facts *f, const kb *k, char *out, size_t n, char *why, size_t wn)
{
	const char *drv = cf_driver_version(f);
	const char *v = facts_str(f, FK_NVML_CUDA_VERSION);
	long long iv;
	if (v && version_parse(v, NULL, NULL, NULL) >= 2) {
		str_copy(out, n, v);
		snprintf(why, wn, "NVML reports the driver%s%s supports CUDA up to %s", drv ? " " : "", drv ? drv : "", v);
		return true;
	}
	if (facts_int(f, &iv, FK_CUDA_DRIVER_VERSION) && iv >= 1000) {
		snprintf(out, n, "%lld.%lld", iv / 1000, (iv % 1000) / 10);
		snprintf(why, wn, "cuDriverGetVersion reports CUDA %s", out);
		return true;
	}
	if (drv && k && kb_driver_max_cuda(k, drv, out, n)) {
		snprintf(why, wn, "driver %s supports CUDA up to %s (knowledge base)", drv, out);
		return true;
	}
	return false;
}

const char *cf_install_label(const facts *f, int n, char *buf, size_t size)
{
	const char *root = facts_str(f, FK_TOOLKIT_ROOT(d), n);
	const char *v = facts_str(f, FK_TOOLKIT_VERSION(d), n);
	snprintf(buf, size, "%s (CUDA %s%s)", root ? root : "?", v ? v : "version unknown",
		 facts_str(f, FK_TOOLKIT_NVCC(d), n) ? "" : ", no nvcc");
	return buf;
}

bool cf_install_mm(const facts *f, int n, char *out, size_t size)
{
	const char *v = facts_str(f, FK_TOOLKIT_VERSION(d), n);
	int a, b;
	if (!v || version_parse(v, &a, &b, NULL) < 2)
		return false;
	snprintf(out, size, "%d.%d", a, b);
	return true;
}

int cf_install_count(const facts *f)
{
	return (int)facts_int_or(f, 0, FK_TOOLKIT_COUNT);
}

int cf_int(const facts *f, const char *key)
{
	return (int)facts_int_or(f, -1, "%s", key);
}

int cf_major(const char *v)
{
	int a;
	return v && version_parse(v, &a, NULL, NULL) >= 1 ? a : -1;
}

bool version_major_minor_text(const char *v, char *out, size_t n)
{
	int a, b;
	if (!v || version_parse(v, &a, &b, NULL) < 2)
		return false;
	snprintf(out, n, "%d.%d", a, b);
	return true;
}
