/*
 * The first contact with NVML of the long-running commands (watch, serve): before this process
 * loads libnvidia-ml and calls nvmlInit itself, a supervised child (core/child.h) does both and
 * counts the GPUs, under the driver deadline. A library that hangs, crashes, exits or prints there
 * never reaches this process; one that answered is then loaded here and its handle kept.
 */
#ifndef GPUVET_NVIDIA_CONTACT_H
#define GPUVET_NVIDIA_CONTACT_H
#include <stdbool.h>
#include <stddef.h>

/* True when this process may load NVML (the child answered, or NVML is loaded here already);
 * else false with err: "libnvidia-ml.so.1 crashed with SIGBUS (Bus error) in dlopen (FILE)". */
bool gv_nvml_first_contact(char *err, size_t errsize);
/* Starts that child now, without waiting: the first gv_nvml_first_contact waits for it. For a
 * command that starts threads before its first sample (serve): a fork beside running threads can
 * leave the child a lock another thread held (under ASan, its allocator's: the child hung in
 * malloc while serve's HTTP thread ran, and serve answered "no sample yet" for good). */
void gv_nvml_first_contact_start(void);
/* The same for libcuda before bench loads it: a child loads it and asks cuDriverGetVersion (no
 * cuInit: that costs bench's own ~0.4 s once, in bench). */
bool gv_cuda_first_contact(char *err, size_t errsize);
/* gv_nvml_init with fd 1 pointed at /dev/null meanwhile: a library that prints while it loads
 * (or in nvmlInit) cannot mix its text into our output. */
int gv_nvml_init_quiet(void);
#endif
