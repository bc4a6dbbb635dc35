/* fail: see fail.h. */
#include "fail.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

int runtime_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", program_invocation_short_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}
