/* The version parsers of toolkit/cuda_version.h (version.json, version.txt, nvcc output, headers,
 * library file names) over arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "toolkit/cuda_version.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *t = (const char *)data;
	char out[64];
	long v;
	(void)cuda_version_from_json(t, size, out, sizeof(out));
	(void)cuda_version_from_txt(t, size, out, sizeof(out));
	(void)cuda_version_from_nvcc(t, size, out, sizeof(out));
	(void)header_define_int(t, size, "CUDNN_MAJOR", &v);
	static const char *kinds[] = {"cudnn", "nccl", "cublas", "cusparse", "cudart", "cuda"};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		(void)header_version(kinds[i], t, size, out, sizeof(out));
	/* as a file name (NUL-terminated copy) */
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	(void)libname_version(s, out, sizeof(out));
	(void)libname_major(s);
	(void)version_major_minor(s, out, sizeof(out));
	free(s);
	return 0;
}
