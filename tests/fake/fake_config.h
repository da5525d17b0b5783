/*
 * The configuration shared by the fake libnvidia-ml and libcuda: `key = value` lines from the
 * file named by GPUVET_FAKE_CONFIG (see README.md for every key). Self-contained (the fakes are
 * shared libraries and link nothing of gpuvet).
 */
#ifndef GPUVET_FAKE_CONFIG_H
#define GPUVET_FAKE_CONFIG_H
#include <stdbool.h>
#include <stddef.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_MAX_GPUS 64

/* Reads the file again and resets every call counter (the fakes call it from nvmlInit/cuInit). */
void fake_reload(void);
/* Loads the file on first use. */
void fake_ensure(void);

/* The raw value of a key, NULL when not set. Keys of GPUs: "gpu.N.F", then "gpu.*.F". */
const char *fake_raw(const char *key);
const char *fake_gpu_raw(int gpu, const char *field);

/* The value for this call: a comma list yields its items in turn, one per call (cycling).
 * Copies into buf; returns NULL when not set. */
const char *fake_pick(const char *key, char *buf, size_t size);
const char *fake_gpu_pick(int gpu, const char *field, char *buf, size_t size);

/* Numbers: decimal, 0x hex, with an optional KiB/MiB/GiB/TiB (or K/M/G/T) suffix. The value
 * "unsupported" sets *unsupported (when given) and returns dflt. */
long long fake_num(const char *key, long long dflt, bool *unsupported);
long long fake_gpu_num(int gpu, const char *field, long long dflt, bool *unsupported);
bool fake_parse_num(const char *s, long long *out);

/* The code a function should fail with (0 when it should work), after sleeping hang.FN.
 * fn is the exported symbol ("nvmlDeviceGetTemperature", "cuMemAlloc_v2"); the keys match it
 * and its name without a _vN suffix. Counts the call (for error.FN.after). gpu >= 0 also looks at
 * gpu.N.error.FN. */
int fake_error(const char *fn, int gpu);

/* Number of items in a comma list and the i-th (into buf). */
int fake_list_len(const char *value);
const char *fake_list_item(const char *value, int i, char *buf, size_t size);

/* Sleeps ms milliseconds. */
void fake_sleep_ms(long long ms);
#endif
