#include "sampler/sampler.h"


#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/sysroot.h"
#include "core/util.h"
#include "nvidia/contact.h"
#include "nvidia/nvml.h"
#include "sampler/alloc.h"
#include "sampler/fields.h"
#include "sampler/jobcpu.h"
#include "sampler/nvlink_sample.h"
#include "sampler/xid.h"

struct sampler {
	sampler_opts o;
	unsigned ngpus;
	gv_nvml_device *dev; /* ngpus; identity kept between takes */
	gv_gpm **gpm;        /* ngpus; NULL where GPM is not supported */
	gv_gpm_support *gpm_support;
	gv_nv_dbl (*gpm_val)[GV_GPM_N];
	unsigned long long takes;
	bool want_health; /* sampler_want_health: the next take reads the health counters */
	int consecutive_failures;
	char driver_version[32], nvml_version[32];
	int cuda_driver_version;
	xid_tally xids;
	nvlink_track *nvl; /* ngpus */
	/* NVML events */
	gv_nvml_events *events;
	pthread_t ev_thread;
	bool ev_running;
	atomic_bool stop;
	/* kernel log */
	kmsg_reader kmsg;
	char sources[256];
	owner_cache *owners; /* whose job each GPU process is, read once per process */
	alloc_cache *allocs; /* the pods the kubelet allocated each GPU to */
	/* the names of the uids seen, so /etc/passwd is read once per user, not per process and take */
	struct {
		long uid;
		char name[32];
	} users[32];
	size_t nusers, next_user;
};

static void *event_thread(void *arg)
{
	sampler *s = arg;
	while (!atomic_load(&s->stop)) {
		gv_nvml_xid x;
		nvmlReturn_t rc = gv_nvml_events_wait(s->events, 500, &x);
		if (rc == NVML_SUCCESS)
			xid_tally_add(&s->xids, x.gpu_index, (unsigned)x.xid, XID_SRC_NVML, now_seconds());
		else if (rc != NVML_ERROR_TIMEOUT) {
			sleep_seconds(0.5); /* a broken event set would spin: back off */
		}
	}
	return NULL;
}

static void on_kmsg_xid(void *ctx, const xid_line *x)
{
	sampler *s = ctx;
	for (unsigned i = 0; i < s->ngpus; i++)
		if (GV_OK(s->dev[i].pci_bus_id) && xid_pci_matches(x->pci, s->dev[i].pci_bus_id.v)) {
			xid_tally_add(&s->xids, (int)i, (unsigned)x->code, XID_SRC_KMSG, now_seconds());
			return;
		}
	/* a GPU we do not know (another driver instance, a line without a bus id): the only GPU */
	if (s->ngpus == 1)
		xid_tally_add(&s->xids, 0, (unsigned)x->code, XID_SRC_KMSG, now_seconds());
}

sampler *sampler_open(const sampler_opts *o, char *err, size_t errsize)
{
	/* a bounded, killable first contact in a child; then the library is ours (nvidia/contact.h) */
	if (!gv_nvml_first_contact(err, errsize))
		return NULL;
	nvmlReturn_t rc = gv_nvml_init_quiet();
	if (rc != NVML_SUCCESS) {
		gv_nvml_status st;
		gv_nvml_status_get(&st);
		if (!st.loaded)
			snprintf(err, errsize, "cannot load NVML (%s): %s", st.path[0] ? st.path : "libnvidia-ml.so.1",
				 st.error[0] ? st.error : "not found");
		else
			snprintf(err, errsize, "nvmlInit failed: %s (%s)", gv_nvml_return_name(rc), gv_nvml_error_string(rc));
		return NULL;
	}
	unsigned n = 0;
	rc = gv_nvml_device_count(&n);
	if (rc != NVML_SUCCESS) {
		snprintf(err, errsize, "nvmlDeviceGetCount failed: %s", gv_nvml_return_name(rc));
		return NULL;
	}
	sampler *s = xcalloc(1, sizeof(*s));
	s->owners = owner_cache_new();
	s->allocs = alloc_cache_new();
	if (o)
		s->o = *o;
	if (s->o.health_every <= 0)
		s->o.health_every = 10;
	if (s->o.identity_every <= 0)
		s->o.identity_every = 60;
	if (n > 1024)
		n = 1024; /* a lying library must not make us allocate the world */
	s->ngpus = n;
	s->dev = n ? xcalloc(n, sizeof(*s->dev)) : NULL;
	s->nvl = n ? xcalloc(n, sizeof(*s->nvl)) : NULL;
	for (unsigned i = 0; i < n; i++) {
		gv_nvml_device_clear(&s->dev[i]);
		gv_nvml_device_snapshot(i, GV_NVML_IDENTITY, &s->dev[i]);
	}
	s->gpm = n ? xcalloc(n, sizeof(*s->gpm)) : NULL;
	s->gpm_support = n ? xcalloc(n, sizeof(*s->gpm_support)) : NULL;
	s->gpm_val = n ? xcalloc(n, sizeof(*s->gpm_val)) : NULL;
	for (unsigned i = 0; i < n && !s->o.no_gpm; i++) {
		nvmlReturn_t grc = NVML_SUCCESS;
		s->gpm[i] = gv_gpm_open(i, &s->gpm_support[i], &grc);
		if (s->gpm[i]) /* the first sample: the first take's counters cover the time since */
			gv_gpm_take(s->gpm[i], s->gpm_val[i]);
	}
	gv_nvml_system sys;
	gv_nvml_system_info(&sys);
	if (GV_OK(sys.driver_version))
		str_copy(s->driver_version, sizeof(s->driver_version), sys.driver_version.v);
	if (GV_OK(sys.nvml_version))
		str_copy(s->nvml_version, sizeof(s->nvml_version), sys.nvml_version.v);
	if (GV_OK(sys.cuda_driver_version))
		s->cuda_driver_version = (int)sys.cuda_driver_version.v;
	xid_tally_init(&s->xids, (int)n);

	strbuf src;
	sb_init(&src);
	if (!s->o.no_events && n > 0) {
		nvmlReturn_t erc = NVML_SUCCESS;
		s->events = gv_nvml_events_open(&erc);
		if (s->events && pthread_create(&s->ev_thread, NULL, event_thread, s) == 0) {
			s->ev_running = true;
			sb_add(&src, "Xid: NVML events");
		} else {
			if (s->events)
				gv_nvml_events_close(s->events);
			s->events = NULL;
			sb_addf(&src, "Xid: no NVML events (%s)", gv_nvml_return_name(erc));
		}
	}
	s->kmsg.fd = -1;
	if (!s->o.no_kmsg) {
		kmsg_open(&s->kmsg, s->o.kmsg ? s->o.kmsg : "/dev/kmsg");
		if (s->kmsg.fd >= 0)
			sb_addf(&src, "%skernel log %s", src.len ? ", " : "Xid: ", s->o.kmsg ? s->o.kmsg : "/dev/kmsg");
		else
			sb_addf(&src, "%sno kernel log (%s)", src.len ? ", " : "Xid: ", s->kmsg.error);
	}
	str_copy(s->sources, sizeof(s->sources), src.buf ? src.buf : "");
	sb_free(&src);
	return s;
}

const char *sampler_sources(const sampler *s)
{
	return s->sources;
}

static void user_name(sampler *s, long uid, char *out, size_t size)
{
	for (size_t i = 0; i < s->nusers; i++)
		if (s->users[i].uid == uid) {
			str_copy(out, size, s->users[i].name);
			return;
		}
	/* full: the oldest goes (a machine with more than 32 users at once on its GPUs rereads) */
	size_t i = s->nusers < GV_ARRAY_LEN(s->users) ? s->nusers++ : s->next_user++ % GV_ARRAY_LEN(s->users);
	s->users[i].uid = uid;
	owner_uid_name(uid, s->users[i].name, sizeof(s->users[i].name));
	str_copy(out, size, s->users[i].name);
}

/* Name, command line, user and CPU time of a process from /proc (through --root); empty (n/a)
 * when not visible (another PID namespace, the process ended). */
static void proc_identity(sampler *s, gpu_process *p)
{
	char path[64], *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%u/comm", p->pid);
	if (sysroot_read(path, sizeof(p->name) - 1, &buf, &len, NULL) == 0) {
		while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
			buf[--len] = '\0';
		if (len)
			str_copy(p->name, sizeof(p->name), buf);
		free(buf);
	}
	snprintf(path, sizeof(path), "/proc/%u/cmdline", p->pid);
	buf = NULL;
	if (sysroot_read(path, sizeof(p->cmdline) - 1, &buf, &len, NULL) == 0) {
		while (len && buf[len - 1] == '\0')
			len--;
		for (size_t i = 0; i < len; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		buf[len] = '\0';
		str_copy(p->cmdline, sizeof(p->cmdline), buf);
		free(buf);
	}
	str_sanitize(p->name);
	str_sanitize(p->cmdline);
	long uid = owner_proc_uid((int)p->pid);
	if (uid >= 0)
		user_name(s, uid, p->user, sizeof(p->user));
	p->cpu_seconds = (sval){0, SV_NA};
	snprintf(path, sizeof(path), "/proc/%u/stat", p->pid);
	buf = NULL;
	unsigned long long ticks;
	long hz = sysconf(_SC_CLK_TCK);
	if (sysroot_read(path, 4096, &buf, &len, NULL) == 0 && hz > 0 && proc_stat_ticks(buf, &ticks))
		p->cpu_seconds = sv_ok((double)ticks / (double)hz);
	free(buf);
}

/* MIG mode and its devices, from the take's GV_NVML_MIG. */
static void fill_mig(const gv_nvml_device *d, gpu_sample *g)
{
	g->mig_mode = sv_from_nvml(d->mig_mode, 1);
	g->nmig = 0;
	for (unsigned m = 0; GV_OK(d->mig_mode) && d->mig_mode.v && m < d->mig_count && g->nmig < SNAP_MAX_MIG; m++) {
		const gv_nvml_mig *nm = &d->mig[m];
		snap_mig *sm = &g->mig[g->nmig++];
		memset(sm, 0, sizeof(*sm));
		if (GV_OK(d->mig_uuid[m]))
			str_copy(sm->uuid, sizeof(sm->uuid), d->mig_uuid[m].v);
		if (GV_OK(nm->name))
			gv_nvml_mig_profile(nm->name.v, sm->profile, sizeof(sm->profile));
		str_sanitize(sm->uuid);
		str_sanitize(sm->profile);
		sm->gpu_instance = GV_OK(nm->gpu_instance_id) ? (int)nm->gpu_instance_id.v : -1;
		sm->compute_instance = GV_OK(nm->compute_instance_id) ? (int)nm->compute_instance_id.v : -1;
		sm->mem_used = sv_from_nvml(nm->memory_used, 1);
		sm->mem_total = sv_from_nvml(nm->memory_total, 1);
	}
}

static void fill_sample(sampler *s, unsigned i, gpu_sample *g)
{
	const gv_nvml_device *d = &s->dev[i];
	g->index = (int)i;
	g->minor = GV_OK(d->minor_number) ? (int)d->minor_number.v : -1;
	if (GV_OK(d->name))
		str_copy(g->name, sizeof(g->name), d->name.v);
	if (GV_OK(d->uuid))
		str_copy(g->uuid, sizeof(g->uuid), d->uuid.v);
	if (GV_OK(d->serial)) {
		str_copy(g->serial, sizeof(g->serial), d->serial.v);
		str_sanitize(g->serial);
	}
	if (GV_OK(d->pci_bus_id))
		str_copy(g->pci_bus_id, sizeof(g->pci_bus_id), d->pci_bus_id.v);
	str_sanitize(g->name);
	str_sanitize(g->uuid);
	str_sanitize(g->pci_bus_id);
	if (d->handle_rc != NVML_SUCCESS) {
		g->lost = true;
		snprintf(g->error, sizeof(g->error), "%s", gv_nvml_return_name(d->handle_rc));
		return;
	}
	/* every plain reading from one table (sampler/fields.h) */
	size_t readable = 0, failed = 0;
	nvmlReturn_t first_rc = NVML_SUCCESS;
	for (size_t k = 0; k < n_snap_fields; k++) {
		const snap_field *f = &snap_fields[k];
		if (f->nvml_off == SNAP_NO_NVML)
			continue;
		gv_nv_u64 v;
		memcpy(&v, (const char *)d + f->nvml_off, sizeof(v));
		sval out = sv_from_nvml(v, f->nvml_scale);
		memcpy((char *)g + f->off, &out, sizeof(out));
		readable += out.st == SV_OK;
		if (out.st == SV_ERR && !failed++)
			first_rc = v.rc;
	}
	/* a GPU none of whose readings answers (every call NVML_ERROR_UNKNOWN) is as good as lost:
	 * "healthy" with every field an error would be a lie (check's gpu.unreadable) */
	if (!readable && failed) {
		g->lost = true;
		snprintf(g->error, sizeof(g->error), "every reading failed: %s", gv_nvml_return_name(first_rc));
	}
	if (GV_OK(d->cc_major) && GV_OK(d->cc_minor))
		g->cc = sv_ok((double)d->cc_major.v + (double)(d->cc_minor.v % 10) / 10.0);
	g->gpm_support = (uint8_t)s->gpm_support[i];
	for (int k = 0; k < GV_GPM_N; k++) {
		const gv_nv_dbl *v = &s->gpm_val[i][k];
		if (!s->gpm[i])
			g->gpm[k] = (sval){0, s->gpm_support[i] == GV_GPM_UNKNOWN ? SV_NONE : SV_NA};
		else if (v->st == GV_V_OK)
			g->gpm[k] = sv_ok(v->v < 0 ? 0 : v->v);
		else
			g->gpm[k] = (sval){0, v->st == GV_V_UNSUPPORTED ? SV_NA : v->st == GV_V_ERROR ? SV_ERR : SV_NONE};
	}
	/* a GPU that fell off the bus answers every call with GPU_IS_LOST */
	if (d->temperature_c.st == GV_V_ERROR && d->temperature_c.rc == NVML_ERROR_GPU_IS_LOST) {
		g->lost = true;
		str_copy(g->error, sizeof(g->error), "NVML_ERROR_GPU_IS_LOST");
	}
	fill_mig(d, g);
	if (d->procs_st == GV_V_OK) {
		g->nprocs = sv_ok(d->nprocs);
		g->nproc = d->nprocs < SNAP_MAX_PROCS ? d->nprocs : SNAP_MAX_PROCS;
		for (size_t k = 0; k < g->nproc; k++) {
			gpu_process *p = &g->procs[k];
			const gv_nvml_process *np = &d->procs[k];
			memset(p, 0, sizeof(*p));
			p->pid = np->pid;
			str_copy(p->type, sizeof(p->type), np->graphics ? "graphics" : "compute");
			p->used_bytes = np->used_bytes == NVML_VALUE_NOT_AVAILABLE_ULL ? (sval){0, SV_NA}
										: sv_ok((double)np->used_bytes);
			str_copy(p->name, sizeof(p->name), np->name);
			p->sm_util = np->sm_util >= 0 ? sv_ok(np->sm_util) : (sval){0, SV_NA};
			proc_identity(s, p);
			p->owner = *owner_cache_get(s->owners, (int)p->pid);
		}
	} else {
		g->nprocs = (sval){0, d->procs_st == GV_V_UNSUPPORTED ? SV_NA : SV_ERR};
	}
}

/* Whether a GPU gave any reading at all this time. */
static bool any_reading(const gv_nvml_device *d)
{
	return d->handle_rc == NVML_SUCCESS &&
	       (GV_OK(d->util_gpu) || GV_OK(d->memory_used) || GV_OK(d->temperature_c) || GV_OK(d->power_mw) ||
		GV_OK(d->sm_clock_mhz) || d->procs_st == GV_V_OK);
}

void sampler_want_health(sampler *s)
{
	if (s)
		s->want_health = true;
}

snapshot *sampler_take(sampler *s, char *err, size_t errsize)
{
	s->takes++;
	if (s->kmsg.fd >= 0)
		kmsg_poll(&s->kmsg, on_kmsg_xid, s);
	unsigned what = GV_NVML_DYNAMIC | GV_NVML_MIG;
	if (s->o.processes_every <= 1 || (s->takes - 1) % (unsigned long long)s->o.processes_every == 0)
		what |= GV_NVML_PROCESSES;
	/* PCIe throughput samples the link ~20 ms per direction (measured on an H200): read with the
	 * health counters, not every tick; the last reading stays in the device record between */
	if (s->takes == 1 || s->takes % (unsigned)s->o.health_every == 1 || s->o.health_every == 1 || s->want_health)
		what |= GV_NVML_HEALTH | GV_NVML_PCIE_THROUGHPUT;
	s->want_health = false;
	if (s->takes > 1 && s->takes % (unsigned)s->o.identity_every == 0)
		what |= GV_NVML_IDENTITY;
	/* GPM metrics need 100 ms between samples: the first take after open (watch --once), or a
	 * very short --interval, waits for the rest of it once */
	double wait = 0;
	for (unsigned i = 0; i < s->ngpus; i++) {
		double w = gv_gpm_wait(s->gpm[i]);
		if (w > wait)
			wait = w;
	}
	if (wait > 0)
		sleep_seconds(wait + 0.001);
	unsigned answered = 0;
	for (unsigned i = 0; i < s->ngpus; i++) {
		gv_nvml_device *d = &s->dev[i];
		/* a GPU whose identity never came (it was lost at start) gets another try */
		unsigned w = what | (GV_OK(d->uuid) ? 0 : GV_NVML_IDENTITY);
		gv_nvml_device_snapshot(i, w, d);
		if (s->gpm[i])
			gv_gpm_take(s->gpm[i], s->gpm_val[i]);
		if (any_reading(d))
			answered++;
	}
	if (s->ngpus > 0 && answered == 0) {
		snprintf(err, errsize, "no GPU answered (%u GPUs): %s", s->ngpus,
			 gv_nvml_return_name(s->dev[0].handle_rc != NVML_SUCCESS ? s->dev[0].handle_rc
										 : s->dev[0].temperature_c.rc));
		s->consecutive_failures++;
		return NULL;
	}
	s->consecutive_failures = 0;
	snapshot *snap = snapshot_new((int)s->ngpus);
	snap->time = now_seconds();
	snap->wall_time = (double)time(NULL);
	str_copy(snap->driver_version, sizeof(snap->driver_version), s->driver_version);
	str_copy(snap->nvml_version, sizeof(snap->nvml_version), s->nvml_version);
	snap->cuda_driver_version = s->cuda_driver_version;
	for (unsigned i = 0; i < s->ngpus; i++) {
		fill_sample(s, i, &snap->gpus[i]);
		xid_tally_copy(&s->xids, (int)i, &snap->gpus[i]);
		if (!snap->gpus[i].lost)
			nvlink_sample(i, &s->nvl[i], (what & GV_NVML_HEALTH) != 0, snap->time, &snap->gpus[i]);
	}
	alloc_fill(s->allocs, snap, snap->time);
	return snap;
}

void sampler_close(sampler *s)
{
	if (!s)
		return;
	atomic_store(&s->stop, true);
	if (s->ev_running)
		pthread_join(s->ev_thread, NULL);
	if (s->events)
		gv_nvml_events_close(s->events);
	kmsg_close(&s->kmsg);
	xid_tally_free(&s->xids);
	for (unsigned i = 0; i < s->ngpus; i++)
		gv_gpm_close(s->gpm[i]);
	free(s->gpm);
	free(s->gpm_support);
	free(s->gpm_val);
	free(s->dev);
	owner_cache_free(s->owners);
	alloc_cache_free(s->allocs);
	free(s->nvl);
	free(s);
}
snapshot *sampler_lazy_take(sampler_lazy *l, char *err, size_t errsize)
{
	double now = now_seconds();
	if (!l->s) {
		if (now < l->next_open) {
			snprintf(err, errsize, "NVML not open yet; next try in %.0f s", l->next_open - now);
			return NULL;
		}
		l->s = sampler_open(&l->o, err, errsize);
		if (!l->s) {
			l->next_open = now + 10;
			return NULL;
		}
		l->failures = 0;
	}
	snapshot *snap = sampler_take(l->s, err, errsize);
	if (snap) {
		l->failures = 0;
		return snap;
	}
	if (++l->failures >= 30) {
		sampler_close(l->s);
		l->s = NULL;
		gv_nvml_shutdown();
		l->next_open = now + 1;
	}
	return NULL;
}

void sampler_lazy_close(sampler_lazy *l)
{
	sampler_close(l->s);
	l->s = NULL;
}
