#include "python/probe_out.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/factkeys.h"
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
		facts_put_state(f, FACT_ERROR, SRC, "no torch section in the answer", FK_PYTHON_LIVE_TORCH_INSTALLED);
		return;
	}
	const cJSON *inst = get(t, "installed");
	if (cJSON_IsBool(inst))
		facts_put_bool(f, SRC, cJSON_IsTrue(inst), FK_PYTHON_LIVE_TORCH_INSTALLED);
	put_str(f, get(t, "version"), FK_PYTHON_LIVE_TORCH_VERSION);
	put_str(f, get(t, "cuda"), FK_PYTHON_LIVE_TORCH_CUDA);
	put_str(f, get(t, "hip"), FK_PYTHON_LIVE_TORCH_HIP);
	put_str(f, get(t, "file"), FK_PYTHON_LIVE_TORCH_FILE);
	char *ie = str_of(get(t, "import_error"));
	if (ie)
		facts_put_str(f, SRC, ie, FK_PYTHON_LIVE_TORCH_IMPORT_ERROR);
	free(ie);
	char *e = str_of(get(t, "error"));
	if (e)
		facts_put_str(f, SRC, e, FK_PYTHON_LIVE_TORCH_ERROR);
	free(e);
}

static void parse_cuda(facts *f, const cJSON *c)
{
	if (!cJSON_IsObject(c))
		return;
	put_bool(f, get(c, "available"), FK_PYTHON_LIVE_CUDA_AVAILABLE);
	char *w = join_strings(get(c, "warnings"), " | ", 16);
	if (w && *w)
		facts_put_str(f, SRC, w, FK_PYTHON_LIVE_CUDA_WARNING);
	free(w);
	char *err = str_of(get(c, "error"));
	if (err)
		facts_put_str(f, SRC, err, FK_PYTHON_LIVE_CUDA_ERROR);
	free(err);
	double d;
	if (num_of(get(c, "device_count"), 0, 4096, &d))
		facts_put_int(f, SRC, (long long)d, FK_PYTHON_LIVE_CUDA_DEVICE_COUNT);
	char *arch = join_strings(get(c, "arch_list"), " ", 64);
	if (arch)
		facts_put_str(f, SRC, arch, FK_PYTHON_LIVE_CUDA_ARCH_LIST);
	free(arch);
	const cJSON *devs = get(c, "devices"), *x;
	int n = 0;
	if (cJSON_IsArray(devs)) {
		cJSON_ArrayForEach(x, devs)
		{
			if (n >= MAX_DEVICES || !cJSON_IsObject(x))
				break;
			char key[64];
			snprintf(key, sizeof(key), FK_PYTHON_LIVE_DEV_NAME(d), n);
			put_str(f, get(x, "name"), key);
			snprintf(key, sizeof(key), FK_PYTHON_LIVE_DEV_CC(d), n);
			put_str(f, get(x, "cc"), key);
			if (num_of(get(x, "total_memory"), 0, 1e15, &d))
				facts_put_int(f, SRC, (long long)d, FK_PYTHON_LIVE_DEV_TOTAL_MEMORY_BYTES(d), n);
			if (num_of(get(x, "multi_processor_count"), 0, 1e5, &d))
				facts_put_int(f, SRC, (long long)d, FK_PYTHON_LIVE_DEV_SM_COUNT(d), n);
			char *de = str_of(get(x, "error"));
			if (de)
				facts_put_str(f, SRC, de, FK_PYTHON_LIVE_DEV_ERROR(d), n);
			free(de);
			n++;
		}
		facts_put_int(f, SRC, n, FK_PYTHON_LIVE_DEV_COUNT);
	}
}

static void parse_cudnn(facts *f, const cJSON *c)
{
	if (!cJSON_IsObject(c))
		return;
	put_bool(f, get(c, "enabled"), FK_PYTHON_LIVE_CUDNN_ENABLED);
	put_bool(f, get(c, "available"), FK_PYTHON_LIVE_CUDNN_AVAILABLE);
	double d;
	const cJSON *v = get(c, "version");
	if (num_of(v, 0, 1e8, &d))
		facts_put_int(f, SRC, (long long)d, FK_PYTHON_LIVE_CUDNN_VERSION);
	else if (cJSON_IsNull(v))
		facts_put_state(f, FACT_ABSENT, SRC, "torch.backends.cudnn.version() is None", FK_PYTHON_LIVE_CUDNN_VERSION);
	char *e = str_of(get(c, "error"));
	if (e)
		facts_put_str(f, SRC, e, FK_PYTHON_LIVE_CUDNN_ERROR);
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
		facts_put_int(f, SRC, (long long)d, FK_PYTHON_LIVE_SMOKE_DEVICE);
	put_str(f, get(first, "matmul"), FK_PYTHON_LIVE_SMOKE_MATMUL);
	put_str(f, get(first, "conv"), FK_PYTHON_LIVE_SMOKE_CONV);
	if (num_of(get(first, "matmul_rel_err"), 0, 1e300, &d))
		facts_put_real(f, SRC, d, FK_PYTHON_LIVE_SMOKE_MATMUL_REL_ERR);
	if (num_of(get(first, "conv_rel_err"), 0, 1e300, &d))
		facts_put_real(f, SRC, d, FK_PYTHON_LIVE_SMOKE_CONV_REL_ERR);
}

static void parse_maps(facts *f, const cJSON *m)
{
	if (!cJSON_IsArray(m)) {
		facts_put_state(f, FACT_ABSENT, SRC, "no mapped libraries reported", FK_PYTHON_LIVE_MAPS_COUNT);
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
			facts_put_str(f, SRC, path, FK_PYTHON_LIVE_MAPS_PATH(d), n);
			facts_put_str(f, SRC, real && real[0] == '/' ? real : path, FK_PYTHON_LIVE_MAPS_REAL(d), n);
			n++;
		}
		free(path);
		free(real);
	}
	facts_put_int(f, SRC, n, FK_PYTHON_LIVE_MAPS_COUNT);
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
	put_str(f, get(py, "version"), FK_PYTHON_LIVE_PYTHON_VERSION);
	put_str(f, get(py, "executable"), FK_PYTHON_LIVE_EXECUTABLE);
	put_str(f, get(py, "prefix"), FK_PYTHON_LIVE_PREFIX);
	parse_torch(f, get(doc, "torch"));
	parse_cuda(f, get(doc, "cuda"));
	parse_cudnn(f, get(doc, "cudnn"));
	put_str(f, get(doc, "nccl"), FK_PYTHON_LIVE_NCCL_VERSION);
	char *ne = str_of(get(doc, "nccl_error"));
	if (ne)
		facts_put_str(f, SRC, ne, FK_PYTHON_LIVE_NCCL_ERROR);
	free(ne);
	parse_smoke(f, get(doc, "smoke"));
	parse_maps(f, get(doc, "maps"));
	char *pe = str_of(get(doc, "probe_error"));
	if (pe)
		facts_put_str(f, SRC, pe, FK_PYTHON_LIVE_PROBE_ERROR);
	free(pe);
	const cJSON *secs = get(doc, "seconds");
	char *warm = str_of(get(doc, "warm"));
	if (warm)
		facts_put_str(f, SRC, warm, FK_PYTHON_LIVE_WARM);
	free(warm);
	static const char *const stages[] = {"import", "is_available", "smoke", "warm"};
	for (size_t i = 0; i < GV_ARRAY_LEN(stages); i++) {
		double d;
		if (num_of(get(secs, stages[i]), 0, 1e6, &d))
			facts_put_real(f, SRC, d, FK_PYTHON_LIVE_SECONDS_STAGE, stages[i]);
	}
	cJSON_Delete(doc);
	return PROBE_OUT_OK;
}
