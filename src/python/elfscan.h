/*
 * The little of ELF that the Python layer needs, read through a binsrc with every offset and size
 * checked: where the .nv_fatbin section lies (CUDA device code), and the dynamic section's
 * SONAME, NEEDED, RPATH and RUNPATH. 64-bit little-endian objects only (x86_64, aarch64);
 * anything else is reported, never guessed.
 *
 * (The toolkit layer has its own ELF reader for the loader; this one stays small on purpose and
 * can be replaced by it without changing the callers' facts.)
 */
#ifndef GPUVET_ELFSCAN_H
#define GPUVET_ELFSCAN_H
#include <stdbool.h>
#include <stdint.h>

#include "core/util.h"
#include "python/binsrc.h"

enum { ELF_WANT_FATBIN = 1, ELF_WANT_DYNAMIC = 2 };

typedef struct elf_info {
	uint16_t machine; /* e_machine: 62 x86_64, 183 aarch64 */
	bool has_fatbin;
	uint64_t fatbin_off, fatbin_size; /* file range of .nv_fatbin */
	bool has_dynamic;
	char *soname, *runpath, *rpath; /* NULL when absent */
	strlist needed;
} elf_info;

/* Returns 0 when read, 1 when the source is not an ELF file at all, -1 when it is a malformed or
 * unsupported ELF (err says why). out is always initialised; free it with elf_info_free. */
int elf_inspect(const binsrc *b, unsigned want, elf_info *out, char *err, size_t errn);
void elf_info_free(elf_info *e);
#endif
