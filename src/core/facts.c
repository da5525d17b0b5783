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

#include "core/factkeys.h"
#include "core/sysroot.h"

#define KEY_STACK 256 /* a lookup key formats into the stack up to this; longer ones into the heap */
#define EXCERPT_BYTES 48

/*
 * The lock contract (facts.h): a fact, once published, never changes. A put builds a new fact
 * outside the lock and publishes it under the lock; a put of a key already there retires the
 * old fact, which stays valid (and unchanged) until facts_free. So a getter's pointer needs no
 * lock once it has it, whatever other threads put meanwhile.
 */
struct facts {
	pthread_mutex_t lock;
	fact **v; /* the current facts, in insertion order */
	size_t n, cap;
	/* open-addressing index from key hash to position+1; rebuilt on growth */
	size_t *index;
	size_t index_cap;
	fact **retired; /* replaced by a later put of their key; freed by facts_free */
	size_t nretired, retired_cap;
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

static void fact_free(fact *ft)
{
	if (!ft)
		return;
	free(ft->key);
	free(ft->str);
	free(ft->error);
	free(ft->source);
	free(ft->excerpt);
	free(ft);
}

void facts_free(facts *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++)
		fact_free(f->v[i]);
	for (size_t i = 0; i < f->nretired; i++)
		fact_free(f->retired[i]);
	free(f->v);
	free(f->retired);
	free(f->index);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

static void index_insert(facts *f, size_t pos)
{
	size_t mask = f->index_cap - 1, h = hash_key(f->v[pos]->key) & mask;
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
		if (strcmp(f->v[pos]->key, key) == 0)
			return (long)pos;
		h = (h + 1) & mask;
	}
	return -1;
}

/* Makes ft (complete, owned by nobody) the fact of its key: a fact already there keeps its place
 * in the order and is retired, not freed. */
static void publish(facts *f, fact *ft)
{
	factkey_check_put(ft->key, ft->state, ft->type);
	pthread_mutex_lock(&f->lock);
	long pos = find_locked(f, ft->key);
	if (pos >= 0) {
		if (f->nretired == f->retired_cap) {
			f->retired_cap = f->retired_cap ? f->retired_cap * 2 : 16;
			f->retired = xrealloc(f->retired, f->retired_cap * sizeof(*f->retired));
		}
		f->retired[f->nretired++] = f->v[pos];
		f->v[pos] = ft;
		pthread_mutex_unlock(&f->lock);
		return;
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
	f->v[f->n] = ft;
	index_insert(f, f->n);
	f->n++;
	pthread_mutex_unlock(&f->lock);
}

void facts_adopt(facts *f, fact *ft)
{
	publish(f, ft);
}

/* A new fact in state ok with its key formatted in full (keys have no length limit, so none is
 * ever cut and taken for another). */
static fact *fact_new_v(const char *source, const char *fmt, va_list ap) GV_PRINTF(2, 0);
static _Thread_local const char *thread_source;

void facts_set_thread_source(const char *source)
{
	thread_source = source;
}

static fact *fact_new_v(const char *source, const char *fmt, va_list ap)
{
	fact *ft = xcalloc(1, sizeof(*ft));
	ft->key = xvasprintf(fmt, ap);
	ft->state = FACT_OK;
	if (!source)
		source = thread_source;
	ft->source = source ? xstrdup(source) : NULL;
	return ft;
}

/* Fills and publishes a new fact: body sets ft's state and value. */
#define WITH_KEY(fmt, body)                                                                                            \
	do {                                                                                                           \
		va_list ap_;                                                                                           \
		va_start(ap_, fmt);                                                                                    \
		fact *ft = fact_new_v(source, fmt, ap_);                                                               \
		va_end(ap_);                                                                                           \
		body;                                                                                                  \
		publish(f, ft);                                                                                        \
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

/* The first argument of ap, a string (NULL for a NULL one, which vsnprintf then prints). */
static char *va_arg_first_string(va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	char *s = va_arg(cp, char *);
	va_end(cp);
	return s;
}

static const fact *vget(const facts *f, const char *fmt, va_list ap) GV_PRINTF(2, 0);
static const fact *vget(const facts *f, const char *fmt, va_list ap)
{
	char stack[KEY_STACK];
	char *key = stack;
	if (!strchr(fmt, '%')) { /* a constant key (FK_NVML_DEVICE_COUNT): nothing to format */
		key = (char *)fmt;
	} else if (strcmp(fmt, "%s") == 0 && (key = va_arg_first_string(ap)) != NULL) { /* a key made elsewhere */
		fmt = key;
	} else {
		key = stack;
		va_list ap2;
		va_copy(ap2, ap);
		int n = gv_vformat_key(stack, sizeof(stack), fmt, ap);
		if (n < 0 || (size_t)n >= sizeof(stack))
			key = xvasprintf(fmt, ap2);
		va_end(ap2);
	}
	factkey_check_get(key);
	facts *mf = (facts *)f;
	pthread_mutex_lock(&mf->lock);
	long pos = find_locked(f, key);
	const fact *ft = pos >= 0 ? f->v[pos] : NULL;
	pthread_mutex_unlock(&mf->lock);
	if (key != stack && key != fmt)
		free(key);
	return ft;
}

/* Declares ft, the fact of the key the variadic getter was given. */
#define GET_FACT(keyfmt)                                                                                               \
	const fact *ft;                                                                                                \
	do {                                                                                                           \
		va_list ap_;                                                                                           \
		va_start(ap_, keyfmt);                                                                                 \
		ft = vget(f, keyfmt, ap_);                                                                             \
		va_end(ap_);                                                                                           \
	} while (0)

static bool ok_as_int(const fact *ft, long long *out)
{
	if (!ft || ft->state != FACT_OK)
		return false;
	if (ft->type == FV_INT || ft->type == FV_BOOL) {
		*out = ft->i;
		return true;
	}
	/* a real outside long long's range (a facts file's 1.5e21) is not an integer: converting it
	 * is undefined (fuzz_facts_json found it) */
	if (ft->type == FV_REAL && isfinite(ft->d) && ft->d > -9.2e18 && ft->d < 9.2e18) {
		*out = (long long)ft->d;
		return true;
	}
	return false;
}

const fact *facts_get(const facts *f, const char *keyfmt, ...)
{
	GET_FACT(keyfmt);
	return ft;
}

const char *facts_str(const facts *f, const char *keyfmt, ...)
{
	GET_FACT(keyfmt);
	return (ft && ft->state == FACT_OK && ft->type == FV_STR) ? ft->str : NULL;
}

bool facts_int(const facts *f, long long *out, const char *keyfmt, ...)
{
	GET_FACT(keyfmt);
	return ok_as_int(ft, out);
}

bool facts_real(const facts *f, double *out, const char *keyfmt, ...)
{
	GET_FACT(keyfmt);
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
	GET_FACT(keyfmt);
	return ft && ft->state == FACT_OK && (ft->type == FV_BOOL || ft->type == FV_INT) && ft->i != 0;
}

long long facts_int_or(const facts *f, long long dflt, const char *keyfmt, ...)
{
	GET_FACT(keyfmt);
	long long v;
	return ok_as_int(ft, &v) ? v : dflt;
}

size_t facts_count(const facts *f)
{
	facts *mf = (facts *)f;
	pthread_mutex_lock(&mf->lock);
	size_t n = f->n;
	pthread_mutex_unlock(&mf->lock);
	return n;
}

const fact *facts_at(const facts *f, size_t i)
{
	facts *mf = (facts *)f;
	pthread_mutex_lock(&mf->lock);
	const fact *ft = i < f->n ? f->v[i] : NULL;
	pthread_mutex_unlock(&mf->lock);
	return ft;
}

/* The current facts of f, in order, as a malloc'd array (*n of them): each stays valid until
 * facts_free, so the caller walks them without the lock. */
static const fact **snapshot(const facts *f, size_t *n)
{
	facts *mf = (facts *)f;
	pthread_mutex_lock(&mf->lock);
	*n = f->n;
	const fact **v = xmalloc((f->n ? f->n : 1) * sizeof(*v));
	for (size_t i = 0; i < f->n; i++)
		v[i] = f->v[i];
	pthread_mutex_unlock(&mf->lock);
	return v;
}

static fact *fact_dup(const fact *s)
{
	fact *d = xcalloc(1, sizeof(*d));
	d->key = xstrdup(s->key);
	d->state = s->state;
	d->type = s->type;
	d->str = s->str ? xstrdup(s->str) : NULL;
	d->i = s->i;
	d->d = s->d;
	d->error = s->error ? xstrdup(s->error) : NULL;
	d->source = s->source ? xstrdup(s->source) : NULL;
	d->sys_errno = s->sys_errno;
	d->excerpt = s->excerpt ? xstrdup(s->excerpt) : NULL;
	return d;
}

const fact **facts_list(const facts *f, size_t *n)
{
	return snapshot(f, n);
}

void facts_merge(facts *dst, const facts *src)
{
	size_t n;
	const fact **v = snapshot(src, &n);
	for (size_t i = 0; i < n; i++)
		publish(dst, fact_dup(v[i]));
	free(v);
}

void facts_move(facts *dst, facts *src)
{
	pthread_mutex_lock(&src->lock);
	fact **v = src->v;
	size_t n = src->n;
	src->v = NULL;
	src->n = src->cap = 0;
	free(src->index);
	src->index = NULL;
	src->index_cap = 0;
	pthread_mutex_unlock(&src->lock);
	for (size_t i = 0; i < n; i++)
		publish(dst, v[i]);
	free(v);
}

void facts_merge_prefix(facts *dst, const facts *src, const char *prefix)
{
	size_t n, len = strlen(prefix);
	const fact **v = snapshot(src, &n);
	for (size_t i = 0; i < n; i++)
		if (strncmp(v[i]->key, prefix, len) == 0)
			publish(dst, fact_dup(v[i]));
	free(v);
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
	size_t n;
	const fact **v = snapshot(f, &n);
	for (size_t i = 0; i < n; i++) {
		const fact *ft = v[i];
		const char *dot = strchr(ft->key, '.');
		/* the layer whole, however long: a cut one would group the fact under another */
		char *layer = dot ? xstrndup(ft->key, (size_t)(dot - ft->key)) : xstrdup(ft->key);
		const char *rest = dot ? dot + 1 : ft->key;
		cJSON *group = cJSON_GetObjectItemCaseSensitive(root, layer);
		if (!group)
			group = cJSON_AddObjectToObject(root, layer);
		free(layer);
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
	free(v);
	return root;
}

/* facts_put_state with what a facts file records of an unreadable or unparsable file. */
static void put_state_seen(facts *f, fact_state state, const char *source, const char *why, int sys_errno,
			   const char *excerpt, const char *key)
{
	fact *ft = xcalloc(1, sizeof(*ft));
	ft->key = xstrdup(key);
	ft->source = source ? xstrdup(source) : NULL;
	ft->state = state;
	ft->error = why ? xstrdup(why) : NULL; /* kept as read, as facts_put_state does */
	ft->sys_errno = sys_errno;
	if (excerpt) {
		ft->excerpt = xstrdup(excerpt);
		str_sanitize(ft->excerpt);
	}
	publish(f, ft);
}

/* The largest list count a facts file may give (GPUs, toolkits, libraries ...). */
/* The longest list a probe writes is 4096 (the extension scan's files, NVML's processes): a
 * file's count beyond it is not one gpuvet wrote. At 65536 one rule printed 65536 evidence lines
 * (fuzz_facts_json timed out on it: tests/fuzz/corpus/facts_json/timeout-toolkit-count-65536). */
#define FACTS_FILE_MAX_COUNT 4096

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
			char *key = xasprintf("%s.%s", group->string, item->string ? item->string : "");
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
				free(key);
				facts_free(f);
				return NULL;
			}
			if (state != FACT_OK) {
				const char *why = cJSON_IsString(er) ? er->valuestring : NULL;
				const cJSON *en = cJSON_GetObjectItemCaseSensitive(item, "errno");
				const cJSON *fb = cJSON_GetObjectItemCaseSensitive(item, "first_bytes");
				put_state_seen(f, state, source, why, cJSON_IsString(en) ? sysroot_errno_parse(en->valuestring) : 0,
					       cJSON_IsString(fb) ? fb->valuestring : NULL, key);
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
			free(key);
		}
	}
	return f;
}
