/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A tiny TAP producer that works across fork(): the test counter lives in a
 * MAP_SHARED page, and every line goes out in one write(2), so a child
 * process (which has its own kfd process and must run its own checks) can
 * report into the same stream as its parent.
 */
#ifndef KFD_TEST_TAP_H
#define KFD_TEST_TAP_H

#include <stdbool.h>
#include <stdint.h>

#define TAP_PRINTF(a, b) __attribute__((format(printf, a, b)))

void tap_init(void);

/* One check. Returns @cond so callers can add a diagnostic or bail out. */
bool tap_ok(bool cond, const char *name_fmt, ...) TAP_PRINTF(2, 3);

/* A "# ..." diagnostic line. */
void tap_diag(const char *fmt, ...) TAP_PRINTF(1, 2);

/* An "ok N - name # SKIP reason" line. */
void tap_skip(const char *reason, const char *name_fmt, ...) TAP_PRINTF(2, 3);

/*
 * @ret is a 0 / -errno result; @expected_errno is 0 for "must succeed" or a
 * positive errno. Prints "expected X, got Y" on mismatch.
 */
bool tap_errno(int ret, int expected_errno, const char *name_fmt, ...) TAP_PRINTF(3, 4);

/* Equality of two integers, printed in hex on mismatch. */
bool tap_eq(uint64_t got, uint64_t want, const char *name_fmt, ...) TAP_PRINTF(3, 4);

/* Prints the plan and returns the exit status: 0 iff every check passed. */
int tap_finish(void);

const char *errname(int err);

#endif
