/*
 * job_names.c - the names of a job's enumerated settings (job.h): the choices
 * of its options (job.c) and the words of its report (job_report.c).
 *
 * For: the name tables both read, so that neither reads the other's. Not for:
 * what the settings do.
 */
#include <stddef.h>

#include "job.h"

const char *const rw_pattern_names[] = { "read", "write", "randread", "randwrite", NULL };
const char *const iomem_names[] = { "malloc", "mmaphuge", NULL };
