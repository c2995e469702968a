// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: DBG_TRAP (KFD 1.13, Linux 6.5), the debug sessions KFD lets a
 * debugger, or a process itself, open on a process, as far as the users of
 * the test bed need them:
 *
 *  - the plugin, as criu's ptracer, opens a session on a process it
 *    checkpoints to read how the process registered its runtime
 *    (RUNTIME_ENABLE) and closes it at once;
 *  - ROCm's runtime (6.2 and newer) opens one on its own process when a queue
 *    fails, to write a GPU core dump: the runtime info, a snapshot of its
 *    devices, its queues suspended and a snapshot of them, then closes it
 *    (which resumes them).
 *
 * As the kernel has it: the target pid must name a live task with an mm that
 * has a KFD process (-ESRCH); a process other than the caller must be
 * ptrace-attached to the caller (-EPERM; DISABLE is exempt). ENABLE opens the
 * session: a second one is -EALREADY; the event file must be an open fd
 * (-EBADF), which the session holds; the target's runtime info is copied out,
 * as much of it as rinfo_size asks for (-EFAULT ends the session again), and
 * rinfo_size says how much there is. Every other operation needs a session
 * (-EINVAL). The device and queue snapshots copy min(entry_size, the kernel's
 * entry) bytes per entry, stride entry_size, for at most the number asked
 * for, and say how many there are and how large an entry the kernel fills.
 * SUSPEND_QUEUES and RESUME_QUEUES stop and restart queues by id (see
 * emu_dbg_queues_set). A session ends with DISABLE, which resumes the queues
 * it suspended, with the target, or with the debugger's process (emu_kfd.c).
 *
 * Not emulated: what a session changes. The kernel forwards the exceptions
 * named in exception_mask to the debugger's event file and lets it set watch
 * points and change wave launch modes; here those operations fail
 * (-EOPNOTSUPP) and every exception reaches the runtime as without a
 * debugger. No exception status is kept per device or queue: the snapshots
 * report none, and the exception masks clear nothing.
 */
#include <linux/file.h>
#include <linux/ptrace.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "emu.h"

DEFINE_SPINLOCK(emu_dbg_lock);

#if EMU_KFD_MINOR_VERSION >= 13
static int emu_dbg_trap_enable(struct emu_process *p, struct emu_process *target,
			       struct kfd_ioctl_dbg_trap_enable_args *args)
{
	struct kfd_runtime_info rinfo = {};
	u32 size = min_t(u32, args->rinfo_size, sizeof(rinfo));
	struct file *f;
	bool busy;

	f = fget(args->dbg_fd);
	if (!f)
		return -EBADF;
	spin_lock(&emu_dbg_lock);
	busy = target->dbg_ev_file;
	if (!busy) {
		target->dbg_ev_file = f;
		target->debugger = p;
	}
	spin_unlock(&emu_dbg_lock);
	if (busy) {
		fput(f);
		return -EALREADY;
	}

	mutex_lock(&target->lock);
	rinfo.r_debug = target->runtime_r_debug;
	rinfo.runtime_state = target->runtime_enabled ? DEBUG_RUNTIME_STATE_ENABLED :
							 DEBUG_RUNTIME_STATE_DISABLED;
	rinfo.ttmp_setup = target->runtime_ttmp_setup;
	mutex_unlock(&target->lock);
	if (copy_to_user(u64_to_user_ptr(args->rinfo_ptr), &rinfo, size)) {
		fput(emu_dbg_trap_end(target));
		return -EFAULT;
	}
	args->rinfo_size = sizeof(rinfo);
	pr_info("amdgpu_emu: dbg_trap: pid %d opened a debug session on pid %d (runtime %s)\n",
		task_pid_nr(current), task_pid_nr(target->lead_thread),
		target->runtime_enabled ? "enabled" : "disabled");
	return 0;
}

static void emu_dbg_device_entry(const struct emu_pdd *pdd, struct kfd_dbg_device_info_entry *e)
{
	const struct emu_gpu *gpu = pdd->gpu;
	const struct emu_model *m = gpu->model;
	struct kfd_process_device_apertures ap;

	emu_fill_apertures(pdd, &ap);
	memset(e, 0, sizeof(*e));
	e->lds_base = ap.lds_base;
	e->lds_limit = ap.lds_limit;
	e->scratch_base = ap.scratch_base;
	e->scratch_limit = ap.scratch_limit;
	e->gpuvm_base = ap.gpuvm_base;
	e->gpuvm_limit = ap.gpuvm_limit;
	e->gpu_id = gpu->gpu_id;
	e->location_id = gpu->location_id;
	e->vendor_id = EMU_VENDOR_AMD;
	e->device_id = m->device_id;
	e->fw_version = gpu->fw_version;
	e->gfx_target_version = m->gfx_target_version;
	e->simd_count = m->simd_count;
	e->max_waves_per_simd = m->max_waves_per_simd;
	/* the snapshot gives one XCC's arrays, and the XCCs (topology: their product) */
	e->array_count = m->array_count / emu_gpu_xcc_count(gpu);
	e->simd_arrays_per_engine = m->simd_arrays_per_engine;
	e->num_xcc = emu_gpu_xcc_count(gpu);
	e->capability = emu_gpu_capability(gpu);
	e->debug_prop = emu_gpu_debug_prop(gpu);
}

static int emu_dbg_device_snapshot(struct emu_process *target,
				   struct kfd_ioctl_dbg_trap_device_snapshot_args *args)
{
	u32 stride = args->entry_size, n, i;
	struct kfd_dbg_device_info_entry e;
	void __user *to = u64_to_user_ptr(args->snapshot_buf_ptr);
	int ret = 0;

	mutex_lock(&target->lock);
	n = min(args->num_devices, target->n_pdds);
	args->num_devices = target->n_pdds;
	args->entry_size = min_t(u32, stride, sizeof(e));
	for (i = 0; i < n; i++) {
		emu_dbg_device_entry(&target->pdds[i], &e);
		if (copy_to_user(to, &e, args->entry_size)) {
			ret = -EFAULT;
			break;
		}
		to += stride;
	}
	mutex_unlock(&target->lock);
	return ret;
}

static int emu_dbg_queue_snapshot(struct emu_process *target,
				  struct kfd_ioctl_dbg_trap_queue_snapshot_args *args)
{
	u32 stride = args->entry_size, room = args->num_queues, n = 0;
	void __user *to = u64_to_user_ptr(args->snapshot_buf_ptr);
	struct kfd_queue_snapshot_entry e;
	struct emu_queue *q;
	int ret = 0;

	args->num_queues = 0;
	if (!stride)
		return -EINVAL;
	args->entry_size = min_t(u32, stride, sizeof(e));
	mutex_lock(&target->lock);
	list_for_each_entry(q, &target->queues, link) {
		if (n < room) {
			memset(&e, 0, sizeof(e));
			e.ring_base_address = q->ring_base;
			e.write_pointer_address = q->wptr;
			e.read_pointer_address = q->rptr;
			e.ctx_save_restore_address = q->ctx_save_addr;
			e.queue_id = q->id;
			e.gpu_id = q->pdd->gpu->gpu_id;
			e.ring_size = q->ring_size;
			e.queue_type = q->type;
			e.ctx_save_restore_area_size = q->ctx_save_size;
			if (copy_to_user(to, &e, args->entry_size)) {
				ret = -EFAULT;
				break;
			}
			to += stride;
		}
		n++;
	}
	mutex_unlock(&target->lock);
	args->num_queues = n;
	return ret;
}

/*
 * SUSPEND_QUEUES and RESUME_QUEUES: the queues of @ids (@n of them) stop or run again; an
 * AQL queue's dispatch in flight saves its waves or takes them back, as at an eviction. An id
 * that names no queue comes back with KFD_DBG_QUEUE_INVALID_MASK, a queue stopped for good by an
 * error with KFD_DBG_QUEUE_ERROR_MASK; the ioctl returns how many queues changed.
 */
static int emu_dbg_queues_set(struct emu_process *target, u64 array, u32 n, bool suspend)
{
	void __user *user = u64_to_user_ptr(array);
	struct emu_queue *q;
	int changed = 0;
	u32 i, *ids;

	if (!n)
		return 0;
	if (n > EMU_MAX_QUEUES)
		return -EINVAL;
	ids = memdup_user(user, n * sizeof(*ids));
	if (IS_ERR(ids))
		return PTR_ERR(ids);
	mutex_lock(&target->lock);
	for (i = 0; i < n; i++) {
		q = emu_queue_find(target, ids[i] & ~(KFD_DBG_QUEUE_ERROR_MASK | KFD_DBG_QUEUE_INVALID_MASK));
		if (!q) {
			ids[i] |= KFD_DBG_QUEUE_INVALID_MASK;
			continue;
		}
		if (q->fault) {
			ids[i] |= KFD_DBG_QUEUE_ERROR_MASK;
			continue;
		}
		if (q->dbg_suspended == suspend)
			continue;
		q->dbg_suspended = suspend;
		if (suspend)
			emu_aql_queue_preempt(target, q);
		else if (emu_process_queues_active(target))
			emu_aql_queue_resume(target, q);
		changed++;
	}
	if (changed && !suspend && emu_process_queues_active(target))
		emu_heartbeat_kick(target);
	mutex_unlock(&target->lock);
	if (copy_to_user(user, ids, n * sizeof(*ids)))
		changed = -EFAULT;
	kfree(ids);
	return changed;
}

/* The end of a session resumes what it suspended. */
static void emu_dbg_queues_resume_all(struct emu_process *target)
{
	struct emu_queue *q;
	bool any = false;

	mutex_lock(&target->lock);
	list_for_each_entry(q, &target->queues, link) {
		if (!q->dbg_suspended)
			continue;
		q->dbg_suspended = false;
		any = true;
		if (emu_process_queues_active(target))
			emu_aql_queue_resume(target, q);
	}
	if (any && emu_process_queues_active(target))
		emu_heartbeat_kick(target);
	mutex_unlock(&target->lock);
}

int emu_ioctl_dbg_trap(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_dbg_trap_args *args = data;
	struct emu_process *target = NULL;
	struct task_struct *thread = NULL;
	struct mm_struct *mm = NULL;
	struct file *ended;
	struct pid *pid;
	bool open;
	int ret = 0;

	/* KFD 1.19 (7.3): a secondary context cannot debug, nor be debugged */
	if (emu_process_is_secondary(p))
		return -EOPNOTSUPP;
	pid = find_get_pid(args->pid);
	if (!pid)
		return -ESRCH;
	thread = get_pid_task(pid, PIDTYPE_PID);
	if (thread)
		mm = get_task_mm(thread);
	if (mm)
		target = emu_process_get_by_mm(mm);
	if (!target) {
		ret = -ESRCH;
		goto out;
	}

	rcu_read_lock();
	if (target != p && args->op != KFD_IOC_DBG_TRAP_DISABLE &&
	    ptrace_parent(target->lead_thread) != current)
		ret = -EPERM;
	rcu_read_unlock();
	if (ret)
		goto out;

	if (args->op == KFD_IOC_DBG_TRAP_ENABLE) {
		ret = emu_dbg_trap_enable(p, target, &args->enable);
		goto out;
	}
	spin_lock(&emu_dbg_lock);
	open = target->dbg_ev_file;
	spin_unlock(&emu_dbg_lock);
	if (!open) {
		ret = -EINVAL;
		goto out;
	}
	switch (args->op) {
	case KFD_IOC_DBG_TRAP_DISABLE:
		ended = emu_dbg_trap_end(target);
		if (ended)
			fput(ended);
		emu_dbg_queues_resume_all(target);
		pr_info("amdgpu_emu: dbg_trap: pid %d closed the debug session on pid %d\n",
			task_pid_nr(current), task_pid_nr(target->lead_thread));
		break;
	case KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT:
		ret = emu_dbg_device_snapshot(target, &args->device_snapshot);
		break;
	case KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT:
		ret = emu_dbg_queue_snapshot(target, &args->queue_snapshot);
		break;
	case KFD_IOC_DBG_TRAP_SUSPEND_QUEUES:
		ret = emu_dbg_queues_set(target, args->suspend_queues.queue_array_ptr,
					 args->suspend_queues.num_queues, true);
		break;
	case KFD_IOC_DBG_TRAP_RESUME_QUEUES:
		ret = emu_dbg_queues_set(target, args->resume_queues.queue_array_ptr,
					 args->resume_queues.num_queues, false);
		break;
	default:
		ret = -EOPNOTSUPP;
		break;
	}
out:
	if (target)
		emu_process_put(target);
	if (mm)
		mmput(mm);
	if (thread)
		put_task_struct(thread);
	put_pid(pid);
	return ret;
}
#endif
