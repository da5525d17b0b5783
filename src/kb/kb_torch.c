#include "kb/kb_torch.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "cuda/archlist.h"

bool torch_variant_cuda(const char *variant, char *cuda, size_t n)
{
	if (!variant || !str_starts(variant, "cu"))
		return false;
	const char *d = variant + 2;
	size_t len = strlen(d);
	if (len < 2 || len > 4)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isdigit((unsigned char)d[i]))
			return false;
	snprintf(cuda, n, "%.*s.%c", (int)(len - 1), d, d[len - 1]);
	return true;
}

bool torch_cuda_variant(const char *cuda, char *variant, size_t n)
{
	int a, b;
	if (!cuda || version_parse(cuda, &a, &b, NULL) < 2 || a <= 0 || a > 99 || b < 0 || b > 9)
		return false;
	snprintf(variant, n, "cu%d%d", a, b);
	return true;
}

void torch_version_label(const char *version, char *out, size_t n)
{
	const char *plus = version ? strchr(version, '+') : NULL;
	str_copy(out, n, plus ? plus + 1 : "");
}

void torch_version_release(const char *version, char *out, size_t n)
{
	int a = 0, b = 0;
	if (version && version_parse(version, &a, &b, NULL) >= 2)
		snprintf(out, n, "%d.%d", a, b);
	else
		str_copy(out, n, version ? version : "");
}

/* Does a KB row's release ("2.11", "1.8.1", "1.7.0") name this torch version? 2: exact, 1: by
 * major.minor, 0: no. */
static int release_match(const char *row, const char *version)
{
	int ra, rb, rc = -1, va, vb, vc = -1;
	int rn = version_parse(row, &ra, &rb, &rc);
	int vn = version_parse(version, &va, &vb, &vc);
	if (rn < 2 || vn < 2 || ra != va || rb != vb)
		return 0;
	if (rn >= 3)
		return vn >= 3 && rc == vc ? 2 : (rc == 0 && vn < 3 ? 1 : 0);
	return 1;
}

/* The variants of a cuda_variants cell: bare "cuNNN" tokens; parenthesised remarks are skipped. */
static void parse_variants(const char *cell, strlist *out)
{
	strlist t = {0};
	sl_split(&t, cell, " ,", false);
	for (size_t i = 0; i < t.n; i++) {
		char cuda[8];
		if (torch_variant_cuda(t.v[i], cuda, sizeof(cuda)) && !sl_contains(out, t.v[i]))
			sl_push(out, t.v[i]);
	}
	sl_free(&t);
}

/* From "cu126: 5.0;...;9.0 (verified) | cu128/cu129: 7.0;...;12.0+PTX [unverified]" the dotted list
 * for one variant; *verified when the segment says so. */
static bool arch_for_variant(const char *cell, const char *variant, char *out, size_t n, bool *verified)
{
	strlist segs = {0};
	sl_split(&segs, cell, "|", false);
	bool found = false;
	for (size_t i = 0; i < segs.n && !found; i++) {
		char *seg = str_trim(segs.v[i]);
		char *colon = strchr(seg, ':');
		if (!colon)
			continue;
		*colon = '\0';
		strlist names = {0};
		sl_split(&names, seg, "/ ", false);
		bool mine = sl_contains(&names, variant);
		sl_free(&names);
		if (!mine)
			continue;
		char *list = colon + 1;
		char *rest = list + strcspn(list, "([");
		*verified = strstr(rest, "verified") && !strstr(rest, "unverified");
		*rest = '\0';
		found = arch_tokens_from_dotted(list, out, n);
	}
	sl_free(&segs);
	return found;
}

static void fill_cudnn(const kb *k, torch_build *b)
{
	const csv_table *t = kb_table(k, "torch_cudnn");
	if (!t)
		return;
	int best = 0;
	for (size_t r = 0; r < t->nrows; r++) {
		if (strcmp(csv_cell(t, r, "cuda_variant"), b->variant) != 0)
			continue;
		int m = release_match(csv_cell(t, r, "torch_version"), b->version);
		if (m > best) {
			best = m;
			str_copy(b->cudnn, sizeof(b->cudnn), csv_cell(t, r, "cudnn_version"));
			str_copy(b->nccl, sizeof(b->nccl), csv_cell(t, r, "nccl_version"));
		}
	}
}

size_t kb_torch_builds(const kb *k, torch_build **out)
{
	size_t n;
	const torch_build *all = kb_memo(k, KB_MEMO_TORCH_BUILDS, &n);
	*out = NULL;
	if (n) {
		*out = xcalloc(n, sizeof(**out));
		memcpy(*out, all, n * sizeof(**out));
	}
	return n;
}

size_t kb_torch_builds_make(const kb *k, void **result)
{
	torch_build **out = (torch_build **)result;
	*out = NULL;
	const csv_table *t = kb_table(k, "torch_cuda");
	if (!t)
		return 0;
	size_t n = 0, cap = 0;
	torch_build *v = NULL;
	for (size_t r = 0; r < t->nrows; r++) {
		strlist vars = {0};
		parse_variants(csv_cell(t, r, "cuda_variants"), &vars);
		char dflt[16] = "";
		strlist d = {0};
		parse_variants(csv_cell(t, r, "default_pip_variant"), &d);
		if (d.n)
			str_copy(dflt, sizeof(dflt), d.v[0]);
		sl_free(&d);
		for (size_t i = 0; i < vars.n; i++) {
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				v = xrealloc(v, cap * sizeof(*v));
			}
			torch_build *b = &v[n++];
			memset(b, 0, sizeof(*b));
			str_copy(b->version, sizeof(b->version), csv_cell(t, r, "torch_version"));
			str_copy(b->variant, sizeof(b->variant), vars.v[i]);
			torch_variant_cuda(b->variant, b->cuda, sizeof(b->cuda));
			b->is_default = strcmp(dflt, b->variant) == 0;
			arch_for_variant(csv_cell(t, r, "torch_cuda_arch_list_per_variant"), b->variant, b->arch,
					 sizeof(b->arch), &b->arch_verified);
			fill_cudnn(k, b);
		}
		sl_free(&vars);
	}
	*out = v;
	return n;
}

bool kb_torch_build(const kb *k, const char *torch_version, const char *variant, torch_build *out)
{
	if (!torch_version)
		return false;
	size_t n;
	const torch_build *all = kb_memo(k, KB_MEMO_TORCH_BUILDS, &n);
	int best = 0;
	for (size_t i = 0; i < n; i++) {
		if (variant ? strcmp(all[i].variant, variant) != 0 : !all[i].is_default)
			continue;
		int m = release_match(all[i].version, torch_version);
		if (m > best) {
			best = m;
			*out = all[i];
		}
	}
	return best > 0;
}

bool kb_torchvision(const kb *k, const char *torch_version, char *out, size_t n, bool *verified)
{
	const csv_table *t = kb_table(k, "torch_vision");
	if (!t || !torch_version)
		return false;
	int best = 0;
	for (size_t r = 0; r < t->nrows; r++) {
		int m = release_match(csv_cell(t, r, "torch_version"), torch_version);
		const char *tv = csv_cell(t, r, "torchvision_version");
		if (m > best && *tv) {
			best = m;
			str_copy(out, n, tv);
			if (verified)
				*verified = !strstr(csv_cell(t, r, "verification"), "unverified");
		}
	}
	return best > 0;
}

drv_fit kb_driver_fit(const kb *k, const char *driver_version, long long driver_cuda, const char *cuda, char *need,
		      size_t n)
{
	if (need && n)
		need[0] = '\0';
	int cmaj, cmin;
	if (!cuda || version_parse(cuda, &cmaj, &cmin, NULL) < 2)
		return DRV_FIT_UNKNOWN;
	char tk[32] = "", compat[32] = "";
	bool known = kb_cuda_min_driver(k, cuda, tk, sizeof(tk), compat, sizeof(compat));
	if (known && need)
		str_copy(need, n, *compat ? compat : tk);
	if (driver_version && *driver_version && known) {
		if (version_cmp(driver_version, tk) >= 0)
			return DRV_FIT_NATIVE;
		if (*compat && version_cmp(driver_version, compat) >= 0)
			return DRV_FIT_MVC;
		if (need)
			str_copy(need, n, *compat ? compat : tk);
		return DRV_FIT_TOO_OLD;
	}
	if (driver_cuda > 0) {
		int dmaj = (int)(driver_cuda / 1000), dmin = (int)(driver_cuda % 1000) / 10;
		if (cmaj < dmaj || (cmaj == dmaj && cmin <= dmin))
			return DRV_FIT_NATIVE;
		/* same major from 11 on: minor-version compatibility, when the KB says there is a floor */
		if (cmaj == dmaj && known && *compat)
			return DRV_FIT_MVC;
		return DRV_FIT_TOO_OLD;
	}
	return DRV_FIT_UNKNOWN;
}

const char *drv_fit_name(drv_fit f)
{
	switch (f) {
	case DRV_FIT_NATIVE: return "native";
	case DRV_FIT_MVC: return "minor-version compatibility";
	case DRV_FIT_TOO_OLD: return "too old";
	default: return "unknown";
	}
}

bool kb_torch_python(const kb *k, const char *release, char *lo, size_t nlo, char *hi, size_t nhi)
{
	const csv_table *t = kb_table(k, "torch_cuda");
	if (!t || !release)
		return false;
	int best = 0;
	const char *cell = NULL;
	for (size_t r = 0; r < t->nrows; r++) {
		int m = release_match(csv_cell(t, r, "torch_version"), release);
		if (m > best) {
			best = m;
			cell = csv_cell(t, r, "python_versions");
		}
	}
	/* "3.10-3.14 (3.14t experimental)": the range before any remark; experimental builds are not
	 * promised */
	int a, b, c, d;
	char tail;
	if (!cell || sscanf(cell, "%d.%d-%d.%d%c", &a, &b, &c, &d, &tail) < 4 || a != 3 || c != 3)
		return false;
	snprintf(lo, nlo, "%d.%d", a, b);
	snprintf(hi, nhi, "%d.%d", c, d);
	return true;
}
