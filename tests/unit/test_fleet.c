/* Unit tests of fleet/attrib: whose job a GPU process is, from cgroup paths and the node's files.
 * The cgroup lines are the shapes the kubelet (systemd and cgroupfs drivers, cgroup v1 and v2),
 * containerd, CRI-O, docker, podman and slurmd (proctrack/cgroup v1 and v2) write. And
 * fleet/kubelet with sampler/alloc: the pods the kubelet allocated each GPU to, from the fixture
 * checkpoints of tests/fixtures/kubelet (make_checkpoint.py) in --root trees. */
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
#include "fleet/kubelet.h"
#include "sampler/alloc.h"
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

/* the pods of tests/fixtures/kubelet/make_checkpoint.py */
#define POD_A "5f1c2b9e-1234-4abc-9def-0123456789ab"
#define POD_B "7a2d3c4e-5678-4bcd-8ef0-1234567890ab"
#define POD_C "9b3e4f50-9abc-4cde-9f01-234567890abc"
#define POD_D "0c4f5061-def0-4ef1-a012-34567890abcd"
#define POD_E "1d506172-1111-4222-b333-444455556666"
#define FAKE_GPU(n) "GPU-fa4e0000-0000-4000-8000-00000000000" #n

static char *fixture(const char *name, size_t *len)
{
	const char *src = getenv("GPUVET_SOURCE_DIR");
	assert_non_null(src);
	char path[4096];
	snprintf(path, sizeof(path), "%s/tests/fixtures/kubelet/%s", src, name);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	char *text = xmalloc(1 << 16);
	*len = fread(text, 1, (1 << 16) - 1, f);
	text[*len] = '\0';
	fclose(f);
	return text;
}

static void count_id(void *ctx, const char *id)
{
	(void)id;
	(*(size_t *)ctx)++;
}

static const kubelet_device *find_dev(const kubelet_device *v, long n, const char *uid, const char *id, bool from_env)
{
	for (long i = 0; i < n; i++)
		if (strcmp(v[i].pod_uid, uid) == 0 && strcmp(v[i].id, id) == 0 && v[i].from_env == from_env)
			return &v[i];
	return NULL;
}

static void test_kubelet_checkpoint(void **s)
{
	(void)s;
	size_t len;
	char *text = fixture("kubelet_internal_checkpoint", &len);
	kubelet_device v[32];
	long n = kubelet_checkpoint_parse(text, len, v, 32);
	/* A: id and env; B: the replica's GPU and env; C: MIG id and env; D: id; E: opaque id, CDI
	 * name (not its OTHER env), rdma's index; the entry without a pod UID is left out */
	assert_int_equal(n, 10);
	const kubelet_device *d = find_dev(v, n, POD_A, FAKE_GPU(0), false);
	assert_non_null(d);
	assert_string_equal(d->container, "trainer");
	assert_string_equal(d->resource, "nvidia.com/gpu");
	assert_non_null(find_dev(v, n, POD_A, FAKE_GPU(0), true));
	d = find_dev(v, n, POD_B, FAKE_GPU(1), false); /* "::2" is the time-slicing replica */
	assert_non_null(d);
	assert_string_equal(d->resource, "nvidia.com/gpu.shared");
	assert_non_null(find_dev(v, n, POD_C, "MIG-fa4e0002-0000-4000-8000-000000000001", false));
	assert_non_null(find_dev(v, n, POD_E, "dev-a", false));
	assert_non_null(find_dev(v, n, POD_E, FAKE_GPU(3), true)); /* its CDI device */
	assert_non_null(find_dev(v, n, POD_E, "0", false));
	assert_null(find_dev(v, n, "not-a-uid", FAKE_GPU(0), false));
	/* fewer slots than devices: the count says how many there are */
	assert_int_equal(kubelet_checkpoint_parse(text, len, v, 2), 10);
	free(text);

	/* before Kubernetes 1.20: a list of ids */
	text = fixture("kubelet_internal_checkpoint.v1", &len);
	n = kubelet_checkpoint_parse(text, len, v, 32);
	assert_int_equal(n, 2);
	assert_non_null(find_dev(v, n, POD_A, FAKE_GPU(1), false));
	free(text);

	/* what is not a checkpoint */
	static const char *const bad[] = {"", "{", "[]", "{\"Data\": 3}", "{\"Data\": {\"PodDeviceEntries\": 7}}", "null"};
	for (size_t i = 0; i < GV_ARRAY_LEN(bad); i++)
		assert_int_equal(kubelet_checkpoint_parse(bad[i], strlen(bad[i]), v, 32), -1);
	/* an empty node: Go writes the empty list as null */
	const char *empty = "{\"Data\":{\"PodDeviceEntries\":null,\"RegisteredDevices\":{}},\"Checksum\":0}";
	assert_int_equal(kubelet_checkpoint_parse(empty, strlen(empty), v, 32), 0);
	/* entries of the wrong shape are skipped, ids that are not strings too */
	const char *odd = "{\"Data\":{\"PodDeviceEntries\":[3,{\"PodUID\":\"" POD_A "\",\"DeviceIDs\":{\"0\":[1,null,\"GPU-x\"],"
			  "\"1\":\"no\"},\"AllocResp\":\"%%%\"}]}}";
	assert_int_equal(kubelet_checkpoint_parse(odd, strlen(odd), v, 32), 1);
	assert_string_equal(v[0].id, "GPU-x");
	assert_string_equal(v[0].container, "");

	/* an allocation response cut short names nothing; "all" and "none" are not devices; a CDI
	 * name gives its device */
	static const unsigned char cut[] = {0x0a, 0x40, 0x0a, 0x16, 'N'};
	size_t calls = 0;
	kubelet_alloc_resp_ids(cut, sizeof(cut), count_id, &calls);
	assert_int_equal(calls, 0);
	static const unsigned char all[] = {0x0a, 0x1d, 0x0a, 0x16, 'N', 'V', 'I', 'D', 'I', 'A', '_', 'V', 'I', 'S', 'I', 'B',
					    'L', 'E', '_', 'D', 'E', 'V', 'I', 'C', 'E', 'S', 0x12, 0x03, 'a', 'l', 'l'};
	kubelet_alloc_resp_ids(all, sizeof(all), count_id, &calls);
	assert_int_equal(calls, 0);
	static const unsigned char cdi[] = {0x2a, 0x12, 0x0a, 0x10, 'n', 'v', 'i', 'd', 'i', 'a', '.', 'c', 'o', 'm',
					    '/', 'g', 'p', 'u', '=', '0'};
	kubelet_alloc_resp_ids(cdi, sizeof(cdi), count_id, &calls);
	assert_int_equal(calls, 1);
}

/* A snapshot of the fake's four GPUs, GPU 2 in MIG mode with two MIG devices (GPU instances 1 and 2). */
static snapshot *four_gpus(void)
{
	snapshot *s = snapshot_new(4);
	for (int i = 0; i < 4; i++) {
		snprintf(s->gpus[i].uuid, sizeof(s->gpus[i].uuid), "GPU-fa4e0000-0000-4000-8000-%012x", i);
		s->gpus[i].minor = i + 4;
	}
	gpu_sample *g = &s->gpus[2];
	g->nmig = 2;
	for (int m = 0; m < 2; m++) {
		snprintf(g->mig[m].uuid, sizeof(g->mig[m].uuid), "MIG-fa4e0002-0000-4000-8000-%012x", m);
		g->mig[m].gpu_instance = m + 1;
		g->mig[m].compute_instance = 0;
	}
	return s;
}

static void test_alloc_match(void **st)
{
	(void)st;
	snapshot *s = four_gpus();
	int gi;
	kubelet_device d = {.resource = "nvidia.com/gpu"};
	str_copy(d.id, sizeof(d.id), "GPU-FA4E0000-0000-4000-8000-000000000001"); /* any case */
	assert_int_equal(alloc_match(&d, s, &gi), 1);
	assert_int_equal(gi, -1);
	str_copy(d.id, sizeof(d.id), "MIG-fa4e0002-0000-4000-8000-000000000001");
	assert_int_equal(alloc_match(&d, s, &gi), 2);
	assert_int_equal(gi, 2);
	str_copy(d.id, sizeof(d.id), "3"); /* deviceIDStrategy=index */
	assert_int_equal(alloc_match(&d, s, &gi), 3);
	str_copy(d.id, sizeof(d.id), "2:0"); /* MIG device 0 of GPU 2 by index */
	assert_int_equal(alloc_match(&d, s, &gi), 2);
	assert_int_equal(gi, 1);
	str_copy(d.id, sizeof(d.id), "nvidia5"); /* /dev/nvidia5 is GPU 1 (minor 5) */
	assert_int_equal(alloc_match(&d, s, &gi), 1);
	str_copy(d.id, sizeof(d.id), "9");
	assert_int_equal(alloc_match(&d, s, &gi), -1);
	str_copy(d.id, sizeof(d.id), "3x");
	assert_int_equal(alloc_match(&d, s, &gi), -1);
	/* an index of another device plugin is not a GPU; a UUID is, whatever the resource */
	str_copy(d.resource, sizeof(d.resource), "rdma/hca");
	str_copy(d.id, sizeof(d.id), "0");
	assert_int_equal(alloc_match(&d, s, &gi), -1);
	str_copy(d.id, sizeof(d.id), "GPU-fa4e0000-0000-4000-8000-000000000000");
	assert_int_equal(alloc_match(&d, s, &gi), 0);
	snapshot_free(s);
}

static void make_root(char *root, size_t size)
{
	test_tmp_path(root, size, "gpuvet-kubelet-XXXXXX");
	assert_non_null(mkdtemp(root));
	size_t len;
	char *text = fixture("kubelet_internal_checkpoint", &len);
	put(root, "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint", text, len);
	free(text);
	/* the pods' log directories name them (D's is gone with it) */
	put(root, "var/log/pods/research_trainer-7d9f_" POD_A "/trainer/0.log", "", 0);
	put(root, "var/log/pods/research_notebook-x_" POD_B "/notebook/0.log", "", 0);
	put(root, "var/log/pods/serving_infer-0_" POD_C "/infer/0.log", "", 0);
	put(root, "var/log/pods/batch_render-1_" POD_E "/render/0.log", "", 0);
}

static void remove_root(const char *root)
{
	sysroot_set(NULL);
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

static void test_pod_alive(void **st)
{
	(void)st;
	char root[4096];
	make_root(root, sizeof(root));
	sysroot_set(root);
	/* no pod cgroups to see: the log directories tell */
	assert_true(kubelet_pod_alive(POD_A));
	assert_false(kubelet_pod_alive(POD_D));
	assert_false(kubelet_pod_alive("not-a-uid"));
	/* cgroup v2, systemd driver: the pod's slice, whatever its QoS class */
	put(root, "sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
		  "5f1c2b9e_1234_4abc_9def_0123456789ab.slice/cgroup.procs", "", 0);
	put(root, "sys/fs/cgroup/kubepods.slice/kubepods-pod7a2d3c4e_5678_4bcd_8ef0_1234567890ab.slice/cgroup.procs", "", 0);
	assert_true(kubelet_pod_alive(POD_A));
	assert_true(kubelet_pod_alive(POD_B));
	/* E's log directory is there, its cgroup is not: it has finished */
	assert_false(kubelet_pod_alive(POD_E));
	remove_root(root);

	/* cgroup v1, cgroupfs driver */
	make_root(root, sizeof(root));
	put(root, "sys/fs/cgroup/memory/kubepods/besteffort/pod" POD_C "/tasks", "", 0);
	sysroot_set(root);
	assert_true(kubelet_pod_alive(POD_C));
	assert_false(kubelet_pod_alive(POD_A));
	remove_root(root);

	/* neither tree: nothing to tell a gone pod by */
	test_tmp_path(root, sizeof(root), "gpuvet-kubelet-XXXXXX");
	assert_non_null(mkdtemp(root));
	sysroot_set(root);
	assert_true(kubelet_pod_alive(POD_D));
	remove_root(root);
}

static const gpu_alloc *find_alloc(const gpu_sample *g, const char *uid)
{
	for (size_t k = 0; k < g->nalloc; k++)
		if (strcmp(g->alloc[k].owner.pod_uid, uid) == 0)
			return &g->alloc[k];
	return NULL;
}

static void test_alloc_fill(void **st)
{
	(void)st;
	char root[4096];
	make_root(root, sizeof(root));
	put(root, "sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
		  "5f1c2b9e_1234_4abc_9def_0123456789ab.slice/cgroup.procs", "", 0);
	put(root, "sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
		  "7a2d3c4e_5678_4bcd_8ef0_1234567890ab.slice/cgroup.procs", "", 0);
	put(root, "sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
		  "9b3e4f50_9abc_4cde_9f01_234567890abc.slice/cgroup.procs", "", 0);
	put(root, "sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
		  "1d506172_1111_4222_b333_444455556666.slice/cgroup.procs", "", 0);
	sysroot_set(root);
	alloc_cache *c = alloc_cache_new();
	snapshot *s = four_gpus();
	alloc_fill(c, s, 100);
	assert_int_equal(s->kubelet_checkpoint, 1);
	/* GPU 0: A, named; the entry without a pod UID is not there */
	assert_int_equal(s->gpus[0].nalloc, 1);
	const gpu_alloc *a = find_alloc(&s->gpus[0], POD_A);
	assert_non_null(a);
	assert_int_equal(a->owner.kind, OWNER_POD);
	assert_string_equal(a->owner.namespace_, "research");
	assert_string_equal(a->owner.pod, "trainer-7d9f");
	assert_string_equal(a->owner.container, "trainer");
	assert_int_equal(a->gpu_instance, -1);
	/* GPU 1: B's share of it */
	a = find_alloc(&s->gpus[1], POD_B);
	assert_non_null(a);
	assert_string_equal(a->resource, "nvidia.com/gpu.shared");
	assert_int_equal(s->gpus[1].nalloc, 1);
	/* GPU 2: C's MIG device, GPU instance 2 */
	a = find_alloc(&s->gpus[2], POD_C);
	assert_non_null(a);
	assert_int_equal(a->gpu_instance, 2);
	assert_string_equal(a->owner.namespace_, "serving");
	/* GPU 3: E by its CDI device (its rdma index is not a GPU); D has gone */
	assert_int_equal(s->gpus[3].nalloc, 1);
	a = find_alloc(&s->gpus[3], POD_E);
	assert_non_null(a);
	assert_string_equal(a->owner.container, "render");
	assert_null(find_alloc(&s->gpus[3], POD_D));

	/* the same file: the same answer from the cache; a removed one: none */
	snapshot_free(s);
	s = four_gpus();
	alloc_fill(c, s, 101);
	assert_int_equal(s->gpus[0].nalloc, 1);
	char path[4200];
	snprintf(path, sizeof(path), "%s/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint", root);
	assert_int_equal(unlink(path), 0);
	snapshot_free(s);
	s = four_gpus();
	alloc_fill(c, s, 102);
	assert_int_equal(s->kubelet_checkpoint, 0);
	assert_int_equal(s->gpus[0].nalloc, 0);
	/* one that is not a checkpoint */
	put(root, "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint", "{\"not\": 1}", 0);
	snapshot_free(s);
	s = four_gpus();
	alloc_fill(c, s, 103);
	assert_int_equal(s->kubelet_checkpoint, -1);
	snapshot_free(s);
	alloc_cache_free(c);
	remove_root(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kubernetes),
		cmocka_unit_test(test_slurm),
		cmocka_unit_test(test_containers_and_host),
		cmocka_unit_test(test_node_files),
		cmocka_unit_test(test_kubelet_checkpoint),
		cmocka_unit_test(test_alloc_match),
		cmocka_unit_test(test_pod_alive),
		cmocka_unit_test(test_alloc_fill),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
