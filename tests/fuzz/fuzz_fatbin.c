/* The ELF reader and the fatbin reader (shared objects in site-packages are untrusted input):
 * the input is read as an ELF file, and as a bare .nv_fatbin section. */
#include <stdint.h>
#include <stdlib.h>

#include "python/binsrc.h"
#include "python/elfscan.h"
#include "python/fatbin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	binsrc b;
	binsrc_mem(&b, data, size);
	elf_info e;
	char err[128];
	fatbin_summary s;
	char text[2048];
	if (elf_inspect(&b, ELF_WANT_FATBIN | ELF_WANT_DYNAMIC, &e, err, sizeof(err)) == 0 && e.has_fatbin)
		fatbin_scan(&b, e.fatbin_off, e.fatbin_size, NULL, &s);
	elf_info_free(&e);
	fatbin_scan(&b, 0, size, NULL, &s);
	fatbin_arch_text(&s, text, sizeof(text));
	return 0;
}
