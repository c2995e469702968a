// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: secondary KFD contexts (KFD 1.19) and the profiler ioctl
 * (KFD 1.23), as Linux 7.3 has them.  Built only against a uapi header that
 * has AMDKFD_IOC_CREATE_PROCESS: against 6.1 the emulator keeps 6.1's
 * interface, where every /dev/kfd file of a process is its one KFD process.
 *
 * What 7.3 does, and so what this does:
 *  - CREATE_PROCESS (no argument) turns the /dev/kfd file it is called on
 *    into a new, empty KFD process of the same task: a "secondary context"
 *    with its own GPU VMs, memory, queues and events.  The file no longer
 *    refers to the primary context; the primary lives on (another file or a
 *    later open() finds it) until the address space goes.  A file that is
 *    already a secondary gets -EINVAL.
 *  - A secondary is identified by a context id, the lowest free in
 *    0..0xFFFE, shown only in sysfs as /sys/class/kfd/kfd/proc/<pid>/
 *    context_<id> (with the entries of its own resources, emu_procfs.c);
 *    no ioctl returns it.
 *  - Every ioctl on the file works on the file's context, the CRIU ones
 *    included: PROCESS_INFO pauses and describes that context alone (with
 *    the task's pid, as the primary's), CHECKPOINT saves it with nothing
 *    that says it was a secondary, RESTORE fills whatever context the file
 *    is (a fresh open() is the primary), and RESUME finds the primary by
 *    pid.  The kernel refuses nothing at checkpoint.
 *  - On a secondary, SVM and USERPTR allocations are -EOPNOTSUPP.
 *  - Closing a secondary's file destroys it at once.
 *
 * The emulator's simplification: a primary left with neither files nor
 * secondaries is torn down at once, as the emulator always did, where KFD
 * waits for the address space to go.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "emu.h"

#ifdef AMDKFD_IOC_CREATE_PROCESS

/* ---- secondary contexts ------------------------------------------------- */

int emu_ioctl_create_process(struct file *filp, struct emu_process *p, void *data)
{
	struct emu_process *s;
	int id;

	/* one context per file: a secondary's file cannot make another */
	if (emu_process_is_secondary(p))
		return -EINVAL;

	mutex_lock(&emu_open_mutex);
	if (filp->private_data != p) {
		mutex_unlock(&emu_open_mutex);
		return -EINVAL;
	}
	s = emu_process_alloc(p->mm);
	if (!s) {
		mutex_unlock(&emu_open_mutex);
		return -ENOMEM;
	}
	id = ida_alloc_range(&p->context_ids, 0, EMU_CONTEXT_ID_PRIMARY - 1, GFP_KERNEL);
	if (id < 0) {
		mutex_unlock(&emu_open_mutex);
		s->torn_down = true;
		emu_process_put(s);
		return id;
	}
	s->context_id = id;
	kref_get(&p->ref);
	s->primary = p;
	emu_procfs_add_context(s, p);

	/*
	 * The file's subscription reference to the mm's notifier now keeps the
	 * primary for the secondary: it is dropped when the secondary goes.
	 */
	p->n_files--;
	p->n_secondaries++;
	s->n_files = 1;
	emu_process_list(s);
	filp->private_data = s;
	mutex_unlock(&emu_open_mutex);
	return 0;
}

/* The file of secondary @s is closed: it goes now (7.3's kfd_release()). */
void emu_context_release(struct emu_process *s)
{
	struct emu_process *primary = s->primary;

	emu_process_unlist(s);
	emu_process_teardown(s);

	mutex_lock(&emu_open_mutex);
	if (!--primary->n_secondaries && !primary->n_files) {
		emu_process_unlist(primary);
		emu_process_teardown(primary);
	}
	mmu_notifier_put(&primary->mn);
	mutex_unlock(&emu_open_mutex);
	emu_process_put(s);
}

/* Caller holds p->lock; @p is being torn down. */
void emu_context_teardown(struct emu_process *p)
{
	emu_context_profiler_release(p);
}

/* The structure of @p is freed: what the context part of it holds. */
void emu_context_free(struct emu_process *p)
{
	if (emu_process_is_secondary(p)) {
		ida_free(&p->primary->context_ids, p->context_id);
		emu_process_put(p->primary);
		return;
	}
	ida_destroy(&p->context_ids);
}

/* ---- the profiler ioctl (KFD 1.23) -------------------------------------- */

#ifdef AMDKFD_IOC_PROFILER

/* 7.3 lets one process at a time hold a device for PMC profiling. */
static DEFINE_MUTEX(emu_profiler_lock);
static struct emu_process *emu_profiler_holder[EMU_MAX_GPUS];

/* Caller holds p->lock: the holder lets go as its devices go (7.3). */
void emu_context_profiler_release(struct emu_process *p)
{
	unsigned int i;

	mutex_lock(&emu_profiler_lock);
	for (i = 0; i < EMU_MAX_GPUS; i++)
		if (emu_profiler_holder[i] == p)
			emu_profiler_holder[i] = NULL;
	mutex_unlock(&emu_profiler_lock);
}

static struct emu_pdd *emu_profiler_pdd(struct emu_process *p, u32 user_gpu_id)
{
	struct emu_pdd *pdd;

	mutex_lock(&p->lock);
	pdd = emu_pdd_by_user_id(p, user_gpu_id);
	mutex_unlock(&p->lock);
	return pdd;
}

static int emu_profiler_pmc(struct emu_process *p, struct kfd_ioctl_pmc_settings *args)
{
	struct emu_process **holder;
	struct emu_pdd *pdd;
	int ret = -EINVAL;

	if (!perfmon_capable())
		return -EPERM;
	pdd = emu_profiler_pdd(p, args->gpu_id);
	if (!pdd)
		return -EINVAL;

	holder = &emu_profiler_holder[pdd->gpu->index];
	mutex_lock(&emu_profiler_lock);
	if (args->lock == 1) {
		if (!*holder) {
			*holder = p;
			ret = 0;
		} else {
			ret = *holder == p ? -EALREADY : -EBUSY;
		}
	} else if (args->lock == 0 && *holder == p) {
		*holder = NULL;
		ret = 0;
	}
	mutex_unlock(&emu_profiler_lock);
	/* perfcount_enable changes nothing an emulated queue shows */
	return ret;
}

int emu_ioctl_profiler(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_profiler_args *args = data;

	switch (args->op) {
	case KFD_IOC_PROFILER_VERSION:
		args->version = KFD_IOC_PROFILER_VERSION_NUM;
		return 0;
	case KFD_IOC_PROFILER_PMC:
		return emu_profiler_pmc(p, &args->pmc);
	case KFD_IOC_PROFILER_PTL_CONTROL:
		/* no emulated GPU has PTL: as 7.3 on hardware without it */
		return emu_profiler_pdd(p, args->ptl.gpu_id) ? -EOPNOTSUPP : -EINVAL;
	}
	return -EINVAL;
}
#else
void emu_context_profiler_release(struct emu_process *p)
{
}
#endif /* AMDKFD_IOC_PROFILER */

#endif /* AMDKFD_IOC_CREATE_PROCESS */
