/*
 * Whose job is a GPU process: the Kubernetes pod and container, or the Slurm job and step, read
 * from the node's own files, with no cluster credentials:
 *
 *   /proc/PID/cgroup      the cgroup path (v1 and v2; systemd and cgroupfs drivers) names the pod
 *                         UID and the container id (kubepods...pod<uid>...<runtime>-<id>.scope:
 *                         containerd, CRI-O, docker) or the Slurm job and step
 *                         (slurm/uid_N/job_M/step_S, slurmstepd.scope/job_M/step_S);
 *   /var/log/pods/<namespace>_<pod>_<uid>/<container>/   the pod's namespace and name, and the
 *                         container names (the kubelet writes these; a DaemonSet mounts them);
 *   /var/log/containers/<pod>_<namespace>_<container>-<id>.log   a container id's name;
 *   /proc/PID/environ     SLURM_JOB_ID, SLURM_JOB_USER, SLURM_STEP_ID, SLURM_JOB_GPUS where readable;
 *   /proc/PID/status, /etc/passwd   the job's user when the environment is not readable.
 *
 * Every file is read through core/sysroot (so --root trees test it). The kubelet's pod-resources
 * gRPC API is not used: it needs a gRPC/protobuf client in C, a dependency larger than all of
 * this, and the files above answer the same question on every node that runs pods.
 */
#ifndef GPUVET_FLEET_ATTRIB_H
#define GPUVET_FLEET_ATTRIB_H
#include <stdbool.h>
#include <stddef.h>

typedef enum {
	OWNER_NONE = 0, /* a process of the host, or nothing could be read */
	OWNER_POD,      /* a Kubernetes pod's container */
	OWNER_SLURM,    /* a Slurm job (step) */
	OWNER_CONTAINER /* a container outside Kubernetes (docker, podman) */
} owner_kind;

typedef struct owner {
	owner_kind kind;
	/* Kubernetes */
	char pod_uid[40];   /* "5f1c...-..." with dashes, as the API shows it */
	char namespace_[64];/* "" when /var/log/pods is not readable */
	char pod[254];
	char container[64];
	/* containers (Kubernetes or not) */
	char runtime[16];   /* "containerd", "cri-o", "docker", "podman" or "" */
	char container_id[72];
	/* Slurm */
	char job[24];       /* "4242" */
	char step[24];      /* "0", "batch", "extern", "interactive" or "" */
	char user[64];      /* from SLURM_JOB_USER, else the uid's name, else "uid N" */
	char job_gpus[64];  /* SLURM_JOB_GPUS / SLURM_STEP_GPUS when readable: "0,1" */
} owner;

/* The cgroup file's text (all lines) to an owner: pure, no I/O. False when no line names a pod,
 * a container or a Slurm job. */
bool owner_from_cgroup(const char *cgroup_text, owner *out);
/* Fills namespace, pod and container names of a pod owner from the node's log directories. */
void owner_resolve_pod(owner *o);
/* Everything for one process: cgroup, then the pod's names or the Slurm environment and user.
 * Returns the kind (OWNER_NONE when the process is the host's or unreadable). */
owner_kind owner_of_pid(int pid, owner *out);

/* The real uid of a process (the first of /proc/PID/status's Uid line); -1 when unreadable. */
long owner_proc_uid(int pid);
/* The name /etc/passwd gives uid (sanitized), else "uid N". Reads the file each call: cache it. */
void owner_uid_name(long uid, char *out, size_t size);

/* A one-word label for displays: "ns/pod/container", "slurm 4242.0 (alice)", "docker 1a2b3c4d5e6f". */
const char *owner_text(const owner *o, char *buf, size_t size);
/* Does o match a --pod NAME (pod name, ns/name or uid) or --job ID (job or job.step) filter. */
bool owner_matches_pod(const owner *o, const char *name);
bool owner_matches_job(const owner *o, const char *id);

/* A small cache keyed by pid (and the process's start time, so a reused pid is not mistaken),
 * for samplers that ask every second. Thread-compatible: one cache per sampler thread. */
typedef struct owner_cache owner_cache;
owner_cache *owner_cache_new(void);
void owner_cache_free(owner_cache *c);
/* The owner of pid (looked up once per process lifetime). */
const owner *owner_cache_get(owner_cache *c, int pid);
#endif
