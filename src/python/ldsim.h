/*
 * Every copy of a library the dynamic loader could reach from one requesting object, in ld.so's
 * order, built on the toolkit layer's loader model (loader/loader.h): the first is what
 * loader_resolve() says ld.so opens; the rest are the copies it would pass over (other
 * LD_LIBRARY_PATH or RUNPATH entries, ld.so.cache, the default directories). The Python layer
 * uses it to tell which cuDNN torch gets and which other cuDNNs sit on the loader's path.
 */
#ifndef GPUVET_LDSIM_H
#define GPUVET_LDSIM_H
#include <stdbool.h>
#include <stddef.h>

#include "core/util.h"
#include "loader/loader.h"

typedef struct ldsim {
	loader_system sys;
	char *ld_library_path; /* as the examined process sees it, entries mapped out of --root; NULL unset */
} ldsim;

void ldsim_init(ldsim *s, const char *ld_library_path);
void ldsim_free(ldsim *s);

/* The directories of a RUNPATH/RPATH value with $ORIGIN (and $LIB, $PLATFORM) expanded and
 * "a/../b" folded, for an object in directory origin. */
void ldsim_expand_path(const ldsim *s, const char *value, const char *origin, strlist *dirs);

typedef struct ld_hit {
	char *path;      /* the file found ("." and ".." folded, links not resolved) */
	char *real;      /* with links resolved inside --root; NULL when it dangles */
	const char *via; /* "RPATH", "LD_LIBRARY_PATH", "RUNPATH", "ld.so.cache", "default directory" */
} ld_hit;

/* Every copy of soname in search order for an object in origin with these RPATH/RUNPATH values
 * (NULL when absent); the first is the loader's pick. Returns the count; free with ldsim_hits_free. */
size_t ldsim_search(const ldsim *s, const char *soname, const char *origin, const char *rpath, const char *runpath,
		    ld_hit **hits);
void ldsim_hits_free(ld_hit *hits, size_t n);
#endif
