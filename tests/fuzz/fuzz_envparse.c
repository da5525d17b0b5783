/* The environment-variable parsers: CUDA_VISIBLE_DEVICES (and its resolution against GPUs),
 * TORCH_CUDA_ARCH_LIST, PYTORCH_CUDA_ALLOC_CONF. The input is the variable's value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse/envparse.h"

static const char *const uuids[] = {"GPU-fa4e0000-0000-4000-8000-000000000000",
				    "GPU-fa4e0000-0000-4000-8000-000000000001", NULL};
static const char *const migs[] = {"MIG-fa4e0000-0000-4000-8000-000000000000"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';

	cvd_list l;
	cvd_parse(s, 256, &l);
	const cvd_system known = {3, uuids, 1, migs}, unknown = {-1, NULL, 0, NULL};
	const cvd_system *systems[] = {&known, &unknown, NULL};
	for (size_t i = 0; i < 3; i++) {
		cvd_resolution r;
		cvd_resolve(&l, systems[i], &r);
		if (r.visible > l.n || strlen(r.corrected) > size + 1)
			abort();
		cvd_resolution_free(&r);
	}
	for (size_t i = 0; i < l.n; i++)
		(void)cvd_kind_name(l.v[i].kind);
	cvd_free(&l);

	arch_list a;
	arch_list_parse(s, &a);
	for (int major = 0; major < 13; major++)
		(void)arch_list_covers(&a, major, major % 10);
	char buf[32];
	for (size_t i = 0; i < a.n; i++)
		(void)arch_entry_text(&a.v[i], buf, sizeof(buf));
	arch_list_free(&a);

	alloc_conf c;
	bool ok = alloc_conf_parse(s, &c);
	if (ok && c.errors.n)
		abort();
	alloc_conf_free(&c);

	for (const env_debug_var *d = env_debug_vars; d->name; d++)
		(void)env_debug_active(d, s);
	for (int exact = 0; exact < 2; exact++) {
		nccl_iflist il;
		nccl_iflist_parse(s, exact, &il);
		if (il.names.n > 64)
			abort();
		for (size_t k = 0; k < il.names.n; k++)
			if (!il.names.v[k][0] || (!exact && strpbrk(il.names.v[k], ",:")))
				abort(); /* entries are never empty and never keep a separator or a port */
		(void)nccl_iflist_selects(&il, "eth0");
		(void)nccl_iflist_selects(&il, s);
		nccl_iflist_free(&il);
	}
	free(s);
	return 0;
}
