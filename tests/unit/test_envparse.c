/* Unit tests of the environment-variable parsers (probes/envparse.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "parse/envparse.h"

static const char *const uuids[] = {"GPU-fa4e0000-0000-4000-8000-000000000000",
				    "GPU-fa4e0000-0000-4000-8000-000000000001"};
static const char *const migs[] = {"MIG-fa4e0000-0000-4000-8000-000000000000"};
static const cvd_system two_gpus = {2, uuids, 1, migs};

static void test_cvd_parse(void **s)
{
	(void)s;
	cvd_list l;
	cvd_parse("0,1", 64, &l);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.v[0].kind, CVD_INDEX);
	assert_int_equal(l.v[1].index, 1);
	cvd_free(&l);

	cvd_parse("", 64, &l);
	assert_int_equal(l.total, 0);
	cvd_free(&l);
	cvd_parse(NULL, 64, &l);
	assert_int_equal(l.total, 0);
	cvd_free(&l);

	cvd_parse("-1", 64, &l);
	assert_int_equal(l.v[0].kind, CVD_NEGATIVE);
	cvd_free(&l);

	cvd_parse("GPU-,GPU-8932f937,GPU-xyz,MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/0,MIG-abc,MIG-", 64, &l);
	assert_int_equal(l.n, 6);
	assert_int_equal(l.v[0].kind, CVD_INVALID);
	assert_int_equal(l.v[1].kind, CVD_GPU_UUID);
	assert_int_equal(l.v[2].kind, CVD_INVALID);
	assert_int_equal(l.v[3].kind, CVD_MIG_UUID);
	assert_int_equal(l.v[4].kind, CVD_MIG_UUID);
	assert_int_equal(l.v[5].kind, CVD_INVALID);
	cvd_free(&l);

	cvd_parse("0,,1,", 64, &l);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.v[1].kind, CVD_EMPTY);
	assert_int_equal(l.v[3].kind, CVD_EMPTY);
	cvd_free(&l);

	/* absurd values: huge numbers, control characters, blanks */
	cvd_parse("99999999999999999999999,0\x01\x7f, 1 ", 64, &l);
	assert_int_equal(l.v[0].kind, CVD_INDEX);
	assert_int_equal(l.v[0].index, -1);
	assert_int_equal(l.v[1].kind, CVD_INVALID);
	assert_string_equal(l.v[1].text, "0??");
	assert_int_equal(l.v[2].kind, CVD_INDEX);
	assert_true(l.v[2].spaces);
	assert_true(l.spaces);
	cvd_free(&l);

	/* 10 KB: entries capped, total counted, long entries cut */
	char *big = malloc(10241);
	for (int i = 0; i < 10240; i++)
		big[i] = (i % 2) ? ',' : '0';
	big[10240] = '\0';
	cvd_parse(big, 64, &l);
	assert_int_equal(l.n, 64);
	assert_int_equal(l.total, 5121);
	cvd_free(&l);
	memset(big, 'A', 10240);
	cvd_parse(big, 64, &l);
	assert_int_equal(l.n, 1);
	assert_int_equal(strlen(l.v[0].text), CVD_TEXT_MAX - 1);
	cvd_free(&l);
	free(big);
}

static size_t resolve(const char *s, const cvd_system *sys, cvd_stop *stop, char **fixed)
{
	cvd_list l;
	cvd_parse(s, 64, &l);
	cvd_resolution r;
	cvd_resolve(&l, sys, &r);
	*stop = r.stop_at >= 0 ? r.stop : CVD_OK;
	if (fixed)
		*fixed = strdup(r.corrected);
	size_t v = r.visible;
	cvd_resolution_free(&r);
	cvd_free(&l);
	return v;
}

static void test_cvd_resolve(void **s)
{
	(void)s;
	cvd_stop st;
	char *fixed;
	assert_int_equal(resolve("1,0", &two_gpus, &st, NULL), 2);
	assert_int_equal(st, CVD_OK);
	/* the documented example: 0,2,-1,1 on a 3-GPU machine shows 0 and 2 */
	cvd_system three = {3, NULL, 0, NULL};
	assert_int_equal(resolve("0,2,-1,1", &three, &st, &fixed), 2);
	assert_int_equal(st, CVD_STOP_NEGATIVE);
	assert_string_equal(fixed, "0,2,1");
	free(fixed);
	assert_int_equal(resolve("0,2,1", &two_gpus, &st, &fixed), 1);
	assert_int_equal(st, CVD_STOP_RANGE);
	assert_string_equal(fixed, "0,1");
	free(fixed);
	/* a duplicate hides every GPU from PyTorch (measured on the H200 machine) */
	assert_int_equal(resolve("0,0", &two_gpus, &st, &fixed), 0);
	assert_int_equal(st, CVD_STOP_DUPLICATE);
	assert_string_equal(fixed, "0");
	free(fixed);
	/* indexes and UUIDs mixed: read up to the first entry of the other kind */
	assert_int_equal(resolve("1,GPU-fa4e0000-0000-4000-8000-000000000000", &two_gpus, &st, NULL), 1);
	assert_int_equal(st, CVD_STOP_MIXED);
	/* UUIDs: full, unique prefix, ambiguous prefix, unknown, the same GPU twice */
	assert_int_equal(resolve("GPU-fa4e0000-0000-4000-8000-000000000001", &two_gpus, &st, NULL), 1);
	assert_int_equal(resolve("GPU-FA4E0000-0000-4000-8000-000000000001", &two_gpus, &st, NULL), 1);
	assert_int_equal(resolve("GPU-fa4e", &two_gpus, &st, NULL), 0);
	assert_int_equal(st, CVD_STOP_AMBIGUOUS);
	assert_int_equal(resolve("GPU-0bad", &two_gpus, &st, NULL), 0);
	assert_int_equal(st, CVD_STOP_UNKNOWN);
	assert_int_equal(resolve("GPU-fa4e0000-0000-4000-8000-000000000000,GPU-fa4e0000-0000-4000-8000-000000000000",
				 &two_gpus, &st, NULL), 0);
	assert_int_equal(st, CVD_STOP_DUPLICATE);
	/* MIG */
	assert_int_equal(resolve("MIG-fa4e0000-0000-4000-8000-000000000000", &two_gpus, &st, NULL), 1);
	assert_int_equal(resolve("MIG-fa4e0000-0000-4000-8000-00000000000f", &two_gpus, &st, NULL), 0);
	assert_int_equal(st, CVD_STOP_UNKNOWN);
	assert_int_equal(resolve("MIG-GPU-fa4e0000-0000-4000-8000-000000000001/1/0", &two_gpus, &st, NULL), 1);
	/* unknown machine: syntax only */
	assert_int_equal(resolve("7,GPU-abc", NULL, &st, NULL), 1); /* mixed kinds stop the list */
	assert_int_equal(resolve("7,3", NULL, &st, NULL), 2);
	assert_int_equal(resolve("7,x,1", NULL, &st, &fixed), 1);
	assert_int_equal(st, CVD_STOP_INVALID);
	assert_string_equal(fixed, "7,1");
	free(fixed);
	assert_int_equal(resolve("", &two_gpus, &st, NULL), 0);
}

static void test_arch_list(void **s)
{
	(void)s;
	arch_list l;
	arch_list_parse("8.6;9.0+PTX", &l);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.invalid.n, 0);
	assert_int_equal(arch_list_covers(&l, 9, 0), ARCH_EXACT);
	assert_int_equal(arch_list_covers(&l, 8, 9), ARCH_OLDER_SASS);
	assert_int_equal(arch_list_covers(&l, 10, 0), ARCH_PTX_JIT);
	assert_int_equal(arch_list_covers(&l, 7, 5), ARCH_NOT_COVERED);
	arch_list_free(&l);

	arch_list_parse("Ampere Hopper", &l);
	assert_int_equal(l.n, 3);
	assert_true(l.v[1].ptx);
	char b[32];
	assert_string_equal(arch_entry_text(&l.v[2], b, sizeof(b)), "9.0+PTX");
	arch_list_free(&l);

	arch_list_parse("9.0a", &l);
	assert_int_equal(arch_list_covers(&l, 9, 0), ARCH_EXACT);
	assert_true(l.v[0].known);
	arch_list_free(&l);
	arch_list_parse("9.0a+PTX", &l);
	assert_int_equal(arch_list_covers(&l, 10, 0), ARCH_NOT_COVERED); /* arch-specific PTX does not JIT */
	arch_list_free(&l);
	arch_list_parse("8.6a", &l); /* no 'a' variants before Hopper */
	assert_false(l.v[0].known);
	arch_list_free(&l);

	arch_list_parse("8.6;;9.0,8,6 7.7 sm_90 12.0+ptx", &l);
	assert_int_equal(l.n, 2); /* 8.6 and 7.7 */
	assert_false(l.v[1].known);
	assert_int_equal(l.invalid.n, 4);
	assert_string_equal(l.invalid.v[0], "(empty entry)");
	assert_string_equal(l.invalid.v[1], "9.0,8,6");
	arch_list_free(&l);

	arch_list_parse("native", &l);
	assert_true(l.native);
	arch_list_free(&l);
	arch_list_parse("  ", &l);
	assert_true(l.empty);
	arch_list_free(&l);
	arch_list_parse(NULL, &l);
	assert_true(l.empty);
	arch_list_free(&l);

	char *big = malloc(20001);
	for (int i = 0; i < 20000; i++)
		big[i] = "8.6;"[i % 4];
	big[20000] = '\0';
	arch_list_parse(big, &l);
	assert_int_equal(l.n, 256);
	arch_list_free(&l);
	memset(big, '\x01', 20000);
	arch_list_parse(big, &l);
	assert_int_equal(l.invalid.n, 1);
	assert_int_equal(strlen(l.invalid.v[0]), 43);
	arch_list_free(&l);
	free(big);
}

static bool conf_ok(const char *s)
{
	alloc_conf c;
	bool ok = alloc_conf_parse(s, &c);
	alloc_conf_free(&c);
	return ok;
}

static void test_alloc_conf(void **s)
{
	(void)s;
	assert_true(conf_ok(NULL));
	assert_true(conf_ok(""));
	assert_true(conf_ok("expandable_segments:True"));
	assert_true(conf_ok(" expandable_segments : True , "));
	assert_true(conf_ok("max_split_size_mb:128,garbage_collection_threshold:0.6"));
	assert_true(conf_ok("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]"));
	assert_true(conf_ok("roundup_power2_divisions:4"));
	assert_true(conf_ok("backend:cudaMallocAsync"));
	assert_true(conf_ok("pinned_use_cuda_host_register:True,pinned_num_register_threads:8"));
	assert_true(conf_ok("release_lock_on_hipmalloc:False"));
	assert_true(conf_ok("max_split_size_mb:512MB")); /* stoi reads the leading number */

	assert_false(conf_ok("expandable_segments:true"));
	assert_false(conf_ok("roundup_power2:True"));
	assert_false(conf_ok("max_split_size_mb:10"));
	assert_false(conf_ok("max_split_size_mb:-100"));
	assert_false(conf_ok("max_split_size_mb"));
	assert_false(conf_ok("max_split_size_mb:"));
	assert_false(conf_ok("max_split_size_mb:abc"));
	assert_false(conf_ok("max_split_size_mb:99999999999999999999999"));
	assert_false(conf_ok("garbage_collection_threshold:1.5"));
	assert_false(conf_ok("garbage_collection_threshold:0"));
	assert_false(conf_ok("roundup_power2_divisions:[256:3]"));
	assert_false(conf_ok("roundup_power2_divisions:[256:1"));
	assert_false(conf_ok("roundup_power2_divisions:[300:1]"));
	assert_false(conf_ok("roundup_power2_divisions:3"));
	assert_false(conf_ok("pinned_num_register_threads:256"));
	assert_false(conf_ok("backend:hipMallocAsync"));
	assert_false(conf_ok(":"));
	assert_false(conf_ok(",,"));
	assert_false(conf_ok("expandable_segments:True max_split_size_mb:128")); /* blanks vanish: one word */
	assert_false(conf_ok("expandable_segments=True"));

	/* every mistake is reported, not just the first */
	alloc_conf c;
	assert_false(alloc_conf_parse("expandable_segments:true,foo:1,roundup_power2_divisions:[256:3,512:2],"
				      "max_split_size_mb:10,garbage_collection_threshold:0.5",
				      &c));
	assert_int_equal(c.errors.n, 4);
	assert_string_equal(c.errors.v[1], "unknown option 'foo'");
	alloc_conf_free(&c);

	assert_true(alloc_conf_parse("backend:cudaMallocAsync,max_split_size_mb:64", &c));
	assert_int_equal(c.notes.n, 1);
	assert_int_equal(c.keys.n, 2);
	alloc_conf_free(&c);

	/* garbage of every kind terminates, with bounded output */
	char *big = malloc(100001);
	for (int i = 0; i < 100000; i++)
		big[i] = ":,[]x"[i % 5];
	big[100000] = '\0';
	assert_false(alloc_conf_parse(big, &c));
	assert_true(c.errors.n <= 16);
	alloc_conf_free(&c);
	free(big);
}

static void test_debug_vars(void **s)
{
	(void)s;
	const env_debug_var *tf32 = NULL, *inj = NULL, *loading = NULL;
	for (const env_debug_var *d = env_debug_vars; d->name; d++) {
		assert_true(strncmp(d->name, "NCCL_", 5) != 0); /* NCCL's variables are one table: env_nccl_vars */
		if (strcmp(d->name, "NVIDIA_TF32_OVERRIDE") == 0)
			tf32 = d;
		if (strcmp(d->name, "CUDA_INJECTION64_PATH") == 0)
			inj = d;
		if (strcmp(d->name, "CUDA_MODULE_LOADING") == 0)
			loading = d;
	}
	assert_non_null(tf32);
	assert_true(env_debug_active(tf32, "0"));
	assert_false(env_debug_active(tf32, "1"));
	assert_false(env_debug_active(tf32, NULL));
	assert_true(env_debug_active(inj, "/opt/nsight/libinj.so"));
	assert_false(env_debug_active(inj, ""));
	assert_true(env_debug_active(loading, "EAGER"));
	assert_false(env_debug_active(loading, "LAZY"));
}

static void test_nccl_iflist(void **s)
{
	(void)s;
	nccl_iflist l;
	nccl_iflist_parse("eth", false, &l); /* a prefix: eth0 and eth1 */
	assert_false(l.exclude);
	assert_false(l.exact);
	assert_true(nccl_iflist_selects(&l, "eth0"));
	assert_true(nccl_iflist_selects(&l, "eth1"));
	assert_false(nccl_iflist_selects(&l, "ens5"));
	nccl_iflist_free(&l);
	nccl_iflist_parse("^docker,lo", false, &l); /* NCCL's own default */
	assert_true(l.exclude);
	assert_int_equal(l.names.n, 2);
	assert_false(nccl_iflist_selects(&l, "docker0"));
	assert_false(nccl_iflist_selects(&l, "lo"));
	assert_true(nccl_iflist_selects(&l, "eth0"));
	nccl_iflist_free(&l);
	nccl_iflist_parse("=eth0", false, &l);
	assert_true(l.exact);
	assert_true(nccl_iflist_selects(&l, "eth0"));
	assert_false(nccl_iflist_selects(&l, "eth01"));
	nccl_iflist_free(&l);
	nccl_iflist_parse("^=eth0,,ib0:1", false, &l); /* exclusion, exact, an empty entry, a port */
	assert_true(l.exclude && l.exact);
	assert_int_equal(l.names.n, 2);
	assert_string_equal(l.names.v[1], "ib0");
	assert_false(nccl_iflist_selects(&l, "ib0"));
	assert_true(nccl_iflist_selects(&l, "ib1"));
	nccl_iflist_free(&l);
	nccl_iflist_parse("mlx5_0:1,mlx5_1:1", false, &l); /* NCCL_IB_HCA with ports */
	assert_true(nccl_iflist_selects(&l, "mlx5_1"));
	assert_false(nccl_iflist_selects(&l, "mlx4_0"));
	nccl_iflist_free(&l);
	nccl_iflist_parse("^eth0", true, &l); /* Gloo: exact names, no syntax */
	assert_false(l.exclude);
	assert_true(nccl_iflist_selects(&l, "^eth0"));
	assert_false(nccl_iflist_selects(&l, "eth0"));
	nccl_iflist_free(&l);
	nccl_iflist_parse("", false, &l);
	assert_true(nccl_iflist_selects(&l, "anything"));
	nccl_iflist_free(&l);
	const env_nccl_var *dbg = NULL;
	for (const env_nccl_var *d = env_nccl_vars; d->name; d++)
		if (strcmp(d->name, "NCCL_DEBUG") == 0)
			dbg = d;
	assert_non_null(dbg);
	env_debug_var as = {dbg->name, dbg->match, dbg->arg, dbg->sev, dbg->why};
	assert_true(env_debug_active(&as, "info"));
	assert_true(env_debug_active(&as, "TRACE"));
	assert_false(env_debug_active(&as, "WARN"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cvd_parse),  cmocka_unit_test(test_cvd_resolve), cmocka_unit_test(test_arch_list),
		cmocka_unit_test(test_alloc_conf), cmocka_unit_test(test_debug_vars), cmocka_unit_test(test_nccl_iflist),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
