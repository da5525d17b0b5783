/*
 * A read-only byte source: a file of the examined machine (read with pread, never mapped whole:
 * libtorch_cuda.so is a gigabyte) or a buffer in memory (tests, fuzzing). The ELF and fatbin
 * readers only see this interface, so every offset they follow is bounds-checked in one place.
 */
#ifndef GPUVET_BINSRC_H
#define GPUVET_BINSRC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_image;

typedef struct binsrc {
	int fd; /* -1 for a memory source */
	const unsigned char *mem;
	struct elf_image *img; /* reads through the ELF reader (elf/elf.h) when set */
	uint64_t size;
} binsrc;

/* Opens a file of the examined machine (below --root). Returns 0 or -errno; a non-regular file
 * (FIFO, device, directory) is refused with -EINVAL so a probe never blocks on it. */
int binsrc_open(binsrc *b, const char *abs_path);
void binsrc_mem(binsrc *b, const void *data, size_t n);
/* Reads through an open ELF image (not owned: close it after the binsrc). */
void binsrc_elf(binsrc *b, struct elf_image *img);
void binsrc_close(binsrc *b);
/* Reads exactly n bytes at off; false when the range leaves the source or the read fails. */
bool binsrc_read(const binsrc *b, uint64_t off, void *buf, size_t n);
/* Reads up to n bytes at off (less at the end); returns the count, 0 past the end or on error. */
size_t binsrc_read_some(const binsrc *b, uint64_t off, void *buf, size_t n);

/* Little-endian field access into a header already read. */
static inline uint16_t le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | ((uint64_t)le32(p + 4) << 32);
}
#endif
