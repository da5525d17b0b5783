/* Pure helpers of the devices and container probes (see sysparse.h). */
#include "probes/sysparse.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

bool mode_allows(unsigned mode, uid_t fuid, gid_t fgid, uid_t uid, const gid_t *gids, size_t ngids, int want)
{
	if (uid == 0)
		return true;
	unsigned bits;
	if (uid == fuid) {
		bits = (mode >> 6) & 7;
	} else {
		bool member = false;
		for (size_t i = 0; i < ngids && !member; i++)
			member = gids[i] == fgid;
		bits = member ? (mode >> 3) & 7 : mode & 7;
	}
	return ((unsigned)want & bits) == (unsigned)want;
}

/* Calls fn for each line of text (without the newline); stops when fn returns true. */
static bool each_line(const char *text, bool (*fn)(const char *line, size_t len, void *arg), void *arg)
{
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (fn(p, len, arg))
			return true;
		p = nl ? nl + 1 : NULL;
	}
	return false;
}

/* Field k (0-based) of a ':'-separated line. */
static bool colon_field(const char *line, size_t len, int k, const char **start, size_t *flen)
{
	const char *p = line, *end = line + len;
	for (int i = 0; i < k; i++) {
		const char *c = memchr(p, ':', (size_t)(end - p));
		if (!c)
			return false;
		p = c + 1;
	}
	const char *c = memchr(p, ':', (size_t)(end - p));
	*start = p;
	*flen = c ? (size_t)(c - p) : (size_t)(end - p);
	return true;
}

static bool field_is_number(const char *s, size_t n, unsigned long want)
{
	if (n == 0 || n > 10)
		return false;
	unsigned long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	return v == want;
}

static void copy_field(char *dst, size_t n, const char *s, size_t len)
{
	if (!n)
		return;
	size_t l = len < n - 1 ? len : n - 1;
	memcpy(dst, s, l);
	dst[l] = '\0';
	str_sanitize(dst);
}

struct id_query {
	unsigned long id;
	int id_field;
	char *name;
	size_t n;
	strlist *members;
};

static bool id_line(const char *line, size_t len, void *arg)
{
	struct id_query *q = arg;
	const char *f;
	size_t fl;
	if (len == 0 || line[0] == '#' || !colon_field(line, len, q->id_field, &f, &fl) ||
	    !field_is_number(f, fl, q->id))
		return false;
	const char *nm;
	size_t nl;
	colon_field(line, len, 0, &nm, &nl);
	if (nl == 0)
		return false;
	copy_field(q->name, q->n, nm, nl);
	if (q->members && colon_field(line, len, 3, &f, &fl)) {
		char *m = xstrndup(f, fl);
		str_sanitize(m);
		sl_split(q->members, m, ",", false);
		free(m);
	}
	return true;
}

bool group_by_gid(const char *text, gid_t gid, char *name, size_t n, strlist *members)
{
	struct id_query q = {gid, 2, name, n, members};
	return text && each_line(text, id_line, &q);
}

bool passwd_name(const char *text, uid_t uid, char *name, size_t n)
{
	struct id_query q = {uid, 2, name, n, NULL};
	return text && each_line(text, id_line, &q);
}

struct mount_query {
	const char *mp;
	char *fstype, *opts;
	size_t ftn, on;
	bool found;
};

static bool mount_line(const char *line, size_t len, void *arg)
{
	struct mount_query *q = arg;
	/* device mountpoint fstype options dump pass */
	const char *f[4];
	size_t fl[4];
	const char *p = line, *end = line + len;
	for (int i = 0; i < 4; i++) {
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		f[i] = p;
		while (p < end && *p != ' ' && *p != '\t')
			p++;
		fl[i] = (size_t)(p - f[i]);
		if (fl[i] == 0)
			return false;
	}
	if (fl[1] == strlen(q->mp) && strncmp(f[1], q->mp, fl[1]) == 0) {
		copy_field(q->fstype, q->ftn, f[2], fl[2]);
		copy_field(q->opts, q->on, f[3], fl[3]);
		q->found = true; /* keep going: the last mount on a point is the one in use */
	}
	return false;
}

/* Walks one section of /proc/devices ("Character devices:" or "Block devices:"): "MAJOR NAME". */
static bool proc_devices_walk(const char *text, bool block, const char *want_name, unsigned want_major,
			      long long *major_out, char *name, size_t n)
{
	const char *head = block ? "Block devices:" : "Character devices:";
	bool in = false;
	for (const char *p = text; p && *p;) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char line[128];
		if (len < sizeof(line)) {
			memcpy(line, p, len);
			line[len] = '\0';
			char *t = str_trim(line);
			if (strcmp(t, "Character devices:") == 0 || strcmp(t, "Block devices:") == 0) {
				in = strcmp(t, head) == 0;
			} else if (in && *t) {
				char *end;
				unsigned long m = strtoul(t, &end, 10);
				if (end != t && (*end == ' ' || *end == '\t') && m < (1UL << 20)) {
					char *nm = str_trim(end);
					if (want_name && strcmp(nm, want_name) == 0) {
						*major_out = (long long)m;
						return true;
					}
					if (!want_name && m == want_major) {
						str_copy(name, n, nm);
						return true;
					}
				}
			}
		}
		p = e ? e + 1 : NULL;
	}
	return false;
}

long long proc_devices_major(const char *text, const char *name)
{
	long long m = -1;
	if (!text || !name || !proc_devices_walk(text, false, name, 0, &m, NULL, 0))
		return -1;
	return m;
}

bool proc_devices_name(const char *text, bool block, unsigned major, char *name, size_t n)
{
	long long unused;
	return text && proc_devices_walk(text, block, NULL, major, &unused, name, n);
}

bool mounts_find(const char *text, const char *mountpoint, char *fstype, size_t ftn, char *opts, size_t on)
{
	struct mount_query q = {mountpoint, fstype, opts, ftn, on, false};
	if (text)
		each_line(text, mount_line, &q);
	return q.found;
}

bool mount_opt_size(const char *opts, unsigned long long *bytes)
{
	for (const char *p = opts; p && *p;) {
		if (strncmp(p, "size=", 5) == 0) {
			const char *s = p + 5;
			unsigned long long v = 0;
			size_t d = 0;
			while (isdigit((unsigned char)s[d]) && d < 20) {
				unsigned long long nv = v * 10 + (unsigned long long)(s[d] - '0');
				if (nv / 10 != v)
					return false;
				v = nv;
				d++;
			}
			if (d == 0)
				return false;
			unsigned shift = 0;
			switch (tolower((unsigned char)s[d])) {
			case 'k': shift = 10; d++; break;
			case 'm': shift = 20; d++; break;
			case 'g': shift = 30; d++; break;
			case 't': shift = 40; d++; break;
			case ',': case '\0': break;
			default: return false; /* "50%" and other forms the kernel never prints */
			}
			if (s[d] != ',' && s[d] != '\0')
				return false;
			if (shift && v > (~0ULL >> shift))
				return false;
			*bytes = v << shift;
			return true;
		}
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}

int wsl_version(const char *osrelease, const char *proc_version, bool has_dxg)
{
	const char *s[2] = {osrelease, proc_version};
	bool lower = false, upper = false, wsl2 = false;
	for (int i = 0; i < 2; i++) {
		if (!s[i])
			continue;
		if (strstr(s[i], "WSL2") || strstr(s[i], "microsoft-standard"))
			wsl2 = true;
		if (strstr(s[i], "microsoft"))
			lower = true;
		if (strstr(s[i], "Microsoft"))
			upper = true;
	}
	/* WSL 2 kernels say "microsoft-standard[-WSL2]"; WSL 1 emulates a 4.4 kernel named
	 * "4.4.0-NNNNN-Microsoft" and has no /dev/dxg */
	if (wsl2 || lower)
		return 2;
	if (upper)
		return has_dxg ? 2 : 1;
	return has_dxg ? 2 : 0;
}

const char *cgroup_container_kind(const char *text)
{
	if (!text)
		return NULL;
	static const struct {
		const char *marker, *kind;
	} m[] = {
		{"kubepods", "kubernetes"}, {"libpod", "podman"}, {"docker", "docker"},
		{"cri-containerd", "containerd"}, {"containerd", "containerd"}, {"/lxc/", "lxc"},
		{"lxc.payload", "lxc"},
	};
	for (size_t i = 0; i < GV_ARRAY_LEN(m); i++)
		if (strstr(text, m[i].marker))
			return m[i].kind;
	return NULL;
}

bool environ_container(const char *data, size_t len, char *out, size_t n)
{
	size_t i = 0;
	while (i < len) {
		const char *e = data + i;
		const char *z = memchr(e, '\0', len - i);
		size_t el = z ? (size_t)(z - e) : len - i;
		if (el > 10 && strncmp(e, "container=", 10) == 0) {
			copy_field(out, n, e + 10, el - 10);
			return true;
		}
		i += el + 1;
	}
	return false;
}

int docker_daemon_nvidia(const char *text, size_t len, bool *nvidia, char *def, size_t n)
{
	*nvidia = false;
	if (n)
		def[0] = '\0';
	cJSON *doc = cJSON_ParseWithLength(text ? text : "", text ? len : 0);
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		return -1;
	}
	const cJSON *rts = cJSON_GetObjectItemCaseSensitive(doc, "runtimes"), *rt;
	if (cJSON_IsObject(rts))
		cJSON_ArrayForEach(rt, rts)
		{
			const cJSON *path = cJSON_GetObjectItemCaseSensitive(rt, "path");
			if ((rt->string && strcmp(rt->string, "nvidia") == 0) ||
			    (cJSON_IsString(path) && strstr(path->valuestring, "nvidia-container-runtime")))
				*nvidia = true;
		}
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(doc, "default-runtime");
	if (cJSON_IsString(d))
		copy_field(def, n, d->valuestring, strlen(d->valuestring));
	cJSON_Delete(doc);
	return 0;
}

struct toml_query {
	bool table, is_default;
};

static bool toml_line(const char *line, size_t len, void *arg)
{
	struct toml_query *q = arg;
	while (len && isspace((unsigned char)*line))
		line++, len--;
	if (!len || *line == '#')
		return false;
	char *l = xstrndup(line, len);
	char *hash = strchr(l, '#');
	if (hash)
		*hash = '\0';
	if (l[0] == '[' && (strstr(l, "runtimes.nvidia") || strstr(l, "runtimes.\"nvidia") || strstr(l, "runtimes.'nvidia")))
		q->table = true;
	if (str_starts(l, "default_runtime_name")) {
		char *eq = strchr(l, '=');
		if (eq) {
			char *v = str_trim(eq + 1);
			if (*v == '"' || *v == '\'')
				v++;
			if (str_starts(v, "nvidia"))
				q->is_default = true;
		}
	}
	free(l);
	return false;
}

bool containerd_nvidia(const char *text, bool *is_default)
{
	struct toml_query q = {false, false};
	if (text)
		each_line(text, toml_line, &q);
	*is_default = q.is_default;
	return q.table || q.is_default;
}

struct yaml_kind {
	char *kind;
	size_t n;
};

static bool yaml_kind_line(const char *line, size_t len, void *arg)
{
	struct yaml_kind *q = arg;
	if (len < 5 || strncmp(line, "kind:", 5) != 0) /* top level only: no indentation */
		return false;
	const char *v = line + 5, *end = line + len;
	while (v < end && (*v == ' ' || *v == '\t' || *v == '"' || *v == '\''))
		v++;
	while (end > v && (isspace((unsigned char)end[-1]) || end[-1] == '"' || end[-1] == '\''))
		end--;
	if (end == v)
		return false;
	copy_field(q->kind, q->n, v, (size_t)(end - v));
	return true;
}

bool cdi_spec_kind(const char *text, size_t len, char *kind, size_t n)
{
	if (!text || !n)
		return false;
	kind[0] = '\0';
	size_t i = 0;
	while (i < len && isspace((unsigned char)text[i]))
		i++;
	if (i < len && text[i] == '{') {
		cJSON *doc = cJSON_ParseWithLength(text, len);
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(doc, "kind");
		bool ok = cJSON_IsString(k) && k->valuestring[0];
		if (ok)
			copy_field(kind, n, k->valuestring, strlen(k->valuestring));
		cJSON_Delete(doc);
		return ok;
	}
	struct yaml_kind q = {kind, n};
	return each_line(text, yaml_kind_line, &q);
}
