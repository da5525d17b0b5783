/*
 * Environment variables that decide what CUDA programs see and how fast they run:
 * CUDA_VISIBLE_DEVICES (parsed), CUDA_DEVICE_ORDER, CUDA_LAUNCH_BLOCKING, TORCH_CUDA_ARCH_LIST
 * (parsed), PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF (parsed), NVIDIA_VISIBLE_DEVICES,
 * NVIDIA_DRIVER_CAPABILITIES, and the debugging/profiling variables of envparse.h.
 *
 * Only these named variables are recorded, never the whole environment (it holds secrets).
 * Values are kept with non-printable bytes replaced by '?'.
 *
 * Facts: env.*  (see docs/facts/sysprobes.md)
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/envparse.h"
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
	const char *k = "env.cuda_visible_devices";
	facts_put_int(f, "environment", (long long)l.total, "%s.entries", k);
	for (size_t i = 0; i < l.n; i++) {
		facts_put_str(f, NULL, cvd_kind_name(l.v[i].kind), "%s.%zu.kind", k, i);
		facts_put_str(f, NULL, l.v[i].text, "%s.%zu.value", k, i);
		if (l.v[i].kind == CVD_INDEX && l.v[i].index >= 0)
			facts_put_int(f, NULL, l.v[i].index, "%s.%zu.index", k, i);
	}
	/* what can be judged without the GPUs: the entries before the first malformed one */
	cvd_resolution r;
	cvd_resolve(&l, NULL, &r);
	facts_put_int(f, NULL, (long long)r.visible, "%s.usable_entries", k);
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
	const char *k = "env.torch_cuda_arch_list";
	facts_put_bool(f, NULL, l.native, "%s.native", k);
	facts_put_int(f, NULL, (long long)l.n, "%s.count", k);
	for (size_t i = 0; i < l.n; i++) {
		char buf[32];
		facts_put_str(f, NULL, arch_entry_text(&l.v[i], buf, sizeof(buf)), "%s.%zu", k, i);
	}
	strbuf inv;
	sb_init(&inv);
	for (size_t i = 0; i < l.invalid.n; i++)
		sb_addf(&inv, "%s%s", i ? " " : "", l.invalid.v[i]);
	if (inv.len)
		facts_put_str(f, NULL, inv.buf, "%s.invalid", k);
	sb_free(&inv);
	arch_list_free(&l);
	free(v);
}

static void alloc_conf_var(facts *f, const char *name)
{
	char *v = record(f, name, true);
	if (!v)
		return;
	char key[96];
	env_key(key, sizeof(key), name);
	alloc_conf c;
	bool ok = alloc_conf_parse(v, &c);
	facts_put_bool(f, NULL, ok, "%s.valid", key);
	strbuf keys;
	sb_init(&keys);
	for (size_t i = 0; i < c.keys.n; i++)
		sb_addf(&keys, "%s%s", i ? "," : "", c.keys.v[i]);
	facts_put_str(f, NULL, keys.buf ? keys.buf : "", "%s.keys", key);
	sb_free(&keys);
	if (c.errors.n)
		facts_put_str(f, NULL, c.errors.v[0], "%s.error", key);
	alloc_conf_free(&c);
	free(v);
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
}
