/* The kubelet's device-plugin checkpoint (fleet/kubelet.h): a file another program writes, read
 * every few seconds by a long-running exporter. Any bytes as the checkpoint's JSON and as an
 * allocation response's protobuf: no crash, every string terminated within its buffer, the
 * count never below what was stored. */
#include <stdint.h>
#include <string.h>

#include "fleet/kubelet.h"

static void on_id(void *ctx, const char *id)
{
	size_t *n = ctx;
	if (strlen(id) >= 1024)
		__builtin_trap();
	(*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kubelet_device v[8];
	long n = kubelet_checkpoint_parse((const char *)data, size, v, 8);
	for (long i = 0; i < n && i < 8; i++)
		if (strlen(v[i].pod_uid) != 36 || strlen(v[i].container) >= sizeof(v[i].container) ||
		    strlen(v[i].resource) >= sizeof(v[i].resource) || strlen(v[i].id) >= sizeof(v[i].id))
			__builtin_trap();
	size_t ids = 0;
	kubelet_alloc_resp_ids(data, size, on_id, &ids);
	return 0;
}
