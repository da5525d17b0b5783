/*
 * A small, bounds-checked reader of ELF shared libraries: 64-bit little-endian only (x86-64,
 * aarch64, ppc64le), which is every CUDA library gpuvet looks at.
 *
 * It reads what the dynamic loader reads (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH) and finds
 * sections by name (".nv_fatbin") so callers can read their bytes. Files are read piecewise with
 * pread, never loaded whole: libtorch_cuda.so is a gigabyte.
 *
 * Hostile input: every offset and count is checked against the file size and against fixed
 * limits; a malformed file gives an error text, never a crash or a large allocation.
 */
#ifndef GPUVET_ELF_H
#define GPUVET_ELF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/util.h"

typedef struct elf_image elf_image; /* opaque */

/* Opens a file of the examined machine (through --root). Returns NULL and a static error text in
 * *err ("not an ELF file", "32-bit ELF", strerror(errno)...) when it cannot be read as ELF64 LE. */
elf_image *elf_open_file(const char *abs_path, const char **err);
/* The same over bytes in memory (not copied: they must outlive the image). */
elf_image *elf_open_mem(const void *data, size_t size, const char **err);
void elf_close(elf_image *img);

uint16_t elf_machine(const elf_image *img); /* e_machine: 62 x86-64, 183 aarch64, 21 ppc64 */
uint16_t elf_type(const elf_image *img);    /* e_type: 2 executable, 3 shared object */
uint64_t elf_file_size(const elf_image *img);

/* The dynamic section's loader entries. Strings are owned by the struct; NULL when absent. */
typedef struct elf_dyn {
	char *soname;   /* DT_SONAME */
	char *rpath;    /* DT_RPATH (only honoured by ld.so when there is no DT_RUNPATH) */
	char *runpath;  /* DT_RUNPATH */
	strlist needed; /* DT_NEEDED, in order */
} elf_dyn;

/* Reads the dynamic section. Returns 0, or -1 with a static error text in *err. A file without
 * a dynamic section (static executable) returns 0 with everything empty. */
int elf_read_dynamic(elf_image *img, elf_dyn *out, const char **err);
void elf_dyn_free(elf_dyn *d);

/* Finds a section by name (".nv_fatbin"): its file offset and size, both checked to lie within
 * the file (SHT_NOBITS sections report size 0). Returns false when absent or malformed. */
bool elf_find_section(elf_image *img, const char *name, uint64_t *offset, uint64_t *size);

/* Reads up to n bytes at a file offset; returns the bytes read (short at the end of the file,
 * 0 on error). For reading a section found with elf_find_section. */
size_t elf_read_at(elf_image *img, uint64_t offset, void *buf, size_t n);

/* Quick check of the first bytes of a file: 1 ELF64 LE of this host's machine, 0 ELF of another
 * class or machine (ld.so skips those silently), -1 not ELF or unreadable. */
int elf_check_native(const char *abs_path);
uint16_t elf_host_machine(void);
#endif
