/* Rules of the host around the GPUs: the kernel's out-of-memory killer (kmsg.oom.*, from the
 * kernel logs). A training job that runs out of host memory dies with no error of its own
 * ("Killed", torchrun's "exitcode: -9", "DataLoader worker ... is killed by signal: Killed"):
 * the kernel log is the only place that says why. */
#include <stdio.h>
#include <string.h>

#include "core/factkeys.h"
#include "rules/registry.h"

static void oom_killed(rule_ctx *c)
{
	const facts *f = c->facts;
	long long n = facts_int_or(f, 0, FK_KMSG_OOM_COUNT);
	if (n <= 0)
		return;
	finding *x = NULL;
	bool recent = false, cgroup = false, host = false;
	long long shown = 0;
	for (long long i = n - 1; i >= 0 && i >= n - 16; i--) { /* the most recent first */
		const fact *tb = facts_get(f, FK_KMSG_OOM_THIS_BOOT(lld), i);
		bool this_boot = !tb || tb->state != FACT_OK || tb->i; /* unknown: treat as recent */
		bool cg = facts_true(f, FK_KMSG_OOM_CGROUP(lld), i);
		recent |= this_boot;
		cgroup |= cg && this_boot;
		host |= !cg && this_boot;
		if (!x)
			x = rule_emit(c, "the kernel's out-of-memory killer killed %lld process%s", n, n == 1 ? "" : "es");
		if (shown++ >= 6)
			continue;
		char when[64] = "", rss[48] = "";
		long long t, b;
		char minute[32];
		if (facts_int(f, &t, FK_KMSG_OOM_TIME(lld), i) && utc_minute_text(t, minute, sizeof(minute)))
			snprintf(when, sizeof(when), " at %s", minute);
		if (facts_int(f, &b, FK_KMSG_OOM_RSS_BYTES(lld), i) && b > 0)
			snprintf(rss, sizeof(rss), ", holding %.1f GiB", (double)b / (1 << 30));
		const char *name = facts_str(f, FK_KMSG_OOM_NAME(lld), i);
		finding_evidence(x, "pid %lld (%s)%s%s, for %s%s", facts_int_or(f, 0, FK_KMSG_OOM_PID(lld), i), name ? name : "?",
				 rss, when, cg ? "a memory cgroup's limit (a container's or a job's)" : "the host's memory",
				 this_boot ? "" : " (an earlier boot)");
	}
	if (!x)
		return;
	/* only earlier boots: context */
	x->sev = recent ? SEV_WARN : SEV_INFO;
	if (host || !recent)
		finding_fix(x, "the job needs more host memory than the machine has: fewer DataLoader workers (each copies "
			       "the dataset's Python objects as it touches them), checkpoints loaded on one rank or with "
			       "torch.load(..., mmap=True), smaller prefetch_factor; free -g and the job's RSS show the peak");
	if (cgroup)
		finding_fix(x, "a memory limit killed it: raise it (docker run --memory, Kubernetes resources.limits.memory, "
			       "Slurm --mem or --mem-per-gpu) or make the job fit under it");
	finding_fix(x, "the killer's lines: sudo journalctl -k | grep -iE 'out of memory|killed process'");
}

const rule rules_host[] = {
	{"host.oom-killed", "hardware", SEV_WARN, FK_KMSG_OOM_COUNT, oom_killed,
	 "the kernel's out-of-memory killer killed processes (this boot: warn)"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
