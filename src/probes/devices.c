/*
 * Device nodes: /dev/nvidiactl, /dev/nvidiaN, /dev/nvidia-uvm(-tools), /dev/nvidia-modeset,
 * the nodes in /dev/nvidia-caps, /dev/dxg (WSL 2). For each: type, mode, owner and group, and whether
 * this process may read and write it, judged from the mode bits against its uid and groups
 * (root always may). Nodes are never opened: in test trees they are plain files (devices.tree).
 * A character node's device number is recorded with the driver that owns its major in
 * /proc/devices, so a node bound to /dev/null (1:3, "mem") is told from the GPU's (195:N).
 *
 * Facts: devices.*  (see docs/facts/sysprobes.md)
 */
#include <errno.h>
#include <stdio.h>
#include <sys/sysmacros.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/factkeys.h"
#include "core/sysroot.h"
#include "probes/probes.h"
#include "probes/sysparse.h"

#define MAX_GPU_NODES 256
#define MAX_CAP_NODES 64

typedef struct user_ids {
	uid_t uid;
	char name[64];    /* from the root's /etc/passwd, "" when unknown */
	gid_t *gids;
	size_t ngids;
	char *group_text; /* the root's /etc/group, NULL when unreadable */
	char *proc_devices; /* /proc/devices, NULL when unreadable */
	char *mounts;       /* /proc/self/mounts: a node can be a bind mount of another file */
} user_ids;

static const char *type_name(mode_t m)
{
	if (S_ISCHR(m))
		return "char";
	if (S_ISBLK(m))
		return "block";
	if (S_ISREG(m))
		return "file";
	if (S_ISDIR(m))
		return "dir";
	return "other";
}

/* Records one node under prefix ("devices.nvidiactl", "devices.gpu.0"); returns true when it
 * exists (a symlink is followed; a dangling one does not exist). */
/* stat that resolves symlinks inside the examined root (an absolute link in a --root tree
 * must not reach the host's /dev). */
static int node_stat(const char *path, struct stat *st)
{
	struct stat lst;
	if (!sysroot_active() || sysroot_lstat(path, &lst) != 0 || !S_ISLNK(lst.st_mode))
		return sysroot_stat(path, st);
	char *real = sysroot_realpath(path);
	if (!real)
		return -1;
	int rc = sysroot_stat(real, st);
	int e = errno;
	free(real);
	errno = e;
	return rc;
}

/* The node's name in its facts' keys: "nvidiactl" of devices.nvidiactl, "gpu.0" of devices.gpu.0. */
static const char *node_name(const char *key)
{
	return str_starts(key, "devices.") ? key + strlen("devices.") : key;
}

static bool node_facts(facts *f, const user_ids *u, const char *path, const char *prefix)
{
	const char *node = node_name(prefix);
	struct stat st, lst;
	if (node_stat(path, &st) != 0) {
		int e = errno;
		if (sysroot_lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
			char *target = sysroot_readlink(path);
			facts_put_bool(f, path, false, "%s", prefix);
			facts_put_str(f, path, e == ELOOP ? "symlink loop" : "dangling symlink", FK_DEVICES_NODE_TYPE, node);
			if (target) {
				str_sanitize(target);
				facts_put_str(f, path, target, FK_DEVICES_NODE_TARGET, node);
				free(target);
			}
		} else if (e == ENOENT || e == ENOTDIR) {
			facts_put_bool(f, path, false, "%s", prefix);
		} else {
			facts_put_state(f, FACT_ERROR, path, strerror(e), "%s", prefix);
		}
		return false;
	}
	facts_put_bool(f, path, true, "%s", prefix);
	facts_put_str(f, path, path, FK_DEVICES_NODE_PATH, node);
	facts_put_str(f, path, type_name(st.st_mode), FK_DEVICES_NODE_TYPE, node);
	char mode[8];
	snprintf(mode, sizeof(mode), "%04o", (unsigned)(st.st_mode & 07777));
	facts_put_str(f, path, mode, FK_DEVICES_NODE_MODE, node);
	facts_put_int(f, path, (long long)st.st_uid, FK_DEVICES_NODE_UID, node);
	facts_put_int(f, path, (long long)st.st_gid, FK_DEVICES_NODE_GID, node);
	char gname[64];
	strlist members = {0};
	if (group_by_gid(u->group_text, st.st_gid, gname, sizeof(gname), &members)) {
		facts_put_str(f, "/etc/group", gname, FK_DEVICES_NODE_GROUP, node);
		/* listed in /etc/group but not among this process's groups: a login that predates
		 * `usermod -aG` */
		facts_put_bool(f, "/etc/group", u->name[0] && sl_contains(&members, u->name), FK_DEVICES_NODE_USER_LISTED, node);
		sl_free(&members);
	} else
		facts_put_state(f, FACT_ABSENT, "/etc/group", "gid not in /etc/group", FK_DEVICES_NODE_GROUP, node);
	bool r = mode_allows(st.st_mode, st.st_uid, st.st_gid, u->uid, u->gids, u->ngids, ACCESS_READ);
	bool w = mode_allows(st.st_mode, st.st_uid, st.st_gid, u->uid, u->gids, u->ngids, ACCESS_WRITE);
	facts_put_bool(f, "mode bits", r, FK_DEVICES_NODE_READ, node);
	facts_put_bool(f, "mode bits", w, FK_DEVICES_NODE_WRITE, node);
	facts_put_bool(f, "mode bits", r && w, FK_DEVICES_NODE_ACCESS, node);
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		unsigned maj = major(st.st_rdev), min = minor(st.st_rdev);
		facts_put_int(f, path, (long long)maj, FK_DEVICES_NODE_RDEV_MAJOR, node);
		facts_put_int(f, path, (long long)min, FK_DEVICES_NODE_RDEV_MINOR, node);
		char drv[64];
		if (u->proc_devices && proc_devices_name(u->proc_devices, S_ISBLK(st.st_mode), maj, drv, sizeof(drv)))
			facts_put_str(f, "/proc/devices", drv, FK_DEVICES_NODE_RDEV_DRIVER, node);
		else
			facts_put_state(f, FACT_ABSENT, "/proc/devices", "major not registered", FK_DEVICES_NODE_RDEV_DRIVER, node);
	}
	char fstype[64], opts[256];
	if (u->mounts && mounts_find(u->mounts, path, fstype, sizeof(fstype), opts, sizeof(opts)))
		facts_put_str(f, "/proc/self/mounts", fstype, FK_DEVICES_NODE_MOUNTED, node);
	return true;
}

/* The char majors the NVIDIA modules registered (dynamic for nvidia-uvm and nvidia-caps). */
static void major_facts(facts *f, const user_ids *u)
{
	static const struct {
		const char *names[2], *key; /* older drivers called 195 nvidia-frontend */
	} drivers[] = {
		{{"nvidia", "nvidia-frontend"}, FK_DEVICES_MAJOR_NVIDIA},
		{{"nvidia-uvm", NULL}, FK_DEVICES_MAJOR_NVIDIA_UVM},
		{{"nvidia-caps", NULL}, FK_DEVICES_MAJOR_NVIDIA_CAPS},
	};
	for (size_t i = 0; i < GV_ARRAY_LEN(drivers); i++) {
		long long m = -1;
		for (size_t k = 0; k < 2 && m < 0 && u->proc_devices && drivers[i].names[k]; k++)
			m = proc_devices_major(u->proc_devices, drivers[i].names[k]);
		if (m >= 0)
			facts_put_int(f, "/proc/devices", m, "%s", drivers[i].key);
		else
			facts_put_state(f, FACT_ABSENT, "/proc/devices", u->proc_devices ? "not registered" : "unreadable",
					"%s", drivers[i].key);
	}
}

static void user_facts(facts *f, user_ids *u)
{
	u->uid = geteuid();
	int n = getgroups(0, NULL);
	if (n < 0 || n > 65536)
		n = 0;
	u->gids = xcalloc((size_t)n + 1, sizeof(gid_t));
	int got = n ? getgroups(n, u->gids) : 0;
	u->ngids = got > 0 ? (size_t)got : 0;
	gid_t egid = getegid();
	bool have = false;
	for (size_t i = 0; i < u->ngids; i++)
		have |= u->gids[i] == egid;
	if (!have)
		u->gids[u->ngids++] = egid;

	if (sysroot_read("/etc/group", 4 << 20, &u->group_text, NULL, NULL) < 0)
		u->group_text = NULL;
	facts_put_int(f, "geteuid", (long long)u->uid, FK_DEVICES_USER_UID);
	char *passwd = NULL;
	if (sysroot_read("/etc/passwd", 4 << 20, &passwd, NULL, NULL) == 0 &&
	    passwd_name(passwd, u->uid, u->name, sizeof(u->name)))
		facts_put_str(f, "/etc/passwd", u->name, FK_DEVICES_USER_NAME);
	else
		facts_put_state(f, FACT_ABSENT, "/etc/passwd", "uid not in /etc/passwd", FK_DEVICES_USER_NAME);
	free(passwd);
	strbuf ids, names;
	sb_init(&ids);
	sb_init(&names);
	for (size_t i = 0; i < u->ngids; i++) {
		sb_addf(&ids, "%s%u", i ? "," : "", (unsigned)u->gids[i]);
		char g[64];
		if (group_by_gid(u->group_text, u->gids[i], g, sizeof(g), NULL))
			sb_addf(&names, "%s%s", names.len ? "," : "", g);
	}
	facts_put_str(f, "getgroups", ids.buf ? ids.buf : "", FK_DEVICES_USER_GIDS);
	facts_put_str(f, "/etc/group", names.buf ? names.buf : "", FK_DEVICES_USER_GROUPS);
	sb_free(&ids);
	sb_free(&names);
}

static int minor_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* /dev/nvidiaN: names "nvidia" + digits only (not nvidiactl, nvidia-uvm, nvidia-caps). */
static void gpu_nodes(facts *f, const user_ids *u)
{
	DIR *d = sysroot_opendir("/dev");
	if (!d) {
		facts_put_read_error(f, "/dev", -errno, NULL, FK_DEVICES_GPU_COUNT);
		return;
	}
	int minors[MAX_GPU_NODES];
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < MAX_GPU_NODES) {
		const char *s = de->d_name;
		if (strncmp(s, "nvidia", 6) != 0 || !s[6] || strlen(s + 6) > 3 || strspn(s + 6, "0123456789") != strlen(s + 6))
			continue;
		minors[n++] = atoi(s + 6);
	}
	closedir(d);
	qsort(minors, (size_t)n, sizeof(int), minor_cmp);
	int present = 0;
	for (int k = 0; k < n; k++) {
		char path[32], prefix[32];
		snprintf(path, sizeof(path), "/dev/nvidia%d", minors[k]);
		snprintf(prefix, sizeof(prefix), FK_DEVICES_GPU(d), k);
		facts_put_int(f, path, minors[k], FK_DEVICES_GPU_MINOR(d), k);
		if (node_facts(f, u, path, prefix))
			present++;
	}
	facts_put_int(f, "/dev", n, FK_DEVICES_GPU_COUNT);
	facts_put_int(f, "/dev", present, FK_DEVICES_GPU_PRESENT);
}

static void cap_nodes(facts *f, const user_ids *u)
{
	const char *dir = "/dev/nvidia-caps";
	DIR *d = sysroot_opendir(dir);
	if (!d) {
		facts_put_read_error(f, dir, -errno, NULL, FK_DEVICES_CAPS_COUNT);
		return;
	}
	strlist names = {0};
	struct dirent *de;
	while ((de = readdir(d)) && names.n < MAX_CAP_NODES)
		if (de->d_name[0] != '.')
			sl_push(&names, de->d_name);
	closedir(d);
	for (size_t i = 0; i < names.n; i++) {
		char path[512], prefix[48];
		snprintf(path, sizeof(path), "%s/%s", dir, names.v[i]);
		snprintf(prefix, sizeof(prefix), FK_DEVICES_CAPS(zu), i);
		node_facts(f, u, path, prefix);
	}
	facts_put_int(f, dir, (long long)names.n, FK_DEVICES_CAPS_COUNT);
	sl_free(&names);
}

void probe_devices(facts *f, const probe_opts *o)
{
	(void)o;
	user_ids u = {0};
	user_facts(f, &u);
	if (sysroot_read("/proc/devices", 1 << 20, &u.proc_devices, NULL, NULL) < 0)
		u.proc_devices = NULL;
	major_facts(f, &u);
	if (sysroot_read("/proc/self/mounts", 4 << 20, &u.mounts, NULL, NULL) < 0 &&
	    sysroot_read("/proc/mounts", 4 << 20, &u.mounts, NULL, NULL) < 0)
		u.mounts = NULL;
	if (sysroot_active()) /* a --root tree: its nodes may be plain files standing in for devices */
		facts_put_bool(f, "--root", true, FK_DEVICES_TREE);
	static const struct {
		const char *path, *key;
	} fixed[] = {
		{"/dev/nvidiactl", FK_DEVICES_NVIDIACTL},
		{"/dev/nvidia-uvm", FK_DEVICES_NVIDIA_UVM},
		{"/dev/nvidia-uvm-tools", FK_DEVICES_NVIDIA_UVM_TOOLS},
		{"/dev/nvidia-modeset", FK_DEVICES_NVIDIA_MODESET},
		{"/dev/dxg", FK_DEVICES_DXG},
	};
	for (size_t i = 0; i < GV_ARRAY_LEN(fixed); i++)
		node_facts(f, &u, fixed[i].path, fixed[i].key);
	gpu_nodes(f, &u);
	cap_nodes(f, &u);

	/* nvidia-modprobe (setuid root) creates missing nodes and loads nvidia-uvm on first CUDA use */
	static const char *const modprobe[] = {"/usr/bin/nvidia-modprobe", "/usr/sbin/nvidia-modprobe",
					       "/bin/nvidia-modprobe"};
	bool found = false;
	for (size_t i = 0; i < GV_ARRAY_LEN(modprobe) && !found; i++) {
		struct stat st;
		if (sysroot_stat(modprobe[i], &st) == 0 && S_ISREG(st.st_mode)) {
			found = true;
			facts_put_str(f, modprobe[i], modprobe[i], FK_DEVICES_NVIDIA_MODPROBE);
			facts_put_bool(f, modprobe[i], (st.st_mode & S_ISUID) != 0, FK_DEVICES_NVIDIA_MODPROBE_SETUID);
		}
	}
	if (!found)
		facts_put_state(f, FACT_ABSENT, "/usr/bin/nvidia-modprobe", "not installed", FK_DEVICES_NVIDIA_MODPROBE);
	free(u.gids);
	free(u.group_text);
	free(u.proc_devices);
	free(u.mounts);
}
