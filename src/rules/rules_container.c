/* Rules of containers and platforms: a container without GPUs, driver capabilities, /dev/shm
 * too small for NCCL, WSL 1. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "rules/registry.h"

static int gpu_nodes_present(const facts *f)
{
	long long present;
	if (facts_int(f, &present, "devices.gpu.present"))
		return (int)present;
	return 0;
}

static void no_gpu(rule_ctx *c)
{
	const facts *f = c->facts;
	if (!facts_true(f, "container.inside"))
		return;
	if (facts_true(f, "devices.nvidiactl") || gpu_nodes_present(f) > 0 || facts_true(f, "devices.dxg") ||
	    fact_seen_but_unknown(facts_get(f, "devices.gpu.count")))
		return; /* nodes there, or /dev unreadable: nothing says they are missing */
	/* the host's GPUs show through sysfs and /proc/driver: without them gpu.none speaks */
	long long pci = facts_int_or(f, 0, "hardware.pci.count");
	const char *module = facts_str(f, "hardware.kernel_module_version");
	if (pci <= 0 && !module)
		return;
	const char *kind = facts_str(f, "container.kind");
	bool pod = kind && strcmp(kind, "kubernetes") == 0;
	finding *x = rule_emit(c, "this %s%s was started without the GPUs: no /dev/nvidia* inside",
			       pod ? "Kubernetes pod" : kind ? kind : "", pod ? "" : " container");
	const char *marker = facts_str(f, "container.marker");
	if (marker)
		finding_evidence(x, "inside a container: %s", marker);
	if (pci > 0)
		finding_evidence(x, "the host has %lld NVIDIA GPU%s (PCI, seen through /sys)", pci, pci == 1 ? "" : "s");
	if (module)
		finding_evidence(x, "the host's NVIDIA driver %s is loaded (/proc/driver/nvidia/version)", module);
	finding_evidence(x, "no /dev/nvidiactl and no /dev/nvidiaN in the container");
	const char *nvd = facts_str(f, "env.nvidia_visible_devices");
	if (nvd && (strcmp(nvd, "void") == 0 || strcmp(nvd, "none") == 0 || !*nvd))
		finding_evidence(x, "NVIDIA_VISIBLE_DEVICES=\"%s\" asks the NVIDIA runtime for no GPU", nvd);
	else if (nvd)
		finding_evidence(x, "NVIDIA_VISIBLE_DEVICES=\"%s\" was set, but the NVIDIA runtime did not act on it "
				    "(the container was not started with it)", nvd);
	if (pod) {
		finding_fix(x, "request GPUs in the pod spec: resources: limits: nvidia.com/gpu: 1 (the NVIDIA device plugin "
			       "or GPU Operator must run on the node)");
	} else if (kind && strcmp(kind, "podman") == 0) {
		finding_fix(x, "podman run --device nvidia.com/gpu=all ...   (after sudo nvidia-ctk cdi generate --output="
			       "/etc/cdi/nvidia.yaml on the host)");
	} else {
		finding_fix(x, "docker run --gpus all ...   (docker compose: deploy.resources.reservations.devices with "
			       "driver: nvidia, capabilities: [gpu])");
		finding_fix(x, "the host needs the NVIDIA Container Toolkit: sudo apt install nvidia-container-toolkit && "
			       "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker");
	}
	x->rank = 0;
}

static bool has_word(const strlist *l, const char *w)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcasecmp(l->v[i], w) == 0)
			return true;
	return false;
}

static void capabilities(rule_ctx *c)
{
	const facts *f = c->facts;
	const char *v = facts_str(f, "env.nvidia_driver_capabilities");
	if (!v || !facts_true(f, "container.inside"))
		return;
	strlist caps = {0};
	char *copy = xstrdup(v);
	sl_split(&caps, copy, ", ", false);
	free(copy);
	if (caps.n == 0 || has_word(&caps, "all")) { /* empty: the toolkit's default, utility,compute */
		sl_free(&caps);
		return;
	}
	bool compute = has_word(&caps, "compute"), utility = has_word(&caps, "utility");
	static const char *const known[] = {"compute", "compat32", "graphics", "utility", "video", "display"};
	strlist unknown = {0};
	for (size_t i = 0; i < caps.n; i++) {
		bool k = false;
		for (size_t j = 0; j < GV_ARRAY_LEN(known); j++)
			k |= strcasecmp(caps.v[i], known[j]) == 0;
		if (!k)
			sl_push(&unknown, caps.v[i]);
	}
	if (compute && utility && !unknown.n) {
		sl_free(&caps);
		sl_free(&unknown);
		return;
	}
	finding *x;
	if (!compute || !utility)
		x = rule_emit(c, "NVIDIA_DRIVER_CAPABILITIES=%s lacks %s%s%s", v, compute ? "" : "compute",
			      !compute && !utility ? " and " : "", utility ? "" : "utility");
	else
		x = rule_emit_sev(c, SEV_INFO, "NVIDIA_DRIVER_CAPABILITIES=%s names capabilities the runtime does not know", v);
	if (!compute)
		finding_evidence(x, "without compute the runtime mounts no libcuda.so: CUDA and PyTorch find no GPU");
	if (!utility)
		finding_evidence(x, "without utility there is no nvidia-smi and no libnvidia-ml.so (NVML) in the container");
	for (size_t i = 0; i < unknown.n; i++)
		finding_evidence(x, "'%s' is not a capability (compute, compat32, graphics, utility, video, display, all)",
				 unknown.v[i]);
	strbuf want;
	sb_init(&want);
	for (size_t i = 0; i < caps.n; i++)
		if (!sl_contains(&unknown, caps.v[i]))
			sb_addf(&want, "%s%s", want.len ? "," : "", caps.v[i]);
	if (!compute)
		sb_addf(&want, "%scompute", want.len ? "," : "");
	if (!utility)
		sb_addf(&want, "%sutility", want.len ? "," : "");
	finding_fix(x, "recreate the container with -e NVIDIA_DRIVER_CAPABILITIES=%s (or all), or in the Dockerfile: "
		       "ENV NVIDIA_DRIVER_CAPABILITIES=%s", want.buf, want.buf);
	finding_fix(x, "the runtime reads it when the container starts: changing it inside has no effect");
	sb_free(&want);
	sl_free(&caps);
	sl_free(&unknown);
}

static void shm_small(rule_ctx *c)
{
	const facts *f = c->facts;
	long long bytes;
	if (!facts_int(f, &bytes, "container.shm_bytes") || bytes >= (1LL << 30))
		return;
	long long gpus;
	if (!facts_int(f, &gpus, "nvml.device_count"))
		gpus = gpu_nodes_present(f);
	bool inside = facts_true(f, "container.inside");
	if (gpus < 2 && !inside)
		return;
	finding *x;
	if (gpus >= 2)
		x = rule_emit(c, "/dev/shm is only %lld MiB: NCCL between %lld GPUs needs more (\"unhandled system error\", "
				 "bus errors)", bytes >> 20, gpus);
	else
		x = rule_emit_sev(c, SEV_INFO, "/dev/shm is only %lld MiB: DataLoader workers (num_workers > 0) can die "
						"with a bus error", bytes >> 20);
	finding_evidence(x, "/dev/shm size %lld bytes (%s)", bytes,
			 facts_get(f, "container.shm_bytes")->source ? facts_get(f, "container.shm_bytes")->source : "?");
	if (bytes == 64LL << 20)
		finding_evidence(x, "64 MiB is Docker's default");
	if (inside) {
		finding_fix(x, "docker run --shm-size=16g ...   or --ipc=host (shares the host's /dev/shm)");
		finding_fix(x, "Kubernetes: mount an emptyDir with medium: Memory (sizeLimit: 16Gi) at /dev/shm");
	} else {
		finding_fix(x, "sudo mount -o remount,size=16G /dev/shm   (and the size= option in /etc/fstab)");
	}
}

static void wsl_v1(rule_ctx *c)
{
	const facts *f = c->facts;
	if (facts_int_or(c->facts, 0, "container.wsl") != 1)
		return;
	finding *x = rule_emit(c, "this is WSL 1, which cannot run CUDA: WSL 2 is needed");
	const char *k = facts_str(f, "container.wsl_kernel");
	if (k)
		finding_evidence(x, "kernel \"%s\" is WSL 1's emulated kernel", k);
	finding_evidence(x, "no /dev/dxg: WSL 1 has no GPU paravirtualisation");
	finding_fix(x, "in Windows PowerShell: wsl -l -v   (lists the distributions and their WSL version)");
	finding_fix(x, "wsl --set-version <distribution> 2 ; wsl --set-default-version 2");
	finding_fix(x, "install the NVIDIA driver on Windows only (it provides /usr/lib/wsl/lib/libcuda.so); do not install "
		       "a Linux NVIDIA driver inside WSL");
	x->rank = 0;
}

const rule rules_container[] = {
	{"container.no-gpu", "container", SEV_FAIL, "container.inside devices.nvidiactl", no_gpu,
	 "inside a container with no NVIDIA device nodes while the host has GPUs"},
	{"container.capabilities", "container", SEV_WARN, "container.inside env.nvidia_driver_capabilities", capabilities,
	 "NVIDIA_DRIVER_CAPABILITIES lacks compute or utility"},
	{"nccl.shm-small", "container", SEV_WARN, "container.shm_bytes", shm_small,
	 "/dev/shm below 1 GiB with 2+ GPUs (or in a container)"},
	{"wsl.v1", "container", SEV_FAIL, "container.wsl", wsl_v1, "WSL 1 kernel: CUDA needs WSL 2"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
