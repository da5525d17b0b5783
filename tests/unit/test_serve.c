/* Unit tests of the exporter: exposition writer, metric families, health rules over time, Xid
 * log lines, the exporter's staleness, the textfile writer and the HTTP server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/proc.h"
#include "core/util.h"
#include "expo/expo.h"
#include "health/conditions.h"
#include "health/health.h"
#include "kb/kb.h"
#include "nvidia/gpm_fields.h"
#include "sampler/fields.h"
#include "sampler/snapshot.h"
#include "sampler/xid.h"
#include "serve/exporter.h"
#include "serve/http.h"
#include "serve/metrics.h"
#include "serve/textfile.h"
#include "../tools/test_tmp.h"

/* A machine of n GPUs with values that differ per GPU, so a value in the wrong series shows. */
static snapshot *synthetic(int n)
{
	snapshot *s = snapshot_new(n);
	s->time = now_seconds();
	s->wall_time = 1.7e9;
	str_copy(s->driver_version, sizeof(s->driver_version), "580.159.04");
	for (int i = 0; i < n; i++) {
		gpu_sample *g = &s->gpus[i];
		g->minor = i;
		snprintf(g->uuid, sizeof(g->uuid), "GPU-0000000%d-aaaa-bbbb-cccc-dddddddddddd", i);
		snprintf(g->name, sizeof(g->name), "NVIDIA H200");
		snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "00000000:%02X:00.0", 0x18 + i);
		g->util_gpu = sv_ok(10 * i + 5);
		g->util_mem = sv_ok(i);
		g->mem_total = sv_ok(150754820096.0);
		g->mem_used = sv_ok(1048576.0 * (1000 + i));
		g->temp = sv_ok(30 + i);
		g->temp_slowdown = sv_ok(87);
		g->temp_shutdown = sv_ok(92);
		g->power = sv_ok(100.5 + i);
		g->power_limit = sv_ok(700);
		g->energy_mj = sv_ok(123456789.0 + i);
		g->sm_clock = sv_ok(1980 - i);
		g->mem_clock = sv_ok(3201);
		g->sm_clock_max = sv_ok(1980);
		g->mem_clock_max = sv_ok(3201);
		g->clock_reasons = sv_ok(i == 3 ? CLK_SW_POWER_CAP : CLK_GPU_IDLE);
		g->pcie_gen = sv_ok(5);
		g->pcie_gen_max = sv_ok(5);
		g->pcie_width = sv_ok(16);
		g->pcie_width_max = sv_ok(16);
		g->pcie_tx_kbps = sv_ok(1000);
		g->pcie_rx_kbps = sv_ok(2000);
		g->ecc_corr_volatile = sv_ok(0);
		g->ecc_uncorr_volatile = sv_ok(0);
		g->ecc_corr_aggregate = sv_ok(2);
		g->ecc_uncorr_aggregate = sv_ok(0);
		g->retired_sbe = (sval){0, SV_NA};
		g->remap_corr = sv_ok(0);
		g->remap_uncorr = sv_ok(0);
		g->remap_pending = sv_ok(0);
		g->remap_failure = sv_ok(0);
		g->fan = (sval){0, SV_NA};
		g->nprocs = sv_ok(i == 1 ? 1 : 0);
		if (i == 1) {
			g->nproc = 1;
			g->procs[0].pid = 4242;
			str_copy(g->procs[0].type, sizeof(g->procs[0].type), "compute");
			str_copy(g->procs[0].name, sizeof(g->procs[0].name), "py\"th\\on\nx");
			g->procs[0].used_bytes = sv_ok(1 << 30);
		}
	}
	return s;
}

static char *render_model(const snapshot *s, const health_tracker *h, bool dcgm, bool model, expo_format fmt)
{
	strbuf sb;
	sb_init(&sb);
	expo e;
	expo_init(&e, &sb, fmt);
	metrics_finding f[1] = {{"gpu.hot", SEV_WARN}};
	metrics_input in = {.snap = s, .kb = kb_global(), .health = h, .dcgm = dcgm, .dcgm_model_name = model, .processes = true,
			    .hostname = "node-1", .have_check = true, .check_wall_time = 1.7e9, .check_seconds = 0.05,
			    .nfindings = 1, .findings = f};
	metrics_status st = {0.5, 1.7e9, true, 10, 1, 1};
	metrics_render_status(&e, &st);
	metrics_render(&e, &in);
	expo_finish(&e);
	return sb_steal(&sb);
}

static char *render(const snapshot *s, const health_tracker *h, bool dcgm, expo_format fmt)
{
	return render_model(s, h, dcgm, false, fmt);
}

/* The value of the series whose line starts with prefix (name and labels as printed). */
static double series_value(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);
	for (const char *p = text; p && *p;) {
		if (strncmp(p, prefix, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NAN;
}

static void test_escape(void **st)
{
	(void)st;
	strbuf sb;
	sb_init(&sb);
	const char in[] = "a\\b\"c\nd\xff\xc3\xa9";
	expo_escape_label(&sb, in, sizeof(in) - 1);
	assert_string_equal(sb.buf, "a\\\\b\\\"c\\nd\xef\xbf\xbd\xc3\xa9");
	sb_free(&sb);
	/* overlong and surrogate sequences are not valid UTF-8 */
	sb_init(&sb);
	expo_escape_label(&sb, "\xc0\xaf\xed\xa0\x80", 5);
	assert_int_equal(strstr(sb.buf, "\xc0") == NULL, 1);
	assert_int_equal(strstr(sb.buf, "\xed\xa0") == NULL, 1);
	sb_free(&sb);
	sb_init(&sb);
	expo_escape_help(&sb, "x\"y\\z\n", EXPO_TEXT);
	assert_string_equal(sb.buf, "x\"y\\\\z\\n");
	sb_free(&sb);
	assert_true(expo_valid_metric_name("gpuvet_gpu_info"));
	assert_true(expo_valid_metric_name("DCGM_FI_DEV_GPU_UTIL"));
	assert_false(expo_valid_metric_name("1abc"));
	assert_false(expo_valid_metric_name("a-b"));
	assert_false(expo_valid_label_name("__name"));
	assert_false(expo_valid_label_name("a:b"));
	char buf[64];
	expo_format_value(buf, sizeof(buf), 0.1);
	assert_string_equal(buf, "0.1");
	expo_format_value(buf, sizeof(buf), 150754820096.0);
	assert_string_equal(buf, "150754820096");
	expo_format_value(buf, sizeof(buf), NAN);
	assert_string_equal(buf, "NaN");
	expo_format_value(buf, sizeof(buf), -INFINITY);
	assert_string_equal(buf, "-Inf");
	expo_format_value(buf, sizeof(buf), -0.0);
	assert_string_equal(buf, "0");
	expo_format_value(buf, sizeof(buf), 1.0 / 3);
	assert_true(strtod(buf, NULL) == 1.0 / 3);
}

static void test_negotiate(void **st)
{
	(void)st;
	assert_int_equal(expo_negotiate(NULL), EXPO_TEXT);
	assert_int_equal(expo_negotiate("text/plain"), EXPO_TEXT);
	/* what Prometheus 2.x sends */
	assert_int_equal(expo_negotiate("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
					"version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
			 EXPO_OPENMETRICS);
	assert_int_equal(expo_negotiate("application/openmetrics-text; version=1.0.0; q=0.2, text/plain;q=0.9"),
			 EXPO_TEXT);
	assert_int_equal(expo_negotiate("application/openmetrics-text;q=0"), EXPO_TEXT);
	assert_int_equal(expo_negotiate("*/*"), EXPO_TEXT);
	assert_int_equal(expo_negotiate(",,;;q=,application/openmetrics-text"), EXPO_OPENMETRICS);
	/* a q that is not a qvalue leaves its element out (the one parser of Accept and Accept-Encoding) */
	assert_int_equal(expo_negotiate("application/openmetrics-text;q=high"), EXPO_TEXT);
	assert_int_equal(expo_negotiate("application/openmetrics-text;q=2, text/plain;q=0.1"), EXPO_TEXT);
}

static void test_family_types(void **st)
{
	(void)st;
	strbuf sb;
	sb_init(&sb);
	expo e;
	expo_init(&e, &sb, EXPO_OPENMETRICS);
	assert_true(expo_family(&e, "x_seconds_total", MT_COUNTER, "h"));
	assert_true(expo_sample(&e, -5, "a", "b", "skipped", NULL, NULL));
	assert_false(expo_family(&e, "bad-name", MT_GAUGE, NULL));
	assert_false(expo_sample(&e, 1, NULL));
	expo_finish(&e);
	assert_string_equal(sb.buf, "# HELP x_seconds h\n# TYPE x_seconds counter\nx_seconds_total{a=\"b\"} 0\n# EOF\n");
	assert_true(e.bad);
	sb_free(&sb);
}

/* promtool's verdict on an exposition: its exit status and what it printed. */
static int promtool(const char *text, char **out)
{
	/* through a file: proc_run's stdin is one pipe buffer (64 KiB), the exposition is longer */
	char path[4096];
	test_tmp_path(path, sizeof(path), "gpuvet-promtool-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	size_t len = strlen(text);
	assert_true(write(fd, text, len) == (ssize_t)len);
	close(fd);
	char *argv[] = {"sh", "-c", "promtool check metrics < \"$0\"", path, NULL};
	proc_result r;
	proc_run(argv, NULL, NULL, 20000, 1 << 20, &r);
	unlink(path);
	int rc = r.spawn_failed ? -1 : r.status;
	*out = xasprintf("%s%s", r.out, r.err);
	proc_result_free(&r);
	return rc;
}

static bool have_promtool(void)
{
	return system("command -v promtool >/dev/null 2>&1") == 0;
}

/* Whether name is one of DCGM's counters, typed counter as dcgm-exporter types them although
 * their names lack "_total" (the tables of sampler/fields.h and serve/metrics.h). */
static bool dcgm_counter(const char *name, size_t len)
{
	for (size_t f = 0; f < n_snap_fields; f++)
		if (snap_fields[f].dcgm && snap_fields[f].dcgm_type == 'c' && strlen(snap_fields[f].dcgm) == len &&
		    strncmp(snap_fields[f].dcgm, name, len) == 0)
			return true;
	for (int id = 0; id < MF_N; id++)
		if (str_starts(metric_families[id].name, "DCGM_") && metric_families[id].type == MT_COUNTER &&
		    strlen(metric_families[id].name) == len && strncmp(metric_families[id].name, name, len) == 0)
			return true;
	return false;
}

/* promtool's output has nothing but what it says of DCGM's counters (and, with camel, of DCGM's
 * modelName label); prints anything else. */
static bool promtool_only_dcgm_lint(const char *out, bool camel)
{
	bool ok = true;
	for (const char *p = out; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[512];
		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		const char *sp = strchr(line, ' ');
		bool allowed = !len || (sp && str_starts(line, "DCGM_FI_") &&
					((strcmp(sp, " counter metrics should have \"_total\" suffix") == 0 &&
					  dcgm_counter(line, (size_t)(sp - line))) ||
					 strcmp(line, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'") == 0 ||
					 (camel && str_ends(line, " label names should be written in 'snake_case' not 'camelCase'"))));
		if (!allowed) {
			fprintf(stderr, "promtool: %s\n", line);
			ok = false;
		}
		p += len + (nl ? 1 : 0);
	}
	return ok;
}

static void test_metrics_values_and_promtool(void **st)
{
	(void)st;
	snapshot *s = synthetic(8);
	s->gpus[2].xids[0] = (xid_count){79, 2, s->time};
	s->gpus[2].nxid = 1;
	health_tracker h;
	health_init(&h, NULL);
	health_update(&h, s, s->time);
	char *text = render(s, &h, false, EXPO_TEXT);
	/* values in base units, in the right series */
	assert_true(series_value(text, "gpuvet_gpu_utilization_ratio{gpu=\"5\",uuid=\"GPU-00000005-aaaa-bbbb-cccc-dddddddddddd\"}") == 0.55);
	assert_true(series_value(text, "gpuvet_gpu_memory_used_bytes{gpu=\"7\",uuid=\"GPU-00000007-aaaa-bbbb-cccc-dddddddddddd\"}") == 1048576.0 * 1007);
	assert_true(series_value(text, "gpuvet_gpu_energy_joules_total{gpu=\"0\",uuid=\"GPU-00000000-aaaa-bbbb-cccc-dddddddddddd\"}") == 123456.789);
	assert_true(series_value(text, "gpuvet_gpu_sm_clock_hertz{gpu=\"1\",uuid=\"GPU-00000001-aaaa-bbbb-cccc-dddddddddddd\"}") == 1979e6);
	assert_true(series_value(text, "gpuvet_gpu_throttle_reason{gpu=\"3\",uuid=\"GPU-00000003-aaaa-bbbb-cccc-dddddddddddd\",reason=\"sw_power_cap\"}") == 1);
	assert_true(series_value(text, "gpuvet_gpu_xid_errors_total{gpu=\"2\",uuid=\"GPU-00000002-aaaa-bbbb-cccc-dddddddddddd\",xid=\"79\",err_msg=\"GPU has fallen off the bus\"}") == 2);
	assert_true(series_value(text, "gpuvet_gpu_health{gpu=\"2\",uuid=\"GPU-00000002-aaaa-bbbb-cccc-dddddddddddd\",state=\"healthy\"}") == 0);
	assert_true(series_value(text, "gpuvet_finding{id=\"gpu.hot\",severity=\"warn\"}") == 1);
	assert_true(series_value(text, "gpuvet_sample_age_seconds") == 0.5);
	/* the process name with a quote, a backslash and a newline arrives escaped */
	assert_non_null(strstr(text, "name=\"py\\\"th\\\\on\\nx\""));
	/* n/a readings give no series at all */
	assert_null(strstr(text, "gpuvet_gpu_fan_speed_ratio{"));
	assert_null(strstr(text, "DCGM_FI_"));
	if (have_promtool()) {
		char *out;
		int rc = promtool(text, &out);
		if (rc != 0)
			fprintf(stderr, "promtool:\n%s\n--- exposition ---\n%s\n", out, text);
		assert_int_equal(rc, 0);
		free(out);
	} else {
		fprintf(stderr, "promtool not installed: lint step not run\n");
	}
	free(text);

	text = render(s, &h, true, EXPO_TEXT);
	assert_true(series_value(text, "DCGM_FI_DEV_GPU_UTIL{gpu=\"5\",UUID=\"GPU-00000005-aaaa-bbbb-cccc-dddddddddddd\",pci_bus_id=\"00000000:1D:00.0\",device=\"nvidia5\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"580.159.04\"}") == 55);
	assert_true(series_value(text, "DCGM_FI_DEV_FB_USED{gpu=\"7\",UUID=\"GPU-00000007-aaaa-bbbb-cccc-dddddddddddd\",pci_bus_id=\"00000000:1F:00.0\",device=\"nvidia7\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"580.159.04\"}") == 1007);
	assert_true(series_value(text, "DCGM_FI_DEV_XID_ERRORS{gpu=\"2\",UUID=\"GPU-00000002-aaaa-bbbb-cccc-dddddddddddd\",pci_bus_id=\"00000000:1A:00.0\",device=\"nvidia2\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"580.159.04\",err_code=\"79\",err_msg=\"GPU has fallen off the bus\"}") == 79);
	/* dcgm-exporter's words for no Xid yet */
	assert_true(series_value(text, "DCGM_FI_DEV_XID_ERRORS{gpu=\"0\",UUID=\"GPU-00000000-aaaa-bbbb-cccc-dddddddddddd\",pci_bus_id=\"00000000:18:00.0\",device=\"nvidia0\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"580.159.04\",err_code=\"0\",err_msg=\"No Error\"}") == 0);
	/* DCGM's counters typed counter, as dcgm-exporter types them */
	assert_non_null(strstr(text, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"));
	assert_non_null(strstr(text, "# TYPE DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS counter\n"));
	for (const char *name = "DCGM_FI_DEV_GPU_TEMP DCGM_FI_DEV_POWER_USAGE DCGM_FI_DEV_SM_CLOCK DCGM_FI_DEV_FB_FREE DCGM_FI_PROF_GR_ENGINE_ACTIVE"; *name;) {
		const char *sp = strchr(name, ' ');
		size_t n = sp ? (size_t)(sp - name) : strlen(name);
		char want[64];
		snprintf(want, sizeof(want), "\n%.*s{", (int)n, name);
		assert_non_null(strstr(text, want));
		name += n + (sp ? 1 : 0);
	}
	if (have_promtool()) {
		char *out;
		int rc = promtool(text, &out);
		assert_true(promtool_only_dcgm_lint(out, false));
		assert_true(rc == 0 || rc == 3);
		free(out);
	}
	free(text);

	/* --dcgm-model-name: DCGM's camelCase modelName label, which promtool's lint names; nothing
	 * else may be reported */
	text = render_model(s, &h, true, true, EXPO_TEXT);
	assert_non_null(strstr(text, ",modelName=\"NVIDIA H200\"}"));
	if (have_promtool()) {
		char *out;
		int rc = promtool(text, &out);
		assert_true(promtool_only_dcgm_lint(out, true));
		assert_true(rc == 0 || rc == 3);
		free(out);
	}
	free(text);

	text = render(s, &h, true, EXPO_OPENMETRICS);
	assert_true(str_ends(text, "# EOF\n"));
	assert_non_null(strstr(text, "# TYPE gpuvet_gpu_energy_joules counter\n"));
	assert_non_null(strstr(text, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION unknown\n"));
	assert_null(strstr(text, " untyped\n"));
	free(text);
	snapshot_free(s);
}


#define UID_A "5f1c2b9e-1234-4abc-9def-0123456789ab"
#define UID_B "7a2d3c4e-5678-4bcd-8ef0-1234567890ab"
#define UID_C "9b3e4f50-9abc-4cde-9f01-234567890abc"
#define UUID0 "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd"
#define UUID2 "GPU-00000002-aaaa-bbbb-cccc-dddddddddddd"

static void pod_owner(owner *o, const char *uid, const char *ns, const char *pod, const char *container)
{
	memset(o, 0, sizeof(*o));
	o->kind = OWNER_POD;
	str_copy(o->pod_uid, sizeof(o->pod_uid), uid);
	str_copy(o->namespace_, sizeof(o->namespace_), ns);
	str_copy(o->pod, sizeof(o->pod), pod);
	str_copy(o->container, sizeof(o->container), container);
}

static void add_proc(gpu_sample *g, unsigned pid, const char *name, double mem, double sm)
{
	gpu_process *p = &g->procs[g->nproc++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	str_copy(p->type, sizeof(p->type), "compute");
	str_copy(p->name, sizeof(p->name), name);
	p->used_bytes = sv_ok(mem);
	p->sm_util = sv_ok(sm);
	g->nprocs = sv_ok((double)g->nproc);
}

/* Three GPUs. GPU 0: two processes of one pod's container, one of a Slurm job, and the kubelet's
 * allocations of it to that pod (the same owner) and to a notebook pod that does not use it;
 * GPU 2: a MIG device of it allocated to a serving pod. job 1 is the next job: other pods, another
 * Slurm job, the same readings. */
static snapshot *owned(int job)
{
	snapshot *s = synthetic(3);
	s->kubelet_checkpoint = 1;
	gpu_sample *g = &s->gpus[0];
	add_proc(g, 100, "python", 1 << 30, 55);
	add_proc(g, 101, "python", 2.0 * (1 << 30), 25);
	add_proc(g, 200, "bert", 3.0 * (1 << 30), 40);
	pod_owner(&g->procs[0].owner, job ? UID_C : UID_A, "research", job ? "trainer-b2" : "trainer-7d9f", "trainer");
	g->procs[1].owner = g->procs[0].owner;
	g->procs[2].owner.kind = OWNER_SLURM;
	str_copy(g->procs[2].owner.job, sizeof(g->procs[2].owner.job), job ? "5151" : "4242");
	str_copy(g->procs[2].owner.user, sizeof(g->procs[2].owner.user), "alice");
	g->nalloc = 2;
	g->alloc[0] = (gpu_alloc){.gpu_instance = -1, .resource = "nvidia.com/gpu"};
	pod_owner(&g->alloc[0].owner, job ? UID_C : UID_A, "research", "", "trainer"); /* names unread: the process's */
	g->alloc[1] = (gpu_alloc){.gpu_instance = -1, .resource = "nvidia.com/gpu"};
	pod_owner(&g->alloc[1].owner, UID_B, "research", job ? "notebook-y" : "notebook-x", "notebook");
	g = &s->gpus[2];
	g->nalloc = 1;
	g->alloc[0] = (gpu_alloc){.gpu_instance = 3, .resource = "nvidia.com/mig-1g.18gb"};
	pod_owner(&g->alloc[0].owner, job ? UID_A : UID_C, "serving", job ? "infer-1" : "infer-0", "infer");
	return s;
}

static size_t count_prefix(const char *text, const char *prefix)
{
	size_t n = 0, len = strlen(prefix);
	for (const char *p = text; p && *p;) {
		if (strncmp(p, prefix, len) == 0)
			n++;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return n;
}

static void test_owner_series(void **st)
{
	(void)st;
	snapshot *s = owned(0);
	char *text = render(s, NULL, false, EXPO_TEXT);
	/* the GPU's own series: its identity alone */
	assert_true(series_value(text, "gpuvet_gpu_temperature_celsius{gpu=\"0\",uuid=\"" UUID0 "\"}") == 30);
	assert_null(strstr(text, "gpuvet_gpu_temperature_celsius{gpu=\"0\",uuid=\"" UUID0 "\","));
	/* one owner series per owner: the pod (its processes and allocation), the Slurm job, the notebook */
	assert_int_equal(count_prefix(text, "gpuvet_gpu_owner_info{gpu=\"0\","), 3);
	assert_true(series_value(text, "gpuvet_gpu_owner_info{gpu=\"0\",uuid=\"" UUID0 "\",kind=\"pod\",namespace=\"research\","
				       "pod=\"trainer-7d9f\",container=\"trainer\",pod_uid=\"" UID_A "\"}") == 1);
	assert_true(series_value(text, "gpuvet_gpu_owner_info{gpu=\"0\",uuid=\"" UUID0 "\",kind=\"slurm\",job_id=\"4242\","
				       "user=\"alice\"}") == 1);
	assert_true(series_value(text, "gpuvet_gpu_owner_info{gpu=\"0\",uuid=\"" UUID0 "\",kind=\"pod\",namespace=\"research\","
				       "pod=\"notebook-x\",container=\"notebook\",pod_uid=\"" UID_B "\"}") == 1);
	assert_true(series_value(text, "gpuvet_gpu_owner_processes{gpu=\"0\",uuid=\"" UUID0 "\",kind=\"pod\",namespace=\"research\","
				       "pod=\"trainer-7d9f\",container=\"trainer\",pod_uid=\"" UID_A "\"}") == 2);
	assert_true(series_value(text, "gpuvet_gpu_owner_processes{gpu=\"0\",uuid=\"" UUID0 "\",kind=\"pod\",namespace=\"research\","
				       "pod=\"notebook-x\",container=\"notebook\",pod_uid=\"" UID_B "\"}") == 0);
	assert_true(series_value(text, "gpuvet_gpu_owner_info{gpu=\"2\",uuid=\"" UUID2 "\",kind=\"pod\",namespace=\"serving\","
				       "pod=\"infer-0\",container=\"infer\",pod_uid=\"" UID_C "\",gpu_instance_id=\"3\"}") == 1);
	/* GPU 1's process is the host's: no owner */
	assert_int_equal(count_prefix(text, "gpuvet_gpu_owner_info{gpu=\"1\","), 0);
	assert_true(series_value(text, "gpuvet_kubelet_checkpoint_up") == 1);
	/* per-process series: the owner's labels, memory and SM time */
	assert_true(series_value(text, "gpuvet_process_gpu_memory_bytes{gpu=\"0\",uuid=\"" UUID0 "\",pid=\"100\",name=\"python\","
				       "type=\"compute\",kind=\"pod\",namespace=\"research\",pod=\"trainer-7d9f\","
				       "container=\"trainer\",pod_uid=\"" UID_A "\"}") == 1 << 30);
	assert_true(series_value(text, "gpuvet_process_sm_utilization_ratio{gpu=\"0\",uuid=\"" UUID0 "\",pid=\"200\",name=\"bert\","
				       "type=\"compute\",kind=\"slurm\",job_id=\"4242\",user=\"alice\"}") == 0.4);
	assert_null(strstr(text, "hpc_job"));
	if (have_promtool()) {
		char *out;
		int rc = promtool(text, &out);
		if (rc != 0)
			fprintf(stderr, "promtool:\n%s\n", out);
		assert_int_equal(rc, 0);
		free(out);
	}
	free(text);

	/* --dcgm-compat: dcgm-exporter's labels on its own series, as it has them: the pod of the
	 * GPU's processes, else of its allocation; hpc_job */
	text = render(s, NULL, true, EXPO_TEXT);
	assert_true(series_value(text, "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"" UUID0 "\",pci_bus_id=\"00000000:18:00.0\","
				       "device=\"nvidia0\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"580.159.04\","
				       "pod=\"trainer-7d9f\",namespace=\"research\",container=\"trainer\",hpc_job=\"4242\"}") == 30);
	assert_true(series_value(text, "DCGM_FI_DEV_GPU_TEMP{gpu=\"2\",UUID=\"" UUID2 "\",pci_bus_id=\"00000000:1A:00.0\","
				       "device=\"nvidia2\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"580.159.04\","
				       "pod=\"infer-0\",namespace=\"serving\",container=\"infer\"}") == 32);
	/* gpuvet's own stay without them */
	assert_true(series_value(text, "gpuvet_gpu_temperature_celsius{gpu=\"0\",uuid=\"" UUID0 "\"}") == 30);
	free(text);
	snapshot_free(s);
}

/* Every line but the owners' and the processes' (whose identity is the job's by design). */
static char *without_owner_lines(const char *text)
{
	strbuf sb;
	sb_init(&sb);
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
		bool own = strstr(p, "gpuvet_gpu_owner_") && (size_t)(strstr(p, "gpuvet_gpu_owner_") - p) < len;
		bool proc = strstr(p, "gpuvet_process_") && (size_t)(strstr(p, "gpuvet_process_") - p) < len;
		if (!own && !proc)
			sb_addn(&sb, p, len);
		p += len;
	}
	return sb_steal(&sb);
}

/* The issue: an alert with for: restarted at every job change, and an old Xid fired again with
 * the next pod, because the owners were labels of every GPU series. Now a job change changes the
 * owner series and nothing else: every other line of the exposition, labels and values, is the
 * same before and after. */
static void test_identity_across_jobs(void **st)
{
	(void)st;
	snapshot *a = owned(0), *b = owned(1);
	a->gpus[0].xids[0] = (xid_count){79, 1, a->time};
	a->gpus[0].nxid = 1;
	b->gpus[0].xids[0] = a->gpus[0].xids[0];
	b->gpus[0].nxid = 1;
	char *ta = render(a, NULL, false, EXPO_TEXT), *tb = render(b, NULL, false, EXPO_TEXT);
	assert_string_not_equal(ta, tb); /* the owners did change */
	char *fa = without_owner_lines(ta), *fb = without_owner_lines(tb);
	assert_string_equal(fa, fb);
	assert_non_null(strstr(fa, "gpuvet_gpu_xid_errors_total{gpu=\"0\",uuid=\"" UUID0 "\",xid=\"79\",err_msg=\"GPU has fallen off the bus\"} 1\n"));
	free(fa);
	free(fb);
	free(ta);
	free(tb);
	snapshot_free(a);
	snapshot_free(b);
}

static void test_mig_series(void **st)
{
	(void)st;
	snapshot *s = synthetic(2);
	s->gpus[0].mig_mode = sv_ok(0);
	gpu_sample *g = &s->gpus[1];
	g->mig_mode = sv_ok(1);
	g->nmig = 2;
	for (int m = 0; m < 2; m++) {
		snap_mig *x = &g->mig[m];
		snprintf(x->uuid, sizeof(x->uuid), "MIG-0000000%d-1111-2222-3333-444444444444", m);
		str_copy(x->profile, sizeof(x->profile), m ? "3g.71gb" : "1g.18gb");
		x->gpu_instance = m ? 2 : 9;
		x->compute_instance = 0;
		x->mem_used = sv_ok(m ? 0 : 1 << 30);
		x->mem_total = sv_ok(m ? 71.0 * (1 << 30) : 18.0 * (1 << 30));
	}
	char *text = render(s, NULL, false, EXPO_TEXT);
	const char *u1 = "GPU-00000001-aaaa-bbbb-cccc-dddddddddddd";
	char key[512];
	snprintf(key, sizeof(key), "gpuvet_gpu_mig_mode{gpu=\"1\",uuid=\"%s\"}", u1);
	assert_true(series_value(text, key) == 1);
	assert_true(series_value(text, "gpuvet_gpu_mig_mode{gpu=\"0\",uuid=\"" UUID0 "\"}") == 0);
	snprintf(key, sizeof(key), "gpuvet_gpu_mig_info{gpu=\"1\",uuid=\"%s\",gpu_instance_id=\"9\",compute_instance_id=\"0\","
		 "mig_uuid=\"MIG-00000000-1111-2222-3333-444444444444\",profile=\"1g.18gb\"}", u1);
	assert_true(series_value(text, key) == 1);
	snprintf(key, sizeof(key), "gpuvet_gpu_mig_memory_used_bytes{gpu=\"1\",uuid=\"%s\",gpu_instance_id=\"9\",compute_instance_id=\"0\"}", u1);
	assert_true(series_value(text, key) == 1 << 30);
	snprintf(key, sizeof(key), "gpuvet_gpu_mig_memory_total_bytes{gpu=\"1\",uuid=\"%s\",gpu_instance_id=\"2\",compute_instance_id=\"0\"}", u1);
	assert_true(series_value(text, key) == 71.0 * (1 << 30));
	assert_int_equal(count_prefix(text, "gpuvet_gpu_mig_info{gpu=\"0\""), 0);
	if (have_promtool()) {
		char *out;
		int rc = promtool(text, &out);
		if (rc != 0)
			fprintf(stderr, "promtool:\n%s\n", out);
		assert_int_equal(rc, 0);
		free(out);
	}
	free(text);
	/* dcgm-exporter's GPU_I_PROFILE and GPU_I_ID on the memory of each GPU instance, in the
	 * families of the GPU's */
	text = render(s, NULL, true, EXPO_TEXT);
	snprintf(key, sizeof(key), "DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"%s\",pci_bus_id=\"00000000:19:00.0\",device=\"nvidia1\","
		 "Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"580.159.04\",GPU_I_PROFILE=\"1g.18gb\",GPU_I_ID=\"9\"}", u1);
	assert_true(series_value(text, key) == 1024);
	snprintf(key, sizeof(key), "DCGM_FI_DEV_FB_FREE{gpu=\"1\",UUID=\"%s\",pci_bus_id=\"00000000:19:00.0\",device=\"nvidia1\","
		 "Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"580.159.04\",GPU_I_PROFILE=\"3g.71gb\",GPU_I_ID=\"2\"}", u1);
	assert_true(series_value(text, key) == 71 * 1024);
	assert_int_equal(count_prefix(text, "# TYPE DCGM_FI_DEV_FB_USED "), 1);
	if (have_promtool()) {
		char *out;
		int rc = promtool(text, &out);
		assert_true(promtool_only_dcgm_lint(out, false));
		assert_true(rc == 0 || rc == 3);
		free(out);
	}
	free(text);
	snapshot_free(s);
}

/* name in text as a whole word (no name character on either side) */
static bool has_word(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
		char before = p == text ? ' ' : p[-1], after = p[n];
		bool word_before = before == '_' || (before >= 'a' && before <= 'z') || (before >= 'A' && before <= 'Z') ||
				   (before >= '0' && before <= '9');
		bool word_after = after == '_' || (after >= 'a' && after <= 'z') || (after >= 'A' && after <= 'Z') ||
				  (after >= '0' && after <= '9');
		if (!word_before && !word_after)
			return true;
	}
	return false;
}

static bool declared_family(const char *name)
{
	for (size_t f = 0; f < n_snap_fields; f++)
		if ((snap_fields[f].prom && strcmp(snap_fields[f].prom, name) == 0) ||
		    (snap_fields[f].dcgm && strcmp(snap_fields[f].dcgm, name) == 0))
			return true;
	for (int k = 0; k < GV_GPM_N; k++)
		if (strcmp(gv_gpm_fields[k].prom_name, name) == 0 || strcmp(gv_gpm_fields[k].dcgm_name, name) == 0)
			return true;
	for (int id = 0; id < MF_N; id++)
		if (strcmp(metric_families[id].name, name) == 0)
			return true;
	return false;
}

/* The family tables are the one declaration: docs/serve.md names every family of them, and a
 * scrape of everything (owners, MIG, NVLink, GPM, Xids, processes, both namings) has no family
 * outside them. */
static void test_family_catalogue(void **st)
{
	(void)st;
	const char *src = getenv("GPUVET_SOURCE_DIR");
	assert_non_null(src);
	char path[4096];
	snprintf(path, sizeof(path), "%s/docs/serve.md", src);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	char *doc = xmalloc(1 << 20);
	size_t len = fread(doc, 1, (1 << 20) - 1, f);
	doc[len] = '\0';
	fclose(f);
	bool missing = false;
	for (int id = 0; id < MF_N; id++)
		if (!has_word(doc, metric_families[id].name)) {
			fprintf(stderr, "docs/serve.md does not name %s\n", metric_families[id].name);
			missing = true;
		}
	for (size_t k = 0; k < n_snap_fields; k++)
		for (int d = 0; d < 2; d++) {
			const char *name = d ? snap_fields[k].dcgm : snap_fields[k].prom;
			if (name && !has_word(doc, name)) {
				fprintf(stderr, "docs/serve.md does not name %s\n", name);
				missing = true;
			}
		}
	for (int k = 0; k < GV_GPM_N; k++)
		for (int d = 0; d < 2; d++) {
			const char *name = d ? gv_gpm_fields[k].dcgm_name : gv_gpm_fields[k].prom_name;
			if (!has_word(doc, name)) {
				fprintf(stderr, "docs/serve.md does not name %s\n", name);
				missing = true;
			}
		}
	assert_false(missing);
	free(doc);

	snapshot *s = owned(0);
	s->gpus[0].xids[0] = (xid_count){79, 1, s->time};
	s->gpus[0].nxid = 1;
	s->gpus[1].mig_mode = sv_ok(1);
	s->gpus[1].nmig = 1;
	s->gpus[1].mig[0] = (snap_mig){.uuid = "MIG-x", .profile = "7g.141gb", .gpu_instance = 0, .compute_instance = 0,
				       .mem_used = sv_ok(1), .mem_total = sv_ok(2)};
	s->gpus[0].nvlinks = 2;
	for (int l = 0; l < 2; l++)
		s->gpus[0].nvlink[l] = (snap_nvlink){.active = sv_ok(1), .tx_bytes = sv_ok(1), .rx_bytes = sv_ok(2),
						     .crc_flit = sv_ok(0), .crc_data = sv_ok(0), .replay = sv_ok(0),
						     .recovery = sv_ok(0)};
	s->gpus[0].gpm_support = GV_GPM_ON;
	for (int k = 0; k < GV_GPM_N; k++)
		s->gpus[0].gpm[k] = sv_ok(0.5);
	s->gpus[0].pcie_replay = sv_ok(1);
	s->gpus[0].retired_dbe = sv_ok(0);
	health_tracker h;
	health_init(&h, NULL);
	health_update(&h, s, s->time);
	for (int dcgm = 0; dcgm < 2; dcgm++) {
		char *text = render_model(s, &h, dcgm, dcgm, EXPO_TEXT);
		for (const char *p = strstr(text, "# TYPE "); p; p = strstr(p + 1, "# TYPE ")) {
			char name[128];
			assert_int_equal(sscanf(p, "# TYPE %127s", name), 1);
			if (!declared_family(name))
				fprintf(stderr, "%s is in no family table\n", name);
			assert_true(declared_family(name));
		}
		free(text);
	}
	snapshot_free(s);
}

static void test_health_rules(void **st)
{
	(void)st;
	health_cfg cfg;
	health_cfg_default(&cfg);
	cfg.util_low_seconds = 30;
	health_tracker h;
	health_init(&h, &cfg);
	snapshot *s = synthetic(4);
	double t = 1000;
	/* GPU 1 holds a process at 15% utilization: degraded only after 30 s */
	health_update(&h, s, t);
	assert_int_equal(health_gpu(&h, 1), HEALTH_HEALTHY);
	assert_int_equal(health_gpu(&h, 3), HEALTH_DEGRADED); /* sw power cap */
	health_update(&h, s, t + 29);
	assert_int_equal(health_gpu(&h, 1), HEALTH_HEALTHY);
	health_update(&h, s, t + 31);
	assert_int_equal(health_gpu(&h, 1), HEALTH_DEGRADED);
	bool found = false;
	for (size_t i = 0; i < h.nmsg; i++)
		if (h.msgs[i].gpu == 1 && strcmp(h.msgs[i].id, "gpu.input-bound") == 0) {
			found = true;
			assert_non_null(strstr(h.msgs[i].text, "utilization 15%"));
			assert_non_null(strstr(h.msgs[i].action, "num_workers"));
		}
	assert_true(found);
	/* utilization back up: the clock restarts */
	s->gpus[1].util_gpu = sv_ok(95);
	health_update(&h, s, t + 32);
	assert_int_equal(health_gpu(&h, 1), HEALTH_HEALTHY);
	s->gpus[1].util_gpu = sv_ok(10);
	health_update(&h, s, t + 40);
	assert_int_equal(health_gpu(&h, 1), HEALTH_HEALTHY);
	/* no process: low utilization is idle, not input-bound */
	s->gpus[1].nprocs = sv_ok(0);
	s->gpus[1].nproc = 0;
	health_update(&h, s, t + 100);
	assert_int_equal(health_gpu(&h, 1), HEALTH_HEALTHY);

	/* hot: 80 C degraded, at the slowdown threshold unhealthy */
	s->gpus[0].temp = sv_ok(80);
	health_update(&h, s, t + 101);
	assert_int_equal(health_gpu(&h, 0), HEALTH_DEGRADED);
	s->gpus[0].temp = sv_ok(87);
	health_update(&h, s, t + 102);
	assert_int_equal(health_gpu(&h, 0), HEALTH_UNHEALTHY);
	s->gpus[0].temp = sv_ok(79);
	health_update(&h, s, t + 103);
	assert_int_equal(health_gpu(&h, 0), HEALTH_HEALTHY);

	/* link: narrow always counts, a lower generation only while busy */
	s->gpus[2].pcie_width = sv_ok(8);
	health_update(&h, s, t + 104);
	assert_int_equal(health_gpu(&h, 2), HEALTH_DEGRADED);
	s->gpus[2].pcie_width = sv_ok(16);
	s->gpus[2].pcie_gen = sv_ok(1);
	s->gpus[2].util_gpu = sv_ok(5);
	health_update(&h, s, t + 105);
	assert_int_equal(health_gpu(&h, 2), HEALTH_HEALTHY);
	s->gpus[2].util_gpu = sv_ok(90);
	health_update(&h, s, t + 106);
	assert_int_equal(health_gpu(&h, 2), HEALTH_DEGRADED);
	s->gpus[2].pcie_gen = sv_ok(5);

	/* ECC: errors present at the start are the check's business; new ones make it unhealthy */
	s->gpus[0].ecc_uncorr_aggregate = sv_ok(3);
	health_tracker h2;
	health_init(&h2, &cfg);
	health_update(&h2, s, t);
	assert_int_equal(health_gpu(&h2, 0), HEALTH_HEALTHY);
	s->gpus[0].ecc_uncorr_aggregate = sv_ok(4);
	health_update(&h2, s, t + 1);
	assert_int_equal(health_gpu(&h2, 0), HEALTH_UNHEALTHY);
	s->gpus[0].remap_pending = sv_ok(1);
	s->gpus[1].remap_failure = sv_ok(1);
	health_update(&h2, s, t + 2);
	assert_int_equal(health_gpu(&h2, 1), HEALTH_UNHEALTHY);

	/* throttle by hardware slowdown: unhealthy; idle alone: healthy */
	s->gpus[3].clock_reasons = sv_ok(CLK_HW_SLOWDOWN | CLK_GPU_IDLE);
	health_update(&h2, s, t + 3);
	assert_int_equal(health_gpu(&h2, 3), HEALTH_UNHEALTHY);
	s->gpus[3].clock_reasons = sv_ok(CLK_GPU_IDLE | CLK_APP_CLOCKS);
	health_update(&h2, s, t + 4);
	assert_int_equal(health_gpu(&h2, 3), HEALTH_HEALTHY);

	/* Xid: the catalogue decides, as for check's gpu.xid (xid_judge); an application fault (13)
	 * is the application's, not a condition of the GPU; the GPU off the bus (79) is unhealthy;
	 * healthy again after the hold time */
	s->gpus[3].xids[0] = (xid_count){13, 1, t + 5};
	s->gpus[3].nxid = 1;
	health_update(&h2, s, t + 6);
	assert_int_equal(health_gpu(&h2, 3), HEALTH_HEALTHY);
	for (size_t i = 0; i < h2.nmsg; i++)
		assert_false(h2.msgs[i].gpu == 3 && strcmp(h2.msgs[i].id, "gpu.xid") == 0);
	s->gpus[3].xids[0] = (xid_count){32, 1, t + 5}; /* a warn code of the catalogue: degraded */
	health_update(&h2, s, t + 6);
	assert_int_equal(health_gpu(&h2, 3), HEALTH_DEGRADED);
	s->gpus[3].xids[0] = (xid_count){13, 1, t + 5};
	s->gpus[3].xids[1] = (xid_count){79, 1, t + 5};
	s->gpus[3].nxid = 2;
	health_update(&h2, s, t + 6);
	assert_int_equal(health_gpu(&h2, 3), HEALTH_UNHEALTHY);
	found = false;
	for (size_t i = 0; i < h2.nmsg; i++)
		if (h2.msgs[i].gpu == 3 && strstr(h2.msgs[i].text, "Xid 79: ") && h2.msgs[i].state == HEALTH_UNHEALTHY)
			found = true;
	assert_true(found);
	/* a code the catalogue lacks: degraded, pointing at NVIDIA's catalogue */
	s->gpus[3].xids[1] = (xid_count){60000, 1, t + 5};
	health_update(&h2, s, t + 6);
	assert_int_equal(health_gpu(&h2, 3), HEALTH_DEGRADED);
	health_update(&h2, s, t + 6 + cfg.xid_hold_seconds);
	assert_int_equal(health_gpu(&h2, 3), HEALTH_HEALTHY);

	/* lost GPU */
	s->gpus[2].lost = true;
	str_copy(s->gpus[2].error, sizeof(s->gpus[2].error), "NVML_ERROR_GPU_IS_LOST");
	health_update(&h2, s, t + 7);
	assert_int_equal(health_gpu(&h2, 2), HEALTH_UNHEALTHY);
	assert_int_equal(health_overall(&h2), HEALTH_UNHEALTHY);
	/* n/a everywhere: nothing to judge, healthy */
	snapshot *empty = snapshot_new(2);
	health_tracker h3;
	health_init(&h3, NULL);
	health_update(&h3, empty, t);
	assert_int_equal(health_overall(&h3), HEALTH_HEALTHY);
	snapshot_free(empty);
	snapshot_free(s);
}

/* gpu.xid's one rule (health/conditions.h), which check and watch/serve both call */
static void test_xid_judge(void **st)
{
	(void)st;
	const kb *k = kb_global();
	xid_verdict v = xid_judge(k, 79, true);
	assert_int_equal(v.level, CLOCKS_UNHEALTHY);
	assert_true(v.known);
	assert_string_equal(v.name, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS");
	assert_int_equal(xid_judge(k, 79, false).level, CLOCKS_INFO); /* an earlier boot: context */
	assert_int_equal(xid_judge(k, 13, true).level, CLOCKS_INFO);  /* an application fault */
	assert_int_equal(xid_judge(k, 32, true).level, CLOCKS_DEGRADED);
	v = xid_judge(k, 60000, true); /* not in the catalogue */
	assert_int_equal(v.level, CLOCKS_DEGRADED);
	assert_false(v.known);
	assert_string_equal(v.action, XID_LOOKUP_ACTION);
	assert_int_equal(xid_judge(NULL, 79, true).level, CLOCKS_DEGRADED);
}

static void test_xid_lines(void **st)
{
	(void)st;
	/* the parser is nvidia/xidlog.h's; the bus id matching is ours */
	xid_line x;
	const char *l1 = "6,1234,5678901,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus.";
	assert_true(xid_parse_line(l1, strlen(l1), 0, &x));
	assert_int_equal(x.code, 79);
	assert_true(xid_pci_matches(x.pci, "00000000:18:00.0"));
	assert_false(xid_pci_matches(x.pci, "00000000:19:00.0"));
	assert_true(xid_pci_matches("18:00", "00000000:18:00.0"));
	assert_false(xid_pci_matches("garbage", "00000000:18:00.0"));
	assert_false(xid_pci_matches(x.pci, "garbage"));

	/* one event reported by NVML and the kernel log counts once; a later one counts again */
	xid_tally t;
	xid_tally_init(&t, 2);
	xid_tally_add(&t, 1, 79, XID_SRC_NVML, 100);
	xid_tally_add(&t, 1, 79, XID_SRC_KMSG, 101);
	xid_tally_add(&t, 1, 79, XID_SRC_KMSG, 120);
	xid_tally_add(&t, 1, 48, XID_SRC_NVML, 121);
	xid_tally_add(&t, 5, 48, XID_SRC_NVML, 121); /* no such GPU */
	gpu_sample g;
	memset(&g, 0, sizeof(g));
	xid_tally_copy(&t, 1, &g);
	assert_int_equal(g.xid_total, 3);
	assert_int_equal(g.nxid, 2);
	assert_int_equal(g.xids[0].code, 79);
	assert_int_equal(g.xids[0].count, 2);
	xid_tally_free(&t);

	/* the kernel log reader, on a plain file, finds the Xid lines among others */
	char dir[4096];
	test_tmp_path(dir, sizeof(dir), "gpuvet-kmsg-XXXXXX");
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof(path), "%s/kmsg", dir);
	FILE *f = fopen(path, "w");
	fprintf(f, "6,1,1,-;hello\n4,2,2,-;NVRM: Xid (PCI:0000:18:00): 48, DBE\n4,3,3,-;NVRM: Xid (PCI:0000:18:00): 63, x");
	fclose(f);
	kmsg_reader r;
	kmsg_open(&r, path);
	assert_true(r.fd >= 0);
	int seen = 0;
	void on(void *ctx, const xid_line *xl);
	kmsg_poll(&r, on, &seen);
	assert_int_equal(seen, 48); /* the unterminated last line waits for its newline */
	kmsg_close(&r);
	unlink(path);
	rmdir(dir);
}

void on(void *ctx, const xid_line *xl)
{
	*(int *)ctx += xl->code;
}

/* A source that answers while ok is true. */
struct script {
	bool ok;
	int takes;
};

static snapshot *script_take(void *ctx, char *err, size_t n)
{
	struct script *sc = ctx;
	sc->takes++;
	if (!sc->ok) {
		snprintf(err, n, "injected failure");
		return NULL;
	}
	snapshot *s = synthetic(8);
	s->gpus[0].temp = sv_ok(40 + sc->takes);
	return s;
}

static void test_exporter_staleness(void **st)
{
	(void)st;
	struct script sc = {true, 0};
	exporter_opts eo = {0};
	eo.interval = 1;
	eo.hostname = "h";
	exporter *ex = exporter_new_unthreaded(&eo, (sample_source){&sc, script_take});
	exporter_tick(ex);
	size_t len;
	char *all = exporter_render_all(ex, EXPO_TEXT, &len);
	assert_true(series_value(all, "gpuvet_sampler_up") == 1);
	assert_true(series_value(all, "gpuvet_gpu_temperature_celsius{gpu=\"0\",uuid=\"GPU-00000000-aaaa-bbbb-cccc-dddddddddddd\"}") == 41);
	free(all);
	sc.ok = false;
	exporter_tick(ex);
	usleep(200 * 1000);
	all = exporter_render_all(ex, EXPO_TEXT, &len);
	/* the last good snapshot, marked stale */
	assert_true(series_value(all, "gpuvet_sampler_up") == 0);
	assert_true(series_value(all, "gpuvet_gpu_temperature_celsius{gpu=\"0\",uuid=\"GPU-00000000-aaaa-bbbb-cccc-dddddddddddd\"}") == 41);
	assert_true(series_value(all, "gpuvet_sample_age_seconds") >= 0.2);
	assert_true(series_value(all, "gpuvet_sampler_errors_total") == 1);
	char why[256];
	assert_true(exporter_alive(ex, why, sizeof(why)));
	assert_non_null(strstr(why, "injected failure"));
	free(all);
	sc.ok = true;
	exporter_tick(ex);
	all = exporter_render_all(ex, EXPO_TEXT, &len);
	assert_true(series_value(all, "gpuvet_gpu_temperature_celsius{gpu=\"0\",uuid=\"GPU-00000000-aaaa-bbbb-cccc-dddddddddddd\"}") == 43);
	assert_true(series_value(all, "gpuvet_sample_age_seconds") < 0.2);
	free(all);
	exporter_stop(ex);
}

static void test_textfile(void **st)
{
	(void)st;
	char dir[4096];
	test_tmp_path(dir, sizeof(dir), "gpuvet-textfile-XXXXXX");
	assert_non_null(mkdtemp(dir));
	char err[256];
	assert_int_equal(textfile_write(dir, "gpuvet.prom", "a 1\n", 4, err, sizeof(err)), 0);
	assert_int_equal(textfile_write(dir, "gpuvet.prom", "a 2\n", 4, err, sizeof(err)), 0);
	char path[300];
	snprintf(path, sizeof(path), "%s/gpuvet.prom", dir);
	FILE *f = fopen(path, "r");
	char buf[16] = "";
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "a 2\n");
	/* nothing else is left in the directory */
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' || (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")))
			n++;
	closedir(d);
	assert_int_equal(n, 1);
	unlink(path);
	assert_int_equal(textfile_write("/nonexistent-gpuvet-dir", "gpuvet.prom", "x", 1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot create"));
	rmdir(dir);
}

static void test_listen_parse(void **st)
{
	(void)st;
	char host[64], err[128];
	unsigned port;
	bool all;
	assert_true(http_parse_listen(GPUVET_DEFAULT_LISTEN, host, sizeof(host), &port, &all, err, sizeof(err)));
	assert_string_equal(host, "127.0.0.1"); /* loopback unless told otherwise */
	assert_int_equal(port, GPUVET_DEFAULT_PORT);
	assert_false(all);
	assert_true(http_parse_listen(":9999", host, sizeof(host), &port, &all, err, sizeof(err)));
	assert_true(all);
	assert_true(http_parse_listen("[::1]:80", host, sizeof(host), &port, &all, err, sizeof(err)));
	assert_string_equal(host, "::1");
	assert_false(http_parse_listen("10134", host, sizeof(host), &port, &all, err, sizeof(err)));
	assert_false(http_parse_listen("::1:80", host, sizeof(host), &port, &all, err, sizeof(err)));
	assert_false(http_parse_listen("h:70000", host, sizeof(host), &port, &all, err, sizeof(err)));
	assert_false(http_parse_listen("h:", host, sizeof(host), &port, &all, err, sizeof(err)));
	assert_false(http_parse_listen("[::1]80", host, sizeof(host), &port, &all, err, sizeof(err)));
}

/* Sends a request, returns what came back (at most 1 MiB). */
static char *http_raw(unsigned port, const char *req, size_t reqlen)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {0};
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return xstrdup("");
	}
	size_t off = 0;
	while (off < reqlen) {
		ssize_t n = send(fd, req + off, reqlen - off, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	shutdown(fd, SHUT_WR);
	strbuf sb;
	sb_init(&sb);
	char buf[65536];
	ssize_t n;
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0 && sb.len < (1u << 20))
		sb_addn(&sb, buf, (size_t)n);
	close(fd);
	return sb_steal(&sb);
}

static void test_http(void **st)
{
	(void)st;
	struct script sc = {true, 0};
	exporter_opts eo = {0};
	eo.interval = 1;
	eo.hostname = "h";
	exporter *ex = exporter_new_unthreaded(&eo, (sample_source){&sc, script_take});
	http_opts ho;
	http_opts_default(&ho);
	ho.listen = "127.0.0.1:0";
	char err[256];
	http_server *h = http_start(&ho, ex, err, sizeof(err));
	assert_non_null(h);
	unsigned port = http_port(h);
	assert_true(port > 0);

	/* before the first sample: 503, never an answer without the GPUs (Prometheus would see every
	 * GPU vanish at each restart) */
	const char get[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	char *r = http_raw(port, get, strlen(get));
	assert_true(str_starts(r, "HTTP/1.1 503"));
	assert_non_null(strstr(r, "Retry-After: 1"));
	assert_null(strstr(r, "gpuvet_sampler_up"));
	free(r);
	exporter_tick(ex);
	r = http_raw(port, get, strlen(get));
	assert_non_null(strstr(r, "Content-Type: text/plain; version=0.0.4"));
	assert_non_null(strstr(r, "gpuvet_gpu_info{"));
	free(r);
	const char om[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text;version=1.0.0\r\nConnection: close\r\n\r\n";
	r = http_raw(port, om, strlen(om));
	assert_non_null(strstr(r, "Content-Type: application/openmetrics-text"));
	assert_true(str_ends(r, "# EOF\n"));
	free(r);
	const char hz[] = "GET /healthz HTTP/1.0\r\n\r\n";
	r = http_raw(port, hz, strlen(hz));
	assert_true(str_starts(r, "HTTP/1.0 200") || str_starts(r, "HTTP/1.1 200"));
	free(r);
	const char nf[] = "GET /nope HTTP/1.0\r\n\r\n";
	r = http_raw(port, nf, strlen(nf));
	assert_non_null(strstr(r, " 404 "));
	free(r);
	const char post[] = "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
	r = http_raw(port, post, strlen(post));
	assert_non_null(strstr(r, " 405 "));
	free(r);
	const char junk[] = "\x01\x02garbage\r\n\r\n";
	r = http_raw(port, junk, strlen(junk));
	assert_null(strstr(r, " 200 "));
	free(r);
	/* headers over the connection memory limit: refused, the server lives on */
	strbuf big;
	sb_init(&big);
	sb_add(&big, "GET /metrics HTTP/1.1\r\nHost: x\r\n");
	for (int i = 0; i < 200; i++)
		sb_addf(&big, "X-Pad-%d: %0200d\r\n", i, 0);
	sb_add(&big, "\r\n");
	r = http_raw(port, big.buf, big.len);
	assert_null(strstr(r, " 200 "));
	free(r);
	sb_free(&big);
	r = http_raw(port, get, strlen(get));
	assert_true(str_starts(r, "HTTP/1.1 200"));
	free(r);
	http_stop(h);
	exporter_stop(ex);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_negotiate),
		cmocka_unit_test(test_family_types),
		cmocka_unit_test(test_metrics_values_and_promtool),
		cmocka_unit_test(test_owner_series),
		cmocka_unit_test(test_identity_across_jobs),
		cmocka_unit_test(test_mig_series),
		cmocka_unit_test(test_family_catalogue),
		cmocka_unit_test(test_health_rules),
		cmocka_unit_test(test_xid_judge),
		cmocka_unit_test(test_xid_lines),
		cmocka_unit_test(test_exporter_staleness),
		cmocka_unit_test(test_textfile),
		cmocka_unit_test(test_listen_parse),
		cmocka_unit_test(test_http),
	};
	/* the embedded knowledge base (the Xid catalogue), as main() sets it */
	char *err = NULL;
	kb *k = kb_load(NULL, &err);
	if (!k)
		return 1;
	kb_set_global(k);
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	kb_set_global(NULL);
	kb_free(k);
	return rc;
}
