// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: /sys/class/kfd/kfd/proc, the directory KFD keeps in sysfs for each of its
 * processes, as 6.1 and 7.3 make it (kfd_process.c: kfd_procfs_init at module load; at the
 * creation of a process kfd_procfs_add_sysfs_stats, kfd_procfs_add_sysfs_files and
 * kfd_procfs_add_sysfs_counters, in 7.3 gathered in kfd_create_process_sysfs;
 * kfd_procfs_add_queue and kfd_procfs_del_queue around each user queue; kfd_process_remove_sysfs
 * when the process goes):
 *
 *   proc/<pid>/                     made when the KFD process is, at the task's first open() of
 *                                   /dev/kfd; <pid> is its thread-group leader's pid in the
 *                                   initial pid namespace
 *     pasid                         6.1: the process' PASID; 7.3: always 0 (PASIDs became per
 *                                   device there)
 *     vram_<gpu_id>                 bytes of VRAM the process holds through KFD on the GPU
 *     sdma_<gpu_id>                 bytes its user-mode SDMA queues moved (each queue's read
 *                                   pointer, plus those of the queues it destroyed), / 100
 *     stats_<gpu_id>/evicted_ms     time its queues spent evicted, counted when an eviction ends
 *     stats_<gpu_id>/cu_occupancy   compute units its waves occupy now
 *     queues/<queue_id>/size        the ring's bytes
 *     queues/<queue_id>/type        the kernel's own queue type: compute (AQL or not) 0, SDMA 1,
 *                                   XGMI SDMA 4 in 6.1 and 3 in 7.3, where DIQ no longer sits
 *                                   between them
 *     queues/<queue_id>/gpuid       the GPU's gpu_id
 *     context_<id>/                 7.3: a secondary context, with the same entries for its own
 *                                   resources (its vram_<gpu_id> counts only its own buffers)
 *
 * Each number ends in a newline, except in queues/. The per-GPU entries exist for every GPU
 * the process may use, made with the process (every GPU the device cgroup lets it open), used
 * or not, and are named by the GPU's own gpu_id, never by the id a restored process knows it by.
 * A queue's directory lives from its creation, or its CRIU restore, to its destruction.
 * counters_<gpu_id>/ (SVM page faults and migrations) exists only for GPUs where the process has
 * SVM: none here, the emulator answering as a kernel without CONFIG_HSA_AMD_SVM.
 *
 * What vram_<gpu_id> counts (pdd->vram_usage; 6.1 and 7.3 alike, kfd_chardev.c and
 * amdgpu_amdkfd_gpuvm_free_memory_of_gpu):
 *  - ALLOC_MEMORY_OF_GPU with the VRAM flag adds the size rounded up to whole pages (for AQL
 *    queue memory, allocated once and mapped twice, half the size, then rounded up);
 *  - CRIU RESTORE adds the size of every VRAM bucket it recreates. A buffer the process had
 *    imported is recreated as a buffer of its own, so it counts once the process is restored;
 *  - FREE_MEMORY_OF_GPU subtracts the buffer's size if the process allocated (or restored) it
 *    in VRAM, nothing if it imported it;
 *  - IMPORT_DMABUF adds nothing, whoever made the buffer, KFD or a render node;
 *  - nothing else: no render-node (GEM) buffer, no buffer the kernel allocates for the process'
 *    queues (the ring, EOP and save areas are the process' own allocations, counted if VRAM).
 *    7.3 also counts the VRAM that SVM ranges migrate into (kfd_svm.c); the emulator has no SVM.
 * So the count is whole pages, and it includes VRAM buffers at VA 0, which CRIU CHECKPOINT
 * skips: the VRAM buckets of a checkpoint minus vram_<gpu_id> are the bytes the process
 * imported, less any it allocated at VA 0 (and, in 7.3 with SVM, less its SVM VRAM). The count
 * is touched only by the process' own ioctls, so it holds still while the task is frozen.
 * The emulator keeps it in emu_memory.c (emu_mem_create, emu_mem_destroy), by these rules.
 *
 * The emulator's differences: the directory goes when the emulator tears the process down, at
 * its last close or the end of its address space, where KFD removes it once both have happened;
 * cu_occupancy is always 0, no wave ever running; 6.1's PASIDs come from a pool of the
 * emulator's own, where amdgpu's render-node files draw from the same one.
 */
#include <linux/jiffies.h>
#include <linux/kobject.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/version.h>
#include <linux/xarray.h>

#include "emu.h"

#define EMU_PROCFS_MODE		0444
#define EMU_SDMA_ACTIVITY_DIV	100

static struct kobject *emu_proc_dir;		/* /sys/class/kfd/kfd/proc */

static void emu_procfs_del_queue_dir(struct emu_queue *q);

/*
 * 6.1 gives each process a PASID, cyclically from 1 to 0xFFFF (amdgpu_pasid_alloc); 7.3 shows
 * 0 for every process. The emulator is built for these two kernels only.
 */
#define EMU_PROCFS_PASID	(LINUX_VERSION_CODE < KERNEL_VERSION(7, 0, 0))

#if EMU_PROCFS_PASID
static DEFINE_XARRAY_ALLOC1(emu_pasids);
static u32 emu_pasid_next;

static u32 emu_pasid_alloc(void)
{
	u32 pasid;

	if (xa_alloc_cyclic(&emu_pasids, &pasid, xa_mk_value(0), XA_LIMIT(1, 0xFFFF),
			    &emu_pasid_next, GFP_KERNEL) < 0)
		return 0;
	return pasid;
}

static void emu_pasid_free(u32 pasid)
{
	if (pasid)
		xa_erase(&emu_pasids, pasid);
}
#else
static u32 emu_pasid_alloc(void)
{
	return 0;
}

static void emu_pasid_free(u32 pasid)
{
}
#endif

/* ---- process and per-GPU entries ------------------------------------------ */

static ssize_t emu_procfs_pasid_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct emu_process *p = container_of(attr, struct emu_process, procfs.pasid);

	return sysfs_emit(buf, "%u\n", p->procfs.pasid_value);
}

static ssize_t emu_procfs_vram_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct emu_pdd *pdd = container_of(attr, struct emu_pdd, procfs.vram);

	return sysfs_emit(buf, "%llu\n", READ_ONCE(pdd->vram_usage));
}

static bool emu_queue_is_sdma(const struct emu_queue *q)
{
	return q->type == KFD_IOC_QUEUE_TYPE_SDMA || q->type == KFD_IOC_QUEUE_TYPE_SDMA_XGMI;
}

/* An SDMA queue's read pointer is the bytes its engine consumed, which exec_rptr is. */
static ssize_t emu_procfs_sdma_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct emu_pdd *pdd = container_of(attr, struct emu_pdd, procfs.sdma);
	struct emu_process *p = pdd->p;
	struct emu_queue *q;
	u64 bytes;

	mutex_lock(&p->lock);
	bytes = pdd->procfs.sdma_past_bytes;
	list_for_each_entry(q, &p->queues, link)
		if (q->pdd == pdd && emu_queue_is_sdma(q))
			bytes += q->exec_rptr;
	mutex_unlock(&p->lock);
	return sysfs_emit(buf, "%llu\n", div_u64(bytes, EMU_SDMA_ACTIVITY_DIV));
}

static ssize_t emu_procfs_evicted_show(struct kobject *kobj, struct kobj_attribute *attr,
				       char *buf)
{
	struct emu_pdd *pdd = container_of(attr, struct emu_pdd, procfs.evicted_ms);
	/* the emulator evicts every GPU of a process at once: one count serves them all */
	u64 ms = jiffies64_to_msecs(READ_ONCE(pdd->p->evicted_jiffies));

	return sysfs_emit(buf, "%llu\n", (unsigned long long)ms);
}

static ssize_t emu_procfs_cu_occupancy_show(struct kobject *kobj, struct kobj_attribute *attr,
					    char *buf)
{
	return sysfs_emit(buf, "0\n");
}

static void emu_procfs_file(struct kobject *dir, struct kobj_attribute *attr, const char *name,
			    ssize_t (*show)(struct kobject *, struct kobj_attribute *, char *))
{
	int ret;

	sysfs_attr_init(&attr->attr);
	attr->attr.name = name;
	attr->attr.mode = EMU_PROCFS_MODE;
	attr->show = show;
	ret = sysfs_create_file(dir, &attr->attr);
	if (ret)
		pr_warn(EMU_NAME ": no sysfs file %s in %s: %d\n", name, kobject_name(dir), ret);
}

static void emu_procfs_add_gpu(struct kobject *dir, struct emu_pdd *pdd)
{
	struct emu_pdd_procfs *e = &pdd->procfs;
	u32 id = pdd->gpu->gpu_id;

	snprintf(e->vram_name, sizeof(e->vram_name), "vram_%u", id);
	emu_procfs_file(dir, &e->vram, e->vram_name, emu_procfs_vram_show);
	snprintf(e->sdma_name, sizeof(e->sdma_name), "sdma_%u", id);
	emu_procfs_file(dir, &e->sdma, e->sdma_name, emu_procfs_sdma_show);

	snprintf(e->stats_name, sizeof(e->stats_name), "stats_%u", id);
	e->stats = kobject_create_and_add(e->stats_name, dir);
	if (!e->stats) {
		pr_warn(EMU_NAME ": no sysfs directory %s in %s\n", e->stats_name,
			kobject_name(dir));
		return;
	}
	emu_procfs_file(e->stats, &e->evicted_ms, "evicted_ms", emu_procfs_evicted_show);
	/* every emulated GPU is gfx9, whose KFD can ask the hardware for the waves */
	emu_procfs_file(e->stats, &e->cu_occupancy, "cu_occupancy",
			emu_procfs_cu_occupancy_show);
}

/* Makes the directory @name in @parent with @p's entries; a failure is only said. */
static void emu_procfs_add_dir(struct emu_process *p, struct kobject *parent, const char *name)
{
	struct kobject *dir, *queues;
	unsigned int i;

	p->procfs.pasid_value = emu_pasid_alloc();
	dir = kobject_create_and_add(name, parent);
	if (!dir) {
		pr_warn(EMU_NAME ": no sysfs directory %s for the KFD process of pid %d\n", name,
			task_pid_nr(p->lead_thread));
		return;
	}
	emu_procfs_file(dir, &p->procfs.pasid, "pasid", emu_procfs_pasid_show);
	queues = kobject_create_and_add("queues", dir);
	if (!queues)
		pr_warn(EMU_NAME ": no sysfs directory queues in %s\n", name);
	for (i = 0; i < p->n_pdds; i++)
		emu_procfs_add_gpu(dir, &p->pdds[i]);

	mutex_lock(&p->lock);
	p->procfs.dir = dir;
	p->procfs.queues = queues;
	mutex_unlock(&p->lock);
}

/* proc/<pid> of a new KFD process. As KFD, a process without its directory still works. */
void emu_procfs_add(struct emu_process *p)
{
	char name[16];

	if (!emu_proc_dir)
		return;
	snprintf(name, sizeof(name), "%d", task_pid_nr(p->lead_thread));
	emu_procfs_add_dir(p, emu_proc_dir, name);
}

#ifdef AMDKFD_IOC_CREATE_PROCESS
/* 7.3: context_<id> in the primary's directory, for its new secondary @s. */
void emu_procfs_add_context(struct emu_process *s, struct emu_process *primary)
{
	struct kobject *parent;
	char name[24];

	mutex_lock(&primary->lock);
	parent = kobject_get(primary->procfs.dir);
	mutex_unlock(&primary->lock);
	if (!parent)
		return;
	snprintf(name, sizeof(name), "context_%u", s->context_id);
	emu_procfs_add_dir(s, parent, name);
	kobject_put(parent);
}
#endif

/*
 * Removes the directory of @p, bottom up; a second call finds nothing to do. Called before
 * @p's lock is taken for its teardown: reading sdma_<gpu_id> takes that lock, and removing a
 * file waits for its readers.
 */
void emu_procfs_remove(struct emu_process *p)
{
	struct kobject *dir, *queues;
	struct emu_queue *q;
	unsigned int i;
	u32 pasid;

	mutex_lock(&p->lock);
	dir = p->procfs.dir;
	queues = p->procfs.queues;
	pasid = p->procfs.pasid_value;
	p->procfs.dir = NULL;
	p->procfs.queues = NULL;
	p->procfs.pasid_value = 0;
	/* a queue's files do not take the lock */
	list_for_each_entry(q, &p->queues, link)
		emu_procfs_del_queue_dir(q);
	mutex_unlock(&p->lock);
	emu_pasid_free(pasid);
	if (!dir)
		return;

	for (i = 0; i < p->n_pdds; i++) {
		struct emu_pdd_procfs *e = &p->pdds[i].procfs;

		if (e->stats) {
			kobject_del(e->stats);
			kobject_put(e->stats);
			e->stats = NULL;
		}
	}
	if (queues) {
		kobject_del(queues);
		kobject_put(queues);
	}
	kobject_del(dir);
	kobject_put(dir);
}

/* ---- queues/<queue_id> ------------------------------------------------------- */

struct emu_queue_dir {
	struct kobject kobj;
	struct emu_queue *q;
};

/* 6.1's enum kfd_queue_type still has DIQ at 3; 7.3's has SDMA_XGMI there */
#if LINUX_VERSION_CODE < KERNEL_VERSION(7, 0, 0)
#define EMU_KFD_QUEUE_TYPE_SDMA_XGMI	4
#else
#define EMU_KFD_QUEUE_TYPE_SDMA_XGMI	3
#endif

static u32 emu_kfd_queue_type(const struct emu_queue *q)
{
	switch (q->type) {
	case KFD_IOC_QUEUE_TYPE_SDMA:
		return 1;
	case KFD_IOC_QUEUE_TYPE_SDMA_XGMI:
		return EMU_KFD_QUEUE_TYPE_SDMA_XGMI;
	default:
		return 0;		/* compute, AQL or not */
	}
}

/* As the kernel's, these three numbers have no newline. */
static ssize_t emu_queue_dir_show(struct kobject *kobj, struct attribute *attr, char *buf)
{
	const struct emu_queue *q = container_of(kobj, struct emu_queue_dir, kobj)->q;

	if (!strcmp(attr->name, "size"))
		return sysfs_emit(buf, "%u", READ_ONCE(q->ring_size));
	if (!strcmp(attr->name, "type"))
		return sysfs_emit(buf, "%u", emu_kfd_queue_type(q));
	return sysfs_emit(buf, "%u", q->pdd->gpu->gpu_id);
}

static struct attribute emu_queue_attr_size = { .name = "size", .mode = EMU_PROCFS_MODE };
static struct attribute emu_queue_attr_type = { .name = "type", .mode = EMU_PROCFS_MODE };
static struct attribute emu_queue_attr_gpuid = { .name = "gpuid", .mode = EMU_PROCFS_MODE };

static struct attribute *emu_queue_attrs[] = {
	&emu_queue_attr_size,
	&emu_queue_attr_type,
	&emu_queue_attr_gpuid,
	NULL
};
ATTRIBUTE_GROUPS(emu_queue);

static const struct sysfs_ops emu_queue_dir_ops = {
	.show = emu_queue_dir_show,
};

static void emu_queue_dir_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct emu_queue_dir, kobj));
}

static const struct kobj_type emu_queue_dir_type = {
	.release = emu_queue_dir_release,
	.sysfs_ops = &emu_queue_dir_ops,
	.default_groups = emu_queue_groups,
};

/* Caller holds q's process' lock; @q has its id and GPU. */
void emu_procfs_add_queue(struct emu_process *p, struct emu_queue *q)
{
	struct emu_queue_dir *d;

	if (!p->procfs.queues)
		return;
	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return;
	d->q = q;
	if (kobject_init_and_add(&d->kobj, &emu_queue_dir_type, p->procfs.queues, "%u", q->id)) {
		pr_warn(EMU_NAME ": no sysfs directory queues/%u of pid %d\n", q->id,
			task_pid_nr(p->lead_thread));
		kobject_put(&d->kobj);
		return;
	}
	q->procfs = &d->kobj;
}

static void emu_procfs_del_queue_dir(struct emu_queue *q)
{
	if (!q->procfs)
		return;
	kobject_del(q->procfs);
	kobject_put(q->procfs);
	q->procfs = NULL;
}

/* Caller holds q's process' lock; @q is being destroyed, its bytes stay in sdma_<gpu_id>. */
void emu_procfs_del_queue(struct emu_queue *q)
{
	if (emu_queue_is_sdma(q))
		q->pdd->procfs.sdma_past_bytes += q->exec_rptr;
	emu_procfs_del_queue_dir(q);
}

/* ---- module ------------------------------------------------------------------ */

int emu_procfs_init(struct device *kfd_dev)
{
	emu_proc_dir = kobject_create_and_add("proc", &kfd_dev->kobj);
	return emu_proc_dir ? 0 : -ENOMEM;
}

void emu_procfs_fini(void)
{
	kobject_put(emu_proc_dir);
	emu_proc_dir = NULL;
#if EMU_PROCFS_PASID
	xa_destroy(&emu_pasids);
#endif
}
