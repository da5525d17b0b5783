/* Unit tests of the NVLink and topology pieces that are pure: the PCI path between two devices
 * (topology_pci_relation), the nvidia-smi topo -m matrix derived from facts (topology_derive),
 * and serve's NVLink families from a hand-made snapshot (metrics_render_nvlink). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "core/facts.h"
#include "core/util.h"
#include "expo/expo.h"
#include "probes/topology.h"
#include "serve/metrics.h"

#define SW "pci0000:15/0000:15:01.0/0000:16:00.0"

static void test_relation(void **state)
{
	(void)state;
	/* one PCIe switch between them */
	assert_string_equal(topology_pci_relation(SW "/0000:17:00.0/0000:18:00.0", 0, SW "/0000:17:01.0/0000:19:00.0", 0),
			    "PIX");
	/* two functions of one device */
	assert_string_equal(topology_pci_relation(SW "/0000:17:00.0/0000:18:00.0", 0, SW "/0000:17:00.0/0000:18:00.1", 0),
			    "PIX");
	/* a second switch level on one side */
	assert_string_equal(topology_pci_relation(SW "/0000:17:00.0/0000:18:00.0", 0,
						  SW "/0000:17:02.0/0000:1a:00.0/0000:1b:00.0/0000:1c:00.0", 0),
			    "PXB");
	/* separate root ports of one host bridge */
	assert_string_equal(topology_pci_relation("pci0000:15/0000:15:01.0/0000:16:00.0", 0,
						  "pci0000:15/0000:15:02.0/0000:17:00.0", 0),
			    "PHB");
	/* host bridges of one NUMA node, of two, and unknown nodes */
	assert_string_equal(topology_pci_relation(SW "/0000:17:00.0/0000:18:00.0", 0, "pci0000:35/0000:35:01.0/0000:38:00.0", 0),
			    "NODE");
	assert_string_equal(topology_pci_relation(SW "/0000:17:00.0/0000:18:00.0", 0, "pci0000:97/0000:97:01.0/0000:9a:00.0", 1),
			    "SYS");
	assert_string_equal(topology_pci_relation(SW "/0000:17:00.0/0000:18:00.0", -1, "pci0000:97/0000:97:01.0/0000:9a:00.0", 1),
			    "NODE");
	/* too short to say */
	assert_null(topology_pci_relation("pci0000:15", 0, SW, 0));
	assert_null(topology_pci_relation("", 0, "", 0));
}

static void test_derive(void **state)
{
	(void)state;
	facts *f = facts_new();
	facts_put_int(f, NULL, 2, "nvml.device_count");
	facts_put_str(f, NULL, "00000000:18:00.0", "nvml.gpu.0.pci_bus_id");
	facts_put_str(f, NULL, "00000000:9A:00.0", "nvml.gpu.1.pci_bus_id");
	facts_put_int(f, NULL, 2, "topology.pci.count");
	facts_put_str(f, NULL, "0000:18:00.0", "topology.pci.0.bus_id");
	facts_put_str(f, NULL, "gpu", "topology.pci.0.kind");
	facts_put_str(f, NULL, SW "/0000:17:00.0/0000:18:00.0", "topology.pci.0.path");
	facts_put_int(f, NULL, 0, "topology.pci.0.numa_node");
	facts_put_str(f, NULL, "0000:9a:00.0", "topology.pci.1.bus_id");
	facts_put_str(f, NULL, "gpu", "topology.pci.1.kind");
	facts_put_str(f, NULL, "pci0000:97/0000:97:01.0/0000:9a:00.0", "topology.pci.1.path");
	facts_put_int(f, NULL, 1, "topology.pci.1.numa_node");
	topology_derive(f);
	assert_string_equal(facts_str(f, "topology.gpu.0.gpu.1"), "SYS");
	assert_int_equal(facts_int_or(f, -9, "topology.gpu.1.numa_node"), 1);
	assert_int_equal(facts_int_or(f, -9, "topology.nic.count"), 0);
	/* two direct links from GPU 0 to GPU 1 (upper-case hex in NVML's bus id), one inactive */
	facts_put_int(f, NULL, 3, "nvml.gpu.0.nvlink.count");
	for (int l = 0; l < 3; l++) {
		facts_put_str(f, NULL, l == 2 ? "inactive" : "active", "nvml.gpu.0.nvlink.%d.state", l);
		facts_put_str(f, NULL, "gpu", "nvml.gpu.0.nvlink.%d.remote_type", l);
		facts_put_str(f, NULL, "00000000:9A:00.0", "nvml.gpu.0.nvlink.%d.remote_bus_id", l);
	}
	topology_derive(f);
	assert_string_equal(facts_str(f, "topology.gpu.0.gpu.1"), "NV2");
	facts_free(f);
}

static char *render(const snapshot *s, bool dcgm)
{
	strbuf sb;
	sb_init(&sb);
	expo e;
	expo_init(&e, &sb, EXPO_TEXT);
	metrics_input in = {.snap = s, .dcgm = dcgm, .hostname = "node-1"};
	metrics_render_nvlink(&e, s, &in);
	expo_finish(&e);
	return sb_steal(&sb);
}

static void test_metrics(void **state)
{
	(void)state;
	snapshot *s = snapshot_new(2);
	str_copy(s->gpus[0].uuid, sizeof(s->gpus[0].uuid), "GPU-a");
	str_copy(s->gpus[1].uuid, sizeof(s->gpus[1].uuid), "GPU-b");
	gpu_sample *g = &s->gpus[0];
	g->nvlinks = 2;
	g->nvlink[0] = (snap_nvlink){sv_ok(1), sv_ok(4096), sv_ok(8192), sv_ok(0), sv_ok(0), sv_ok(3), sv_ok(0)};
	g->nvlink[1] = (snap_nvlink){sv_ok(0), sv_ok(0), sv_ok(0), sv_ok(5), sv_ok(0), sv_ok(4), sv_ok(1)};
	g->nvlink_tx_bps = sv_ok(1e9);
	g->nvlink_rx_bps = (sval){0, SV_NA};
	char *t = render(s, false);
	assert_non_null(strstr(t, "gpuvet_gpu_nvlink_up{gpu=\"0\",uuid=\"GPU-a\",link=\"0\"} 1\n"));
	assert_non_null(strstr(t, "gpuvet_gpu_nvlink_up{gpu=\"0\",uuid=\"GPU-a\",link=\"1\"} 0\n"));
	assert_non_null(strstr(t, "gpuvet_gpu_nvlink_errors_total{gpu=\"0\",uuid=\"GPU-a\",link=\"1\",type=\"recovery\"} 1\n"));
	assert_non_null(strstr(t, "gpuvet_gpu_nvlink_data_bytes_total{gpu=\"0\",uuid=\"GPU-a\",link=\"0\",direction=\"rx\"} 8192\n"));
	/* the rates are GPM's families (one writer per family name): none here */
	assert_null(strstr(t, "_bytes_per_second"));
	/* a GPU without NVLink has no series */
	assert_null(strstr(t, "GPU-b"));
	assert_null(strstr(t, "DCGM_"));
	free(t);
	t = render(s, true);
	assert_non_null(strstr(t, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{gpu=\"0\",UUID=\"GPU-a\""));
	assert_non_null(strstr(t, "Hostname=\"node-1\"} 7\n"));
	assert_null(strstr(t, "DCGM_FI_PROF_NVLINK"));
	free(t);
	/* a lost GPU exports nothing */
	g->lost = true;
	t = render(s, true);
	assert_null(strstr(t, "nvlink"));
	assert_null(strstr(t, "NVLINK"));
	free(t);
	snapshot_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_relation),
		cmocka_unit_test(test_derive),
		cmocka_unit_test(test_metrics),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
