#include "python/elfscan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHT_DYNAMIC 6
#define PT_LOAD 1
#define PT_DYNAMIC 2
#define DT_NULL 0
#define DT_NEEDED 1
#define DT_STRTAB 5
#define DT_STRSZ 10
#define DT_SONAME 14
#define DT_RPATH 15
#define DT_RUNPATH 29

#define MAX_SECTIONS 65536u
#define MAX_SEGMENTS 4096u
#define MAX_DYN 8192u
#define MAX_SHSTRTAB (4u << 20)
#define MAX_DYNSTR_STRING 8192u

typedef struct shdr {
	uint32_t name, type, link;
	uint64_t off, size;
} shdr;

typedef struct phdr {
	uint32_t type;
	uint64_t off, vaddr, filesz;
} phdr;

static void set_err(char *err, size_t n, const char *msg)
{
	if (err && n)
		str_copy(err, n, msg);
}

/* A NUL-terminated string at off, at most max bytes, inside [lo, hi). NULL when unterminated. */
static char *read_cstr(const binsrc *b, uint64_t off, uint64_t hi)
{
	if (off >= hi)
		return NULL;
	uint64_t room = hi - off;
	size_t n = room < MAX_DYNSTR_STRING ? (size_t)room : MAX_DYNSTR_STRING;
	char *buf = xmalloc(n + 1);
	size_t got = binsrc_read_some(b, off, buf, n);
	buf[got] = '\0';
	if (strlen(buf) >= got) { /* no NUL inside what was read */
		free(buf);
		return NULL;
	}
	return buf;
}

static bool read_sections(const binsrc *b, const unsigned char *eh, shdr **out, uint32_t *count, uint32_t *shstrndx,
			  char *err, size_t errn)
{
	uint64_t shoff = le64(eh + 40);
	uint16_t shentsize = le16(eh + 58);
	uint32_t shnum = le16(eh + 60);
	uint32_t strndx = le16(eh + 62);
	*out = NULL;
	*count = 0;
	if (shoff == 0)
		return true; /* no section headers: stripped to the bone, use program headers */
	if (shentsize < 64) {
		set_err(err, errn, "section header entries are too small");
		return false;
	}
	unsigned char sh[64];
	if (shnum == 0 || strndx == 0xffff) { /* extended numbering lives in section 0 */
		if (!binsrc_read(b, shoff, sh, sizeof(sh))) {
			set_err(err, errn, "section header table lies outside the file");
			return false;
		}
		if (shnum == 0)
			shnum = le64(sh + 32) > MAX_SECTIONS ? MAX_SECTIONS + 1 : (uint32_t)le64(sh + 32);
		if (strndx == 0xffff)
			strndx = le32(sh + 40);
	}
	if (shnum > MAX_SECTIONS) {
		set_err(err, errn, "too many sections");
		return false;
	}
	if (shoff > b->size || (uint64_t)shnum * shentsize > b->size - shoff) {
		set_err(err, errn, "section header table lies outside the file");
		return false;
	}
	shdr *v = xcalloc(shnum ? shnum : 1, sizeof(*v));
	for (uint32_t i = 0; i < shnum; i++) {
		if (!binsrc_read(b, shoff + (uint64_t)i * shentsize, sh, sizeof(sh))) {
			free(v);
			set_err(err, errn, "cannot read a section header");
			return false;
		}
		v[i].name = le32(sh);
		v[i].type = le32(sh + 4);
		v[i].off = le64(sh + 24);
		v[i].size = le64(sh + 32);
		v[i].link = le32(sh + 40);
	}
	*out = v;
	*count = shnum;
	*shstrndx = strndx;
	return true;
}

static bool section_in_file(const binsrc *b, const shdr *s)
{
	return s->off <= b->size && s->size <= b->size - s->off;
}

static void find_fatbin(const binsrc *b, const shdr *sec, uint32_t n, uint32_t shstrndx, elf_info *out)
{
	if (shstrndx >= n || !section_in_file(b, &sec[shstrndx]))
		return;
	const shdr *ss = &sec[shstrndx];
	size_t len = ss->size > MAX_SHSTRTAB ? MAX_SHSTRTAB : (size_t)ss->size;
	char *names = xmalloc(len + 1);
	len = binsrc_read_some(b, ss->off, names, len);
	names[len] = '\0';
	static const char want[] = ".nv_fatbin";
	for (uint32_t i = 0; i < n; i++) {
		if (sec[i].name >= len || sec[i].name + sizeof(want) > len + 1)
			continue;
		if (memcmp(names + sec[i].name, want, sizeof(want)) != 0)
			continue;
		if (!section_in_file(b, &sec[i]) || sec[i].type == 8 /* NOBITS */)
			continue;
		out->has_fatbin = true;
		out->fatbin_off = sec[i].off;
		out->fatbin_size = sec[i].size;
		break;
	}
	free(names);
}

/* Walks dynamic entries at [off, off+size) with strings in [stroff, stroff+strsz). */
static void read_dynamic(const binsrc *b, uint64_t off, uint64_t size, bool have_str, uint64_t stroff, uint64_t strsz,
			 const phdr *ph, uint32_t nph, elf_info *out)
{
	uint64_t count = size / 16;
	if (count > MAX_DYN)
		count = MAX_DYN;
	/* two passes: string table location (program-header case), then the entries */
	uint64_t strtab_vaddr = 0, dyn_strsz = 0;
	for (uint64_t i = 0; i < count; i++) {
		unsigned char d[16];
		if (!binsrc_read(b, off + i * 16, d, sizeof(d)))
			break;
		int64_t tag = (int64_t)le64(d);
		if (tag == DT_NULL)
			break;
		if (tag == DT_STRTAB)
			strtab_vaddr = le64(d + 8);
		else if (tag == DT_STRSZ)
			dyn_strsz = le64(d + 8);
	}
	if (!have_str && strtab_vaddr) {
		for (uint32_t i = 0; i < nph; i++)
			if (ph[i].type == PT_LOAD && strtab_vaddr >= ph[i].vaddr &&
			    strtab_vaddr - ph[i].vaddr < ph[i].filesz) {
				stroff = ph[i].off + (strtab_vaddr - ph[i].vaddr);
				strsz = dyn_strsz ? dyn_strsz : ph[i].filesz - (strtab_vaddr - ph[i].vaddr);
				have_str = true;
				break;
			}
	}
	if (!have_str || stroff > b->size)
		return;
	if (strsz > b->size - stroff)
		strsz = b->size - stroff;
	out->has_dynamic = true;
	for (uint64_t i = 0; i < count; i++) {
		unsigned char d[16];
		if (!binsrc_read(b, off + i * 16, d, sizeof(d)))
			break;
		int64_t tag = (int64_t)le64(d);
		uint64_t val = le64(d + 8);
		if (tag == DT_NULL)
			break;
		if (tag != DT_NEEDED && tag != DT_SONAME && tag != DT_RPATH && tag != DT_RUNPATH)
			continue;
		if (val >= strsz)
			continue;
		char *s = read_cstr(b, stroff + val, stroff + strsz);
		if (!s)
			continue;
		str_sanitize(s);
		char **slot = tag == DT_SONAME ? &out->soname : tag == DT_RPATH ? &out->rpath : tag == DT_RUNPATH ? &out->runpath : NULL;
		if (slot) {
			free(*slot);
			*slot = s;
		} else if (out->needed.n < 1024) {
			sl_push_owned(&out->needed, s);
		} else {
			free(s);
		}
	}
}

static phdr *read_segments(const binsrc *b, const unsigned char *eh, uint32_t *count)
{
	uint64_t phoff = le64(eh + 32);
	uint16_t phentsize = le16(eh + 54);
	uint32_t phnum = le16(eh + 56);
	*count = 0;
	if (!phoff || phentsize < 56 || phnum == 0 || phnum > MAX_SEGMENTS)
		return NULL;
	phdr *v = xcalloc(phnum, sizeof(*v));
	uint32_t n = 0;
	for (uint32_t i = 0; i < phnum; i++) {
		unsigned char p[56];
		if (!binsrc_read(b, phoff + (uint64_t)i * phentsize, p, sizeof(p)))
			break;
		v[n].type = le32(p);
		v[n].off = le64(p + 8);
		v[n].vaddr = le64(p + 16);
		v[n].filesz = le64(p + 32);
		n++;
	}
	*count = n;
	return v;
}

int elf_inspect(const binsrc *b, unsigned want, elf_info *out, char *err, size_t errn)
{
	memset(out, 0, sizeof(*out));
	set_err(err, errn, "");
	unsigned char eh[64];
	if (!binsrc_read(b, 0, eh, 4) || memcmp(eh, "\x7f" "ELF", 4) != 0)
		return 1;
	if (!binsrc_read(b, 0, eh, sizeof(eh))) {
		set_err(err, errn, "truncated ELF header");
		return -1;
	}
	if (eh[4] != 2 || eh[5] != 1) {
		set_err(err, errn, eh[4] == 1 ? "32-bit ELF objects are not examined" : "big-endian or unknown ELF class");
		return -1;
	}
	out->machine = le16(eh + 18);
	shdr *sec = NULL;
	uint32_t nsec = 0, shstrndx = 0;
	if (!read_sections(b, eh, &sec, &nsec, &shstrndx, err, errn))
		return -1;
	if ((want & ELF_WANT_FATBIN) && nsec)
		find_fatbin(b, sec, nsec, shstrndx, out);
	if (want & ELF_WANT_DYNAMIC) {
		bool done = false;
		for (uint32_t i = 0; i < nsec && !done; i++) {
			if (sec[i].type != SHT_DYNAMIC || !section_in_file(b, &sec[i]))
				continue;
			bool have_str = sec[i].link < nsec && section_in_file(b, &sec[sec[i].link]);
			read_dynamic(b, sec[i].off, sec[i].size, have_str, have_str ? sec[sec[i].link].off : 0,
				     have_str ? sec[sec[i].link].size : 0, NULL, 0, out);
			done = true;
		}
		if (!done) {
			uint32_t nph = 0;
			phdr *ph = read_segments(b, eh, &nph);
			for (uint32_t i = 0; i < nph; i++)
				if (ph[i].type == PT_DYNAMIC && ph[i].off <= b->size) {
					uint64_t sz = ph[i].filesz;
					if (sz > b->size - ph[i].off)
						sz = b->size - ph[i].off;
					read_dynamic(b, ph[i].off, sz, false, 0, 0, ph, nph, out);
					break;
				}
			free(ph);
		}
	}
	free(sec);
	return 0;
}

void elf_info_free(elf_info *e)
{
	free(e->soname);
	free(e->runpath);
	free(e->rpath);
	sl_free(&e->needed);
	memset(e, 0, sizeof(*e));
}
