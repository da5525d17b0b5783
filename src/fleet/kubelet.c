#include "fleet/kubelet.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sysroot.h"
#include "core/util.h"

/* A pod UID as the API writes it (8-4-4-4-12 hex digits), lower-cased into out; false when s is not one. */
static bool pod_uid(const char *s, char *out, size_t size)
{
	if (!s || strlen(s) != 36 || size < 37)
		return false;
	for (size_t i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
			return false;
		out[i] = (char)tolower((unsigned char)s[i]);
	}
	out[36] = '\0';
	return true;
}

/* ------------------------------------------------------------------ AllocResp */

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Standard (or URL) base64 to bytes; stops at '=' or the first byte of no alphabet. */
static unsigned char *b64_decode(const char *s, size_t *len)
{
	size_t n = strlen(s);
	unsigned char *out = xmalloc(n / 4 * 3 + 4);
	size_t o = 0;
	unsigned acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n' || s[i] == '\r' || s[i] == ' ')
			continue;
		int v = b64_value((unsigned char)s[i]);
		if (v < 0)
			break;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	*len = o;
	return out;
}

static bool pb_varint(const unsigned char *p, size_t len, size_t *i, unsigned long long *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *i < len; shift += 7) {
		unsigned char b = p[(*i)++];
		*v |= (unsigned long long)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* The next field of a message: its number, and for a length-delimited one its bytes. False at the
 * end or on a malformed field. */
static bool pb_field(const unsigned char *p, size_t len, size_t *i, unsigned *field, const unsigned char **sub,
		     size_t *sublen)
{
	unsigned long long key, v;
	if (*i >= len || !pb_varint(p, len, i, &key))
		return false;
	*field = (unsigned)(key >> 3);
	*sub = NULL;
	*sublen = 0;
	switch (key & 7) {
	case 0:
		return pb_varint(p, len, i, &v);
	case 1:
		if (len - *i < 8)
			return false;
		*i += 8;
		return true;
	case 5:
		if (len - *i < 4)
			return false;
		*i += 4;
		return true;
	case 2:
		if (!pb_varint(p, len, i, &v) || v > len - *i)
			return false;
		*sub = p + *i;
		*sublen = (size_t)v;
		*i += (size_t)v;
		return true;
	default:
		return false;
	}
}

static void copy_bytes(char *out, size_t size, const unsigned char *p, size_t n)
{
	if (n >= size)
		n = size - 1;
	memcpy(out, p, n);
	out[n] = '\0';
}

/* Each item of a comma list that is a device id. */
static void each_id(const char *list, void (*fn)(void *ctx, const char *id), void *ctx)
{
	for (const char *p = list; *p;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		char id[128];
		while (n && isspace((unsigned char)*p))
			p++, n--;
		while (n && isspace((unsigned char)p[n - 1]))
			n--;
		copy_bytes(id, sizeof(id), (const unsigned char *)p, n);
		if (id[0] && strcmp(id, "all") != 0 && strcmp(id, "none") != 0 && strcmp(id, "void") != 0)
			fn(ctx, id);
		if (!comma)
			break;
		p = comma + 1;
	}
}

void kubelet_alloc_resp_ids(const unsigned char *pb, size_t len, void (*fn)(void *ctx, const char *id), void *ctx)
{
	/* ContainerAllocateResponse: map<string, string> envs = 1; ...; repeated CDIDevice cdi_devices = 5
	 * (CDIDevice: string name = 1, "vendor/class=device") */
	size_t i = 0;
	unsigned field;
	const unsigned char *sub;
	size_t sublen;
	while (pb_field(pb, len, &i, &field, &sub, &sublen)) {
		if (!sub || (field != 1 && field != 5))
			continue;
		char key[64] = "", value[1024] = "";
		size_t j = 0;
		unsigned f;
		const unsigned char *s;
		size_t sl;
		while (pb_field(sub, sublen, &j, &f, &s, &sl)) {
			if (s && f == 1)
				copy_bytes(field == 1 ? key : value, field == 1 ? sizeof(key) : sizeof(value), s, sl);
			else if (s && f == 2 && field == 1)
				copy_bytes(value, sizeof(value), s, sl);
		}
		if (field == 1 && strcmp(key, "NVIDIA_VISIBLE_DEVICES") == 0)
			each_id(value, fn, ctx);
		else if (field == 5 && strchr(value, '='))
			each_id(strrchr(value, '=') + 1, fn, ctx);
	}
}

/* ------------------------------------------------------------------ the checkpoint */

typedef struct parse_ctx {
	kubelet_device *out;
	size_t max, n;
	const kubelet_device *entry; /* the entry's pod, container and resource */
	bool from_env;
} parse_ctx;

static void add_id(void *arg, const char *id)
{
	parse_ctx *c = arg;
	if (c->n < c->max) {
		kubelet_device *d = &c->out[c->n];
		*d = *c->entry;
		str_copy(d->id, sizeof(d->id), id);
		char *rep = strstr(d->id, "::"); /* a shared GPU's replica: GPU-...::3 */
		if (rep)
			*rep = '\0';
		str_sanitize(d->id);
		d->from_env = c->from_env;
	}
	c->n++;
}

static void add_list(parse_ctx *c, const cJSON *list)
{
	const cJSON *x;
	cJSON_ArrayForEach(x, list)
	{
		if (cJSON_IsString(x) && x->valuestring[0])
			add_id(c, x->valuestring);
	}
}

static const char *json_string(const cJSON *o, const char *name)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsString(x) ? x->valuestring : "";
}

long kubelet_checkpoint_parse(const char *text, size_t len, kubelet_device *out, size_t max)
{
	cJSON *doc = text ? cJSON_ParseWithLength(text, len) : NULL;
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(doc, "Data");
	const cJSON *entries = cJSON_GetObjectItemCaseSensitive(data, "PodDeviceEntries");
	/* Go writes an empty list as null */
	if (!cJSON_IsObject(data) || !(cJSON_IsArray(entries) || cJSON_IsNull(entries) || !entries)) {
		cJSON_Delete(doc);
		return -1;
	}
	parse_ctx c = {.out = out, .max = max};
	size_t e = 0;
	const cJSON *x;
	cJSON_ArrayForEach(x, entries)
	{
		kubelet_device entry;
		memset(&entry, 0, sizeof(entry));
		entry.entry = e++;
		if (!cJSON_IsObject(x) || !pod_uid(json_string(x, "PodUID"), entry.pod_uid, sizeof(entry.pod_uid)))
			continue;
		str_copy(entry.container, sizeof(entry.container), json_string(x, "ContainerName"));
		str_copy(entry.resource, sizeof(entry.resource), json_string(x, "ResourceName"));
		str_sanitize(entry.container);
		str_sanitize(entry.resource);
		c.entry = &entry;
		c.from_env = false;
		const cJSON *ids = cJSON_GetObjectItemCaseSensitive(x, "DeviceIDs");
		if (cJSON_IsArray(ids)) { /* before Kubernetes 1.20 */
			add_list(&c, ids);
		} else if (cJSON_IsObject(ids)) { /* NUMA node: ids */
			const cJSON *numa;
			cJSON_ArrayForEach(numa, ids)
			{
				if (cJSON_IsArray(numa))
					add_list(&c, numa);
			}
		}
		const char *resp = json_string(x, "AllocResp");
		if (resp[0]) {
			size_t n;
			unsigned char *pb = b64_decode(resp, &n);
			c.from_env = true;
			kubelet_alloc_resp_ids(pb, n, add_id, &c);
			free(pb);
		}
	}
	cJSON_Delete(doc);
	return (long)c.n;
}

int kubelet_checkpoint_read(kubelet_device **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	char *text = NULL;
	size_t len = 0;
	bool truncated = false;
	int rc = sysroot_read(KUBELET_CHECKPOINT, 16 << 20, &text, &len, &truncated);
	if (rc != 0)
		return rc;
	size_t cap = 64;
	kubelet_device *v = xcalloc(cap, sizeof(*v));
	long got = truncated ? -1 : kubelet_checkpoint_parse(text, len, v, cap);
	if (got > (long)cap) {
		cap = (size_t)got;
		free(v);
		v = xcalloc(cap, sizeof(*v));
		got = kubelet_checkpoint_parse(text, len, v, cap);
	}
	free(text);
	if (got < 0) {
		free(v);
		return -EINVAL;
	}
	*out = v;
	*n = (size_t)got;
	return 0;
}

/* ------------------------------------------------------------------ is the pod still there */

bool kubelet_pod_alive(const char *uid)
{
	char u[40], u_[40];
	if (!pod_uid(uid, u, sizeof(u)))
		return false;
	str_copy(u_, sizeof(u_), u);
	for (char *p = u_; *p; p++)
		if (*p == '-')
			*p = '_';
	/* the cgroup roots of v2, and the v1 hierarchies the kubelet always creates a pod in */
	static const char *const roots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/memory",
					    "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/pids"};
	static const char *const qos[] = {"", "burstable", "besteffort"};
	bool visible = false;
	char path[512];
	for (size_t r = 0; r < GV_ARRAY_LEN(roots); r++) {
		snprintf(path, sizeof(path), "%s/kubepods.slice", roots[r]);
		if (sysroot_is_dir(path)) { /* the systemd driver: kubepods-burstable-pod<uid_>.slice */
			visible = true;
			for (size_t q = 0; q < GV_ARRAY_LEN(qos); q++) {
				if (qos[q][0])
					snprintf(path, sizeof(path), "%s/kubepods.slice/kubepods-%s.slice/kubepods-%s-pod%s.slice",
						 roots[r], qos[q], qos[q], u_);
				else
					snprintf(path, sizeof(path), "%s/kubepods.slice/kubepods-pod%s.slice", roots[r], u_);
				if (sysroot_is_dir(path))
					return true;
			}
		}
		snprintf(path, sizeof(path), "%s/kubepods", roots[r]);
		if (sysroot_is_dir(path)) { /* the cgroupfs driver: kubepods/burstable/pod<uid> */
			visible = true;
			for (size_t q = 0; q < GV_ARRAY_LEN(qos); q++) {
				snprintf(path, sizeof(path), "%s/kubepods%s%s/pod%s", roots[r], qos[q][0] ? "/" : "", qos[q], u);
				if (sysroot_is_dir(path))
					return true;
			}
		}
	}
	if (visible)
		return false;
	DIR *d = sysroot_opendir("/var/log/pods");
	if (!d)
		return true; /* nothing here tells a gone pod from a running one */
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		const char *last = strrchr(e->d_name, '_');
		found = last && strcmp(last + 1, u) == 0;
	}
	closedir(d);
	return found;
}
