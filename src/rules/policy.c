#include "rules/policy.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *const ops[] = {"==", "!=", ">=", "<=", ">", "<"};

typedef struct parsed {
	char key[256];
	int op; /* index in ops, -1 for truth, -2 for !ID */
	char value[256];
} parsed;

static bool parse(const char *expr, parsed *p, char **err)
{
	memset(p, 0, sizeof(*p));
	while (isspace((unsigned char)*expr))
		expr++;
	if (!*expr) {
		*err = xstrdup("empty requirement");
		return false;
	}
	if (expr[0] == '!' && expr[1] != '=') {
		str_copy(p->key, sizeof(p->key), expr + 1);
		str_trim(p->key);
		p->op = -2;
		if (!p->key[0]) {
			*err = xstrdup("'!' needs a finding id");
			return false;
		}
		return true;
	}
	const char *best = NULL;
	int which = -1;
	for (size_t i = 0; i < GV_ARRAY_LEN(ops); i++) {
		const char *at = strstr(expr, ops[i]);
		if (at && (!best || at < best)) {
			best = at;
			which = (int)i;
		}
	}
	if (!best) {
		str_copy(p->key, sizeof(p->key), expr);
		char *t = str_trim(p->key);
		memmove(p->key, t, strlen(t) + 1);
		p->op = -1;
		return true;
	}
	size_t kl = (size_t)(best - expr);
	if (kl >= sizeof(p->key))
		kl = sizeof(p->key) - 1;
	memcpy(p->key, expr, kl);
	p->key[kl] = '\0';
	char *t = str_trim(p->key);
	memmove(p->key, t, strlen(t) + 1);
	str_copy(p->value, sizeof(p->value), best + strlen(ops[which]));
	t = str_trim(p->value);
	memmove(p->value, t, strlen(t) + 1);
	p->op = which;
	if (!p->key[0] || !p->value[0]) {
		*err = xasprintf("'%s' needs a fact key and a value", expr);
		return false;
	}
	for (const char *c = p->key; *c; c++)
		if (!(isalnum((unsigned char)*c) || *c == '.' || *c == '_' || *c == '-')) {
			*err = xasprintf("'%s' is not a fact key", p->key);
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
	if (end == s || *end)
		return false;
	*out = v;
	return true;
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
	if (p.op == -2) {
		size_t kl = strlen(p.key);
		for (size_t i = 0; i < fs->n; i++) {
			const char *id = fs->v[i].id;
			if (strcmp(id, p.key) == 0 || (p.key[kl - 1] == '.' && strncmp(id, p.key, kl) == 0)) {
				finding *x = findings_add(fs, "policy.require", "policy", SEV_FAIL,
							  "requirement '%s' does not hold", expr);
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
	if (!ft || ft->state != FACT_OK) {
		ok = false;
	} else if (p.op == -1) {
		ok = (ft->type == FV_BOOL || ft->type == FV_INT) ? ft->i != 0
		     : ft->type == FV_REAL                       ? ft->d != 0
								 : ft->str && *ft->str;
	} else {
		double a, b;
		int c;
		if (is_number(have, &a) && is_number(p.value, &b))
			c = a < b ? -1 : a > b ? 1 : 0;
		else if (ft->type == FV_BOOL)
			c = strcmp(have, (strcmp(p.value, "true") == 0 || strcmp(p.value, "yes") == 0) ? "yes" : "no") == 0 ? 0 : 1;
		else
			c = version_cmp(have, p.value);
		switch (p.op) {
		case 0: ok = c == 0; break;
		case 1: ok = c != 0; break;
		case 2: ok = c >= 0; break;
		case 3: ok = c <= 0; break;
		case 4: ok = c > 0; break;
		default: ok = c < 0; break;
		}
	}
	if (!ok) {
		finding *x = findings_add(fs, "policy.require", "policy", SEV_FAIL, "requirement '%s' does not hold", expr);
		finding_evidence(x, "%s = %s", p.key, ft ? have : "not collected");
	}
}
