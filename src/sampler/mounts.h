/*
 * Which mount holds a file, and whether that storage is local: a job whose GPU idles while it
 * reads from NFS, Lustre, an object store behind FUSE (gcsfuse, s3fs) or WSL's 9p host folders
 * needs another fix than one on a slow local disk. Read from /proc/PID/mountinfo (through
 * --root), so a container's paths resolve in its own mount namespace.
 */
#ifndef GPUVET_SAMPLER_MOUNTS_H
#define GPUVET_SAMPLER_MOUNTS_H
#include <stdbool.h>
#include <stddef.h>

typedef struct mount_info {
	char point[160];  /* where it is mounted, as the process sees it: "/data" */
	char fstype[40];  /* "nfs4", "fuse.gcsfuse", "ext4" */
	char source[128]; /* "10.0.0.5:/export", "/dev/nvme0n1p1", "gcsfuse" */
} mount_info;

/* A kind of storage that is not a local disk (mount_remote_kinds in mounts.c). */
typedef struct mount_remote {
	const char *fstype; /* the type, or its prefix where it ends in '.' ("fuse.") */
	const char *words;  /* "network storage (NFS)" */
	const char *fix;    /* what to do beyond copying the data to local storage; "" none */
} mount_remote;

/* The mount that holds path in a mountinfo file's text: the longest mount point that is a whole
 * leading part of path, the later of equal ones (mounted over the other). False when none
 * matches or path is not absolute. Octal escapes (\040) are undone. Pure. */
bool mount_find(const char *text, size_t len, const char *path, mount_info *m);
/* The same from /proc/PID/mountinfo. */
bool mount_of(unsigned pid, const char *path, mount_info *m);
/* The entry of a filesystem type that is not a local disk; NULL for a local one (ext4, xfs, a
 * fuseblk NTFS disk, tmpfs, overlay). */
const mount_remote *mount_remote_of(const char *fstype);

#endif
