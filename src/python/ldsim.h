/*
 * A model of the dynamic loader's search (ld.so(8)) for one requesting object: DT_RPATH (when
 * there is no DT_RUNPATH), LD_LIBRARY_PATH, DT_RUNPATH, /etc/ld.so.cache, the default
 * directories. Everything is read below --root. When the machine has no ld.so.cache (test trees,
 * minimal containers) the directories of /etc/ld.so.conf stand in for it, as ldconfig would
 * have cached them.
 *
 * ldcache_parse is the parser of the binary cache ("glibc-ld.so.cache1.1"), fuzzed separately.
 */
#ifndef GPUVET_LDSIM_H
#define GPUVET_LDSIM_H
#include <stdbool.h>
#include <stddef.h>

#include "core/util.h"

/* Calls fn(soname, path) for every 64-bit entry of a new-format cache; returns the number of
 * entries or -1 when the buffer is not such a cache. */
int ldcache_parse(const unsigned char *buf, size_t len, void (*fn)(const char *soname, const char *path, void *ctx),
		  void *ctx);

typedef struct ldsim {
	strlist ld_library_path; /* existing directories, in order */
	strlist cache_sonames, cache_paths;
	bool have_cache;         /* from /etc/ld.so.cache; else from ld.so.conf directories */
	strlist conf_dirs;
	strlist default_dirs;
} ldsim;

/* ld_library_path: the variable's value as the examined process sees it (may be NULL). */
void ldsim_init(ldsim *s, const char *ld_library_path);
void ldsim_free(ldsim *s);

/* Expands $ORIGIN / ${ORIGIN} (and $LIB, $PLATFORM best-effort) of a RUNPATH/RPATH value for an
 * object in directory origin, into existing or not existing absolute directories. */
void ldsim_expand_path(const char *value, const char *origin, strlist *dirs);

typedef struct ld_hit {
	char *path; /* the file found (not resolved) */
	const char *via; /* "RPATH", "LD_LIBRARY_PATH", "RUNPATH", "ld.so.cache", "ld.so.conf", "default" */
} ld_hit;

/* Every copy of soname in search order (the first is what the loader opens); rpath is used only
 * when runpath is NULL or empty, as glibc does. Returns the count; free with ldsim_hits_free. */
size_t ldsim_search(const ldsim *s, const char *soname, const strlist *rpath, const strlist *runpath, ld_hit **hits);
void ldsim_hits_free(ld_hit *hits, size_t n);
#endif
