#include "bench/nccl.h"

#include <stdio.h>
#include <string.h>

static const char *const sonames[] = {"libnccl.so.2", NULL};
static const char *const wheels[] = {"nvidia/nccl/lib", "nvidia/cu13/lib", NULL};

bool nccl_load(nccl_api *api)
{
	memset(api, 0, sizeof(*api));
	lib_spec spec = {"NCCL", "GPUVET_NCCL_LIB", sonames, wheels, "ncclCommInitAll"};
	if (!lib_open(&spec, &api->lib))
		return false;
	const lib_symbol syms[] = {
		{"ncclGetVersion", (void **)&api->GetVersion},
		{"ncclCommInitAll", (void **)&api->CommInitAll},
		{"ncclCommDestroy", (void **)&api->CommDestroy},
		{"ncclCommGetAsyncError", (void **)&api->CommGetAsyncError},
		{"ncclGetErrorString", (void **)&api->GetErrorString},
		{"ncclGroupStart", (void **)&api->GroupStart},
		{"ncclGroupEnd", (void **)&api->GroupEnd},
		{"ncclAllReduce", (void **)&api->AllReduce},
		{"ncclAllGather", (void **)&api->AllGather},
		{"ncclReduceScatter", (void **)&api->ReduceScatter},
	};
	if (!lib_bind(&api->lib, syms, sizeof(syms) / sizeof(syms[0])))
		return false;
	if (api->GetVersion(&api->version) != ncclSuccess)
		api->version = 0;
	return true;
}

void nccl_unload(nccl_api *api)
{
	lib_close(&api->lib);
	memset(api, 0, sizeof(*api));
}

void nccl_version_text(int v, char *buf, size_t size)
{
	if (v <= 0)
		snprintf(buf, size, "unknown");
	else if (v >= 20900)
		snprintf(buf, size, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
	else
		snprintf(buf, size, "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
}

double nccl_busbw_factor(nccl_coll c, int n)
{
	if (n <= 0)
		return 0;
	switch (c) {
	case COLL_ALL_REDUCE: return 2.0 * (n - 1) / n;
	case COLL_ALL_GATHER:
	case COLL_REDUCE_SCATTER: return (double)(n - 1) / n;
	}
	return 0;
}

const char *nccl_coll_name(nccl_coll c)
{
	switch (c) {
	case COLL_ALL_REDUCE: return "all_reduce";
	case COLL_ALL_GATHER: return "all_gather";
	case COLL_REDUCE_SCATTER: return "reduce_scatter";
	}
	return "?";
}
