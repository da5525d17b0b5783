/*
 * NCCL (libnccl.so.2) loaded at run time, with our own declarations of its ABI (numbers checked
 * against NCCL 2.28's nccl.h). GPUVET_NCCL_LIB names a file to load instead; otherwise the
 * loader's libnccl.so.2, then a pip wheel's (nvidia/nccl/lib).
 */
#ifndef GPUVET_BENCH_NCCL_H
#define GPUVET_BENCH_NCCL_H
#include <stdbool.h>
#include <stddef.h>

#include "bench/libfind.h"

typedef int ncclResult_t;
enum { ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2, ncclInternalError = 3,
       ncclInvalidArgument = 4, ncclInvalidUsage = 5, ncclRemoteError = 6, ncclInProgress = 7 };
typedef struct ncclComm *ncclComm_t;
enum { GV_ncclInt8 = 0, GV_ncclInt32 = 2, GV_ncclFloat16 = 6, GV_ncclFloat32 = 7, GV_ncclFloat64 = 8,
       GV_ncclBfloat16 = 9 };
enum { GV_ncclSum = 0 };

typedef struct nccl_api {
	lib_handle lib;
	int version; /* ncclGetVersion: 22803 for 2.28.3 */
	ncclResult_t (*GetVersion)(int *);
	ncclResult_t (*CommInitAll)(ncclComm_t *comms, int ndev, const int *devlist);
	ncclResult_t (*CommDestroy)(ncclComm_t);
	ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t *);
	const char *(*GetErrorString)(ncclResult_t);
	ncclResult_t (*GroupStart)(void);
	ncclResult_t (*GroupEnd)(void);
	ncclResult_t (*AllReduce)(const void *send, void *recv, size_t count, int dtype, int op, ncclComm_t, void *stream);
	ncclResult_t (*AllGather)(const void *send, void *recv, size_t sendcount, int dtype, ncclComm_t, void *stream);
	ncclResult_t (*ReduceScatter)(const void *send, void *recv, size_t recvcount, int dtype, int op, ncclComm_t,
				      void *stream);
} nccl_api;

bool nccl_load(nccl_api *api);
void nccl_unload(nccl_api *api);
/* "2.28.3" (versions >= 2.9 are major*10000 + minor*100 + patch; older major*1000 + minor*100 + patch) */
void nccl_version_text(int version, char *buf, size_t size);

/* nccl-tests' bus bandwidth: algbw (bytes/time) times 2(n-1)/n for all-reduce, (n-1)/n for
 * all-gather and reduce-scatter, where bytes is the larger buffer (the all-reduce's buffer, the
 * all-gather's output, the reduce-scatter's input). */
typedef enum { COLL_ALL_REDUCE, COLL_ALL_GATHER, COLL_REDUCE_SCATTER } nccl_coll;
double nccl_busbw_factor(nccl_coll c, int nranks);
const char *nccl_coll_name(nccl_coll c);
#endif
