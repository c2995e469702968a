// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: debugfs interface under /sys/kernel/debug/amdgpu_emu/.
 *
 *   processes  read-only view of every emulated KFD process
 *   fault      read: armed faults; write: arm or clear (see emu_fault.c)
 *   gpu_access read: GPU access rules; write: add or clear (see emu_access.c)
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>
#include <linux/slab.h>

#include "emu.h"

#define EMU_CONTROL_WRITE_MAX	1024

static struct dentry *emu_debugfs_dir;

static int emu_processes_show(struct seq_file *m, void *unused)
{
	emu_process_show_all(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(emu_processes);

/* What each GPU's SDMA engine has moved, kernel IBs and user queues alike, and how many wave
 * instructions its shader core has run. */
static int emu_engines_show(struct seq_file *m, void *unused)
{
	unsigned int i;

	for (i = 0; i < emu.n_gpus; i++)
		seq_printf(m, "gpu %u gpu_id 0x%x sdma_bytes %lld shader_instructions %lld\n", i,
			   emu.gpus[i].gpu_id, (long long)atomic64_read(&emu.gpus[i].sdma_bytes),
			   (long long)atomic64_read(&emu.gpus[i].shader_instructions));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(emu_engines);

static int emu_fault_seq_show(struct seq_file *m, void *unused)
{
	emu_fault_show(m);
	return 0;
}

static int emu_fault_open(struct inode *inode, struct file *file)
{
	return single_open(file, emu_fault_seq_show, NULL);
}

/* What is written to a control file, NUL-terminated and bounded, handed to its parser. */
static ssize_t emu_control_write(const char __user *ubuf, size_t len,
				 int (*parse)(char *buf))
{
	char *buf;
	int ret;

	if (len > EMU_CONTROL_WRITE_MAX)
		return -EINVAL;
	buf = memdup_user_nul(ubuf, len);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	ret = parse(buf);
	kfree(buf);
	return ret ? ret : len;
}

static int emu_fault_parse_string(char *buf)
{
	return emu_fault_parse(buf, strlen(buf));
}

static ssize_t emu_fault_write(struct file *file, const char __user *ubuf,
			       size_t len, loff_t *ppos)
{
	return emu_control_write(ubuf, len, emu_fault_parse_string);
}

static const struct file_operations emu_fault_fops = {
	.owner = THIS_MODULE,
	.open = emu_fault_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = emu_fault_write,
};

static int emu_calls_seq_show(struct seq_file *m, void *unused)
{
	emu_fault_calls_show(m);
	return 0;
}

static int emu_calls_open(struct inode *inode, struct file *file)
{
	return single_open(file, emu_calls_seq_show, NULL);
}

/* Any write starts the count again. */
static ssize_t emu_calls_write(struct file *file, const char __user *ubuf,
			       size_t len, loff_t *ppos)
{
	emu_fault_calls_reset();
	return len;
}

static const struct file_operations emu_calls_fops = {
	.owner = THIS_MODULE,
	.open = emu_calls_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = emu_calls_write,
};

static int emu_access_seq_show(struct seq_file *m, void *unused)
{
	emu_access_show(m);
	return 0;
}

static int emu_access_open(struct inode *inode, struct file *file)
{
	return single_open(file, emu_access_seq_show, NULL);
}

static ssize_t emu_access_write(struct file *file, const char __user *ubuf,
				size_t len, loff_t *ppos)
{
	return emu_control_write(ubuf, len, emu_access_parse);
}

static const struct file_operations emu_access_fops = {
	.owner = THIS_MODULE,
	.open = emu_access_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = emu_access_write,
};

void emu_debugfs_init(void)
{
	emu_debugfs_dir = debugfs_create_dir(EMU_NAME, NULL);
	debugfs_create_file("processes", 0444, emu_debugfs_dir, NULL,
			    &emu_processes_fops);
	debugfs_create_file("engines", 0444, emu_debugfs_dir, NULL, &emu_engines_fops);
	debugfs_create_file("fault", 0600, emu_debugfs_dir, NULL, &emu_fault_fops);
	debugfs_create_file("calls", 0600, emu_debugfs_dir, NULL, &emu_calls_fops);
	debugfs_create_file("gpu_access", 0600, emu_debugfs_dir, NULL, &emu_access_fops);
}

void emu_debugfs_fini(void)
{
	debugfs_remove_recursive(emu_debugfs_dir);
	emu_debugfs_dir = NULL;
}
