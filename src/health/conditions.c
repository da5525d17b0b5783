#include "health/conditions.h"

#include <math.h>
#include <string.h>

#include "kb/kb_nvidia.h"

#include "sampler/snapshot.h"

clocks_verdict clocks_judge(unsigned long long reasons, double busy, double limit_w, double default_limit_w)
{
	clocks_verdict v = {CLOCKS_NONE, 0, false, false, NULL};
	unsigned long long hw = reasons & (CLK_HW_SLOWDOWN | CLK_HW_POWER_BRAKE);
	unsigned long long thermal = reasons & (CLK_SW_THERMAL | CLK_HW_THERMAL);
	unsigned long long cap = reasons & CLK_SW_POWER_CAP;
	v.limit_lowered = !isnan(limit_w) && !isnan(default_limit_w) && default_limit_w > 0 &&
			  limit_w < CLOCKS_LIMIT_LOWERED * default_limit_w;
	if (hw) {
		v.level = CLOCKS_UNHEALTHY;
		v.reasons = hw | thermal;
		v.action = "hardware slowdown: check power supply, power cables and cooling; drain the node if it persists";
	} else if (thermal) {
		v.level = CLOCKS_DEGRADED;
		v.reasons = thermal;
		v.action = "thermal slowdown: improve cooling and airflow (nvidia-smi -q -d TEMPERATURE,PERFORMANCE)";
	} else if (cap && v.limit_lowered) {
		v.level = CLOCKS_DEGRADED;
		v.reasons = cap;
		v.action = "the power limit is set below the board's default: restore it (admin: nvidia-smi -pl WATTS)";
	} else if (cap && (isnan(busy) || busy >= CLOCKS_BUSY)) {
		/* busy, or nothing says it is not: never degraded for the power cap alone */
		v.level = CLOCKS_INFO;
		v.reasons = cap;
		v.power_capped_busy = !isnan(busy);
		v.action = "none: at the power limit under full load is the expected state";
	} else if (cap) {
		v.level = CLOCKS_DEGRADED;
		v.reasons = cap;
		v.action = "power-capped while not busy: check nvidia-smi -q -d POWER,PERFORMANCE (limits set by the BMC "
			   "or an admin)";
	}
	return v;
}

clocks_level hot_judge(double temp_c, double slowdown_c)
{
	if (isnan(temp_c))
		return CLOCKS_NONE;
	bool have_slow = !isnan(slowdown_c) && slowdown_c > 0;
	if (have_slow && temp_c >= slowdown_c)
		return CLOCKS_UNHEALTHY;
	if (temp_c >= HOT_C || (have_slow && temp_c >= slowdown_c - HOT_MARGIN_C))
		return CLOCKS_DEGRADED;
	return CLOCKS_NONE;
}

clocks_level link_judge(double width, double width_max, double gen, double gen_max, double busy, bool *narrow,
			bool *slow)
{
	*narrow = !isnan(width) && !isnan(width_max) && width > 0 && width < width_max;
	*slow = !isnan(gen) && !isnan(gen_max) && gen > 0 && gen < gen_max && !isnan(busy) && busy >= LINK_BUSY;
	return *narrow || *slow ? CLOCKS_DEGRADED : CLOCKS_NONE;
}

xid_verdict xid_judge(const struct kb *k, int code, bool recent)
{
	xid_verdict v = {CLOCKS_DEGRADED, false, "", "", XID_LOOKUP_ACTION, ""};
	kb_xid info;
	if (k && kb_xid_lookup(k, code, &info) && info.meaning && *info.meaning) {
		v.known = true;
		v.name = info.name ? info.name : "";
		v.meaning = info.meaning;
		if (info.action && *info.action)
			v.action = info.action;
		v.resolution = info.resolution;
		if (info.severity && strcmp(info.severity, "info") == 0)
			v.level = CLOCKS_INFO;
		else if (info.severity && strcmp(info.severity, "fail") == 0)
			v.level = CLOCKS_UNHEALTHY;
	}
	if (!recent)
		v.level = CLOCKS_INFO;
	return v;
}

bool launch_tiny_kernels(double util, double sm_active, const launch_limits *l)
{
	if (isnan(util) || isnan(sm_active))
		return false;
	if (util - sm_active >= l->gap && sm_active < l->sm_share * util)
		return true;
	return util >= l->util_min && sm_active < l->sm_trace * util;
}
