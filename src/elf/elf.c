#include "elf/elf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sysroot.h"

/* Limits against hostile files: real libraries stay far below them. */
#define MAX_PHNUM 4096
#define MAX_SHNUM 65536
#define MAX_DYN 65536
#define MAX_STR 65536 /* one dynamic string (RPATH lists can be long) */
#define MAX_NEEDED 1024

enum {
	PT_LOAD = 1,
	PT_DYNAMIC = 2,
	SHT_DYNAMIC = 6,
	SHT_NOBITS = 8,
	DT_NULL = 0,
	DT_NEEDED = 1,
	DT_STRTAB = 5,
	DT_STRSZ = 10,
	DT_SONAME = 14,
	DT_RPATH = 15,
	DT_RUNPATH = 29,
};

struct elf_image {
	int fd;                    /* -1 for memory images */
	const unsigned char *mem;  /* memory images */
	uint64_t size;
	uint16_t type, machine;
	uint64_t phoff, shoff;
	uint32_t phnum, shnum, shstrndx;
	uint16_t phentsize, shentsize;
};

static uint16_t rd16(const unsigned char *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint64_t rd64(const unsigned char *p)
{
	return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32);
}

/* true when [off, off+n) lies inside the file */
static bool in_file(const elf_image *img, uint64_t off, uint64_t n)
{
	return off <= img->size && n <= img->size - off;
}

size_t elf_read_at(elf_image *img, uint64_t offset, void *buf, size_t n)
{
	if (!img || offset >= img->size)
		return 0;
	if (n > img->size - offset)
		n = (size_t)(img->size - offset);
	if (img->mem) {
		memcpy(buf, img->mem + offset, n);
		return n;
	}
	return pread_full(img->fd, buf, n, offset);
}

/* exactly n bytes or false */
static bool read_exact(elf_image *img, uint64_t off, void *buf, size_t n)
{
	return in_file(img, off, n) && elf_read_at(img, off, buf, n) == n;
}

uint16_t elf_host_machine(void)
{
#if defined(__x86_64__)
	return 62;
#elif defined(__aarch64__)
	return 183;
#elif defined(__powerpc64__)
	return 21;
#else
	return 0;
#endif
}

/* Classifies the identification bytes: 1 ELF64 LE, 0 other ELF, -1 not ELF. */
static int ident_kind(const unsigned char *h, size_t n)
{
	if (n < 16 || memcmp(h, "\177ELF", 4) != 0)
		return -1;
	return (h[4] == 2 && h[5] == 1) ? 1 : 0;
}

static elf_image *parse_header(elf_image *img, const char **err)
{
	unsigned char h[64];
	if (elf_read_at(img, 0, h, sizeof(h)) != sizeof(h) || ident_kind(h, sizeof(h)) < 0) {
		*err = "not an ELF file";
		return NULL;
	}
	if (h[4] != 2) {
		*err = "not a 64-bit ELF file";
		return NULL;
	}
	if (h[5] != 1) {
		*err = "not a little-endian ELF file";
		return NULL;
	}
	img->type = rd16(h + 16);
	img->machine = rd16(h + 18);
	img->phoff = rd64(h + 32);
	img->shoff = rd64(h + 40);
	img->phentsize = rd16(h + 54);
	img->phnum = rd16(h + 56);
	img->shentsize = rd16(h + 58);
	img->shnum = rd16(h + 60);
	img->shstrndx = rd16(h + 62);
	/* e_phnum 0xffff and e_shnum 0 / e_shstrndx 0xffff: the real values live in section 0 */
	if (img->shoff && img->shentsize >= 64 && in_file(img, img->shoff, 64)) {
		unsigned char s0[64];
		if (read_exact(img, img->shoff, s0, sizeof(s0))) {
			if (img->shnum == 0)
				img->shnum = (uint32_t)(rd64(s0 + 32) > MAX_SHNUM ? 0 : rd64(s0 + 32));
			if (img->shstrndx == 0xffff)
				img->shstrndx = rd32(s0 + 40);
			if (img->phnum == 0xffff)
				img->phnum = rd32(s0 + 44);
		}
	}
	if (img->phnum > MAX_PHNUM)
		img->phnum = 0;
	if (img->phnum && (img->phentsize < 56 || !in_file(img, img->phoff, (uint64_t)img->phnum * img->phentsize)))
		img->phnum = 0;
	if (img->shnum && (img->shentsize < 64 || !in_file(img, img->shoff, (uint64_t)img->shnum * img->shentsize)))
		img->shnum = 0;
	return img;
}

elf_image *elf_open_mem(const void *data, size_t size, const char **err)
{
	static const char *dummy;
	err = err ? err : &dummy;
	elf_image *img = xcalloc(1, sizeof(*img));
	img->fd = -1;
	img->mem = data;
	img->size = data ? size : 0;
	if (!parse_header(img, err)) {
		free(img);
		return NULL;
	}
	return img;
}

elf_image *elf_open_file(const char *abs_path, const char **err)
{
	static const char *dummy;
	err = err ? err : &dummy;
	struct stat st;
	int fd = sysroot_open_regular(abs_path, &st);
	if (fd < 0) {
		*err = fd == -EISDIR || fd == -EINVAL ? "not a regular file" : strerror(-fd);
		return NULL;
	}
	elf_image *img = xcalloc(1, sizeof(*img));
	img->fd = fd;
	img->size = (uint64_t)st.st_size;
	if (!parse_header(img, err)) {
		gv_sys.close(fd);
		free(img);
		return NULL;
	}
	return img;
}

void elf_close(elf_image *img)
{
	if (!img)
		return;
	if (img->fd >= 0)
		gv_sys.close(img->fd);
	free(img);
}

uint16_t elf_machine(const elf_image *img)
{
	return img ? img->machine : 0;
}

uint16_t elf_type(const elf_image *img)
{
	return img ? img->type : 0;
}

uint64_t elf_file_size(const elf_image *img)
{
	return img ? img->size : 0;
}

/* Maps a virtual address to a file offset through the PT_LOAD segments. */
static bool vaddr_to_offset(elf_image *img, uint64_t vaddr, uint64_t *off)
{
	for (uint32_t i = 0; i < img->phnum; i++) {
		unsigned char ph[56];
		if (!read_exact(img, img->phoff + (uint64_t)i * img->phentsize, ph, sizeof(ph)))
			return false;
		if (rd32(ph) != PT_LOAD)
			continue;
		uint64_t p_offset = rd64(ph + 8), p_vaddr = rd64(ph + 16), p_filesz = rd64(ph + 32);
		if (vaddr >= p_vaddr && vaddr - p_vaddr < p_filesz) {
			uint64_t o = p_offset + (vaddr - p_vaddr);
			if (o < p_offset || !in_file(img, o, 1))
				return false;
			*off = o;
			return true;
		}
	}
	return false;
}

/* Section header i: fields we use. */
typedef struct shdr {
	uint32_t name, type, link;
	uint64_t offset, size;
} shdr;

static bool read_shdr(elf_image *img, uint32_t i, shdr *s)
{
	unsigned char b[64];
	if (i >= img->shnum || !read_exact(img, img->shoff + (uint64_t)i * img->shentsize, b, sizeof(b)))
		return false;
	s->name = rd32(b);
	s->type = rd32(b + 4);
	s->offset = rd64(b + 24);
	s->size = rd64(b + 32);
	s->link = rd32(b + 40);
	return true;
}

/* Locates the dynamic array: PT_DYNAMIC, else an SHT_DYNAMIC section. */
static bool find_dynamic(elf_image *img, uint64_t *off, uint64_t *size, uint32_t *strtab_sec)
{
	*strtab_sec = UINT32_MAX;
	for (uint32_t i = 0; i < img->phnum; i++) {
		unsigned char ph[56];
		if (!read_exact(img, img->phoff + (uint64_t)i * img->phentsize, ph, sizeof(ph)))
			break;
		if (rd32(ph) == PT_DYNAMIC) {
			*off = rd64(ph + 8);
			*size = rd64(ph + 32);
			break;
		}
	}
	for (uint32_t i = 0; i < img->shnum; i++) {
		shdr s;
		if (read_shdr(img, i, &s) && s.type == SHT_DYNAMIC) {
			if (!*size) {
				*off = s.offset;
				*size = s.size;
			}
			*strtab_sec = s.link;
			break;
		}
	}
	return *size != 0;
}

/* A NUL-terminated string at file offset off, no longer than max and not beyond limit. */
static char *read_string(elf_image *img, uint64_t off, uint64_t limit)
{
	if (off >= limit || !in_file(img, off, 1))
		return NULL;
	uint64_t avail = limit - off;
	if (avail > img->size - off)
		avail = img->size - off;
	if (avail > MAX_STR)
		avail = MAX_STR;
	strbuf sb;
	sb_init(&sb);
	char chunk[256];
	uint64_t pos = off;
	bool terminated = false;
	while (!terminated && pos - off < avail) {
		size_t want = (size_t)((avail - (pos - off)) < sizeof(chunk) ? (avail - (pos - off)) : sizeof(chunk));
		size_t got = elf_read_at(img, pos, chunk, want);
		if (!got)
			break;
		size_t n = strnlen(chunk, got);
		sb_addn(&sb, chunk, n);
		terminated = n < got;
		pos += got;
	}
	if (!terminated) {
		sb_free(&sb);
		return NULL;
	}
	char *s = sb_steal(&sb);
	return s;
}

int elf_read_dynamic(elf_image *img, elf_dyn *out, const char **err)
{
	static const char *dummy;
	err = err ? err : &dummy;
	memset(out, 0, sizeof(*out));
	if (!img) {
		*err = "no image";
		return -1;
	}
	uint64_t doff = 0, dsize = 0;
	uint32_t strsec;
	if (!find_dynamic(img, &doff, &dsize, &strsec))
		return 0;
	if (!in_file(img, doff, dsize < 16 ? 16 : dsize)) {
		*err = "dynamic section lies outside the file";
		return -1;
	}
	uint64_t n = dsize / 16;
	if (n > MAX_DYN)
		n = MAX_DYN;
	uint64_t strtab = 0, strsz = 0;
	bool have_strtab = false;
	/* Pass 1: the string table; pass 2: the strings. Offsets are kept, not pointers. */
	uint64_t needed_off[MAX_NEEDED];
	size_t nneeded = 0;
	uint64_t soname_off = UINT64_MAX, rpath_off = UINT64_MAX, runpath_off = UINT64_MAX;
	for (uint64_t i = 0; i < n; i++) {
		unsigned char e[16];
		if (!read_exact(img, doff + i * 16, e, sizeof(e)))
			break;
		uint64_t tag = rd64(e), val = rd64(e + 8);
		if (tag == DT_NULL)
			break;
		switch (tag) {
		case DT_STRTAB:
			strtab = val;
			have_strtab = true;
			break;
		case DT_STRSZ:
			strsz = val;
			break;
		case DT_NEEDED:
			if (nneeded < MAX_NEEDED)
				needed_off[nneeded++] = val;
			break;
		case DT_SONAME:
			soname_off = val;
			break;
		case DT_RPATH:
			rpath_off = val;
			break;
		case DT_RUNPATH:
			runpath_off = val;
			break;
		}
	}
	uint64_t str_file_off = 0, str_limit = 0;
	bool located = have_strtab && vaddr_to_offset(img, strtab, &str_file_off);
	if (located) {
		str_limit = strsz && strsz <= img->size - str_file_off ? str_file_off + strsz : img->size;
	} else {
		/* no program headers (or a broken address): the section the dynamic section links to */
		shdr s;
		if (strsec != UINT32_MAX && read_shdr(img, strsec, &s) && in_file(img, s.offset, s.size)) {
			str_file_off = s.offset;
			str_limit = s.offset + s.size;
			located = true;
		}
	}
	if (!located) {
		if (nneeded || soname_off != UINT64_MAX || rpath_off != UINT64_MAX || runpath_off != UINT64_MAX) {
			*err = "dynamic string table not found";
			return -1;
		}
		return 0;
	}
#define STR_AT(o) ((o) <= str_limit - str_file_off ? read_string(img, str_file_off + (o), str_limit) : NULL)
	for (size_t i = 0; i < nneeded; i++) {
		char *s = STR_AT(needed_off[i]);
		if (s)
			sl_push_owned(&out->needed, s);
	}
	if (soname_off != UINT64_MAX)
		out->soname = STR_AT(soname_off);
	if (rpath_off != UINT64_MAX)
		out->rpath = STR_AT(rpath_off);
	if (runpath_off != UINT64_MAX)
		out->runpath = STR_AT(runpath_off);
#undef STR_AT
	return 0;
}

void elf_dyn_free(elf_dyn *d)
{
	if (!d)
		return;
	free(d->soname);
	free(d->rpath);
	free(d->runpath);
	sl_free(&d->needed);
	memset(d, 0, sizeof(*d));
}

bool elf_find_section(elf_image *img, const char *name, uint64_t *offset, uint64_t *size)
{
	if (!img || !name || img->shnum == 0)
		return false;
	shdr strs;
	if (!read_shdr(img, img->shstrndx, &strs) || !in_file(img, strs.offset, strs.size))
		return false;
	size_t nlen = strlen(name);
	char *buf = xmalloc(nlen + 2);
	bool found = false;
	for (uint32_t i = 0; i < img->shnum && !found; i++) {
		shdr s;
		if (!read_shdr(img, i, &s) || s.name >= strs.size)
			continue;
		/* compare name plus its terminator, within the string table */
		uint64_t avail = strs.size - s.name;
		size_t want = nlen + 1 <= avail ? nlen + 1 : (size_t)avail;
		if (want != nlen + 1 || elf_read_at(img, strs.offset + s.name, buf, want) != want)
			continue;
		if (memcmp(buf, name, nlen) != 0 || buf[nlen] != '\0')
			continue;
		if (s.type == SHT_NOBITS) {
			*offset = s.offset <= img->size ? s.offset : img->size;
			*size = 0;
			found = true;
		} else if (in_file(img, s.offset, s.size)) {
			*offset = s.offset;
			*size = s.size;
			found = true;
		}
	}
	free(buf);
	return found;
}

int elf_check_native(const char *abs_path)
{
	char p[PATH_MAX];
	int fd = gv_sys.open(sysroot_path(p, sizeof(p), abs_path), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -1;
	unsigned char h[20];
	ssize_t n = gv_sys.read(fd, h, sizeof(h));
	gv_sys.close(fd);
	if (n < (ssize_t)sizeof(h))
		return -1;
	int k = ident_kind(h, (size_t)n);
	if (k < 0)
		return -1;
	if (k == 0)
		return 0;
	uint16_t m = rd16(h + 18);
	return (elf_host_machine() == 0 || m == elf_host_machine()) ? 1 : 0;
}
