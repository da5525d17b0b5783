/* The parsers of a Python installation's small files: version.py, pyvenv.cfg, METADATA, RECORD,
 * dist-info and conda-meta names, conda build strings, library file names, arch lists. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "cuda/archlist.h"
#include "parse/pyparse.h"

static void on_path(const char *p, void *ctx)
{
	(void)p;
	(*(size_t *)ctx)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *t = xstrndup((const char *)data, size);
	char out[64], a[96], b[48], c[64];
	bool none, cpu;
	pyparse_assign(t, "__version__", out, sizeof(out), &none);
	pyparse_assign(t, "cuda", out, sizeof(out), &none);
	pyparse_cfg(t, "home", out, sizeof(out));
	pyparse_metadata_field(t, "Version", out, sizeof(out));
	strlist names = {0}, vers = {0};
	pyparse_requires_pins(t, &names, &vers);
	sl_free(&names);
	sl_free(&vers);
	size_t n = 0;
	pyparse_record(t, on_path, &n);
	pyparse_dist_info_dir(t, a, sizeof(a), b, sizeof(b));
	pyparse_conda_meta(t, a, sizeof(a), b, sizeof(b), c, sizeof(c));
	pyparse_conda_torch_build(t, out, sizeof(out), c, sizeof(c), &cpu);
	pyparse_so_version(t, out, sizeof(out));
	pyparse_normalize_name(t, a, sizeof(a));
	lib_versions_differ(t, "9.19.0", 3);
	char arch[512];
	arch_tokens_from_dotted(t, arch, sizeof(arch));
	arch_tokens_cover(t, 9, 0, out, sizeof(out));
	arch_tokens_max(t, out, sizeof(out));
	free(t);
	return 0;
}
