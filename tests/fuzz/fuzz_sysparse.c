/* The devices/container probes' parsers of files read from the machine: /etc/group,
 * /etc/passwd, /proc/mounts, kernel release strings, cgroup and environ files, Docker's
 * daemon.json, containerd's config.toml, CDI specs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probes/sysparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	char name[32], type[16], opts[128];
	strlist members = {0};
	(void)group_by_gid(s, 44, name, sizeof(name), &members);
	sl_free(&members);
	(void)passwd_name(s, 1000, name, sizeof(name));
	if (mounts_find(s, "/dev/shm", type, sizeof(type), opts, sizeof(opts))) {
		unsigned long long b;
		(void)mount_opt_size(opts, &b);
	}
	unsigned long long b;
	(void)mount_opt_size(s, &b);
	(void)wsl_version(s, s, size & 1);
	(void)cgroup_container_kind(s);
	(void)environ_container((const char *)data, size, name, sizeof(name));
	bool nv, def_nv;
	(void)docker_daemon_nvidia(s, size, &nv, name, sizeof(name));
	(void)containerd_nvidia(s, &def_nv);
	(void)cdi_spec_kind(s, size, name, sizeof(name));
	long long m = proc_devices_major(s, "nvidia-uvm");
	if (m < -1 || m >= (1LL << 20))
		abort();
	(void)proc_devices_name(s, size & 1, (unsigned)(size & 511), name, sizeof(name));
	free(s);
	return 0;
}
