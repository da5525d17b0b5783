/* Rules of the device-node layer: nvidia-uvm present, nodes accessible, one node per GPU. */
#include <stdio.h>
#include <string.h>

#include "rules/registry.h"

static bool cuda_init_ok(const facts *f)
{
	const char *s = facts_str(f, "cuda.init");
	return s && strcmp(s, "ok") == 0;
}

/* Some sign that the NVIDIA driver is there: otherwise gpu.none / driver.not-loaded speak. */
static bool driver_present(const facts *f)
{
	const fact *kmod = facts_get(f, "hardware.kernel_module_version");
	return (kmod && kmod->state != FACT_ABSENT) || facts_true(f, "hardware.module.nvidia") ||
	       facts_int_or(f, 0, "nvml.device_count") > 0 || facts_true(f, "devices.nvidiactl");
}

static int gpu_nodes_present(const facts *f)
{
	long long present;
	if (facts_int(f, &present, "devices.gpu.present"))
		return (int)present;
	int n = 0;
	for (int k = 0; k < facts_int_or(f, 0, "devices.gpu.count"); k++)
		n += facts_true(f, "devices.gpu.%d", k);
	return n;
}

/* /dev could not be listed: how many nodes exist is unknown (files.unreadable says why), never 0. */
static bool nodes_unknown(const facts *f)
{
	return fact_seen_but_unknown(facts_get(f, "devices.gpu.count"));
}

/* A container without any NVIDIA node is container.no-gpu's case. */
static bool container_without_nodes(const facts *f)
{
	return facts_true(f, "container.inside") && !facts_true(f, "devices.nvidiactl") && gpu_nodes_present(f) == 0 &&
	       !nodes_unknown(f);
}

static void uvm_missing(rule_ctx *c)
{
	const facts *f = c->facts;
	if (facts_true(f, "devices.dxg") || !driver_present(f) || container_without_nodes(f))
		return; /* WSL 2 has no nvidia-uvm node */
	bool node = facts_true(f, "devices.nvidia_uvm");
	const fact *mod = facts_get(f, "hardware.module.nvidia_uvm");
	bool mod_known = mod && mod->state == FACT_OK;
	bool mod_loaded = mod_known && facts_true(f, "hardware.module.nvidia_uvm");
	if (node && (!mod_known || mod_loaded))
		return;
	if (cuda_init_ok(f))
		return; /* cuInit loaded it on demand (nvidia-modprobe), and CUDA works */
	bool inside = facts_true(f, "container.inside");
	const fact *init = facts_get(f, "cuda.init");
	bool init_failed = init && init->state == FACT_ERROR;
	bool on_demand = !inside && facts_true(f, "devices.nvidia_modprobe_setuid");
	finding *x;
	if (!init_failed && on_demand)
		x = rule_emit_sev(c, SEV_INFO, "nvidia-uvm is not loaded yet; nvidia-modprobe will load it at the first CUDA use");
	else
		x = rule_emit(c, "the nvidia-uvm kernel module or its device node is missing: CUDA cannot initialise");
	if (!node) {
		const char *type = facts_str(f, "devices.nvidia_uvm.type");
		finding_evidence(x, "/dev/nvidia-uvm %s", type && strstr(type, "symlink") ? type : "does not exist");
	}
	if (mod_known && !mod_loaded)
		finding_evidence(x, "nvidia_uvm is not listed in /proc/modules");
	if (init_failed)
		finding_evidence(x, "cuInit failed: %s", init->error ? init->error : "(no detail)");
	if (on_demand)
		finding_evidence(x, "%s is installed setuid root: it loads the module and creates the node when a "
				    "CUDA program starts", facts_str(f, "devices.nvidia_modprobe"));
	if (inside) {
		finding_fix(x, "the module and the node come from the host: on the host run sudo modprobe nvidia-uvm && "
			       "sudo nvidia-modprobe -u -c=0, then recreate the container");
	} else {
		finding_fix(x, "sudo modprobe nvidia-uvm");
		finding_fix(x, "sudo nvidia-modprobe -u -c=0   (creates /dev/nvidia-uvm and /dev/nvidia-uvm-tools)");
		finding_fix(x, "load it at every boot: echo nvidia-uvm | sudo tee /etc/modules-load.d/nvidia-uvm.conf");
	}
	x->rank = 10;
}

typedef struct denied {
	strlist lines;  /* evidence */
	strlist paths;  /* nodes that need a mode change */
	strlist groups; /* groups that would give access */
	strlist relogin; /* groups the user is listed in but this login lacks */
} denied;

static void check_node(const facts *f, const char *prefix, denied *d)
{
	if (!facts_true(f, "%s", prefix))
		return;
	const fact *acc = facts_get(f, "%s.access", prefix);
	if (!acc || acc->state != FACT_OK || acc->i)
		return;
	const char *path = facts_str(f, "%s.path", prefix);
	const char *mode = facts_str(f, "%s.mode", prefix);
	const char *group = facts_str(f, "%s.group", prefix);
	long long gid = facts_int_or(f, -1, "%s.gid", prefix);
	char gname[64];
	if (group)
		snprintf(gname, sizeof(gname), "%s", group);
	else
		snprintf(gname, sizeof(gname), "%lld", gid);
	unsigned m = 0;
	if (mode)
		sscanf(mode, "%o", &m);
	sl_pushf(&d->lines, "%s: mode %s, owner uid %lld, group %s (gid %lld); can read: %s, can write: %s",
		 path ? path : prefix, mode ? mode : "?", facts_int_or(f, -1, "%s.uid", prefix), gname, gid,
		 facts_true(f, "%s.read", prefix) ? "yes" : "no", facts_true(f, "%s.write", prefix) ? "yes" : "no");
	if ((m & 060) == 060 && gid != 0) { /* the group may: join it */
		if (facts_true(f, "%s.user_listed", prefix)) {
			if (!sl_contains(&d->relogin, gname))
				sl_push(&d->relogin, gname);
		} else if (!sl_contains(&d->groups, gname)) {
			sl_push(&d->groups, gname);
		}
	} else if (path) {
		sl_push(&d->paths, path);
	}
}

static void dev_permission(rule_ctx *c)
{
	const facts *f = c->facts;
	if (facts_int_or(f, -1, "devices.user.uid") == 0)
		return; /* root may always */
	denied d = {{0}, {0}, {0}, {0}};
	check_node(f, "devices.nvidiactl", &d);
	check_node(f, "devices.nvidia_uvm", &d);
	for (int k = 0; k < facts_int_or(f, 0, "devices.gpu.count"); k++) {
		char p[48];
		snprintf(p, sizeof(p), "devices.gpu.%d", k);
		check_node(f, p, &d);
	}
	if (d.lines.n) {
		finding *x = rule_emit(c, "this user cannot open the NVIDIA device nodes: CUDA and NVML will fail");
		for (size_t i = 0; i < d.lines.n; i++)
			finding_evidence(x, "%s", d.lines.v[i]);
		const char *user = facts_str(f, "devices.user.name");
		const char *groups = facts_str(f, "devices.user.groups");
		finding_evidence(x, "you are uid %lld%s%s%s, groups %s", facts_int_or(f, -1, "devices.user.uid"),
				 user ? " (" : "", user ? user : "", user ? ")" : "",
				 groups && *groups ? groups : (facts_str(f, "devices.user.gids") ? facts_str(f, "devices.user.gids") : "?"));
		for (size_t i = 0; i < d.groups.n; i++)
			finding_fix(x, "sudo usermod -aG %s $USER   (then log out and back in)", d.groups.v[i]);
		for (size_t i = 0; i < d.relogin.n; i++)
			finding_fix(x, "you are already listed in group %s, but this login started before that: log out and "
				       "back in, or run `newgrp %s`", d.relogin.v[i], d.relogin.v[i]);
		if (d.paths.n) {
			strbuf all;
			sb_init(&all);
			for (size_t i = 0; i < d.paths.n; i++)
				sb_addf(&all, " %s", d.paths.v[i]);
			finding_fix(x, "now (until reboot): sudo chmod 0666%s", all.buf);
			finding_fix(x, "for good, a udev rule: echo 'KERNEL==\"nvidia*\", MODE=\"0666\"' | sudo tee "
				       "/etc/udev/rules.d/70-nvidia-permissions.rules; or the driver's own option: echo "
				       "'options nvidia NVreg_DeviceFileMode=0666' | sudo tee /etc/modprobe.d/nvidia-permissions.conf "
				       "&& sudo update-initramfs -u; then reboot");
			sb_free(&all);
		}
		if (facts_true(f, "container.inside"))
			finding_fix(x, "in a container the nodes' modes come from the host and the runtime: fix them on the host, "
				       "or run the container with --gpus (rootless Podman: the nvidia CDI spec)");
		x->rank = 5;
	}
	sl_free(&d.lines);
	sl_free(&d.paths);
	sl_free(&d.groups);
	sl_free(&d.relogin);
}

static void count_mismatch(rule_ctx *c)
{
	const facts *f = c->facts;
	long long ngpus;
	if (!facts_int(f, &ngpus, "nvml.device_count") || ngpus <= 0)
		return;
	int present = gpu_nodes_present(f);
	if (present >= ngpus || facts_true(f, "devices.dxg") || nodes_unknown(f))
		return;
	finding *x = rule_emit(c, "NVML reports %lld GPU%s but only %d /dev/nvidiaN node%s exist%s", ngpus,
			       ngpus == 1 ? "" : "s", present, present == 1 ? "" : "s", present == 1 ? "s" : "");
	strbuf have;
	sb_init(&have);
	for (int k = 0; k < facts_int_or(f, 0, "devices.gpu.count"); k++)
		if (facts_true(f, "devices.gpu.%d", k))
			sb_addf(&have, "%s/dev/nvidia%lld", have.len ? ", " : "", facts_int_or(f, k, "devices.gpu.%d.minor", k));
	finding_evidence(x, "device nodes: %s", have.len ? have.buf : "none");
	sb_free(&have);
	strbuf missing;
	sb_init(&missing);
	for (long long i = 0; i < ngpus && i < 64; i++) {
		long long minor;
		if (!facts_int(f, &minor, "nvml.gpu.%lld.minor_number", i))
			continue;
		bool found = false;
		for (int k = 0; k < facts_int_or(f, 0, "devices.gpu.count") && !found; k++)
			found = facts_true(f, "devices.gpu.%d", k) && facts_int_or(f, -1, "devices.gpu.%d.minor", k) == minor;
		if (!found) {
			const char *name = facts_str(f, "nvml.gpu.%lld.name", i);
			finding_evidence(x, "GPU %lld (%s, minor number %lld) has no /dev/nvidia%lld", i, name ? name : "?",
					 minor, minor);
			sb_addf(&missing, "%s%lld", missing.len ? " " : "", minor);
		}
	}
	if (facts_true(f, "container.inside")) {
		finding_fix(x, "the container was given only some GPUs: recreate it with docker run --gpus all (or "
			       "--gpus '\"device=0,1\"' for chosen ones), or the device plugin's nvidia.com/gpu count in Kubernetes");
		finding_fix(x, "cgroup device rules can also hide nodes: check the runtime's --device-cgroup-rule settings");
	} else if (missing.len) {
		strlist m = {0};
		sl_split(&m, missing.buf, " ", false);
		for (size_t i = 0; i < m.n; i++)
			finding_fix(x, "sudo nvidia-modprobe -c=%s   (creates /dev/nvidia%s)", m.v[i], m.v[i]);
		sl_free(&m);
	} else {
		finding_fix(x, "create the missing nodes: sudo nvidia-modprobe -c=N for each GPU minor number N (nvidia-smi -q "
			       "| grep Minor), or reboot so that udev creates them");
	}
	sb_free(&missing);
}

const rule rules_devices[] = {
	{"driver.uvm-missing", "devices", SEV_FAIL, "devices.nvidia_uvm", uvm_missing,
	 "/dev/nvidia-uvm missing or nvidia_uvm not loaded"},
	{"dev.permission", "devices", SEV_FAIL, "devices.nvidiactl devices.user.uid", dev_permission,
	 "the NVIDIA device nodes are not readable and writable by this user"},
	{"dev.count-mismatch", "devices", SEV_WARN, "devices.gpu.count nvml.device_count", count_mismatch,
	 "fewer /dev/nvidiaN nodes than GPUs reported by NVML"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
