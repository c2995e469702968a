// SPDX-License-Identifier: GPL-2.0-only
#include "sessions/dump_session.hpp"

#include "support/error.hpp"
#include "driver/hsakmt_shm.hpp"
#include "images/image_store.hpp"
#include "copy/copy_overlap.hpp"
#include "driver/device_files.hpp"
#include "driver/kfd_contexts.hpp"
#include "support/log.hpp"
#include "images/metadata_images.hpp"
#include "driver/task_fds.hpp"
#include "render/gem_contents.hpp"
#include "render/render_image.hpp"
#include "topology/topology_image.hpp"
#include "driver/transient_retry.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>

namespace amdgpu {

namespace {

// Bounds on what PROCESS_INFO may report before we allocate for it.
constexpr uint32_t kMaxDevices = 1024;
constexpr uint32_t kMaxBos = 1u << 22;
constexpr uint64_t kMaxPrivData = 1ull << 30;

// The actual gpu_id of the GPU a process knows as `user`.
uint32_t actual_gpu(std::span<const kfd_criu_device_bucket> devices, uint32_t user)
{
	for (const auto &dev : devices)
		if (dev.user_gpu_id == user)
			return dev.actual_gpu_id;
	return user;
}

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
	kfd_version_ = v;
	version_checked_ = true;
}

void DumpSession::checkpoint_task(pid_t pid, TaskGpuFiles files)
{
	tree_seen_first_ = true;
	for (unique_fd &fd : files.kfd) {
		// a file the task shares with another one of the tree (inherited over fork) is taken once,
		// with the first task that holds it (criu walks the tree from its root: the parent)
		const auto seen = std::find_if(paused_.begin(), paused_.end(), [&](const PausedProcess &p) {
			return same_open_file(p.fd.get(), fd.get());
		});
		if (seen != paused_.end()) {
			pr_debug("pid %d shares the /dev/kfd file of pid %d, taken with it", static_cast<int>(pid),
				 static_cast<int>(seen->taken_for));
			continue;
		}
		check_kfd_version();
		const std::string file = strprintf("/dev/kfd of pid %d", static_cast<int>(pid));
		kfd::ProcessInfo info;
		PausedProcess &paused = pause(fd.get(), file, pid, info);
		paused.taken = checkpoint(paused.fd.get(), info, pid);
		paused.taken_for = pid;
		count_buffers(pid, *paused.taken);
	}
	for (const TaskDmabufFd &d : files.dmabufs) // of a GPU process: the GPU's own memory, most likely
		if (!files.kfd.empty())
			census_.add(census_.key_of({ d.dev, d.ino }), { .pid = pid, .size = d.size, .fd = d.fd });
	refuse_shared_buffers();
}

void DumpSession::close_census()
{
	if (census_closed_)
		return;
	census_closed_ = true;
	const std::vector<SharedBuffer> outside = census_.imported_from_outside();
	if (!outside.empty())
		fail(-EBUSY,
		     "a GPU buffer of %s is another GPU's memory, imported by %s, and no process of the dump holds it "
		     "on its own GPU: a process outside the dump does. Restored, they would hold a copy of their own "
		     "that its owner no longer sees, so the dump is refused and the processes run on; dump the whole "
		     "job (its first process with --tree)%s",
		     describe_size(outside.front().size()).c_str(), describe_holds(outside.front().holds).c_str(),
		     outside.size() > 1 ? strprintf(" (%zu such buffers in all)", outside.size()).c_str() : "");
	const std::optional<ForeignVram> f = census_.foreign_vram();
	if (!f)
		return;
	std::string where;
	for (const BufferHold &h : f->candidates)
		where += strprintf("%s%s of %s", where.empty() ? "" : "; ", describe_size(h.size).c_str(),
				   describe_holds({ h }).c_str());
	fail(-EBUSY,
	     "the dumped processes hold %s of VRAM that none of them allocated (their VRAM buffers, each counted "
	     "once: %s; KFD charged them %s): they imported it, from a process outside the dump (or from a "
	     "render node). Restored, they would hold a copy of their own that its owner no longer sees, so the "
	     "dump is refused and the processes run on; dump the whole job (its first process with --tree). "
	     "The buffers it may be: %s",
	     describe_size(f->bytes).c_str(), describe_size(f->vram).c_str(), describe_size(f->charged).c_str(),
	     where.empty() ? "not told apart" : where.c_str());
}

void DumpSession::dump_kfd(int task_fd, uint32_t id)
{
	const auto start = std::chrono::steady_clock::now();
	close_census();
	PausedProcess *taken = nullptr;
	for (PausedProcess &p : paused_)
		if (p.taken && same_open_file(p.fd.get(), task_fd)) {
			taken = &p;
			break;
		}
	std::optional<Checkpoint> own;
	if (!taken) { // criu before 4.1: nothing was taken before
		check_kfd_version();
		kfd::ProcessInfo info;
		PausedProcess &paused = pause(task_fd, strprintf("/dev/kfd file id %u", id), std::nullopt, info);
		own = checkpoint(paused.fd.get(), info, paused.host_pid);
		count_buffers(paused.host_pid, *own);
		refuse_shared_buffers();
		refuse_imports(paused.host_pid ? paused.host_pid : static_cast<pid_t>(own->info.pid));
	}
	// the copy may outlive this hook: it owns the checkpoint (and its dma-buf fds) from here on
	auto cp = std::make_shared<Checkpoint>(std::move(taken ? *taken->taken : *own));
	if (taken)
		taken->taken.reset(); // the queues stay paused
	const std::map<uint32_t, uint32_t> actual_to_user = user_gpu_ids(*cp);
	const std::vector<BoShare> shares = taken ? shares_of(taken->taken_for, *cp) : std::vector<BoShare> {};
	try {
		ImageSums sums;
		sums.kfd = write_kfd_image(id, *cp, actual_to_user, shares);
		std::vector<GpuCopyJob> jobs = copy_jobs(*cp, shares);
		copy_contents(id, cp->info.pid, image_gpus(*cp), cp, std::move(jobs), std::move(sums));
	} catch (...) {
		remove_images(id, image_gpus(*cp));
		throw;
	}
	const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
	pr_info("pid %u: saved %s (%zu GPUs, %u BOs, %u queues/events) in %.1f ms%s", cp->info.pid,
		kfd_image_name(id).c_str(), actual_to_user.size(), cp->info.num_bos, cp->info.num_objects, ms,
		copy_beside_criu() ? "; its GPU memory is being copied beside criu's dump" : "");
}

// With the whole tree seen first, a dma-buf fd of a buffer of the dump is saved as the buffer's
// number: its restore gives the task a dma-buf of the restored buffer. Anything else was refused
// by checkpoint_task() already, or is here (criu before 4.1).
void DumpSession::dump_dmabuf(int fd, uint32_t id)
{
	close_census();
	struct stat st = {};
	if (fstat(fd, &st))
		fail_errno(errno, "cannot stat dma-buf file id %u", id);
	const std::optional<BufferKey> key = driver_.dmabuf_key(fd);
	if (tree_seen_first_ && key) {
		if (const uint32_t number = census_.shared_number(census_.key_of(*key))) {
			write_dmabuf_image(image_dir_, id, number);
			pr_info("saved %s: a dma-buf fd of shared buffer %u (%s)", dmabuf_image_name(id).c_str(),
				number, describe_size(static_cast<uint64_t>(st.st_size)).c_str());
			return;
		}
	}
	if (key)
		census_.add(census_.key_of(*key), { .pid = traced_task_holding(fd).value_or(0),
						    .size = static_cast<uint64_t>(st.st_size),
						    .file_id = static_cast<int>(id) });
	refuse_shared_buffers();
	fail(-ENOTSUP, "file id %u is a dma-buf this plugin cannot save", id);
}

// The guard learns of the task before its queues stop, so that no moment is left uncovered.
pid_t DumpSession::watch_task(int kfd_fd, const std::string &file, std::optional<pid_t> known)
{
	const pid_t host_pid = known ? *known : traced_task_holding(kfd_fd).value_or(0);
	if (host_pid)
		guard().watch(host_pid, kfd_fd);
	else
		pr_warn("%s: no task traced by criu holds this /dev/kfd file; should criu die during "
			"the dump, nothing would resume its GPU queues",
			file.c_str());
	return host_pid;
}

DumpSession::PausedProcess &DumpSession::pause(int task_fd, const std::string &file, std::optional<pid_t> known,
					       kfd::ProcessInfo &info)
{
	unique_fd fd(fcntl(task_fd, F_DUPFD_CLOEXEC, 0));
	if (!fd)
		fail_errno(errno, "cannot duplicate %s", file.c_str());
	const pid_t host_pid = watch_task(fd.get(), file, known);
	if (const int ret = driver_.criu_process_info(fd.get(), info)) {
		if (host_pid)
			guard().resumed(host_pid); // KFD leaves the queues running when PROCESS_INFO fails
		fail_errno(ret, "KFD PROCESS_INFO failed for %s", file.c_str());
	}
	// From here on the queues are paused: finish() must resume them whatever happens next.
	paused_.push_back({ std::move(fd), info.pid, host_pid, std::nullopt });
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

DumpSession::Checkpoint DumpSession::checkpoint(int kfd_fd, const kfd::ProcessInfo &info, pid_t host_pid)
{
	Checkpoint cp { info,
			std::vector<kfd_criu_device_bucket>(info.num_devices),
			std::vector<kfd_criu_bo_bucket>(info.num_bos),
			std::vector<uint8_t>(info.priv_data_size),
			{},
			std::nullopt };
	const int ret = driver_.criu_checkpoint(kfd_fd, info, cp.devices, cp.bos, cp.priv);
	if (ret)
		fail_errno(ret, "KFD CHECKPOINT failed for pid %u", info.pid);
	// CHECKPOINT installs a dma-buf fd in our table for every VRAM/GTT BO: own them at once.
	for (const auto &bo : cp.bos)
		if (bo.dmabuf_fd != KFD_INVALID_FD)
			cp.dmabufs.emplace_back(static_cast<int>(bo.dmabuf_fd));
	cp.runtime = runtime_of(host_pid, info.pid);
	return cp;
}

// KFD's CRIU leaves out the runtime registration (kfd_ioctl.hpp), and a restored runtime that
// KFD does not know would wait forever for the first GPU error it should be told of: it is read
// here, while the queues are paused, and saved beside KFD's state.
std::optional<kfd::RuntimeInfo> DumpSession::runtime_of(pid_t host_pid, uint32_t pid)
{
	if (kfd_version_ < kfd::kRuntimeEnableSince)
		return std::nullopt; // no runtime can have registered
	const pid_t task = host_pid ? host_pid : static_cast<pid_t>(pid);
	kfd::RuntimeInfo runtime;
	const int ret = driver_.runtime_info(task, runtime);
	if (ret == -EALREADY)
		fail(ret,
		     "pid %d has a GPU debug session open (KFD refuses a second one: %s): a debugger such as rocgdb "
		     "is attached, or its own runtime is writing a GPU core dump. A debug session cannot be "
		     "checkpointed, so the dump is refused and the process runs on; detach the debugger first",
		     static_cast<int>(task), strerror(-ret));
	if (ret)
		fail_errno(ret,
			   "cannot read how pid %d registered ROCm's runtime with KFD (DBG_TRAP ENABLE/DISABLE): "
			   "restored without it, the runtime would never hear of a GPU error again, so the dump is "
			   "refused and the process runs on",
			   static_cast<int>(task));
	switch (runtime.state) {
	case kfd::RuntimeState::disabled:
		pr_info("pid %u: ROCm's runtime is not registered with KFD", pid);
		return runtime;
	case kfd::RuntimeState::enabled:
		pr_info("pid %u: ROCm's runtime is registered with KFD (r_debug 0x%llx, trap temporaries %s): the "
			"restore registers it again",
			pid, static_cast<unsigned long long>(runtime.r_debug),
			runtime.ttmp_setup ? "set up" : "not set up");
		return runtime;
	default:
		fail(-EBUSY,
		     "pid %d: ROCm's runtime registration with KFD is in state %u (%s), which a restore cannot "
		     "repeat, so the dump is refused and the process runs on",
		     static_cast<int>(task), static_cast<unsigned>(runtime.state),
		     runtime.state == kfd::RuntimeState::enabled_busy ? "waiting for a GPU debugger"
								      : "failed by a GPU debugger");
	}
}

void DumpSession::count_buffers(pid_t host_pid, const Checkpoint &cp)
{
	const pid_t pid = host_pid ? host_pid : static_cast<pid_t>(cp.info.pid);
	const std::set<uint64_t> mapped = host_pid ? gpu_mappings_of_task(host_pid) : std::set<uint64_t> {};
	for (const auto &bo : cp.bos) {
		if (bo.dmabuf_fd == KFD_INVALID_FD)
			continue;
		const std::optional<BufferKey> key = driver_.dmabuf_key(static_cast<int>(bo.dmabuf_fd));
		if (!key)
			fail(-EINVAL,
			     "pid %d: KFD CHECKPOINT handed out fd %u for the buffer at 0x%llx, which is no dma-buf",
			     static_cast<int>(pid), bo.dmabuf_fd, static_cast<unsigned long long>(bo.addr));
		const uint32_t gpu_id = actual_gpu(cp.devices, bo.gpu_id);
		const std::optional<uint32_t> owner = driver_.dmabuf_gpu(static_cast<int>(bo.dmabuf_fd));
		census_.add(census_.key_of(*key, gpu_id, bo.offset), { .pid = pid,
								       .gpu_id = gpu_id,
								       .addr = bo.addr,
								       .size = bo.size,
								       .alloc_flags = bo.alloc_flags,
								       .imported = owner && *owner != gpu_id,
								       .cpu_mapped = mapped.count(bo.addr) > 0 });
	}
	bool known = host_pid != 0;
	for (const auto &dev : cp.devices) {
		const std::optional<uint64_t> bytes =
			known ? driver_.vram_charged(host_pid, dev.actual_gpu_id) : std::nullopt;
		if (!bytes) {
			known = false;
			break;
		}
		census_.charge(pid, *bytes);
	}
	if (!known) {
		census_.charge_unknown(pid);
		if (!warned_uncharged_)
			pr_warn("pid %d: KFD's VRAM charge of it is not in %s/%d: VRAM it imported from a process "
				"outside the dump cannot be told from its own (criu in a pid namespace of its own, or "
				"an "
				"older kernel)",
				static_cast<int>(pid), std::string(kKfdProcDir).c_str(), static_cast<int>(pid));
		warned_uncharged_ = true;
	}
}

// criu before 4.1: what a process imported cannot be restored shared, from whomever it came.
void DumpSession::refuse_imports(pid_t pid) const
{
	const uint64_t vram = census_.vram_beyond_charge(pid);
	const std::vector<BufferHold> other_gpus = census_.imported_holds(pid);
	if (!vram && other_gpus.empty())
		return;
	fail(-EBUSY,
	     "pid %d holds GPU memory it imported from another process (%s of VRAM beyond what KFD charged it%s%s): "
	     "KFD RESTORE would give it a copy of its own, and only a criu that shows the plugin the whole tree "
	     "before the first image (4.1 or newer) lets the plugin restore such memory shared, so the dump is "
	     "refused and the processes run on",
	     static_cast<int>(pid), describe_size(vram).c_str(), other_gpus.empty() ? "" : "; other GPUs' buffers: ",
	     other_gpus.empty() ? "" : describe_holds(other_gpus).c_str());
}

// Shared memory cannot be restored shared (yet): each process would get a buffer of its own.
void DumpSession::refuse_shared_buffers() const
{
	std::vector<SharedBuffer> shared = census_.shared();
	// with the whole tree seen first, a buffer restores shared unless no bucket of the dump holds
	// it (a dma-buf fd of something else) or more than one process maps it into its memory (only
	// the restorer's mapping can be moved)
	const auto mappers = [](const SharedBuffer &b) {
		return std::count_if(b.holds.begin(), b.holds.end(),
				     [](const BufferHold &h) { return !h.held_fd() && h.cpu_mapped; });
	};
	const auto bucket_count = [](const SharedBuffer &b) {
		return std::count_if(b.holds.begin(), b.holds.end(), [](const BufferHold &h) { return !h.held_fd(); });
	};
	if (tree_seen_first_)
		std::erase_if(shared, [&](const SharedBuffer &b) { return mappers(b) < 2 && bucket_count(b) > 0; });
	if (shared.empty())
		return;
	const SharedBuffer &b = shared.front();
	const bool fd = std::any_of(b.holds.begin(), b.holds.end(), [](const BufferHold &h) { return h.held_fd(); });
	const size_t buckets = static_cast<size_t>(bucket_count(b));
	std::string why;
	if (tree_seen_first_ && mappers(b) > 1)
		why = strprintf("%zu of its holders map it into their memory, and a restored buffer can be mapped only "
				"where KFD RESTORE made it: in one of them",
				static_cast<size_t>(mappers(b)));
	else if (buckets > 1)
		why = "KFD RESTORE gives every holder a new buffer of its own, and only a criu that shows the plugin "
		      "the whole tree before the first image (4.1 or newer) lets it restore the buffer shared: "
		      "restored apart, they would no longer see each other's writes";
	if (fd)
		why += std::string(why.empty() ? "" : "; ") +
		       (buckets ? "only a criu that shows the plugin the whole tree before the first image (4.1 or "
				  "newer) lets it give the task a dma-buf fd of the restored buffer"
				: "it is memory of no GPU process of the dump (another process's, or a render node's), "
				  "which a restore cannot bring back");
	fail(-EBUSY, "a GPU buffer of %s is shared: %s. %s, so the dump is refused and the processes run on%s",
	     describe_size(b.size()).c_str(), describe_holds(b.holds).c_str(), why.c_str(),
	     shared.size() > 1 ? strprintf(" (%zu shared buffers in all)", shared.size()).c_str() : "");
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

Digest DumpSession::write_kfd_image(uint32_t id, const Checkpoint &cp,
				    const std::map<uint32_t, uint32_t> &actual_to_user, std::span<const BoShare> shares)
{
	const HsakmtShm shm = probe_hsakmt_shm();
	const DeviceEntries devices(local_topology(), &actual_to_user);
	const std::vector<uint8_t> payload = pack_kfd_image({ .pid = cp.info.pid,
							      .num_objects = cp.info.num_objects,
							      .bos = cp.bos,
							      .shares = shares,
							      .priv_data = cp.priv,
							      .devices = &devices,
							      .shared_mem_size = shm.size,
							      .shared_mem_magic = shm.magic,
							      .runtime = cp.runtime });
	write_image(image_dir_, kfd_image_name(id), payload);
	return digest_of(payload);
}

std::vector<BoShare> DumpSession::shares_of(pid_t host_pid, const Checkpoint &cp)
{
	std::vector<BoShare> shares(cp.bos.size());
	bool any = false;
	for (size_t i = 0; i < cp.bos.size(); i++) {
		const kfd_criu_bo_bucket &bo = cp.bos[i];
		if (bo.dmabuf_fd == KFD_INVALID_FD)
			continue;
		const std::optional<BufferKey> dmabuf = driver_.dmabuf_key(static_cast<int>(bo.dmabuf_fd));
		if (!dmabuf)
			continue;
		const BufferKey key = census_.key_of(*dmabuf, actual_gpu(cp.devices, bo.gpu_id), bo.offset);
		const uint32_t number = census_.shared_number(key);
		if (!number)
			continue;
		const std::optional<BufferHold> restorer = census_.restorer_of(key);
		const bool restores = restorer && restorer->pid == host_pid && restorer->addr == bo.addr &&
				      actual_gpu(cp.devices, bo.gpu_id) == restorer->gpu_id;
		shares[i] = { number, restores ? ShareRole::restorer : ShareRole::taker };
		any = true;
		pr_info("pid %d: the %s buffer at 0x%llx is shared buffer %u of the dump: %s",
			static_cast<int>(host_pid), describe_size(bo.size).c_str(),
			static_cast<unsigned long long>(bo.addr), number,
			restores ? "its contents are saved here" : "another holder saves its contents");
	}
	return any ? shares : std::vector<BoShare> {};
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

// One pages file per GPU of the process (empty when it has no VRAM/GTT), as upstream writes them,
// holding that GPU's BOs in bucket order. BOs carry the id the process knows.
std::vector<GpuCopyJob> DumpSession::copy_jobs(const Checkpoint &cp, std::span<const BoShare> shares)
{
	std::vector<GpuCopyJob> jobs;
	for (const auto &dev : cp.devices) {
		GpuCopyJob job =
			copy_job(local_topology(), dev.user_gpu_id, dev.actual_gpu_id, cp.bos, taken_elsewhere(shares));
		if (!job.sizes.empty())
			job.render_fd = render_fd(dev.actual_gpu_id);
		if (!chain().empty()) {
			job.chain = &chain();
			if (!job.sizes.empty() && !chain().has_gpu(dev.user_gpu_id))
				pr_info("pid %u: the earlier checkpoints hold nothing of GPU 0x%04x (dumped with other "
					"GPUs): its memory is written whole",
					cp.info.pid, dev.user_gpu_id);
		}
		jobs.push_back(std::move(job));
	}
	return jobs;
}

std::vector<PagesSums> DumpSession::save_contents(uint32_t id, uint32_t pid, std::span<const GpuCopyJob> jobs)
{
	std::vector<CopyStats> stats =
		copier_.copy(CopyDirection::to_image, jobs, image_dir_, id, options_.max_buffer_size);
	std::vector<PagesSums> sums;
	for (CopyStats &s : stats) {
		pr_info("pid %u: saved %s", pid, describe(s).c_str());
		sums.push_back(std::move(s.sums));
	}
	return sums;
}

void DumpSession::copy_contents(uint32_t id, uint32_t pid, std::vector<uint32_t> gpus, std::shared_ptr<const void> keep,
				std::vector<GpuCopyJob> jobs, ImageSums sums)
{
	if (!copy_beside_criu()) {
		const auto start = std::chrono::steady_clock::now();
		sums.pages = save_contents(id, pid, jobs);
		write_image_sums(image_dir_, id, sums);
		series_copy_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
		return;
	}
	// Everything the copy reads is fixed before it starts: the jobs (their render fds stay open
	// in render_fds_), the chain, and what `keep` holds (the dma-bufs the jobs read through).
	if (!worker_)
		worker_.emplace();
	worker_->post([this, id, pid, gpus, keep = std::move(keep), jobs = std::move(jobs),
		       sums = std::move(sums)](bool skip) mutable {
		try {
			if (skip) { // an earlier copy failed: the dump fails, and this one is not worth doing
				remove_images(id, gpus);
				return;
			}
			sums.pages = save_contents(id, pid, jobs);
			write_image_sums(image_dir_, id, sums);
		} catch (...) {
			remove_images(id, gpus);
			throw;
		}
	});
	unjoined_.emplace_back(id, std::move(gpus));
}

void DumpSession::plan_copies(bool criu_joins, std::string criu_era)
{
	if (!options_.overlap_copy)
		in_series_because_ = "KFD_OVERLAP_COPY=0";
	else if (image_dir_.streamed())
		in_series_because_ = "the images go through criu's image streamer, in the order the restore reads them";
	else if (!criu_joins)
		in_series_because_ = strprintf(
			"criu %s calls no hook after its memory dump that can still fail the dump", criu_era.c_str());
	else
		in_series_because_.reset();
}

void DumpSession::join_copies()
{
	if (!worker_ || worker_->idle())
		return;
	const CopyWorker::Joined joined = worker_->join();
	unjoined_.clear();
	pr_info("%s", describe("dump", CopyOverlap { .copy_seconds = joined.busy_seconds,
						     .beside_seconds = joined.beside_seconds,
						     .waited_seconds = joined.waited_seconds })
			      .c_str());
	if (joined.failure)
		std::rethrow_exception(joined.failure);
}

// criu's `parent` chain (--prev-images-dir), looked at once per dump.
const ImageChain &DumpSession::chain()
{
	if (chain_)
		return *chain_;
	chain_.emplace(image_dir_.streamed() ? ImageChain() : ImageChain::below(image_dir_.dirfd()));
	if (!chain_->empty())
		pr_info("incremental dump: %zu earlier checkpoint%s hold %llu blocks of GPU memory, which are not "
			"written again%s%s",
			chain_->depth(), chain_->depth() == 1 ? "" : "s",
			static_cast<unsigned long long>(chain_->blocks()), chain_->cut_short().empty() ? "" : "; ",
			chain_->cut_short().c_str());
	else if (!chain_->cut_short().empty())
		pr_warn("%s: GPU memory is dumped whole", chain_->cut_short().c_str());
	return *chain_;
}

// A failed dump leaves no image of this file (a kfd file's or a render node's) for a restore to
// trust.
void DumpSession::remove_images(uint32_t id, std::span<const uint32_t> gpus)
{
	image_dir_.remove(kfd_image_name(id));
	image_dir_.remove(render_image_name(id));
	for (const uint32_t gpu : gpus)
		image_dir_.remove(pages_image_name(id, gpu));
	image_dir_.remove(sums_image_name(id));
}

std::vector<uint32_t> DumpSession::image_gpus(const Checkpoint &cp)
{
	std::vector<uint32_t> gpus;
	for (const auto &dev : cp.devices)
		gpus.push_back(dev.user_gpu_id);
	return gpus;
}

// A render-node file: its GPU, and every GEM object it holds (render/gem_dump.hpp), their memory
// in the file's own pages images and sums, copied in series (the task's queues are not what keeps
// them still: criu froze the task, and the objects are idle before they are read).
void DumpSession::dump_render_node(int fd, uint32_t id, unsigned int minor)
{
	const auto start = std::chrono::steady_clock::now();
	const Node *gpu = nullptr;
	for (const Node *n : local_topology().gpus())
		if (n->props.drm_render_minor == minor)
			gpu = n;
	if (!gpu)
		fail(-ENODEV, "render node renderD%u (file id %u) belongs to no GPU of the KFD topology", minor, id);
	std::optional<std::optional<TaskFd>> found; // the task holding the file, looked for once needed
	const auto held = [&]() -> const std::optional<TaskFd> & {
		if (!found)
			found = traced_task_fd(fd);
		return *found;
	};
	const FileName file([&] {
		return held() ? strprintf("pid %d fd %d", static_cast<int>(held()->pid), held()->fd)
			      : strprintf("render-node file id %u", id);
	});
	std::vector<GemObjectState> objects =
		take_gem_objects(driver_, fd, file, minor, [&](int dmabuf) { return kfd_buffer_of(dmabuf, held()); });
	const std::vector<ContextState> contexts = take_contexts(driver_, fd, file);
	refuse_shared_gem_objects(objects, file.str(), minor);
	const size_t own = static_cast<size_t>(std::count_if(objects.begin(), objects.end(), has_own_contents));
	if (own && held())
		refuse_render_before_kfd(held()->pid, file.str(), own);

	// A render file dumped before the /dev/kfd file of its process is named by its actual
	// gpu_id; that is the id the process knows unless it was migrated before.
	const auto user = user_gpu_ids_.find(gpu->gpu_id);
	const uint32_t user_gpu = user == user_gpu_ids_.end() ? gpu->gpu_id : user->second;
	const std::map<uint32_t, uint32_t> actual_to_user = { { gpu->gpu_id, user_gpu } };
	const DeviceEntries devices(local_topology(), &actual_to_user);
	const std::vector<uint8_t> payload =
		pack_render_image({ .id = id,
				    .gpu_id = user_gpu,
				    .minor = minor,
				    .pid = held() ? static_cast<uint32_t>(innermost_pid(held()->pid)) : 0,
				    .devices = &devices,
				    .objects = objects,
				    .contexts = contexts });
	try {
		write_image(image_dir_, render_image_name(id), payload);
		if (own || !contexts.empty())
			save_gem_contents(id, held() ? static_cast<uint32_t>(held()->pid) : 0, gpu->gpu_id, user_gpu,
					  objects, digest_of(payload));
	} catch (...) {
		remove_images(id, std::vector<uint32_t> { user_gpu });
		throw;
	}
	uint64_t bytes = 0;
	for (const GemObjectState &o : objects)
		bytes += has_own_contents(o) ? o.object.size : 0;
	const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
	pr_info("saved %s: renderD%u of GPU 0x%04x, %zu GEM objects (%zu with their memory here, %llu bytes), %zu "
		"contexts, in %.1f ms%s",
		render_image_name(id).c_str(), minor, user_gpu, objects.size(), own,
		static_cast<unsigned long long>(bytes), contexts.size(), ms,
		own && copy_beside_criu() ? "; their memory is being copied beside criu's dump" : "");
}

// The KFD buffer of the dump a GEM object is: preferably one of the process that holds the file.
std::optional<KfdBufferRef> DumpSession::kfd_buffer_of(int dmabuf, const std::optional<TaskFd> &held)
{
	const std::optional<BufferKey> key = driver_.dmabuf_key(dmabuf);
	if (!key)
		return std::nullopt;
	std::optional<KfdBufferRef> found;
	for (const BufferHold &h : census_.holds_of(census_.key_of(*key))) {
		if (h.held_fd())
			continue;
		if (held && h.pid == held->pid)
			return KfdBufferRef { h.pid, h.addr, true };
		if (!found) // when the file's task is not known (criu always traces it), the first holder's
			found = KfdBufferRef { h.pid, h.addr, !held };
	}
	return found;
}

// An object another render-node file of the dump holds too (a buffer passed between files or
// processes through PRIME): each file's image would make a buffer of its own, and the two would
// no longer see each other's writes.
void DumpSession::refuse_shared_gem_objects(std::span<const GemObjectState> objects, const std::string &file,
					    unsigned int minor)
{
	std::vector<std::pair<BufferKey, std::string>> mine;
	for (const GemObjectState &o : objects) {
		if (!has_own_contents(o))
			continue;
		const std::optional<BufferKey> key = driver_.dmabuf_key(o.dmabuf.get());
		if (!key)
			continue;
		const std::string here =
			strprintf("GEM handle %u of %s (renderD%u)", o.object.handle, file.c_str(), minor);
		if (const auto it = gem_objects_seen_.find(*key); it != gem_objects_seen_.end())
			fail(-EBUSY,
			     "%s (%llu bytes) is the same buffer as %s: restored apart, they would no longer see each "
			     "other's writes, and this plugin does not restore a GEM buffer shared between render-node "
			     "files, so the dump is refused and the tasks run on",
			     here.c_str(), static_cast<unsigned long long>(o.object.size), it->second.c_str());
		mine.emplace_back(*key, here);
	}
	for (auto &[key, what] : mine)
		gem_objects_seen_.emplace(key, std::move(what));
}

// criu before 4.1 hands the files one by one. A render-node file that comes before its process's
// /dev/kfd file cannot tell which of its objects are KFD buffers, and saved apart they would come
// back as memory of their own, no longer the buffers the runtime holds.
void DumpSession::refuse_render_before_kfd(pid_t pid, const std::string &file, size_t own)
{
	for (const unique_fd &kfd : gpu_files_of_task(pid).kfd) {
		const bool taken = std::any_of(paused_.begin(), paused_.end(), [&](const PausedProcess &p) {
			return same_open_file(p.fd.get(), kfd.get());
		});
		if (!taken)
			fail(-EBUSY,
			     "%s, a render-node file, comes before the process's /dev/kfd file, so the plugin cannot "
			     "tell "
			     "which of its %zu GEM objects are KFD buffers: saved apart, they would come back as "
			     "memory "
			     "of their own. The dump is refused and the task runs on; use criu 4.1 or newer, which "
			     "shows the plugin the whole process first",
			     file.c_str(), own);
	}
}

void DumpSession::save_gem_contents(uint32_t id, uint32_t pid, uint32_t gpu_id, uint32_t user_gpu,
				    std::span<GemObjectState> objects, const Digest &image_digest)
{
	// the dma-bufs the copy reads through, held until it is done (beside criu: after this hook)
	auto dmabufs = std::make_shared<std::vector<unique_fd>>();
	std::vector<kfd_criu_bo_bucket> buckets;
	for (GemObjectState &o : objects)
		if (has_own_contents(o)) {
			buckets.push_back(gem_bucket(user_gpu, o.object, o.mappings, o.dmabuf.get()));
			dmabufs->push_back(std::move(o.dmabuf));
		}
	ImageSums sums;
	sums.kfd = image_digest; // the image itself is checked too, when it holds contexts alone
	if (buckets.empty()) {
		write_image_sums(image_dir_, id, sums);
		return;
	}
	GpuCopyJob job = copy_job(local_topology(), user_gpu, gpu_id, buckets);
	job.render_fd = render_fd(gpu_id);
	if (!chain().empty())
		job.chain = &chain();
	std::vector<GpuCopyJob> jobs;
	jobs.push_back(std::move(job));
	copy_contents(id, pid, { user_gpu }, std::move(dmabufs), std::move(jobs), std::move(sums));
}

void DumpSession::finish()
{
	if (getpid() != owner_) {
		paused_.clear(); // closes this helper's copies of the fds, nothing more
		return;
	}
	// Copies criu never joined: the dump failed before its memory dump ended. They end before
	// the queues run again, and leave no image behind.
	if (worker_ && !worker_->idle()) {
		const CopyWorker::Joined joined = worker_->join();
		for (const auto &[id, gpus] : unjoined_)
			remove_images(id, gpus);
		pr_info("the dump failed before criu joined the GPU copies begun beside it (%.3f s of copy, "
			"%.3f s waited for at the end): their images are removed",
			joined.busy_seconds, joined.waited_seconds);
		unjoined_.clear();
	}
	if (series_copy_seconds_ > 0 && in_series_because_)
		pr_info("%s", describe_in_series("dump", series_copy_seconds_, *in_series_because_).c_str());
	series_copy_seconds_ = 0;
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
