/*
 * check.h - the smallest possible test harness, kernel-selftest style.
 *
 * For: C unit tests that are plain programs. CHECK prints one line per check
 * ("ok N - what" or "not ok N - what") and exits 1 at the first failure, so
 * a test's last line says what broke. Not for: fixtures, skipping or
 * counting failures.
 */
#ifndef NATIVE_TESTS_CHECK_H
#define NATIVE_TESTS_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static int checks_done;

__attribute__((format(printf, 5, 6)))
static inline void check_report(bool ok, const char *file, int line, const char *cond,
				const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", ok ? "ok" : "not ok", ++checks_done);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (!ok) {
		printf("  [%s:%d: %s]\n", file, line, cond);
		exit(1);
	}
	putchar('\n');
	fflush(stdout);
}

#define CHECK(cond, ...) check_report(!!(cond), __FILE__, __LINE__, #cond, __VA_ARGS__)

#endif
