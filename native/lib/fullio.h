/*
 * fullio: write a whole buffer, retrying short writes and EINTR.
 * For: tools that lay out files or dump data. Not for: the measured IO paths, whose every
 * call is timed and must stay one system call per IO.
 */
#ifndef NATIVE_FULLIO_H
#define NATIVE_FULLIO_H

#include <stddef.h>
#include <stdint.h>

/* write(2) until len bytes are written; 0, or -errno (-EIO for a zero-byte write). */
int write_full(int fd, const void *buf, size_t len);

/* pwrite(2) at offset until len bytes are written; 0, or -errno (-EIO for a zero-byte write). */
int pwrite_full(int fd, const void *buf, size_t len, uint64_t offset);

#endif
