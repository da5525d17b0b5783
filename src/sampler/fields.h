/*
 * The NVML readings of a GPU sample, declared once: which gv_nvml_device field the sampler
 * converts (and by what factor), the key in watch's JSON, gpuvet's Prometheus family, the DCGM
 * exporter's field of the same meaning with its unit, and the metric name of watch --record.
 * The sampler (fill_sample), serve (metrics.c), watch (view_json, --record) and the check's
 * probe (probes/nvml.c: the fact key and the NVML call it names as source) all walk this table; a reading with labels of its own (clock reasons, ECC by type and scope, PCIe by
 * direction, retired pages and remapped rows by cause) keeps a renderer of its own, and the GPM
 * counters have their table in nvidia/gpm_fields.h.
 */
#ifndef GPUVET_SAMPLER_FIELDS_H
#define GPUVET_SAMPLER_FIELDS_H
#include <stddef.h>
#include <stdint.h>

#define SNAP_NO_NVML SIZE_MAX

typedef struct snap_field {
	size_t off;        /* offsetof(gpu_sample, FIELD): an sval */
	size_t nvml_off;   /* offsetof(gv_nvml_device, FIELD): a gv_nv_u64; SNAP_NO_NVML when not from one */
	double nvml_scale; /* NVML's unit to the sample's (mW to W: 0.001) */
	const char *json;  /* watch --json key; NULL: rendered elsewhere */
	double json_scale;
	const char *prom;  /* gpuvet's family; NULL: none or rendered elsewhere */
	char prom_type;    /* 'g' gauge, 'c' counter */
	double prom_scale; /* to base units */
	const char *prom_help;
	const char *dcgm;  /* dcgm-exporter's field (--dcgm-compat); NULL: none */
	char dcgm_type;    /* 'g' gauge, 'c' counter (as dcgm-exporter types it, although DCGM's names carry no _total) */
	double dcgm_scale; /* to DCGM's unit */
	const char *dcgm_help;
	const char *record; /* watch --record metric; NULL: not recorded */
	/* gpuvet check's fact (probes/nvml.c): key (nvml.gpu.N. + fact), kind, the NVML call named
	 * as its source; NULL: the probe writes it in a form of its own or not at all */
	const char *fact;
	char fact_kind;     /* 'i' integer as NVML gives it, 'b' boolean, 'w' milliwatts as watts */
	const char *call;
} snap_field;

extern const snap_field snap_fields[];
extern const size_t n_snap_fields;
#endif
