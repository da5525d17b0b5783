/*
 * Environment variables that decide what CUDA programs see and how fast they run:
 * CUDA_VISIBLE_DEVICES (parsed), CUDA_DEVICE_ORDER, CUDA_LAUNCH_BLOCKING, TORCH_CUDA_ARCH_LIST
 * (parsed), PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF (parsed), NVIDIA_VISIBLE_DEVICES,
 * NVIDIA_DRIVER_CAPABILITIES, the debugging/profiling variables and the NCCL variables of
 * envparse.h; and what NCCL can use: network interfaces, InfiniBand adapters, the default route.
 *
 * Only these named variables are recorded, never the whole environment (it holds secrets).
 * Values are kept with non-printable bytes replaced by '?'.
 *
 * Facts: env.*  (see docs/facts/sysprobes.md)
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/factkeys.h"
#include "core/sysroot.h"
#include "parse/envparse.h"
#include "probes/probes.h"

#define CVD_STORED 64

/* "CUDA_VISIBLE_DEVICES" -> "env.cuda_visible_devices" */
static void env_key(char *buf, size_t n, const char *name)
{
	size_t i = 0;
	i = (size_t)snprintf(buf, n, "env.");
	for (const char *p = name; *p && i + 1 < n; p++)
		buf[i++] = (char)tolower((unsigned char)*p);
	buf[i < n ? i : n - 1] = '\0';
}

/* Records the variable (absent when unset, if always) and returns its sanitized value. */
static char *record(facts *f, const char *name, bool always)
{
	char key[96];
	env_key(key, sizeof(key), name);
	const char *v = getenv(name);
	if (!v) {
		if (always)
			facts_put_state(f, FACT_ABSENT, "environment", "not set", "%s", key);
		return NULL;
	}
	char *s = xstrdup(v);
	str_sanitize(s);
	facts_put_str(f, "environment", s, "%s", key);
	return s;
}

static void visible_devices(facts *f)
{
	char *v = record(f, "CUDA_VISIBLE_DEVICES", true);
	if (!v)
		return;
	cvd_list l;
	cvd_parse(v, CVD_STORED, &l);
	facts_put_int(f, "environment", (long long)l.total, FK_ENV_CUDA_VISIBLE_DEVICES_ENTRIES);
	for (size_t i = 0; i < l.n; i++) {
		facts_put_str(f, "CUDA_VISIBLE_DEVICES", cvd_kind_name(l.v[i].kind), FK_ENV_CUDA_VISIBLE_DEVICES_KIND(zu), i);
		facts_put_str(f, "CUDA_VISIBLE_DEVICES", l.v[i].text, FK_ENV_CUDA_VISIBLE_DEVICES_VALUE(zu), i);
		if (l.v[i].kind == CVD_INDEX && l.v[i].index >= 0)
			facts_put_int(f, "CUDA_VISIBLE_DEVICES", l.v[i].index, FK_ENV_CUDA_VISIBLE_DEVICES_INDEX(zu), i);
	}
	/* what can be judged without the GPUs: the entries before the first malformed one */
	cvd_resolution r;
	cvd_resolve(&l, NULL, &r);
	facts_put_int(f, "CUDA_VISIBLE_DEVICES", (long long)r.visible, FK_ENV_CUDA_VISIBLE_DEVICES_USABLE_ENTRIES);
	cvd_resolution_free(&r);
	cvd_free(&l);
	free(v);
}

static void arch_list_var(facts *f)
{
	char *v = record(f, "TORCH_CUDA_ARCH_LIST", true);
	if (!v)
		return;
	arch_list l;
	arch_list_parse(v, &l);
	facts_put_bool(f, "TORCH_CUDA_ARCH_LIST", l.native, FK_ENV_TORCH_CUDA_ARCH_LIST_NATIVE);
	facts_put_int(f, "TORCH_CUDA_ARCH_LIST", (long long)l.n, FK_ENV_TORCH_CUDA_ARCH_LIST_COUNT);
	for (size_t i = 0; i < l.n; i++) {
		char buf[32];
		facts_put_str(f, "TORCH_CUDA_ARCH_LIST", arch_entry_text(&l.v[i], buf, sizeof(buf)), FK_ENV_TORCH_CUDA_ARCH_LIST_N(zu), i);
	}
	strbuf inv;
	sb_init(&inv);
	for (size_t i = 0; i < l.invalid.n; i++)
		sb_addf(&inv, "%s%s", i ? " " : "", l.invalid.v[i]);
	if (inv.len)
		facts_put_str(f, "TORCH_CUDA_ARCH_LIST", inv.buf, FK_ENV_TORCH_CUDA_ARCH_LIST_INVALID);
	sb_free(&inv);
	arch_list_free(&l);
	free(v);
}

static void alloc_conf_var(facts *f, const char *name)
{
	char *v = record(f, name, true);
	if (!v)
		return;
	bool cuda = strcmp(name, "PYTORCH_CUDA_ALLOC_CONF") == 0; /* else PYTORCH_ALLOC_CONF */
	alloc_conf c;
	bool ok = alloc_conf_parse(v, &c);
	const char *var = cuda ? "PYTORCH_CUDA_ALLOC_CONF" : "PYTORCH_ALLOC_CONF";
	facts_put_bool(f, var, ok, cuda ? FK_ENV_PYTORCH_CUDA_ALLOC_CONF_VALID : FK_ENV_PYTORCH_ALLOC_CONF_VALID);
	strbuf keys;
	sb_init(&keys);
	for (size_t i = 0; i < c.keys.n; i++)
		sb_addf(&keys, "%s%s", i ? "," : "", c.keys.v[i]);
	facts_put_str(f, var, keys.buf ? keys.buf : "", cuda ? FK_ENV_PYTORCH_CUDA_ALLOC_CONF_KEYS : FK_ENV_PYTORCH_ALLOC_CONF_KEYS);
	sb_free(&keys);
	if (c.errors.n)
		facts_put_str(f, var, c.errors.v[0], cuda ? FK_ENV_PYTORCH_CUDA_ALLOC_CONF_ERROR : FK_ENV_PYTORCH_ALLOC_CONF_ERROR);
	alloc_conf_free(&c);
	free(v);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of a /sys/class directory, sorted (net interfaces, InfiniBand adapters). */
static bool class_entries(const char *dir, strlist *out)
{
	DIR *d = sysroot_opendir(dir);
	if (!d)
		return false;
	struct dirent *de;
	int seen = 0;
	while ((de = readdir(d)) && seen++ < 4096 && out->n < 256)
		if (de->d_name[0] != '.')
			sl_push(out, de->d_name);
	closedir(d);
	if (out->n)
		qsort(out->v, out->n, sizeof(char *), name_cmp);
	return true;
}

/* The names, made printable, joined by commas ("" for none). */
static char *joined_names(const strlist *l)
{
	strbuf sb;
	sb_init(&sb);
	sb_add(&sb, "");
	for (size_t i = 0; i < l->n; i++) {
		char *name = xstrdup(l->v[i]);
		str_sanitize(name);
		sb_addf(&sb, "%s%s", i ? "," : "", name);
		free(name);
	}
	return sb_steal(&sb);
}

/* What NCCL can use: network interfaces (with their state), InfiniBand adapters, the default
 * route's interface. Facts: net.* */
static void network(facts *f)
{
	strlist ifs = {0};
	if (class_entries("/sys/class/net", &ifs)) {
		for (size_t i = 0; i < ifs.n; i++) {
			char *name = xstrdup(ifs.v[i]);
			str_sanitize(name);
			facts_put_str(f, "/sys/class/net", name, FK_NET_IF_NAME(zu), i);
			char path[320];
			snprintf(path, sizeof(path), "/sys/class/net/%s/operstate", ifs.v[i]);
			char *state = sysroot_read_line(path);
			if (state)
				facts_put_str(f, path, state, FK_NET_IF_OPERSTATE(zu), i);
			else
				facts_put_state(f, FACT_ABSENT, path, strerror(errno), FK_NET_IF_OPERSTATE(zu), i);
			free(state);
			free(name);
		}
		facts_put_int(f, "/sys/class/net", (long long)ifs.n, FK_NET_IF_COUNT);
		char *all = joined_names(&ifs);
		facts_put_str(f, "/sys/class/net", all, FK_NET_INTERFACES);
		free(all);
	} else {
		facts_put_state(f, FACT_ABSENT, "/sys/class/net", strerror(errno), FK_NET_INTERFACES);
	}
	sl_free(&ifs);
	strlist ib = {0};
	bool have_ib = class_entries("/sys/class/infiniband", &ib);
	char *ibs = joined_names(&ib);
	/* no /sys/class/infiniband: no RDMA stack loaded, i.e. no adapter NCCL could use */
	facts_put_str(f, have_ib ? "/sys/class/infiniband" : "/sys/class/infiniband (absent)", ibs, FK_NET_IB_DEVICES);
	free(ibs);
	sl_free(&ib);
	char *route = NULL;
	if (sysroot_read("/proc/net/route", 1 << 20, &route, NULL, NULL) == 0) {
		/* "Iface Destination Gateway ...": the default route has destination 00000000 */
		char *save = NULL;
		for (char *line = strtok_r(route, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char ifname[64], dest[16];
			if (sscanf(line, "%63s %15s", ifname, dest) == 2 && strcmp(dest, "00000000") == 0) {
				str_sanitize(ifname);
				facts_put_str(f, "/proc/net/route", ifname, FK_NET_DEFAULT_ROUTE);
				break;
			}
		}
		free(route);
	}
}

void probe_env(facts *f, const probe_opts *o)
{
	(void)o;
	visible_devices(f);
	arch_list_var(f);
	alloc_conf_var(f, "PYTORCH_CUDA_ALLOC_CONF");
	alloc_conf_var(f, "PYTORCH_ALLOC_CONF");
	static const char *const plain[] = {"CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING", "NVIDIA_VISIBLE_DEVICES",
					    "NVIDIA_DRIVER_CAPABILITIES"};
	for (size_t i = 0; i < GV_ARRAY_LEN(plain); i++)
		free(record(f, plain[i], true));
	/* the debugging variables only when set: a list of "not set" would bury the rest */
	for (const env_debug_var *d = env_debug_vars; d->name; d++)
		free(record(f, d->name, false));
	for (const env_nccl_var *d = env_nccl_vars; d->name; d++)
		free(record(f, d->name, false));
	network(f);
}
