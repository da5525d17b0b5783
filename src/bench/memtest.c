/*
 * The memory test (memtest.h): patterns as steps, steps as launches over slices, error records
 * read back after every check.
 */
#include "bench/memtest.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench/mtpattern.h"
#include "bench/watchdog.h"
#include "core/util.h"

/* ---- patterns as steps ---- */

typedef enum { OP_FILL, OP_CHECK, OP_COPY_HALF, OP_CHECK_HALVES } step_op;

typedef struct step {
	step_op op;
	unsigned mode;
	uint64_t a, b;
	bool rewrite, reverse;
	char what[80];
} step;

typedef struct plan {
	step v[MEMTEST_MAX_STEPS];
	int n;
} plan;

static step *add(plan *pl, step_op op, unsigned mode, uint64_t a, uint64_t b)
{
	if (pl->n >= MEMTEST_MAX_STEPS)
		return &pl->v[MEMTEST_MAX_STEPS - 1]; /* every plan fits; this only keeps it in bounds */
	step *s = &pl->v[pl->n++];
	memset(s, 0, sizeof(*s));
	s->op = op;
	s->mode = mode;
	s->a = a;
	s->b = b;
	return s;
}

static void fill(plan *pl, unsigned mode, uint64_t a, uint64_t b, const char *what)
{
	str_copy(add(pl, OP_FILL, mode, a, b)->what, sizeof(pl->v[0].what), what);
}

static void check(plan *pl, unsigned mode, uint64_t a, uint64_t b, bool rewrite, bool reverse, const char *what)
{
	step *s = add(pl, OP_CHECK, mode, a, b);
	s->rewrite = rewrite;
	s->reverse = reverse;
	str_copy(s->what, sizeof(s->what), what);
}

/* memtest86's moving inversions of one pattern: fill; check it and write its complement
 * bottom-up; check the complement and write the pattern top-down; and a last read of what the
 * top-down pass wrote (memtest86 leaves that to its next pattern's writes). */
static void moving_inversions(plan *pl, unsigned mode, uint64_t a, uint64_t b, const char *name)
{
	char what[80];
	uint64_t ca = a, cb = b;
	mt_complement(mode, &ca, &cb);
	snprintf(what, sizeof(what), "write %s", name);
	fill(pl, mode, a, b, what);
	snprintf(what, sizeof(what), "check %s, write its complement, bottom-up", name);
	check(pl, mode, a, b, true, false, what);
	snprintf(what, sizeof(what), "check the complement of %s, write it back, top-down", name);
	check(pl, mode, ca, cb, true, true, what);
	snprintf(what, sizeof(what), "check %s", name);
	check(pl, mode, a, b, false, false, what);
}

static void plan_walking_ones(const memtest_opts *o, plan *pl)
{
	for (int b = 0; b < 64; b += o->long_run ? 1 : 9) {
		char what[80];
		snprintf(what, sizeof(what), "write 1 << %d", b);
		fill(pl, MT_MODE_CONST, 1ull << b, 0, what);
		snprintf(what, sizeof(what), "check 1 << %d", b);
		check(pl, MT_MODE_CONST, 1ull << b, 0, false, false, what);
	}
}

static void plan_own_address(const memtest_opts *o, plan *pl)
{
	(void)o;
	fill(pl, MT_MODE_ADDRESS, 0, 0, "write each word's address");
	check(pl, MT_MODE_ADDRESS, 0, 0, true, false, "check the addresses, write their complements");
	check(pl, MT_MODE_ADDRESS, ~0ull, 0, false, false, "check the complements");
}

static void plan_moving_inv_01(const memtest_opts *o, plan *pl)
{
	(void)o;
	moving_inversions(pl, MT_MODE_CONST, 0, 0, "zeros");
}

static void plan_moving_inv_8bit(const memtest_opts *o, plan *pl)
{
	(void)o;
	for (int k = 0; k < 8; k++) {
		char name[32];
		snprintf(name, sizeof(name), "0x%016" PRIx64, (uint64_t)(0x0101010101010101ull << k));
		moving_inversions(pl, MT_MODE_CONST, 0x0101010101010101ull << k, 0, name);
	}
}

static void plan_moving_inv_random(const memtest_opts *o, plan *pl)
{
	moving_inversions(pl, MT_MODE_RANDOM, o->seed, 0, "the random pattern");
}

static void plan_block_move(const memtest_opts *o, plan *pl)
{
	fill(pl, MT_MODE_RANDOM, o->seed ^ 0xB10C, 0, "write a random pattern");
	add(pl, OP_COPY_HALF, MT_MODE_RANDOM, 0, 0);
	str_copy(pl->v[pl->n - 1].what, sizeof(pl->v[0].what), "copy each slice's first half onto its second");
	step *s = add(pl, OP_CHECK_HALVES, MT_MODE_RANDOM, o->seed ^ 0xB10C, 0);
	str_copy(s->what, sizeof(s->what), "check both halves against the first half's pattern");
}

static const struct pattern_row {
	memtest_pattern_info info;
	void (*plan)(const memtest_opts *o, plan *pl);
} patterns[MEMTEST_N_PATTERNS] = {
#define MEMTEST_ROW_(ID, name, origin, description, fn) {{name, origin, description}, fn},
	MEMTEST_PATTERNS(MEMTEST_ROW_)
#undef MEMTEST_ROW_
};

const memtest_pattern_info *memtest_pattern_get(memtest_pattern p)
{
	return p >= 0 && p < MEMTEST_N_PATTERNS ? &patterns[p].info : NULL;
}

bool memtest_pattern_parse(const char *name, memtest_pattern *out)
{
	for (int i = 0; name && i < MEMTEST_N_PATTERNS; i++)
		if (strcasecmp(name, patterns[i].info.name) == 0) {
			*out = (memtest_pattern)i;
			return true;
		}
	return false;
}

/* ---- memory ---- */

/* an error record: count, first index (all ones: none claimed yet), value read, expected */
#define REC_WORDS 4
#define REC_BYTES (REC_WORDS * 8)
/* two records a slice: the whole slice (or its first half) and its second half */
#define RECS (2 * MEMTEST_MAX_SLICES)

static void rec_clear(uint64_t *rec, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		rec[i * REC_WORDS] = 0;
		rec[i * REC_WORDS + 1] = ~0ull;
		rec[i * REC_WORDS + 2] = rec[i * REC_WORDS + 3] = 0;
	}
}

void memtest_free(gpu_session *s, memtest_mem *m)
{
	for (size_t i = 0; i < m->nchunks; i++)
		s->cu->cuMemFree(m->chunk[i].base);
	if (m->err)
		s->cu->cuMemFree(m->err);
	free(m->chunk);
	free(m->slice);
	memset(m, 0, sizeof(*m));
}

static void add_slices(memtest_mem *m, unsigned c, uint64_t slice_bytes)
{
	const memtest_chunk *k = &m->chunk[c];
	for (uint64_t off = 0; off < k->bytes && m->nslices < MEMTEST_MAX_SLICES; off += slice_bytes) {
		uint64_t len = k->bytes - off < slice_bytes ? k->bytes - off : slice_bytes;
		m->slice[m->nslices++] = (memtest_slice){k->base + off, len / 8, c};
	}
}

bool memtest_alloc(gpu_session *s, double fraction, uint64_t max_bytes, uint64_t slice_bytes, memtest_mem *m, char *why,
		   size_t n)
{
	const gv_cuda_api *cu = s->cu;
	memset(m, 0, sizeof(*m));
	size_t free_b = 0, total_b = 0;
	CUresult rc = cu->cuMemGetInfo(&free_b, &total_b);
	if (rc != CUDA_SUCCESS) {
		gpu_errtext(s, "cuMemGetInfo", rc, why, n);
		return false;
	}
	m->free_before = free_b;
	m->total = total_b;
	if (!slice_bytes || slice_bytes > MEMTEST_SLICE_MAX)
		slice_bytes = MEMTEST_SLICE_MAX;
	slice_bytes &= ~(uint64_t)15; /* even words: a slice's halves are whole words */
	if (slice_bytes < 16)
		slice_bytes = 16;
	/* the error records first: they must not be what the chunks left no room for */
	if ((rc = cu->cuMemAlloc(&m->err, RECS * REC_BYTES)) != CUDA_SUCCESS) {
		gpu_errtext(s, "cuMemAlloc of the memory test's error records", rc, why, n);
		return false;
	}
	uint64_t *rec = xmalloc(RECS * REC_BYTES);
	rec_clear(rec, RECS);
	rc = cu->cuMemcpyHtoD(m->err, rec, RECS * REC_BYTES);
	/* on the legacy stream, which the kernels' (non-blocking) stream does not wait for */
	if (rc == CUDA_SUCCESS && cu->cuCtxSynchronize)
		rc = cu->cuCtxSynchronize();
	free(rec);
	if (rc != CUDA_SUCCESS) {
		gpu_errtext(s, "cuMemcpyHtoD of the memory test's error records", rc, why, n);
		memtest_free(s, m);
		return false;
	}
	double frac = fraction > 0 && fraction <= 1 ? fraction : 0.95;
	uint64_t want = (uint64_t)((double)free_b * frac);
	want = want > RECS * REC_BYTES ? want - RECS * REC_BYTES : 0;
	if (max_bytes && want > max_bytes)
		want = max_bytes;
	size_t cap = 16;
	m->chunk = xcalloc(cap, sizeof(*m->chunk));
	m->slice = xcalloc(MEMTEST_MAX_SLICES, sizeof(*m->slice));
	uint64_t size = MEMTEST_CHUNK_MAX;
	CUresult last = CUDA_SUCCESS;
	while (m->bytes < want && m->nslices < MEMTEST_MAX_SLICES) {
		uint64_t left = want - m->bytes;
		uint64_t try = size < left ? size : left;
		try -= try % MEMTEST_CHUNK_MIN;
		if (try < MEMTEST_CHUNK_MIN)
			break;
		CUdeviceptr p = 0;
		rc = cu->cuMemAlloc(&p, try);
		if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
			/* another allocation (or fragmentation) took part of what cuMemGetInfo said */
			last = rc;
			size = try / 2;
			continue;
		}
		if (rc != CUDA_SUCCESS) {
			gpu_errtext(s, "cuMemAlloc of the memory under test", rc, why, n);
			memtest_free(s, m);
			return false;
		}
		if (m->nchunks == cap) {
			cap *= 2;
			m->chunk = xrealloc(m->chunk, cap * sizeof(*m->chunk));
		}
		m->chunk[m->nchunks] = (memtest_chunk){p, try};
		m->bytes += try;
		add_slices(m, (unsigned)m->nchunks, slice_bytes);
		m->nchunks++;
	}
	if (m->nchunks == 0) {
		snprintf(why, n, "no device memory to test: %llu MiB free, %s", (unsigned long long)(free_b >> 20),
			 last ? "every allocation of 2 MiB or more failed (CUDA_ERROR_OUT_OF_MEMORY)"
			      : "less than 2 MiB asked");
		memtest_free(s, m);
		return false;
	}
	return true;
}

/* ---- running the steps ---- */

typedef struct runner {
	gpu_session *s;
	gpu_dev *d;
	memtest_mem *m;
	const memtest_opts *o;
	memtest_result *r;
	CUstream st;
	CUevent e0, e1;
	unsigned grid_fill, grid_check, grid_cmp;
	double budget_s;  /* queued work before a wait */
	double rate;      /* bytes a second, measured at each wait */
	uint64_t queued;  /* bytes since the last wait */
	double queued_at; /* when the first of them was queued */
	uint64_t *rec;    /* the host copy of the error records */
} runner;

static const char *errtext(runner *x, const char *what, CUresult rc)
{
	return gpu_errtext(x->s, what, rc, x->r->error, sizeof(x->r->error));
}

static bool stop_now(const runner *x)
{
	return (x->o->stop && *x->o->stop) || watchdog_expired();
}

static CUresult wait_stream(runner *x)
{
	CUresult rc = x->s->cu->cuStreamSynchronize(x->st);
	double dt = now_seconds() - x->queued_at;
	if (rc == CUDA_SUCCESS && x->queued && dt > 1e-3)
		x->rate = (double)x->queued / dt;
	x->queued = 0;
	return rc;
}

/* After queuing `bytes` of traffic: waits once about budget_s of work is in the queue, so that a
 * stop (checked before every launch) takes effect within that. */
static CUresult queued(runner *x, uint64_t bytes)
{
	if (!x->queued)
		x->queued_at = now_seconds();
	x->queued += bytes;
	x->r->bytes += bytes;
	if ((double)x->queued / x->rate > x->budget_s)
		return wait_stream(x);
	return CUDA_SUCCESS;
}

uint64_t memtest_slice_seed(CUdeviceptr base, uint64_t a)
{
	uint64_t z = (uint64_t)base + 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return a ^ z ^ (z >> 31);
}

static uint64_t slice_a(const step *s, CUdeviceptr base, uint64_t a)
{
	return s->mode == MT_MODE_RANDOM ? memtest_slice_seed(base, a) : a;
}

static CUresult launch_fill(runner *x, CUdeviceptr p, uint64_t words, const step *s, uint64_t a)
{
	unsigned mode = s->mode;
	uint64_t b = s->b;
	void *args[] = {&p, &words, &mode, &a, &b};
	return gpu_launch(x->s, x->d, K_MT_FILL, x->grid_fill, 256, x->st, args);
}

static CUresult launch_check(runner *x, CUdeviceptr p, uint64_t words, const step *s, uint64_t a, size_t rec)
{
	unsigned mode = s->mode, rewrite = s->rewrite, reverse = s->reverse;
	uint64_t b = s->b;
	CUdeviceptr err = x->m->err + rec * REC_BYTES;
	void *args[] = {&p, &words, &mode, &a, &b, &err, &rewrite, &reverse};
	return gpu_launch(x->s, x->d, K_MT_CHECK, x->grid_check, 256, x->st, args);
}

/* One slice's part of a step; its bytes read + written. */
static CUresult slice_op(runner *x, const step *s, size_t i, uint64_t *bytes)
{
	const memtest_slice *sl = &x->m->slice[i];
	uint64_t a = slice_a(s, sl->base, s->a), half = sl->words / 2;
	CUresult rc;
	switch (s->op) {
	case OP_FILL: *bytes = sl->words * 8; return launch_fill(x, sl->base, sl->words, s, a);
	case OP_CHECK:
		*bytes = sl->words * 8 * (s->rewrite ? 2 : 1);
		return launch_check(x, sl->base, sl->words, s, a, 2 * i);
	case OP_COPY_HALF:
		*bytes = half * 16;
		return x->s->cu->cuMemcpyDtoDAsync(sl->base + half * 8, sl->base, half * 8, x->st);
	case OP_CHECK_HALVES:
		*bytes = half * 16;
		rc = launch_check(x, sl->base, half, s, a, 2 * i);
		return rc ? rc : launch_check(x, sl->base + half * 8, half, s, a, 2 * i + 1);
	}
	return CUDA_ERROR_INVALID_VALUE;
}

/* The base of record j's launch (the slice, or its second half). */
static CUdeviceptr rec_base(const memtest_mem *m, size_t j)
{
	const memtest_slice *sl = &m->slice[j / 2];
	return sl->base + (j % 2 ? sl->words / 2 * 8 : 0);
}

/* After a check step: the records back, the step's errors counted, the first error of the run
 * kept, the records cleared again when any was written. */
static bool collect(runner *x, int index, memtest_step_result *sr)
{
	const gv_cuda_api *cu = x->s->cu;
	size_t nrec = 2 * x->m->nslices;
	CUresult rc = cu->cuMemcpyDtoHAsync(x->rec, x->m->err, nrec * REC_BYTES, x->st);
	if (rc == CUDA_SUCCESS)
		rc = cu->cuStreamSynchronize(x->st);
	if (rc != CUDA_SUCCESS) {
		errtext(x, "cuMemcpyDtoHAsync of the error records", rc);
		return false;
	}
	bool dirty = false;
	for (size_t j = 0; j < nrec; j++) {
		const uint64_t *e = &x->rec[j * REC_WORDS];
		if (!e[0])
			continue;
		dirty = true;
		sr->errors += e[0];
		if (x->r->step == 0 && e[1] != ~0ull) {
			x->r->step = index + 1;
			x->r->addr = rec_base(x->m, j) + e[1] * 8;
			x->r->read = e[2];
			x->r->expected = e[3];
			x->r->xor_bits = e[2] ^ e[3];
		}
	}
	x->r->errors += sr->errors;
	if (dirty) {
		rec_clear(x->rec, nrec);
		if ((rc = cu->cuMemcpyHtoDAsync(x->m->err, x->rec, nrec * REC_BYTES, x->st)) != CUDA_SUCCESS ||
		    (rc = cu->cuStreamSynchronize(x->st)) != CUDA_SUCCESS) {
			errtext(x, "cuMemcpyHtoDAsync clearing the error records", rc);
			return false;
		}
	}
	return true;
}

static bool run_step(runner *x, const step *s, int index)
{
	const gv_cuda_api *cu = x->s->cu;
	memtest_step_result *sr = &x->r->steps[x->r->nsteps++];
	memset(sr, 0, sizeof(*sr));
	str_copy(sr->what, sizeof(sr->what), s->what);
	CUresult rc = cu->cuEventRecord(x->e0, x->st);
	if (rc != CUDA_SUCCESS) {
		errtext(x, "cuEventRecord", rc);
		return false;
	}
	size_t n = x->m->nslices;
	for (size_t k = 0; k < n; k++) {
		if (stop_now(x)) {
			x->r->stopped = true;
			break;
		}
		size_t i = s->reverse ? n - 1 - k : k;
		uint64_t bytes = 0;
		if ((rc = slice_op(x, s, i, &bytes)) != CUDA_SUCCESS) {
			errtext(x,
				s->op == OP_COPY_HALF ? "cuMemcpyDtoDAsync (block move)"
						      : "the memory test kernel (cuLaunchKernel)",
				rc);
			return false;
		}
		sr->bytes += bytes;
		if ((rc = queued(x, bytes)) != CUDA_SUCCESS) {
			errtext(x, "the memory test kernels (cuStreamSynchronize)", rc);
			return false;
		}
	}
	float ms = 0;
	if ((rc = cu->cuEventRecord(x->e1, x->st)) != CUDA_SUCCESS || (rc = wait_stream(x)) != CUDA_SUCCESS ||
	    (rc = cu->cuEventElapsedTime(&ms, x->e0, x->e1)) != CUDA_SUCCESS) {
		errtext(x, "the memory test kernels (waiting for the step's end)", rc);
		return false;
	}
	sr->gpu_s = ms / 1000.0;
	x->r->gpu_seconds += sr->gpu_s;
	if (s->op == OP_CHECK || s->op == OP_CHECK_HALVES)
		return collect(x, index, sr);
	return true;
}

static uint64_t mix64(uint64_t z)
{
	z += 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* The word at byte `offset` of the tested memory (chunks in order): its address, or 0 when the
 * offset is past the end. Block move checks a slice's two halves, so a word past the second
 * half (none: slices hold an even number of words) would go unseen. */
static CUdeviceptr word_at(const memtest_mem *m, uint64_t offset)
{
	offset &= ~(uint64_t)7;
	for (size_t i = 0; i < m->nslices; i++) {
		uint64_t len = m->slice[i].words * 8;
		if (offset < len)
			return m->slice[i].base + offset;
		offset -= len;
	}
	return 0;
}

static bool inject(runner *x, int step_index)
{
	const gv_cuda_api *cu = x->s->cu;
	const memtest_opts *o = x->o;
	memtest_result *r = x->r;
	uint64_t words = 0;
	for (size_t i = 0; i < x->m->nslices; i++)
		words += x->m->slice[i].words;
	uint64_t offset = o->inject_offset == MEMTEST_DERIVE ? mix64(o->seed ^ 0x1A7EC7) % words * 8 : o->inject_offset;
	int bit = o->inject_bit >= 0 && o->inject_bit < 64 ? o->inject_bit : (int)(mix64(o->seed ^ 0xB17) % 64);
	CUdeviceptr at = word_at(x->m, offset);
	if (!at) {
		snprintf(r->error, sizeof(r->error), "the injection offset %llu is past the tested memory (%llu bytes)",
			 (unsigned long long)offset, (unsigned long long)(words * 8));
		return false;
	}
	uint64_t w = 0;
	CUresult rc;
	/* on the test's stream: after the fill, before the check */
	if ((rc = cu->cuMemcpyDtoHAsync(&w, at, 8, x->st)) != CUDA_SUCCESS ||
	    (rc = cu->cuStreamSynchronize(x->st)) != CUDA_SUCCESS) {
		errtext(x, "cuMemcpyDtoHAsync of the word to inject into", rc);
		return false;
	}
	uint64_t now = w ^ (1ull << bit);
	if ((rc = cu->cuMemcpyHtoDAsync(at, &now, 8, x->st)) != CUDA_SUCCESS ||
	    (rc = cu->cuStreamSynchronize(x->st)) != CUDA_SUCCESS) {
		errtext(x, "cuMemcpyHtoDAsync of the injected word", rc);
		return false;
	}
	r->injected = true;
	r->inject_addr = at;
	r->inject_bit = bit;
	r->inject_step = step_index + 1;
	r->inject_was = w;
	r->inject_now = now;
	return true;
}

bool memtest_run(gpu_session *s, gpu_dev *d, memtest_mem *m, memtest_pattern p, const memtest_opts *o,
		 memtest_result *r)
{
	const gv_cuda_api *cu = s->cu;
	static const memtest_opts defaults = {.inject_offset = MEMTEST_DERIVE, .inject_bit = -1};
	if (!o)
		o = &defaults;
	memset(r, 0, sizeof(*r));
	r->pattern = p;
	const memtest_pattern_info *info = memtest_pattern_get(p);
	if (!info) {
		snprintf(r->error, sizeof(r->error), "no memory test pattern %d", (int)p);
		return false;
	}
	if (!m->nslices || !m->err) {
		snprintf(r->error, sizeof(r->error), "no device memory to test (memtest_alloc)");
		return false;
	}
	if (!cu->cuMemcpyDtoDAsync || !cu->cuMemcpyDtoHAsync || !cu->cuMemcpyHtoDAsync) {
		snprintf(r->error, sizeof(r->error), "this libcuda lacks the asynchronous copies (cuMemcpy*Async_v2)");
		return false;
	}
	plan *pl = xcalloc(1, sizeof(*pl));
	patterns[p].plan(o, pl);
	r->planned_steps = pl->n;
	runner x = {s, d, m, o, r, o->stream ? o->stream : d->stream, NULL, NULL, 0, 0, 0, 0, 0, 0, 0, NULL};
	unsigned maxt = d->max_threads_per_sm > 0 ? (unsigned)d->max_threads_per_sm : 2048;
	x.grid_fill = gpu_grid(d, maxt / 256);
	x.grid_check = gpu_grid(d, maxt / 256 < 4 ? maxt / 256 : 4); /* gv_mt_check: 4 blocks an SM */
	x.budget_s = o->launch_s > 0 ? o->launch_s : 0.25;
	x.rate = 100e9; /* a guess until the first wait measures it */
	x.rec = xmalloc(RECS * REC_BYTES);
	bool ok = true;
	CUresult rc;
	if ((rc = cu->cuEventCreate(&x.e0, CU_EVENT_DEFAULT)) != CUDA_SUCCESS ||
	    (rc = cu->cuEventCreate(&x.e1, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
		errtext(&x, "cuEventCreate", rc);
		ok = false;
	}
	bool armed = false;
	if (ok && o->deadline_s > 0) {
		char what[96];
		snprintf(what, sizeof(what), "memory test %s", info->name);
		watchdog_start();
		watchdog_arm(what, o->deadline_s);
		armed = true;
	}
	double t0 = now_seconds();
	bool filled = false;
	for (int i = 0; ok && i < pl->n; i++) {
		const step *st = &pl->v[i];
		if (stop_now(&x)) {
			r->stopped = true;
			break;
		}
		bool is_check = st->op == OP_CHECK || st->op == OP_CHECK_HALVES;
		if (o->inject && !r->injected && filled && is_check)
			ok = inject(&x, i);
		if (ok)
			ok = run_step(&x, st, i);
		filled = filled || st->op == OP_FILL;
		if (r->stopped)
			break;
	}
	if (ok && (rc = cu->cuStreamSynchronize(x.st)) != CUDA_SUCCESS) {
		errtext(&x, "the memory test kernels (cuStreamSynchronize)", rc);
		ok = false;
	}
	r->seconds = now_seconds() - t0;
	if (armed)
		watchdog_disarm();
	/* destroyed on a broken context too: the call then only fails, and the events are freed */
	if (cu->cuEventDestroy) {
		if (x.e0)
			cu->cuEventDestroy(x.e0);
		if (x.e1)
			cu->cuEventDestroy(x.e1);
	}
	free(x.rec);
	free(pl);
	return ok;
}

void memtest_bits_text(uint64_t xor_bits, char *buf, size_t n)
{
	int count = __builtin_popcountll(xor_bits);
	if (count == 0) {
		snprintf(buf, n, "no bit");
		return;
	}
	if (count > 4) {
		snprintf(buf, n, "%d bits", count);
		return;
	}
	size_t len = (size_t)snprintf(buf, n, "bit%s ", count > 1 ? "s" : "");
	for (int b = 0, k = 0; b < 64 && len < n; b++)
		if (xor_bits >> b & 1)
			len += (size_t)snprintf(buf + len, n - len, "%s%d", k++ ? ", " : "", b);
}

void memtest_describe(const memtest_result *r, char *buf, size_t n)
{
	const memtest_pattern_info *info = memtest_pattern_get(r->pattern);
	const char *name = info ? info->name : "memory test";
	if (r->errors) {
		char bits[64];
		memtest_bits_text(r->xor_bits, bits, sizeof(bits));
		snprintf(buf, n, "%s pass %d: %llu error%s at 0x%llx: read 0x%016llx expected 0x%016llx (%s)", name,
			 r->step, (unsigned long long)r->errors, r->errors == 1 ? "" : "s", (unsigned long long)r->addr,
			 (unsigned long long)r->read, (unsigned long long)r->expected, bits);
		return;
	}
	double gbs = r->gpu_seconds > 0 ? (double)r->bytes / r->gpu_seconds / 1e9 : 0;
	snprintf(buf, n, "%s: no error in %d of %d pass%s (%.1f GB read and written, %.0f GB/s)%s", name, r->nsteps,
		 r->planned_steps, r->planned_steps == 1 ? "" : "es", (double)r->bytes / 1e9, gbs,
		 r->stopped ? ", stopped before the end" : "");
}

/* ---- comparing buffers ---- */

bool memtest_cmp_init(gpu_session *s, memtest_cmp *c, char *why, size_t n)
{
	memset(c, 0, sizeof(*c));
	uint64_t rec[REC_WORDS];
	rec_clear(rec, 1);
	CUresult rc = s->cu->cuMemAlloc(&c->err, sizeof(rec));
	if (rc == CUDA_SUCCESS)
		rc = s->cu->cuMemcpyHtoD(c->err, rec, sizeof(rec));
	/* on the legacy stream, which the compares' stream may not wait for */
	if (rc == CUDA_SUCCESS && s->cu->cuCtxSynchronize)
		rc = s->cu->cuCtxSynchronize();
	if (rc != CUDA_SUCCESS) {
		gpu_errtext(s, "setting up the compare's record (cuMemAlloc, cuMemcpyHtoD)", rc, why, n);
		memtest_cmp_free(s, c);
		return false;
	}
	return true;
}

void memtest_cmp_free(gpu_session *s, memtest_cmp *c)
{
	if (c->err)
		s->cu->cuMemFree(c->err);
	memset(c, 0, sizeof(*c));
}

CUresult memtest_cmp_launch(gpu_session *s, gpu_dev *d, memtest_cmp *c, CUdeviceptr x, CUdeviceptr y, uint64_t n,
			    CUstream stream)
{
	unsigned maxt = d->max_threads_per_sm > 0 ? (unsigned)d->max_threads_per_sm : 2048;
	void *args[] = {&x, &y, &n, &c->err};
	CUresult rc = gpu_launch(s, d, K_CMP_B32, gpu_grid(d, maxt / 256), 256, stream, args);
	if (rc == CUDA_SUCCESS)
		c->launches++;
	return rc;
}

CUresult memtest_cmp_read(gpu_session *s, gpu_dev *d, memtest_cmp *c, CUstream stream, memtest_cmp_result *out)
{
	uint64_t rec[REC_WORDS];
	CUstream st = stream ? stream : d->stream;
	memset(out, 0, sizeof(*out));
	CUresult rc = s->cu->cuMemcpyDtoHAsync(rec, c->err, sizeof(rec), st);
	if (rc == CUDA_SUCCESS)
		rc = s->cu->cuStreamSynchronize(st);
	if (rc != CUDA_SUCCESS)
		return rc;
	out->mismatches = rec[0];
	out->launches = c->launches;
	out->any = rec[1] != ~0ull;
	out->index = out->any ? rec[1] : 0;
	out->x = (uint32_t)rec[2];
	out->y = (uint32_t)rec[3];
	return CUDA_SUCCESS;
}

CUresult memtest_cmp_reset(gpu_session *s, gpu_dev *d, memtest_cmp *c, CUstream stream)
{
	uint64_t rec[REC_WORDS];
	rec_clear(rec, 1);
	/* from pageable memory the copy is staged before it returns, so rec may go out of scope */
	CUresult rc = s->cu->cuMemcpyHtoDAsync(c->err, rec, sizeof(rec), stream ? stream : d->stream);
	if (rc == CUDA_SUCCESS)
		c->launches = 0;
	return rc;
}

bool memtest_compare(gpu_session *s, gpu_dev *d, CUdeviceptr x, CUdeviceptr y, uint64_t n, memtest_cmp_result *out,
		     char *why, size_t why_n)
{
	memtest_cmp c;
	if (!memtest_cmp_init(s, &c, why, why_n))
		return false;
	CUresult rc = memtest_cmp_launch(s, d, &c, x, y, n, NULL);
	if (rc == CUDA_SUCCESS)
		rc = memtest_cmp_read(s, d, &c, NULL, out);
	if (rc != CUDA_SUCCESS)
		gpu_errtext(s, "the buffer compare (gv_cmp_b32)", rc, why, why_n);
	memtest_cmp_free(s, &c);
	return rc == CUDA_SUCCESS;
}
