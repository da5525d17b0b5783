#include "rules/policy.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/factkeys.h"
#include "probes/probes.h"
#include "rules/rules.h"

static const char *const ops[] = {"==", "!=", ">=", "<=", ">", "<"};
enum { OP_TRUTH = -1, OP_ABSENT = -2 };

typedef struct parsed {
	char key[256];
	int op; /* index in ops, OP_TRUTH for KEY, OP_ABSENT for !ID */
	char value[256];
} parsed;

static bool key_char(int c)
{
	return isalnum(c) || c == '.' || c == '_' || c == '-';
}

static bool op_char(int c)
{
	return c == '=' || c == '!' || c == '<' || c == '>';
}

/* The fact layers are the probes' names (probes/registry.c), "python_live" writing python.*, and
 * the two layers probes/registry.c writes itself: meta (the probes' timings) and files (the paths
 * that could not be read). */
static const char *const registry_layers[] = {"meta", "files"};

static bool known_layer(const char *layer, size_t n)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(registry_layers); i++)
		if (strlen(registry_layers[i]) == n && strncmp(layer, registry_layers[i], n) == 0)
			return true;
	for (const probe *p = probe_table; p->name; p++) {
		size_t pl = strcspn(p->name, "_");
		if (pl == n && strncmp(p->name, layer, n) == 0)
			return true;
	}
	return false;
}

static char *layer_list(void)
{
	strbuf b;
	sb_init(&b);
	for (size_t i = 0; i < GV_ARRAY_LEN(registry_layers); i++)
		sb_addf(&b, "%s%s", i ? ", " : "", registry_layers[i]);
	for (const probe *p = probe_table; p->name; p++)
		if (!strchr(p->name, '_'))
			sb_addf(&b, ", %s", p->name);
	return sb_steal(&b);
}

static bool check_key(const char *key, char **err)
{
	for (const char *c = key; *c; c++)
		if (!key_char((unsigned char)*c)) {
			*err = xasprintf("'%s' is not a fact key (letters, digits, '.', '_', '-')", key);
			return false;
		}
	const char *dot = strchr(key, '.');
	size_t n = dot ? (size_t)(dot - key) : strlen(key);
	if (!dot || !dot[1] || !known_layer(key, n)) {
		char *l = layer_list();
		*err = xasprintf("unknown fact key '%s': a key is LAYER.NAME, LAYER one of %s (gpuvet check --json lists the facts)",
				 key, l);
		free(l);
		return false;
	}
	return true;
}

/* A finite number ("8", "0.5", "-1") or a version: digits first, then digits, letters and
 * ". + - _" ("550.54.15", "12.4", "2.5.1+cu124"). Never nan or inf. */
static bool ordered_value(const char *v)
{
	char *end;
	double d = strtod(v, &end);
	if (end != v && !*end)
		return isfinite(d);
	if (!isdigit((unsigned char)v[0]))
		return false;
	for (const char *c = v; *c; c++)
		if (!(isalnum((unsigned char)*c) || strchr(".+-_", *c)))
			return false;
	return true;
}

static bool known_finding_id(const char *id)
{
	size_t n = strlen(id);
	if (strcmp(id, "policy.require") == 0)
		return true;
	for (const rule *r = rules_first(); r; r = rules_next(r))
		if (strcmp(r->id, id) == 0 || (id[n - 1] == '.' && strncmp(r->id, id, n) == 0))
			return true;
	return false;
}

static bool parse(const char *expr, parsed *p, char **err)
{
	memset(p, 0, sizeof(*p));
	const char *s = expr;
	while (isspace((unsigned char)*s))
		s++;
	if (!*s) {
		*err = xstrdup("empty requirement");
		return false;
	}
	if (s[0] == '!' && s[1] != '=') {
		str_copy(p->key, sizeof(p->key), s + 1);
		char *t = str_trim(p->key);
		memmove(p->key, t, strlen(t) + 1);
		p->op = OP_ABSENT;
		if (!p->key[0]) {
			*err = xstrdup("'!' needs a finding id");
			return false;
		}
		for (const char *c = p->key; *c; c++)
			if (!key_char((unsigned char)*c)) {
				*err = xasprintf("'%s' is not a finding id", p->key);
				return false;
			}
		if (!known_finding_id(p->key)) {
			*err = xasprintf("unknown finding id '%s' (gpuvet check --list-rules lists them; a prefix ends in '.')",
					 p->key);
			return false;
		}
		return true;
	}
	/* KEY, then optionally an operator (the whole run of = ! < >) and a value */
	const char *k = s;
	while (*s && key_char((unsigned char)*s))
		s++;
	size_t kl = (size_t)(s - k);
	if (kl >= sizeof(p->key)) {
		*err = xstrdup("fact key too long");
		return false;
	}
	memcpy(p->key, k, kl);
	p->key[kl] = '\0';
	while (isspace((unsigned char)*s))
		s++;
	if (!*s) {
		p->op = OP_TRUTH;
		if (!kl) {
			*err = xasprintf("'%s' is not a requirement", expr);
			return false;
		}
		return check_key(p->key, err);
	}
	const char *o = s;
	while (op_char((unsigned char)*s))
		s++;
	size_t ol = (size_t)(s - o);
	if (!ol) {
		*err = xasprintf("'%s' is not a requirement (KEY, KEY OP VALUE or !ID): unexpected '%c'", expr, *s);
		return false;
	}
	p->op = -3;
	for (size_t i = 0; i < GV_ARRAY_LEN(ops); i++)
		if (strlen(ops[i]) == ol && strncmp(ops[i], o, ol) == 0)
			p->op = (int)i;
	if (p->op == -3) {
		*err = xasprintf("'%.*s' in '%s' is not an operator (one of == != >= <= > <)%s", (int)ol, o, expr,
				 ol == 1 && *o == '=' ? ": '==' compares" : "");
		return false;
	}
	if (!kl) {
		*err = xasprintf("'%s' has no fact key before '%.*s'", expr, (int)ol, o);
		return false;
	}
	if (!check_key(p->key, err))
		return false;
	str_copy(p->value, sizeof(p->value), s);
	char *t = str_trim(p->value);
	memmove(p->value, t, strlen(t) + 1);
	if (!p->value[0]) {
		*err = xasprintf("'%s' has no value after '%s'", expr, ops[p->op]);
		return false;
	}
	if (p->op >= 2 && !ordered_value(p->value)) {
		*err = xasprintf("'%s' in '%s' is not a finite number or a version (%s orders numbers and versions)",
				 p->value, expr, ops[p->op]);
		return false;
	}
	return true;
}

bool policy_check_syntax(const char *expr, char **err)
{
	parsed p;
	return parse(expr, &p, err);
}

static bool is_number(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !isfinite(v))
		return false;
	*out = v;
	return true;
}

char *policy_title(const char *expr)
{
	return xasprintf("requirement '%s' does not hold", expr);
}

static finding *not_held(findings *fs, const char *expr)
{
	char *t = policy_title(expr);
	finding *x = findings_add(fs, "policy.require", "policy", SEV_FAIL, "%s", t);
	free(t);
	return x;
}

/* Booleans compare with true/false (yes/no, 1/0); -2 for a value that is none of them. */
static int bool_value(const char *v)
{
	if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1"))
		return 1;
	if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0"))
		return 0;
	return -2;
}

void policy_apply(const char *expr, const facts *f, findings *fs)
{
	parsed p;
	char *err = NULL;
	if (!parse(expr, &p, &err)) {
		finding *x = findings_add(fs, "policy.require", "policy", SEV_FAIL, "requirement '%s' does not parse", expr);
		finding_evidence(x, "%s", err);
		free(err);
		return;
	}
	if (p.op == OP_ABSENT) {
		size_t kl = strlen(p.key);
		for (size_t i = 0; i < fs->n; i++) {
			const char *id = fs->v[i].id;
			if (strcmp(id, p.key) == 0 || (p.key[kl - 1] == '.' && strncmp(id, p.key, kl) == 0)) {
				finding *x = not_held(fs, expr);
				finding_evidence(x, "finding %s is present", id);
				return;
			}
		}
		return;
	}
	const fact *ft = facts_get(f, "%s", p.key);
	char buf[512];
	const char *have = fact_value_text(ft, buf, sizeof(buf));
	bool ok;
	const char *why = NULL;
	if (!ft || ft->state != FACT_OK) {
		ok = false;
	} else if (p.op == OP_TRUTH) {
		ok = (ft->type == FV_BOOL || ft->type == FV_INT) ? ft->i != 0
		     : ft->type == FV_REAL                       ? ft->d != 0
								 : ft->str && *ft->str;
	} else {
		double a, b;
		int c;
		if (ft->type == FV_BOOL) {
			int want = bool_value(p.value);
			if (want < 0) {
				ok = false;
				why = "a boolean fact compares with true or false";
				goto out;
			}
			c = (ft->i != 0) == want ? 0 : ft->i ? 1 : -1;
		} else if ((ft->type == FV_INT || ft->type == FV_REAL) && is_number(have, &a) && is_number(p.value, &b)) {
			c = a < b ? -1 : a > b ? 1 : 0;
		} else {
			/* text facts are versions: part by part, 12.10 > 12.4, 550.54.15 < 550.100 */
			c = version_cmp(have, p.value);
		}
		switch (p.op) {
		case 0: ok = c == 0; break;
		case 1: ok = c != 0; break;
		case 2: ok = c >= 0; break;
		case 3: ok = c <= 0; break;
		case 4: ok = c > 0; break;
		default: ok = c < 0; break;
		}
	}
out:
	if (!ok) {
		finding *x = not_held(fs, expr);
		if (!ft) {
			/* say when a skipped probe is why (--fast, --no-python) */
			const char *why_skip = NULL;
			size_t ll = strcspn(p.key, ".");
			for (const probe *pr = probe_table; pr->name && !why_skip; pr++) {
				const fact *sk = facts_get(f, FK_META_PROBE_SKIPPED, pr->name);
				if (sk && strcspn(pr->name, "_") == ll && strncmp(pr->name, p.key, ll) == 0)
					why_skip = sk->error ? sk->error : "skipped";
			}
			if (why_skip)
				finding_evidence(x, "%s = not collected: its probe was %s", p.key, why_skip);
			else
				finding_evidence(x, "%s = not collected on this machine", p.key);
		} else if (ft->state != FACT_OK)
			finding_evidence(x, "%s = %s (%s)", p.key, have, fact_state_name(ft->state));
		else
			finding_evidence(x, "%s = %s", p.key, have);
		if (why)
			finding_evidence(x, "%s", why);
	}
}
