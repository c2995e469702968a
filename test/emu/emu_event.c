// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: KFD events.
 *
 * Signal events own a slot of the process' signal page, which is either a
 * GTT BO the thunk hands over with the first event (dGPU) or kernel pages
 * user space maps through /dev/kfd.  Waiters sleep until SET_EVENT; an
 * auto-reset event's signal is consumed by the waiter it wakes.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>

#include "emu.h"

#define EMU_EVENT_TIMEOUT_INFINITE	0xFFFFFFFFu

struct emu_waiter {
	struct list_head link;		/* in ev->waiters */
	struct task_struct *task;
	struct emu_event *ev;
	bool activated;
	bool age_enabled;		/* the waiter passed a last_event_age (KFD 1.14) */
};

static void emu_event_free(struct kref *ref)
{
	kfree(container_of(ref, struct emu_event, ref));
}

static void emu_event_put(struct emu_event *ev)
{
	kref_put(&ev->ref, emu_event_free);
}

static bool emu_event_is_signal(u32 type)
{
	return type == KFD_IOC_EVENT_SIGNAL || type == KFD_IOC_EVENT_DEBUG_EVENT;
}

static void emu_fill_unsignaled(u64 *slots, size_t bytes)
{
	memset(slots, 0xff, bytes);
}

/* Kernel pages as signal page, for processes that did not bring a BO. */
static int emu_signal_page_kernel(struct emu_process *p)
{
	int ret = 0;

	mutex_lock(&p->page_lock);
	if (!p->signal_kpages) {
		p->signal_kpages = __get_free_pages(GFP_KERNEL | __GFP_ZERO,
						    get_order(EMU_SIGNAL_PAGE_SIZE));
		if (!p->signal_kpages)
			ret = -ENOMEM;
	}
	if (!ret) {
		p->signal_slots = (u64 *)p->signal_kpages;
		emu_fill_unsignaled(p->signal_slots, EMU_SIGNAL_PAGE_SIZE);
		/* until user space maps more, only the first slots are usable */
		p->signal_mapped_size = EMU_SIGNAL_DEFAULT_SLOTS * 8;
	}
	mutex_unlock(&p->page_lock);
	return ret;
}

/* Attach the GTT BO named by @handle as signal page. Caller holds p->lock. */
int emu_event_set_signal_page(struct emu_process *p, u64 handle)
{
	struct emu_kfd_mem *mem;
	struct emu_pdd *pdd;
	void *vaddr;

	pdd = emu_pdd_by_user_id(p, EMU_HANDLE_GPU(handle));
	if (!pdd)
		return -EINVAL;
	if (emu_pdd_bind(pdd))
		return -ENODEV;
	mem = idr_find(&pdd->mem_idr, EMU_HANDLE_IDR(handle));
	if (!mem)
		return -EINVAL;
	if (!(mem->bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_GTT) ||
	    mem->bo->base.size < EMU_SIGNAL_PAGE_SIZE)
		return -EINVAL;
	if (p->signal_slots)
		return -EINVAL;		/* already set */

	vaddr = emu_bo_kmap(mem->bo);
	if (!vaddr)
		return -ENOMEM;
	emu_fill_unsignaled(vaddr, EMU_SIGNAL_PAGE_SIZE);

	mutex_lock(&p->page_lock);
	p->signal_slots = vaddr;
	p->signal_mem = mem;
	p->signal_handle = handle;
	p->signal_mapped_size = EMU_SIGNAL_PAGE_SIZE;
	mutex_unlock(&p->page_lock);
	return 0;
}

static struct emu_event *emu_event_new(u32 type, bool auto_reset)
{
	struct emu_event *ev;

	ev = kzalloc(sizeof(*ev), GFP_KERNEL);
	if (!ev)
		return NULL;
	kref_init(&ev->ref);
	ev->type = type;
	ev->auto_reset = auto_reset;
	INIT_LIST_HEAD(&ev->waiters);
	return ev;
}

/* Enter @ev into the process: at @id (restore) or at the next free id. */
static int emu_event_insert(struct emu_process *p, struct emu_event *ev, int id)
{
	bool sig = emu_event_is_signal(ev->type);
	int start, end, ret;

	if (sig) {
		if (!p->signal_slots) {
			ret = emu_signal_page_kernel(p);
			if (ret)
				return ret;
		}
		if (p->n_signal_events >= EMU_SIGNAL_EVENT_LIMIT)
			return -ENOSPC;
		start = 0;
		end = p->signal_mapped_size / 8;
	} else {
		start = EMU_FIRST_NONSIGNAL_ID;
		end = 0;
	}
	if (id >= 0) {
		start = id;
		end = id + 1;
	}
	ret = idr_alloc(&p->event_idr, ev, start, end, GFP_KERNEL);
	if (ret < 0)
		return ret;
	ev->id = ret;
	if (sig) {
		if (ev->id >= EMU_SIGNAL_EVENT_LIMIT) {
			idr_remove(&p->event_idr, ev->id);
			return -EINVAL;
		}
		p->signal_slots[ev->id] = EMU_UNSIGNALED_SLOT;
		p->n_signal_events++;
	}
	p->n_events++;
	return 0;
}

int emu_ioctl_create_event(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_create_event_args *args = data;
	struct emu_event *ev;
	int ret;

	mutex_lock(&p->lock);
	if (args->event_page_offset) {
		ret = emu_event_set_signal_page(p, args->event_page_offset);
		if (ret)
			goto out;
	}

	ev = emu_event_new(args->event_type, args->auto_reset != 0);
	if (!ev) {
		ret = -ENOMEM;
		goto out;
	}
	ret = emu_event_insert(p, ev, -1);
	if (ret) {
		emu_event_put(ev);
		goto out;
	}
	if (emu_event_is_signal(ev->type)) {
		args->event_page_offset = EMU_MMAP_TYPE_EVENTS;
		args->event_slot_index = ev->id;
	}
	args->event_id = ev->id;
	args->event_trigger_data = ev->id;
	ev->age = 1;
out:
	mutex_unlock(&p->lock);
	return ret;
}

/* Wake every waiter of @ev. Caller holds p->ev_lock. */
static void emu_event_wake(struct emu_event *ev)
{
	struct emu_waiter *w;

	list_for_each_entry(w, &ev->waiters, link) {
		WRITE_ONCE(w->activated, true);
		wake_up_process(w->task);
	}
}

static void emu_event_destroy(struct emu_process *p, struct emu_event *ev)
{
	idr_remove(&p->event_idr, ev->id);
	if (emu_event_is_signal(ev->type))
		p->n_signal_events--;
	p->n_events--;
	spin_lock(&p->ev_lock);
	ev->destroyed = true;
	emu_event_wake(ev);
	spin_unlock(&p->ev_lock);
	emu_event_put(ev);
}

int emu_ioctl_destroy_event(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_destroy_event_args *args = data;
	struct emu_event *ev;
	int ret = 0;

	mutex_lock(&p->lock);
	ev = idr_find(&p->event_idr, args->event_id);
	if (ev)
		emu_event_destroy(p, ev);
	else
		ret = -EINVAL;
	mutex_unlock(&p->lock);
	return ret;
}

static void emu_event_set(struct emu_process *p, struct emu_event *ev)
{
	spin_lock(&p->ev_lock);
	/* an auto-reset signal goes to the waiters, if there are any */
	ev->signaled = !ev->auto_reset || list_empty(&ev->waiters);
	/* 6.8 (KFD 1.14): every signal ages the event; 0 and 1 are never reached again */
	if (!++ev->age)
		ev->age = 2;
	emu_event_wake(ev);
	spin_unlock(&p->ev_lock);
}

/* Set the signal event @id as SET_EVENT does; -EINVAL for any other. Caller holds p->lock. */
int emu_event_set_by_id(struct emu_process *p, u32 id)
{
	struct emu_event *ev = idr_find(&p->event_idr, id);

	if (!ev || ev->type != KFD_IOC_EVENT_SIGNAL)
		return -EINVAL;
	emu_event_set(p, ev);
	return 0;
}

int emu_ioctl_set_event(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_set_event_args *args = data;
	int ret;

	mutex_lock(&p->lock);
	ret = emu_event_set_by_id(p, args->event_id);
	mutex_unlock(&p->lock);
	return ret;
}

/* A signal event whose slot the GPU wrote: acknowledge the slot, set the event. */
static bool emu_event_set_if_written(struct emu_process *p, struct emu_event *ev)
{
	if (!ev || !emu_event_is_signal(ev->type) || ev->id >= EMU_SIGNAL_EVENT_LIMIT ||
	    READ_ONCE(p->signal_slots[ev->id]) == EMU_UNSIGNALED_SLOT)
		return false;
	WRITE_ONCE(p->signal_slots[ev->id], EMU_UNSIGNALED_SLOT);
	emu_event_set(p, ev);
	return true;
}

/*
 * An interrupt from one of the process's queues carrying the low @valid_bits
 * of an event id, as amdkfd's kfd_signal_event_interrupt() takes it: the GPU
 * has written the event's slot in the signal page (the event mailbox) before
 * raising the interrupt.  Ids that fit the valid bits name their event; if
 * that slot was not written, or only part of the id came, every signal event
 * with a written slot is set.  Caller holds p->lock.
 */
void emu_event_signal_interrupt(struct emu_process *p, u32 partial_id, unsigned int valid_bits)
{
	struct emu_event *ev;
	int id;

	if (!p->signal_slots)
		return;
	if (valid_bits >= 32 || (1ULL << valid_bits) >= EMU_SIGNAL_EVENT_LIMIT) {
		if (emu_event_set_if_written(p, idr_find(&p->event_idr, partial_id)))
			return;
	} else {
		for (id = partial_id; id < EMU_SIGNAL_EVENT_LIMIT; id += 1 << valid_bits)
			if (emu_event_set_if_written(p, idr_find(&p->event_idr, id)))
				return;
	}
	idr_for_each_entry(&p->event_idr, ev, id)
		emu_event_set_if_written(p, ev);
}

int emu_ioctl_reset_event(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_reset_event_args *args = data;
	struct emu_event *ev;
	int ret = 0;

	mutex_lock(&p->lock);
	ev = idr_find(&p->event_idr, args->event_id);
	if (!ev || ev->type != KFD_IOC_EVENT_SIGNAL) {
		ret = -EINVAL;
	} else {
		spin_lock(&p->ev_lock);
		ev->signaled = false;
		spin_unlock(&p->ev_lock);
	}
	mutex_unlock(&p->lock);
	return ret;
}

static long emu_timeout_jiffies(u32 ms)
{
	if (ms == EMU_EVENT_TIMEOUT_INFINITE)
		return MAX_SCHEDULE_TIMEOUT;
	if (!ms)
		return 0;
	/* at least the requested time, never less */
	return msecs_to_jiffies(ms) + 1;
}

int emu_ioctl_wait_events(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_wait_events_args *args = data;
	struct kfd_event_data __user *udata = u64_to_user_ptr(args->events_ptr);
	long timeout = emu_timeout_jiffies(args->timeout);
	struct emu_waiter *waiters;
	u32 i, n = args->num_events, done;
	int ret = 0;

	waiters = kcalloc(n, sizeof(*waiters), GFP_KERNEL);
	if (!waiters && n)
		return -ENOMEM;

	mutex_lock(&p->lock);
	for (i = 0; i < n; i++) {
		struct emu_event *ev;
#if EMU_KFD_MINOR_VERSION >= 14
		u64 last_age = 0;
#endif
		u32 id;

		if (get_user(id, &udata[i].event_id)) {
			ret = -EFAULT;
			break;
		}
#if EMU_KFD_MINOR_VERSION >= 14
		if (get_user(last_age, &udata[i].signal_event_data.last_event_age)) {
			ret = -EFAULT;
			break;
		}
#endif
		ev = idr_find(&p->event_idr, id);
		if (!ev) {
			ret = -EINVAL;
			break;
		}
		kref_get(&ev->ref);
		waiters[i].ev = ev;
		waiters[i].task = current;
		INIT_LIST_HEAD(&waiters[i].link);
		spin_lock(&p->ev_lock);
		waiters[i].activated = ev->signaled;
		ev->signaled = ev->signaled && !ev->auto_reset;
#if EMU_KFD_MINOR_VERSION >= 14
		/*
		 * 6.8 (KFD 1.14): a signal event's waiter may say which age it saw last (0: none);
		 * an event that has aged since is signalled for it at once.
		 */
		if (ev->type == KFD_IOC_EVENT_SIGNAL && last_age) {
			waiters[i].age_enabled = true;
			if (last_age != ev->age)
				waiters[i].activated = true;
		}
#endif
		/*
		 * As the kernel does (6.1 and 7.3 init_event_waiter): a waiter that is satisfied
		 * already does not queue on the event, so a signal arriving before it leaves
		 * stays pending for the next wait instead of going to this one.
		 */
		if (!waiters[i].activated)
			list_add_tail(&waiters[i].link, &ev->waiters);
		spin_unlock(&p->ev_lock);
	}
	mutex_unlock(&p->lock);
	if (ret) {
		args->wait_result = KFD_IOC_WAIT_RESULT_FAIL;
		goto out;
	}

	args->wait_result = KFD_IOC_WAIT_RESULT_TIMEOUT;
	for (;;) {
		bool failed = false;

		set_current_state(TASK_INTERRUPTIBLE);
		spin_lock(&p->ev_lock);
		for (i = 0, done = 0; i < n; i++) {
			if (waiters[i].ev->destroyed)
				failed = true;
			if (READ_ONCE(waiters[i].activated))
				done++;
		}
		spin_unlock(&p->ev_lock);

		if (failed) {
			args->wait_result = KFD_IOC_WAIT_RESULT_FAIL;
			break;
		}
		if (n == 0 || done == n || (done && !args->wait_for_all)) {
			args->wait_result = KFD_IOC_WAIT_RESULT_COMPLETE;
			break;
		}
		if (timeout <= 0)
			break;
		if (signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		timeout = schedule_timeout(timeout);
	}
	__set_current_state(TASK_RUNNING);

	/* hand back the exception data of memory and hardware events */
	if (!ret && args->wait_result == KFD_IOC_WAIT_RESULT_COMPLETE) {
		for (i = 0; i < n && !ret; i++) {
			struct emu_event *ev = waiters[i].ev;

			if (!waiters[i].activated)
				continue;
			if (ev->type == KFD_IOC_EVENT_MEMORY &&
			    copy_to_user(&udata[i].memory_exception_data,
					 &ev->mem_data, sizeof(ev->mem_data)))
				ret = -EFAULT;
			if (ev->type == KFD_IOC_EVENT_HW_EXCEPTION &&
			    copy_to_user(&udata[i].hw_exception_data,
					 &ev->hw_data, sizeof(ev->hw_data)))
				ret = -EFAULT;
#if EMU_KFD_MINOR_VERSION >= 14
			/* the age it was signalled at, for the waiter's next wait */
			if (waiters[i].age_enabled &&
			    put_user(ev->age, &udata[i].signal_event_data.last_event_age))
				ret = -EFAULT;
#endif
		}
	}

out:
	for (i = 0; i < n && waiters[i].ev; i++) {
		spin_lock(&p->ev_lock);
		list_del_init(&waiters[i].link);
		spin_unlock(&p->ev_lock);
		emu_event_put(waiters[i].ev);
	}
	kfree(waiters);
	return ret;
}

/* Recreate an event for CRIU restore. Caller holds p->lock. */
int emu_event_restore(struct emu_process *p, u32 id, u32 type, bool auto_reset,
		      bool signaled, const void *exception_data)
{
	struct emu_event *ev;
	int ret;

	if (id > INT_MAX)
		return -EINVAL;
	if (!emu_event_is_signal(type) && type != KFD_IOC_EVENT_MEMORY &&
	    type != KFD_IOC_EVENT_HW_EXCEPTION)
		return -EINVAL;
	ev = emu_event_new(type, auto_reset);
	if (!ev)
		return -ENOMEM;
	ev->signaled = signaled;
	if (type == KFD_IOC_EVENT_MEMORY)
		memcpy(&ev->mem_data, exception_data, sizeof(ev->mem_data));
	else if (type == KFD_IOC_EVENT_HW_EXCEPTION)
		memcpy(&ev->hw_data, exception_data, sizeof(ev->hw_data));
	ret = emu_event_insert(p, ev, id);
	if (ret) {
		emu_event_put(ev);
		return ret == -ENOMEM ? ret : -EINVAL;
	}
	return 0;
}

void emu_events_destroy_all(struct emu_process *p)
{
	struct emu_event *ev;
	int id;

	idr_for_each_entry(&p->event_idr, ev, id)
		emu_event_destroy(p, ev);

	mutex_lock(&p->page_lock);
	if (p->signal_mem)
		emu_bo_kunmap(p->signal_mem->bo);
	p->signal_mem = NULL;
	p->signal_handle = 0;
	p->signal_slots = NULL;
	p->signal_mapped_size = 0;
	mutex_unlock(&p->page_lock);
}

int emu_event_mmap(struct emu_process *p, struct vm_area_struct *vma)
{
	unsigned long size = vma->vm_end - vma->vm_start;
	unsigned long i, n = size >> PAGE_SHIFT;
	int ret = 0;

	if (size > EMU_SIGNAL_PAGE_SIZE)
		return -EINVAL;

	mutex_lock(&p->page_lock);
	if (!p->signal_slots) {
		ret = -EINVAL;
		goto out;
	}
	emu_vm_flags_set(vma, VM_IO | VM_DONTCOPY | VM_DONTEXPAND | VM_NORESERVE |
			       VM_DONTDUMP | VM_PFNMAP);
	for (i = 0; i < n && !ret; i++) {
		struct page *page = p->signal_mem ? p->signal_mem->bo->pages[i] :
				    virt_to_page(p->signal_kpages + i * PAGE_SIZE);

		ret = remap_pfn_range(vma, vma->vm_start + i * PAGE_SIZE,
				      page_to_pfn(page), PAGE_SIZE, vma->vm_page_prot);
	}
	if (!ret)
		p->signal_mapped_size = size;
out:
	mutex_unlock(&p->page_lock);
	return ret;
}
