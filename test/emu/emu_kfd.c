// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: /dev/kfd, the process model and the ioctl dispatcher.
 *
 * One emulated KFD process exists per mm.  Each open file of /dev/kfd holds
 * one user of the process' mmu_notifier subscription; the last close tears
 * the GPU state down, as does the exit of the mm.  The structure itself is
 * freed when the subscription and every temporary reference are gone.
 */
#include <linux/module.h>
#include <linux/fs.h>
#include <linux/device.h>
#include <linux/slab.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/ptrace.h>
#include <linux/capability.h>
#include <linux/compat.h>
#include <linux/file.h>
#include <linux/mm.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/seq_file.h>
#include <linux/pid.h>

#include "emu.h"

static int emu_kfd_major;
static struct class *emu_kfd_class;
static struct device *emu_kfd_device;

/* open/release serialisation and the list of live processes */
DEFINE_MUTEX(emu_open_mutex);
static DEFINE_SPINLOCK(emu_list_lock);
static LIST_HEAD(emu_processes);

/* ---- process lifetime ------------------------------------------------- */

static void emu_pdd_free_doorbells(struct emu_pdd *pdd)
{
	unsigned int i;

	for (i = 0; i < EMU_DOORBELL_PAGES; i++) {
		if (pdd->doorbells[i])
			__free_page(pdd->doorbells[i]);
		pdd->doorbells[i] = NULL;
	}
}

static void emu_process_free(struct kref *ref)
{
	struct emu_process *p = container_of(ref, struct emu_process, ref);
	unsigned int i;

	WARN_ON(!p->torn_down);
	/*
	 * Doorbell and kernel signal pages may still be mapped by the task while
	 * it lives, so they go only with the process structure.
	 */
	for (i = 0; i < p->n_pdds; i++) {
		emu_pdd_free_doorbells(&p->pdds[i]);
		idr_destroy(&p->pdds[i].mem_idr);
	}
	if (p->signal_kpages)
		free_pages(p->signal_kpages, get_order(EMU_SIGNAL_PAGE_SIZE));
	idr_destroy(&p->event_idr);
#ifdef AMDKFD_IOC_CREATE_PROCESS
	emu_context_free(p);
#endif
	put_task_struct(p->lead_thread);
	mutex_destroy(&p->lock);
	mutex_destroy(&p->page_lock);
	kfree(p);
}

void emu_process_put(struct emu_process *p)
{
	kref_put(&p->ref, emu_process_free);
}

/* A live process by mm, with a reference. */
struct emu_process *emu_process_get_by_mm(struct mm_struct *mm)
{
	struct emu_process *p, *found = NULL;

	spin_lock(&emu_list_lock);
	list_for_each_entry(p, &emu_processes, link) {
		/* as find_process_by_mm(): the primary context only */
		if (p->mm == mm && !emu_process_is_secondary(p) &&
		    kref_get_unless_zero(&p->ref)) {
			found = p;
			break;
		}
	}
	spin_unlock(&emu_list_lock);
	return found;
}

#ifndef AMDKFD_IOC_CREATE_PROCESS
static
#endif
void emu_process_list(struct emu_process *p)
{
	spin_lock(&emu_list_lock);
	if (list_empty(&p->link))
		list_add_tail(&p->link, &emu_processes);
	spin_unlock(&emu_list_lock);
}

#ifndef AMDKFD_IOC_CREATE_PROCESS
static
#endif
void emu_process_unlist(struct emu_process *p)
{
	spin_lock(&emu_list_lock);
	list_del_init(&p->link);
	spin_unlock(&emu_list_lock);
}

static void emu_pdd_release_vm(struct emu_pdd *pdd)
{
	if (pdd->vm) {
		mutex_lock(&pdd->vm->lock);
		pdd->vm->kfd_owner = NULL;
		mutex_unlock(&pdd->vm->lock);
	}
	if (pdd->drm_file)
		fput(pdd->drm_file);
	pdd->drm_file = NULL;
	pdd->drm_priv = NULL;
	pdd->vm = NULL;
}

/*
 * Drop every GPU resource of @p and return it to the state of a fresh open.
 * Used for teardown and to undo a failed CRIU RESTORE.  Caller holds p->lock.
 */
void emu_process_reset(struct emu_process *p)
{
	unsigned int i;

	emu_queues_destroy_all(p);
	emu_events_destroy_all(p);
	for (i = 0; i < p->n_pdds; i++)
		emu_pdd_free_memory(&p->pdds[i]);
	for (i = 0; i < p->n_pdds; i++) {
		struct emu_pdd *pdd = &p->pdds[i];

		emu_pdd_release_vm(pdd);
		bitmap_zero(pdd->doorbell_ids, EMU_MAX_DOORBELLS);
		pdd->user_gpu_id = pdd->gpu->gpu_id;
		pdd->vram_usage = 0;
	}
	p->queues_paused = false;
	p->restore_pending = false;
	p->evict_count = 0;
	p->xnack = false;
	p->runtime_enabled = false;
	p->runtime_ttmp_setup = false;
	p->runtime_r_debug = 0;
}

#ifndef AMDKFD_IOC_CREATE_PROCESS
static
#endif
void emu_process_teardown(struct emu_process *p)
{
	emu_procfs_remove(p);
	mutex_lock(&p->lock);
	p->hb_stopping = true;
	mutex_unlock(&p->lock);
	cancel_delayed_work_sync(&p->heartbeat);

	mutex_lock(&p->lock);
	if (!p->torn_down) {
#ifdef AMDKFD_IOC_CREATE_PROCESS
		emu_context_teardown(p);
#endif
		emu_process_reset(p);
		emu_dbg_trap_release(p);
		p->torn_down = true;
	}
	mutex_unlock(&p->lock);
}

/* A new process of @mm with the GPUs the caller may use; NULL without memory. */
#ifndef AMDKFD_IOC_CREATE_PROCESS
static
#endif
struct emu_process *emu_process_alloc(struct mm_struct *mm)
{
	struct emu_process *p;
	unsigned int i;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return NULL;
	kref_init(&p->ref);		/* owned by the subscription */
	INIT_LIST_HEAD(&p->link);
	p->mm = mm;
	p->lead_thread = get_task_struct(current->group_leader);
	mutex_init(&p->lock);
	mutex_init(&p->page_lock);
	INIT_LIST_HEAD(&p->queues);
	INIT_DELAYED_WORK(&p->heartbeat, emu_heartbeat_work);
	idr_init(&p->event_idr);
	spin_lock_init(&p->ev_lock);

	/* as kfd_init_apertures: only the GPUs the device cgroup lets us use */
	for (i = 0; i < emu.n_gpus; i++) {
		struct emu_pdd *pdd = &p->pdds[p->n_pdds];

		if (!emu_gpu_visible(&emu.gpus[i]))
			continue;
		pdd->p = p;
		pdd->gpu = &emu.gpus[i];
		pdd->index = p->n_pdds++;
		pdd->user_gpu_id = pdd->gpu->gpu_id;
		idr_init(&pdd->mem_idr);
	}
#ifdef AMDKFD_IOC_CREATE_PROCESS
	p->context_id = EMU_CONTEXT_ID_PRIMARY;
	ida_init(&p->context_ids);
#endif
	return p;
}

static struct mmu_notifier *emu_mn_alloc(struct mm_struct *mm)
{
	struct emu_process *p = emu_process_alloc(mm);

	return p ? &p->mn : ERR_PTR(-ENOMEM);
}

#ifdef AMDKFD_IOC_CREATE_PROCESS
/* The secondary contexts of @mm stop with it: their queues run in it. */
static void emu_mm_gone_secondaries(struct mm_struct *mm)
{
	struct emu_process *s;

	for (;;) {
		bool found = false;

		spin_lock(&emu_list_lock);
		list_for_each_entry(s, &emu_processes, link) {
			if (s->mm == mm && emu_process_is_secondary(s) &&
			    kref_get_unless_zero(&s->ref)) {
				list_del_init(&s->link);
				found = true;
				break;
			}
		}
		spin_unlock(&emu_list_lock);
		if (!found)
			return;
		emu_procfs_remove(s);
		mutex_lock(&s->lock);
		s->mm_gone = true;
		s->hb_stopping = true;
		cancel_delayed_work(&s->heartbeat);
		if (!s->torn_down) {
			emu_context_teardown(s);
			emu_process_reset(s);
			s->torn_down = true;
		}
		mutex_unlock(&s->lock);
		emu_process_put(s);
	}
}
#endif

static void emu_mn_free(struct mmu_notifier *mn)
{
	/* SRCU callback context: only drop the reference */
	emu_process_put(container_of(mn, struct emu_process, mn));
}

/*
 * The address space is going away while files may still reference the
 * process (CRIU holds dups of a dumped task's /dev/kfd): stop the queues and
 * release what depends on the mm.  Anything else waits for the last close.
 */
static void emu_mn_release(struct mmu_notifier *mn, struct mm_struct *mm)
{
	struct emu_process *p = container_of(mn, struct emu_process, mn);

	emu_process_unlist(p);
	emu_procfs_remove(p);
	mutex_lock(&p->lock);
	p->mm_gone = true;
	p->hb_stopping = true;
	/* not _sync: the heartbeat may be what dropped the last mm user */
	cancel_delayed_work(&p->heartbeat);
	if (!p->torn_down) {
#ifdef AMDKFD_IOC_CREATE_PROCESS
		emu_context_teardown(p);
#endif
		emu_process_reset(p);
		emu_dbg_trap_release(p);
		p->torn_down = true;
	}
	mutex_unlock(&p->lock);
#ifdef AMDKFD_IOC_CREATE_PROCESS
	emu_mm_gone_secondaries(mm);
#endif
}

static const struct mmu_notifier_ops emu_mn_ops = {
	.release = emu_mn_release,
	.alloc_notifier = emu_mn_alloc,
	.free_notifier = emu_mn_free,
};

static int emu_kfd_open(struct inode *inode, struct file *filp)
{
	struct mmu_notifier *mn;
	struct emu_process *p;
	struct mm_struct *mm;

	if (iminor(inode) != 0)
		return -ENODEV;
	if (in_compat_syscall())
		return -EPERM;

	mm = get_task_mm(current);
	if (!mm)
		return -EINVAL;
	if (current->group_leader->mm != mm) {
		mmput(mm);
		return -EINVAL;
	}

	mutex_lock(&emu_open_mutex);
	mn = mmu_notifier_get(&emu_mn_ops, mm);
	if (IS_ERR(mn)) {
		mutex_unlock(&emu_open_mutex);
		mmput(mm);
		return PTR_ERR(mn);
	}
	p = container_of(mn, struct emu_process, mn);
	if (!p->n_files++)
		emu_process_list(p);
	/* as kfd_create_process(): a new process gets its sysfs directory */
	if (!p->procfs.made) {
		p->procfs.made = true;
		emu_procfs_add(p);
	}
	mutex_unlock(&emu_open_mutex);
	mmput(mm);

	filp->private_data = p;
	return 0;
}

static int emu_kfd_release(struct inode *inode, struct file *filp)
{
	struct emu_process *p = filp->private_data;

#ifdef AMDKFD_IOC_CREATE_PROCESS
	if (emu_process_is_secondary(p)) {
		emu_context_release(p);
		return 0;
	}
#endif
	mutex_lock(&emu_open_mutex);
#ifdef AMDKFD_IOC_CREATE_PROCESS
	/* as KFD, a primary with secondaries lives on until they or the mm go */
	if (!--p->n_files && !p->n_secondaries) {
#else
	if (!--p->n_files) {
#endif
		emu_process_unlist(p);
		emu_process_teardown(p);
	}
	mmu_notifier_put(&p->mn);
	mutex_unlock(&emu_open_mutex);
	return 0;
}

/* ---- per-device data ---------------------------------------------------- */

struct emu_pdd *emu_pdd_by_user_id(struct emu_process *p, u32 user_gpu_id)
{
	unsigned int i;

	for (i = 0; i < p->n_pdds; i++)
		if (p->pdds[i].user_gpu_id == user_gpu_id)
			return &p->pdds[i];
	return NULL;
}

struct emu_pdd *emu_pdd_by_gpu(struct emu_process *p, struct emu_gpu *gpu)
{
	unsigned int i;

	for (i = 0; i < p->n_pdds; i++)
		if (p->pdds[i].gpu == gpu)
			return &p->pdds[i];
	return NULL;
}

/* A pdd is usable for resources once it has a VM (ACQUIRE_VM or RESTORE). */
int emu_pdd_bind(struct emu_pdd *pdd)
{
	return pdd->vm ? 0 : -ENODEV;
}

/*
 * The device of the process that it knows as @user_gpu_id, usable for
 * resources: -EINVAL if it has none of that id, -ENODEV if it has no VM yet.
 * Caller holds p->lock.
 */
struct emu_pdd *emu_pdd_bound(struct emu_process *p, u32 user_gpu_id)
{
	struct emu_pdd *pdd = emu_pdd_by_user_id(p, user_gpu_id);
	int ret;

	if (!pdd)
		return ERR_PTR(-EINVAL);
	ret = emu_pdd_bind(pdd);
	return ret ? ERR_PTR(ret) : pdd;
}

/* Make the render-node file @drm_file the GPU VM of @pdd; takes a file ref. */
int emu_pdd_acquire_vm(struct emu_pdd *pdd, struct file *drm_file)
{
	struct drm_file *drm_priv;
	struct emu_vm *vm;

	vm = emu_vm_from_file(drm_file, &drm_priv);
	if (!vm || vm->gpu != pdd->gpu)
		return -EINVAL;
	mutex_lock(&vm->lock);
	if (vm->kfd_owner) {
		mutex_unlock(&vm->lock);
		return -EINVAL;
	}
	vm->kfd_owner = pdd->p;
	mutex_unlock(&vm->lock);

	get_file(drm_file);
	pdd->drm_file = drm_file;
	pdd->drm_priv = drm_priv;
	pdd->vm = vm;
	return 0;
}

/* The process' doorbell slice on this GPU, allocated on first use. */
int emu_pdd_doorbells(struct emu_pdd *pdd)
{
	unsigned int i;
	int ret = 0;

	mutex_lock(&pdd->p->page_lock);
	for (i = 0; i < EMU_DOORBELL_PAGES && !ret; i++) {
		if (pdd->doorbells[i])
			continue;
		pdd->doorbells[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!pdd->doorbells[i])
			ret = -ENOMEM;
	}
	mutex_unlock(&pdd->p->page_lock);
	return ret;
}

/* ---- queue eviction (CRIU pause / restore) ------------------------------- */

bool emu_process_queues_active(struct emu_process *p)
{
	return !p->evict_count && !p->torn_down && !p->hb_stopping;
}

/* As KFD, the time from the first eviction to the last restore counts as evicted. */
void emu_process_evict(struct emu_process *p)
{
	if (!p->evict_count++) {
		p->evict_start = get_jiffies_64();
		emu_aql_queues_preempt(p);
	}
}

void emu_process_restore(struct emu_process *p)
{
	if (p->evict_count && !--p->evict_count) {
		u64 evicted = get_jiffies_64() - p->evict_start;

		WRITE_ONCE(p->evicted_jiffies, p->evicted_jiffies + evicted);
		emu_aql_queues_resume(p);
		emu_heartbeat_kick(p);
	}
}

/* ---- simple ioctls ------------------------------------------------------ */

static int emu_ioctl_get_version(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_get_version_args *args = data;

	args->major_version = KFD_IOCTL_MAJOR_VERSION;
	args->minor_version = EMU_KFD_MINOR_VERSION;
	return 0;
}

void emu_fill_apertures(const struct emu_pdd *pdd, struct kfd_process_device_apertures *ap)
{
	ap->gpu_id = pdd->user_gpu_id;
	ap->lds_base = EMU_LDS_BASE;
	ap->lds_limit = EMU_LDS_BASE | EMU_APERTURE_SPAN;
	ap->scratch_base = EMU_SCRATCH_BASE;
	ap->scratch_limit = EMU_SCRATCH_BASE | EMU_APERTURE_SPAN;
	ap->gpuvm_base = EMU_GPUVM_BASE;
	ap->gpuvm_limit = EMU_GPUVM_LIMIT;
}

static int emu_ioctl_get_process_apertures(struct file *filp, struct emu_process *p,
					   void *data)
{
	struct kfd_ioctl_get_process_apertures_args *args = data;
	unsigned int i;

	args->num_of_nodes = 0;
	mutex_lock(&p->lock);
	for (i = 0; i < p->n_pdds && i < NUM_OF_SUPPORTED_GPUS; i++)
		emu_fill_apertures(&p->pdds[i], &args->process_apertures[i]);
	args->num_of_nodes = i;
	mutex_unlock(&p->lock);
	return 0;
}

static int emu_ioctl_get_process_apertures_new(struct file *filp, struct emu_process *p,
					       void *data)
{
	struct kfd_ioctl_get_process_apertures_new_args *args = data;
	struct kfd_process_device_apertures *pa;
	unsigned int i, n;
	int ret = 0;

	if (!args->num_of_nodes) {
		args->num_of_nodes = p->n_pdds;
		return 0;
	}
	/* more entries than topology nodes cannot be a sane buffer */
	if (args->num_of_nodes > emu.n_gpus + 1)
		return -EINVAL;

	n = min(p->n_pdds, args->num_of_nodes);
	pa = kcalloc(n, sizeof(*pa), GFP_KERNEL);
	if (!pa)
		return -ENOMEM;
	mutex_lock(&p->lock);
	for (i = 0; i < n; i++)
		emu_fill_apertures(&p->pdds[i], &pa[i]);
	mutex_unlock(&p->lock);

	args->num_of_nodes = n;
	if (copy_to_user(u64_to_user_ptr(args->kfd_process_device_apertures_ptr),
			 pa, n * sizeof(*pa)))
		ret = -EFAULT;
	kfree(pa);
	return ret;
}

static int emu_ioctl_acquire_vm(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_acquire_vm_args *args = data;
	struct emu_pdd *pdd;
	struct file *drm_file;
	int ret;

	drm_file = fget(args->drm_fd);
	if (!drm_file)
		return -EINVAL;

	mutex_lock(&p->lock);
	pdd = emu_pdd_by_user_id(p, args->gpu_id);
	if (!pdd)
		ret = -EINVAL;
	else if (pdd->drm_file)
		ret = pdd->drm_file == drm_file ? 0 : -EBUSY;
	else
		ret = emu_pdd_acquire_vm(pdd, drm_file);
	mutex_unlock(&p->lock);

	fput(drm_file);
	return ret;
}

static int emu_ioctl_set_memory_policy(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_set_memory_policy_args *args = data;
	struct emu_pdd *pdd;
	int ret = 0;

	if (args->default_policy != KFD_IOC_CACHE_POLICY_COHERENT &&
	    args->default_policy != KFD_IOC_CACHE_POLICY_NONCOHERENT)
		return -EINVAL;
	if (args->alternate_policy != KFD_IOC_CACHE_POLICY_COHERENT &&
	    args->alternate_policy != KFD_IOC_CACHE_POLICY_NONCOHERENT)
		return -EINVAL;

	/*
	 * 6.15 (KFD 1.18) names the pad misc_process_flag; only GC 9.5 parts act on it
	 * (KFD_PROC_FLAG_MFMA_HIGH_PRECISION), the emulated gfx9 parts ignore it as theirs do.
	 */
	mutex_lock(&p->lock);
	pdd = emu_pdd_by_user_id(p, args->gpu_id);
	if (!pdd) {
		ret = -EINVAL;
	} else if (emu_pdd_bind(pdd)) {
		ret = -ESRCH;
	} else {
		pdd->default_policy = args->default_policy;
		pdd->alt_policy = args->alternate_policy;
		pdd->alt_base = args->alternate_aperture_base;
		pdd->alt_size = args->alternate_aperture_size;
	}
	mutex_unlock(&p->lock);
	return ret;
}

/* Every emulated GPU counts at 100 MHz. */
u64 emu_gpu_clock_counter(void)
{
	return div_u64(ktime_get_raw_ns(), 10);
}

static int emu_ioctl_get_clock_counters(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_get_clock_counters_args *args = data;
	struct emu_pdd *pdd;

	mutex_lock(&p->lock);
	pdd = emu_pdd_by_user_id(p, args->gpu_id);
	mutex_unlock(&p->lock);
	/* the GPU counter runs at 100 MHz, like the gfx9 reference clock */
	args->gpu_clock_counter = pdd ? emu_gpu_clock_counter() : 0;
	args->cpu_clock_counter = ktime_get_raw_ns();
	args->system_clock_counter = ktime_get_boottime_ns();
	args->system_clock_freq = 1000000000;
	return 0;
}

static int emu_ioctl_dbg_deprecated(struct file *filp, struct emu_process *p, void *data)
{
	return -EPERM;
}

static int emu_ioctl_set_scratch_backing_va(struct file *filp, struct emu_process *p,
					    void *data)
{
	struct kfd_ioctl_set_scratch_backing_va_args *args = data;
	struct emu_pdd *pdd;

	mutex_lock(&p->lock);
	pdd = emu_pdd_bound(p, args->gpu_id);
	if (!IS_ERR(pdd))
		pdd->scratch_va = args->va_addr;
	mutex_unlock(&p->lock);
	return PTR_ERR_OR_ZERO(pdd);
}

static int emu_ioctl_get_tile_config(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_get_tile_config_args *args = data;
	struct emu_pdd *pdd;

	mutex_lock(&p->lock);
	pdd = emu_pdd_by_user_id(p, args->gpu_id);
	mutex_unlock(&p->lock);
	if (!pdd)
		return -EINVAL;
	/* gfx9 has no tiling tables: report none */
	args->gb_addr_config = pdd->gpu->model->gb_addr_config;
	args->num_banks = 0;
	args->num_ranks = 0;
	args->num_tile_configs = 0;
	args->num_macro_tile_configs = 0;
	return 0;
}

static int emu_ioctl_set_trap_handler(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_set_trap_handler_args *args = data;
	struct emu_pdd *pdd;

	mutex_lock(&p->lock);
	pdd = emu_pdd_bound(p, args->gpu_id);
	if (!IS_ERR(pdd)) {
		pdd->tba_addr = args->tba_addr;
		pdd->tma_addr = args->tma_addr;
	}
	mutex_unlock(&p->lock);
	return PTR_ERR_OR_ZERO(pdd);
}

static int emu_ioctl_smi_events(struct file *filp, struct emu_process *p, void *data)
{
	return -EINVAL;
}

static int emu_ioctl_svm(struct file *filp, struct emu_process *p, void *data)
{
	/* KFD 1.19 (7.3): SVM is for the primary context only */
	if (emu_process_is_secondary(p))
		return -EOPNOTSUPP;
	/* as a kernel built without CONFIG_HSA_AMD_SVM */
	return -EPERM;
}

static int emu_ioctl_set_xnack_mode(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_set_xnack_mode_args *args = data;
	int ret = 0;

	mutex_lock(&p->lock);
	if (args->xnack_enabled >= 0) {
		if (p->n_queues)
			ret = -EBUSY;
		else if (args->xnack_enabled)
			ret = -EPERM;	/* no emulated GPU can retry faults */
		else
			p->xnack = false;
	} else {
		args->xnack_enabled = p->xnack;
	}
	mutex_unlock(&p->lock);
	return ret;
}

/*
 * The end of debug sessions (emu_debug.c): a process that goes ends the session on it and those
 * it holds on other processes, as the kernel's process teardown does.
 */
/* Ends @target's debug session, if it has one; the file goes after the lock. */
struct file *emu_dbg_trap_end(struct emu_process *target)
{
	struct file *f;

	spin_lock(&emu_dbg_lock);
	f = target->dbg_ev_file;
	target->dbg_ev_file = NULL;
	target->debugger = NULL;
	spin_unlock(&emu_dbg_lock);
	return f;
}

/* @p goes: its own session ends, and those it holds on other processes */
void emu_dbg_trap_release(struct emu_process *p)
{
	struct file *ended[8];
	unsigned int n, i;
	struct emu_process *s;

	if ((ended[0] = emu_dbg_trap_end(p)))
		fput(ended[0]);
	do {
		n = 0;
		spin_lock(&emu_list_lock);
		spin_lock(&emu_dbg_lock);
		list_for_each_entry(s, &emu_processes, link) {
			if (s->debugger != p || n == ARRAY_SIZE(ended))
				continue;
			ended[n++] = s->dbg_ev_file;
			s->dbg_ev_file = NULL;
			s->debugger = NULL;
		}
		spin_unlock(&emu_dbg_lock);
		spin_unlock(&emu_list_lock);
		for (i = 0; i < n; i++)
			fput(ended[i]);
	} while (n == ARRAY_SIZE(ended));
}

#if EMU_KFD_MINOR_VERSION >= 13
/*
 * RUNTIME_ENABLE, as 6.5 (KFD 1.13) to 6.15 do it for a process nobody debugs: enabling
 * records the runtime's r_debug address and whether it wants trap temporaries set up; a
 * second enable without a disable in between is -EBUSY, an enable once the process has
 * queues -EEXIST. Disabling always succeeds and forgets both. The kernel never writes
 * capabilities_mask: the caller gets back what it passed. The state is not part of a CRIU
 * checkpoint; a restored process starts with the runtime disabled.
 */
static int emu_ioctl_runtime_enable(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_runtime_enable_args *args = data;
	int ret = 0;

	mutex_lock(&p->lock);
	if (args->mode_mask & KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK) {
		if (p->runtime_enabled) {
			ret = -EBUSY;
		} else if (p->n_queues) {
			ret = -EEXIST;
		} else {
			p->runtime_enabled = true;
			p->runtime_r_debug = args->r_debug;
			p->runtime_ttmp_setup =
				!!(args->mode_mask & KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK);
		}
	} else {
		p->runtime_enabled = false;
		p->runtime_r_debug = 0;
		p->runtime_ttmp_setup = false;
	}
	mutex_unlock(&p->lock);
	return ret;
}

#endif

/* ---- dispatch ----------------------------------------------------------- */

#define EMU_IOC_FLAG_CRIU	BIT(0)

struct emu_ioctl_desc {
	unsigned int cmd;
	emu_ioctl_fn fn;
	unsigned int flags;
};

#define EMU_IOCTL(ioctl, _fn, _flags) \
	[_IOC_NR(AMDKFD_IOC_##ioctl)] = { .cmd = AMDKFD_IOC_##ioctl, .fn = _fn, .flags = _flags }

static const struct emu_ioctl_desc emu_ioctls[AMDKFD_COMMAND_END] = {
	EMU_IOCTL(GET_VERSION, emu_ioctl_get_version, 0),
	EMU_IOCTL(CREATE_QUEUE, emu_ioctl_create_queue, 0),
	EMU_IOCTL(DESTROY_QUEUE, emu_ioctl_destroy_queue, 0),
	EMU_IOCTL(SET_MEMORY_POLICY, emu_ioctl_set_memory_policy, 0),
	EMU_IOCTL(GET_CLOCK_COUNTERS, emu_ioctl_get_clock_counters, 0),
	EMU_IOCTL(GET_PROCESS_APERTURES, emu_ioctl_get_process_apertures, 0),
	EMU_IOCTL(UPDATE_QUEUE, emu_ioctl_update_queue, 0),
	EMU_IOCTL(CREATE_EVENT, emu_ioctl_create_event, 0),
	EMU_IOCTL(DESTROY_EVENT, emu_ioctl_destroy_event, 0),
	EMU_IOCTL(SET_EVENT, emu_ioctl_set_event, 0),
	EMU_IOCTL(RESET_EVENT, emu_ioctl_reset_event, 0),
	EMU_IOCTL(WAIT_EVENTS, emu_ioctl_wait_events, 0),
	EMU_IOCTL(DBG_REGISTER_DEPRECATED, emu_ioctl_dbg_deprecated, 0),
	EMU_IOCTL(DBG_UNREGISTER_DEPRECATED, emu_ioctl_dbg_deprecated, 0),
	EMU_IOCTL(DBG_ADDRESS_WATCH_DEPRECATED, emu_ioctl_dbg_deprecated, 0),
	EMU_IOCTL(DBG_WAVE_CONTROL_DEPRECATED, emu_ioctl_dbg_deprecated, 0),
	EMU_IOCTL(SET_SCRATCH_BACKING_VA, emu_ioctl_set_scratch_backing_va, 0),
	EMU_IOCTL(GET_TILE_CONFIG, emu_ioctl_get_tile_config, 0),
	EMU_IOCTL(SET_TRAP_HANDLER, emu_ioctl_set_trap_handler, 0),
	EMU_IOCTL(GET_PROCESS_APERTURES_NEW, emu_ioctl_get_process_apertures_new, 0),
	EMU_IOCTL(ACQUIRE_VM, emu_ioctl_acquire_vm, 0),
	EMU_IOCTL(ALLOC_MEMORY_OF_GPU, emu_ioctl_alloc_memory, 0),
	EMU_IOCTL(FREE_MEMORY_OF_GPU, emu_ioctl_free_memory, 0),
	EMU_IOCTL(MAP_MEMORY_TO_GPU, emu_ioctl_map_memory, 0),
	EMU_IOCTL(UNMAP_MEMORY_FROM_GPU, emu_ioctl_unmap_memory, 0),
	EMU_IOCTL(SET_CU_MASK, emu_ioctl_set_cu_mask, 0),
	EMU_IOCTL(GET_QUEUE_WAVE_STATE, emu_ioctl_get_queue_wave_state, 0),
	EMU_IOCTL(GET_DMABUF_INFO, emu_ioctl_get_dmabuf_info, 0),
	EMU_IOCTL(IMPORT_DMABUF, emu_ioctl_import_dmabuf, 0),
	EMU_IOCTL(ALLOC_QUEUE_GWS, emu_ioctl_alloc_queue_gws, 0),
	EMU_IOCTL(SMI_EVENTS, emu_ioctl_smi_events, 0),
	EMU_IOCTL(SVM, emu_ioctl_svm, 0),
	EMU_IOCTL(SET_XNACK_MODE, emu_ioctl_set_xnack_mode, 0),
	EMU_IOCTL(CRIU_OP, emu_ioctl_criu_op, EMU_IOC_FLAG_CRIU),
	EMU_IOCTL(AVAILABLE_MEMORY, emu_ioctl_available_memory, 0),
	/* what kernels after 6.1 added, each only when the header has it */
#if EMU_KFD_MINOR_VERSION >= 12
	EMU_IOCTL(EXPORT_DMABUF, emu_ioctl_export_dmabuf, 0),
#endif
#if EMU_KFD_MINOR_VERSION >= 13
	EMU_IOCTL(RUNTIME_ENABLE, emu_ioctl_runtime_enable, 0),
	EMU_IOCTL(DBG_TRAP, emu_ioctl_dbg_trap, 0),
#endif
#ifdef AMDKFD_IOC_CREATE_PROCESS
	EMU_IOCTL(CREATE_PROCESS, emu_ioctl_create_process, 0),
#endif
#ifdef AMDKFD_IOC_PROFILER
	EMU_IOCTL(PROFILER, emu_ioctl_profiler, 0),
#endif
};

static long emu_kfd_ioctl(struct file *filp, unsigned int ucmd, unsigned long arg)
{
	struct emu_process *p = filp->private_data;
	const struct emu_ioctl_desc *desc;
	unsigned int nr = _IOC_NR(ucmd);
	unsigned int usize, asize, cmd;
	char stack_kdata[128];
	char *kdata = NULL;
	bool tracer = false;
	long ret;

	/* like kfd_ioctl(), an unknown command is an invalid argument */
	if (nr < AMDKFD_COMMAND_START || nr >= AMDKFD_COMMAND_END)
		return -EINVAL;
	desc = &emu_ioctls[nr];
	if (!desc->fn)
		return -EINVAL;

	ret = emu_fault_check(EMU_FAULT_IOCTL, nr);
	if (ret)
		return ret;

	/* sizes and directions come from our own definition of the command */
	cmd = desc->cmd;
	usize = _IOC_SIZE(ucmd);
	asize = max(usize, _IOC_SIZE(cmd));

	if (desc->flags & EMU_IOC_FLAG_CRIU) {
		rcu_read_lock();
		tracer = ptrace_parent(p->lead_thread) == current;
		rcu_read_unlock();
	}
	if (p->lead_thread != current->group_leader && !tracer)
		return -EBADF;
	if ((desc->flags & EMU_IOC_FLAG_CRIU) &&
	    !capable(CAP_CHECKPOINT_RESTORE) && !capable(CAP_SYS_ADMIN))
		return -EACCES;

	if (cmd & (IOC_IN | IOC_OUT)) {
		if (asize <= sizeof(stack_kdata)) {
			kdata = stack_kdata;
		} else {
			kdata = kmalloc(asize, GFP_KERNEL);
			if (!kdata)
				return -ENOMEM;
		}
		memset(kdata, 0, asize);
	}
	if ((cmd & IOC_IN) && copy_from_user(kdata, (void __user *)arg, usize)) {
		ret = -EFAULT;
		goto out;
	}

	if (desc->flags & EMU_IOC_FLAG_CRIU) {
		ret = emu_fault_check(EMU_FAULT_CRIU, ((struct kfd_ioctl_criu_args *)kdata)->op);
		if (!ret)
			ret = emu_fault_stall_criu(((struct kfd_ioctl_criu_args *)kdata)->op);
		if (ret)
			goto out;
	}

	ret = desc->fn(filp, p, kdata);

	if ((cmd & IOC_OUT) && copy_to_user((void __user *)arg, kdata, usize))
		ret = -EFAULT;
out:
	if (kdata != stack_kdata)
		kfree(kdata);
	return ret;
}

/* ---- mmap of /dev/kfd ----------------------------------------------------- */

static int emu_kfd_mmap_pages(struct vm_area_struct *vma, struct page **pages,
			      unsigned int n)
{
	unsigned int i;
	int ret;

	emu_vm_flags_set(vma, VM_IO | VM_DONTCOPY | VM_DONTEXPAND | VM_NORESERVE |
			       VM_DONTDUMP | VM_PFNMAP);
	for (i = 0; i < n; i++) {
		ret = remap_pfn_range(vma, vma->vm_start + i * PAGE_SIZE,
				      page_to_pfn(pages[i]), PAGE_SIZE,
				      vma->vm_page_prot);
		if (ret)
			return ret;
	}
	return 0;
}

static int emu_kfd_mmap(struct file *filp, struct vm_area_struct *vma)
{
	unsigned long size = vma->vm_end - vma->vm_start;
	u64 offset = (u64)vma->vm_pgoff << PAGE_SHIFT;
	struct emu_process *p;
	struct emu_gpu *gpu = NULL;
	struct emu_pdd *pdd;
	int ret;

	/*
	 * Like KFD, the mapping belongs to the caller's process; on a file of a
	 * secondary context (1.19), to that context, as kfd_mmap() in 7.3 maps
	 * for the file's process.
	 */
	p = filp->private_data;
	if (emu_process_is_secondary(p) && p->lead_thread == current->group_leader)
		kref_get(&p->ref);
	else
		p = emu_process_get_by_mm(current->mm);
	if (!p)
		return -EINVAL;

	switch (offset & EMU_MMAP_TYPE_MASK) {
	case EMU_MMAP_TYPE_DOORBELL:
		gpu = emu_gpu_by_id(EMU_MMAP_GET_GPU_ID(offset));
		if (!gpu) {
			ret = -ENODEV;
			break;
		}
		if (size != EMU_DOORBELL_SLICE) {
			ret = -EINVAL;
			break;
		}
		pdd = emu_pdd_by_gpu(p, gpu);
		ret = pdd ? emu_pdd_doorbells(pdd) : -EINVAL;
		if (ret)
			break;
		mutex_lock(&p->page_lock);
		ret = emu_kfd_mmap_pages(vma, pdd->doorbells, EMU_DOORBELL_PAGES);
		mutex_unlock(&p->page_lock);
		break;
	case EMU_MMAP_TYPE_EVENTS:
		ret = emu_event_mmap(p, vma);
		break;
	case EMU_MMAP_TYPE_RESERVED:
		gpu = emu_gpu_by_id(EMU_MMAP_GET_GPU_ID(offset));
		/* only APUs have a reserved CWSR area to map */
		ret = gpu ? -EINVAL : -ENODEV;
		break;
	case EMU_MMAP_TYPE_MMIO:
		gpu = emu_gpu_by_id(EMU_MMAP_GET_GPU_ID(offset));
		if (!gpu) {
			ret = -ENODEV;
			break;
		}
		if (size != PAGE_SIZE) {
			ret = -EINVAL;
			break;
		}
		ret = emu_kfd_mmap_pages(vma, &gpu->mmio_page, 1);
		break;
	default:
		ret = -EFAULT;
	}
	emu_process_put(p);
	return ret;
}

const struct file_operations emu_kfd_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = emu_kfd_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.open = emu_kfd_open,
	.release = emu_kfd_release,
	.mmap = emu_kfd_mmap,
	.llseek = noop_llseek,
};

/* ---- debugfs view ------------------------------------------------------- */

#define EMU_SHOW_MAX 64

static void emu_process_show(struct seq_file *m, struct emu_process *p)
{
	struct emu_kfd_mem *mem;
	struct emu_queue *q;
	struct emu_event *ev;
	unsigned int i;
	int id;

	mutex_lock(&p->lock);
	seq_printf(m, "process pid %d files %u paused %d restore_pending %d evict_count %u xnack %d torn_down %d\n",
		   task_pid_nr(p->lead_thread), p->n_files, p->queues_paused,
		   p->restore_pending, p->evict_count, p->xnack, p->torn_down);
	for (i = 0; i < p->n_pdds; i++) {
		struct emu_pdd *pdd = &p->pdds[i];

		seq_printf(m, "  gpu %u user_gpu_id 0x%x actual_gpu_id 0x%x vm %s vram_usage %llu\n",
			   i, pdd->user_gpu_id, pdd->gpu->gpu_id,
			   pdd->vm ? "acquired" : "none", pdd->vram_usage);
		idr_for_each_entry(&pdd->mem_idr, mem, id)
			seq_printf(m, "    bo handle 0x%llx va 0x%llx size 0x%llx flags 0x%x mapped 0x%lx offset 0x%llx\n",
				   EMU_HANDLE(pdd->user_gpu_id, id), mem->va,
				   mem->size, mem->flags, mem->mapped,
				   emu_mem_offset(mem, pdd->gpu->gpu_id));
	}
	list_for_each_entry(q, &p->queues, link) {
		seq_printf(m, "  queue %u gpu 0x%x type %u evicted %d heartbeat %llu rptr 0x%llx doorbell %u executed 0x%llx sdma_bytes %llu aql_packets %llu fault %s sdma_id %u",
			   q->id, q->pdd->user_gpu_id, q->type,
			   !emu_process_queues_active(p), q->heartbeats,
			   q->rptr, q->doorbell_id, q->exec_rptr, q->sdma_bytes, q->aql_packets,
			   q->fault ? q->fault : "none", q->sdma_id);
		emu_dispatch_show(m, q->dispatch);
	}
	idr_for_each_entry(&p->event_idr, ev, id)
		seq_printf(m, "  event %u type %u auto_reset %d signaled %d\n",
			   ev->id, ev->type, ev->auto_reset, ev->signaled);
	if (p->signal_slots)
		seq_printf(m, "  signal page %s handle 0x%llx\n",
			   p->signal_mem ? "user" : "kernel", p->signal_handle);
	mutex_unlock(&p->lock);
}

void emu_process_show_all(struct seq_file *m)
{
	struct emu_process *procs[EMU_SHOW_MAX], *p;
	unsigned int i, n = 0;

	spin_lock(&emu_list_lock);
	list_for_each_entry(p, &emu_processes, link)
		if (n < EMU_SHOW_MAX && kref_get_unless_zero(&p->ref))
			procs[n++] = p;
	spin_unlock(&emu_list_lock);

	for (i = 0; i < n; i++) {
		emu_process_show(m, procs[i]);
		emu_process_put(procs[i]);
	}
}

/* ---- init --------------------------------------------------------------- */

static char *emu_kfd_devnode(EMU_DEVNODE_DEVICE *dev, umode_t *mode)
{
	if (mode)
		*mode = 0666;
	return NULL;
}

int emu_kfd_init(void)
{
	int ret;

	emu_kfd_major = register_chrdev(0, "kfd", &emu_kfd_fops);
	if (emu_kfd_major < 0)
		return emu_kfd_major;

	emu_kfd_class = emu_class_create("kfd");
	if (IS_ERR(emu_kfd_class)) {
		ret = PTR_ERR(emu_kfd_class);
		goto err_chrdev;
	}
	emu_kfd_class->devnode = emu_kfd_devnode;

	emu_kfd_device = device_create(emu_kfd_class, NULL, MKDEV(emu_kfd_major, 0),
				       NULL, "kfd");
	if (IS_ERR(emu_kfd_device)) {
		ret = PTR_ERR(emu_kfd_device);
		goto err_class;
	}

	ret = emu_topology_init(emu_kfd_device);
	if (ret)
		goto err_device;
	ret = emu_procfs_init(emu_kfd_device);
	if (ret) {
		emu_topology_fini();
		goto err_device;
	}
	return 0;

err_device:
	device_destroy(emu_kfd_class, MKDEV(emu_kfd_major, 0));
err_class:
	class_destroy(emu_kfd_class);
err_chrdev:
	unregister_chrdev(emu_kfd_major, "kfd");
	return ret;
}

void emu_kfd_fini(void)
{
	emu_procfs_fini();
	emu_topology_fini();
	device_destroy(emu_kfd_class, MKDEV(emu_kfd_major, 0));
	class_destroy(emu_kfd_class);
	unregister_chrdev(emu_kfd_major, "kfd");
}
