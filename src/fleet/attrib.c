#include "fleet/attrib.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sysroot.h"
#include "core/util.h"

/* ------------------------------------------------------------------ cgroup paths (pure) */

static bool all_of(const char *s, size_t n, const char *set)
{
	for (size_t i = 0; i < n; i++)
		if (!s[i] || !strchr(set, tolower((unsigned char)s[i])))
			return false;
	return true;
}

/* A pod UID as the API writes it: 8-4-4-4-12 hex digits; systemd's slice names use '_'. */
static bool take_uid(const char *s, size_t n, char *out, size_t size)
{
	if (n != 36 || size < 37)
		return false;
	char u[37];
	for (size_t i = 0; i < 36; i++) {
		char c = s[i] == '_' ? '-' : (char)tolower((unsigned char)s[i]);
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? c != '-' : !isxdigit((unsigned char)c))
			return false;
		u[i] = c;
	}
	u[36] = '\0';
	memcpy(out, u, 37);
	return true;
}

static bool is_container_id(const char *s, size_t n)
{
	return n >= 12 && n <= 64 && all_of(s, n, "0123456789abcdef");
}

/* One path segment "<prefix><id>.scope" (or without .scope): the id when it is a container id. */
static bool scope_id(const char *seg, size_t n, const char *prefix, char *out, size_t size)
{
	size_t p = strlen(prefix);
	if (n <= p || strncmp(seg, prefix, p) != 0)
		return false;
	size_t len = n - p;
	if (len > 6 && strncmp(seg + n - 6, ".scope", 6) == 0)
		len -= 6;
	if (!is_container_id(seg + p, len) || len >= size)
		return false;
	memcpy(out, seg + p, len);
	out[len] = '\0';
	return true;
}

/* The runtimes' scope names, in systemd's cgroup driver (and podman's). "crio-conmon-" is the
 * monitor, not the container: it is never matched because its id part is not hex. */
static const struct {
	const char *prefix, *runtime;
} scopes[] = {
	{"cri-containerd-", "containerd"}, {"crio-", "cri-o"}, {"docker-", "docker"}, {"libpod-", "podman"},
};

typedef struct seg {
	const char *s;
	size_t n;
} seg;

static size_t split_path(const char *path, size_t len, seg *v, size_t max)
{
	size_t n = 0, i = 0;
	while (i < len && n < max) {
		while (i < len && path[i] == '/')
			i++;
		size_t start = i;
		while (i < len && path[i] != '/')
			i++;
		if (i > start)
			v[n++] = (seg){path + start, i - start};
	}
	return n;
}

static bool seg_is(const seg *g, const char *s)
{
	return g->n == strlen(s) && strncmp(g->s, s, g->n) == 0;
}

static bool seg_starts(const seg *g, const char *s)
{
	size_t n = strlen(s);
	return g->n >= n && strncmp(g->s, s, n) == 0;
}

static void seg_copy(char *out, size_t size, const char *s, size_t n)
{
	if (n >= size)
		n = size - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

static bool parse_slurm(const seg *v, size_t n, owner *o)
{
	bool slurm = false;
	for (size_t i = 0; i < n; i++)
		slurm |= seg_is(&v[i], "slurm") || seg_starts(&v[i], "slurmstepd") || seg_starts(&v[i], "slurm_");
	if (!slurm)
		return false;
	bool job = false;
	for (size_t i = 0; i < n; i++) {
		if (seg_starts(&v[i], "job_") && v[i].n > 4 && all_of(v[i].s + 4, v[i].n - 4, "0123456789")) {
			seg_copy(o->job, sizeof(o->job), v[i].s + 4, v[i].n - 4);
			job = true;
		} else if (seg_starts(&v[i], "step_") && v[i].n > 5) {
			seg_copy(o->step, sizeof(o->step), v[i].s + 5, v[i].n - 5);
		} else if (seg_starts(&v[i], "uid_") && v[i].n > 4 && all_of(v[i].s + 4, v[i].n - 4, "0123456789") &&
			   !o->user[0]) {
			snprintf(o->user, sizeof(o->user), "uid %.*s", (int)(v[i].n - 4), v[i].s + 4);
		}
	}
	if (job)
		o->kind = OWNER_SLURM;
	return job;
}

static bool parse_container(const seg *v, size_t n, owner *o)
{
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < GV_ARRAY_LEN(scopes); k++)
			if (scope_id(v[i].s, v[i].n, scopes[k].prefix, o->container_id, sizeof(o->container_id))) {
				str_copy(o->runtime, sizeof(o->runtime), scopes[k].runtime);
				return true;
			}
	/* cgroupfs driver: /docker/<id>, /kubepods/<qos>/pod<uid>/<id> */
	if (n >= 1 && is_container_id(v[n - 1].s, v[n - 1].n) && v[n - 1].n >= 32) {
		seg_copy(o->container_id, sizeof(o->container_id), v[n - 1].s, v[n - 1].n);
		if (n >= 2 && seg_is(&v[n - 2], "docker"))
			str_copy(o->runtime, sizeof(o->runtime), "docker");
		return true;
	}
	return false;
}

static bool parse_pod(const seg *v, size_t n, owner *o)
{
	bool kube = false;
	for (size_t i = 0; i < n; i++)
		kube |= seg_starts(&v[i], "kubepods");
	if (!kube)
		return false;
	for (size_t i = 0; i < n; i++) {
		const seg *g = &v[i];
		/* cgroupfs: "pod<uid>"; systemd: "kubepods-<qos>-pod<uid_>.slice" or "kubepods-pod<uid_>.slice" */
		const char *p = NULL;
		size_t len = 0;
		if (seg_starts(g, "pod")) {
			p = g->s + 3, len = g->n - 3;
		} else if (seg_starts(g, "kubepods-")) {
			for (size_t k = 0; k + 4 <= g->n; k++)
				if (strncmp(g->s + k, "-pod", 4) == 0) {
					p = g->s + k + 4, len = g->n - k - 4;
					break;
				}
		}
		if (p && len > 6 && strncmp(p + len - 6, ".slice", 6) == 0)
			len -= 6;
		if (p && take_uid(p, len, o->pod_uid, sizeof(o->pod_uid))) {
			o->kind = OWNER_POD;
			parse_container(v + i + 1, n - i - 1, o);
			return true;
		}
	}
	return false;
}

bool owner_from_cgroup(const char *text, owner *out)
{
	memset(out, 0, sizeof(*out));
	if (!text)
		return false;
	/* each line: hierarchy-ID:controller-list:cgroup-path. The first line that names an owner
	 * wins; v2's "0::" line and v1's per-controller lines name the same place. */
	for (const char *line = text; *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
		if (c2) {
			const char *path = c2 + 1;
			size_t plen = len - (size_t)(path - line);
			seg v[64];
			size_t n = split_path(path, plen, v, GV_ARRAY_LEN(v));
			owner o;
			memset(&o, 0, sizeof(o));
			if (parse_pod(v, n, &o) || parse_slurm(v, n, &o)) {
				*out = o;
				return true;
			}
			if (parse_container(v, n, &o) && o.runtime[0]) {
				o.kind = OWNER_CONTAINER;
				*out = o;
				return true;
			}
		}
		if (!end)
			break;
		line = end + 1;
	}
	return false;
}

/* ------------------------------------------------------------------ the node's files */

void owner_resolve_pod(owner *o)
{
	if (o->kind != OWNER_POD || !o->pod_uid[0])
		return;
	DIR *d = sysroot_opendir("/var/log/pods");
	if (!d)
		return;
	struct dirent *e;
	char dir[512] = "";
	while ((e = readdir(d))) {
		/* <namespace>_<pod>_<uid>: namespaces and pod names never hold '_' (DNS-1123) */
		const char *first = strchr(e->d_name, '_'), *last = strrchr(e->d_name, '_');
		if (!first || first == last || strcmp(last + 1, o->pod_uid) != 0)
			continue;
		seg_copy(o->namespace_, sizeof(o->namespace_), e->d_name, (size_t)(first - e->d_name));
		seg_copy(o->pod, sizeof(o->pod), first + 1, (size_t)(last - first - 1));
		snprintf(dir, sizeof(dir), "/var/log/pods/%s", e->d_name);
		break;
	}
	closedir(d);
	str_sanitize(o->namespace_);
	str_sanitize(o->pod);
	if (!dir[0])
		return;
	/* the container: its id in /var/log/containers/<pod>_<ns>_<container>-<id>.log */
	if (o->container_id[0] && (d = sysroot_opendir("/var/log/containers"))) {
		char prefix[400], suffix[96];
		snprintf(prefix, sizeof(prefix), "%s_%s_", o->pod, o->namespace_);
		snprintf(suffix, sizeof(suffix), "-%s.log", o->container_id);
		while ((e = readdir(d))) {
			size_t n = strlen(e->d_name), pl = strlen(prefix), sl = strlen(suffix);
			if (n > pl + sl && str_starts(e->d_name, prefix) && str_ends(e->d_name, suffix)) {
				seg_copy(o->container, sizeof(o->container), e->d_name + pl, n - pl - sl);
				break;
			}
		}
		closedir(d);
	}
	/* else a pod of one container names it */
	if (!o->container[0] && (d = sysroot_opendir(dir))) {
		int count = 0;
		char only[256] = "";
		while ((e = readdir(d)))
			if (e->d_name[0] != '.') {
				count++;
				str_copy(only, sizeof(only), e->d_name);
			}
		closedir(d);
		if (count == 1)
			str_copy(o->container, sizeof(o->container), only);
	}
	str_sanitize(o->container);
}

/* NAME=value from a NUL-separated environment block. */
static const char *env_get(const char *env, size_t len, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < len;) {
		const char *e = env + i;
		size_t l = strnlen(e, len - i);
		if (l > n && strncmp(e, name, n) == 0 && e[n] == '=')
			return e + n + 1;
		i += l + 1;
	}
	return NULL;
}

long owner_proc_uid(int pid)
{
	char path[64], *st = NULL;
	size_t len = 0;
	long uid = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (sysroot_read(path, 1 << 16, &st, &len, NULL) == 0) {
		const char *u = strstr(st, "\nUid:");
		if (u)
			uid = strtol(u + 5, NULL, 10);
	}
	free(st);
	return uid;
}

void owner_uid_name(long uid, char *out, size_t size)
{
	char *pw = NULL;
	size_t len;
	if (sysroot_read("/etc/passwd", 1 << 20, &pw, &len, NULL) == 0) {
		for (char *line = pw, *next; line && *line; line = next) {
			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			char *f1 = strchr(line, ':'), *f2 = f1 ? strchr(f1 + 1, ':') : NULL;
			if (f2 && strtol(f2 + 1, NULL, 10) == uid && f2[1] >= '0' && f2[1] <= '9') {
				seg_copy(out, size, line, (size_t)(f1 - line));
				str_sanitize(out);
				free(pw);
				return;
			}
		}
	}
	free(pw);
	snprintf(out, size, "uid %ld", uid);
}

static void slurm_details(int pid, owner *o)
{
	char path[64], *env = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	if (sysroot_read(path, 1 << 20, &env, &len, NULL) == 0) {
		const char *job = env_get(env, len, "SLURM_JOB_ID");
		if (job && !o->job[0] && o->kind == OWNER_NONE) {
			o->kind = OWNER_SLURM; /* proctrack without cgroups: the environment alone says it */
			str_copy(o->job, sizeof(o->job), job);
		}
		if (o->kind == OWNER_SLURM) {
			const char *v;
			if ((v = env_get(env, len, "SLURM_JOB_USER")))
				str_copy(o->user, sizeof(o->user), v);
			if (!o->step[0] && (v = env_get(env, len, "SLURM_STEP_ID")))
				str_copy(o->step, sizeof(o->step), v);
			if ((v = env_get(env, len, "SLURM_STEP_GPUS")) || (v = env_get(env, len, "SLURM_JOB_GPUS")))
				str_copy(o->job_gpus, sizeof(o->job_gpus), v);
		}
	}
	free(env);
	if (o->kind != OWNER_SLURM)
		return;
	/* the user: uid_N from the cgroup, else the process's real uid */
	long uid = -1;
	if (str_starts(o->user, "uid "))
		uid = strtol(o->user + 4, NULL, 10);
	if (uid < 0 && !o->user[0])
		uid = owner_proc_uid(pid);
	if (uid >= 0)
		owner_uid_name(uid, o->user, sizeof(o->user));
	str_sanitize(o->job);
	str_sanitize(o->step);
	str_sanitize(o->user);
	str_sanitize(o->job_gpus);
}

owner_kind owner_of_pid(int pid, owner *out)
{
	memset(out, 0, sizeof(*out));
	char path[64], *text = NULL;
	size_t len;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	if (sysroot_read(path, 1 << 16, &text, &len, NULL) == 0)
		owner_from_cgroup(text, out);
	free(text);
	if (out->kind == OWNER_POD)
		owner_resolve_pod(out);
	slurm_details(pid, out);
	return out->kind;
}

const char *owner_text(const owner *o, char *buf, size_t size)
{
	switch (o->kind) {
	case OWNER_POD:
		if (o->pod[0])
			snprintf(buf, size, "%s/%s%s%s", o->namespace_, o->pod, o->container[0] ? "/" : "", o->container);
		else
			snprintf(buf, size, "pod %s", o->pod_uid);
		break;
	case OWNER_SLURM:
		snprintf(buf, size, "slurm %s%s%s%s%s%s", o->job, o->step[0] ? "." : "", o->step, o->user[0] ? " (" : "",
			 o->user, o->user[0] ? ")" : "");
		break;
	case OWNER_CONTAINER:
		snprintf(buf, size, "%s %.12s", o->runtime, o->container_id);
		break;
	default:
		snprintf(buf, size, "-");
	}
	return buf;
}

bool owner_matches_pod(const owner *o, const char *name)
{
	if (o->kind != OWNER_POD || !name || !*name)
		return false;
	const char *slash = strchr(name, '/');
	if (slash)
		return strncmp(name, o->namespace_, (size_t)(slash - name)) == 0 && o->namespace_[slash - name] == '\0' &&
		       strcmp(slash + 1, o->pod) == 0;
	return strcmp(name, o->pod) == 0 || strcmp(name, o->pod_uid) == 0;
}

bool owner_matches_job(const owner *o, const char *id)
{
	if (o->kind != OWNER_SLURM || !id || !*id)
		return false;
	const char *dot = strchr(id, '.');
	if (!dot)
		return strcmp(id, o->job) == 0;
	return strncmp(id, o->job, (size_t)(dot - id)) == 0 && o->job[dot - id] == '\0' && strcmp(dot + 1, o->step) == 0;
}

/* ------------------------------------------------------------------ cache */

#define OWNER_CACHE_SIZE 512

typedef struct cache_entry {
	int pid;
	unsigned long long start; /* /proc/PID/stat field 22 */
	owner o;
} cache_entry;

struct owner_cache {
	cache_entry v[OWNER_CACHE_SIZE];
	size_t n, next;
};

owner_cache *owner_cache_new(void)
{
	return xcalloc(1, sizeof(owner_cache));
}

void owner_cache_free(owner_cache *c)
{
	free(c);
}

static unsigned long long start_time(int pid)
{
	char path[64], *st = NULL;
	size_t len;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	unsigned long long t = 0;
	if (sysroot_read(path, 4096, &st, &len, NULL) == 0) {
		/* after the last ')' (comm may hold spaces and parentheses): field 3 is the state */
		const char *p = strrchr(st, ')');
		for (int field = 2; p && *p && field < 22; p++)
			if (*p == ' ')
				field++;
		if (p)
			t = strtoull(p, NULL, 10);
	}
	free(st);
	return t;
}

const owner *owner_cache_get(owner_cache *c, int pid)
{
	unsigned long long start = start_time(pid);
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].pid == pid && c->v[i].start == start)
			return &c->v[i].o;
	cache_entry *e;
	if (c->n < OWNER_CACHE_SIZE) {
		e = &c->v[c->n++];
	} else {
		e = &c->v[c->next];
		c->next = (c->next + 1) % OWNER_CACHE_SIZE;
	}
	e->pid = pid;
	e->start = start;
	owner_of_pid(pid, &e->o);
	return &e->o;
}
