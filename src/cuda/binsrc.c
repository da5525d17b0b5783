#include "cuda/binsrc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sysroot.h"
#include "elf/elf.h"

int binsrc_open(binsrc *b, const char *abs_path)
{
	memset(b, 0, sizeof(*b));
	b->fd = -1;
	struct stat st;
	int fd = sysroot_open_regular(abs_path, &st);
	if (fd < 0)
		return fd;
	b->fd = fd;
	b->size = (uint64_t)st.st_size;
	return 0;
}

void binsrc_mem(binsrc *b, const void *data, size_t n)
{
	b->fd = -1;
	b->img = NULL;
	b->mem = data;
	b->size = n;
}

void binsrc_elf(binsrc *b, struct elf_image *img)
{
	memset(b, 0, sizeof(*b));
	b->fd = -1;
	b->img = img;
	b->size = elf_file_size(img);
}

void binsrc_close(binsrc *b)
{
	if (b->fd >= 0)
		gv_sys.close(b->fd);
	b->fd = -1;
	b->mem = NULL;
	b->img = NULL;
	b->size = 0;
}

size_t binsrc_read_some(const binsrc *b, uint64_t off, void *buf, size_t n)
{
	if (off >= b->size)
		return 0;
	if (n > b->size - off)
		n = (size_t)(b->size - off);
	if (b->img)
		return elf_read_at(b->img, off, buf, n);
	if (b->fd < 0) {
		if (!b->mem)
			return 0;
		memcpy(buf, b->mem + off, n);
		return n;
	}
	return pread_full(b->fd, buf, n, off);
}

bool binsrc_read(const binsrc *b, uint64_t off, void *buf, size_t n)
{
	if (off > b->size || n > b->size - off)
		return false;
	return binsrc_read_some(b, off, buf, n) == n;
}
