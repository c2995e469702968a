// SPDX-License-Identifier: GPL-2.0-only
#include "dump_session.hpp"

#include "error.hpp"
#include "hsakmt_shm.hpp"
#include "image_store.hpp"
#include "device_files.hpp"
#include "kfd_contexts.hpp"
#include "log.hpp"
#include "metadata_images.hpp"
#include "task_fds.hpp"
#include "topology_image.hpp"
#include "transient_retry.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace amdgpu {

namespace {

// Bounds on what PROCESS_INFO may report before we allocate for it.
constexpr uint32_t kMaxDevices = 1024;
constexpr uint32_t kMaxBos = 1u << 22;
constexpr uint64_t kMaxPrivData = 1ull << 30;

} // namespace

DumpSession::DumpSession(const Options &options, ImageDir image_dir, std::filesystem::path topology_dir,
			 GpuDriver &driver, ContentCopier &copier)
    : options_(options), image_dir_(std::move(image_dir)), topology_dir_(std::move(topology_dir)), driver_(driver),
      copier_(copier), owner_(getpid())
{
}

DumpSession::~DumpSession()
{
	finish();
}

DumpGuard &DumpSession::guard()
{
	if (!guard_)
		guard_.emplace(image_dir_.streamed() ? -1 : image_dir_.dirfd());
	return *guard_;
}

const Topology &DumpSession::local_topology()
{
	if (!topology_)
		topology_ = parse_topology(topology_dir_);
	return *topology_;
}

void DumpSession::check_kfd_version()
{
	if (version_checked_)
		return;
	// Ordinary ioctls on the task's file are refused to a foreign process, so ask through ours.
	unique_fd fd(driver_.open_device(kKfdPath));
	if (!fd)
		fail_errno(fd.get(), "cannot open %s to check the KFD version", kKfdPath);
	kfd::Version v;
	if (const int ret = driver_.get_version(fd.get(), v))
		fail_errno(ret, "KFD GET_VERSION failed");
	if (v.major != kfd::kMinMajor || v.minor < kfd::kMinMinor)
		fail(-EPROTONOSUPPORT, "KFD ioctl interface %u.%u cannot checkpoint: %u.%u or newer is needed", v.major,
		     v.minor, kfd::kMinMajor, kfd::kMinMinor);
	pr_info("KFD ioctl interface %u.%u", v.major, v.minor);
	version_checked_ = true;
}

void DumpSession::dump_kfd(int task_fd, uint32_t id)
{
	const auto start = std::chrono::steady_clock::now();
	check_kfd_version();
	kfd::ProcessInfo info;
	const PausedProcess &paused = pause(task_fd, id, info);
	const Checkpoint cp = checkpoint(paused.fd.get(), info);
	const std::map<uint32_t, uint32_t> actual_to_user = user_gpu_ids(cp);
	try {
		write_kfd_image(id, cp, actual_to_user);
		save_contents(id, cp);
	} catch (...) {
		remove_images(id, cp);
		throw;
	}
	const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
	pr_info("pid %u: saved %s (%zu GPUs, %u BOs, %u queues/events) in %.1f ms", info.pid,
		kfd_image_name(id).c_str(), actual_to_user.size(), info.num_bos, info.num_objects, ms);
}

// The guard learns of the task before its queues stop, so that no moment is left uncovered.
pid_t DumpSession::watch_task(int kfd_fd, uint32_t id)
{
	const pid_t host_pid = traced_task_holding(kfd_fd).value_or(0);
	if (host_pid)
		guard().watch(host_pid, kfd_fd);
	else
		pr_warn("file id %u: no task traced by criu holds this /dev/kfd file; should criu die during "
			"the dump, nothing would resume its GPU queues",
			id);
	return host_pid;
}

DumpSession::PausedProcess &DumpSession::pause(int task_fd, uint32_t id, kfd::ProcessInfo &info)
{
	unique_fd fd(fcntl(task_fd, F_DUPFD_CLOEXEC, 0));
	if (!fd)
		fail_errno(errno, "cannot duplicate /dev/kfd file id %u", id);
	const pid_t host_pid = watch_task(fd.get(), id);
	if (const int ret = driver_.criu_process_info(fd.get(), info)) {
		if (host_pid)
			guard().resumed(host_pid); // KFD leaves the queues running when PROCESS_INFO fails
		fail_errno(ret, "KFD PROCESS_INFO failed for file id %u", id);
	}
	// From here on the queues are paused: finish() must resume them whatever happens next.
	paused_.push_back({ std::move(fd), info.pid, host_pid });
	pr_info("pid %u: queues paused; %u GPUs, %u BOs, %u queues/events, %llu bytes of driver state", info.pid,
		info.num_devices, info.num_bos, info.num_objects, static_cast<unsigned long long>(info.priv_data_size));
	if (info.num_devices == 0 || info.num_devices > kMaxDevices || info.num_bos > kMaxBos ||
	    info.priv_data_size > kMaxPrivData)
		fail(-EINVAL, "pid %u: KFD PROCESS_INFO reported implausible sizes (%u GPUs, %u BOs, %llu bytes)",
		     info.pid, info.num_devices, info.num_bos, static_cast<unsigned long long>(info.priv_data_size));
	refuse_secondary_contexts(host_pid ? host_pid : static_cast<pid_t>(info.pid));
	return paused_.back();
}

// Secondary KFD contexts cannot be brought back (kfd_contexts.hpp says why): refused while the
// queues of this file are paused, so that finish() resumes them as after any failed dump.
void DumpSession::refuse_secondary_contexts(pid_t pid)
{
	const std::vector<uint32_t> ids = driver_.secondary_contexts(pid);
	if (ids.empty())
		return;
	fail(-EINVAL,
	     "pid %d has %zu secondary KFD context(s) (%s in %s/%d), made by AMDKFD_IOC_CREATE_PROCESS: KFD "
	     "checkpoints each context through its own /dev/kfd file without saying which it was, and restores "
	     "only into the context of the file it is given, so they cannot be restored; the process is left "
	     "running",
	     static_cast<int>(pid), ids.size(), describe_kfd_contexts(ids).c_str(), std::string(kKfdProcDir).c_str(),
	     static_cast<int>(pid));
}

DumpSession::Checkpoint DumpSession::checkpoint(int kfd_fd, const kfd::ProcessInfo &info)
{
	Checkpoint cp { info,
			std::vector<kfd_criu_device_bucket>(info.num_devices),
			std::vector<kfd_criu_bo_bucket>(info.num_bos),
			std::vector<uint8_t>(info.priv_data_size),
			{} };
	const int ret = driver_.criu_checkpoint(kfd_fd, info, cp.devices, cp.bos, cp.priv);
	if (ret)
		fail_errno(ret, "KFD CHECKPOINT failed for pid %u", info.pid);
	// CHECKPOINT installs a dma-buf fd in our table for every VRAM/GTT BO: own them at once.
	for (const auto &bo : cp.bos)
		if (bo.dmabuf_fd != KFD_INVALID_FD)
			cp.dmabufs.emplace_back(static_cast<int>(bo.dmabuf_fd));
	return cp;
}

// actual gpu_id -> the one the process knows, for the GPUs it uses (all of which criu must see).
std::map<uint32_t, uint32_t> DumpSession::user_gpu_ids(const Checkpoint &cp)
{
	std::map<uint32_t, uint32_t> actual_to_user;
	for (const auto &dev : cp.devices) {
		if (!local_topology().gpu(dev.actual_gpu_id))
			fail(-EINVAL,
			     "pid %u uses GPU 0x%04x, which criu's view of the KFD topology (%s) does not show; "
			     "run criu where it sees the GPUs of the process",
			     cp.info.pid, dev.actual_gpu_id, topology_dir_.c_str());
		actual_to_user[dev.actual_gpu_id] = dev.user_gpu_id;
		user_gpu_ids_[dev.actual_gpu_id] = dev.user_gpu_id;
	}
	return actual_to_user;
}

void DumpSession::write_kfd_image(uint32_t id, const Checkpoint &cp, const std::map<uint32_t, uint32_t> &actual_to_user)
{
	const HsakmtShm shm = probe_hsakmt_shm();
	const DeviceEntries devices(local_topology(), &actual_to_user);
	amdgpu::write_kfd_image(image_dir_, id,
				{ cp.info.pid, cp.info.num_objects, cp.bos, cp.priv, &devices, shm.size, shm.magic });
}

int DumpSession::render_fd(uint32_t gpu_id)
{
	auto it = render_fds_.find(gpu_id);
	if (it != render_fds_.end())
		return it->second.get();
	const Node *gpu = local_topology().gpu(gpu_id);
	const std::string path = strprintf("%s/renderD%u", kDriDir, gpu->props.drm_render_minor);
	unique_fd fd(driver_.open_device(path));
	if (!fd)
		fail_errno(fd.get(), "cannot open %s to copy the memory of GPU 0x%04x", path.c_str(), gpu_id);
	return render_fds_.emplace(gpu_id, std::move(fd)).first->second.get();
}

void DumpSession::save_contents(uint32_t id, const Checkpoint &cp)
{
	// One pages file per GPU of the process (empty when it has no VRAM/GTT), as upstream writes
	// them, holding that GPU's BOs in bucket order. BOs carry the id the process knows.
	std::vector<GpuCopyJob> jobs;
	for (const auto &dev : cp.devices) {
		GpuCopyJob job = copy_job(local_topology(), dev.user_gpu_id, dev.actual_gpu_id, cp.bos);
		if (!job.sizes.empty())
			job.render_fd = render_fd(dev.actual_gpu_id);
		jobs.push_back(std::move(job));
	}
	for (const CopyStats &s : copier_.copy(CopyDirection::to_image, jobs, image_dir_, id, options_.max_buffer_size))
		pr_info("pid %u: saved %s", cp.info.pid, describe(s).c_str());
}

// A failed dump leaves no image of this file for a restore to trust.
void DumpSession::remove_images(uint32_t id, const Checkpoint &cp)
{
	image_dir_.remove(kfd_image_name(id));
	for (const auto &dev : cp.devices)
		image_dir_.remove(pages_image_name(id, dev.user_gpu_id));
}

void DumpSession::dump_render_node(uint32_t id, unsigned int minor)
{
	const Node *gpu = nullptr;
	for (const Node *n : local_topology().gpus())
		if (n->props.drm_render_minor == minor)
			gpu = n;
	if (!gpu)
		fail(-ENODEV, "render node renderD%u (file id %u) belongs to no GPU of the KFD topology", minor, id);

	// A render file dumped before the /dev/kfd file of its process is named by its actual
	// gpu_id; that is the id the process knows unless it was migrated before.
	const auto user = user_gpu_ids_.find(gpu->gpu_id);
	CriuRenderNode msg = CRIU_RENDER_NODE__INIT;
	msg.has_gpu_id = msg.has_id = msg.has_drm_render_minor = msg.has_num_of_bos = true;
	msg.gpu_id = user == user_gpu_ids_.end() ? gpu->gpu_id : user->second;
	msg.id = id;
	msg.drm_render_minor = minor;
	msg.num_of_bos = 0;
	write_criu_render_node(image_dir_, id, msg);
	pr_info("saved %s: renderD%u of GPU 0x%04x", render_image_name(id).c_str(), minor, msg.gpu_id);
}

void DumpSession::finish()
{
	if (getpid() != owner_) {
		paused_.clear(); // closes this helper's copies of the fds, nothing more
		return;
	}
	for (PausedProcess &p : paused_)
		resume(p);
	paused_.clear();
	if (guard_)
		guard_->release();
}

void DumpSession::resume(PausedProcess &p)
{
	if (const int ret = with_transient_retries([&] { return driver_.criu_unpause(p.fd.get()); }))
		pr_err("pid %u: KFD UNPAUSE failed, its GPU queues may stay stopped: %s", p.pid, strerror(-ret));
	else
		pr_info("pid %u: queues resumed", p.pid);
	if (p.host_pid)
		guard_->resumed(p.host_pid);
}

} // namespace amdgpu
