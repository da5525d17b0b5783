/*
 * /etc/ld.so.cache, as glibc's ldconfig writes it (elf/cache.c, sysdeps/generic/dl-cache.h):
 *
 *   new format   "glibc-ld.so.cache" "1.1", nlibs (u32), len_strings (u32), flags (u8), 3 pad,
 *                extension_offset (u32), 3 x u32 unused: 48 bytes; then nlibs entries of
 *                {i32 flags, u32 key, u32 value, u32 osversion, u64 hwcap} (24 bytes); key and value
 *                are offsets of NUL-terminated strings counted from the start of this header.
 *   old format   "ld.so-1.7.0" (11 bytes, 1 pad), nlibs (u32), entries {i32 flags, u32 key, u32 value}
 *                (12 bytes), strings counted from the end of the entries. glibc < 2.32 wrote this
 *                followed by a new-format cache at the next 8-byte boundary (hidden in the old
 *                string table); the new part is preferred, as ld.so does.
 *
 * Integers are in the host's byte order; we read little-endian (every CUDA host).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/sysroot.h"
#include "loader/loader.h"

#define NEW_MAGIC "glibc-ld.so.cache1.1"
#define OLD_MAGIC "ld.so-1.7.0"
#define NEW_HDR 48
#define NEW_ENT 24
#define OLD_HDR 16
#define OLD_ENT 12
#define MAX_ENTRIES (1u << 20)
#define MAX_CACHE_BYTES (64u << 20)

#define FLAG_ELF_LIBC6 0x0003
#define FLAG_TYPE_MASK 0x00ff
#define FLAG_REQUIRED_MASK 0xff00
#define FLAG_X8664_LIB64 0x0300
#define FLAG_POWERPC_LIB64 0x0500
#define FLAG_AARCH64_LIB64 0x0a00

static uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint64_t rd64(const unsigned char *p)
{
	return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32);
}

/* A NUL-terminated string at base+off inside [0, size); NULL when it runs off the end. */
static char *str_at(const unsigned char *d, size_t size, uint64_t base, uint64_t off)
{
	if (base > size || off >= size - base)
		return NULL;
	const unsigned char *s = d + base + off;
	size_t avail = size - base - off;
	if (avail > PATH_MAX)
		avail = PATH_MAX;
	const unsigned char *nul = memchr(s, '\0', avail);
	if (!nul || nul == s)
		return NULL;
	char *r = xstrndup((const char *)s, (size_t)(nul - s));
	str_sanitize(r);
	return r;
}

static void push(ldcache *c, size_t *cap, char *key, char *value, int32_t flags, uint64_t hwcap)
{
	if (!key || !value) {
		free(key);
		free(value);
		return;
	}
	if (c->n == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		c->v = xrealloc(c->v, *cap * sizeof(*c->v));
	}
	c->v[c->n++] = (ldcache_entry){key, value, flags, hwcap};
}

static int parse_new(const unsigned char *d, size_t size, size_t at, ldcache *c, const char **err)
{
	if (at > size || size - at < NEW_HDR || memcmp(d + at, NEW_MAGIC, sizeof(NEW_MAGIC) - 1) != 0) {
		*err = "bad ld.so.cache header";
		return -1;
	}
	uint32_t nlibs = rd32(d + at + 20);
	size_t room = (size - at - NEW_HDR) / NEW_ENT;
	if (nlibs > room || nlibs > MAX_ENTRIES) {
		*err = "ld.so.cache is truncated (more entries announced than the file holds)";
		return -1;
	}
	size_t cap = 0;
	for (uint32_t i = 0; i < nlibs; i++) {
		const unsigned char *e = d + at + NEW_HDR + (size_t)i * NEW_ENT;
		int32_t flags = (int32_t)rd32(e);
		uint32_t key = rd32(e + 4), value = rd32(e + 8);
		uint64_t hwcap = rd64(e + 16);
		push(c, &cap, str_at(d, size, at, key), str_at(d, size, at, value), flags, hwcap);
	}
	return 0;
}

int ldcache_parse(const void *data, size_t size, ldcache *out, const char **err)
{
	static const char *dummy;
	err = err ? err : &dummy;
	memset(out, 0, sizeof(*out));
	const unsigned char *d = data;
	if (!d || size < 16) {
		*err = "ld.so.cache is too short";
		return -1;
	}
	if (size >= NEW_HDR && memcmp(d, NEW_MAGIC, sizeof(NEW_MAGIC) - 1) == 0) {
		out->format = "new";
		return parse_new(d, size, 0, out, err);
	}
	if (memcmp(d, OLD_MAGIC, sizeof(OLD_MAGIC) - 1) != 0) {
		*err = "not an ld.so.cache (unknown magic)";
		return -1;
	}
	uint32_t nlibs = rd32(d + 12);
	if (nlibs > (size - OLD_HDR) / OLD_ENT || nlibs > MAX_ENTRIES) {
		*err = "ld.so.cache is truncated (more entries announced than the file holds)";
		return -1;
	}
	size_t strings = OLD_HDR + (size_t)nlibs * OLD_ENT;
	size_t new_at = (strings + 7) & ~(size_t)7;
	if (new_at <= size && size - new_at >= NEW_HDR && memcmp(d + new_at, NEW_MAGIC, sizeof(NEW_MAGIC) - 1) == 0) {
		out->format = "old+new";
		return parse_new(d, size, new_at, out, err);
	}
	out->format = "old";
	size_t cap = 0;
	for (uint32_t i = 0; i < nlibs; i++) {
		const unsigned char *e = d + OLD_HDR + (size_t)i * OLD_ENT;
		push(out, &cap, str_at(d, size, strings, rd32(e + 4)), str_at(d, size, strings, rd32(e + 8)),
		     (int32_t)rd32(e), 0);
	}
	return 0;
}

int ldcache_load(const char *abs_path, ldcache *out, const char **err)
{
	static const char *dummy;
	err = err ? err : &dummy;
	memset(out, 0, sizeof(*out));
	char *buf;
	size_t len;
	bool truncated;
	int rc = sysroot_read(abs_path ? abs_path : "/etc/ld.so.cache", MAX_CACHE_BYTES, &buf, &len, &truncated);
	if (rc < 0) {
		*err = strerror(-rc);
		return -1;
	}
	if (truncated) {
		free(buf);
		*err = "ld.so.cache is larger than 64 MiB";
		return -1;
	}
	rc = ldcache_parse(buf, len, out, err);
	free(buf);
	return rc;
}

void ldcache_free(ldcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].soname);
		free(c->v[i].path);
	}
	free(c->v);
	memset(c, 0, sizeof(*c));
}

static int32_t host_abi_flag(void)
{
#if defined(__x86_64__)
	return FLAG_X8664_LIB64;
#elif defined(__aarch64__)
	return FLAG_AARCH64_LIB64;
#elif defined(__powerpc64__)
	return FLAG_POWERPC_LIB64;
#else
	return 0;
#endif
}

bool ldcache_entry_native(const ldcache_entry *e)
{
	return (e->flags & FLAG_TYPE_MASK) == FLAG_ELF_LIBC6 && (e->flags & FLAG_REQUIRED_MASK) == host_abi_flag();
}

const ldcache_entry *ldcache_lookup(const ldcache *c, const char *soname)
{
	if (!c || !soname)
		return NULL;
	const ldcache_entry *with_hwcap = NULL;
	for (size_t i = 0; i < c->n; i++) {
		const ldcache_entry *e = &c->v[i];
		if (strcmp(e->soname, soname) != 0 || !ldcache_entry_native(e))
			continue;
		if (e->hwcap == 0)
			return e;
		if (!with_hwcap)
			with_hwcap = e;
	}
	return with_hwcap;
}
