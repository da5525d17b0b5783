/* The live PyTorch probe's answer: whatever the child process prints. */
#include <stdint.h>
#include <stdlib.h>

#include "core/facts.h"
#include "python/probe_out.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	facts *f = facts_new();
	char err[128];
	probe_out_parse((const char *)data, size, f, err, sizeof(err));
	facts_free(f);
	return 0;
}
