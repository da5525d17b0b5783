/* The ELF reader (dynamic section and section lookup) over arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>

#include "elf/elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *err = NULL;
	elf_image *img = elf_open_mem(data, size, &err);
	if (!img)
		return 0;
	elf_dyn d;
	if (elf_read_dynamic(img, &d, &err) == 0)
		elf_dyn_free(&d);
	uint64_t off, sz;
	if (elf_find_section(img, ".nv_fatbin", &off, &sz)) {
		unsigned char buf[64];
		(void)elf_read_at(img, off, buf, sz < sizeof(buf) ? (size_t)sz : sizeof(buf));
	}
	(void)elf_find_section(img, "", &off, &sz);
	elf_close(img);
	return 0;
}
