// SPDX-License-Identifier: GPL-2.0-only
#include "tap.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct tap_state {
	int next;
	int failed;
};

static struct tap_state *tap;

void tap_init(void)
{
	tap = mmap(NULL, sizeof(*tap), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (tap == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	tap->next = 0;
	tap->failed = 0;
}

static void emit(const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(STDOUT_FILENO, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		buf += n;
		len -= (size_t)n;
	}
}

static bool vreport(bool cond, const char *directive, const char *fmt, va_list ap)
{
	char line[1024];
	int n = __atomic_add_fetch(&tap->next, 1, __ATOMIC_SEQ_CST);
	size_t len;

	if (!cond)
		__atomic_add_fetch(&tap->failed, 1, __ATOMIC_SEQ_CST);
	len = (size_t)snprintf(line, sizeof(line), "%sok %d - ", cond ? "" : "not ", n);
	len += (size_t)vsnprintf(line + len, sizeof(line) - len, fmt, ap);
	if (len > sizeof(line) - 64)
		len = sizeof(line) - 64;
	if (directive)
		len += (size_t)snprintf(line + len, sizeof(line) - len, " # %s", directive);
	line[len++] = '\n';
	emit(line, len);
	return cond;
}

bool tap_ok(bool cond, const char *name_fmt, ...)
{
	va_list ap;

	va_start(ap, name_fmt);
	vreport(cond, NULL, name_fmt, ap);
	va_end(ap);
	return cond;
}

void tap_diag(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	size_t len;

	va_start(ap, fmt);
	len = (size_t)snprintf(line, sizeof(line), "# ");
	len += (size_t)vsnprintf(line + len, sizeof(line) - len - 1, fmt, ap);
	va_end(ap);
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;
	line[len++] = '\n';
	emit(line, len);
}

void tap_skip(const char *reason, const char *name_fmt, ...)
{
	char directive[256];
	va_list ap;

	snprintf(directive, sizeof(directive), "SKIP %s", reason);
	va_start(ap, name_fmt);
	vreport(true, directive, name_fmt, ap);
	va_end(ap);
}

const char *errname(int err)
{
	const char *s;

	if (err == 0)
		return "success";
	s = strerrorname_np(err);
	return s ? s : "E?";
}

bool tap_errno(int ret, int expected_errno, const char *name_fmt, ...)
{
	bool cond = ret == -expected_errno;
	va_list ap;

	va_start(ap, name_fmt);
	vreport(cond, NULL, name_fmt, ap);
	va_end(ap);
	if (!cond)
		tap_diag("expected %s, got %s (%d)", errname(expected_errno),
			 ret <= 0 ? errname(-ret) : "positive return", ret);
	return cond;
}

bool tap_eq(uint64_t got, uint64_t want, const char *name_fmt, ...)
{
	bool cond = got == want;
	va_list ap;

	va_start(ap, name_fmt);
	vreport(cond, NULL, name_fmt, ap);
	va_end(ap);
	if (!cond)
		tap_diag("expected 0x%llx, got 0x%llx", (unsigned long long)want,
			 (unsigned long long)got);
	return cond;
}

int tap_finish(void)
{
	char line[64];
	int len = snprintf(line, sizeof(line), "1..%d\n", tap->next);

	emit(line, (size_t)len);
	return tap->failed ? 1 : 0;
}
