/*
 * Which PyTorch build fits this machine, from facts and the knowledge base only (pure: used by the
 * rules for their fix lines and by `gpuvet fix`). The newest release whose variant this driver
 * runs (natively, else through minor-version compatibility) and whose architecture list covers
 * every GPU here (SASS preferred over PTX-only). When nothing fits, the driver that would make the
 * newest covering build run. Nothing is invented: where the KB is silent the answer says unknown.
 */
#ifndef GPUVET_FIXPLAN_H
#define GPUVET_FIXPLAN_H
#include <stdbool.h>
#include <stddef.h>

#include "core/facts.h"
#include "kb/kb.h"
#include "kb/kb_torch.h"

#define FIX_MAX_GPUS 64

typedef struct fix_gpu {
	char name[96];
	char cc[8];   /* "9.0"; "" when unknown */
	int major, minor;
	const char *cc_source; /* "NVML", "CUDA", "torch", "KB (by name)" */
} fix_gpu;

typedef struct fix_machine {
	fix_gpu gpus[FIX_MAX_GPUS];
	int ngpus;
	bool gpu_present;       /* some NVIDIA GPU is visible, even when its capability is unknown */
	char driver[32];        /* "580.159.04"; "" when unknown */
	long long driver_cuda;  /* 13000; 0 when unknown */
	char driver_cuda_text[16]; /* "13.0" */
	char python[16];        /* X.Y of the interpreter pip will install into; "" when unknown/none */
	/* the kernel log says the loaded driver refuses a GPU (kmsg.refused.*, for this driver) */
	char refused[256];      /* one line naming the GPU and the driver; "" when none */
	int refused_legacy;     /* the legacy branch that drives that GPU (470); 0: the driver is too old */
} fix_machine;

/* The GPUs (NVML, else CUDA, else torch's own list) and the driver, from facts. */
void fix_machine_read(const facts *f, const kb *k, fix_machine *m);

typedef struct fix_choice {
	bool found;
	bool cpu_only;          /* no NVIDIA GPU: the CPU wheel */
	torch_build build;
	drv_fit fit;
	bool ptx_only;          /* some GPU is covered only through PTX JIT */
	char torchvision[16];   /* "" when the KB has no pairing */
	bool torchvision_verified;
	char index_url[128];    /* https://download.pytorch.org/whl/cu130 */
	char pip_args[512];     /* "torch==2.11.* torchvision==0.26.* --index-url ..." */
	/* nothing fits this driver: the newest build covering the GPUs and the driver it needs */
	bool need_driver;
	torch_build newest;
	char driver_need[32];
	char why[512];          /* one line on how it was chosen, or why nothing was */
	/* the driver cannot drive a GPU here at all (gpu_arch_driver.csv): the fix is the driver */
	bool driver_cannot;
	char driver_cannot_why[256];
	int driver_branch_max;  /* the GPU's last driver branch (470 for Kepler) when the driver is newer */
	/* no build that fits supports this Python: the Python to install for the chosen build */
	bool need_python;
	char python_need[8];    /* "3.12" */
	char python_range[24];  /* "3.10 to 3.15", of the chosen build */
} fix_choice;

/* Chooses the build. Always fills why. */
void fix_choose(const kb *k, const fix_machine *m, fix_choice *c);
/* A choice of one given build (the pip/conda fields filled), e.g. the build to install after the
 * driver upgrade that fix_choose asked for. */
void fix_choice_of(const kb *k, const torch_build *b, fix_choice *c);

/* How the pip line reaches an interpreter it may install into: the lines to run first (a venv
 * for an externally-managed interpreter, python3-venv when ensurepip is missing, pip itself,
 * the Python the chosen build needs) and the interpreter pip then runs with. */
typedef struct fix_pyenv {
	char python[4608]; /* for the pip line, once prep has run: a shell word (or a refusal comment) */
	strlist prep;     /* to run first, in order */
	char why[512];    /* why prep is there; "" when it is empty */
	bool switched;    /* python is not the interpreter examined (a new venv or env) */
} fix_pyenv;
void fix_pyenv_plan(const facts *f, const fix_choice *c, fix_pyenv *p);
void fix_pyenv_free(fix_pyenv *p);

/* "python -m pip install torch==... --index-url ..." for the interpreter (NULL: "pip install"). */
void fix_pip_line(const fix_choice *c, const char *python, char *out, size_t n);
/* The conda alternative (honest about channels), one line. */
void fix_conda_line(const fix_choice *c, char *out, size_t n);
/* What the KB cannot promise about that line (NULL when nothing). */
const char *fix_conda_note(const fix_choice *c);
/* A Dockerfile on a CUDA base image this driver runs that installs the chosen build. Returns a
 * malloc'd text, NULL when no build was chosen. */
char *fix_dockerfile(const kb *k, const fix_machine *m, const fix_choice *c);
/* The CUDA base image tag ("13.0.2-runtime-ubuntu24.04") for a CUDA version and this driver. */
bool fix_base_image(const kb *k, const fix_machine *m, const char *cuda, char *out, size_t n);
/* cudnn.version() integer to text: 91900 -> "9.19.0", 8902 -> "8.9.2". */
void cudnn_version_text(long long v, char *out, size_t n);
#endif
