/* Rules of containers and platforms: a container without GPUs, driver capabilities, /dev/shm
 * too small for NCCL, WSL 1. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "rules/registry.h"
#include "core/factkeys.h"

static int gpu_nodes_present(const facts *f)
{
	long long present;
	if (facts_int(f, &present, FK_DEVICES_GPU_PRESENT))
		return (int)present;
	return 0;
}

static void no_gpu(rule_ctx *c)
{
	const facts *f = c->facts;
	if (!facts_true(f, FK_CONTAINER_INSIDE))
		return;
	if (facts_true(f, FK_DEVICES_NVIDIACTL) || gpu_nodes_present(f) > 0 || facts_true(f, FK_DEVICES_DXG) ||
	    fact_seen_but_unknown(facts_get(f, FK_DEVICES_GPU_COUNT)))
		return; /* nodes there, or /dev unreadable: nothing says they are missing */
	/* the host's GPUs usually show through sysfs and /proc/driver; when they do not (a masked
	 * /sys, a VM-based runtime) this is still the container's case, not gpu.none's */
	long long pci = facts_int_or(f, 0, FK_HARDWARE_PCI_COUNT);
	const char *module = facts_str(f, FK_HARDWARE_KERNEL_MODULE_VERSION);
	const char *kind = facts_str(f, FK_CONTAINER_KIND);
	bool pod = kind && strcmp(kind, "kubernetes") == 0;
	finding *x;
	bool seen = pci > 0 || module || facts_int_or(f, 0, FK_NVML_DEVICE_COUNT) > 0;
	if (seen)
		x = rule_emit(c, "this %s%s was started without the GPUs: no /dev/nvidia* inside",
			      pod ? "Kubernetes pod" : kind ? kind : "", pod ? "" : " container");
	else
		x = rule_emit(c, "this %s%s has no GPU: no /dev/nvidia* inside, and the host's GPUs (if it has any) "
				 "are not visible from here", pod ? "Kubernetes pod" : kind ? kind : "", pod ? "" : " container");
	const char *marker = facts_str(f, FK_CONTAINER_MARKER);
	if (marker)
		finding_evidence(x, "inside a container: %s", marker);
	if (pci > 0)
		finding_evidence(x, "the host has %lld NVIDIA GPU%s (PCI, seen through /sys)", pci, pci == 1 ? "" : "s");
	if (module)
		finding_evidence(x, "the host's NVIDIA driver %s is loaded (/proc/driver/nvidia/version)", module);
	finding_evidence(x, "no /dev/nvidiactl and no /dev/nvidiaN in the container");
	if (!seen)
		finding_evidence(x, "no NVIDIA PCI device under /sys/bus/pci and no /proc/driver/nvidia: if the host has GPUs, "
				    "they were not passed in; on a host without GPUs, use a GPU node");
	const char *nvd = facts_str(f, FK_ENV_NVIDIA_VISIBLE_DEVICES);
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
	const char *v = facts_str(f, FK_ENV_NVIDIA_DRIVER_CAPABILITIES);
	if (!v || !facts_true(f, FK_CONTAINER_INSIDE))
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
		finding_evidence(x, "without utility the runtime mounts neither nvidia-smi nor libnvidia-ml.so (NVML) into the "
				    "container");
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
	if (!facts_int(f, &bytes, FK_CONTAINER_SHM_BYTES) || bytes >= (1LL << 30))
		return;
	long long gpus;
	if (!facts_int(f, &gpus, FK_NVML_DEVICE_COUNT))
		gpus = gpu_nodes_present(f);
	bool inside = facts_true(f, FK_CONTAINER_INSIDE);
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
			 facts_get(f, FK_CONTAINER_SHM_BYTES)->source ? facts_get(f, FK_CONTAINER_SHM_BYTES)->source : "?");
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
	if (facts_int_or(c->facts, 0, FK_CONTAINER_WSL) != 1)
		return;
	finding *x = rule_emit(c, "this is WSL 1, which cannot run CUDA: WSL 2 is needed");
	const char *k = facts_str(f, FK_CONTAINER_WSL_KERNEL);
	if (k)
		finding_evidence(x, "kernel \"%s\" is WSL 1's emulated kernel", k);
	finding_evidence(x, "no /dev/dxg: WSL 1 has no GPU paravirtualisation");
	finding_fix(x, "in Windows PowerShell: wsl -l -v   (lists the distributions and their WSL version)");
	finding_fix(x, "wsl --set-version <distribution> 2 ; wsl --set-default-version 2");
	finding_fix(x, "install the NVIDIA driver on Windows only (it provides /usr/lib/wsl/lib/libcuda.so); do not install "
		       "a Linux NVIDIA driver inside WSL");
	x->rank = 0;
}

/* ---- container.toolkit-missing: a GPU host whose container engines cannot give GPUs ---- */

static bool os_like(const facts *f, const char *word)
{
	const char *id = facts_str(f, FK_OS_ID), *like = facts_str(f, FK_OS_ID_LIKE);
	return (id && strstr(id, word)) || (like && strstr(like, word));
}

/* NVIDIA's install lines for the distribution (docs.nvidia.com/datacenter/cloud-native/
 * container-toolkit/latest/install-guide.html). */
static void toolkit_install_fix(const facts *f, finding *x)
{
	if (os_like(f, "debian") || os_like(f, "ubuntu")) {
		finding_fix(x, "curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey | sudo gpg --dearmor -o "
			       "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg && curl -s -L "
			       "https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list | sed "
			       "'s#deb https://#deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] https://#g' | "
			       "sudo tee /etc/apt/sources.list.d/nvidia-container-toolkit.list");
		finding_fix(x, "sudo apt-get update && sudo apt-get install -y nvidia-container-toolkit");
	} else if (os_like(f, "suse")) {
		finding_fix(x, "sudo zypper ar https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo");
		finding_fix(x, "sudo zypper --gpg-auto-import-keys install -y nvidia-container-toolkit");
	} else if (os_like(f, "rhel") || os_like(f, "fedora") || os_like(f, "centos") || os_like(f, "amzn")) {
		finding_fix(x, "curl -s -L https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo "
			       "| sudo tee /etc/yum.repos.d/nvidia-container-toolkit.repo");
		finding_fix(x, "sudo dnf install -y nvidia-container-toolkit");
	} else {
		finding_fix(x, "install the NVIDIA Container Toolkit (package nvidia-container-toolkit) from NVIDIA's repository "
			       "for this distribution: docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html");
	}
}

static bool nvidia_cdi_spec(const facts *f)
{
	for (long long i = 0; i < facts_int_or(f, 0, FK_CONTAINER_CDI_COUNT) && i < 64; i++) {
		const char *kind = facts_str(f, FK_CONTAINER_CDI_KIND(lld), i);
		if (kind && strncmp(kind, "nvidia.com/", 11) == 0)
			return true;
	}
	return false;
}

static void toolkit_missing(rule_ctx *c)
{
	const facts *f = c->facts;
	if (facts_true(f, FK_CONTAINER_INSIDE) || facts_int_or(f, 0, FK_CONTAINER_WSL) != 0)
		return;
	bool gpu = facts_int_or(f, 0, FK_NVML_DEVICE_COUNT) > 0 || facts_int_or(f, 0, FK_HARDWARE_PCI_COUNT) > 0 ||
		   facts_str(f, FK_HARDWARE_KERNEL_MODULE_VERSION);
	const char *docker = facts_str(f, FK_CONTAINER_ENGINE_DOCKER);
	const char *podman = facts_str(f, FK_CONTAINER_ENGINE_PODMAN);
	if (!gpu || (!docker && !podman))
		return;
	const char *ctk = facts_str(f, FK_CONTAINER_NVIDIA_TOOLKIT);
	bool docker_rt = facts_true(f, FK_CONTAINER_DOCKER_NVIDIA_RUNTIME);
	bool cdi = nvidia_cdi_spec(f);
	bool docker_bad = docker && (!ctk || (!docker_rt && !cdi));
	bool podman_bad = podman && !cdi;
	if (!docker_bad && !podman_bad)
		return;
	finding *x = rule_emit(c, "this GPU host has %s%s%s but %s: containers cannot be given the GPUs",
			       docker ? "docker" : "", docker && podman ? " and " : "", podman ? "podman" : "",
			       !ctk ? "no NVIDIA Container Toolkit" : docker_bad ? "no nvidia runtime for Docker" : "no NVIDIA CDI spec");
	if (docker)
		finding_evidence(x, "docker: %s", docker);
	if (podman)
		finding_evidence(x, "podman: %s", podman);
	if (!ctk)
		finding_evidence(x, "no nvidia-ctk or nvidia-container-runtime in /usr/bin or /usr/local/bin");
	else
		finding_evidence(x, "NVIDIA Container Toolkit: %s", ctk);
	if (docker) {
		const fact *rt = facts_get(f, FK_CONTAINER_DOCKER_NVIDIA_RUNTIME);
		if (rt && rt->state == FACT_OK)
			finding_evidence(x, "/etc/docker/daemon.json declares %s", docker_rt ? "the nvidia runtime" : "no nvidia runtime");
		else
			finding_evidence(x, "no /etc/docker/daemon.json (or unreadable): no nvidia runtime declared");
	}
	finding_evidence(x, "%s", cdi ? "an NVIDIA CDI spec exists" : "no NVIDIA CDI spec in /etc/cdi or /var/run/cdi");
	if (docker_bad)
		finding_evidence(x, "docker run --gpus all fails: could not select device driver \"\" with capabilities: [[gpu]]");
	if (podman_bad)
		finding_evidence(x, "podman run --device nvidia.com/gpu=all fails: unresolvable CDI devices nvidia.com/gpu=all");
	if (!ctk)
		toolkit_install_fix(f, x);
	if (docker_bad)
		finding_fix(x, "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker");
	if (podman_bad || (docker_bad && !ctk))
		finding_fix(x, "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml   (CDI, for podman and for docker 25+; "
			       "again after every driver upgrade)");
	if (facts_str(f, FK_CONTAINER_ENGINE_CONTAINERD) && !facts_true(f, FK_CONTAINER_CONTAINERD_NVIDIA_RUNTIME))
		finding_fix(x, "for containerd (Kubernetes): sudo nvidia-ctk runtime configure --runtime=containerd && sudo "
			       "systemctl restart containerd");
	finding_fix(x, "check: %s run --rm %s ubuntu nvidia-smi", docker ? "docker" : "podman",
		    docker ? "--gpus all" : "--device nvidia.com/gpu=all");
}

const rule rules_container[] = {
	{"container.no-gpu", "container", SEV_FAIL, FK_CONTAINER_INSIDE " " FK_DEVICES_NVIDIACTL, no_gpu,
	 "inside a container with no NVIDIA device nodes while the host has GPUs", .root_cause = 4},
	{"container.capabilities", "container", SEV_WARN, FK_CONTAINER_INSIDE " " FK_ENV_NVIDIA_DRIVER_CAPABILITIES, capabilities,
	 "NVIDIA_DRIVER_CAPABILITIES lacks compute or utility", .root_cause = 14},
	{"nccl.shm-small", "container", SEV_WARN, FK_CONTAINER_SHM_BYTES, shm_small,
	 "/dev/shm below 1 GiB with 2+ GPUs (or in a container)"},
	{"wsl.v1", "container", SEV_FAIL, FK_CONTAINER_WSL, wsl_v1, "WSL 1 kernel: CUDA needs WSL 2", .root_cause = 5},
	{"container.toolkit-missing", "container", SEV_WARN, FK_CONTAINER_INSIDE, toolkit_missing,
	 "a GPU host with docker or podman but no NVIDIA Container Toolkit, nvidia runtime or CDI spec"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
