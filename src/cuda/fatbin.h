/*
 * CUDA fat binaries (the ELF .nv_fatbin section): which GPU architectures a library carries
 * machine code (SASS, "sm_90") and PTX ("compute_90") for. Only the entry headers are read, never
 * the (often compressed) payloads, so a gigabyte libtorch_cuda.so is summarised in milliseconds.
 *
 * Layout (little-endian; learned from public descriptions and checked against nvcc 13.0 output):
 *   container: u32 magic 0xBA55ED50, u16 version (1), u16 header size (16), u64 size of the entries
 *   entry:     u16 kind (1 PTX, 2 ELF/cubin), u16 version, u32 header size (64, 80 or 112),
 *              u64 payload size, u32 compressed size, u32 -, u16 minor, u16 major (code format
 *              version), u32 sm arch (75, 90, 120...), u32 name offset, u32 name size, u64 flags,
 *              u64 -, u64 uncompressed size; the payload follows the header, the next entry follows
 *              the payload. Flags: 0x2000 LZ4 / 0x8000 zstd compressed, 0x100000 arch-specific
 *              ("sm_90a"), 0x200000 family-specific ("sm_100f").
 * A section holds one container per translation unit, sometimes separated by padding.
 */
#ifndef GPUVET_FATBIN_H
#define GPUVET_FATBIN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda/binsrc.h"

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_MAX_ARCHS 64

typedef struct fatbin_arch {
	uint16_t sm;   /* 90 for 9.0, 120 for 12.0 */
	char variant;  /* 0, 'a' (arch-specific) or 'f' (family-specific) */
} fatbin_arch;

typedef struct fatbin_limits {
	unsigned max_containers; /* 0: no limit */
	double deadline;         /* now_seconds() value to stop at; 0: none */
} fatbin_limits;

typedef struct fatbin_summary {
	unsigned containers, entries;
	unsigned malformed;  /* containers or entries whose sizes left their bounds */
	bool incomplete;     /* stopped at a limit before the end of the section */
	bool compressed;     /* some payload is compressed */
	fatbin_arch sass[FATBIN_MAX_ARCHS];
	fatbin_arch ptx[FATBIN_MAX_ARCHS];
	unsigned nsass, nptx;
} fatbin_summary;

/* Summarises the fatbin containers in [off, off+size) of b. Returns the number of containers. */
unsigned fatbin_scan(const binsrc *b, uint64_t off, uint64_t size, const fatbin_limits *lim, fatbin_summary *out);

struct elf_image;
/* Finds .nv_fatbin in an ELF image (elf/elf.h) and summarises it. Returns 1 when the object has
 * device code, 0 when it has no .nv_fatbin section. */
int fatbin_scan_elf(struct elf_image *img, const fatbin_limits *lim, fatbin_summary *out);

/* The architectures as torch.cuda.get_arch_list() writes them: "sm_75 sm_90a compute_90"
 * (SASS first, each list sorted). Writes "" when there are none. */
void fatbin_arch_text(const fatbin_summary *s, char *buf, size_t n);
#endif
