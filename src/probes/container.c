/*
 * Containers and platforms: are we inside a container (Docker, Podman, Kubernetes, containerd,
 * LXC) and how it shows; the size of /dev/shm; WSL 1 or 2; and on a host, whether the NVIDIA
 * container runtime or a CDI spec is configured (configuration files only: nothing is started).
 *
 * Facts: container.*  (see docs/facts/sysprobes.md)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "core/factkeys.h"
#include "core/sysroot.h"
#include "probes/probes.h"
#include "probes/sysparse.h"

#define MAX_CDI_SPECS 32
/* what says gpuvet runs in a container */
#define CONTAINER_MARKERS "/.dockerenv, /run/.containerenv, /proc/1/cgroup, /proc/self/cgroup, /proc/1/environ, KUBERNETES_SERVICE_HOST"

static void detect_container(facts *f)
{
	const char *kind = NULL, *marker = NULL;
	char buf[128];
	char *cg_marker = NULL;
	if (sysroot_exists("/.dockerenv")) {
		kind = "docker";
		marker = "/.dockerenv";
	} else if (sysroot_exists("/run/.containerenv")) {
		kind = "podman";
		marker = "/run/.containerenv";
	}
	static const char *const cgroups[] = {"/proc/1/cgroup", "/proc/self/cgroup"};
	for (size_t i = 0; i < GV_ARRAY_LEN(cgroups) && !kind; i++) {
		char *text = NULL;
		if (sysroot_read(cgroups[i], 1 << 20, &text, NULL, NULL) == 0) {
			const char *k = cgroup_container_kind(text);
			if (k) {
				kind = k;
				cg_marker = xasprintf("%s names %s", cgroups[i], k);
				marker = cg_marker;
			}
		}
		free(text);
	}
	if (!kind) {
		/* set by systemd-nspawn, LXC, Podman; readable by root only on most systems */
		char *env = NULL;
		size_t len = 0;
		if (sysroot_read_may_deny("/proc/1/environ", 1 << 20, &env, &len, NULL) == 0 &&
		    environ_container(env, len, buf, sizeof(buf))) {
			kind = buf;
			marker = "/proc/1/environ container=";
		}
		free(env);
	}
	/* a pod runs on containerd or Docker: the orchestrator is what the user deals with */
	const char *k8s = getenv("KUBERNETES_SERVICE_HOST");
	if (k8s && *k8s) {
		kind = "kubernetes";
		if (!marker)
			marker = "KUBERNETES_SERVICE_HOST is set";
	}
	facts_put_bool(f, marker ? marker : "/.dockerenv /run/.containerenv /proc/1/cgroup", kind != NULL,
		       FK_CONTAINER_INSIDE);
	if (kind) {
		facts_put_str(f, marker, kind, FK_CONTAINER_KIND);
		facts_put_str(f, CONTAINER_MARKERS, marker, FK_CONTAINER_MARKER);
	} else {
		facts_put_state(f, FACT_ABSENT, CONTAINER_MARKERS, "not in a container", FK_CONTAINER_KIND);
	}
	free(cg_marker);
}

static void shm_size(facts *f)
{
	char *mounts = NULL;
	char fstype[32] = "", opts[1024] = "";
	unsigned long long bytes = 0;
	bool mounted = sysroot_read("/proc/mounts", 4 << 20, &mounts, NULL, NULL) == 0 &&
		       mounts_find(mounts, "/dev/shm", fstype, sizeof(fstype), opts, sizeof(opts));
	free(mounts);
	if (mounted) {
		facts_put_str(f, "/proc/mounts", fstype, FK_CONTAINER_SHM_FSTYPE);
		if (mount_opt_size(opts, &bytes)) {
			facts_put_int(f, "/proc/mounts size=", (long long)bytes, FK_CONTAINER_SHM_BYTES);
			return;
		}
	}
	/* no size= option (a host's default tmpfs is half the RAM): ask the file system, which
	 * only means something on the real root */
	if (!sysroot_active()) {
		struct statvfs sv;
		if (statvfs("/dev/shm", &sv) == 0) {
			facts_put_int(f, "statvfs /dev/shm", (long long)((unsigned long long)sv.f_blocks * sv.f_frsize),
				      FK_CONTAINER_SHM_BYTES);
			return;
		}
		facts_put_state(f, errno == ENOENT ? FACT_ABSENT : FACT_ERROR, "statvfs /dev/shm", strerror(errno),
				FK_CONTAINER_SHM_BYTES);
		return;
	}
	facts_put_state(f, FACT_ABSENT, "/proc/mounts",
			mounted ? "/dev/shm has no size= option" : "/dev/shm is not in /proc/mounts", FK_CONTAINER_SHM_BYTES);
}

static void wsl(facts *f)
{
	char *release = sysroot_read_line("/proc/sys/kernel/osrelease");
	char *version = sysroot_read_line("/proc/version");
	bool dxg = sysroot_exists("/dev/dxg");
	int v = wsl_version(release, version, dxg);
	facts_put_int(f, "/proc/sys/kernel/osrelease /proc/version /dev/dxg", v, FK_CONTAINER_WSL);
	if (v) {
		facts_put_str(f, release ? "/proc/sys/kernel/osrelease" : "/proc/version",
			      release ? release : version ? version : "", FK_CONTAINER_WSL_KERNEL);
		facts_put_bool(f, "/usr/lib/wsl/lib", sysroot_is_dir("/usr/lib/wsl/lib"), FK_CONTAINER_WSL_LIB);
	}
	free(release);
	free(version);
}

static void docker_config(facts *f)
{
	const char *path = "/etc/docker/daemon.json";
	char *text = NULL;
	size_t len = 0;
	int rc = sysroot_read(path, 1 << 20, &text, &len, NULL);
	if (rc < 0) {
		facts_put_read_error(f, path, rc, strerror(-rc), FK_CONTAINER_DOCKER_NVIDIA_RUNTIME);
		return;
	}
	bool nvidia;
	char def[64];
	if (docker_daemon_nvidia(text, len, &nvidia, def, sizeof(def)) < 0) {
		facts_put_unparsable(f, path, text, len, "not a JSON object", FK_CONTAINER_DOCKER_NVIDIA_RUNTIME);
	} else {
		facts_put_bool(f, path, nvidia, FK_CONTAINER_DOCKER_NVIDIA_RUNTIME);
		if (def[0])
			facts_put_str(f, path, def, FK_CONTAINER_DOCKER_DEFAULT_RUNTIME);
	}
	free(text);
}

static void containerd_config(facts *f)
{
	const char *path = "/etc/containerd/config.toml";
	char *text = NULL;
	int rc = sysroot_read(path, 4 << 20, &text, NULL, NULL);
	if (rc < 0) {
		facts_put_read_error(f, path, rc, strerror(-rc), FK_CONTAINER_CONTAINERD_NVIDIA_RUNTIME);
		return;
	}
	bool is_default;
	bool has = containerd_nvidia(text, &is_default);
	facts_put_bool(f, path, has, FK_CONTAINER_CONTAINERD_NVIDIA_RUNTIME);
	facts_put_bool(f, path, is_default, FK_CONTAINER_CONTAINERD_NVIDIA_DEFAULT);
	free(text);
}

static void cdi_specs(facts *f)
{
	static const char *const dirs[] = {"/etc/cdi", "/var/run/cdi", "/run/cdi"};
	int n = 0;
	for (size_t i = 0; i < GV_ARRAY_LEN(dirs); i++) {
		DIR *d = sysroot_opendir(dirs[i]);
		if (!d)
			continue;
		strlist names = {0};
		struct dirent *de;
		while ((de = readdir(d)) && names.n < MAX_CDI_SPECS)
			if (str_ends(de->d_name, ".yaml") || str_ends(de->d_name, ".yml") || str_ends(de->d_name, ".json"))
				sl_push(&names, de->d_name);
		closedir(d);
		for (size_t j = 0; j < names.n && n < MAX_CDI_SPECS; j++) {
			char path[512];
			snprintf(path, sizeof(path), "%s/%s", dirs[i], names.v[j]);
			struct stat st;
			if (sysroot_stat(path, &st) != 0 || !S_ISREG(st.st_mode))
				continue;
			char *text = NULL;
			size_t len = 0;
			char kind[128];
			facts_put_str(f, path, path, FK_CONTAINER_CDI_PATH(d), n);
			int rc = sysroot_read(path, 4 << 20, &text, &len, NULL);
			if (rc == 0 && cdi_spec_kind(text, len, kind, sizeof(kind)))
				facts_put_str(f, path, kind, FK_CONTAINER_CDI_KIND(d), n);
			else if (rc == 0)
				facts_put_unparsable(f, path, text, len, "no kind: in the spec", FK_CONTAINER_CDI_KIND(d), n);
			else
				facts_put_read_error(f, path, rc, NULL, FK_CONTAINER_CDI_KIND(d), n);
			free(text);
			n++;
		}
		sl_free(&names);
	}
	facts_put_int(f, "/etc/cdi /var/run/cdi", n, FK_CONTAINER_CDI_COUNT);
}

static void runtime_files(facts *f)
{
	facts_put_bool(f, "/etc/nvidia-container-runtime/config.toml",
		       sysroot_exists("/etc/nvidia-container-runtime/config.toml"), FK_CONTAINER_NVIDIA_RUNTIME_CONFIG);
	/* the last: where the GPU Operator installs the toolkit on Kubernetes nodes */
	static const char *const bins[] = {"/usr/bin/nvidia-container-runtime", "/usr/bin/nvidia-ctk",
					   "/usr/bin/nvidia-container-toolkit", "/usr/local/bin/nvidia-ctk",
					   "/usr/local/nvidia/toolkit/nvidia-container-runtime"};
	for (size_t i = 0; i < GV_ARRAY_LEN(bins); i++)
		if (sysroot_exists(bins[i])) {
			facts_put_str(f, bins[i], bins[i], FK_CONTAINER_NVIDIA_TOOLKIT);
			return;
		}
	facts_put_state(f, FACT_ABSENT, "/usr/bin/nvidia-ctk", "NVIDIA Container Toolkit not installed",
			FK_CONTAINER_NVIDIA_TOOLKIT);
}

/* The container engines installed on this machine (binaries only: nothing is started). */
static void engines(facts *f)
{
	static const struct {
		const char *key, *bins[4];
	} eng[] = {
		{FK_CONTAINER_ENGINE_DOCKER, {"/usr/bin/docker", "/usr/bin/dockerd", "/usr/local/bin/docker", "/snap/bin/docker"}},
		{FK_CONTAINER_ENGINE_PODMAN, {"/usr/bin/podman", "/usr/local/bin/podman", NULL, NULL}},
		{FK_CONTAINER_ENGINE_CONTAINERD, {"/usr/bin/containerd", "/usr/local/bin/containerd", NULL, NULL}},
	};
	for (size_t i = 0; i < GV_ARRAY_LEN(eng); i++) {
		const char *found = NULL;
		for (size_t k = 0; k < 4 && eng[i].bins[k] && !found; k++)
			if (sysroot_exists(eng[i].bins[k]))
				found = eng[i].bins[k];
		if (found)
			facts_put_str(f, found, found, "%s", eng[i].key);
		else
			facts_put_state(f, FACT_ABSENT, eng[i].bins[0], "not installed", "%s", eng[i].key);
	}
}

/* /etc/os-release: ID, ID_LIKE, VERSION_ID (the distribution picks the install lines). */
static void os_release(facts *f)
{
	const char *path = "/etc/os-release";
	char *text = NULL;
	if (sysroot_read(path, 64 << 10, &text, NULL, NULL) < 0 &&
	    sysroot_read((path = "/usr/lib/os-release"), 64 << 10, &text, NULL, NULL) < 0) {
		facts_put_state(f, FACT_ABSENT, "/etc/os-release", strerror(errno), FK_OS_ID);
		return;
	}
	static const struct {
		const char *var, *key;
	} keys[] = {{"ID=", FK_OS_ID}, {"ID_LIKE=", FK_OS_ID_LIKE}, {"VERSION_ID=", FK_OS_VERSION_ID}};
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		for (size_t i = 0; i < GV_ARRAY_LEN(keys); i++) {
			if (strncmp(line, keys[i].var, strlen(keys[i].var)) != 0)
				continue;
			char v[128];
			str_copy(v, sizeof(v), line + strlen(keys[i].var));
			size_t n = strlen(v);
			while (n && (v[n - 1] == '\r' || v[n - 1] == ' '))
				v[--n] = '\0';
			char *t = v;
			if ((*t == '"' || *t == '\'') && n >= 2 && v[n - 1] == *t) {
				v[n - 1] = '\0';
				t++;
			}
			str_sanitize(t);
			if (*t)
				facts_put_str(f, path, t, "%s", keys[i].key);
		}
	free(text);
}

void probe_container(facts *f, const probe_opts *o)
{
	(void)o;
	detect_container(f);
	shm_size(f);
	wsl(f);
	docker_config(f);
	containerd_config(f);
	cdi_specs(f);
	runtime_files(f);
	engines(f);
	os_release(f);
}
