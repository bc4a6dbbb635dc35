/*
 * fail: the one-line runtime error every tool prints, "<program>: <message>" on stderr.
 * For: failures while running (exit status 1). Not for: bad usage, which opts.h reports with
 * the usage line (exit status 2).
 */
#ifndef NATIVE_FAIL_H
#define NATIVE_FAIL_H

/* Prints "<program>: <message>\n" (the program is argv[0]'s base name); returns 1. */
int runtime_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
