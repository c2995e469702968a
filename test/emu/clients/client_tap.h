/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The TAP every client prints: "ok N - name" or "not ok N - name" per check,
 * "# ..." for a diagnostic, and the plan "1..N" at the end (tap_done(), whose
 * value is the exit status: 1 if a check failed).  Each client is one file,
 * so the counters live here.
 */
#ifndef EMU_CLIENT_TAP_H
#define EMU_CLIENT_TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static unsigned int tap_n, tap_failed;
/* put before every check's name (drm_sdma_client: which GPU) */
static const char *tap_prefix = "";

static inline bool __attribute__((format(printf, 2, 3))) ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %u - %s", cond ? "" : "not ", ++tap_n, tap_prefix);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap_failed++;
	return cond;
}

static inline void __attribute__((format(printf, 1, 2))) diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static inline int tap_done(void)
{
	printf("1..%u\n", tap_n);
	fflush(stdout);
	return tap_failed ? 1 : 0;
}

#endif /* EMU_CLIENT_TAP_H */
