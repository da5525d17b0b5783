#include "core/facts.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sysroot.h"

#define KEY_MAX 256
#define EXCERPT_BYTES 48

struct facts {
	pthread_mutex_t lock;
	fact *v;
	size_t n, cap;
	/* open-addressing index from key hash to position+1; rebuilt on growth */
	size_t *index;
	size_t index_cap;
};

static unsigned long hash_key(const char *s)
{
	unsigned long h = 5381;
	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

facts *facts_new(void)
{
	facts *f = xcalloc(1, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	return f;
}

static void fact_clear(fact *ft)
{
	free(ft->str);
	free(ft->error);
	free(ft->source);
	free(ft->excerpt);
	ft->str = ft->error = ft->source = ft->excerpt = NULL;
	ft->sys_errno = 0;
	ft->i = 0;
	ft->d = 0;
	ft->type = FV_NONE;
}

void facts_free(facts *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++) {
		fact_clear(&f->v[i]);
		free(f->v[i].key);
	}
	free(f->v);
	free(f->index);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

static void index_insert(facts *f, size_t pos)
{
	size_t mask = f->index_cap - 1, h = hash_key(f->v[pos].key) & mask;
	while (f->index[h])
		h = (h + 1) & mask;
	f->index[h] = pos + 1;
}

static long find_locked(const facts *f, const char *key)
{
	if (!f->index_cap)
		return -1;
	size_t mask = f->index_cap - 1, h = hash_key(key) & mask;
	while (f->index[h]) {
		size_t pos = f->index[h] - 1;
		if (strcmp(f->v[pos].key, key) == 0)
			return (long)pos;
		h = (h + 1) & mask;
	}
	return -1;
}

/* Returns the slot for key (new or existing, cleared), with the lock held. */
static fact *slot_locked(facts *f, const char *key)
{
	long pos = find_locked(f, key);
	if (pos >= 0) {
		fact_clear(&f->v[pos]);
		return &f->v[pos];
	}
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 64;
		f->v = xrealloc(f->v, f->cap * sizeof(*f->v));
	}
	if ((f->n + 1) * 2 > f->index_cap) {
		free(f->index);
		f->index_cap = f->index_cap ? f->index_cap * 2 : 128;
		while ((f->n + 1) * 2 > f->index_cap)
			f->index_cap *= 2;
		f->index = xcalloc(f->index_cap, sizeof(*f->index));
		for (size_t i = 0; i < f->n; i++)
			index_insert(f, i);
	}
	fact *ft = &f->v[f->n];
	memset(ft, 0, sizeof(*ft));
	ft->key = xstrdup(key);
	index_insert(f, f->n);
	f->n++;
	return ft;
}

static void format_key(char *key, const char *fmt, va_list ap)
{
	vsnprintf(key, KEY_MAX, fmt, ap);
}

#define WITH_KEY(fmt, body)                                                                                            \
	do {                                                                                                           \
		char key_[KEY_MAX];                                                                                    \
		va_list ap_;                                                                                           \
		va_start(ap_, fmt);                                                                                    \
		format_key(key_, fmt, ap_);                                                                            \
		va_end(ap_);                                                                                           \
		pthread_mutex_lock(&f->lock);                                                                          \
		fact *ft = slot_locked(f, key_);                                                                       \
		ft->state = FACT_OK;                                                                                   \
		ft->source = source ? xstrdup(source) : NULL;                                                          \
		body;                                                                                                  \
		pthread_mutex_unlock(&f->lock);                                                                        \
	} while (0)

void facts_put_str(facts *f, const char *source, const char *value, const char *keyfmt, ...)
{
	WITH_KEY(keyfmt, {
		ft->type = FV_STR;
		/* kept as read: the renderers escape (render/text.h), shell lines quote or refuse it */
		ft->str = xstrdup(value);
	});
}

void facts_put_int(facts *f, const char *source, long long value, const char *keyfmt, ...)
{
	WITH_KEY(keyfmt, {
		ft->type = FV_INT;
		ft->i = value;
	});
}

void facts_put_real(facts *f, const char *source, double value, const char *keyfmt, ...)
{
	WITH_KEY(keyfmt, {
		ft->type = FV_REAL;
		ft->d = value;
	});
}

void facts_put_bool(facts *f, const char *source, bool value, const char *keyfmt, ...)
{
	WITH_KEY(keyfmt, {
		ft->type = FV_BOOL;
		ft->i = value ? 1 : 0;
	});
}

void facts_put_state(facts *f, fact_state state, const char *source, const char *why, const char *keyfmt, ...)
{
	WITH_KEY(keyfmt, {
		ft->state = state;
		if (why) {
			ft->error = xstrdup(why);
		}
	});
}

void facts_put_read_error(facts *f, const char *source, int rc, const char *absent_why, const char *keyfmt, ...)
{
	int e = rc < 0 ? -rc : rc;
	char what[256];
	bool absent = e == ENOENT || e == ENOTDIR;
	if (!absent)
		sysroot_read_problem(source, rc, what, sizeof(what));
	WITH_KEY(keyfmt, {
		ft->state = absent ? FACT_ABSENT : FACT_UNREADABLE;
		ft->error = xstrdup(absent ? (absent_why ? absent_why : "does not exist") : what);
		str_sanitize(ft->error);
		/* a FIFO, socket or device refused for what it is carries no errno of its own (EINVAL) */
		ft->sys_errno = absent || (e == EINVAL && strncmp(what, "is ", 3) == 0) ? 0 : e;
	});
}

/* The first bytes of text as C-style escaped ASCII, at most EXCERPT_BYTES of input. */
static char *excerpt_of(const char *text, size_t len)
{
	strbuf sb;
	sb_init(&sb);
	size_t n = len < EXCERPT_BYTES ? len : EXCERPT_BYTES;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c == '\n')
			sb_add(&sb, "\\n");
		else if (c == '\t')
			sb_add(&sb, "\\t");
		else if (c == '\\' || c == '"')
			sb_addf(&sb, "\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			sb_addf(&sb, "\\x%02x", c);
		else
			sb_addc(&sb, (char)c);
	}
	if (len > n)
		sb_add(&sb, "...");
	return sb_steal(&sb);
}

void facts_put_unparsable(facts *f, const char *source, const char *text, size_t len, const char *expected,
			  const char *keyfmt, ...)
{
	char *ex = excerpt_of(text ? text : "", text ? len : 0);
	WITH_KEY(keyfmt, {
		ft->state = FACT_UNPARSABLE;
		ft->error = xstrdup(len ? (expected ? expected : "not understood") : "empty file");
		str_sanitize(ft->error);
		ft->excerpt = ex;
	});
}

bool fact_seen_but_unknown(const fact *ft)
{
	return ft && (ft->state == FACT_UNREADABLE || ft->state == FACT_UNPARSABLE);
}

const char *fact_problem_text(const fact *ft, char *buf, size_t size)
{
	if (!ft)
		snprintf(buf, size, "was not collected");
	else if (ft->state == FACT_UNREADABLE)
		snprintf(buf, size, "cannot be read: %s", ft->error ? ft->error : "error");
	else if (ft->state == FACT_UNPARSABLE && ft->excerpt && *ft->excerpt)
		snprintf(buf, size, "is not understood (%s); it starts with \"%s\"", ft->error ? ft->error : "?", ft->excerpt);
	else if (ft->state == FACT_UNPARSABLE)
		snprintf(buf, size, "is not understood (%s)", ft->error ? ft->error : "?");
	else if (ft->state == FACT_ABSENT)
		snprintf(buf, size, "does not exist%s%s", ft->error ? ": " : "", ft->error ? ft->error : "");
	else
		fact_value_text(ft, buf, size);
	return buf;
}

static const fact *vget(const facts *f, const char *fmt, va_list ap)
{
	char key[KEY_MAX];
	format_key(key, fmt, ap);
	facts *mf = (facts *)f;
	pthread_mutex_lock(&mf->lock);
	long pos = find_locked(f, key);
	const fact *ft = pos >= 0 ? &f->v[pos] : NULL;
	pthread_mutex_unlock(&mf->lock);
	return ft;
}

const fact *facts_get(const facts *f, const char *keyfmt, ...)
{
	va_list ap;
	va_start(ap, keyfmt);
	const fact *ft = vget(f, keyfmt, ap);
	va_end(ap);
	return ft;
}

const char *facts_str(const facts *f, const char *keyfmt, ...)
{
	va_list ap;
	va_start(ap, keyfmt);
	const fact *ft = vget(f, keyfmt, ap);
	va_end(ap);
	return (ft && ft->state == FACT_OK && ft->type == FV_STR) ? ft->str : NULL;
}

bool facts_int(const facts *f, long long *out, const char *keyfmt, ...)
{
	va_list ap;
	va_start(ap, keyfmt);
	const fact *ft = vget(f, keyfmt, ap);
	va_end(ap);
	if (!ft || ft->state != FACT_OK)
		return false;
	if (ft->type == FV_INT || ft->type == FV_BOOL) {
		*out = ft->i;
		return true;
	}
	if (ft->type == FV_REAL && isfinite(ft->d)) {
		*out = (long long)ft->d;
		return true;
	}
	return false;
}

bool facts_real(const facts *f, double *out, const char *keyfmt, ...)
{
	va_list ap;
	va_start(ap, keyfmt);
	const fact *ft = vget(f, keyfmt, ap);
	va_end(ap);
	if (!ft || ft->state != FACT_OK)
		return false;
	if (ft->type == FV_REAL) {
		*out = ft->d;
		return true;
	}
	if (ft->type == FV_INT) {
		*out = (double)ft->i;
		return true;
	}
	return false;
}

bool facts_true(const facts *f, const char *keyfmt, ...)
{
	va_list ap;
	va_start(ap, keyfmt);
	const fact *ft = vget(f, keyfmt, ap);
	va_end(ap);
	return ft && ft->state == FACT_OK && (ft->type == FV_BOOL || ft->type == FV_INT) && ft->i != 0;
}

long long facts_int_or(const facts *f, long long dflt, const char *keyfmt, ...)
{
	va_list ap;
	va_start(ap, keyfmt);
	const fact *ft = vget(f, keyfmt, ap);
	va_end(ap);
	if (!ft || ft->state != FACT_OK)
		return dflt;
	if (ft->type == FV_INT || ft->type == FV_BOOL)
		return ft->i;
	if (ft->type == FV_REAL && isfinite(ft->d))
		return (long long)ft->d;
	return dflt;
}

size_t facts_count(const facts *f)
{
	return f->n;
}

const fact *facts_at(const facts *f, size_t i)
{
	return i < f->n ? &f->v[i] : NULL;
}

static void copy_fact(facts *dst, const fact *s)
{
	pthread_mutex_lock(&dst->lock);
	fact *d = slot_locked(dst, s->key);
	d->state = s->state;
	d->type = s->type;
	d->str = s->str ? xstrdup(s->str) : NULL;
	d->i = s->i;
	d->d = s->d;
	d->error = s->error ? xstrdup(s->error) : NULL;
	d->source = s->source ? xstrdup(s->source) : NULL;
	d->sys_errno = s->sys_errno;
	d->excerpt = s->excerpt ? xstrdup(s->excerpt) : NULL;
	pthread_mutex_unlock(&dst->lock);
}

void facts_merge(facts *dst, const facts *src)
{
	for (size_t i = 0; i < src->n; i++)
		copy_fact(dst, &src->v[i]);
}

static const char *const state_names[] = {"ok", "absent", "unsupported", "error", "unreadable", "unparsable"};

const char *fact_state_name(fact_state s)
{
	return (unsigned)s < GV_ARRAY_LEN(state_names) ? state_names[s] : "error";
}

bool fact_state_parse(const char *name, fact_state *out)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(state_names); i++)
		if (name && strcmp(name, state_names[i]) == 0) {
			*out = (fact_state)i;
			return true;
		}
	return false;
}

const char *fact_value_text(const fact *ft, char *buf, size_t size)
{
	if (!ft) {
		str_copy(buf, size, "unknown");
		return buf;
	}
	if (ft->state != FACT_OK) {
		snprintf(buf, size, "%s%s%s", fact_state_name(ft->state), ft->error ? ": " : "",
			 ft->error ? ft->error : "");
		return buf;
	}
	switch (ft->type) {
	case FV_STR:
		str_copy(buf, size, ft->str);
		break;
	case FV_INT:
		snprintf(buf, size, "%lld", ft->i);
		break;
	case FV_REAL:
		snprintf(buf, size, "%.6g", ft->d);
		break;
	case FV_BOOL:
		str_copy(buf, size, ft->i ? "yes" : "no");
		break;
	default:
		str_copy(buf, size, "");
	}
	return buf;
}

cJSON *facts_to_json(const facts *f)
{
	cJSON *root = cJSON_CreateObject();
	for (size_t i = 0; i < f->n; i++) {
		const fact *ft = &f->v[i];
		const char *dot = strchr(ft->key, '.');
		char layer[64];
		str_copy(layer, sizeof(layer), ft->key);
		if (dot && (size_t)(dot - ft->key) < sizeof(layer))
			layer[dot - ft->key] = '\0';
		const char *rest = dot ? dot + 1 : ft->key;
		cJSON *group = cJSON_GetObjectItemCaseSensitive(root, layer);
		if (!group)
			group = cJSON_AddObjectToObject(root, layer);
		cJSON *o = cJSON_AddObjectToObject(group, rest);
		if (ft->state == FACT_OK) {
			switch (ft->type) {
			case FV_STR:
				cJSON_AddStringToObject(o, "value", ft->str);
				break;
			case FV_INT:
				cJSON_AddNumberToObject(o, "value", (double)ft->i);
				break;
			case FV_REAL:
				if (isfinite(ft->d))
					cJSON_AddNumberToObject(o, "value", ft->d);
				else
					cJSON_AddNullToObject(o, "value");
				break;
			case FV_BOOL:
				cJSON_AddBoolToObject(o, "value", ft->i != 0);
				break;
			default:
				cJSON_AddNullToObject(o, "value");
			}
		}
		cJSON_AddStringToObject(o, "state", fact_state_name(ft->state));
		if (ft->error)
			cJSON_AddStringToObject(o, "error", ft->error);
		if (ft->source)
			cJSON_AddStringToObject(o, "source", ft->source);
		if (ft->sys_errno)
			cJSON_AddStringToObject(o, "errno", sysroot_errno_name(ft->sys_errno));
		if (ft->excerpt)
			cJSON_AddStringToObject(o, "first_bytes", ft->excerpt);
	}
	return root;
}

/* The largest list count a facts file may give (GPUs, toolkits, libraries ...). */
#define FACTS_FILE_MAX_COUNT 65536

/* A key with a list index in it ("kmsg.xid.3.count"). */
static bool has_index(const char *key)
{
	for (const char *p = key; *p; p++)
		if ((p == key || p[-1] == '.') && isdigit((unsigned char)*p)) {
			const char *q = p;
			while (isdigit((unsigned char)*q))
				q++;
			if (*q == '.' || *q == '\0')
				return true;
		}
	return false;
}

facts *facts_from_json(const cJSON *obj, char **err)
{
	if (!cJSON_IsObject(obj)) {
		*err = xstrdup("facts must be a JSON object");
		return NULL;
	}
	facts *f = facts_new();
	const cJSON *group;
	cJSON_ArrayForEach(group, obj)
	{
		if (!cJSON_IsObject(group) || !group->string) {
			*err = xasprintf("facts layer '%s' is not an object", group->string ? group->string : "?");
			facts_free(f);
			return NULL;
		}
		const cJSON *item;
		cJSON_ArrayForEach(item, group)
		{
			char key[KEY_MAX];
			snprintf(key, sizeof(key), "%s.%s", group->string, item->string ? item->string : "");
			const cJSON *st = cJSON_GetObjectItemCaseSensitive(item, "state");
			const cJSON *val = cJSON_GetObjectItemCaseSensitive(item, "value");
			const cJSON *src = cJSON_GetObjectItemCaseSensitive(item, "source");
			const cJSON *er = cJSON_GetObjectItemCaseSensitive(item, "error");
			const char *source = cJSON_IsString(src) ? src->valuestring : NULL;
			fact_state state = FACT_OK;
			if (!cJSON_IsObject(item)) { /* shorthand: "key": value */
				val = item;
			} else if (st && (!cJSON_IsString(st) || !fact_state_parse(st->valuestring, &state))) {
				*err = xasprintf("fact '%s' has an unknown state", key);
				facts_free(f);
				return NULL;
			}
			if (state != FACT_OK) {
				facts_put_state(f, state, source, cJSON_IsString(er) ? er->valuestring : NULL, "%s", key);
				const cJSON *en = cJSON_GetObjectItemCaseSensitive(item, "errno");
				const cJSON *fb = cJSON_GetObjectItemCaseSensitive(item, "first_bytes");
				fact *ft = (fact *)facts_get(f, "%s", key);
				if (ft && cJSON_IsString(en))
					ft->sys_errno = sysroot_errno_parse(en->valuestring);
				if (ft && cJSON_IsString(fb)) {
					ft->excerpt = xstrdup(fb->valuestring);
					str_sanitize(ft->excerpt);
				}
			} else if (cJSON_IsString(val)) {
				facts_put_str(f, source, val->valuestring, "%s", key);
			} else if (cJSON_IsBool(val)) {
				facts_put_bool(f, source, cJSON_IsTrue(val), "%s", key);
			} else if (cJSON_IsNumber(val)) {
				double d = val->valuedouble;
				/* rules loop up to a list's count (toolkit.count, nvml.device_count; not
				 * kmsg.xid.0.count, which counts events): a file's cannot send them round a billion times */
				bool is_count = (str_ends(key, ".count") || str_ends(key, "_count")) && !has_index(key);
				if (is_count && !(d >= 0 && d <= FACTS_FILE_MAX_COUNT))
					facts_put_state(f, FACT_ERROR, source, "a count out of range in the facts file", "%s", key);
				else if (d == floor(d) && fabs(d) < 9e15)
					facts_put_int(f, source, (long long)d, "%s", key);
				else
					facts_put_real(f, source, d, "%s", key);
			} else {
				facts_put_state(f, FACT_ABSENT, source, "no value", "%s", key);
			}
		}
	}
	return f;
}
