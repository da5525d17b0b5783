/* Unit tests of fleet/attrib: whose job a GPU process is, from cgroup paths and the node's files.
 * The cgroup lines are the shapes the kubelet (systemd and cgroupfs drivers, cgroup v1 and v2),
 * containerd, CRI-O, docker, podman and slurmd (proctrack/cgroup v1 and v2) write. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sysroot.h"
#include "core/util.h"
#include "fleet/attrib.h"
#include "../tools/test_tmp.h"

#define UID "5f1c2b9e-1234-4abc-9def-0123456789ab"
#define UID_ "5f1c2b9e_1234_4abc_9def_0123456789ab"
#define CID "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"

static void test_kubernetes(void **s)
{
	(void)s;
	owner o;
	/* cgroup v2, systemd driver, containerd */
	assert_true(owner_from_cgroup("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
				      ".slice/cri-containerd-" CID ".scope\n",
				      &o));
	assert_int_equal(o.kind, OWNER_POD);
	assert_string_equal(o.pod_uid, UID);
	assert_string_equal(o.container_id, CID);
	assert_string_equal(o.runtime, "containerd");
	/* guaranteed QoS: no qos slice */
	assert_true(owner_from_cgroup("0::/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" CID ".scope", &o));
	assert_string_equal(o.pod_uid, UID);
	assert_string_equal(o.runtime, "cri-o");
	/* CRI-O's conmon is the pod's, not a container */
	assert_true(owner_from_cgroup("0::/kubepods.slice/kubepods-pod" UID_ ".slice/crio-conmon-" CID ".scope", &o));
	assert_int_equal(o.kind, OWNER_POD);
	assert_string_equal(o.container_id, "");
	/* cgroup v1, cgroupfs driver (docker as the runtime): many controller lines */
	assert_true(owner_from_cgroup("12:pids:/kubepods/besteffort/pod" UID "/" CID "\n"
				      "11:memory:/kubepods/besteffort/pod" UID "/" CID "\n"
				      "1:name=systemd:/kubepods/besteffort/pod" UID "/" CID "\n",
				      &o));
	assert_int_equal(o.kind, OWNER_POD);
	assert_string_equal(o.pod_uid, UID);
	assert_string_equal(o.container_id, CID);
	/* cgroup v1, systemd driver, docker */
	assert_true(owner_from_cgroup("4:devices:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
				      ".slice/docker-" CID ".scope\n",
				      &o));
	assert_string_equal(o.runtime, "docker");
	/* a pod uid that is not one is not a pod (the container is still one) */
	assert_true(owner_from_cgroup("0::/kubepods.slice/kubepods-podnotauid.slice/cri-containerd-" CID ".scope", &o));
	assert_int_equal(o.kind, OWNER_CONTAINER);
	assert_false(owner_from_cgroup("0::/kubepods.slice/kubepods-pod" UID_ "x.slice/", &o));
	/* "pod" outside kubepods is not Kubernetes */
	assert_false(owner_from_cgroup("0::/user.slice/pod" UID "/x", &o));
}

static void test_slurm(void **s)
{
	(void)s;
	owner o;
	/* proctrack/cgroup, cgroup v1 */
	assert_true(owner_from_cgroup("7:devices:/slurm/uid_1000/job_4242/step_0/task_0\n"
				      "4:memory:/slurm/uid_1000/job_4242/step_0/task_0\n",
				      &o));
	assert_int_equal(o.kind, OWNER_SLURM);
	assert_string_equal(o.job, "4242");
	assert_string_equal(o.step, "0");
	assert_string_equal(o.user, "uid 1000");
	/* cgroup v2: slurmstepd's scope */
	assert_true(owner_from_cgroup("0::/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0\n", &o));
	assert_string_equal(o.job, "77");
	assert_string_equal(o.step, "batch");
	assert_string_equal(o.user, "");
	/* a job_ segment outside Slurm's tree is not a job */
	assert_false(owner_from_cgroup("0::/user.slice/job_5/x\n", &o));
	assert_false(owner_from_cgroup("0::/slurm/uid_1/job_x/step_0\n", &o));
}

static void test_containers_and_host(void **s)
{
	(void)s;
	owner o;
	assert_true(owner_from_cgroup("0::/system.slice/docker-" CID ".scope\n", &o));
	assert_int_equal(o.kind, OWNER_CONTAINER);
	assert_string_equal(o.runtime, "docker");
	assert_true(owner_from_cgroup("12:memory:/docker/" CID "\n", &o));
	assert_int_equal(o.kind, OWNER_CONTAINER);
	assert_true(owner_from_cgroup("0::/machine.slice/libpod-" CID ".scope/container\n", &o));
	assert_string_equal(o.runtime, "podman");
	char buf[128];
	assert_string_equal(owner_text(&o, buf, sizeof(buf)), "podman 3f4e5d6c7b8a");
	/* the host's own processes */
	assert_false(owner_from_cgroup("0::/user.slice/user-1000.slice/session-2.scope\n", &o));
	assert_int_equal(o.kind, OWNER_NONE);
	assert_false(owner_from_cgroup("0::/init.scope\n", &o));
	/* garbage: no crash, nothing found */
	assert_false(owner_from_cgroup("", &o));
	assert_false(owner_from_cgroup("no colons at all\n::\n:::\n0::", &o));
	assert_false(owner_from_cgroup(NULL, &o));
	char big[70000];
	memset(big, '/', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	big[0] = '0', big[1] = ':', big[2] = ':';
	assert_false(owner_from_cgroup(big, &o));
}

static void put(const char *root, const char *rel, const char *text, size_t len)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	char *slash = strrchr(path, '/');
	*slash = '\0';
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	assert_int_equal(system(cmd), 0);
	*slash = '/';
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fwrite(text, 1, len ? len : strlen(text), f);
	fclose(f);
}

static void test_node_files(void **s)
{
	(void)s;
	char root[4096];
	test_tmp_path(root, sizeof(root), "gpuvet-fleet-XXXXXX");
	assert_non_null(mkdtemp(root));
	put(root, "proc/100/cgroup", "0::/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" CID ".scope\n", 0);
	put(root, "var/log/pods/research_trainer-7d9f_" UID "/trainer/0.log", "", 0);
	put(root, "var/log/pods/research_trainer-7d9f_" UID "/sidecar/0.log", "", 0);
	put(root, "var/log/containers/trainer-7d9f_research_trainer-" CID ".log", "", 0);
	put(root, "var/log/containers/trainer-7d9f_research_sidecar-aaaaaaaaaaaaaaaaaaaa.log", "", 0);
	/* a Slurm step with its environment, and one without a readable environment */
	put(root, "proc/200/cgroup", "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n", 0);
	const char env[] = "PATH=/bin\0SLURM_JOB_ID=4242\0SLURM_JOB_USER=alice\0SLURM_STEP_ID=0\0SLURM_JOB_GPUS=0,1\0";
	put(root, "proc/200/environ", env, sizeof(env) - 1);
	put(root, "proc/300/cgroup", "4:devices:/slurm/uid_1001/job_9/step_batch/task_0\n", 0);
	put(root, "etc/passwd", "root:x:0:0::/root:/bin/sh\nbob:x:1001:1001::/home/bob:/bin/sh\n", 0);
	/* proctrack/linuxproc: no cgroup, the environment alone */
	put(root, "proc/400/cgroup", "0::/user.slice\n", 0);
	const char env2[] = "SLURM_JOB_ID=31\0";
	put(root, "proc/400/environ", env2, sizeof(env2) - 1);
	put(root, "proc/400/status", "Name:\tpython\nUid:\t0\t0\t0\t0\n", 0);
	sysroot_set(root);

	owner o;
	char buf[256];
	assert_int_equal(owner_of_pid(100, &o), OWNER_POD);
	assert_string_equal(o.namespace_, "research");
	assert_string_equal(o.pod, "trainer-7d9f");
	assert_string_equal(o.container, "trainer");
	assert_string_equal(owner_text(&o, buf, sizeof(buf)), "research/trainer-7d9f/trainer");
	assert_true(owner_matches_pod(&o, "trainer-7d9f"));
	assert_true(owner_matches_pod(&o, "research/trainer-7d9f"));
	assert_true(owner_matches_pod(&o, UID));
	assert_false(owner_matches_pod(&o, "other/trainer-7d9f"));
	assert_false(owner_matches_job(&o, "4242"));

	assert_int_equal(owner_of_pid(200, &o), OWNER_SLURM);
	assert_string_equal(o.user, "alice");
	assert_string_equal(o.job_gpus, "0,1");
	assert_string_equal(owner_text(&o, buf, sizeof(buf)), "slurm 4242.0 (alice)");
	assert_true(owner_matches_job(&o, "4242"));
	assert_true(owner_matches_job(&o, "4242.0"));
	assert_false(owner_matches_job(&o, "4242.1"));
	assert_false(owner_matches_job(&o, "424"));

	assert_int_equal(owner_of_pid(300, &o), OWNER_SLURM);
	assert_string_equal(o.user, "bob");
	assert_string_equal(o.step, "batch");

	assert_int_equal(owner_of_pid(400, &o), OWNER_SLURM);
	assert_string_equal(o.job, "31");
	assert_string_equal(o.user, "root");

	/* a process that is gone, and a pod whose logs are not mounted */
	assert_int_equal(owner_of_pid(999, &o), OWNER_NONE);
	owner_cache *c = owner_cache_new();
	assert_int_equal(owner_cache_get(c, 100)->kind, OWNER_POD);
	assert_int_equal(owner_cache_get(c, 100)->kind, OWNER_POD);
	assert_int_equal(owner_cache_get(c, 999)->kind, OWNER_NONE);
	owner_cache_free(c);

	sysroot_set(NULL);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kubernetes),
		cmocka_unit_test(test_slurm),
		cmocka_unit_test(test_containers_and_host),
		cmocka_unit_test(test_node_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
