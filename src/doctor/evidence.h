/*
 * The job doctor's evidence over one window (the live pipeline's, doctor/live.c): each of the
 * job's GPUs summed (sampler/summary.h), the CPU time of every thread of the job at the window's
 * ends and the cores left idle (sampler/jobcpu.h), and, in the samples where the job's GPUs
 * idle, what its threads wait on (sampler/waits.h): the main threads of all its processes, every
 * thread of those holding a GPU.
 */
#ifndef GPUVET_DOCTOR_EVIDENCE_H
#define GPUVET_DOCTOR_EVIDENCE_H
#include "doctor/doctor.h"

typedef struct doctor_acc doctor_acc;
/* Starts a window for the job (reads every thread's CPU time now). */
doctor_acc *doctor_acc_new(const job *j);
/* Adds one snapshot: the job's GPUs (those its processes hold) and, where they idle, its waits. */
void doctor_acc_add(doctor_acc *a, const struct snapshot *s, job *j);
/* Ends the window (CPU time again) and fills the evidence. */
void doctor_acc_finish(doctor_acc *a, const job *j, doctor_evidence *ev);
void doctor_acc_free(doctor_acc *a);
#endif
