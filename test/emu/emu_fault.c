// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: fault injection.
 *
 * A fault is armed with one line:
 *   ioctl <nr> <nth> <errno>   the nth call from now of KFD ioctl <nr> fails
 *   criu <op> <nth> <errno>    the nth call from now of CRIU op <op> fails
 *   drm <nr> <nth> <errno>     the nth call from now of DRM ioctl <nr> (on a
 *                              render node: core and amdgpu ioctls) fails
 *   criu-stall <op> <nth> <ms> the nth call from now of CRIU op <op> waits
 *                              <ms> milliseconds before it starts (killable:
 *                              a fatal signal ends it with -EINTR), a slow
 *                              driver that lets a test act at that moment
 *   restore-rptr <bytes>       the next CRIU RESTORE puts every executing
 *                              queue it restores (SDMA engine, AQL packet
 *                              processor) <bytes> past its saved read
 *                              pointer (a ring state restored wrong)
 *   comm <name>...             only calls by tasks named <name> (up to a few
 *                              names, space-separated) count, fire faults
 *                              and stalls ("comm" alone: every task)
 *   clear                      disarm everything (and forget the comm)
 * A firing fault returns -errno (or stalls) before the operation does
 * anything, and is then disarmed.  Lines come from debugfs amdgpu_emu/fault or the fault=
 * module parameter (quoted, fault="criu 1 1 5", or with commas, fault=criu,1,1,5).
 */
#include <linux/kernel.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/seq_file.h>

#include "emu.h"

#define EMU_MAX_FAULTS	32
#define EMU_CRIU_OPS	5
#define EMU_MAX_STALL_MS	60000

static const char *const emu_fault_kind_names[] = {
	[EMU_FAULT_IOCTL] = "ioctl", [EMU_FAULT_CRIU] = "criu", [EMU_FAULT_DRM] = "drm",
};
static const unsigned int emu_fault_kind_limits[] = {
	[EMU_FAULT_IOCTL] = AMDKFD_COMMAND_END, [EMU_FAULT_CRIU] = EMU_CRIU_OPS, [EMU_FAULT_DRM] = 256,
};

struct emu_fault {
	bool armed;
	enum emu_fault_kind kind;
	unsigned int nr;
	unsigned int remaining;
	int err;		/* fail with -err, or ... */
	unsigned int stall_ms;	/* ... when non-zero, wait this long instead */
};

static DEFINE_SPINLOCK(emu_fault_lock);
static struct emu_fault emu_faults[EMU_MAX_FAULTS];
static u32 emu_fault_rptr_skew;	/* under emu_fault_lock */
/* under emu_fault_lock: names separated by one space; "" = every task */
static char emu_fault_comm[4 * TASK_COMM_LEN];
/* Calls seen (by tasks of emu_fault_comm), per kind and number: what a fault sweep enumerates. */
static unsigned long emu_fault_calls[3][256];	/* under emu_fault_lock */

/* Whether the current task is one the faults are for; emu_fault_lock held. */
static bool emu_fault_task_matches(void)
{
	char comm[TASK_COMM_LEN];
	const char *name = emu_fault_comm;
	size_t len;

	if (!*name)
		return true;
	get_task_comm(comm, current);
	len = strlen(comm);
	for (; *name; name += strcspn(name, " "), name += *name == ' ') {
		if (strcspn(name, " ") == len && !strncmp(name, comm, len))
			return true;
	}
	return false;
}

/* The armed restore-rptr skew, disarming it; 0 if none. */
u32 emu_fault_take_rptr_skew(void)
{
	u32 skew;

	spin_lock(&emu_fault_lock);
	skew = emu_fault_rptr_skew;
	emu_fault_rptr_skew = 0;
	spin_unlock(&emu_fault_lock);
	if (skew)
		pr_info(EMU_NAME ": injected restore-rptr fault: executing queues restored %u bytes off\n", skew);
	return skew;
}

int emu_fault_check(enum emu_fault_kind kind, unsigned int nr)
{
	unsigned int i;
	int ret = 0;

	spin_lock(&emu_fault_lock);
	if (!emu_fault_task_matches()) {
		spin_unlock(&emu_fault_lock);
		return 0;
	}
	if (nr < emu_fault_kind_limits[kind])
		emu_fault_calls[kind][nr]++;
	for (i = 0; i < EMU_MAX_FAULTS; i++) {
		struct emu_fault *f = &emu_faults[i];

		if (!f->armed || f->stall_ms || f->kind != kind || f->nr != nr)
			continue;
		if (--f->remaining)
			continue;
		f->armed = false;
		if (!ret)
			ret = -f->err;
	}
	spin_unlock(&emu_fault_lock);
	if (ret)
		pr_info(EMU_NAME ": injected %s %u failure: %d\n",
			kind == EMU_FAULT_CRIU ? "criu op" : emu_fault_kind_names[kind], nr, ret);
	return ret;
}

int emu_fault_stall_criu(unsigned int op)
{
	unsigned int i, ms = 0;

	spin_lock(&emu_fault_lock);
	if (!emu_fault_task_matches()) {
		spin_unlock(&emu_fault_lock);
		return 0;
	}
	for (i = 0; i < EMU_MAX_FAULTS; i++) {
		struct emu_fault *f = &emu_faults[i];

		if (!f->armed || !f->stall_ms || f->nr != op)
			continue;
		if (--f->remaining)
			continue;
		f->armed = false;
		ms = max(ms, f->stall_ms);
	}
	spin_unlock(&emu_fault_lock);
	if (!ms)
		return 0;
	pr_info(EMU_NAME ": injected stall of criu op %u: %u ms\n", op, ms);
	schedule_timeout_killable(msecs_to_jiffies(ms));
	return fatal_signal_pending(current) ? -EINTR : 0;
}

static int emu_fault_arm(enum emu_fault_kind kind, unsigned int nr, unsigned int nth,
			 int err, unsigned int stall_ms)
{
	unsigned int i;
	int ret = -ENOSPC;

	spin_lock(&emu_fault_lock);
	for (i = 0; i < EMU_MAX_FAULTS; i++) {
		struct emu_fault *f = &emu_faults[i];

		if (f->armed)
			continue;
		f->kind = kind;
		f->nr = nr;
		f->remaining = nth;
		f->err = err;
		f->stall_ms = stall_ms;
		f->armed = true;
		ret = 0;
		break;
	}
	spin_unlock(&emu_fault_lock);
	return ret;
}

static void emu_fault_clear(void)
{
	spin_lock(&emu_fault_lock);
	memset(emu_faults, 0, sizeof(emu_faults));
	emu_fault_rptr_skew = 0;
	emu_fault_comm[0] = '\0';
	spin_unlock(&emu_fault_lock);
}

static int emu_fault_parse_line(char *line)
{
	unsigned int nr, nth, ms;
	char kind[8];
	int err, n;

	/* "criu,1,1,5" spares the quoting a module parameter needs */
	strreplace(line, ',', ' ');
	line = strim(line);
	if (!*line)
		return 0;
	if (!strcmp(line, "clear")) {
		emu_fault_clear();
		return 0;
	}
	n = 0;
	if (sscanf(line, "restore-rptr %u %n", &nth, &n) == 1 && !line[n]) {
		if (!nth || nth & 3)
			return -EINVAL;
		spin_lock(&emu_fault_lock);
		emu_fault_rptr_skew = nth;
		spin_unlock(&emu_fault_lock);
		return 0;
	}
	n = 0;
	if (sscanf(line, "criu-stall %u %u %u %n", &nr, &nth, &ms, &n) == 3 && !line[n]) {
		if (nr >= EMU_CRIU_OPS || !nth || !ms || ms > EMU_MAX_STALL_MS)
			return -EINVAL;
		return emu_fault_arm(EMU_FAULT_CRIU, nr, nth, 0, ms);
	}
	if (!strcmp(line, "comm") || !strncmp(line, "comm ", 5)) {
		spin_lock(&emu_fault_lock);
		strscpy(emu_fault_comm, line[4] ? strim(line + 5) : "", sizeof(emu_fault_comm));
		spin_unlock(&emu_fault_lock);
		return 0;
	}
	n = 0;
	if (sscanf(line, "%7s %u %u %d %n", kind, &nr, &nth, &err, &n) != 4 ||
	    line[n])
		return -EINVAL;
	if (!nth || err <= 0 || err >= MAX_ERRNO)
		return -EINVAL;
	for (n = 0; n < (int)ARRAY_SIZE(emu_fault_kind_names); n++) {
		if (strcmp(kind, emu_fault_kind_names[n]))
			continue;
		if (nr >= emu_fault_kind_limits[n] ||
		    (n == EMU_FAULT_IOCTL && nr < AMDKFD_COMMAND_START))
			return -EINVAL;
		return emu_fault_arm(n, nr, nth, err, 0);
	}
	return -EINVAL;
}

/* One or more lines (newline or ';' separated); stops at the first error. */
int emu_fault_parse(const char *buf, size_t len)
{
	char *copy, *cur, *line;
	int ret = 0;

	copy = kmemdup_nul(buf, len, GFP_KERNEL);
	if (!copy)
		return -ENOMEM;
	cur = copy;
	while ((line = strsep(&cur, "\n;")) && !ret)
		ret = emu_fault_parse_line(line);
	kfree(copy);
	return ret;
}

void emu_fault_show(struct seq_file *m)
{
	struct emu_fault snap[EMU_MAX_FAULTS];
	unsigned int i;

	spin_lock(&emu_fault_lock);
	memcpy(snap, emu_faults, sizeof(snap));
	spin_unlock(&emu_fault_lock);

	for (i = 0; i < EMU_MAX_FAULTS; i++)
		if (snap[i].armed && snap[i].stall_ms)
			seq_printf(m, "criu-stall %u %u %u\n", snap[i].nr,
				   snap[i].remaining, snap[i].stall_ms);
		else if (snap[i].armed)
			seq_printf(m, "%s %u %u %d\n", emu_fault_kind_names[snap[i].kind],
				   snap[i].nr, snap[i].remaining, snap[i].err);
}

/* The calls seen since the last reset, one "<kind> <nr> <count>" line each. */
void emu_fault_calls_show(struct seq_file *m)
{
	static unsigned long snap[3][256];	/* under the debugfs file's single reader */
	unsigned int k, nr;

	spin_lock(&emu_fault_lock);
	memcpy(snap, emu_fault_calls, sizeof(snap));
	spin_unlock(&emu_fault_lock);
	for (k = 0; k < ARRAY_SIZE(emu_fault_kind_names); k++)
		for (nr = 0; nr < emu_fault_kind_limits[k]; nr++)
			if (snap[k][nr])
				seq_printf(m, "%s %u %lu\n", emu_fault_kind_names[k], nr, snap[k][nr]);
}

void emu_fault_calls_reset(void)
{
	spin_lock(&emu_fault_lock);
	memset(emu_fault_calls, 0, sizeof(emu_fault_calls));
	spin_unlock(&emu_fault_lock);
}

int emu_fault_init(const char *spec)
{
	int ret;

	emu_fault_clear();
	if (!spec || !*spec)
		return 0;
	ret = emu_fault_parse(spec, strlen(spec));
	if (ret)
		pr_err(EMU_NAME ": invalid fault= '%s'\n", spec);
	return ret;
}

void emu_fault_fini(void)
{
	emu_fault_clear();
}
