/* Which mount holds a file (sampler/mounts.h). */
#include "sampler/mounts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sysroot.h"
#include "core/util.h"

#define PARALLEL_FS_FIX                                                                                              \
	"many small files strain its metadata servers: pack them into large shards (WebDataset, tar, record files)"
#define OBJECT_STORE_FIX                                                                                             \
	"an object store behind FUSE answers small random reads slowly: turn on the mount's local file cache, or copy "  \
	"the data to local disk"

/* Filesystems that are not a local disk, the exact types first, then the prefixes. */
static const mount_remote mount_remote_kinds[] = {
	{"nfs", "network storage (NFS)",
	 "`nfsiostat 5` shows the mount's read latency; the mount options nconnect=8 and rsize=1048576 raise one "
	 "client's throughput"},
	{"nfs4", "network storage (NFS)",
	 "`nfsiostat 5` shows the mount's read latency; the mount options nconnect=8 and rsize=1048576 raise one "
	 "client's throughput"},
	{"cifs", "network storage (SMB)", ""},
	{"smb3", "network storage (SMB)", ""},
	{"lustre", "a parallel filesystem (Lustre)",
	 "`lfs setstripe -c -1` on the dataset's directory spreads new large files over every OST; " PARALLEL_FS_FIX},
	{"gpfs", "a parallel filesystem (GPFS)", PARALLEL_FS_FIX},
	{"beegfs", "a parallel filesystem (BeeGFS)", PARALLEL_FS_FIX},
	{"wekafs", "a parallel filesystem (WekaFS)", PARALLEL_FS_FIX},
	{"ceph", "network storage (CephFS)", PARALLEL_FS_FIX},
	{"glusterfs", "network storage (GlusterFS)", PARALLEL_FS_FIX},
	{"orangefs", "a parallel filesystem (OrangeFS)", PARALLEL_FS_FIX},
	{"afs", "network storage (AFS)", ""},
	{"9p", "a host folder shared into this VM or WSL2 (9p)",
	 "WSL2's /mnt/c is far slower than its own Linux disk: keep the data under the Linux filesystem (~/)"},
	{"drvfs", "a Windows folder (WSL's drvfs)", "keep the data under the Linux filesystem (~/)"},
	{"virtiofs", "a host folder shared into this VM (virtiofs)", ""},
	{"fuse.gcsfuse", "Cloud Storage through gcsfuse",
	 "gcsfuse's file cache (--cache-dir with --file-cache-max-size-mb) keeps what was read on local disk"},
	{"fuse.s3fs", "S3 through s3fs", "s3fs -o use_cache=DIR keeps what was read on local disk"},
	{"fuse.mountpoint-s3", "S3 through Mountpoint", "mount-s3 --cache DIR keeps what was read on local disk"},
	{"fuse.blobfuse2", "Azure Blob storage through blobfuse2", "blobfuse2's file_cache component keeps what was read on local disk"},
	{"fuse.rclone", "remote storage through rclone", "rclone mount --vfs-cache-mode full keeps what was read on local disk"},
	{"fuse.juicefs", "JuiceFS", "its --cache-dir and --cache-size keep what was read on local disk"},
	{"fuse.sshfs", "a remote folder through sshfs", ""},
	{"fuse.ceph-fuse", "network storage (CephFS through ceph-fuse)", PARALLEL_FS_FIX},
	{"fuse.glusterfs", "network storage (GlusterFS)", PARALLEL_FS_FIX},
	{"fuse.", "a user-space filesystem (FUSE)", OBJECT_STORE_FIX},
	{"fuse", "a user-space filesystem (FUSE)", OBJECT_STORE_FIX},
};

const mount_remote *mount_remote_of(const char *fstype)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(mount_remote_kinds); i++) {
		const mount_remote *r = &mount_remote_kinds[i];
		size_t n = strlen(r->fstype);
		if (r->fstype[n - 1] == '.' ? strncmp(fstype, r->fstype, n) == 0 : strcmp(fstype, r->fstype) == 0)
			return r;
	}
	return NULL;
}

/* One space-separated field of a mountinfo line into out, its octal escapes (\040 a blank, \134
 * a backslash) undone; the position after it. */
static const char *field(const char *p, const char *end, char *out, size_t n)
{
	size_t k = 0;
	while (p < end && *p == ' ')
		p++;
	for (; p < end && *p != ' '; p++) {
		char c = *p;
		if (c == '\\' && end - p >= 4 && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' &&
		    p[3] <= '7') {
			c = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 3;
		}
		if (k + 1 < n)
			out[k++] = c;
	}
	if (n)
		out[k] = '\0';
	return p;
}

/* The length of point when it is a whole leading part of path ("/" of everything, "/data" of
 * "/data/x" but not of "/database"); 0 when it is not. */
static size_t covers(const char *point, const char *path)
{
	size_t n = strlen(point);
	if (n == 1 && point[0] == '/')
		return 1;
	if (strncmp(point, path, n) != 0 || (path[n] != '/' && path[n] != '\0'))
		return 0;
	return n;
}

bool mount_find(const char *text, size_t len, const char *path, mount_info *m)
{
	if (!path || path[0] != '/')
		return false;
	size_t best = 0;
	for (const char *line = text, *end = text + len; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *le = nl ? nl : end;
		/* "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue" */
		char skip[160], point[sizeof(m->point)], fstype[sizeof(m->fstype)], source[sizeof(m->source)];
		const char *p = line;
		for (int i = 0; i < 4; i++)
			p = field(p, le, skip, sizeof(skip));
		p = field(p, le, point, sizeof(point));
		/* the optional fields end at a lone "-" */
		const char *dash = NULL;
		for (const char *q = p; q + 2 < le && !dash; q++)
			if (q[0] == ' ' && q[1] == '-' && q[2] == ' ')
				dash = q + 2;
		line = nl ? nl + 1 : end;
		if (!dash || !point[0])
			continue;
		p = field(dash + 1, le, fstype, sizeof(fstype));
		field(p, le, source, sizeof(source));
		size_t n = covers(point, path);
		if (n && n >= best && fstype[0]) {
			best = n;
			str_copy(m->point, sizeof(m->point), point);
			str_copy(m->fstype, sizeof(m->fstype), fstype);
			str_copy(m->source, sizeof(m->source), source);
		}
	}
	return best > 0;
}

bool mount_of(unsigned pid, const char *path, mount_info *m)
{
	char file[64], *buf = NULL;
	size_t len = 0;
	snprintf(file, sizeof(file), "/proc/%u/mountinfo", pid);
	if (sysroot_read_may_deny(file, 4 << 20, &buf, &len, NULL) != 0)
		return false;
	bool found = mount_find(buf, len, path, m);
	free(buf);
	return found;
}
