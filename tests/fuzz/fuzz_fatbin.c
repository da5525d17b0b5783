/* The fatbin reader (shared objects in site-packages are untrusted input): the input is read as
 * an ELF file through the ELF reader, and as a bare .nv_fatbin section. */
#include <stdint.h>
#include <stdlib.h>

#include "elf/elf.h"
#include "cuda/binsrc.h"
#include "cuda/fatbin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fatbin_summary s;
	char text[2048];
	const char *err = NULL;
	elf_image *img = elf_open_mem(data, size, &err);
	if (img) {
		fatbin_scan_elf(img, NULL, &s);
		elf_close(img);
	}
	binsrc b;
	binsrc_mem(&b, data, size);
	fatbin_scan(&b, 0, size, NULL, &s);
	fatbin_arch_text(&s, text, sizeof(text));
	return 0;
}
