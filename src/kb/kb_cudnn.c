#include "kb/kb_cudnn.h"

#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* v truncated to as many dotted parts as bound has, "x" parts matching anything */
static int cmp_prefix(const char *v, const char *bound)
{
	int parts = 1;
	for (const char *p = bound; *p; p++)
		if (*p == '.')
			parts++;
	char vt[64], bt[64];
	str_copy(bt, sizeof(bt), bound);
	char *x = strstr(bt, ".x");
	if (x) {
		*x = '\0';
		parts--;
	}
	str_copy(vt, sizeof(vt), v);
	int seen = 0;
	for (char *p = vt; *p; p++)
		if (*p == '.' && ++seen == parts) {
			*p = '\0';
			break;
		}
	return version_cmp(vt, bt);
}

/* "7.6.0-7.6.2", "8.0.0-8.0.1 (preview)", "8.8.x", "9.11-9.16", "9.17.0" */
static bool in_range(const char *cell, const char *v)
{
	char c[64];
	str_copy(c, sizeof(c), cell);
	char *paren = strchr(c, '(');
	if (paren)
		*paren = '\0';
	char *t = str_trim(c);
	size_t n = strlen(t);
	while (n && (t[n - 1] == ' '))
		t[--n] = '\0';
	char *dash = strchr(t, '-');
	if (dash) {
		*dash = '\0';
		return cmp_prefix(v, str_trim(t)) >= 0 && cmp_prefix(v, str_trim(dash + 1)) <= 0;
	}
	return *t && cmp_prefix(v, t) == 0;
}

unsigned long kb_cudnn_cuda_majors(const kb *k, const char *cudnn_version)
{
	const csv_table *t = kb_table(k, "cudnn_cuda");
	if (!t || !cudnn_version)
		return 0;
	unsigned long set = 0;
	for (size_t r = 0; r < t->nrows; r++) {
		if (!in_range(csv_cell(t, r, "cudnn_version"), cudnn_version))
			continue;
		strlist majors = {0};
		sl_split(&majors, csv_cell(t, r, "cuda_major"), "/ ", false);
		for (size_t i = 0; i < majors.n; i++) {
			int m = atoi(majors.v[i]);
			if (m > 0 && m < (int)(sizeof(unsigned long) * 8))
				set |= 1ul << m;
		}
		sl_free(&majors);
	}
	return set;
}
