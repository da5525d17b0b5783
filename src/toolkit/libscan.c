#include "toolkit/libscan.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/sysroot.h"
#include "core/text.h"

/* File systems never walked: virtual ones, and network ones (slow, and not this machine's). */
static const char *const skip_fstypes[] = {
	"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "tracefs", "debugfs", "securityfs",
	"pstore", "bpf", "configfs", "fusectl", "mqueue", "hugetlbfs", "binfmt_misc", "autofs", "rpc_pipefs",
	"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "fuse.glusterfs", "lustre",
	"gpfs", "beegfs", "fuse.sshfs", "sshfs", "davfs", "fuse.s3fs", "fuse.gcsfuse", "fuse.rclone",
	"fuse.juicefs", "nfsd", NULL,
};
/* Directories never walked unless given: what is in them is not this machine's install. */
static const struct {
	const char *path, *why;
} skip_paths[] = {
	{"/proc", "virtual or run-time files"},
	{"/sys", "virtual or run-time files"},
	{"/dev", "virtual or run-time files"},
	{"/run", "virtual or run-time files"},
	{"/var/lib/docker", "container images and volumes"},
	{"/var/lib/containerd", "container images and volumes"},
	{"/var/lib/containers", "container images and volumes"},
	{"/var/lib/kubelet", "container images and volumes"},
	{"/snap", "snap packages, read-only images"},
	{NULL, NULL},
};

/* Without DIR arguments: where CUDA libraries are installed and left behind, not the whole disk
 * (data disks, backups and container trees would make the walk long and the answer noisy). */
static const char *const default_starts[] = {"/usr", "/opt", "/home", "/root", "/srv", NULL};

void libscan_defaults(libscan_opts *o)
{
	o->max_depth = 16;
	o->max_entries = 2000000;
	o->time_limit_s = 30;
	o->progress = NULL;
}

/* Mount points to skip, from the examined machine's /proc/self/mounts (or /proc/mounts). */
static void skipped_mounts(strlist *out, strlist *why)
{
	char *buf = NULL;
	size_t len;
	bool trunc;
	if (sysroot_read("/proc/self/mounts", 4u << 20, &buf, &len, &trunc) != 0 &&
	    sysroot_read("/proc/mounts", 4u << 20, &buf, &len, &trunc) != 0)
		return;
	strlist lines = {0};
	sl_split(&lines, buf, "\n", false);
	free(buf);
	for (size_t i = 0; i < lines.n && out->n < 4096; i++) {
		strlist w = {0};
		sl_split(&w, lines.v[i], " ", false);
		if (w.n >= 3) {
			for (size_t k = 0; skip_fstypes[k]; k++)
				if (strcmp(w.v[2], skip_fstypes[k]) == 0 && strcmp(w.v[1], "/") != 0) {
					/* mount points escape spaces as \040; such a path is skipped as written */
					sl_push(out, w.v[1]);
					sl_pushf(why, "%s (%s)", w.v[1], w.v[2]);
					break;
				}
		}
		sl_free(&w);
	}
	sl_free(&lines);
}

typedef struct walk {
	const libscan_opts *o;
	libscan_result *r;
	strlist skip;
	double t0, last_progress;
} walk;

static bool limits_hit(walk *w)
{
	if (w->r->truncated)
		return true;
	if (w->r->entries >= w->o->max_entries) {
		w->r->truncated = true;
		w->r->limit_hit = "entries";
	} else if ((w->r->entries & 1023) == 0 && now_seconds() - w->t0 > w->o->time_limit_s) {
		w->r->truncated = true;
		w->r->limit_hit = "time";
	}
	return w->r->truncated;
}

static void progress(walk *w, const char *dir)
{
	if (!w->o->progress)
		return;
	double t = now_seconds();
	if (t - w->last_progress < 0.1)
		return;
	w->last_progress = t;
	/* a directory's name goes to the terminal escaped, and cut to the width of the line */
	char shown[64];
	fprintf(w->o->progress, "\r\033[Kscanning: %ld entries, %zu copies found, %s", w->r->entries, w->r->libs.n,
		text_safe(shown, sizeof(shown), dir));
	fflush(w->o->progress);
}

static void walk_dir(walk *w, const char *dir, int depth)
{
	if (limits_hit(w))
		return;
	if (sl_contains(&w->skip, dir))
		return;
	DIR *d = sysroot_opendir(dir);
	if (!d)
		return;
	w->r->dirs++;
	progress(w, dir);
	bool found_lib = false;
	strlist subdirs = {0};
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' && (de->d_name[1] == '\0' || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
			continue;
		w->r->entries++;
		if (limits_hit(w))
			break;
		char *path = xasprintf("%s%s%s", dir, str_ends(dir, "/") ? "" : "/", de->d_name);
		unsigned char type = de->d_type;
		if (type == DT_UNKNOWN) {
			struct stat st;
			if (sysroot_lstat(path, &st) == 0)
				type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
		}
		if (type == DT_DIR)
			sl_push_owned(&subdirs, path);
		else {
			if ((type == DT_REG || type == DT_LNK) && cuda_lib_match(de->d_name))
				found_lib = true;
			free(path);
		}
	}
	closedir(d);
	/* the directory's copies, through the same code as the loader probe */
	if (found_lib)
		cuda_libs_scan_dir(&w->r->libs, dir);
	if (depth >= w->o->max_depth) {
		if (subdirs.n && !w->r->limit_hit)
			w->r->limit_hit = "depth";
	} else {
		for (size_t i = 0; i < subdirs.n && !w->r->truncated; i++)
			walk_dir(w, subdirs.v[i], depth + 1);
	}
	sl_free(&subdirs);
}

void libscan_run(const strlist *starts, const libscan_opts *o, libscan_result *r)
{
	memset(r, 0, sizeof(*r));
	walk w = {o, r, {0}, now_seconds(), 0};
	for (size_t i = 0; skip_paths[i].path; i++) {
		sl_push(&w.skip, skip_paths[i].path);
		sl_pushf(&r->skipped, "%s (%s)", skip_paths[i].path, skip_paths[i].why);
	}
	skipped_mounts(&w.skip, &r->skipped);
	if (starts && starts->n) {
		for (size_t i = 0; i < starts->n; i++) {
			/* a start inside a skipped path is walked anyway: the user asked for it */
			bool was = sl_contains(&w.skip, starts->v[i]);
			if (was) {
				for (size_t k = 0; k < w.skip.n; k++)
					if (strcmp(w.skip.v[k], starts->v[i]) == 0)
						w.skip.v[k][0] = '\0';
			}
			walk_dir(&w, starts->v[i], 0);
		}
	} else {
		for (size_t i = 0; default_starts[i]; i++)
			if (sysroot_is_dir(default_starts[i]))
				walk_dir(&w, default_starts[i], 0);
		/* a HOME elsewhere (/data/alice, /scratch/bob) is where its user's leftovers are */
		const char *home = getenv("HOME");
		const char *h = home && *home ? sysroot_strip(home) : NULL;
		bool inside = false;
		for (size_t i = 0; h && default_starts[i]; i++)
			inside |= str_starts(h, default_starts[i]) &&
				  (h[strlen(default_starts[i])] == '/' || h[strlen(default_starts[i])] == '\0');
		if (h && h[0] == '/' && strcmp(h, "/") != 0 && !inside && sysroot_is_dir(h))
			walk_dir(&w, h, 0);
	}
	if (o->progress) {
		fprintf(o->progress, "\r\033[K");
		fflush(o->progress);
	}
	cuda_libs_versions(&r->libs, false);
	r->seconds = now_seconds() - w.t0;
	sl_free(&w.skip);
}

void libscan_free(libscan_result *r)
{
	cuda_libs_free(&r->libs);
	sl_free(&r->skipped);
	memset(r, 0, sizeof(*r));
}
