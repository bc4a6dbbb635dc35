/*
 * warn.c - the daemon's one-line warnings (see warn.h).
 */
#include "warn.h"

#include <stdarg.h>
#include <stdio.h>

void warn(const char *fmt, ...)
{
	va_list ap;

	fputs("simdisk: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
