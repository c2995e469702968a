// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: which GPUs a task may use, as the device cgroup decides for KFD.
 *
 * Real KFD asks the device cgroup whether the current task may read and
 * write a GPU's render node (kfd_devcgroup_check_permission).  A task that
 * may not gets no per-device data for that GPU when its KFD process is
 * created (so it never sees the GPU through /dev/kfd), reading the GPU's
 * topology attributes (gpu_id, name, properties, mem_banks, caches,
 * io_links) fails with -EPERM, and opening its render node fails with
 * -EPERM.  That is how a container is given a subset of a node's GPUs.
 *
 * The emulator asks the kernel's device cgroup the same question, for the
 * render node's character device (DRM major, the render minor, read and
 * write): a container runtime's device filter (runc and crun attach a
 * cgroup v2 device program) hides the GPUs it does not list, as it would
 * on a real node.  On top of that it keeps a table, for scenarios that
 * build a container by hand: one rule per cgroup v2 directory, naming the
 * GPUs its tasks may use.  A task in that cgroup or below it sees only the
 * GPUs every rule on its path allows.
 * Rules are written to debugfs amdgpu_emu/gpu_access, one per line:
 *   <cgroup path> <gpu_id>[,<gpu_id>...]   e.g. "/scenario-50/ctr 0x2b8c"
 *   <cgroup path> none                      no GPU at all
 *   clear                                   forget every rule
 * The path is relative to the cgroup2 root, as /proc/<pid>/cgroup shows
 * it; gpu_ids are those of the topology now (decimal or 0x hex).
 */
#include <linux/cgroup.h>
#include <linux/device_cgroup.h>
#include <drm/drm_ioctl.h>
#include <linux/kernel.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>

#include "emu.h"

#define EMU_MAX_ACCESS_RULES	16
#define EMU_ACCESS_PATH_MAX	256

struct emu_access_rule {
	struct cgroup *cgrp;		/* referenced */
	unsigned long gpus;		/* bitmap of GPU indices */
	char path[EMU_ACCESS_PATH_MAX];
};

static DEFINE_SPINLOCK(emu_access_lock);
static struct emu_access_rule emu_access_rules[EMU_MAX_ACCESS_RULES];
static unsigned int emu_n_access_rules;

bool emu_gpu_visible(const struct emu_gpu *gpu)
{
	struct cgroup *cg;
	bool visible = true;
	unsigned int i;

	if (gpu->render_minor >= 0 &&
	    devcgroup_check_permission(DEVCG_DEV_CHAR, DRM_MAJOR, gpu->render_minor,
				       DEVCG_ACC_READ | DEVCG_ACC_WRITE))
		return false;
	if (!READ_ONCE(emu_n_access_rules))
		return true;
	rcu_read_lock();
	cg = task_dfl_cgroup(current);
	spin_lock(&emu_access_lock);
	for (i = 0; i < emu_n_access_rules && visible; i++)
		if (cgroup_is_descendant(cg, emu_access_rules[i].cgrp))
			visible = test_bit(gpu->index, &emu_access_rules[i].gpus);
	spin_unlock(&emu_access_lock);
	rcu_read_unlock();
	return visible;
}

static void emu_access_clear(void)
{
	struct cgroup *old[EMU_MAX_ACCESS_RULES];
	unsigned int i, n;

	spin_lock(&emu_access_lock);
	n = emu_n_access_rules;
	for (i = 0; i < n; i++)
		old[i] = emu_access_rules[i].cgrp;
	emu_n_access_rules = 0;
	spin_unlock(&emu_access_lock);
	for (i = 0; i < n; i++)
		cgroup_put(old[i]);
}

static int emu_access_parse_gpus(char *list, unsigned long *gpus)
{
	char *tok;

	*gpus = 0;
	if (!strcmp(list, "none"))
		return 0;
	while ((tok = strsep(&list, ","))) {
		struct emu_gpu *gpu;
		u32 id;

		if (kstrtou32(tok, 0, &id))
			return -EINVAL;
		gpu = emu_gpu_by_id(id);
		if (!gpu)
			return -ENODEV;
		__set_bit(gpu->index, gpus);
	}
	return 0;
}

static int emu_access_add(char *line)
{
	char *path, *list;
	struct cgroup *cg;
	unsigned long gpus;
	int ret;

	path = strsep(&line, " \t");
	list = line ? strim(line) : NULL;
	if (!path || !*path || !list || !*list || strlen(path) >= EMU_ACCESS_PATH_MAX)
		return -EINVAL;
	ret = emu_access_parse_gpus(list, &gpus);
	if (ret)
		return ret;
	cg = cgroup_get_from_path(path);
	if (IS_ERR(cg))
		return PTR_ERR(cg);

	spin_lock(&emu_access_lock);
	if (emu_n_access_rules == EMU_MAX_ACCESS_RULES) {
		spin_unlock(&emu_access_lock);
		cgroup_put(cg);
		return -ENOSPC;
	}
	emu_access_rules[emu_n_access_rules].cgrp = cg;
	emu_access_rules[emu_n_access_rules].gpus = gpus;
	strscpy(emu_access_rules[emu_n_access_rules].path, path, EMU_ACCESS_PATH_MAX);
	emu_n_access_rules++;
	spin_unlock(&emu_access_lock);
	pr_info(EMU_NAME ": cgroup %s may use GPUs 0x%lx (bitmap of GPU indices)\n", path, gpus);
	return 0;
}

int emu_access_parse(char *buf)
{
	char *line;
	int ret;

	while ((line = strsep(&buf, "\n;"))) {
		line = strim(line);
		if (!*line)
			continue;
		if (!strcmp(line, "clear")) {
			emu_access_clear();
			continue;
		}
		ret = emu_access_add(line);
		if (ret)
			return ret;
	}
	return 0;
}

void emu_access_show(struct seq_file *m)
{
	unsigned int i, g;

	spin_lock(&emu_access_lock);
	for (i = 0; i < emu_n_access_rules; i++) {
		const struct emu_access_rule *r = &emu_access_rules[i];
		bool first = true;

		seq_printf(m, "%s", r->path);
		for (g = 0; g < emu.n_gpus; g++) {
			if (!test_bit(g, &r->gpus))
				continue;
			seq_printf(m, "%s0x%x", first ? " " : ",", emu.gpus[g].gpu_id);
			first = false;
		}
		seq_puts(m, first ? " none\n" : "\n");
	}
	spin_unlock(&emu_access_lock);
}

void emu_access_fini(void)
{
	emu_access_clear();
}
