/*
 * The verdict `gpuvet run` prints about the job it followed: one interface, two judges: the job
 * doctor of `watch --pid --diagnose` (what `run` uses) and the utilisation-based one it falls
 * back to.
 *
 * The utilisation verdict: for each GPU the job used, the mean GPU utilisation over the samples
 * in which the job held the GPU; under watch's low-utilisation threshold (health_cfg util_low,
 * 70%) the GPU waited for the job. No verdict below min_seconds of samples on a GPU.
 */
#ifndef GPUVET_EXPLAIN_VERDICT_H
#define GPUVET_EXPLAIN_VERDICT_H
#include "sampler/snapshot.h"
#include "watch/view.h"

typedef struct job_judge {
	void *state;
	void (*sample)(void *state, const snapshot *s, const job *j);
	/* The verdict lines (allocated, "" when none); NULL when the job ran too short to judge. */
	char *(*verdict)(void *state, double min_seconds);
	void (*free)(void *state);
} job_judge;

/* The utilisation-based judge. */
job_judge job_judge_utilisation(void);
/* The job doctor (doctor/doctor.h) over 10 s windows: the verdict most windows gave, with its
 * evidence and fix; the utilisation verdict when the job held a GPU for no whole window. */
job_judge job_judge_doctor(void);
#endif
