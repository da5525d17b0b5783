#include "toolkit/cuda_version.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* A version token: digits and dots, starting with a digit, at most 31 chars, at least "X.Y". */
static bool take_version(const char *s, size_t avail, char *out, size_t n)
{
	size_t k = 0;
	if (!avail || !isdigit((unsigned char)s[0]))
		return false;
	while (k < avail && k < 31 && (isdigit((unsigned char)s[k]) || s[k] == '.'))
		k++;
	while (k && s[k - 1] == '.')
		k--;
	char buf[32];
	memcpy(buf, s, k);
	buf[k] = '\0';
	int a, b, c;
	if (!strchr(buf, '.') || version_parse(buf, &a, &b, &c) < 2)
		return false;
	str_copy(out, n, buf);
	return true;
}

/* Finds needle in the first len bytes of hay (which may hold NULs). */
static const char *find(const char *hay, size_t len, const char *needle)
{
	size_t m = strlen(needle);
	if (m == 0 || m > len)
		return NULL;
	for (size_t i = 0; i + m <= len; i++)
		if (hay[i] == needle[0] && memcmp(hay + i, needle, m) == 0)
			return hay + i;
	return NULL;
}

/* Just past the first marker in the first len bytes of text (NULL text or no marker: NULL). */
static const char *after(const char *text, size_t len, const char *marker)
{
	const char *p = text ? find(text, len, marker) : NULL;
	return p ? p + strlen(marker) : NULL;
}

bool cuda_version_from_json(const char *text, size_t len, char *out, size_t n)
{
	if (n)
		out[0] = '\0';
	if (!text || len == 0)
		return false;
	cJSON *j = cJSON_ParseWithLength(text, len);
	if (!j)
		return false;
	bool ok = false;
	const cJSON *cuda = cJSON_GetObjectItemCaseSensitive(j, "cuda");
	const cJSON *v = cJSON_IsObject(cuda) ? cJSON_GetObjectItemCaseSensitive(cuda, "version") : NULL;
	if (cJSON_IsString(v) && v->valuestring)
		ok = take_version(v->valuestring, strlen(v->valuestring), out, n);
	if (!ok) {
		/* some builds only carry the components: take cudart's (the runtime) */
		const cJSON *rt = cJSON_GetObjectItemCaseSensitive(j, "cuda_cudart");
		v = cJSON_IsObject(rt) ? cJSON_GetObjectItemCaseSensitive(rt, "version") : NULL;
		if (cJSON_IsString(v) && v->valuestring)
			ok = take_version(v->valuestring, strlen(v->valuestring), out, n);
	}
	cJSON_Delete(j);
	return ok;
}

bool cuda_version_from_txt(const char *text, size_t len, char *out, size_t n)
{
	if (n)
		out[0] = '\0';
	const char *p = after(text, len, "CUDA Version ");
	return p && take_version(p, len - (size_t)(p - text), out, n);
}

bool cuda_version_from_nvcc(const char *text, size_t len, char *out, size_t n)
{
	if (n)
		out[0] = '\0';
	const char *rel = after(text, len, "release ");
	if (!rel)
		return false;
	size_t rest = len - (size_t)(rel - text);
	char release[32];
	if (!take_version(rel, rest, release, sizeof(release)))
		return false;
	/* ", V13.0.88" on the same line gives the full version */
	const char *eol = memchr(rel, '\n', rest);
	size_t line = eol ? (size_t)(eol - rel) : rest;
	const char *v = find(rel, line, ", V");
	char full[32];
	if (v && take_version(v + 3, line - (size_t)(v + 3 - rel), full, sizeof(full)) && str_starts(full, release)) {
		str_copy(out, n, full);
		return true;
	}
	str_copy(out, n, release);
	return true;
}

bool header_define_int(const char *text, size_t len, const char *name, long *value)
{
	if (!text)
		return false;
	size_t m = strlen(name);
	size_t i = 0;
	while (i < len) {
		size_t e = i;
		while (e < len && text[e] != '\n')
			e++;
		const char *l = text + i, *end = text + e;
		while (l < end && (*l == ' ' || *l == '\t'))
			l++;
		if (l < end && *l == '#') {
			l++;
			while (l < end && (*l == ' ' || *l == '\t'))
				l++;
			if ((size_t)(end - l) > 7 && memcmp(l, "define", 6) == 0 && (l[6] == ' ' || l[6] == '\t')) {
				l += 7;
				while (l < end && (*l == ' ' || *l == '\t'))
					l++;
				if ((size_t)(end - l) > m && memcmp(l, name, m) == 0 && (l[m] == ' ' || l[m] == '\t')) {
					l += m;
					while (l < end && (*l == ' ' || *l == '\t' || *l == '('))
						l++;
					long v = 0;
					int digits = 0;
					while (l < end && isdigit((unsigned char)*l) && digits < 9) {
						v = v * 10 + (*l++ - '0');
						digits++;
					}
					if (digits && (l == end || !isdigit((unsigned char)*l))) {
						*value = v;
						return true;
					}
					return false;
				}
			}
		}
		i = e + 1;
	}
	return false;
}

/* The version macros of each library's header: MAJOR.MINOR.PATCH, and .BUILD when there is one. */
static const struct {
	const char *what, *major, *minor, *patch, *build;
} header_macros[] = {
	{"cudnn", "CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL", NULL},
	{"nccl", "NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH", NULL},
	{"cublas", "CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR", "CUBLAS_VER_PATCH", "CUBLAS_VER_BUILD"},
	{"cusparse", "CUSPARSE_VER_MAJOR", "CUSPARSE_VER_MINOR", "CUSPARSE_VER_PATCH", "CUSPARSE_VER_BUILD"},
};

bool header_version(const char *what, const char *text, size_t len, char *out, size_t n)
{
	long a, b, c, d, v;
	if (n)
		out[0] = '\0';
	for (size_t i = 0; i < GV_ARRAY_LEN(header_macros); i++) {
		if (strcmp(what, header_macros[i].what) != 0)
			continue;
		if (!header_define_int(text, len, header_macros[i].major, &a) ||
		    !header_define_int(text, len, header_macros[i].minor, &b) ||
		    !header_define_int(text, len, header_macros[i].patch, &c))
			return false;
		if (header_macros[i].build && header_define_int(text, len, header_macros[i].build, &d))
			snprintf(out, n, "%ld.%ld.%ld.%ld", a, b, c, d);
		else
			snprintf(out, n, "%ld.%ld.%ld", a, b, c);
		return true;
	}
	if (strcmp(what, "cudart") == 0 || strcmp(what, "cuda") == 0) {
		if (header_define_int(text, len, strcmp(what, "cudart") == 0 ? "CUDART_VERSION" : "CUDA_VERSION", &v) &&
		    v >= 1000) {
			snprintf(out, n, "%ld.%ld", v / 1000, (v % 1000) / 10);
			return true;
		}
	}
	return false;
}

bool libname_version(const char *file_name, char *out, size_t n)
{
	if (n)
		out[0] = '\0';
	const char *so = file_name ? strstr(file_name, ".so.") : NULL;
	if (!so)
		return false;
	so += 4;
	size_t k = strspn(so, "0123456789.");
	if (so[k] != '\0')
		return false;
	return take_version(so, k, out, n);
}

int libname_major(const char *file_name)
{
	const char *so = file_name ? strstr(file_name, ".so.") : NULL;
	if (!so || !isdigit((unsigned char)so[4]))
		return -1;
	long v = strtol(so + 4, NULL, 10);
	return v > 100000 ? -1 : (int)v;
}

bool version_major_minor(const char *v, char *out, size_t n)
{
	int a, b;
	if (n)
		out[0] = '\0';
	if (!v || version_parse(v, &a, &b, NULL) < 2)
		return false;
	snprintf(out, n, "%d.%d", a, b);
	return true;
}
