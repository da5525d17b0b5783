/*
 * Pure helpers of the devices and container probes: file-mode access, /etc/group and
 * /etc/passwd lookups, /proc/mounts, WSL kernel strings, container markers, container-runtime
 * configuration files. No I/O here: the probes read the files (through sysroot) and pass the
 * text, so everything is unit-tested and fuzzed on its own. Every input is untrusted.
 */
#ifndef GPUVET_SYSPARSE_H
#define GPUVET_SYSPARSE_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/util.h"

enum { ACCESS_READ = 4, ACCESS_WRITE = 2 };

/* Whether a process with uid and the groups gids (its primary group included) may read and/or
 * write (want = ACCESS_READ | ACCESS_WRITE) a file of mode, owned by fuid:fgid, going by the mode
 * bits alone (no ACLs). uid 0 always may. The owner class is judged by the owner bits alone,
 * as the kernel does: an owner without rw is refused even if the group has it. */
bool mode_allows(unsigned mode, uid_t fuid, gid_t fgid, uid_t uid, const gid_t *gids, size_t ngids, int want);

/* /etc/group: the name of gid (into name) and its member list; false when not found. */
bool group_by_gid(const char *text, gid_t gid, char *name, size_t n, strlist *members);
/* /etc/passwd: the name of uid; false when not found. */
bool passwd_name(const char *text, uid_t uid, char *name, size_t n);

/* /proc/devices: the major the driver name registered in the "Character devices:" section, -1
 * when none; and the name that registered a major (char, or block when block), false if none. */
long long proc_devices_major(const char *text, const char *name);
bool proc_devices_name(const char *text, bool block, unsigned major, char *name, size_t n);

/* /proc/mounts: the last entry mounted on mountpoint; its type and options. */
bool mounts_find(const char *text, const char *mountpoint, char *fstype, size_t ftn, char *opts, size_t on);
/* "rw,nosuid,size=65536k,mode=1777" -> 67108864; false when there is no size= (or garbage). */
bool mount_opt_size(const char *opts, unsigned long long *bytes);

/* WSL from /proc/sys/kernel/osrelease and /proc/version (either may be NULL): 0 not WSL, 1 WSL 1
 * ("4.4.0-19041-Microsoft"), 2 WSL 2 ("5.15.153.1-microsoft-standard-WSL2"). has_dxg (the
 * /dev/dxg of WSL 2) decides when the strings do not. */
int wsl_version(const char *osrelease, const char *proc_version, bool has_dxg);

/* The container engine named in a /proc/PID/cgroup text ("docker", "kubernetes", "podman",
 * "containerd", "lxc"), NULL when none. */
const char *cgroup_container_kind(const char *text);
/* The value of container= in a NUL-separated /proc/1/environ (copied into out); false if none. */
bool environ_container(const char *data, size_t len, char *out, size_t n);

/* /etc/docker/daemon.json: 0 parsed (*nvidia: a runtime named "nvidia" is declared; default
 * runtime copied into def, "" when not set), -1 not JSON or not an object. */
int docker_daemon_nvidia(const char *text, size_t len, bool *nvidia, char *def, size_t n);
/* containerd's config.toml: whether an nvidia runtime table is declared, and whether it is the
 * default runtime (default_runtime_name = "nvidia"). Comments are ignored. */
bool containerd_nvidia(const char *text, bool *is_default);
/* A CDI spec (YAML or JSON): its "kind" ("nvidia.com/gpu") into kind; false when none. */
bool cdi_spec_kind(const char *text, size_t len, char *kind, size_t n);
#endif
