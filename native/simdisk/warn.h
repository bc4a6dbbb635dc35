/*
 * warn.h - the daemon's one-line warnings: "simdisk: warning: <message>" on stderr.
 * For: a degraded but working set-up (no O_DIRECT, no mlock, no nice -20, an unwritable
 * --pidfile or --ready) that the daemon carries on with.
 * Not for: errors that stop it (fail.h's runtime_error, opts.h's usage errors).
 */
#ifndef SIMDISK_WARN_H
#define SIMDISK_WARN_H

__attribute__((format(printf, 1, 2)))
void warn(const char *fmt, ...);

#endif
