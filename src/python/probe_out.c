#include "python/probe_out.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

#define SRC "python probe"
#define MAX_STR 2000
#define MAX_DEVICES 64
#define MAX_MAPS 256

static const cJSON *get(const cJSON *o, const char *key)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

/* A string value clipped and made printable; NULL when not a string. */
static char *str_of(const cJSON *v)
{
	if (!cJSON_IsString(v) || !v->valuestring)
		return NULL;
	size_t n = strlen(v->valuestring);
	char *s = xstrndup(v->valuestring, n > MAX_STR ? MAX_STR : n);
	str_sanitize(s);
	return s;
}

static bool num_of(const cJSON *v, double lo, double hi, double *out)
{
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi)
		return false;
	*out = v->valuedouble;
	return true;
}

static void put_str(facts *f, const cJSON *v, const char *key)
{
	char *s = str_of(v);
	if (s)
		facts_put_str(f, SRC, s, "%s", key);
	else if (cJSON_IsNull(v))
		facts_put_state(f, FACT_ABSENT, SRC, "None", "%s", key);
	free(s);
}

static void put_bool(facts *f, const cJSON *v, const char *key)
{
	if (cJSON_IsBool(v))
		facts_put_bool(f, SRC, cJSON_IsTrue(v), "%s", key);
}

/* A list of strings joined by sep (bounded); NULL when not an array of strings. */
static char *join_strings(const cJSON *arr, const char *sep, size_t max_items)
{
	if (!cJSON_IsArray(arr))
		return NULL;
	strbuf sb;
	sb_init(&sb);
	const cJSON *x;
	size_t n = 0;
	cJSON_ArrayForEach(x, arr)
	{
		char *s = str_of(x);
		if (!s)
			continue;
		if (n++ >= max_items || sb.len > 8 * MAX_STR) {
			free(s);
			break;
		}
		if (sb.len)
			sb_add(&sb, sep);
		sb_add(&sb, s);
		free(s);
	}
	return sb_steal(&sb);
}

static void parse_torch(facts *f, const cJSON *t)
{
	if (cJSON_IsNull(t) || !cJSON_IsObject(t)) {
		facts_put_state(f, FACT_ERROR, SRC, "no torch section in the answer", "python.live.torch.installed");
		return;
	}
	const cJSON *inst = get(t, "installed");
	if (cJSON_IsBool(inst))
		facts_put_bool(f, SRC, cJSON_IsTrue(inst), "python.live.torch.installed");
	put_str(f, get(t, "version"), "python.live.torch.version");
	put_str(f, get(t, "cuda"), "python.live.torch.cuda");
	put_str(f, get(t, "hip"), "python.live.torch.hip");
	put_str(f, get(t, "file"), "python.live.torch.file");
	char *ie = str_of(get(t, "import_error"));
	if (ie)
		facts_put_str(f, SRC, ie, "python.live.torch.import_error");
	free(ie);
	char *e = str_of(get(t, "error"));
	if (e)
		facts_put_str(f, SRC, e, "python.live.torch.error");
	free(e);
}

static void parse_cuda(facts *f, const cJSON *c)
{
	if (!cJSON_IsObject(c))
		return;
	put_bool(f, get(c, "available"), "python.live.cuda.available");
	char *w = join_strings(get(c, "warnings"), " | ", 16);
	if (w && *w)
		facts_put_str(f, SRC, w, "python.live.cuda.warning");
	free(w);
	char *err = str_of(get(c, "error"));
	if (err)
		facts_put_str(f, SRC, err, "python.live.cuda.error");
	free(err);
	double d;
	if (num_of(get(c, "device_count"), 0, 4096, &d))
		facts_put_int(f, SRC, (long long)d, "python.live.cuda.device_count");
	char *arch = join_strings(get(c, "arch_list"), " ", 64);
	if (arch)
		facts_put_str(f, SRC, arch, "python.live.cuda.arch_list");
	free(arch);
	const cJSON *devs = get(c, "devices"), *x;
	int n = 0;
	if (cJSON_IsArray(devs)) {
		cJSON_ArrayForEach(x, devs)
		{
			if (n >= MAX_DEVICES || !cJSON_IsObject(x))
				break;
			char key[64];
			snprintf(key, sizeof(key), "python.live.dev.%d.name", n);
			put_str(f, get(x, "name"), key);
			snprintf(key, sizeof(key), "python.live.dev.%d.cc", n);
			put_str(f, get(x, "cc"), key);
			if (num_of(get(x, "total_memory"), 0, 1e15, &d))
				facts_put_int(f, SRC, (long long)d, "python.live.dev.%d.total_memory_bytes", n);
			if (num_of(get(x, "multi_processor_count"), 0, 1e5, &d))
				facts_put_int(f, SRC, (long long)d, "python.live.dev.%d.sm_count", n);
			char *de = str_of(get(x, "error"));
			if (de)
				facts_put_str(f, SRC, de, "python.live.dev.%d.error", n);
			free(de);
			n++;
		}
		facts_put_int(f, SRC, n, "python.live.dev.count");
	}
}

static void parse_cudnn(facts *f, const cJSON *c)
{
	if (!cJSON_IsObject(c))
		return;
	put_bool(f, get(c, "enabled"), "python.live.cudnn.enabled");
	put_bool(f, get(c, "available"), "python.live.cudnn.available");
	double d;
	const cJSON *v = get(c, "version");
	if (num_of(v, 0, 1e8, &d))
		facts_put_int(f, SRC, (long long)d, "python.live.cudnn.version");
	else if (cJSON_IsNull(v))
		facts_put_state(f, FACT_ABSENT, SRC, "torch.backends.cudnn.version() is None", "python.live.cudnn.version");
	char *e = str_of(get(c, "error"));
	if (e)
		facts_put_str(f, SRC, e, "python.live.cudnn.error");
	free(e);
}

static void parse_smoke(facts *f, const cJSON *s)
{
	if (!cJSON_IsArray(s))
		return;
	const cJSON *first = cJSON_GetArrayItem(s, 0);
	if (!cJSON_IsObject(first))
		return;
	double d;
	if (num_of(get(first, "device"), 0, 4096, &d))
		facts_put_int(f, SRC, (long long)d, "python.live.smoke.device");
	put_str(f, get(first, "matmul"), "python.live.smoke.matmul");
	put_str(f, get(first, "conv"), "python.live.smoke.conv");
	if (num_of(get(first, "matmul_rel_err"), 0, 1e300, &d))
		facts_put_real(f, SRC, d, "python.live.smoke.matmul_rel_err");
	if (num_of(get(first, "conv_rel_err"), 0, 1e300, &d))
		facts_put_real(f, SRC, d, "python.live.smoke.conv_rel_err");
}

static void parse_maps(facts *f, const cJSON *m)
{
	if (!cJSON_IsArray(m)) {
		facts_put_state(f, FACT_ABSENT, SRC, "no mapped libraries reported", "python.live.maps.count");
		return;
	}
	const cJSON *x;
	int n = 0;
	cJSON_ArrayForEach(x, m)
	{
		if (n >= MAX_MAPS)
			break;
		char *path = str_of(get(x, "path"));
		char *real = str_of(get(x, "real"));
		if (path && path[0] == '/') {
			facts_put_str(f, SRC, path, "python.live.maps.%d.path", n);
			facts_put_str(f, SRC, real && real[0] == '/' ? real : path, "python.live.maps.%d.real", n);
			n++;
		}
		free(path);
		free(real);
	}
	facts_put_int(f, SRC, n, "python.live.maps.count");
}

int probe_out_parse(const char *out, size_t len, facts *f, char *err, size_t errn)
{
	/* the last result line wins: anything the interpreter printed before is noise */
	const char *line = NULL;
	size_t ml = strlen(PROBE_MARKER);
	for (const char *p = out; p && (size_t)(p - out) + ml <= len;) {
		const char *hit = memmem(p, len - (size_t)(p - out), PROBE_MARKER, ml);
		if (!hit)
			break;
		line = hit;
		p = hit + ml;
	}
	if (!line) {
		snprintf(err, errn, "no result line in its output");
		return PROBE_OUT_NO_MARKER;
	}
	const char *json = line + ml;
	size_t rest = len - (size_t)(json - out);
	const char *nl = memchr(json, '\n', rest);
	size_t jl = nl ? (size_t)(nl - json) : rest;
	cJSON *doc = cJSON_ParseWithLength(json, jl);
	if (!doc || !cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		snprintf(err, errn, "its result line is not a JSON object");
		return PROBE_OUT_BAD_JSON;
	}
	const cJSON *schema = get(doc, "schema");
	if (!cJSON_IsString(schema) || strcmp(schema->valuestring, PROBE_SCHEMA) != 0) {
		cJSON_Delete(doc);
		snprintf(err, errn, "its result is not a %s document", PROBE_SCHEMA);
		return PROBE_OUT_BAD_SCHEMA;
	}
	const cJSON *py = get(doc, "python");
	put_str(f, get(py, "version"), "python.live.python_version");
	put_str(f, get(py, "executable"), "python.live.executable");
	put_str(f, get(py, "prefix"), "python.live.prefix");
	parse_torch(f, get(doc, "torch"));
	parse_cuda(f, get(doc, "cuda"));
	parse_cudnn(f, get(doc, "cudnn"));
	put_str(f, get(doc, "nccl"), "python.live.nccl_version");
	char *ne = str_of(get(doc, "nccl_error"));
	if (ne)
		facts_put_str(f, SRC, ne, "python.live.nccl_error");
	free(ne);
	parse_smoke(f, get(doc, "smoke"));
	parse_maps(f, get(doc, "maps"));
	char *pe = str_of(get(doc, "probe_error"));
	if (pe)
		facts_put_str(f, SRC, pe, "python.live.probe_error");
	free(pe);
	const cJSON *secs = get(doc, "seconds");
	static const char *const stages[] = {"import", "is_available", "smoke"};
	for (size_t i = 0; i < GV_ARRAY_LEN(stages); i++) {
		double d;
		if (num_of(get(secs, stages[i]), 0, 1e6, &d))
			facts_put_real(f, SRC, d, "python.live.seconds_%s", stages[i]);
	}
	cJSON_Delete(doc);
	return PROBE_OUT_OK;
}
