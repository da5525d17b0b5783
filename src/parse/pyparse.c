#include "parse/pyparse.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Start of the next line, or NULL at the end. */
static const char *next_line(const char *p)
{
	const char *nl = strchr(p, '\n');
	return nl ? nl + 1 : NULL;
}

/* The value q[0..len) into out (n bytes, truncated), cleaned of control characters; nothing when
 * n is 0 (the caller only asks whether the value is there). */
static void copy_value(char *out, size_t n, const char *q, size_t len)
{
	if (!n)
		return;
	if (len >= n)
		len = n - 1;
	memcpy(out, q, len);
	out[len] = '\0';
	str_sanitize(out);
}

static bool is_ident(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

bool pyparse_assign(const char *text, const char *name, char *out, size_t n, bool *is_none)
{
	size_t nl = strlen(name);
	if (is_none)
		*is_none = false;
	if (n)
		out[0] = '\0';
	for (const char *p = text; p && *p; p = next_line(p)) {
		if (strncmp(p, name, nl) != 0 || is_ident(p[nl]))
			continue;
		const char *q = p + nl;
		while (*q == ' ' || *q == '\t')
			q++;
		if (*q == ':') { /* annotation: skip to '=' on this line */
			while (*q && *q != '=' && *q != '\n')
				q++;
		}
		if (*q != '=' || q[1] == '=')
			continue;
		q++;
		while (*q == ' ' || *q == '\t')
			q++;
		if (strncmp(q, "None", 4) == 0 && !is_ident(q[4])) {
			if (is_none)
				*is_none = true;
			return true;
		}
		char quote = *q;
		if (quote != '\'' && quote != '"')
			return false;
		q++;
		const char *end = q;
		while (*end && *end != quote && *end != '\n')
			end++;
		if (*end != quote)
			return false;
		size_t len = (size_t)(end - q);
		copy_value(out, n, q, len);
		return true;
	}
	return false;
}

bool pyparse_cfg(const char *text, const char *key, char *out, size_t n)
{
	size_t kl = strlen(key);
	for (const char *p = text; p && *p; p = next_line(p)) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncasecmp(p, key, kl) != 0)
			continue;
		const char *q = p + kl;
		while (*q == ' ' || *q == '\t')
			q++;
		if (*q != '=')
			continue;
		q++;
		while (*q == ' ' || *q == '\t')
			q++;
		size_t len = strcspn(q, "\r\n");
		while (len && (q[len - 1] == ' ' || q[len - 1] == '\t'))
			len--;
		copy_value(out, n, q, len);
		return true;
	}
	return false;
}

bool pyparse_metadata_field(const char *text, const char *field, char *out, size_t n)
{
	size_t fl = strlen(field);
	for (const char *p = text; p && *p; p = next_line(p)) {
		if (*p == '\n' || (*p == '\r' && p[1] == '\n'))
			return false; /* end of the headers */
		if (strncasecmp(p, field, fl) != 0 || p[fl] != ':')
			continue;
		const char *q = p + fl + 1;
		while (*q == ' ' || *q == '\t')
			q++;
		size_t len = strcspn(q, "\r\n");
		while (len && q[len - 1] == ' ')
			len--;
		copy_value(out, n, q, len);
		return true;
	}
	return false;
}

void pyparse_normalize_name(const char *in, char *out, size_t n)
{
	if (!n)
		return;
	size_t o = 0;
	bool dash = false;
	for (const char *p = in; *p && o + 1 < n; p++) {
		char c = *p;
		if (c == '-' || c == '_' || c == '.') {
			dash = true;
			continue;
		}
		if (dash && o > 0 && o + 1 < n)
			out[o++] = '-';
		dash = false;
		if (o + 1 < n)
			out[o++] = (char)tolower((unsigned char)c);
	}
	out[o] = '\0';
}

void pyparse_requires_pins(const char *text, strlist *names, strlist *versions)
{
	static const char key[] = "Requires-Dist:";
	for (const char *p = text; p && *p; p = next_line(p)) {
		if (*p == '\n' || (*p == '\r' && p[1] == '\n'))
			return;
		if (strncasecmp(p, key, sizeof(key) - 1) != 0)
			continue;
		const char *q = p + sizeof(key) - 1;
		while (*q == ' ' || *q == '\t')
			q++;
		size_t len = strcspn(q, ";\r\n");
		char *spec = xstrndup(q, len);
		/* name[extras] (==ver) or name==ver */
		size_t nl = strcspn(spec, "[=<>!~ (");
		char *eq = strstr(spec, "==");
		if (nl && eq && eq[2] != '=') {
			char *name = xstrndup(spec, nl);
			char *v = eq + 2;
			while (*v == ' ')
				v++;
			size_t vl = strcspn(v, " ,;)*");
			if (vl && v[vl] != '*' && names->n < 256) {
				char norm[128];
				pyparse_normalize_name(name, norm, sizeof(norm));
				char *ver = xstrndup(v, vl);
				str_sanitize(ver);
				str_sanitize(norm);
				sl_push(names, norm);
				sl_push_owned(versions, ver);
			}
			free(name);
		}
		free(spec);
	}
}

bool pyparse_dist_info_dir(const char *dirname, char *name, size_t nn, char *version, size_t vn)
{
	const char *suffix = str_ends(dirname, ".dist-info") ? ".dist-info" : str_ends(dirname, ".egg-info") ? ".egg-info" : NULL;
	if (!suffix)
		return false;
	size_t len = strlen(dirname) - strlen(suffix);
	char *stem = xstrndup(dirname, len);
	char *dash = strchr(stem, '-'); /* wheel names escape '-' to '_', so the first '-' splits */
	bool ok = dash && dash != stem && dash[1];
	if (ok) {
		*dash = '\0';
		pyparse_normalize_name(stem, name, nn);
		str_copy(version, vn, dash + 1);
		/* egg-info may append "-py3.11" */
		char *py = strstr(version, "-py");
		if (py)
			*py = '\0';
		str_sanitize(version);
	}
	free(stem);
	return ok;
}

void pyparse_record(const char *text, void (*fn)(const char *path, void *ctx), void *ctx)
{
	for (const char *p = text; p && *p; p = next_line(p)) {
		char path[1024];
		size_t o = 0;
		if (*p == '"') {
			const char *q = p + 1;
			while (*q && *q != '\n' && o + 1 < sizeof(path)) {
				if (*q == '"') {
					if (q[1] == '"') {
						path[o++] = '"';
						q += 2;
						continue;
					}
					break;
				}
				path[o++] = *q++;
			}
		} else {
			size_t len = strcspn(p, ",\r\n");
			if (len >= sizeof(path))
				continue;
			memcpy(path, p, len);
			o = len;
		}
		path[o] = '\0';
		if (o)
			fn(path, ctx);
	}
}

bool pyparse_conda_meta(const char *filename, char *name, size_t nn, char *version, size_t vn, char *build,
			size_t bn)
{
	if (!str_ends(filename, ".json"))
		return false;
	char *s = xstrndup(filename, strlen(filename) - 5);
	char *b = strrchr(s, '-');
	bool ok = false;
	if (b && b != s) {
		*b = '\0';
		char *v = strrchr(s, '-');
		if (v && v != s && v[1] && b[1]) {
			*v = '\0';
			str_copy(name, nn, s);
			str_copy(version, vn, v + 1);
			str_copy(build, bn, b + 1);
			str_sanitize(name);
			str_sanitize(version);
			str_sanitize(build);
			ok = true;
		}
	}
	free(s);
	return ok;
}

/* Reads "11.8" or "118"/"120" (no dot: last digit is the minor) after a prefix. */
static bool read_cuda_digits(const char *p, char *out, size_t n)
{
	int maj = 0, min = 0;
	if (!isdigit((unsigned char)*p))
		return false;
	const char *q = p;
	while (isdigit((unsigned char)*q))
		q++;
	size_t digits = (size_t)(q - p);
	if (*q == '.' && isdigit((unsigned char)q[1])) {
		maj = atoi(p);
		min = atoi(q + 1);
	} else if (digits >= 2 && digits <= 4) {
		char tmp[8];
		memcpy(tmp, p, digits);
		tmp[digits] = '\0';
		min = tmp[digits - 1] - '0';
		tmp[digits - 1] = '\0';
		maj = atoi(tmp);
	} else {
		return false;
	}
	if (maj <= 0 || maj > 99 || min > 9)
		return false;
	snprintf(out, n, "%d.%d", maj, min);
	return true;
}

bool pyparse_conda_torch_build(const char *build, char *cuda, size_t cn, char *cudnn, size_t dn, bool *cpu)
{
	if (cn)
		cuda[0] = '\0';
	if (dn)
		cudnn[0] = '\0';
	*cpu = false;
	if (!build || !*build)
		return false;
	bool any = false;
	strlist parts = {0};
	sl_split(&parts, build, "_", false);
	for (size_t i = 0; i < parts.n; i++) {
		const char *t = parts.v[i];
		if (strcmp(t, "cpu") == 0 || str_starts(t, "cpu")) {
			*cpu = true;
			any = true;
		} else if (str_starts(t, "cudnn")) {
			const char *v = t + 5;
			if (isdigit((unsigned char)*v)) {
				str_copy(cudnn, dn, v);
				str_sanitize(cudnn);
			}
		} else if (str_starts(t, "cuda")) {
			if (read_cuda_digits(t + 4, cuda, cn))
				any = true;
		}
	}
	sl_free(&parts);
	return any;
}

void pyparse_so_version(const char *filename, char *out, size_t n)
{
	const char *so = strstr(filename, ".so.");
	if (n)
		out[0] = '\0';
	if (!so)
		return;
	const char *v = so + 4;
	size_t len = 0;
	while (v[len] && (isdigit((unsigned char)v[len]) || v[len] == '.'))
		len++;
	while (len && v[len - 1] == '.')
		len--;
	if (!len || v[len] != '\0')
		return;
	if (len >= n)
		len = n ? n - 1 : 0;
	memcpy(out, v, len);
	out[len] = '\0';
}

bool lib_versions_differ(const char *a, const char *b, int depth)
{
	if (!a || !b || !*a || !*b)
		return false;
	strlist pa = {0}, pb = {0};
	sl_split(&pa, a, ".", false);
	sl_split(&pb, b, ".", false);
	size_t k = pa.n < pb.n ? pa.n : pb.n;
	if (depth > 0 && k > (size_t)depth)
		k = (size_t)depth;
	bool differ = false;
	for (size_t i = 0; i < k && !differ; i++)
		differ = atol(pa.v[i]) != atol(pb.v[i]);
	sl_free(&pa);
	sl_free(&pb);
	return differ;
}
