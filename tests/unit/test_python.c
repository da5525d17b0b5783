/* Unit tests of the Python layer: fatbin and ELF readers, arch lists, small-file parsers, the
 * PyTorch knowledge base, the fix planner, the live probe's answer parser, RUNPATH expansion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/facts.h"
#include "core/util.h"
#include "kb/kb.h"
#include "kb/kb_torch.h"
#include "cuda/archlist.h"
#include "cuda/binsrc.h"
#include "elf/elf.h"
#include "cuda/fatbin.h"
#include "python/fixplan.h"
#include "python/ldsim.h"
#include "python/probe_out.h"
#include "parse/pyparse.h"

static char *fixture_path(const char *name)
{
	const char *src = getenv("GPUVET_SOURCE_DIR");
	return xasprintf("%s/tests/fixtures/python/%s", src ? src : "..", name);
}

static unsigned char *read_all(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	strbuf sb;
	sb_init(&sb);
	char buf[4096];
	size_t r;
	while ((r = fread(buf, 1, sizeof(buf), fp)) > 0)
		sb_addn(&sb, buf, r);
	fclose(fp);
	*len = sb.len;
	return (unsigned char *)sb_steal(&sb);
}

/* ---- fatbin / ELF on the nvcc-built fixtures ---- */

static void check_fixture(const char *name, const char *want_arch, const char *want_runpath)
{
	char *p = fixture_path(name);
	size_t len = 0;
	unsigned char *data = read_all(p, &len);
	assert_non_null(data);
	const char *err = NULL;
	elf_image *img = elf_open_mem(data, len, &err);
	assert_non_null(img);
	elf_dyn dyn;
	assert_int_equal(elf_read_dynamic(img, &dyn, &err), 0);
	if (want_runpath) {
		assert_non_null(dyn.runpath);
		assert_string_equal(dyn.runpath, want_runpath);
	}
	fatbin_summary s;
	assert_int_equal(fatbin_scan_elf(img, NULL, &s), 1);
	assert_true(s.containers >= 1);
	assert_int_equal(s.malformed, 0);
	assert_false(s.incomplete);
	assert_true(s.compressed);
	char arch[512];
	fatbin_arch_text(&s, arch, sizeof(arch));
	assert_string_equal(arch, want_arch);
	elf_dyn_free(&dyn);
	elf_close(img);
	free(data);
	free(p);
}

static void test_fixtures(void **st)
{
	(void)st;
	check_fixture("libtorch_cuda_cu130.so", "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120",
		      "$ORIGIN/../../nvidia/cu13/lib:$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN/../../nvidia/nccl/lib:$ORIGIN");
	check_fixture("libtorch_cuda_sm86.so", "sm_75 sm_80 sm_86", NULL);
	check_fixture("ext_sm80.so", "sm_80", NULL);
	check_fixture("ext_sm90_ptx.so", "sm_90 compute_90", NULL);
	/* every truncation of a real library: no crash, no read outside */
	char *p = fixture_path("libtorch_cuda_cu130.so");
	size_t len;
	unsigned char *data = read_all(p, &len);
	for (size_t cut = 0; cut < len; cut += 97) {
		const char *err;
		elf_image *img = elf_open_mem(data, cut, &err);
		fatbin_summary s;
		if (img) {
			fatbin_scan_elf(img, NULL, &s);
			elf_close(img);
		}
		binsrc b;
		binsrc_mem(&b, data, cut);
		fatbin_scan(&b, 0, cut, NULL, &s);
	}
	free(data);
	free(p);
}

/* A synthetic container: entries of (kind, sm, flags). */
static size_t make_fatbin(unsigned char *buf, size_t cap, const int (*ent)[3], int n, size_t payload)
{
	size_t off = 16;
	for (int i = 0; i < n; i++) {
		assert_true(off + 64 + payload <= cap);
		unsigned char *e = buf + off;
		memset(e, 0, 64);
		e[0] = (unsigned char)ent[i][0];
		e[4] = 64;
		e[8] = (unsigned char)payload;
		e[28] = (unsigned char)ent[i][1];
		uint32_t fl = (uint32_t)ent[i][2];
		memcpy(e + 40, &fl, 4);
		memset(e + 64, 0xAB, payload);
		off += 64 + payload;
	}
	uint32_t magic = FATBIN_MAGIC;
	memcpy(buf, &magic, 4);
	buf[4] = 1;
	buf[6] = 16;
	uint64_t body = off - 16;
	memcpy(buf + 8, &body, 8);
	return off;
}

static void test_fatbin_synthetic(void **st)
{
	(void)st;
	unsigned char buf[4096];
	const int ents[][3] = {{2, 90, 0x100011}, {2, 100, 0x200011}, {1, 120, 0x11}, {2, 80, 0x8011}, {2, 80, 0x11}};
	size_t len = make_fatbin(buf, sizeof(buf), ents, 5, 24);
	binsrc b;
	binsrc_mem(&b, buf, len);
	fatbin_summary s;
	assert_int_equal(fatbin_scan(&b, 0, len, NULL, &s), 1);
	char arch[256];
	fatbin_arch_text(&s, arch, sizeof(arch));
	assert_string_equal(arch, "sm_80 sm_90a sm_100f compute_120");
	assert_true(s.compressed);
	assert_int_equal(s.entries, 5);

	/* two containers with zero padding between them, and garbage after */
	unsigned char two[8192];
	memset(two, 0, sizeof(two));
	size_t a = make_fatbin(two, sizeof(two), ents, 2, 8);
	size_t pad = 24;
	const int more[][3] = {{2, 75, 0}};
	size_t c2 = make_fatbin(two + a + pad, sizeof(two) - a - pad, more, 1, 8);
	memcpy(two + a + pad + c2, "garbage!", 8);
	binsrc_mem(&b, two, a + pad + c2 + 8);
	assert_int_equal(fatbin_scan(&b, 0, a + pad + c2 + 8, NULL, &s), 2);
	fatbin_arch_text(&s, arch, sizeof(arch));
	assert_string_equal(arch, "sm_75 sm_90a sm_100f");

	/* hostile: a container claiming more than the section, an entry claiming more than its container */
	unsigned char bad[512];
	len = make_fatbin(bad, sizeof(bad), ents, 2, 8);
	uint64_t huge = UINT64_MAX - 5;
	memcpy(bad + 8, &huge, 8);
	binsrc_mem(&b, bad, len);
	fatbin_scan(&b, 0, len, NULL, &s);
	assert_true(s.malformed > 0);
	len = make_fatbin(bad, sizeof(bad), ents, 2, 8);
	memcpy(bad + 16 + 8, &huge, 8); /* first entry payload size */
	fatbin_scan(&b, 0, len, NULL, &s);
	assert_true(s.malformed > 0);
	len = make_fatbin(bad, sizeof(bad), ents, 2, 8);
	memset(bad + 16 + 4, 0, 4); /* entry header size 0: would loop forever if trusted */
	fatbin_scan(&b, 0, len, NULL, &s);
	assert_true(s.malformed > 0);
	/* section offset beyond the source */
	assert_int_equal(fatbin_scan(&b, 1u << 30, 100, NULL, &s), 0);
	/* a limit stops early and says so */
	binsrc_mem(&b, two, a + pad + c2);
	fatbin_limits lim = {1, 0};
	fatbin_scan(&b, 0, a + pad + c2, &lim, &s);
	assert_true(s.incomplete);
	assert_int_equal(s.containers, 1);
}

/* A section too big for one thread (libtorch_cuda.so's) is walked in parts: the parallel scan
 * must count exactly what the one-thread scan counts (a limit of containers forces that one),
 * through garbage between containers, bad container headers and a last container cut short. */
static void test_fatbin_parallel_equals_serial(void **st)
{
	(void)st;
	size_t cap = (size_t)70 << 20;
	unsigned char *big = calloc(1, cap);
	assert_non_null(big);
	const int ents[][3] = {{2, 80, 0x11}, {2, 90, 0x100011}, {1, 120, 0x8011}, {2, 100, 0x200011}};
	size_t len = 0;
	for (unsigned i = 0; len + 8192 < (size_t)66 << 20; i++) {
		if (i % 997 == 0) {
			memcpy(big + len, "garbage, no magic", 17);
			len += 17;
		}
		if (i % 1301 == 0) { /* a magic with a header size below 16 */
			uint32_t magic = FATBIN_MAGIC;
			memcpy(big + len, &magic, 4);
			big[len + 6] = 3;
			len += 16;
		}
		len += make_fatbin(big + len, cap - len, ents + i % 3, 1 + (int)(i % 2), 16 + i % 40);
	}
	size_t last = len;
	len += make_fatbin(big + len, cap - len, ents, 4, 64);
	uint64_t claim = (uint64_t)1 << 40; /* the last container claims more than the section */
	memcpy(big + last + 8, &claim, 8);
	binsrc b;
	binsrc_mem(&b, big, len);
	fatbin_summary par, ser;
	fatbin_limits serial = {UINT_MAX, 0};
	unsigned np = fatbin_scan(&b, 0, len, NULL, &par);
	unsigned ns = fatbin_scan(&b, 0, len, &serial, &ser);
	assert_true(np > 10000);
	assert_int_equal(np, ns);
	assert_int_equal(par.entries, ser.entries);
	assert_int_equal(par.malformed, ser.malformed);
	assert_true(ser.malformed > 10);
	assert_int_equal(par.compressed, ser.compressed);
	assert_false(par.incomplete || ser.incomplete);
	char a1[256], a2[256];
	fatbin_arch_text(&par, a1, sizeof(a1));
	fatbin_arch_text(&ser, a2, sizeof(a2));
	assert_string_equal(a1, a2);
	assert_string_equal(a1, "sm_80 sm_90a sm_100f compute_120");
	free(big);
}

/* ---- arch lists ---- */

static void test_archlist(void **st)
{
	(void)st;
	char how[128];
	assert_true(arch_tokens_cover("sm_75 sm_80", 8, 6, how, sizeof(how)));
	assert_string_equal(how, "sm_80");
	assert_false(arch_tokens_cover("sm_86", 8, 0, NULL, 0));
	assert_false(arch_tokens_cover("sm_75 sm_80 sm_86 sm_90", 12, 0, NULL, 0));
	assert_true(arch_tokens_cover("sm_80 compute_90", 12, 0, how, sizeof(how)));
	assert_non_null(strstr(how, "PTX"));
	assert_true(arch_tokens_cover("sm_90a", 9, 0, NULL, 0));
	assert_false(arch_tokens_cover("sm_90a", 9, 1, NULL, 0));
	assert_true(arch_tokens_cover("sm_100f", 10, 3, NULL, 0));
	assert_false(arch_tokens_cover("sm_100f", 12, 0, NULL, 0));
	assert_false(arch_tokens_cover("sm_75 sm_80 sm_86 sm_90 sm_100 sm_120", 6, 1, NULL, 0));
	assert_true(arch_tokens_cover("['sm_75', 'sm_90']", 9, 0, NULL, 0) == false); /* not our format: no match */
	assert_true(arch_tokens_cover("sm_75,sm_90", 9, 0, NULL, 0));
	assert_false(arch_tokens_cover("", 9, 0, NULL, 0));
	assert_false(arch_tokens_cover("sm_x sm_ compute_", 9, 0, NULL, 0));
	char out[256];
	assert_true(arch_tokens_from_dotted("7.5;8.0;8.6;9.0;10.0;12.0+PTX", out, sizeof(out)));
	assert_string_equal(out, "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 compute_120");
	assert_true(arch_tokens_from_dotted(" 9.0a 10.0f", out, sizeof(out)));
	assert_string_equal(out, "sm_90a sm_100f");
	assert_false(arch_tokens_from_dotted("garbage", out, sizeof(out)));
	assert_true(arch_tokens_max("sm_75 sm_120 compute_90", out, sizeof(out)));
	assert_string_equal(out, "12.0");
	int a, b;
	assert_true(cc_parse("9.0", &a, &b));
	assert_false(cc_parse("9", &a, &b));
	assert_false(cc_parse("-1.0", &a, &b));
}

/* ---- small-file parsers ---- */

static void test_pyparse(void **st)
{
	(void)st;
	const char *vp = "__version__ = '2.11.0+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\n"
			 "git_version = \"abc123\"\nhip: Optional[str] = None\nxpu = None\n";
	char out[64];
	bool none;
	assert_true(pyparse_assign(vp, "__version__", out, sizeof(out), &none));
	assert_string_equal(out, "2.11.0+cu130");
	assert_true(pyparse_assign(vp, "cuda", out, sizeof(out), &none));
	assert_false(none);
	assert_string_equal(out, "13.0");
	assert_true(pyparse_assign(vp, "hip", out, sizeof(out), &none));
	assert_true(none);
	assert_true(pyparse_assign(vp, "git_version", out, sizeof(out), &none));
	assert_string_equal(out, "abc123");
	assert_false(pyparse_assign(vp, "debug", out, sizeof(out), &none)); /* not a string */
	assert_false(pyparse_assign(vp, "missing", out, sizeof(out), &none));
	assert_false(pyparse_assign("__version__ = '2.1", "__version__", out, sizeof(out), &none));
	assert_false(pyparse_assign("cuda == '1'", "cuda", out, sizeof(out), &none));
	char tiny[4];
	assert_true(pyparse_assign(vp, "__version__", tiny, sizeof(tiny), &none));
	assert_string_equal(tiny, "2.1");

	assert_true(pyparse_cfg("home = /usr/bin\nInclude-System-Site-Packages = true\r\nversion = 3.11.2\n",
				"include-system-site-packages", out, sizeof(out)));
	assert_string_equal(out, "true");

	const char *meta = "Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0+cu130\n"
			   "Requires-Dist: filelock\n"
			   "Requires-Dist: nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"\n"
			   "Requires-Dist: nvidia_nccl_cu13 == 2.28.9 ; platform_system == \"Linux\"\n"
			   "Requires-Dist: cuda-toolkit[cublas,cudart]==13.0.2; extra == \"x\"\n"
			   "Requires-Dist: triton==3.5.*\n"
			   "\nRequires-Dist: nvidia-fake==1.0\n";
	assert_true(pyparse_metadata_field(meta, "Version", out, sizeof(out)));
	assert_string_equal(out, "2.11.0+cu130");
	strlist names = {0}, vers = {0};
	pyparse_requires_pins(meta, &names, &vers);
	assert_int_equal(names.n, 3);
	assert_string_equal(names.v[0], "nvidia-cudnn-cu13");
	assert_string_equal(vers.v[0], "9.19.0.56");
	assert_string_equal(names.v[1], "nvidia-nccl-cu13");
	assert_string_equal(vers.v[1], "2.28.9");
	assert_string_equal(names.v[2], "cuda-toolkit");
	sl_free(&names);
	sl_free(&vers);

	char name[96], ver[48], build[64];
	assert_true(pyparse_dist_info_dir("nvidia_cudnn_cu13-9.19.0.56.dist-info", name, sizeof(name), ver, sizeof(ver)));
	assert_string_equal(name, "nvidia-cudnn-cu13");
	assert_string_equal(ver, "9.19.0.56");
	assert_true(pyparse_dist_info_dir("Torch-2.1.0+cu121.dist-info", name, sizeof(name), ver, sizeof(ver)));
	assert_string_equal(name, "torch");
	assert_false(pyparse_dist_info_dir("-1.0.dist-info", name, sizeof(name), ver, sizeof(ver)));
	assert_false(pyparse_dist_info_dir("torch.dist-info", name, sizeof(name), ver, sizeof(ver)));

	assert_true(pyparse_conda_meta("pytorch-cuda-11.8-h7e8668a_6.json", name, sizeof(name), ver, sizeof(ver), build,
				       sizeof(build)));
	assert_string_equal(name, "pytorch-cuda");
	assert_string_equal(ver, "11.8");
	assert_false(pyparse_conda_meta("history", name, sizeof(name), ver, sizeof(ver), build, sizeof(build)));
	assert_false(pyparse_conda_meta("x.json", name, sizeof(name), ver, sizeof(ver), build, sizeof(build)));

	char cuda[16], cudnn[16];
	bool cpu;
	assert_true(pyparse_conda_torch_build("py3.10_cuda11.8_cudnn8.7.0_0", cuda, sizeof(cuda), cudnn, sizeof(cudnn), &cpu));
	assert_string_equal(cuda, "11.8");
	assert_string_equal(cudnn, "8.7.0");
	assert_false(cpu);
	assert_true(pyparse_conda_torch_build("cuda120_py311h1234_300", cuda, sizeof(cuda), cudnn, sizeof(cudnn), &cpu));
	assert_string_equal(cuda, "12.0");
	assert_true(pyparse_conda_torch_build("py3.9_cpu_0", cuda, sizeof(cuda), cudnn, sizeof(cudnn), &cpu));
	assert_true(cpu);
	assert_false(pyparse_conda_torch_build("", cuda, sizeof(cuda), cudnn, sizeof(cudnn), &cpu));

	pyparse_so_version("libcudnn.so.9.14.0", out, sizeof(out));
	assert_string_equal(out, "9.14.0");
	pyparse_so_version("libcudart.so", out, sizeof(out));
	assert_string_equal(out, "");
	pyparse_so_version("libfoo.so.1.2.x", out, sizeof(out));
	assert_string_equal(out, "");
	assert_false(lib_versions_differ("9.19.0.56", "9.19.0", 3));
	assert_true(lib_versions_differ("9.19.0", "9.14.0", 2));
	assert_false(lib_versions_differ("", "9.14.0", 2));
	assert_false(lib_versions_differ("13.0.48", "13.0.96", 2));
	pyparse_normalize_name("Flash_Attn..X", out, sizeof(out));
	assert_string_equal(out, "flash-attn-x");
}

/* ---- knowledge base ---- */

static void test_kb_torch(void **st)
{
	(void)st;
	char *err = NULL;
	kb *k = kb_load(NULL, &err);
	assert_non_null(k);
	torch_build b;
	assert_true(kb_torch_build(k, "2.11.0+cu130", "cu130", &b));
	assert_string_equal(b.arch, "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120");
	assert_string_equal(b.cudnn, "9.19.0.56");
	assert_string_equal(b.cuda, "13.0");
	assert_true(kb_torch_build(k, "1.8.1", "cu111", &b));
	assert_string_equal(b.version, "1.8.1");
	assert_true(kb_torch_build(k, "2.7.1", "cu128", &b));
	assert_string_equal(b.arch, "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 compute_120");
	assert_false(kb_torch_build(k, "9.9.0", "cu130", &b));
	assert_true(kb_torch_build(k, "2.5.0", NULL, &b));
	assert_string_equal(b.variant, "cu124");
	char tv[16];
	bool verified;
	assert_true(kb_torchvision(k, "2.11.0", tv, sizeof(tv), &verified));
	assert_string_equal(tv, "0.26");
	assert_false(verified);
	assert_true(kb_torchvision(k, "2.0.1", tv, sizeof(tv), &verified));
	assert_string_equal(tv, "0.15");
	char s[16];
	assert_true(torch_variant_cuda("cu92", s, sizeof(s)));
	assert_string_equal(s, "9.2");
	assert_true(torch_variant_cuda("cu130", s, sizeof(s)));
	assert_string_equal(s, "13.0");
	assert_false(torch_variant_cuda("cpu", s, sizeof(s)));
	assert_true(torch_cuda_variant("12.8", s, sizeof(s)));
	assert_string_equal(s, "cu128");
	torch_version_label("2.5.1+rocm6.2", s, sizeof(s));
	assert_string_equal(s, "rocm6.2");
	char need[32];
	assert_int_equal(kb_driver_fit(k, "580.159.04", 0, "13.0", need, sizeof(need)), DRV_FIT_NATIVE);
	assert_int_equal(kb_driver_fit(k, "535.104.05", 0, "12.4", need, sizeof(need)), DRV_FIT_MVC);
	assert_int_equal(kb_driver_fit(k, "470.82.01", 0, "12.1", need, sizeof(need)), DRV_FIT_TOO_OLD);
	assert_string_equal(need, "525.60.13");
	assert_int_equal(kb_driver_fit(k, "580.65.06", 0, "13.2", need, sizeof(need)), DRV_FIT_MVC);
	assert_int_equal(kb_driver_fit(k, NULL, 12020, "12.4", need, sizeof(need)), DRV_FIT_MVC);
	assert_int_equal(kb_driver_fit(k, NULL, 11040, "12.4", need, sizeof(need)), DRV_FIT_TOO_OLD);
	assert_int_equal(kb_driver_fit(k, NULL, 0, "12.4", need, sizeof(need)), DRV_FIT_UNKNOWN);
	kb_free(k);
}

/* ---- the fix planner: driver x GPU combinations against the KB ---- */

static void machine(fix_machine *m, const char *driver, const char *cc)
{
	memset(m, 0, sizeof(*m));
	if (driver)
		str_copy(m->driver, sizeof(m->driver), driver);
	if (cc) {
		m->ngpus = 1;
		str_copy(m->gpus[0].name, sizeof(m->gpus[0].name), "GPU");
		str_copy(m->gpus[0].cc, sizeof(m->gpus[0].cc), cc);
		cc_parse(cc, &m->gpus[0].major, &m->gpus[0].minor);
		m->gpu_present = true;
	}
}

static void expect_choice(kb *k, const char *driver, const char *cc, const char *version, const char *variant)
{
	fix_machine m;
	machine(&m, driver, cc);
	if (driver)
		kb_driver_max_cuda(k, driver, m.driver_cuda_text, sizeof(m.driver_cuda_text));
	fix_choice c;
	fix_choose(k, &m, &c);
	if (!version) {
		assert_false(c.found);
		return;
	}
	if (!c.found || strcmp(c.build.version, version) != 0 || strcmp(c.build.variant, variant) != 0)
		fail_msg("driver %s cc %s: got %s %s (%s), want %s %s", driver ? driver : "-", cc ? cc : "-",
			 c.found ? c.build.version : "none", c.found ? c.build.variant : "", c.why, version, variant);
}

static void test_fixplan(void **st)
{
	(void)st;
	char *err = NULL;
	kb *k = kb_load(NULL, &err);
	expect_choice(k, "580.159.04", "9.0", "2.14", "cu130");  /* H200 on 580: native 13.0 */
	expect_choice(k, "595.45.04", "12.0", "2.14", "cu132");  /* RTX 5090 on 595 */
	expect_choice(k, "470.82.01", "7.0", "2.7", "cu118");    /* V100 on 470: 11.8 through MVC */
	expect_choice(k, "525.60.13", "8.0", "2.14", "cu126");   /* A100 on 525: 12.6 through MVC */
	expect_choice(k, "580.159.04", "6.1", "2.14", "cu126");  /* GTX 1080: only cu126 keeps Pascal */
	/* RTX 5090 on 550: 550 would run cu128 through MVC, but R550 cannot drive Blackwell at all */
	expect_choice(k, "550.54.14", "12.0", NULL, NULL);
	expect_choice(k, "580.159.04", "3.0", NULL, NULL);       /* Kepler sm_30: nothing */
	/* no GPU, no driver: the CPU wheel */
	fix_machine m;
	machine(&m, NULL, NULL);
	fix_choice c;
	fix_choose(k, &m, &c);
	assert_true(c.found && c.cpu_only);
	assert_string_equal(c.build.variant, "cpu");
	/* the newest release the KB lists (2.15): the GPU choices above stay at 2.14, whose builds have
	 * architecture lists, where 2.15's are not sourced (data/SOURCES.md) */
	assert_string_equal(c.build.version, "2.15");
	assert_non_null(strstr(c.pip_args, "whl/cpu"));
	/* old driver, new GPU: nothing runs, upgrade to the oldest driver of the newest covering build */
	machine(&m, "470.82.01", "12.0");
	fix_choose(k, &m, &c);
	assert_false(c.found);
	assert_true(c.need_driver);
	assert_string_equal(c.newest.version, "2.14");
	assert_string_equal(c.newest.variant, "cu130");
	assert_string_equal(c.driver_need, "580.65.06");
	/* the driver cannot drive the GPU: the driver first, at least the architecture's minimum */
	machine(&m, "550.54.14", "12.0");
	fix_choose(k, &m, &c);
	assert_false(c.found);
	assert_true(c.need_driver && c.driver_cannot);
	assert_non_null(strstr(c.driver_cannot_why, "Blackwell GPUs (compute capability 12.0) need driver >= 570.26"));
	machine(&m, "470.82.01", "9.0");
	fix_choose(k, &m, &c);
	assert_true(c.need_driver && c.driver_cannot);
	assert_true(version_cmp(c.driver_need, "520.61.05") >= 0);
	/* a dropped architecture on a newer branch: its last branch, no minimum to upgrade to */
	machine(&m, "535.104.05", "3.7");
	fix_choose(k, &m, &c);
	assert_true(c.driver_cannot);
	assert_int_equal(c.driver_branch_max, 470);
	assert_string_equal(c.driver_need, "");
	machine(&m, "470.82.01", "3.7");
	fix_choose(k, &m, &c);
	assert_false(c.driver_cannot);
	/* Python: 3.8 gets the newest release with 3.8 wheels (2.4 on an H200), and a build that has
	 * none (Blackwell needs 2.7+) asks for another Python */
	machine(&m, "580.159.04", "9.0");
	str_copy(m.python, sizeof(m.python), "3.8");
	fix_choose(k, &m, &c);
	assert_true(c.found && !c.need_python);
	assert_string_equal(c.build.version, "2.4");
	machine(&m, "580.159.04", "12.0");
	str_copy(m.python, sizeof(m.python), "3.8");
	fix_choose(k, &m, &c);
	assert_true(c.found && c.need_python);
	assert_string_equal(c.python_need, "3.12");
	char lo[8], hi[8];
	assert_true(kb_torch_python(k, "2.11", lo, sizeof(lo), hi, sizeof(hi)));
	assert_string_equal(lo, "3.10");
	assert_string_equal(hi, "3.14");
	/* the pip line and the Dockerfile of a chosen build */
	machine(&m, "580.159.04", "9.0");
	str_copy(m.driver_cuda_text, sizeof(m.driver_cuda_text), "13.0");
	fix_choose(k, &m, &c);
	char line[512];
	fix_pip_line(&c, "/venv/bin/python", line, sizeof(line));
	assert_string_equal(line, "/venv/bin/python -m pip install --upgrade \"torch==2.14.*\" \"torchvision==0.29.*\" "
				  "--index-url https://download.pytorch.org/whl/cu130");
	char *df = fix_dockerfile(k, &m, &c);
	assert_non_null(strstr(df, "FROM nvidia/cuda:13.0.2-runtime-ubuntu24.04"));
	free(df);
	char tag[64];
	machine(&m, "535.104.05", "8.6");
	str_copy(m.driver_cuda_text, sizeof(m.driver_cuda_text), "12.2");
	assert_true(fix_base_image(k, &m, "12.6", tag, sizeof(tag)));
	assert_string_equal(tag, "12.2.2-runtime-ubuntu22.04"); /* never newer than the driver */
	cudnn_version_text(91900, line, sizeof(line));
	assert_string_equal(line, "9.19.0");
	cudnn_version_text(8902, line, sizeof(line));
	assert_string_equal(line, "8.9.2");
	kb_free(k);
}

/* ---- the live probe's answer ---- */

static int parse(const char *text, facts **out)
{
	*out = facts_new();
	char err[128];
	return probe_out_parse(text, strlen(text), *out, err, sizeof(err));
}

static void test_probe_out(void **st)
{
	(void)st;
	facts *f;
	const char *good =
		"noise before\nGPUVET-PROBE-JSON:{\"schema\":\"gpuvet.probe_torch/1\",\"python\":{\"version\":\"3.11.2\"},"
		"\"torch\":{\"installed\":true,\"version\":\"2.11.0+cu130\",\"cuda\":\"13.0\",\"hip\":null},"
		"\"cuda\":{\"available\":true,\"warnings\":[],\"device_count\":1,\"arch_list\":[\"sm_75\",\"sm_90\"],"
		"\"devices\":[{\"index\":0,\"name\":\"NVIDIA H200\",\"cc\":\"9.0\",\"total_memory\":150000000000,"
		"\"multi_processor_count\":132}]},\"cudnn\":{\"enabled\":true,\"available\":true,\"version\":91900},"
		"\"nccl\":\"2.28.9\",\"smoke\":[{\"device\":0,\"matmul\":\"ok\",\"conv\":\"ok\",\"matmul_rel_err\":1e-6}],"
		"\"maps\":[{\"path\":\"/x/libcudnn.so.9\",\"real\":\"/x/libcudnn.so.9\"},{\"path\":\"relative\"}],"
		"\"warm\":\"ok\",\"seconds\":{\"import\":1.5,\"warm\":0.25}}\n";
	assert_int_equal(parse(good, &f), PROBE_OUT_OK);
	assert_string_equal(facts_str(f, "python.live.warm"), "ok");
	double warm_s = 0;
	assert_true(facts_real(f, &warm_s, "python.live.seconds_warm") && fabs(warm_s - 0.25) < 1e-9);
	assert_string_equal(facts_str(f, "python.live.torch.version"), "2.11.0+cu130");
	assert_true(facts_true(f, "python.live.cuda.available"));
	assert_string_equal(facts_str(f, "python.live.cuda.arch_list"), "sm_75 sm_90");
	assert_string_equal(facts_str(f, "python.live.dev.0.cc"), "9.0");
	assert_int_equal(facts_int_or(f, 0, "python.live.dev.0.total_memory_bytes"), 150000000000LL);
	assert_int_equal(facts_int_or(f, 0, "python.live.cudnn.version"), 91900);
	assert_int_equal(facts_int_or(f, -1, "python.live.maps.count"), 1); /* the relative path is dropped */
	assert_int_equal(facts_get(f, "python.live.torch.hip")->state, FACT_ABSENT);
	facts_free(f);

	assert_int_equal(parse("Traceback (most recent call last):\n  boom\n", &f), PROBE_OUT_NO_MARKER);
	facts_free(f);
	assert_int_equal(parse("GPUVET-PROBE-JSON:{\"schema\": \"gpuvet.probe_torch/1\", \"x\": NaN}\n", &f),
			 PROBE_OUT_BAD_JSON);
	facts_free(f);
	assert_int_equal(parse("GPUVET-PROBE-JSON:[1,2,3]", &f), PROBE_OUT_BAD_JSON);
	facts_free(f);
	assert_int_equal(parse("GPUVET-PROBE-JSON:{\"schema\":\"other\"}", &f), PROBE_OUT_BAD_SCHEMA);
	facts_free(f);
	assert_int_equal(parse("GPUVET-PROBE-JSON:{\"schema\":\"gpuvet.probe_torch/1\",\"torch\":{\"version\":", &f),
			 PROBE_OUT_BAD_JSON); /* truncated */
	facts_free(f);
	/* every field of the wrong type, absurd numbers, control characters: no crash, no wrong facts */
	const char *hostile =
		"GPUVET-PROBE-JSON:{\"schema\":\"gpuvet.probe_torch/1\",\"python\":7,\"torch\":{\"installed\":\"yes\","
		"\"version\":[1],\"cuda\":{}},\"cuda\":{\"available\":1,\"warnings\":\"x\",\"device_count\":1e300,"
		"\"arch_list\":[1,null,\"sm_90\\u0001\"],\"devices\":[1,{\"cc\":9.0,\"total_memory\":-5},\"x\"]},"
		"\"cudnn\":{\"version\":\"91900\",\"enabled\":null},\"smoke\":{\"matmul\":\"ok\"},\"maps\":\"all\","
		"\"seconds\":{\"import\":-1}}";
	assert_int_equal(parse(hostile, &f), PROBE_OUT_OK);
	assert_null(facts_get(f, "python.live.torch.installed"));
	assert_null(facts_get(f, "python.live.cuda.available"));
	assert_null(facts_get(f, "python.live.cuda.device_count"));
	assert_string_equal(facts_str(f, "python.live.cuda.arch_list"), "sm_90?");
	assert_null(facts_get(f, "python.live.dev.0.cc"));
	assert_null(facts_get(f, "python.live.cudnn.version"));
	assert_null(facts_get(f, "python.live.smoke.matmul"));
	assert_null(facts_get(f, "python.live.seconds_import"));
	facts_free(f);
	/* huge: many devices and maps are bounded */
	strbuf sb;
	sb_init(&sb);
	sb_add(&sb, "GPUVET-PROBE-JSON:{\"schema\":\"gpuvet.probe_torch/1\",\"maps\":[");
	for (int i = 0; i < 5000; i++)
		sb_addf(&sb, "%s{\"path\":\"/lib/libx%d.so\"}", i ? "," : "", i);
	sb_add(&sb, "],\"cuda\":{\"devices\":[");
	for (int i = 0; i < 500; i++)
		sb_addf(&sb, "%s{\"name\":\"%0300d\"}", i ? "," : "", i);
	sb_add(&sb, "]}}");
	assert_int_equal(parse(sb.buf, &f), PROBE_OUT_OK);
	assert_int_equal(facts_int_or(f, 0, "python.live.maps.count"), 256);
	assert_int_equal(facts_int_or(f, 0, "python.live.dev.count"), 64);
	facts_free(f);
	sb_free(&sb);
	/* the last marker wins; a NUL inside does not stop the search */
	const char two[] = "GPUVET-PROBE-JSON:{}\n\0GPUVET-PROBE-JSON:{\"schema\":\"gpuvet.probe_torch/1\"}\n";
	f = facts_new();
	char e2[64];
	assert_int_equal(probe_out_parse(two, sizeof(two) - 1, f, e2, sizeof(e2)), PROBE_OUT_OK);
	facts_free(f);
}

/* ---- RUNPATH expansion ---- */

static void test_runpath(void **st)
{
	(void)st;
	strlist dirs = {0};
	ldsim_expand_path(NULL, "$ORIGIN/../../nvidia/cudnn/lib:${ORIGIN}:/opt/x/:relative",
			  "/venv/lib/python3.11/site-packages/torch/lib", &dirs);
	assert_int_equal(dirs.n, 3);
	assert_string_equal(dirs.v[0], "/venv/lib/python3.11/site-packages/nvidia/cudnn/lib");
	assert_string_equal(dirs.v[1], "/venv/lib/python3.11/site-packages/torch/lib");
	assert_string_equal(dirs.v[2], "/opt/x");
	sl_free(&dirs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures),    cmocka_unit_test(test_fatbin_synthetic),
		cmocka_unit_test(test_fatbin_parallel_equals_serial),
		cmocka_unit_test(test_archlist),
		cmocka_unit_test(test_pyparse),     cmocka_unit_test(test_kb_torch),
		cmocka_unit_test(test_fixplan),     cmocka_unit_test(test_probe_out),
		cmocka_unit_test(test_runpath),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
