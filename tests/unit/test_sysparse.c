/* Unit tests of the devices/container probes' pure helpers (probes/sysparse.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "parse/klog.h"
#include <string.h>

#include "probes/sysparse.h"

static void test_mode_allows(void **s)
{
	(void)s;
	gid_t mine[] = {1000, 27};
	gid_t video[] = {1000, 44};
	int rw = ACCESS_READ | ACCESS_WRITE;
	/* root:root 0666, the driver's default */
	assert_true(mode_allows(0666, 0, 0, 1000, mine, 2, rw));
	/* root:video 0660 (NVreg_DeviceFileGID=44, NVreg_DeviceFileMode=0660) */
	assert_false(mode_allows(0660, 0, 44, 1000, mine, 2, rw));
	assert_true(mode_allows(0660, 0, 44, 1000, video, 2, rw));
	assert_true(mode_allows(0640, 0, 44, 1000, video, 2, ACCESS_READ));
	assert_false(mode_allows(0640, 0, 44, 1000, video, 2, rw));
	/* the owner class is decided first: an owner without rw is refused */
	assert_false(mode_allows(0066, 1000, 1000, 1000, mine, 2, rw));
	/* root may always */
	assert_true(mode_allows(0000, 0, 0, 0, NULL, 0, rw));
	assert_false(mode_allows(0000, 1000, 1000, 1000, mine, 2, ACCESS_READ));
}

static void test_group_passwd(void **s)
{
	(void)s;
	const char *group = "root:x:0:\n"
			    "# comment\n"
			    "garbage line without colons\n"
			    "::44:\n"
			    "video:x:44:alice,bob\n"
			    "render:x:abc:\n"
			    "long:x:99999999999999:\n";
	char name[64];
	strlist m = {0};
	assert_true(group_by_gid(group, 44, name, sizeof(name), &m));
	assert_string_equal(name, "video");
	assert_int_equal(m.n, 2);
	assert_true(sl_contains(&m, "bob"));
	sl_free(&m);
	assert_true(group_by_gid(group, 0, name, sizeof(name), NULL));
	assert_string_equal(name, "root");
	assert_false(group_by_gid(group, 7, name, sizeof(name), NULL));
	assert_false(group_by_gid(NULL, 0, name, sizeof(name), NULL));
	assert_false(group_by_gid("", 0, name, sizeof(name), NULL));
	char tiny[4];
	assert_true(group_by_gid(group, 44, tiny, sizeof(tiny), NULL));
	assert_string_equal(tiny, "vid");
	const char *passwd = "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\n";
	assert_true(passwd_name(passwd, 1000, name, sizeof(name)));
	assert_string_equal(name, "alice");
	assert_false(passwd_name(passwd, 1001, name, sizeof(name)));
}

static void test_mounts(void **s)
{
	(void)s;
	const char *mounts = "overlay / overlay rw,relatime 0 0\n"
			     "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0\n"
			     "garbage\n"
			     "tmpfs /dev/shm tmpfs rw,size=1g 0 0\n";
	char type[32], opts[256];
	assert_true(mounts_find(mounts, "/dev/shm", type, sizeof(type), opts, sizeof(opts)));
	assert_string_equal(type, "tmpfs");
	assert_string_equal(opts, "rw,size=1g"); /* the last mount wins */
	unsigned long long b;
	assert_true(mount_opt_size(opts, &b));
	assert_int_equal(b, 1ULL << 30);
	assert_true(mount_opt_size("rw,nosuid,size=65536k,mode=1777", &b));
	assert_int_equal(b, 64ULL << 20);
	assert_true(mount_opt_size("size=4096", &b));
	assert_int_equal(b, 4096);
	assert_false(mount_opt_size("rw,nosuid", &b));
	assert_false(mount_opt_size("size=abc", &b));
	assert_false(mount_opt_size("size=50%", &b));
	assert_false(mount_opt_size("size=99999999999999999999999k", &b));
	assert_false(mount_opt_size("size=9999999999999999t", &b));
	assert_false(mounts_find("", "/dev/shm", type, sizeof(type), opts, sizeof(opts)));
	assert_false(mounts_find(NULL, "/dev/shm", type, sizeof(type), opts, sizeof(opts)));
}

static void test_proc_devices(void **s)
{
	(void)s;
	const char *t = "Character devices:\n  1 mem\n  5 /dev/tty\n195 nvidia-frontend\n195 nvidia\n"
			"508 nvidia-uvm\n\nBlock devices:\n  7 loop\n508 nvidia-uvm-block\n";
	assert_int_equal(proc_devices_major(t, "nvidia"), 195);
	assert_int_equal(proc_devices_major(t, "nvidia-frontend"), 195);
	assert_int_equal(proc_devices_major(t, "nvidia-uvm"), 508);
	assert_int_equal(proc_devices_major(t, "nvidia-caps"), -1);
	assert_int_equal(proc_devices_major(t, "loop"), -1); /* a block major is not a char major */
	assert_int_equal(proc_devices_major(NULL, "nvidia"), -1);
	char name[32];
	assert_true(proc_devices_name(t, false, 1, name, sizeof(name)));
	assert_string_equal(name, "mem");
	assert_true(proc_devices_name(t, false, 195, name, sizeof(name)));
	assert_string_equal(name, "nvidia-frontend");
	assert_true(proc_devices_name(t, true, 508, name, sizeof(name)));
	assert_string_equal(name, "nvidia-uvm-block");
	assert_false(proc_devices_name(t, false, 7, name, sizeof(name)));
	assert_false(proc_devices_name("garbage\n195\n 195nvidia\n", false, 195, name, sizeof(name)));
}

static void test_wsl(void **s)
{
	(void)s;
	assert_int_equal(wsl_version("5.15.153.1-microsoft-standard-WSL2", NULL, true), 2);
	assert_int_equal(wsl_version("4.19.128-microsoft-standard", NULL, false), 2);
	assert_int_equal(wsl_version("4.4.0-19041-Microsoft",
				     "Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) (gcc version 5.4.0)",
				     false),
			 1);
	assert_int_equal(wsl_version("6.1.0-28-amd64", "Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org)",
				     false),
			 0);
	assert_int_equal(wsl_version("6.6.36-custom", NULL, true), 2); /* custom WSL 2 kernel */
	assert_int_equal(wsl_version(NULL, NULL, false), 0);
}

static void test_container_markers(void **s)
{
	(void)s;
	assert_string_equal(cgroup_container_kind("12:pids:/docker/3f1c9b\n0::/docker/3f1c9b\n"), "docker");
	assert_string_equal(cgroup_container_kind("0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-ab.scope"),
			    "kubernetes");
	assert_string_equal(cgroup_container_kind("0::/machine.slice/libpod-123.scope"), "podman");
	assert_null(cgroup_container_kind("0::/user.slice/user-1000.slice/session-2.scope\n"));
	assert_null(cgroup_container_kind("0::/\n"));
	assert_null(cgroup_container_kind(NULL));
	char out[32];
	const char env[] = "PATH=/bin\0container=podman\0HOME=/root";
	assert_true(environ_container(env, sizeof(env) - 1, out, sizeof(out)));
	assert_string_equal(out, "podman");
	const char noenv[] = "PATH=/bin\0container=";
	assert_false(environ_container(noenv, sizeof(noenv) - 1, out, sizeof(out)));
	assert_false(environ_container("container=lxc", 9, out, sizeof(out))); /* cut short */
}

static void test_runtime_configs(void **s)
{
	(void)s;
	bool nv;
	char def[32];
	const char *dj = "{\"runtimes\": {\"nvidia\": {\"path\": \"nvidia-container-runtime\", \"runtimeArgs\": []}},"
			 " \"default-runtime\": \"nvidia\"}";
	assert_int_equal(docker_daemon_nvidia(dj, strlen(dj), &nv, def, sizeof(def)), 0);
	assert_true(nv);
	assert_string_equal(def, "nvidia");
	const char *other = "{\"runtimes\": {\"gpu\": {\"path\": \"/usr/bin/nvidia-container-runtime\"}}}";
	assert_int_equal(docker_daemon_nvidia(other, strlen(other), &nv, def, sizeof(def)), 0);
	assert_true(nv);
	assert_string_equal(def, "");
	assert_int_equal(docker_daemon_nvidia("{\"log-driver\": \"json-file\"}", 27, &nv, def, sizeof(def)), 0);
	assert_false(nv);
	assert_int_equal(docker_daemon_nvidia("{garbage", 8, &nv, def, sizeof(def)), -1);
	assert_int_equal(docker_daemon_nvidia("[1,2]", 5, &nv, def, sizeof(def)), -1);
	assert_int_equal(docker_daemon_nvidia("{\"runtimes\": 3}", 15, &nv, def, sizeof(def)), 0);
	assert_int_equal(docker_daemon_nvidia(NULL, 0, &nv, def, sizeof(def)), -1);

	bool is_default;
	assert_true(containerd_nvidia("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
				      "  runtime_type = \"io.containerd.runc.v2\"\n",
				      &is_default));
	assert_false(is_default);
	assert_true(containerd_nvidia("[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
				      "  default_runtime_name = \"nvidia\"\n",
				      &is_default));
	assert_true(is_default);
	assert_false(containerd_nvidia("# [plugins.cri.containerd.runtimes.nvidia]\nversion = 2\n", &is_default));

	char kind[64];
	const char *yaml = "---\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: \"0\"\n  kind: nested\n";
	assert_true(cdi_spec_kind(yaml, strlen(yaml), kind, sizeof(kind)));
	assert_string_equal(kind, "nvidia.com/gpu");
	const char *json = "{\"cdiVersion\":\"0.5.0\",\"kind\":\"nvidia.com/gpu\",\"devices\":[]}";
	assert_true(cdi_spec_kind(json, strlen(json), kind, sizeof(kind)));
	assert_string_equal(kind, "nvidia.com/gpu");
	assert_false(cdi_spec_kind("{\"kind\": 3}", 11, kind, sizeof(kind)));
	assert_false(cdi_spec_kind("devices: []\n", 12, kind, sizeof(kind)));
	assert_false(cdi_spec_kind("kind:\n", 6, kind, sizeof(kind)));
}

/* The out-of-memory killer's lines in each log's form (parse/klog.h). */
static void test_oom_lines(void **s)
{
	(void)s;
	oom_kill k;
	bool pending = false;
	const char *l = "6,8123,11560112350,-;Out of memory: Killed process 20418 (python3) total-vm:98123456kB, "
			"anon-rss:61446144kB, file-rss:102400kB, shmem-rss:2048kB, UID:1000 pgtables:120456kB oom_score_adj:0";
	assert_true(oom_parse_line(l, strlen(l), 0, &pending, &k));
	assert_int_equal(k.pid, 20418);
	assert_string_equal(k.comm, "python3");
	assert_false(k.cgroup);
	assert_int_equal(k.anon_rss_kb, 61446144);
	assert_int_equal(k.boot_us, 11560112350LL);
	assert_int_equal(k.time, -1);
	l = "2026-12-04T13:12:40.123456+01:00 gpu07 kernel: Memory cgroup out of memory: Killed process 77 (pt_data_worker) "
	    "total-vm:1kB, anon-rss:0kB";
	assert_true(oom_parse_line(l, strlen(l), 0, &pending, &k));
	assert_true(k.cgroup);
	assert_int_equal(k.anon_rss_kb, 0);
	assert_int_equal(k.time, 1796386360); /* 12:12:40 UTC */
	/* before 4.19: the cgroup is said on the first of two lines */
	l = "Dec  4 15:40:02 gpu07 kernel: Memory cgroup out of memory: Kill process 20533 (pt_data_worker) score 1012 or "
	    "sacrifice child";
	assert_false(oom_parse_line(l, strlen(l), 2026, &pending, &k));
	assert_true(pending);
	l = "Dec  4 15:40:02 gpu07 kernel: Killed process 20533 (pt_data_worker) total-vm:20123456kB, anon-rss:15728640kB";
	assert_true(oom_parse_line(l, strlen(l), 2026, &pending, &k));
	assert_true(k.cgroup);
	assert_false(pending);
	assert_true(k.time > 0);
	/* a name with a parenthesis, no rss; not an OOM line; a pid that is no number */
	l = "Out of memory: Killed process 5 (a (b) c) total-vm:1kB";
	assert_true(oom_parse_line(l, strlen(l), 2026, &pending, &k));
	assert_string_equal(k.comm, "a (b) c");
	assert_int_equal(k.anon_rss_kb, -1);
	l = "NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python3, GPU has fallen off the bus.";
	assert_false(oom_parse_line(l, strlen(l), 2026, &pending, &k));
	l = "Out of memory: Killed process x (python3)";
	assert_false(oom_parse_line(l, strlen(l), 2026, &pending, &k));
	l = "Out of memory: Killed process 99999999999 (python3)";
	assert_false(oom_parse_line(l, strlen(l), 2026, &pending, &k));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mode_allows), cmocka_unit_test(test_group_passwd),
		cmocka_unit_test(test_mounts),      cmocka_unit_test(test_wsl), cmocka_unit_test(test_proc_devices),
		cmocka_unit_test(test_container_markers), cmocka_unit_test(test_runtime_configs),
		cmocka_unit_test(test_oom_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
