#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "kb/kb_nvidia.h"
#include "cuda/archlist.h"

const char *kb_gpu_segment(const kb *k, const char *gpu_name)
{
	return kb_gpu_column(k, gpu_name, "segment");
}

bool kb_gpu_is_datacenter(const kb *k, const char *gpu_name)
{
	if (!gpu_name)
		return false;
	const char *seg = kb_gpu_segment(k, gpu_name);
	if (seg)
		return strcmp(seg, "datacenter") == 0;
	static const char *const families[] = {"Tesla", "A100", "A800", "A30", "A40", "A10", "A16", "A2 ",
					       "H100", "H200", "H800", "H20", "GH200", "B100", "B200", "B300",
					       "GB200", "GB300", "L40", "L4", "L20", "T4", "V100", "P100"};
	for (size_t i = 0; i < GV_ARRAY_LEN(families); i++) {
		const char *p = strstr(gpu_name, families[i]);
		/* a family name must stand alone: "L4" is not "L40"'s prefix match inside "RTX 4090" */
		if (p && (p == gpu_name || p[-1] == ' ' || p[-1] == '-')) {
			char next = p[strlen(families[i])];
			if (next == '\0' || next == ' ' || next == '-' || families[i][strlen(families[i]) - 1] == ' ')
				return true;
		}
	}
	return false;
}

const char *kb_xid_resolution(const char *bucket)
{
	static const struct {
		const char *bucket, *words;
	} m[] = {
		{"RESTART_APP", "restart the application"},
		{"RESET_GPU", "reset the GPU"},
		{"RESTART_BM", "reboot the machine"},
		{"RESTART_VM", "restart the virtual machine"},
		{"IGNORE", "no action needed"},
		{"CHECK_MECHANICALS", "check the power and cooling of the board"},
		{"CONTACT_SUPPORT", "contact support"},
		{"UPDATE_SW", "update the driver"},
		{"WORKFLOW_XID_45", "act on the Xid logged before it"},
		{"WORKFLOW_XID_48", "drain the GPU and reset it; if it repeats, run field diagnostics and report it for RMA"},
		{"WORKFLOW_NVLINK_ERR", "follow NVIDIA's NVLink error workflow"},
		{"WORKFLOW_NVLINK5_ERR", "follow NVIDIA's NVLink 5 error workflow"},
		{"XID_154", "do the recovery action the message names"},
	};
	for (size_t i = 0; bucket && i < GV_ARRAY_LEN(m); i++)
		if (strcmp(m[i].bucket, bucket) == 0)
			return m[i].words;
	return NULL;
}

bool kb_xid_lookup(const kb *k, int code, kb_xid *out)
{
	memset(out, 0, sizeof(*out));
	const csv_table *t = k ? kb_table(k, "xid") : NULL;
	if (!t)
		return false;
	for (size_t r = 0; r < t->nrows; r++) {
		const char *c = csv_cell(t, r, "code");
		char *end;
		long v = strtol(c, &end, 10);
		if (end != c && v == code) {
			out->code = code;
			out->name = csv_cell(t, r, "name");
			out->meaning = csv_cell(t, r, "meaning");
			out->action = csv_cell(t, r, "action");
			out->severity = csv_cell(t, r, "severity");
			out->source = csv_cell(t, r, "source_url");
			const char *words = kb_xid_resolution(csv_cell(t, r, "nvidia_immediate_action"));
			out->resolution = words ? words : "";
			out->causes = csv_cell(t, r, "causes");
			out->message = csv_cell(t, r, "message");
			return true;
		}
	}
	return false;
}

bool kb_arch_driver_lookup(const kb *k, int major, int minor, kb_arch_driver *out)
{
	const csv_table *t = k ? kb_table(k, "gpu_arch_driver") : NULL;
	if (!t)
		return false;
	for (size_t r = 0; r < t->nrows; r++) {
		int a, b;
		if (!cc_parse(csv_cell(t, r, "compute_capability"), &a, &b) || a != major || b != minor)
			continue;
		memset(out, 0, sizeof(*out));
		str_copy(out->architecture, sizeof(out->architecture), csv_cell(t, r, "architecture"));
		snprintf(out->cc, sizeof(out->cc), "%d.%d", a, b);
		str_copy(out->min_driver, sizeof(out->min_driver), csv_cell(t, r, "min_linux_driver"));
		out->last_branch = atoi(csv_cell(t, r, "last_driver_branch"));
		return true;
	}
	return false;
}

int kb_driver_drives(const kb *k, const char *driver, int major, int minor, char *why, size_t n)
{
	kb_arch_driver a;
	int branch = 0;
	if (!driver || !*driver || version_parse(driver, &branch, &(int){0}, NULL) < 1 ||
	    !kb_arch_driver_lookup(k, major, minor, &a))
		return -1;
	if (a.min_driver[0] && version_cmp(driver, a.min_driver) < 0) {
		snprintf(why, n, "%s GPUs (compute capability %s) need driver >= %s", a.architecture, a.cc, a.min_driver);
		return 0;
	}
	if (a.last_branch > 0 && branch > a.last_branch) {
		snprintf(why, n, "the last driver branch that drives %s GPUs (compute capability %s) is R%d", a.architecture,
			 a.cc, a.last_branch);
		return 0;
	}
	return 1;
}
