/* Rules of NCCL's environment: interface lists that name nothing on this machine, transports
 * turned off where the hardware has them, choices forced over NCCL's own tuning. The variables
 * are one table, env_nccl_vars (probes/envparse.c); the interfaces are net.* facts. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/envparse.h"
#include "rules/registry.h"

static const char *nccl_value(const facts *f, const char *name)
{
	char key[96] = "env.";
	size_t k = 4;
	for (const char *p = name; *p && k + 1 < sizeof(key); p++)
		key[k++] = (char)tolower((unsigned char)*p);
	key[k] = '\0';
	return facts_str(f, "%s", key);
}

static bool nccl_active(const env_nccl_var *d, const char *v)
{
	env_debug_var as = {d->name, d->match, d->arg, d->sev, d->why};
	return env_debug_active(&as, v);
}

static long long gpu_count(const facts *f)
{
	long long n = facts_int_or(f, -1, "nvml.device_count");
	if (n < 0)
		n = facts_int_or(f, -1, "cuda.device_count");
	if (n < 0)
		n = facts_int_or(f, 0, "devices.gpu.present");
	return n;
}

/* The names NCCL would choose from: interfaces (with their state) or InfiniBand adapters. */
static void candidates(const facts *f, const char *what, strlist *names, strlist *states)
{
	if (strcmp(what, "ib") == 0) {
		const char *ib = facts_str(f, "net.ib_devices");
		if (ib)
			sl_split(names, ib, ",", false);
		for (size_t i = 0; i < names->n; i++)
			sl_push(states, "");
		return;
	}
	for (long long i = 0; i < facts_int_or(f, 0, "net.if.count") && i < 256; i++) {
		const char *n = facts_str(f, "net.if.%lld.name", i);
		const char *st = facts_str(f, "net.if.%lld.operstate", i);
		if (!n)
			continue;
		sl_push(names, n);
		sl_push(states, st ? st : "");
	}
}

/* ---- nccl.interface-missing ---- */

static void interface_missing(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	for (const env_nccl_var *d = env_nccl_vars; d->name; d++) {
		if (d->kind != NCCL_IFLIST)
			continue;
		const char *v = nccl_value(f, d->name);
		if (!v || !*v)
			continue;
		bool ib = strcmp(d->what, "ib") == 0;
		if (!ib && !facts_str(f, "net.interfaces"))
			continue; /* no /sys/class/net to compare with */
		strlist names = {0}, states = {0};
		candidates(f, d->what, &names, &states);
		nccl_iflist l;
		nccl_iflist_parse(v, d->arg && strcmp(d->arg, "exact") == 0, &l);
		strbuf usable, down, have;
		sb_init(&usable);
		sb_init(&down);
		sb_init(&have);
		for (size_t i = 0; i < names.n; i++) {
			sb_addf(&have, "%s%s%s%s%s", have.len ? ", " : "", names.v[i], states.v[i][0] ? " (" : "", states.v[i],
				states.v[i][0] ? ")" : "");
			if (!nccl_iflist_selects(&l, names.v[i]))
				continue;
			if (strcmp(states.v[i], "down") == 0)
				sb_addf(&down, "%s%s", down.len ? ", " : "", names.v[i]);
			else
				sb_addf(&usable, "%s%s", usable.len ? ", " : "", names.v[i]);
		}
		if (!usable.len) {
			/* a fail where multi-GPU or multi-node jobs run (2+ GPUs, or network adapters for
			 * them); on a one-GPU machine only a distributed job is hit: a warning */
			const char *ibd = facts_str(f, "net.ib_devices");
			bool multi = gpu_count(f) >= 2 || (ibd && *ibd);
			severity sev = d->sev >= 2 && multi ? SEV_FAIL : SEV_WARN;
			if (!x) {
				x = rule_emit_sev(c, sev, "%s=%s selects no %s on this machine", d->name, v,
						  ib ? "InfiniBand adapter" : "usable network interface");
			} else {
				finding_evidence(x, "%s=%s selects no %s on this machine either", d->name, v,
						 ib ? "InfiniBand adapter" : "usable network interface");
				if (sev == SEV_FAIL)
					x->sev = SEV_FAIL;
			}
			finding_evidence(x, "%s", d->why);
			strbuf list;
			sb_init(&list);
			for (size_t k = 0; k < l.names.n; k++)
				sb_addf(&list, "%s%s", k ? ", " : "", l.names.v[k]);
			finding_evidence(x, "as %s reads it: %s%s %s", strncmp(d->name, "GLOO", 4) == 0 ? "Gloo" : "NCCL",
					 l.exclude ? "every one except " : "", l.exact ? "exactly" : "names starting with",
					 list.len ? list.buf : "(nothing)");
			sb_free(&list);
			for (size_t k = 0; k < l.names.n; k++) {
				bool any = false;
				for (size_t i = 0; i < names.n && !any; i++)
					any = nccl_iflist_entry_matches(&l, k, names.v[i]);
				finding_evidence(x, "'%s' %s", l.names.v[k], any ? "matches" : "matches nothing here");
			}
			if (down.len)
				finding_evidence(x, "it selects only %s, which %s down", down.buf, strchr(down.buf, ',') ? "are" : "is");
			finding_evidence(x, "%s here: %s", ib ? "InfiniBand adapters (/sys/class/infiniband)" : "interfaces (/sys/class/net)",
					 have.len ? have.buf : "none");
			const char *route = facts_str(f, "net.default_route");
			if (!ib && route)
				finding_fix_export(x, d->name, route,
						   "the interface of the default route; on a cluster, the one the nodes reach each "
						   "other on: ip -br addr");
			else if (!ib)
				finding_fix(x, "export %s=<interface>   with a name from `ip -br addr` that the nodes reach each "
					       "other on", d->name);
			if (ib && names.n)
				finding_fix_export(x, d->name, names.v[0], "or unset it: NCCL uses every adapter");
			finding_fix(x, "or unset %s: %s", d->name,
				    ib ? "NCCL picks the adapters itself" : "NCCL then picks an interface itself, skipping docker* and lo");
			finding_fix(x, "the value often comes from a job script or image written for other machines (ens5 on AWS, "
				       "eth0 in a container, ib0 on InfiniBand nodes)");
			x->rank = 10;
		}
		sb_free(&usable);
		sb_free(&down);
		sb_free(&have);
		nccl_iflist_free(&l);
		sl_free(&names);
		sl_free(&states);
	}
}

/* ---- nccl.transport-disabled ---- */

/* Whether this machine has the path the variable turns off; why (for evidence) into buf. */
static bool path_present(const facts *f, const char *what, char *buf, size_t n)
{
	long long gpus = gpu_count(f);
	if (strcmp(what, "p2p") == 0) {
		if (gpus < 2)
			return false;
		int pairs = 0, ok = 0;
		for (long long i = 0; i < gpus && i < 16; i++)
			for (long long j = 0; j < gpus && j < 16; j++) {
				const fact *p = i == j ? NULL : facts_get(f, "cuda.peer.%lld.%lld", i, j);
				if (p && p->state == FACT_OK) {
					pairs++;
					ok += p->i != 0;
				}
			}
		if (pairs && !ok)
			return false; /* P2P is blocked anyway: the variable is the stopgap nccl.p2p-blocked suggests */
		if (pairs)
			snprintf(buf, n, "%d of %d GPU pairs can access each other (cuDeviceCanAccessPeer)", ok, pairs);
		else
			snprintf(buf, n, "this machine has %lld GPUs", gpus);
		return true;
	}
	if (strcmp(what, "shm") == 0) {
		if (gpus < 2)
			return false;
		snprintf(buf, n, "this machine has %lld GPUs: one process per GPU talks through /dev/shm", gpus);
		return true;
	}
	if (strcmp(what, "ib") == 0) {
		const char *ib = facts_str(f, "net.ib_devices");
		if (!ib || !*ib)
			return false;
		snprintf(buf, n, "InfiniBand/RoCE adapters here: %s", ib);
		return true;
	}
	return false;
}

static void transport_disabled(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	strbuf names;
	sb_init(&names);
	for (const env_nccl_var *d = env_nccl_vars; d->name; d++) {
		if (d->kind != NCCL_OFF)
			continue;
		const char *v = nccl_value(f, d->name);
		char why[160];
		if (!nccl_active(d, v) || !path_present(f, d->what, why, sizeof(why)))
			continue;
		if (!x)
			x = rule_emit(c, "NCCL transports are turned off on hardware that has them: collectives run slower");
		finding_evidence(x, "%s=%s: %s; %s", d->name, v, d->why, why);
		sb_addf(&names, " %s", d->name);
	}
	if (x) {
		finding_fix(x, "unset%s   (they are stopgaps for a broken path: if a job hangs without them, see "
			       "`gpuvet bench` p2p and all-reduce, and nvidia-smi topo -m)", names.buf);
		finding_fix(x, "look for them in ~/.bashrc, /etc/environment, the job script and the container image (ENV)");
	}
	sb_free(&names);
}

/* ---- nccl.forced ---- */

static void forced(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	strbuf names;
	sb_init(&names);
	for (const env_nccl_var *d = env_nccl_vars; d->name; d++) {
		if (d->kind != NCCL_FORCED)
			continue;
		const char *v = nccl_value(f, d->name);
		if (!nccl_active(d, v))
			continue;
		if (!x)
			x = rule_emit(c, "NCCL settings are forced or logging is on");
		finding_evidence(x, "%s=%s: %s", d->name, v, d->why);
		sb_addf(&names, " %s", d->name);
	}
	if (x) {
		finding_fix(x, "for production runs, unset%s and let NCCL tune itself (keep them to a debugging or "
			       "benchmarking session)", names.buf);
	}
	sb_free(&names);
}

const rule rules_nccl[] = {
	{"nccl.interface-missing", "env", SEV_FAIL, "env.cuda_visible_devices", interface_missing,
	 "NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME / NCCL_IB_HCA select no interface or adapter of this machine"},
	{"nccl.transport-disabled", "env", SEV_WARN, "env.cuda_visible_devices", transport_disabled,
	 "NCCL_P2P_DISABLE, NCCL_SHM_DISABLE or NCCL_IB_DISABLE set where the hardware has that path"},
	{"nccl.forced", "env", SEV_INFO, "env.cuda_visible_devices", forced,
	 "NCCL_DEBUG, NCCL_ALGO, NCCL_PROTO and other NCCL choices forced"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
