/* Parsers of CUDA_VISIBLE_DEVICES, TORCH_CUDA_ARCH_LIST and PYTORCH_(CUDA_)ALLOC_CONF. */
#include "parse/envparse.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- CUDA_VISIBLE_DEVICES ------------------------------------------------------------ */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool all_digits(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

static bool hex_dashes(const char *s, size_t n)
{
	bool digit = false;
	for (size_t i = 0; i < n; i++) {
		if (isxdigit((unsigned char)s[i]))
			digit = true;
		else if (s[i] != '-')
			return false;
	}
	return digit;
}

/* "MIG-GPU-<uuid>/<gi>/<ci>", the form of drivers before R470 */
static bool legacy_mig(const char *s, size_t n)
{
	if (n < 4 || strncmp(s, "GPU-", 4) != 0)
		return false;
	const char *slash = memchr(s, '/', n);
	if (!slash || !hex_dashes(s + 4, (size_t)(slash - s - 4)))
		return false;
	const char *rest = slash + 1, *end = s + n;
	const char *slash2 = memchr(rest, '/', (size_t)(end - rest));
	return slash2 && all_digits(rest, (size_t)(slash2 - rest)) && all_digits(slash2 + 1, (size_t)(end - slash2 - 1));
}

static void classify(cvd_entry *e, const char *s, size_t n)
{
	e->index = -1;
	if (n == 0) {
		e->kind = CVD_EMPTY;
	} else if (all_digits(s, n)) {
		e->kind = CVD_INDEX;
		long long v = 0;
		for (size_t i = 0; i < n && v >= 0; i++) {
			v = v * 10 + (s[i] - '0');
			if (v > INT_MAX)
				v = -1; /* absurdly large: out of range whatever the machine */
		}
		e->index = v;
	} else if (s[0] == '-' && all_digits(s + 1, n - 1)) {
		e->kind = CVD_NEGATIVE;
	} else if (n > 4 && strncmp(s, "GPU-", 4) == 0 && hex_dashes(s + 4, n - 4)) {
		e->kind = CVD_GPU_UUID;
	} else if (n > 4 && strncmp(s, "MIG-", 4) == 0 && (hex_dashes(s + 4, n - 4) || legacy_mig(s + 4, n - 4))) {
		e->kind = CVD_MIG_UUID;
	} else {
		e->kind = CVD_INVALID;
	}
}

void cvd_parse(const char *s, size_t max_entries, cvd_list *out)
{
	memset(out, 0, sizeof(*out));
	if (!s || !*s)
		return;
	size_t cap = 0;
	for (const char *p = s;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		const char *a = p, *b = p + len;
		bool spaces = false;
		while (a < b && is_blank(*a))
			a++, spaces = true;
		while (b > a && is_blank(b[-1]))
			b--, spaces = true;
		if (spaces)
			out->spaces = true;
		if (out->n < max_entries) {
			if (out->n == cap) {
				cap = cap ? cap * 2 : 8;
				if (cap > max_entries)
					cap = max_entries;
				out->v = xrealloc(out->v, cap * sizeof(*out->v));
			}
			cvd_entry *e = &out->v[out->n++];
			memset(e, 0, sizeof(*e));
			e->spaces = spaces;
			classify(e, a, (size_t)(b - a));
			size_t tl = (size_t)(b - a) < sizeof(e->text) - 1 ? (size_t)(b - a) : sizeof(e->text) - 1;
			memcpy(e->text, a, tl);
			e->text[tl] = '\0';
			str_sanitize(e->text);
		}
		out->total++;
		if (!comma)
			break;
		p = comma + 1;
	}
}

void cvd_free(cvd_list *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

const char *cvd_kind_name(cvd_kind k)
{
	switch (k) {
	case CVD_INDEX: return "index";
	case CVD_GPU_UUID: return "gpu_uuid";
	case CVD_MIG_UUID: return "mig_uuid";
	case CVD_NEGATIVE: return "negative";
	case CVD_EMPTY: return "empty";
	case CVD_INVALID: return "invalid";
	}
	return "invalid";
}

const char *cvd_stop_text(cvd_stop s)
{
	switch (s) {
	case CVD_OK: return "ok";
	case CVD_STOP_EMPTY: return "an empty entry";
	case CVD_STOP_NEGATIVE: return "a negative index";
	case CVD_STOP_INVALID: return "neither an index nor a GPU-/MIG- UUID";
	case CVD_STOP_RANGE: return "an index beyond the GPUs of this machine";
	case CVD_STOP_UNKNOWN: return "a UUID that matches no GPU of this machine";
	case CVD_STOP_AMBIGUOUS: return "a UUID prefix that matches several GPUs";
	case CVD_STOP_DUPLICATE: return "a GPU listed twice";
	case CVD_STOP_MIXED: return "indexes and UUIDs mixed in one list";
	}
	return "?";
}

static bool prefix_ci(const char *prefix, const char *s)
{
	for (; *prefix; prefix++, s++)
		if (tolower((unsigned char)*prefix) != tolower((unsigned char)*s))
			return false;
	return true;
}

/* What an entry resolved to: an index as itself (>= 0), GPU i of NVML as -1 - i (kept apart
 * from indexes: CUDA's order may differ from NVML's), MIG device k as CVD_MIG_BASE - k. */
#define CVD_MIG_BASE (-(1LL << 40))

/* The one of names[0..n) that text is a prefix of (case-insensitive): *match is base - its index;
 * none is unknown, more than one ambiguous. */
static cvd_stop by_prefix(const char *text, const char *const *names, size_t n, long long base, long long *match)
{
	int hits = 0;
	for (size_t i = 0; i < n; i++)
		if (names[i] && prefix_ci(text, names[i])) {
			hits++;
			*match = base - (long long)i;
		}
	if (hits == 0)
		return CVD_STOP_UNKNOWN;
	if (hits > 1) {
		*match = CVD_UNRESOLVED;
		return CVD_STOP_AMBIGUOUS;
	}
	return CVD_OK;
}

cvd_stop cvd_entry_check(const cvd_entry *e, const cvd_system *sys, long long *match)
{
	*match = CVD_UNRESOLVED;
	switch (e->kind) {
	case CVD_EMPTY: return CVD_STOP_EMPTY;
	case CVD_NEGATIVE: return CVD_STOP_NEGATIVE;
	case CVD_INVALID: return CVD_STOP_INVALID;
	case CVD_INDEX:
		if (e->index < 0 || (sys && sys->ngpus >= 0 && e->index >= sys->ngpus))
			return CVD_STOP_RANGE;
		*match = e->index;
		return CVD_OK;
	case CVD_GPU_UUID: {
		if (!sys || sys->ngpus < 0 || !sys->uuids)
			return CVD_OK;
		return by_prefix(e->text, sys->uuids, (size_t)sys->ngpus, -1, match);
	}
	case CVD_MIG_UUID: {
		if (!sys || !sys->mig_uuids)
			return CVD_OK;
		if (str_starts(e->text, "MIG-GPU-")) { /* the old form names the parent GPU */
			if (!sys->uuids || sys->ngpus < 0)
				return CVD_OK;
			const char *slash = strchr(e->text, '/');
			size_t ulen = slash ? (size_t)(slash - (e->text + 4)) : strlen(e->text + 4);
			for (int i = 0; i < sys->ngpus; i++)
				if (sys->uuids[i] && strlen(sys->uuids[i]) == ulen &&
				    strncasecmp(sys->uuids[i], e->text + 4, ulen) == 0)
					return CVD_OK;
			return CVD_STOP_UNKNOWN;
		}
		return by_prefix(e->text, sys->mig_uuids, sys->nmig, CVD_MIG_BASE, match);
	}
	}
	return CVD_STOP_INVALID;
}

void cvd_resolve(const cvd_list *l, const cvd_system *sys, cvd_resolution *out)
{
	memset(out, 0, sizeof(*out));
	out->stop_at = -1;
	out->status = xcalloc(l->n ? l->n : 1, sizeof(cvd_stop));
	strbuf fixed;
	sb_init(&fixed);
	for (size_t i = 0; i < l->n; i++) {
		const cvd_entry *e = &l->v[i];
		long long match;
		cvd_stop st = cvd_entry_check(e, sys, &match);
		if (st == CVD_OK) {
			for (size_t j = 0; j < i && st == CVD_OK; j++) {
				long long other;
				if (cvd_entry_check(&l->v[j], sys, &other) != CVD_OK)
					continue;
				/* the same resolved GPU, or the same text when it cannot be resolved */
				if ((match != CVD_UNRESOLVED && other == match) ||
				    (match == CVD_UNRESOLVED && strcmp(l->v[j].text, e->text) == 0))
					st = CVD_STOP_DUPLICATE;
			}
		}
		/* PyTorch reads the list as all indexes or all UUIDs and stops at the first entry of the
		 * other kind (seen on an H200 with torch 2.11: "1,GPU-<uuid of 1>" gives one device) */
		if (st == CVD_OK && i > 0 && (e->kind == CVD_INDEX) != (l->v[0].kind == CVD_INDEX))
			st = CVD_STOP_MIXED;
		out->status[i] = st;
		if (st != CVD_OK) {
			out->bad++;
			if (out->stop_at < 0) {
				out->stop_at = (long)i;
				out->stop = st;
			}
			continue;
		}
		if (out->stop_at < 0) {
			out->visible++;
			if (e->kind == CVD_MIG_UUID)
				out->mig_entries++;
		}
		if (fixed.len)
			sb_addc(&fixed, ',');
		sb_add(&fixed, e->text);
	}
	out->corrected = sb_steal(&fixed);
	/* a duplicate does not just end the list: PyTorch then sees no GPU at all (seen on an H200
	 * with torch 2.11: "0,0" and the same UUID twice both give torch.cuda.device_count() == 0) */
	if (out->stop_at >= 0 && out->stop == CVD_STOP_DUPLICATE)
		out->visible = 0;
}

void cvd_resolution_free(cvd_resolution *r)
{
	free(r->corrected);
	free(r->status);
	r->corrected = NULL;
	r->status = NULL;
}

/* ---- TORCH_CUDA_ARCH_LIST ------------------------------------------------------------ */

#define ARCH_MAX_ENTRIES 256
#define ARCH_MAX_INVALID 16

/* torch.utils.cpp_extension's names; combined names first so they win */
static const struct {
	const char *name, *archs;
} named_arches[] = {
	{"Kepler+Tesla", "3.7"},
	{"Kepler", "3.5+PTX"},
	{"Maxwell+Tegra", "5.3"},
	{"Maxwell", "5.0;5.2+PTX"},
	{"Pascal", "6.0;6.1+PTX"},
	{"Volta+Tegra", "7.2"},
	{"Volta", "7.0+PTX"},
	{"Turing", "7.5+PTX"},
	{"Ampere+Tegra", "8.7"},
	{"Ampere", "8.0;8.6+PTX"},
	{"Ada", "8.9+PTX"},
	{"Hopper", "9.0+PTX"},
	{"Blackwell+Tegra", "11.0"},
	{"Blackwell", "10.0;10.3;12.0;12.1+PTX"},
};

/* compute capabilities that exist (sm_XY targets of nvcc) */
static const int known_cc[] = {30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80,
			       86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121};

static bool cc_known(int major, int minor)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(known_cc); i++)
		if (known_cc[i] == major * 10 + minor)
			return true;
	return false;
}

static bool parse_arch(const char *t, size_t n, arch_entry *e)
{
	memset(e, 0, sizeof(*e));
	size_t i = 0;
	int major = 0, minor = 0;
	size_t d = 0;
	while (i < n && isdigit((unsigned char)t[i]) && d < 2)
		major = major * 10 + (t[i++] - '0'), d++;
	if (d == 0 || i >= n || t[i] != '.')
		return false;
	i++;
	if (i >= n || !isdigit((unsigned char)t[i]))
		return false;
	minor = t[i++] - '0';
	if (i < n && (t[i] == 'a' || t[i] == 'f'))
		e->variant = t[i++];
	if (i < n) {
		if (n - i != 4 || strncmp(t + i, "+PTX", 4) != 0)
			return false;
		e->ptx = true;
	}
	e->major = major;
	e->minor = minor;
	e->known = cc_known(major, minor) && (e->variant == 0 || major >= 9);
	return true;
}

static void arch_add_invalid(arch_list *out, const char *t, size_t n)
{
	if (out->invalid.n >= ARCH_MAX_INVALID)
		return;
	if (n == 0) {
		sl_push(&out->invalid, "(empty entry)");
		return;
	}
	char buf[44];
	size_t l = n < 40 ? n : 40;
	memcpy(buf, t, l);
	strcpy(buf + l, n > 40 ? "..." : "");
	str_sanitize(buf);
	sl_push(&out->invalid, buf);
}

static void arch_add(arch_list *out, const char *t, size_t n, int depth)
{
	for (size_t k = 0; k < GV_ARRAY_LEN(named_arches) && depth == 0; k++)
		if (strlen(named_arches[k].name) == n && strncmp(named_arches[k].name, t, n) == 0) {
			const char *p = named_arches[k].archs;
			while (*p) {
				size_t m = strcspn(p, ";");
				arch_add(out, p, m, 1);
				p += m;
				if (*p)
					p++;
			}
			return;
		}
	arch_entry e;
	if (!parse_arch(t, n, &e)) {
		arch_add_invalid(out, t, n);
		return;
	}
	if (out->n >= ARCH_MAX_ENTRIES)
		return;
	out->v = xrealloc(out->v, (out->n + 1) * sizeof(*out->v));
	out->v[out->n++] = e;
}

void arch_list_parse(const char *s, arch_list *out)
{
	memset(out, 0, sizeof(*out));
	const char *a = s ? s : "";
	size_t n = strlen(a);
	size_t i = 0;
	while (i < n && isspace((unsigned char)a[i]))
		i++;
	if (i == n) {
		out->empty = true;
		return;
	}
	if (strcmp(a, "native") == 0) {
		out->native = true;
		return;
	}
	/* torch replaces ' ' by ';' and splits at ';': doubled separators make empty entries,
	 * which it rejects */
	const char *p = a;
	for (;;) {
		size_t m = strcspn(p, "; ");
		arch_add(out, p, m, 0);
		if (!p[m])
			break;
		p += m + 1;
		if (out->n >= ARCH_MAX_ENTRIES && out->invalid.n >= ARCH_MAX_INVALID)
			break;
	}
}

void arch_list_free(arch_list *l)
{
	free(l->v);
	sl_free(&l->invalid);
	memset(l, 0, sizeof(*l));
}

arch_cover arch_list_covers(const arch_list *l, int major, int minor)
{
	arch_cover best = ARCH_NOT_COVERED;
	for (size_t i = 0; i < l->n; i++) {
		const arch_entry *e = &l->v[i];
		arch_cover c = ARCH_NOT_COVERED;
		if (e->major == major && e->minor == minor)
			c = ARCH_EXACT;
		else if (e->major == major && e->minor < minor && e->variant != 'a')
			c = ARCH_OLDER_SASS; /* binary compatible within a major */
		else if (e->ptx && e->variant == 0 && (e->major < major || (e->major == major && e->minor < minor)))
			c = ARCH_PTX_JIT;
		if (c > best)
			best = c;
	}
	return best;
}

const char *arch_entry_text(const arch_entry *e, char *buf, size_t n)
{
	char v[2] = {e->variant, 0};
	snprintf(buf, n, "%d.%d%s%s", e->major, e->minor, v, e->ptx ? "+PTX" : "");
	return buf;
}

/* ---- PYTORCH_CUDA_ALLOC_CONF ---------------------------------------------------------- */

const char *const alloc_conf_keys[] = {
	"backend",
	"max_split_size_mb",
	"max_non_split_rounding_mb",
	"garbage_collection_threshold",
	"roundup_power2_divisions",
	"expandable_segments",
	"release_lock_on_cudamalloc",
	"pinned_use_cuda_host_register",
	"pinned_num_register_threads",
	"pinned_use_background_threads",
	"pinned_reserve_segment_size_mb",
	"graph_capture_record_stream_reuse",
	"large_segment_size_mb",
	NULL,
};

#define ALLOC_MAX_TOKENS 4096
#define ALLOC_MAX_ERRORS 16

typedef struct {
	strlist tok;
	size_t i;
	alloc_conf *out;
	bool failed;
} ac_state;

static bool special(const char *t)
{
	return t && t[1] == '\0' && (t[0] == ',' || t[0] == ':' || t[0] == '[' || t[0] == ']');
}

static void ac_error(ac_state *s, const char *fmt, ...) GV_PRINTF(2, 3);
static void ac_error(ac_state *s, const char *fmt, ...)
{
	s->failed = true;
	if (s->out->errors.n >= ALLOC_MAX_ERRORS)
		return;
	va_list ap;
	va_start(ap, fmt);
	char *m = xvasprintf(fmt, ap);
	va_end(ap);
	str_sanitize(m);
	if (strlen(m) > 240)
		strcpy(m + 237, "...");
	sl_push_owned(&s->out->errors, m);
}

static const char *ac_tok(ac_state *s, size_t i)
{
	return i < s->tok.n ? s->tok.v[i] : NULL;
}

/* A shortened copy of a token for messages. */
static char *ac_show(const char *t)
{
	t = t ? t : "";
	size_t n = strnlen(t, 41);
	char *c = xstrndup(t, n > 40 ? 40 : n); /* xstrndup copies exactly n bytes */
	if (n > 40)
		c = xrealloc(c, 44), strcat(c, "...");
	return c;
}

/* Reads the value after "key:"; returns it or NULL (error recorded). */
static const char *ac_value(ac_state *s, const char *key)
{
	const char *colon = ac_tok(s, s->i + 1);
	if (!colon || strcmp(colon, ":") != 0) {
		ac_error(s, "%s needs a value: write %s:VALUE", key, key);
		return NULL;
	}
	s->i += 2;
	const char *v = ac_tok(s, s->i);
	if (!v || (special(v) && strcmp(v, "[") != 0)) {
		ac_error(s, "%s has no value after ':'", key);
		return NULL;
	}
	return v;
}

/* stoi/stoull semantics: leading digits are read, the rest ignored; no digits is an error. */
static bool ac_number(ac_state *s, const char *key, const char *v, long long *out)
{
	errno = 0;
	char *end;
	long long x = strtoll(v, &end, 10);
	if (end == v) {
		char *sv = ac_show(v);
		ac_error(s, "%s expects a whole number, got '%s'", key, sv);
		free(sv);
		return false;
	}
	if (errno == ERANGE) {
		ac_error(s, "%s: the number is out of range", key);
		return false;
	}
	if (x < 0) {
		ac_error(s, "%s is negative (%lld)", key, x);
		return false;
	}
	*out = x;
	return true;
}

static bool pow2(long long x)
{
	return x > 0 && (x & (x - 1)) == 0;
}

static void ac_bool(ac_state *s, const char *key, const char *v)
{
	if (strcmp(v, "True") != 0 && strcmp(v, "False") != 0) {
		char *sv = ac_show(v);
		ac_error(s, "%s expects True or False (capitalised), got '%s'", key, sv);
		free(sv);
	}
}

static void ac_roundup(ac_state *s, const char *v)
{
	const char *key = "roundup_power2_divisions";
	long long x;
	if (strcmp(v, "[") != 0) { /* the old single-number form */
		if (ac_number(s, key, v, &x) && !pow2(x))
			ac_error(s, "%s must be a power of 2, got %lld", key, x);
		return;
	}
	for (;;) {
		const char *a = ac_tok(s, ++s->i);
		if (!a) {
			ac_error(s, "%s: '[' without a closing ']'", key);
			return;
		}
		if (strcmp(a, "]") == 0)
			return;
		if (strcmp(a, ">") != 0) {
			if (special(a)) {
				ac_error(s, "%s: expected SIZE_MB:DIVISIONS inside [...], got '%s'", key, a);
				return;
			}
			if (!ac_number(s, key, a, &x))
				return;
			if (!pow2(x)) {
				ac_error(s, "%s: the interval %lld is not a power of 2", key, x);
				return;
			}
		}
		const char *c = ac_tok(s, ++s->i);
		if (!c || strcmp(c, ":") != 0) {
			ac_error(s, "%s: expected ':' after '%s' inside [...]", key, a);
			return;
		}
		const char *b = ac_tok(s, ++s->i);
		if (!b || special(b)) {
			ac_error(s, "%s: missing the number of divisions after '%s:'", key, a);
			return;
		}
		if (!ac_number(s, key, b, &x))
			return;
		if (x != 0 && !pow2(x)) {
			ac_error(s, "%s: the divisions %lld must be 0 or a power of 2", key, x);
			return;
		}
		const char *sep = ac_tok(s, s->i + 1);
		if (sep && strcmp(sep, ",") == 0)
			s->i++;
		else if (!sep || strcmp(sep, "]") != 0) {
			ac_error(s, "%s: expected ',' or ']' inside [...]", key);
			return;
		}
	}
}

static void ac_tokenize(const char *s, ac_state *st)
{
	strbuf word;
	sb_init(&word);
	for (const char *p = s; *p && st->tok.n < ALLOC_MAX_TOKENS; p++) {
		if (*p == ',' || *p == ':' || *p == '[' || *p == ']') {
			if (word.len)
				sl_push_owned(&st->tok, sb_steal(&word));
			char c[2] = {*p, 0};
			sl_push(&st->tok, c);
		} else if (!isspace((unsigned char)*p)) {
			sb_addc(&word, *p);
		}
	}
	if (word.len && st->tok.n < ALLOC_MAX_TOKENS)
		sl_push_owned(&st->tok, sb_steal(&word));
	sb_free(&word);
}

/* One KEY:VALUE entry starting at s->i; on success s->i is left on the value's last token. */
static void ac_entry(ac_state *st, bool *async, bool *native_only)
{
	const char *key = st->tok.v[st->i];
	bool known = false;
	for (size_t k = 0; alloc_conf_keys[k]; k++)
		if (strcmp(key, alloc_conf_keys[k]) == 0)
			known = true;
	/* the ROCm spellings are accepted by every build */
	if (strcmp(key, "release_lock_on_hipmalloc") == 0 || strcmp(key, "pinned_use_hip_host_register") == 0)
		known = true;
	if (!known) {
		char *sk = ac_show(key);
		if (special(key))
			ac_error(st, "unexpected '%s' where an option name belongs", sk);
		else
			ac_error(st, "unknown option '%s'", sk);
		free(sk);
		return;
	}
	const char *v = ac_value(st, key);
	if (!v)
		return;
	sl_push(&st->out->keys, key);
	long long x;
	if (strcmp(key, "backend") == 0) {
		if (strcmp(v, "cudaMallocAsync") == 0)
			*async = true;
		else if (strcmp(v, "native") != 0) {
			char *sv = ac_show(v);
			ac_error(st, "backend must be native or cudaMallocAsync, got '%s'", sv);
			free(sv);
		}
	} else if (strcmp(key, "max_split_size_mb") == 0 || strcmp(key, "max_non_split_rounding_mb") == 0) {
		*native_only = true;
		if (ac_number(st, key, v, &x) && x < 20)
			ac_error(st, "%s must be at least 20, got %lld", key, x);
	} else if (strcmp(key, "garbage_collection_threshold") == 0) {
		*native_only = true;
		char *end;
		double d = strtod(v, &end);
		if (end == v) {
			char *sv = ac_show(v);
			ac_error(st, "garbage_collection_threshold expects a number, got '%s'", sv);
			free(sv);
		} else if (!(d > 0.0 && d < 1.0)) {
			ac_error(st, "garbage_collection_threshold must lie between 0.0 and 1.0 (exclusive), got %g", d);
		}
	} else if (strcmp(key, "roundup_power2_divisions") == 0) {
		*native_only = true;
		ac_roundup(st, v);
		if (st->failed && strcmp(v, "[") == 0) /* resume after the list */
			while (st->i < st->tok.n && strcmp(st->tok.v[st->i], "]") != 0)
				st->i++;
	} else if (strcmp(key, "pinned_num_register_threads") == 0) {
		if (ac_number(st, key, v, &x) && (!pow2(x) || x > 128))
			ac_error(st, "pinned_num_register_threads must be a power of 2 up to 128, got %lld", x);
	} else if (strcmp(key, "pinned_reserve_segment_size_mb") == 0 || strcmp(key, "large_segment_size_mb") == 0) {
		if (ac_number(st, key, v, &x) && x == 0)
			ac_error(st, "%s must be greater than 0", key);
	} else {
		if (strcmp(key, "expandable_segments") == 0)
			*native_only = true;
		ac_bool(st, key, v);
	}
}

bool alloc_conf_parse(const char *s, alloc_conf *out)
{
	memset(out, 0, sizeof(*out));
	if (!s)
		return true;
	ac_state st = {{0}, 0, out, false};
	ac_tokenize(s, &st);
	bool async = false, native_only = false, any = false;
	/* PyTorch stops at the first error; going on to the next entry reports every mistake at once */
	st.i = 0;
	while (st.i < st.tok.n) {
		st.failed = false;
		ac_entry(&st, &async, &native_only);
		if (!st.failed) {
			const char *sep = ac_tok(&st, st.i + 1);
			if (!sep)
				break;
			if (strcmp(sep, ",") == 0) {
				st.i += 2; /* a trailing ',' is accepted */
				continue;
			}
			char *ss = ac_show(sep);
			ac_error(&st, "expected ',' after %s's value, got '%s'", st.out->keys.n ? st.out->keys.v[st.out->keys.n - 1] : "the", ss);
			free(ss);
			st.i++;
		}
		any = true;
		int depth = 0;
		while (st.i < st.tok.n) {
			const char *t = st.tok.v[st.i];
			if (strcmp(t, "[") == 0)
				depth++;
			else if (strcmp(t, "]") == 0 && depth)
				depth--;
			else if (strcmp(t, ",") == 0 && depth == 0)
				break;
			st.i++;
		}
		st.i++;
	}
	st.failed = any;
	if (st.tok.n >= ALLOC_MAX_TOKENS)
		ac_error(&st, "the value is too long to be a real allocator configuration");
	if (!st.failed && async && native_only)
		sl_push(&out->notes, "backend:cudaMallocAsync ignores max_split_size_mb, roundup_power2_divisions, "
				     "garbage_collection_threshold and expandable_segments");
	sl_free(&st.tok);
	return !st.failed;
}

void alloc_conf_free(alloc_conf *c)
{
	sl_free(&c->keys);
	sl_free(&c->errors);
	sl_free(&c->notes);
}

/* ---- debugging and profiling variables ------------------------------------------------ */

const env_debug_var env_debug_vars[] = {
	{"CUDA_INJECTION64_PATH", EV_NONEMPTY, NULL, 1,
	 "loads a tool library (Nsight, compute-sanitizer, a profiler) into every CUDA process"},
	{"CUDA_ENABLE_COREDUMP_ON_EXCEPTION", EV_NONZERO, NULL, 1,
	 "GPU core dumps: a GPU exception stops the job and writes a dump of every GPU's memory, which "
	 "takes minutes and gigabytes"},
	{"CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION", EV_NONZERO, NULL, 0,
	 "a GPU exception also writes a CPU core dump"},
	{"CUDA_ENABLE_USER_TRIGGERED_COREDUMP", EV_NONZERO, NULL, 0,
	 "GPU core dumps on request through a pipe, a debugging aid"},
	{"CUDA_DEVICE_WAITS_ON_EXCEPTION", EV_NONZERO, NULL, 1,
	 "a GPU exception makes the kernel wait for a debugger to attach instead of failing: the job hangs"},
	{"CUDA_PROFILE", EV_NONZERO, NULL, 1, "the legacy command-line profiler logs every kernel launch"},
	{"COMPUTE_PROFILE", EV_NONZERO, NULL, 1, "the legacy command-line profiler logs every kernel launch"},
	{"CUDA_FORCE_PTX_JIT", EV_NONZERO, NULL, 1,
	 "ignores the compiled GPU code and JIT-compiles PTX for every kernel: slow start, and kernels "
	 "without PTX fail"},
	{"CUDA_DISABLE_PTX_JIT", EV_NONZERO, NULL, 0,
	 "kernels without code for this GPU fail instead of being JIT-compiled from PTX"},
	{"CUDA_CACHE_DISABLE", EV_NONZERO, NULL, 0, "the JIT cache is off: PTX is recompiled at every start"},
	{"CUDA_MODULE_LOADING", EV_WORDS, "EAGER", 0,
	 "loads every kernel of every library at start (LAZY is the default since CUDA 12.2): slower "
	 "start and hundreds of MiB more GPU memory per process"},
	{"NVIDIA_TF32_OVERRIDE", EV_ZERO, NULL, 1,
	 "turns TF32 tensor cores off in cuBLAS and cuDNN for every process, whatever PyTorch asks: "
	 "float32 matmuls and convolutions run several times slower on Ampere and newer GPUs"},
	{"PYTORCH_NO_CUDA_MEMORY_CACHING", EV_NONEMPTY, NULL, 1,
	 "turns PyTorch's caching allocator off (older releases: whatever the value): every tensor is a "
	 "cudaMalloc and cudaFree, which is slow; meant for memory checkers"},
	{"TORCH_USE_CUDA_DSA", EV_NONZERO, NULL, 0,
	 "device-side assertions (in builds compiled with them): extra checks in every kernel"},
	{"CUDNN_LOGINFO_DBG", EV_NONZERO, NULL, 1, "cuDNN logs every API call"},
	{"CUDNN_LOGLEVEL_DBG", EV_NONZERO, NULL, 1, "cuDNN logs API calls"},
	{"CUBLAS_LOGINFO_DBG", EV_NONZERO, NULL, 1, "cuBLAS logs every API call"},
	{"CUBLASLT_LOG_LEVEL", EV_NONZERO, NULL, 1, "cuBLASLt logs API calls"},
	{NULL, 0, NULL, 0, NULL},
};

bool env_debug_active(const env_debug_var *v, const char *value)
{
	if (!value || !*value)
		return false;
	switch (v->match) {
	case EV_NONEMPTY: return true;
	case EV_NONZERO: {
		char *end;
		long x = strtol(value, &end, 10);
		if (end == value) /* "true", "yes": treat as on */
			return strcasecmp(value, "false") != 0 && strcasecmp(value, "no") != 0 &&
			       strcasecmp(value, "off") != 0;
		return x != 0;
	}
	case EV_ZERO: return strcmp(value, "0") == 0;
	case EV_WORDS: {
		const char *p = v->arg;
		size_t vl = strlen(value);
		while (p && *p) {
			size_t m = strcspn(p, "|");
			if (m == vl && strncasecmp(p, value, m) == 0)
				return true;
			p += m;
			if (*p)
				p++;
		}
		return false;
	}
	}
	return false;
}

/* ---- NCCL (and Gloo) variables ------------------------------------------------------------- */

const env_nccl_var env_nccl_vars[] = {
	/* interface lists: a name the machine lacks leaves NCCL without a way to talk */
	{"NCCL_SOCKET_IFNAME", NCCL_IFLIST, EV_NONEMPTY, NULL, "net", 2,
	 "NCCL's bootstrap and socket transport use only these interfaces: with none of them here, every "
	 "communicator fails (\"Bootstrap : no socket interface found\"; NCCL 2.27: ncclInternalError, "
	 "\"ncclSocketInit: connecting to address with family ... is neither AF_INET(2) nor AF_INET6(10)\")"},
	{"GLOO_SOCKET_IFNAME", NCCL_IFLIST, EV_NONEMPTY, "exact", "net", 2,
	 "torch.distributed's Gloo backend (and its store) binds these interfaces by exact name: "
	 "init_process_group fails (\"Unable to find address for\")"},
	{"NCCL_IB_HCA", NCCL_IFLIST, EV_NONEMPTY, NULL, "ib", 1,
	 "NCCL uses only these InfiniBand/RoCE adapters: with none of them here it falls back to TCP "
	 "sockets (\"NET/IB : No device found\"), several times slower between machines"},
	/* transports turned off: costly where the hardware has the path */
	{"NCCL_P2P_DISABLE", NCCL_OFF, EV_NONZERO, NULL, "p2p", 1,
	 "no NVLink or PCIe peer-to-peer between GPUs: collectives go through host memory, several times "
	 "slower"},
	{"NCCL_SHM_DISABLE", NCCL_OFF, EV_NONZERO, NULL, "shm", 1,
	 "no shared-memory transport between processes: where P2P is not possible traffic goes over "
	 "sockets instead"},
	{"NCCL_IB_DISABLE", NCCL_OFF, EV_NONZERO, NULL, "ib", 1,
	 "InfiniBand/RoCE unused: traffic between machines goes over TCP sockets, a fraction of the "
	 "adapters' bandwidth"},
	{"NCCL_NET_GDR_LEVEL", NCCL_FORCED, EV_WORDS, "0|LOC", "gdr", 0,
	 "GPUDirect RDMA off: network traffic is staged through host memory"},
	/* choices forced over NCCL's own tuning */
	{"NCCL_DEBUG", NCCL_FORCED, EV_WORDS, "INFO|TRACE", NULL, 0,
	 "NCCL logs every communicator set-up (INFO) or every operation (TRACE): noisy logs"},
	{"NCCL_DEBUG_SUBSYS", NCCL_FORCED, EV_NONEMPTY, NULL, NULL, 0, "NCCL logs these subsystems"},
	{"NCCL_ALGO", NCCL_FORCED, EV_NONEMPTY, NULL, NULL, 0,
	 "forces the collective algorithm (Ring, Tree, NVLS, CollNet...) for every size: NCCL's tuner "
	 "cannot pick the fastest one"},
	{"NCCL_PROTO", NCCL_FORCED, EV_NONEMPTY, NULL, NULL, 0,
	 "forces the protocol (LL, LL128, Simple) for every size: small messages or large ones get "
	 "slower"},
	{"NCCL_NVLS_ENABLE", NCCL_FORCED, EV_ZERO, NULL, "nvls", 0,
	 "NVLink SHARP is off: slower all-reduce on NVSwitch systems (HGX H100/H200)"},
	{"NCCL_MAX_NCHANNELS", NCCL_FORCED, EV_NONEMPTY, NULL, NULL, 0,
	 "caps the channels NCCL may use: less bandwidth on NVLink systems"},
	{"NCCL_MIN_NCHANNELS", NCCL_FORCED, EV_NONEMPTY, NULL, NULL, 0,
	 "forces a minimum of channels: more SMs taken from compute"},
	{"NCCL_P2P_LEVEL", NCCL_FORCED, EV_NONEMPTY, NULL, NULL, 0,
	 "overrides the topology distance up to which NCCL uses P2P"},
	{"NCCL_BUFFSIZE", NCCL_FORCED, EV_NONEMPTY, NULL, NULL, 0, "overrides NCCL's buffer size per channel"},
	{NULL, 0, 0, NULL, NULL, 0, NULL},
};

void nccl_iflist_parse(const char *s, bool exact_only, nccl_iflist *out)
{
	memset(out, 0, sizeof(*out));
	if (!s)
		return;
	if (exact_only) {
		out->exact = true;
	} else {
		if (*s == '^') {
			out->exclude = true;
			s++;
		}
		if (*s == '=') {
			out->exact = true;
			s++;
		}
	}
	/* as NCCL's parseStringList: entries split at ',', a ":port" suffix dropped, empty ones skipped */
	while (*s && out->names.n < 64) {
		size_t n = strcspn(s, ",");
		size_t name_len = exact_only ? n : strcspn(s, ",:");
		if (name_len > n)
			name_len = n;
		if (name_len > 0 && name_len < 256) {
			char *e = xstrndup(s, name_len);
			char *t = str_trim(e);
			if (*t)
				sl_push(&out->names, t);
			free(e);
		}
		s += n;
		if (*s == ',')
			s++;
	}
}

bool nccl_iflist_entry_matches(const nccl_iflist *l, size_t k, const char *ifname)
{
	const char *e = l->names.v[k];
	return l->exact ? strcmp(ifname, e) == 0 : strncmp(ifname, e, strlen(e)) == 0;
}

bool nccl_iflist_selects(const nccl_iflist *l, const char *ifname)
{
	bool m = l->names.n == 0; /* an empty list matches everything, as in NCCL */
	for (size_t k = 0; k < l->names.n && !m; k++)
		m = nccl_iflist_entry_matches(l, k, ifname);
	return m != l->exclude;
}

void nccl_iflist_free(nccl_iflist *l)
{
	sl_free(&l->names);
}
