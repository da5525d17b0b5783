#include <stdarg.h>
#include <string.h>

#include "rules/registry.h"
#include "core/trace.h"
#include "rules/rules.h"

static finding *emit(rule_ctx *c, severity sev, const char *fmt, va_list ap) GV_PRINTF(3, 0);
static finding *emit(rule_ctx *c, severity sev, const char *fmt, va_list ap)
{
	char *title = xvasprintf(fmt, ap);
	finding *f = findings_add(c->out, c->rule->id, c->rule->layer, sev, "%s", title);
	free(title);
	return f;
}

finding *rule_emit(rule_ctx *c, const char *titlefmt, ...)
{
	va_list ap;
	va_start(ap, titlefmt);
	finding *f = emit(c, c->rule->sev, titlefmt, ap);
	va_end(ap);
	return f;
}

finding *rule_emit_sev(rule_ctx *c, severity sev, const char *titlefmt, ...)
{
	va_list ap;
	va_start(ap, titlefmt);
	finding *f = emit(c, sev, titlefmt, ap);
	va_end(ap);
	return f;
}

const rule *rules_first(void)
{
	for (size_t t = 0; rule_tables[t]; t++)
		if (rule_tables[t][0].id)
			return &rule_tables[t][0];
	return NULL;
}

const rule *rules_next(const rule *r)
{
	for (size_t t = 0; rule_tables[t]; t++) {
		const rule *tab = rule_tables[t];
		size_t n = 0;
		while (tab[n].id)
			n++;
		if (r >= tab && r < tab + n) {
			if (r + 1 < tab + n)
				return r + 1;
			for (size_t u = t + 1; rule_tables[u]; u++)
				if (rule_tables[u][0].id)
					return &rule_tables[u][0];
			return NULL;
		}
	}
	return NULL;
}

const rule *rules_find(const char *id)
{
	for (const rule *r = rules_first(); r; r = rules_next(r))
		if (strcmp(r->id, id) == 0)
			return r;
	return NULL;
}

long rules_root_cause(const findings *fs)
{
	long best = -1;
	int best_rank = 0;
	for (size_t i = 0; i < fs->n; i++) {
		if (fs->v[i].sev != SEV_FAIL)
			continue;
		const rule *r = rules_find(fs->v[i].id);
		if (r && r->root_cause > 0 && (best < 0 || r->root_cause < best_rank)) {
			best = (long)i;
			best_rank = r->root_cause;
		}
	}
	return best;
}

/* The first fact of needs (space-separated keys) that was never collected, into buf; NULL if none. */
static const char *first_missing(const facts *f, const char *needs, char *buf, size_t size)
{
	for (const char *p = needs; p && *p;) {
		while (*p == ' ')
			p++;
		size_t n = strcspn(p, " ");
		if (n) {
			char *key = n < size ? buf : xmalloc(n + 1);
			memcpy(key, p, n);
			key[n] = '\0';
			bool have = facts_get(f, "%s", key) != NULL;
			if (key != buf) {
				str_copy(buf, size, key); /* named, cut to the buffer */
				free(key);
			}
			if (!have)
				return buf;
		}
		p += n;
	}
	return NULL;
}

/* With GPUVET_TRACE on: the slowest rules of the run, traced after it (where check's time goes). */
#define SLOWEST_TRACED 5
typedef struct rule_time {
	const char *id;
	double seconds;
} rule_time;

static void note_time(rule_time *slow, const char *id, double seconds)
{
	size_t i = SLOWEST_TRACED;
	while (i > 0 && slow[i - 1].seconds < seconds)
		i--;
	if (i == SLOWEST_TRACED)
		return;
	memmove(slow + i + 1, slow + i, (SLOWEST_TRACED - 1 - i) * sizeof(*slow));
	slow[i] = (rule_time){id, seconds};
}

void rules_run(const facts *f, const kb *k, const char *layer, findings *out)
{
	bool timed = gv_tracing();
	rule_time slow[SLOWEST_TRACED] = {{0}};
	rules_memo memo = {0};
	char key[256];
	for (const rule *r = rules_first(); r; r = rules_next(r)) {
		if (layer && strcmp(r->layer, layer) != 0)
			continue;
		double t0 = timed ? now_seconds() : 0;
		const char *missing = first_missing(f, r->needs, key, sizeof(key));
		if (missing) {
			findings_skip(out, r->id, "fact %s was not collected", missing);
		} else {
			rule_ctx c = {f, k, out, r, &memo};
			r->eval(&c);
		}
		if (timed)
			note_time(slow, r->id, now_seconds() - t0);
	}
	sl_free(&memo.children);
	for (size_t i = 0; i < SLOWEST_TRACED && slow[i].id; i++)
		gv_trace("rule %s %.3f ms", slow[i].id, slow[i].seconds * 1e3);
}

static const struct {
	const char *layer, *title;
} layers[] = {
	{"hardware", "Hardware and kernel driver"},
	{"devices", "Device nodes"},
	{"driver", "Driver libraries"},
	{"gpu", "GPU health"},
	{"toolkit", "CUDA toolkits"},
	{"loader", "Dynamic loader and libraries"},
	{"env", "Environment variables"},
	{"container", "Containers and platforms"},
	{"python", "Python and PyTorch"},
	{"ext", "CUDA extensions"},
	{"policy", "Policies"},
	{"files", "Files that cannot be read"},
};

const char *layer_title(const char *layer)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(layers); i++)
		if (strcmp(layers[i].layer, layer) == 0)
			return layers[i].title;
	return layer;
}

int layer_order(const char *layer)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(layers); i++)
		if (strcmp(layers[i].layer, layer) == 0)
			return (int)i;
	return (int)GV_ARRAY_LEN(layers);
}
