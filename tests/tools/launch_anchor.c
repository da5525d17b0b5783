/*
 * The launch anchor of docs/benchmarks.md: a bare loop of cuLaunchKernel on an empty kernel,
 * written without any of gpuvet's code (its own dlopen of libcuda.so.1 and its own PTX), so that
 * gpuvet's launch figures can be compared with what the driver itself costs on the same machine
 * in the same call. Prints one JSON object:
 *   {"back_to_back_us": .., "launch_sync_us": .., "back_to_back_default_stream_us": .., ...}
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*fn_init)(unsigned);
typedef int (*fn_dev)(int *, int);
typedef int (*fn_ctx)(void **, int);
typedef int (*fn_set)(void *);
typedef int (*fn_load)(void **, const void *);
typedef int (*fn_getf)(void **, void *, const char *);
typedef int (*fn_launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
			 void **, void **);
typedef int (*fn_sync)(void *);
typedef int (*fn_screate)(void **, unsigned);

static const char ptx[] = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry empty()\n{\n\tret;\n}\n";

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

#define SYM(type, name) type name = (type)dlsym(h, #name)

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	if (n < 100)
		n = 100;
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	if (!h) {
		printf("{\"error\": \"libcuda.so.1 does not load\"}\n");
		return 77;
	}
	SYM(fn_init, cuInit);
	SYM(fn_dev, cuDeviceGet);
	fn_ctx retain = (fn_ctx)dlsym(h, "cuDevicePrimaryCtxRetain");
	fn_set setcur = (fn_set)dlsym(h, "cuCtxSetCurrent");
	fn_load load = (fn_load)dlsym(h, "cuModuleLoadData");
	fn_getf getf = (fn_getf)dlsym(h, "cuModuleGetFunction");
	fn_launch launch = (fn_launch)dlsym(h, "cuLaunchKernel");
	fn_sync ssync = (fn_sync)dlsym(h, "cuStreamSynchronize");
	fn_screate screate = (fn_screate)dlsym(h, "cuStreamCreate");
	int dev;
	void *ctx, *mod, *f, *stream;
	if (!cuInit || cuInit(0) || cuDeviceGet(&dev, 0) || retain(&ctx, dev) || setcur(ctx) || load(&mod, ptx) ||
	    getf(&f, mod, "empty") || screate(&stream, 1)) {
		printf("{\"error\": \"CUDA setup failed\"}\n");
		return 77;
	}
	/* warm-up */
	for (int i = 0; i < 2000; i++)
		launch(f, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL);
	ssync(stream);
	double b2b[7], b2b0[7], syn[7];
	for (int r = 0; r < 7; r++) {
		double t = now();
		for (int i = 0; i < n; i++)
			launch(f, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL);
		ssync(stream);
		b2b[r] = (now() - t) / n * 1e6;
		t = now();
		for (int i = 0; i < n; i++)
			launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
		ssync(NULL);
		b2b0[r] = (now() - t) / n * 1e6;
		t = now();
		for (int i = 0; i < n / 4; i++) {
			launch(f, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL);
			ssync(stream);
		}
		syn[r] = (now() - t) / (n / 4) * 1e6;
	}
	qsort(b2b, 7, sizeof(double), cmp);
	qsort(b2b0, 7, sizeof(double), cmp);
	qsort(syn, 7, sizeof(double), cmp);
	printf("{\"back_to_back_us\": %.3f, \"back_to_back_min_us\": %.3f, \"back_to_back_max_us\": %.3f, "
	       "\"back_to_back_default_stream_us\": %.3f, \"launch_sync_us\": %.3f, \"launch_sync_min_us\": %.3f, "
	       "\"launch_sync_max_us\": %.3f, \"launches\": %d}\n",
	       b2b[3], b2b[0], b2b[6], b2b0[3], syn[3], syn[0], syn[6], n);
	return 0;
}
