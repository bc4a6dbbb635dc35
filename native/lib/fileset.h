/*
 * fileset.h - a set of files read as one: named, made, opened, measured, removed.
 *
 * For: tools that stream through many files (cacheflood, after seed 004's
 * reader of C:\Windows\Installer). A set is either files the user named or a
 * "made" set: DIR/flood-00000.dat, flood-00001.dat, ... holding set_size
 * bytes of seeded pseudo-random data in files of file_size bytes (the last
 * one may be shorter). Making reuses every file that already has the right
 * size and (re)writes the others; files it writes are fsync'ed and then
 * dropped from the page cache, so a new set starts as cold as one that has
 * sat on disk. Opening opens every file once, read-only, and keeps the
 * descriptors until fileset_close (raising RLIMIT_NOFILE to its hard limit
 * if the set needs it).
 * Not for: directories of arbitrary files (name them), writing during a run,
 * or files that change size while open (reads past the new end fail).
 *
 * Errors: functions return 0 or -errno and leave a one-line reason naming
 * the file in set->error.
 */
#ifndef NATIVE_FILESET_H
#define NATIVE_FILESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pagecache.h"

#define FILESET_NAME_FORMAT "flood-%05zu.dat"

struct fileset_file {
	char *path;
	int fd;              /* -1 until opened */
	uint64_t size;       /* known once made or opened */
	bool created;        /* written by fileset_make (not reused) */
};

struct fileset {
	size_t count;
	struct fileset_file *files;
	uint64_t bytes;      /* sum of the sizes */
	char *dir;           /* a made set's directory; NULL for named files */
	bool made_dir;       /* fileset_make created dir */
	size_t created, reused;
	char error[512];
};

/* A set of the named files (copied); nothing is opened yet. */
int fileset_of_paths(struct fileset *s, char *const *paths, size_t count);

/* Plans a made set in dir (set_size > 0, file_size > 0); nothing is written yet. */
int fileset_plan(struct fileset *s, const char *dir, uint64_t set_size, uint64_t file_size);

/* Makes a planned set: creates dir if missing, reuses or writes each file. */
int fileset_make(struct fileset *s, uint64_t seed);

/* Opens every file read-only and records its size. */
int fileset_open(struct fileset *s);

/* Residency of the whole set (its sum; hidden if any file is) in *total; the set must be open. */
int fileset_residency(struct fileset *s, struct residency *total);

/* Drops the set's clean pages from the page cache; the set must be open. */
int fileset_evict(struct fileset *s);

/* Closes every open descriptor (safe to call twice). */
void fileset_close(struct fileset *s);

/* Removes a made set's files, and dir if fileset_make created it. */
int fileset_remove(struct fileset *s);

void fileset_free(struct fileset *s);

#endif
