/* Rules of the device-node layer: nvidia-uvm present, nodes accessible, one node per GPU. */
#include <stdio.h>
#include <string.h>

#include "core/factkeys.h"
#include "core/shell.h"
#include "rules/registry.h"

static bool cuda_init_ok(const facts *f)
{
	const char *s = facts_str(f, FK_CUDA_INIT);
	return s && strcmp(s, "ok") == 0;
}

/* Some sign that the NVIDIA driver is there: otherwise gpu.none / driver.not-loaded speak. */
static bool driver_present(const facts *f)
{
	const fact *kmod = facts_get(f, FK_HARDWARE_KERNEL_MODULE_VERSION);
	return (kmod && kmod->state != FACT_ABSENT) || facts_true(f, FK_HARDWARE_MODULE, "nvidia") ||
	       facts_int_or(f, 0, FK_NVML_DEVICE_COUNT) > 0 || facts_true(f, FK_DEVICES_NVIDIACTL);
}

static int gpu_nodes_present(const facts *f)
{
	long long present;
	if (facts_int(f, &present, FK_DEVICES_GPU_PRESENT))
		return (int)present;
	int n = 0;
	for (int k = 0; k < facts_int_or(f, 0, FK_DEVICES_GPU_COUNT); k++)
		n += facts_true(f, FK_DEVICES_GPU(d), k);
	return n;
}

/* /dev could not be listed: how many nodes exist is unknown (files.unreadable says why), never 0. */
static bool nodes_unknown(const facts *f)
{
	return fact_seen_but_unknown(facts_get(f, FK_DEVICES_GPU_COUNT));
}

/* A container without any NVIDIA node is container.no-gpu's case. */
static bool container_without_nodes(const facts *f)
{
	return facts_true(f, FK_CONTAINER_INSIDE) && !facts_true(f, FK_DEVICES_NVIDIACTL) && gpu_nodes_present(f) == 0 &&
	       !nodes_unknown(f);
}

static void uvm_missing(rule_ctx *c)
{
	const facts *f = c->facts;
	if (facts_true(f, FK_DEVICES_DXG) || !driver_present(f) || container_without_nodes(f))
		return; /* WSL 2 has no nvidia-uvm node */
	bool node = facts_true(f, FK_DEVICES_NVIDIA_UVM);
	const fact *mod = facts_get(f, FK_HARDWARE_MODULE, "nvidia_uvm");
	bool mod_known = mod && mod->state == FACT_OK;
	bool mod_loaded = mod_known && facts_true(f, FK_HARDWARE_MODULE, "nvidia_uvm");
	if (node && (!mod_known || mod_loaded))
		return;
	if (cuda_init_ok(f))
		return; /* cuInit loaded it on demand (nvidia-modprobe), and CUDA works */
	bool inside = facts_true(f, FK_CONTAINER_INSIDE);
	const fact *init = facts_get(f, FK_CUDA_INIT);
	bool init_failed = init && init->state == FACT_ERROR;
	bool on_demand = !inside && facts_true(f, FK_DEVICES_NVIDIA_MODPROBE_SETUID);
	finding *x;
	if (!init_failed && on_demand)
		x = rule_emit_sev(c, SEV_INFO, "nvidia-uvm is not loaded yet; nvidia-modprobe will load it at the first CUDA use");
	else
		x = rule_emit(c, "the nvidia-uvm kernel module or its device node is missing: CUDA cannot initialise");
	if (!node) {
		const char *type = facts_str(f, FK_DEVICES_NODE_TYPE, "nvidia_uvm");
		finding_evidence(x, "/dev/nvidia-uvm %s", type && strstr(type, "symlink") ? type : "does not exist");
	}
	if (mod_known && !mod_loaded)
		finding_evidence(x, "nvidia_uvm is not listed in /proc/modules");
	if (init_failed)
		finding_evidence(x, "cuInit failed: %s", init->error ? init->error : "(no detail)");
	if (on_demand)
		finding_evidence(x, "%s is installed setuid root: it loads the module and creates the node when a "
				    "CUDA program starts", facts_str(f, FK_DEVICES_NVIDIA_MODPROBE));
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

/* The node's name in its facts' keys: "nvidiactl" of devices.nvidiactl, "gpu.0" of devices.gpu.0. */
static const char *node_name(const char *key)
{
	return str_starts(key, "devices.") ? key + strlen("devices.") : key;
}

static void check_node(const facts *f, const char *prefix, denied *d)
{
	const char *node = node_name(prefix);
	if (!facts_true(f, "%s", prefix))
		return;
	const fact *acc = facts_get(f, FK_DEVICES_NODE_ACCESS, node);
	if (!acc || acc->state != FACT_OK || acc->i)
		return;
	const char *path = facts_str(f, FK_DEVICES_NODE_PATH, node);
	const char *mode = facts_str(f, FK_DEVICES_NODE_MODE, node);
	const char *group = facts_str(f, FK_DEVICES_NODE_GROUP, node);
	long long gid = facts_int_or(f, -1, FK_DEVICES_NODE_GID, node);
	char gname[64];
	if (group)
		snprintf(gname, sizeof(gname), "%s", group);
	else
		snprintf(gname, sizeof(gname), "%lld", gid);
	unsigned m = 0;
	if (mode)
		sscanf(mode, "%o", &m);
	sl_pushf(&d->lines, "%s: mode %s, owner uid %lld, group %s (gid %lld); can read: %s, can write: %s",
		 path ? path : prefix, mode ? mode : "?", facts_int_or(f, -1, FK_DEVICES_NODE_UID, node), gname, gid,
		 facts_true(f, FK_DEVICES_NODE_READ, node) ? "yes" : "no", facts_true(f, FK_DEVICES_NODE_WRITE, node) ? "yes" : "no");
	if ((m & 060) == 060 && gid != 0) { /* the group may: join it */
		if (facts_true(f, FK_DEVICES_NODE_USER_LISTED, node)) {
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
	if (facts_int_or(f, -1, FK_DEVICES_USER_UID) == 0)
		return; /* root may always */
	denied d = {{0}, {0}, {0}, {0}};
	check_node(f, FK_DEVICES_NVIDIACTL, &d);
	check_node(f, FK_DEVICES_NVIDIA_UVM, &d);
	for (int k = 0; k < facts_int_or(f, 0, FK_DEVICES_GPU_COUNT); k++) {
		char p[48];
		snprintf(p, sizeof(p), FK_DEVICES_GPU(d), k);
		check_node(f, p, &d);
	}
	if (d.lines.n) {
		finding *x = rule_emit(c, "this user cannot open the NVIDIA device nodes, which CUDA and NVML must open");
		for (size_t i = 0; i < d.lines.n; i++)
			finding_evidence(x, "%s", d.lines.v[i]);
		const char *user = facts_str(f, FK_DEVICES_USER_NAME);
		const char *groups = facts_str(f, FK_DEVICES_USER_GROUPS);
		finding_evidence(x, "you are uid %lld%s%s%s, groups %s", facts_int_or(f, -1, FK_DEVICES_USER_UID),
				 user ? " (" : "", user ? user : "", user ? ")" : "",
				 groups && *groups ? groups : (facts_str(f, FK_DEVICES_USER_GIDS) ? facts_str(f, FK_DEVICES_USER_GIDS) : "?"));
		for (size_t i = 0; i < d.groups.n; i++)
			finding_fix(x, "sudo usermod -aG %s $USER   (then log out and back in)",
				    shell_word_or_comment((char[512]){0}, 512, "the group", d.groups.v[i]));
		for (size_t i = 0; i < d.relogin.n; i++)
			finding_fix(x, "you are already listed in group %s, but this login started before that: log out and "
				       "back in, or run `newgrp %s`", d.relogin.v[i], d.relogin.v[i]);
		if (d.paths.n) {
			strbuf all;
			sb_init(&all);
			bool quoted = true;
			for (size_t i = 0; i < d.paths.n && quoted; i++) {
				sb_addc(&all, ' ');
				quoted = sb_add_shell_word(&all, d.paths.v[i]);
			}
			if (quoted)
				finding_fix(x, "now (until reboot): sudo chmod 0666%s", all.buf);
			finding_fix(x, "for good, a udev rule: echo 'KERNEL==\"nvidia*\", MODE=\"0666\"' | sudo tee "
				       "/etc/udev/rules.d/70-nvidia-permissions.rules; or the driver's own option: echo "
				       "'options nvidia NVreg_DeviceFileMode=0666' | sudo tee /etc/modprobe.d/nvidia-permissions.conf "
				       "&& sudo update-initramfs -u; then reboot");
			sb_free(&all);
		}
		if (facts_true(f, FK_CONTAINER_INSIDE))
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
	if (!facts_int(f, &ngpus, FK_NVML_DEVICE_COUNT) || ngpus <= 0)
		return;
	int present = gpu_nodes_present(f);
	if (present >= ngpus || facts_true(f, FK_DEVICES_DXG) || nodes_unknown(f))
		return;
	finding *x = rule_emit(c, "NVML reports %lld GPU%s but only %d /dev/nvidiaN node%s exist%s", ngpus,
			       ngpus == 1 ? "" : "s", present, present == 1 ? "" : "s", present == 1 ? "s" : "");
	strbuf have;
	sb_init(&have);
	for (int k = 0; k < facts_int_or(f, 0, FK_DEVICES_GPU_COUNT); k++)
		if (facts_true(f, FK_DEVICES_GPU(d), k))
			sb_addf(&have, "%s/dev/nvidia%lld", have.len ? ", " : "", facts_int_or(f, k, FK_DEVICES_GPU_MINOR(d), k));
	finding_evidence(x, "device nodes: %s", have.len ? have.buf : "none");
	sb_free(&have);
	strbuf missing;
	sb_init(&missing);
	for (long long i = 0; i < ngpus && i < 64; i++) {
		long long minor;
		if (!facts_int(f, &minor, FK_NVML_GPU_MINOR_NUMBER(lld), i))
			continue;
		bool found = false;
		for (int k = 0; k < facts_int_or(f, 0, FK_DEVICES_GPU_COUNT) && !found; k++)
			found = facts_true(f, FK_DEVICES_GPU(d), k) && facts_int_or(f, -1, FK_DEVICES_GPU_MINOR(d), k) == minor;
		if (!found) {
			const char *name = facts_str(f, FK_NVML_GPU_NAME(lld), i);
			finding_evidence(x, "GPU %lld (%s, minor number %lld) has no /dev/nvidia%lld", i, name ? name : "?",
					 minor, minor);
			sb_addf(&missing, "%s%lld", missing.len ? " " : "", minor);
		}
	}
	if (facts_true(f, FK_CONTAINER_INSIDE)) {
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

/* ---- dev.wrong-node: a /dev/nvidia* path that is not the NVIDIA driver's device ---------- */

/* The nodes and the device numbers the driver gives them (NV_MAJOR_DEVICE_NUMBER 195 is fixed;
 * nvidia-uvm's and nvidia-caps' majors are dynamic, read from /proc/devices). minor -1: any. */
typedef struct node_kind {
	const char *prefix, *major_key, *module;
	int major_default, minor;
} node_kind;

static const node_kind NODE_KINDS[] = {
	{FK_DEVICES_NVIDIACTL, FK_DEVICES_MAJOR_NVIDIA, "nvidia", 195, 255},
	{FK_DEVICES_NVIDIA_MODESET, FK_DEVICES_MAJOR_NVIDIA, "nvidia-modeset", 195, 254},
	{FK_DEVICES_NVIDIA_UVM, FK_DEVICES_MAJOR_NVIDIA_UVM, "nvidia-uvm", -1, 0},
	{FK_DEVICES_NVIDIA_UVM_TOOLS, FK_DEVICES_MAJOR_NVIDIA_UVM, "nvidia-uvm", -1, 1},
};

/* What a char node of another driver usually is: the memory devices a runtime binds by mistake. */
static const char *known_node(long long maj, long long min)
{
	static const struct {
		int maj, min;
		const char *path;
	} known[] = {{1, 3, "/dev/null"}, {1, 5, "/dev/zero"}, {1, 7, "/dev/full"}, {1, 8, "/dev/random"},
		     {1, 9, "/dev/urandom"}, {5, 0, "/dev/tty"}, {5, 1, "/dev/console"}, {5, 2, "/dev/ptmx"}};
	for (size_t i = 0; i < GV_ARRAY_LEN(known); i++)
		if (known[i].maj == maj && known[i].min == min)
			return known[i].path;
	return NULL;
}

/* Judges one present node; appends an evidence line to bad when it is not the driver's. */
static bool judge_node(const facts *f, const char *prefix, const char *major_key, const char *module,
		       int major_default, long long want_minor, strlist *bad, strlist *paths)
{
	const char *node = node_name(prefix);
	if (!facts_true(f, "%s", prefix))
		return false;
	const char *type = facts_str(f, FK_DEVICES_NODE_TYPE, node);
	const char *path = facts_str(f, FK_DEVICES_NODE_PATH, node);
	if (!type || !path)
		return false;
	long long want_major = facts_int_or(f, major_default, "%s", major_key);
	char want[96];
	if (want_major >= 0 && want_minor >= 0)
		snprintf(want, sizeof(want), "char %lld:%lld (%s)", want_major, want_minor, module);
	else if (want_major >= 0)
		snprintf(want, sizeof(want), "a char node of major %lld (%s)", want_major, module);
	else
		snprintf(want, sizeof(want), "a char node of the %s driver", module);
	if (strcmp(type, "char") != 0) {
		if (strcmp(type, "block") != 0 && facts_true(f, FK_DEVICES_TREE))
			return false; /* a --root tree's plain files stand in for the nodes */
		sl_pushf(bad, "%s is a %s%s, not a character device; it should be %s", path,
			 strcmp(type, "file") == 0 ? "regular file" : strcmp(type, "dir") == 0 ? "directory" : type,
			 strcmp(type, "block") == 0 ? " device" : "", want);
		sl_push(paths, path);
		return true;
	}
	long long maj, min;
	if (!facts_int(f, &maj, FK_DEVICES_NODE_RDEV_MAJOR, node) || !facts_int(f, &min, FK_DEVICES_NODE_RDEV_MINOR, node))
		return false;
	const char *drv = facts_str(f, FK_DEVICES_NODE_RDEV_DRIVER, node);
	bool wrong = (want_major >= 0 && maj != want_major) || (want_minor >= 0 && min != want_minor) ||
		     (drv && strncmp(drv, "nvidia", 6) != 0);
	if (!wrong)
		return false;
	const char *other = known_node(maj, min);
	const char *mnt = facts_str(f, FK_DEVICES_NODE_MOUNTED, node);
	sl_pushf(bad, "%s is char %lld:%lld%s%s%s%s%s%s, but it should be %s%s%s%s", path, maj, min, drv ? " (major of \"" : "",
		 drv ? drv : "", drv ? "\" in /proc/devices" : "", other ? ": that is " : "", other ? other : "",
		 drv ? ")" : "", want, mnt ? "; it is a mount (" : "", mnt ? mnt : "", mnt ? "), a bind mount of another file" : "");
	sl_push(paths, path);
	return true;
}

static void wrong_node(rule_ctx *c)
{
	const facts *f = c->facts;
	strlist bad = {0}, paths = {0};
	for (int k = 0; k < facts_int_or(f, 0, FK_DEVICES_GPU_COUNT) && k < 256; k++) {
		char p[48];
		snprintf(p, sizeof(p), FK_DEVICES_GPU(d), k);
		judge_node(f, p, FK_DEVICES_MAJOR_NVIDIA, "nvidia", 195, facts_int_or(f, -1, FK_DEVICES_GPU_MINOR(d), k), &bad,
			   &paths);
	}
	for (size_t i = 0; i < GV_ARRAY_LEN(NODE_KINDS); i++)
		judge_node(f, NODE_KINDS[i].prefix, NODE_KINDS[i].major_key, NODE_KINDS[i].module, NODE_KINDS[i].major_default,
			   NODE_KINDS[i].minor, &bad, &paths);
	for (int k = 0; k < facts_int_or(f, 0, FK_DEVICES_CAPS_COUNT) && k < 64; k++) {
		char p[48];
		snprintf(p, sizeof(p), FK_DEVICES_CAPS(d), k);
		judge_node(f, p, FK_DEVICES_MAJOR_NVIDIA_CAPS, "nvidia-caps", -1, -1, &bad, &paths);
	}
	if (bad.n) {
		strbuf all, words;
		sb_init(&all);
		sb_init(&words);
		for (size_t i = 0; i < paths.n; i++) {
			sb_addf(&all, "%s%s", i ? ", " : "", paths.v[i]);
			sb_addf(&words, "%s%s", i ? " " : "", paths.v[i]);
		}
		finding *x = rule_emit(c, "%s %s not the NVIDIA driver's device node%s: CUDA and NVML cannot reach the GPU "
					  "through %s", all.buf, paths.n == 1 ? "is" : "are", paths.n == 1 ? "" : "s",
				       paths.n == 1 ? "it" : "them");
		for (size_t i = 0; i < bad.n; i++)
			finding_evidence(x, "%s", bad.v[i]);
		finding_evidence(x, "a program that opens such a path fails or reaches another device: cuInit and nvmlInit then "
				    "report no device or an unknown error, and PyTorch no GPU");
		if (facts_true(f, FK_CONTAINER_INSIDE)) {
			finding_fix(x, "the container runtime set up the wrong node: recreate the container with --gpus all "
				       "(or --device nvidia.com/gpu=all with CDI), not with -v or --device paths of your own");
			finding_fix(x, "on the host, regenerate a stale CDI spec (a driver upgrade changes the nodes): sudo nvidia-ctk "
				       "cdi generate --output=/etc/cdi/nvidia.yaml");
		} else {
			finding_fix(x, "if it is a mount (findmnt %s lists it): sudo umount %s", paths.v[0], paths.v[0]);
			finding_fix(x, "otherwise remove it and let the driver create the right one: sudo rm %s && sudo "
				       "nvidia-modprobe -c=0 -u   (-c=N for /dev/nvidiaN; or reboot: udev recreates the nodes)", words.buf);
		}
		x->rank = 0;
		sb_free(&all);
		sb_free(&words);
	}
	sl_free(&bad);
	sl_free(&paths);
}

const rule rules_devices[] = {
	{"driver.uvm-missing", "devices", SEV_FAIL, FK_DEVICES_NVIDIA_UVM, uvm_missing,
	 "/dev/nvidia-uvm missing or nvidia_uvm not loaded", .root_cause = 8},
	{"dev.permission", "devices", SEV_FAIL, FK_DEVICES_NVIDIACTL " " FK_DEVICES_USER_UID, dev_permission,
	 "the NVIDIA device nodes are not readable and writable by this user", .root_cause = 9},
	{"dev.count-mismatch", "devices", SEV_WARN, FK_DEVICES_GPU_COUNT " " FK_NVML_DEVICE_COUNT, count_mismatch,
	 "fewer /dev/nvidiaN nodes than GPUs reported by NVML"},
	{"dev.wrong-node", "devices", SEV_FAIL, FK_DEVICES_NVIDIACTL, wrong_node,
	 "a /dev/nvidia* path that is not the driver's device (another device number, a file, /dev/null bound over it)", .root_cause = 10},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
