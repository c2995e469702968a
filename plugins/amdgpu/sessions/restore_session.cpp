// SPDX-License-Identifier: GPL-2.0-only
#include "sessions/restore_session.hpp"

#include "render/gem_contents.hpp"
#include "render/gem_restore.hpp"

#include "copy/bo_transfer.hpp"
#include "copy/copy_overlap.hpp"
#include "criu/criu_abi.hpp"
#include "criu/criu_api.hpp"
#include "driver/device_files.hpp"
#include "support/error.hpp"
#include "driver/hsakmt_shm.hpp"
#include "images/image_store.hpp"
#include "driver/kfd_buckets.hpp"
#include "driver/kfd_ioctl.hpp"
#include "driver/kfd_priv_data.hpp"
#include "support/log.hpp"
#include "sessions/shared_buffers.hpp"
#include "driver/task_fds.hpp"
#include "topology/topology_image.hpp"
#include "driver/transient_retry.hpp"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <set>

namespace amdgpu {

namespace {

constexpr uint32_t kRemappedFlags =
	kfd::kContentMemFlags | KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP;

std::string describe_map(const GpuMap &map)
{
	std::string out;
	for (const auto &[user, actual] : map.gpu_ids)
		out += strprintf("%s0x%04x->0x%04x", out.empty() ? "" : ", ", user, actual);
	return out;
}

} // namespace

RestoreSession::RestoreSession(const Options &options, ImageDir image_dir, const RestoreGuard *guard,
			       std::filesystem::path topology_dir, GpuDriver &driver, ContentCopier &copier)
    : options_(options), image_dir_(std::move(image_dir)), guard_(guard), topology_dir_(std::move(topology_dir)),
      driver_(driver), copier_(copier), owner_(getpid())
{
}

const Topology &RestoreSession::local_topology()
{
	if (!local_)
		local_ = parse_topology(topology_dir_);
	return *local_;
}

const GpuMap &RestoreSession::gpu_map(const CriuKfd &msg, const std::string &image)
{
	if (!map_) {
		const Topology src = topology_from_image(msg, image);
		GpuMap map = match_gpus(src, local_topology(), options_.match);
		for (const auto &[user, local] : provisional_gpus_) {
			const auto it = map.gpu_ids.find(user);
			if (it == map.gpu_ids.end() || it->second != local)
				fail(-EXDEV,
				     "pid %u: a render-node file restored before %s was placed on local GPU 0x%04x "
				     "(the image's 0x%04x), but the image maps that GPU to %s; through the image "
				     "streamer this criu cannot defer that file: restore from files, or with criu 4.3",
				     msg.pid, image.c_str(), local, user,
				     it == map.gpu_ids.end() ? "none" : strprintf("0x%04x", it->second).c_str());
		}
		map_ = std::move(map);
		pr_info("pid %u: GPU map (image -> local) %s", msg.pid, describe_map(*map_).c_str());
	}
	return *map_;
}

const GpuMap *RestoreSession::gpu_map_from_own_image()
{
	if (map_ || searched_own_image_ || image_dir_.streamed())
		return map_ ? &*map_ : nullptr;
	searched_own_image_ = true;

	// Our pid inside the task's namespace is the pid the dump recorded.
	const uint32_t vpid = static_cast<uint32_t>(getpid());
	for (const uint32_t id : kfd_image_ids(image_dir_.dirfd())) {
		const CriuKfdPtr msg = read_criu_kfd(image_dir_, id);
		if (msg->pid == vpid)
			return &gpu_map(*msg, kfd_image_name(id));
	}
	return gpu_map_from_render_images(vpid);
}

// A process without KFD state: the GPUs its render-node images describe, matched all at once.
const GpuMap *RestoreSession::gpu_map_from_render_images(uint32_t vpid)
{
	std::vector<CriuRenderNodePtr> images;
	std::vector<const KfdDeviceEntry *> entries;
	std::set<uint32_t> nodes;
	for (const uint32_t id : render_image_ids(image_dir_.dirfd())) {
		CriuRenderNodePtr msg = read_criu_render_node(image_dir_, id);
		if (!msg->has_pid || msg->pid != vpid)
			continue;
		for (size_t i = 0; i < msg->n_device_entries; i++)
			if (nodes.insert(msg->device_entries[i]->node_id).second)
				entries.push_back(msg->device_entries[i]);
		images.push_back(std::move(msg));
	}
	if (entries.empty())
		return nullptr; // an image of another plugin, or of a process that had KFD state
	const Topology src = topology_from_device_entries(entries, strprintf("render-node images of pid %u", vpid));
	map_ = match_gpus(src, local_topology(), options_.match);
	map_from_render_images_ = true;
	pr_info("pid %u: GPU map (render-node images -> local) %s", vpid, describe_map(*map_).c_str());
	return &*map_;
}

int RestoreSession::fd_floor(uint32_t vpid)
{
	if (fd_floor_ >= 0)
		return fd_floor_;
	// Every fd the plugin keeps in the task must sit above the fds criu is going to install
	// there, or criu's dup2 would silently replace it.
	fd_floor_ = find_unused_fd_pid ? find_unused_fd_pid(static_cast<int>(vpid)) : 0;
	if (fd_floor_ < 0)
		fail(-EINVAL, "criu knows no task with pid %u to place render-node fds in", vpid);
	return fd_floor_;
}

unique_fd RestoreSession::open_render_node(uint32_t actual_gpu_id)
{
	const Node *gpu = local_topology().gpu(actual_gpu_id);
	if (!gpu)
		fail(-ENODEV, "local GPU 0x%04x is not in the KFD topology", actual_gpu_id);
	const unsigned int minor_nr = gpu->props.drm_render_minor;
	const std::string name = strprintf("renderD%u", minor_nr);
	std::string named_is;
	const std::string path = driver_.find_render_node(minor_nr, &named_is);
	if (path.empty())
		fail(-ENOENT,
		     "GPU 0x%04x has no render node in this mount namespace: %s/%s is %s and no other entry "
		     "of %s is device %u:%u (a container must be given the GPU's render node)",
		     actual_gpu_id, kDriDir, name.c_str(), named_is.c_str(), kDriDir, kDrmMajor, minor_nr);
	if (path != std::string(kDriDir) + "/" + name)
		pr_info("GPU 0x%04x: its render node %s is %s in this mount namespace", actual_gpu_id, name.c_str(),
			path.c_str());
	unique_fd fd(driver_.open_device(path));
	if (!fd)
		fail_errno(fd.get(), "cannot open %s for GPU 0x%04x%s", path.c_str(), actual_gpu_id,
			   fd.get() == -EACCES ? " (is the user in the video/render group?)" : "");
	unique_fd high(fcntl(fd.get(), F_DUPFD_CLOEXEC, fd_floor(static_cast<uint32_t>(getpid()))));
	if (!high)
		fail_errno(errno, "cannot move the fd of %s above the task's fds", path.c_str());
	return high;
}

void RestoreSession::require_render_nodes(const GpuMap &map)
{
	// KFD gave this task every GPU its device cgroup allows, used by the image or not, and each
	// needs a render node here: a container that lacks some hears of all of them at once.
	std::vector<const Node *> absent;
	std::string missing;
	for (const Node *gpu : local_topology().gpus()) {
		const unsigned int minor_nr = gpu->props.drm_render_minor;
		if (!driver_.find_render_node(minor_nr, nullptr).empty())
			continue;
		std::string role = "which the image does not use";
		for (const auto &[user, actual] : map.gpu_ids)
			if (actual == gpu->gpu_id)
				role = strprintf("the image's GPU 0x%04x", user);
		absent.push_back(gpu);
		missing += strprintf("%s0x%04x (%s/renderD%u, device %u:%u, %s)", missing.empty() ? "" : "; ",
				     gpu->gpu_id, kDriDir, minor_nr, kDrmMajor, minor_nr, role.c_str());
	}
	if (absent.empty())
		return;
	// A container's /dev comes back as the checkpoint saw it (the engine's runtime has criu
	// restore its tmpfs rather than make its nodes again), so on a node whose GPUs have other
	// render minors it holds the old GPUs' nodes, not those the engine was told to give the new
	// container. Where the task's device cgroup keeps it to what it was given (runc applies the
	// new container's device rules before criu restores), KFD's GPUs are exactly those, and their
	// nodes are made here, as the engine makes them for a container it starts. Otherwise which
	// GPUs the container may use cannot be told here, and the restore is refused.
	const int rules = driver_.device_rules_restrict();
	if (rules == 1) {
		const std::string held = driver_.describe_render_nodes();
		for (const Node *gpu : absent) {
			const unsigned int minor_nr = gpu->props.drm_render_minor;
			std::string how;
			if (const int err = driver_.make_render_node(minor_nr, &how))
				fail_errno(err,
					   "GPU 0x%04x, which this task's device cgroup grants, has no render node "
					   "in this mount namespace (its /dev came back from the checkpoint), and "
					   "%s/renderD%u (device %u:%u) cannot be made",
					   gpu->gpu_id, kDriDir, minor_nr, kDrmMajor, minor_nr);
			pr_info("GPU 0x%04x, which this task's device cgroup grants, had no render node in this mount "
				"namespace (its /dev came back from the checkpoint, holding %s): made %s/renderD%u, "
				"device %u:%u, %s",
				gpu->gpu_id, held.c_str(), kDriDir, minor_nr, kDrmMajor, minor_nr, how.c_str());
		}
		return;
	}
	const std::string why =
		rules == 0 ? std::string("nothing in its device cgroup restricts it, so which GPUs its container was "
					 "given cannot be told here")
			   : strprintf("whether its device cgroup restricts it cannot be told (%s)", strerror(-rules));
	fail(-ENOENT,
	     "this task has %zu GPU(s) through KFD (every one its device cgroup allows) and each needs "
	     "its render node in this mount namespace, which lacks: %s; %s holds %s (a container must "
	     "be given the render node of every GPU it may use; %s)",
	     local_topology().gpus().size(), missing.c_str(), kDriDir, driver_.describe_render_nodes().c_str(),
	     why.c_str());
}

int RestoreSession::render_fd(uint32_t actual_gpu_id)
{
	auto it = render_fds_.find(actual_gpu_id);
	if (it == render_fds_.end())
		it = render_fds_.emplace(actual_gpu_id, open_render_node(actual_gpu_id)).first;
	return it->second.get();
}

int RestoreSession::restore_file(uint32_t id, bool *retry)
{
	if (const auto it = retried_render_.find(id); it != retried_render_.end()) {
		RenderImage image = std::move(it->second);
		retried_render_.erase(it);
		if (retried_render_.empty())
			placeholder_.reset(); // criu is done with it: it came back for every file it deferred
		return restore_render_node(std::move(image), id, nullptr);
	}
	if (auto kfd = ImageReader::open_if_exists(image_dir_, kfd_image_name(id), kMaxMetadataImageSize))
		return restore_kfd(*kfd, id);
	if (auto render = ImageReader::open_if_exists(image_dir_, render_image_name(id), kMaxMetadataImageSize)) {
		std::vector<uint8_t> payload = read_payload(*render);
		CriuRenderNodePtr msg = unpack_criu_render_node(payload, render_image_name(id));
		return restore_render_node({ std::move(msg), std::move(payload) }, id, retry);
	}
	if (auto dmabuf = ImageReader::open_if_exists(image_dir_, dmabuf_image_name(id), kMaxMetadataImageSize))
		return restore_dmabuf(*dmabuf, retry);
	return -ENOTSUP;
}

int RestoreSession::restore_kfd(ImageReader &kfd_image, uint32_t id)
{
	const auto start = std::chrono::steady_clock::now();
	const std::string image = kfd_image_name(id);
	const std::vector<uint8_t> payload = read_payload(kfd_image);
	// From files the sums are read first, so that a damaged kfd image is refused before anything
	// trusts it; through a stream they come after the pages, where the dump wrote them.
	std::optional<ImageSums> sums;
	if (!image_dir_.streamed())
		sums = read_checked_sums(image_dir_, id, payload);
	const CriuKfdPtr msg = unpack_criu_kfd(payload, image);
	fd_floor(msg->pid);
	enlist();
	kfd::Version version;
	unique_fd kfd = open_kfd(version);
	const GpuMap &map = gpu_map(*msg, image);
	require_render_nodes(map);
	std::vector<kfd_criu_device_bucket> devices = device_buckets_of(map);
	std::vector<kfd_criu_bo_bucket> bos = bo_buckets(*msg, map.gpu_ids, image);
	std::vector<uint8_t> priv = driver_state(*msg, devices.size(), image);
	recreate_hsakmt_shm({ msg->shared_mem_size, msg->shared_mem_magic });
	const std::vector<BoShare> shares = bo_shares(*msg, image);
	register_runtime(kfd.get(), version, *msg, image);
	const std::vector<unique_fd> dmabufs = restore_state(kfd.get(), devices, bos, priv, *msg, image);
	keep_kfd_buffers(bos);
	offer_shared_buffers(bos, shares);
	restore_contents(id, *msg, map, bos, shares, sums, payload);
	take_shared_buffers(kfd.get(), *msg, bos, shares, image);
	remember_mappings(map, bos, shares);
	close_unused_render_fds(map);
	kfd_restored_ = true;

	const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
	pr_info("pid %u: restored %s (%zu GPUs, %zu BOs, %u queues/events) in %.1f ms; queues wait for resume",
		msg->pid, image.c_str(), devices.size(), bos.size(), msg->num_of_objects, ms);
	return kfd.release();
}

// Before KFD holds anything of the task, the guard knows it.
void RestoreSession::enlist()
{
	if (guard_ && !enlisted_) {
		guard_->enlist_this_task(image_dir_.dirfd());
		enlisted_ = true;
	}
}

unique_fd RestoreSession::open_kfd(kfd::Version &v)
{
	unique_fd kfd(driver_.open_device(kKfdPath));
	if (!kfd)
		fail_errno(kfd.get(), "cannot open %s", kKfdPath);
	if (const int ret = driver_.get_version(kfd.get(), v))
		fail_errno(ret, "KFD GET_VERSION on %s failed", kKfdPath);
	if (v.major != kfd::kMinMajor || v.minor < kfd::kMinMinor)
		fail(-EPROTONOSUPPORT, "KFD ioctl interface %u.%u cannot restore: %u.%u or newer is needed", v.major,
		     v.minor, kfd::kMinMajor, kfd::kMinMinor);
	return kfd;
}

// RUNTIME_ENABLE acts on the caller's own process and is refused once it has queues: here, in the
// restored task, before KFD's RESTORE gives it back its queues.
void RestoreSession::register_runtime(int kfd, const kfd::Version &version, const CriuKfd &msg,
				      const std::string &image)
{
	const std::optional<kfd::RuntimeInfo> runtime = kfd_runtime(msg, image);
	if (!runtime) {
		if (version >= kfd::kRuntimeEnableSince)
			pr_warn("pid %u: %s does not say whether ROCm's runtime was registered with KFD (a plugin "
				"that does not save it wrote the image, or a kernel without RUNTIME_ENABLE ran the "
				"process); restored unregistered, a runtime that was would not hear of GPU errors",
				msg.pid, image.c_str());
		return;
	}
	if (runtime->state != kfd::RuntimeState::enabled)
		return;
	if (version < kfd::kRuntimeEnableSince)
		fail(-EPROTONOSUPPORT,
		     "pid %u had ROCm's runtime registered with KFD (RUNTIME_ENABLE: GPU errors are reported to it), "
		     "which this kernel's KFD %u.%u cannot do (%u.%u or newer): restored, the process would never "
		     "hear of a GPU error; restore it on a newer kernel",
		     msg.pid, version.major, version.minor, kfd::kRuntimeEnableSince.major,
		     kfd::kRuntimeEnableSince.minor);
	if (const int ret = driver_.runtime_enable(kfd, *runtime))
		fail_errno(ret, "pid %u: KFD RUNTIME_ENABLE (r_debug 0x%llx) failed", msg.pid,
			   static_cast<unsigned long long>(runtime->r_debug));
	pr_info("pid %u: ROCm's runtime registered with KFD again (r_debug 0x%llx, trap temporaries %s)", msg.pid,
		static_cast<unsigned long long>(runtime->r_debug), runtime->ttmp_setup ? "set up" : "not set up");
}

std::vector<kfd_criu_device_bucket> RestoreSession::device_buckets_of(const GpuMap &map)
{
	std::vector<uint32_t> local_ids;
	for (const Node *gpu : local_topology().gpus())
		local_ids.push_back(gpu->gpu_id);
	std::vector<kfd_criu_device_bucket> devices = device_buckets(local_ids, map.gpu_ids);
	for (kfd_criu_device_bucket &b : devices)
		b.drm_fd = static_cast<uint32_t>(render_fd(b.actual_gpu_id));
	return devices;
}

std::vector<uint8_t> RestoreSession::driver_state(const CriuKfd &msg, size_t devices, const std::string &image)
{
	std::vector<uint8_t> priv =
		priv_data_for_devices({ msg.priv_data.data, msg.priv_data.len }, msg.num_of_gpus, devices, image);
	if (devices != msg.num_of_gpus)
		pr_info("pid %u: %zu local GPUs for the image's %u; the others get empty driver records", msg.pid,
			devices, msg.num_of_gpus);
	return priv;
}

std::vector<unique_fd> RestoreSession::restore_state(int kfd, std::span<kfd_criu_device_bucket> devices,
						     std::span<kfd_criu_bo_bucket> bos, std::span<uint8_t> priv,
						     const CriuKfd &msg, const std::string &image)
{
	if (const int ret = driver_.criu_restore(kfd, devices, bos, priv, msg.num_of_objects))
		fail_errno(ret, "KFD RESTORE of %s failed", image.c_str());
	// RESTORE installs a dma-buf fd in our table for every VRAM/GTT BO: own them at once.
	std::vector<unique_fd> dmabufs;
	for (const auto &bo : bos)
		if (bo.dmabuf_fd != KFD_INVALID_FD)
			dmabufs.emplace_back(static_cast<int>(bo.dmabuf_fd));
	return dmabufs;
}

// Contents go back before criu maps anything and long before the queues resume.
void RestoreSession::restore_contents(uint32_t id, const CriuKfd &msg, const GpuMap &map,
				      std::span<const kfd_criu_bo_bucket> bos, std::span<const BoShare> shares,
				      std::optional<ImageSums> &sums, std::span<const uint8_t> kfd_payload)
{
	const char *in_series = copy_in_series_because();
	if (!in_series) {
		hand_contents_to_guard(id, msg, map, bos, shares);
		return;
	}
	const auto start = std::chrono::steady_clock::now();
	const ContentsCopy copy = {
		local_topology(),
		image_dir_,
		id,
		msg.pid,
		map.gpu_ids,
		bos,
		taken_elsewhere(shares),
		[&](uint32_t gpu) { return open_render_node(gpu); },
		copier_,
		options_.max_buffer_size,
	};
	std::vector<LogLine> lines;
	if (image_dir_.streamed()) {
		// through a stream the sums come after the pages, where the dump wrote them
		const std::vector<GpuContents> contents = copy_contents(copy, sums, lines);
		sums = read_checked_sums(image_dir_, id, kfd_payload);
		check_contents(id, msg.pid, sums, contents, lines);
	} else {
		lines = restore_contents_of(copy, sums);
	}
	for (const LogLine &line : lines)
		log(line.level, "%s", line.text.c_str());
	const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	pr_info("%s", describe_in_series(strprintf("pid %u: restore", msg.pid).c_str(), seconds, in_series).c_str());
}

const char *RestoreSession::copy_in_series_because() const
{
	if (image_dir_.streamed())
		return "the images come through criu's image streamer, which hands each image to one process "
		       "once";
	if (!guard_)
		return "this restore has no restore guard to copy beside criu";
	if (!options_.overlap_copy)
		return "KFD_OVERLAP_COPY=0";
	return nullptr;
}

// The guard copies from the images and checks the sums itself; the task hands it only what it
// cannot know: which local GPUs and which of KFD's new BOs.
void RestoreSession::hand_contents_to_guard(uint32_t id, const CriuKfd &msg, const GpuMap &map,
					    std::span<const kfd_criu_bo_bucket> bos, std::span<const BoShare> shares)
{
	const std::vector<bool> elsewhere = taken_elsewhere(shares);
	std::vector<int> dmabufs;
	size_t handed = 0;
	for (size_t i = 0; i < bos.size(); i++) {
		const bool fill = bos[i].dmabuf_fd != KFD_INVALID_FD && !(i < elsewhere.size() && elsewhere[i]);
		dmabufs.push_back(fill ? static_cast<int>(bos[i].dmabuf_fd) : -1);
		handed += fill;
	}
	guard_->hand_copy(image_dir_.dirfd(), id, map.gpu_ids, dmabufs, options_.max_buffer_size);
	pr_info("pid %u: the restore guard copies the contents of %s (%zu BOs) beside criu's restore of the "
		"task's memory",
		msg.pid, kfd_image_name(id).c_str(), handed);
}

// Shared buffers this task restores: the other holders may take them from now on.
void RestoreSession::offer_shared_buffers(std::span<const kfd_criu_bo_bucket> bos, std::span<const BoShare> shares)
{
	for (size_t i = 0; i < shares.size(); i++) {
		if (shares[i].role != ShareRole::restorer)
			continue;
		if (!guard_)
			fail(-ENOTSUP,
			     "shared buffer %u (at 0x%llx) cannot be passed to the tasks that share it: this "
			     "restore has no restore guard",
			     shares[i].buffer, static_cast<unsigned long long>(bos[i].addr));
		guard_->offer_buffer(image_dir_.dirfd(), shares[i].buffer, static_cast<int>(bos[i].dmabuf_fd));
		pr_info("pid %d: offered shared buffer %u (%s at 0x%llx) to the tasks that share it", getpid(),
			shares[i].buffer, describe_size(bos[i].size).c_str(),
			static_cast<unsigned long long>(bos[i].addr));
	}
}

unique_fd RestoreSession::take_buffer(uint32_t number)
{
	unique_fd dmabuf = guard_->take_buffer(image_dir_.dirfd(), number, take_timeout_ms);
	if (!dmabuf)
		fail(-ETIMEDOUT,
		     "shared buffer %u did not come within %d ms: the task that restores it did not offer it (it "
		     "failed, or its image is missing)",
		     number, take_timeout_ms);
	return dmabuf;
}

constexpr int kRetryTakeMs = 200;

// A taken buffer's id is reached by importing it on every lower free id first: at most this many.
constexpr uint32_t kMaxFillerImports = 1u << 16;

// A dma-buf fd the task held: one of the restored buffer, from the task that restores it. Where
// criu can come back later (4.3), the fd waits for nothing: a buffer this very task restores
// comes with its kfd file, which criu may restore after this one.
int RestoreSession::restore_dmabuf(ImageReader &image, bool *retry)
{
	const uint32_t number = read_dmabuf_image(image);
	if (!guard_)
		fail(-ENOTSUP,
		     "%s is a dma-buf fd of shared buffer %u, which only the restore guard passes; this "
		     "restore has none",
		     image.name().c_str(), number);
	enlist();
	unique_fd dmabuf;
	if (retry) {
		// long enough for the guard to answer when the offer is there, or on its way
		dmabuf = guard_->take_buffer(image_dir_.dirfd(), number, kRetryTakeMs);
		if (!dmabuf) {
			*retry = true;
			pr_debug("%s: shared buffer %u is not restored yet; criu comes back later",
				 image.name().c_str(), number);
			return retry_placeholder();
		}
	} else {
		dmabuf = take_buffer(number);
	}
	pr_info("restored %s: a dma-buf fd of shared buffer %u", image.name().c_str(), number);
	return dmabuf.release();
}

void RestoreSession::take_shared_buffers(int kfd, const CriuKfd &msg, std::span<const kfd_criu_bo_bucket> bos,
					 std::span<const BoShare> shares, const std::string &image)
{
	if (std::none_of(shares.begin(), shares.end(), [](const BoShare &s) { return s.role == ShareRole::taker; }))
		return;
	if (!guard_)
		fail(-ENOTSUP,
		     "%s takes buffers other tasks restore, which only the restore guard passes; this restore "
		     "has none",
		     image.c_str());
	std::vector<uint32_t> image_gpus;
	for (size_t i = 0; i < msg.n_device_entries; i++)
		if (msg.device_entries[i]->gpu_id)
			image_gpus.push_back(msg.device_entries[i]->gpu_id);
	const std::vector<BoPrivRecord> records = bo_priv_records({ msg.priv_data.data, msg.priv_data.len },
								  msg.num_of_gpus, bos.size(), image_gpus, image);
	for (size_t i = 0; i < shares.size(); i++)
		if (shares[i].role == ShareRole::taker)
			take_shared_buffer(kfd, bos[i], shares[i], records[i]);
}

void RestoreSession::take_shared_buffer(int kfd, const kfd_criu_bo_bucket &bo, const BoShare &share,
					const BoPrivRecord &rec)
{
	const std::string what =
		strprintf("shared buffer %u (%s at 0x%llx on GPU 0x%04x)", share.buffer, describe_size(bo.size).c_str(),
			  static_cast<unsigned long long>(bo.addr), bo.gpu_id);
	const unique_fd dmabuf = take_buffer(share.buffer);
	// the buffer KFD made for this task goes; its id is then free for the import
	const uint64_t own = kfd::make_handle(bo.gpu_id, rec.id);
	if (const int ret = driver_.unmap_memory(kfd, own, rec.mapped_gpu_ids))
		fail_errno(ret, "cannot unmap the copy KFD RESTORE made of %s", what.c_str());
	if (const int ret = driver_.free_memory(kfd, own))
		fail_errno(ret, "cannot free the copy KFD RESTORE made of %s", what.c_str());
	if (rec.id > kMaxFillerImports)
		fail(-EINVAL, "%s: its id %u in the driver state is beyond what this plugin fills (%u)", what.c_str(),
		     rec.id, kMaxFillerImports);
	std::vector<uint64_t> fillers; // imports on lower free ids, let go once the id is reached
	uint64_t handle = 0;
	int ret = 0;
	for (;;) {
		if ((ret = driver_.import_dmabuf(kfd, bo.gpu_id, dmabuf.get(), bo.addr, handle)))
			break;
		if (kfd::handle_id(handle) == rec.id)
			break;
		if (kfd::handle_id(handle) > rec.id) {
			fillers.push_back(handle);
			ret = -EEXIST;
			break;
		}
		fillers.push_back(handle);
	}
	for (const uint64_t f : fillers)
		if (const int r = driver_.free_memory(kfd, f))
			pr_warn("%s: cannot let go of a stand-in import (handle 0x%llx): %s", what.c_str(),
				static_cast<unsigned long long>(f), strerror(-r));
	if (ret == -EEXIST)
		fail(-EEXIST, "KFD would not import %s under its id %u: it gave %u", what.c_str(), rec.id,
		     kfd::handle_id(fillers.back()));
	if (ret)
		fail_errno(ret, "KFD IMPORT_DMABUF of %s failed", what.c_str());
	if ((ret = driver_.map_memory(kfd, handle, rec.mapped_gpu_ids)))
		fail_errno(ret, "cannot map %s on its %zu GPUs again", what.c_str(), rec.mapped_gpu_ids.size());
	pr_info("pid %d: took %s from the task that restores it (handle 0x%llx, mapped on %zu GPUs, %zu ids filled "
		"for the moment)",
		getpid(), what.c_str(), static_cast<unsigned long long>(handle), rec.mapped_gpu_ids.size(),
		fillers.size());
	if (const auto it = kfd_buffers_.find(bo.addr); it != kfd_buffers_.end())
		it->second.reset(fcntl(dmabuf.get(), F_DUPFD_CLOEXEC, fd_floor_));
}

// A render-node file of the task may hold GEM handles of its KFD buffers (ROCm imports them):
// their restore imports the restored buffers (restore_render_node()), whose dma-bufs are kept
// until the task's files are all in place.
void RestoreSession::keep_kfd_buffers(std::span<const kfd_criu_bo_bucket> bos)
{
	if (!render_images_name_kfd_buffers())
		return;
	for (const kfd_criu_bo_bucket &bo : bos) {
		if (bo.dmabuf_fd == KFD_INVALID_FD)
			continue;
		unique_fd kept(fcntl(static_cast<int>(bo.dmabuf_fd), F_DUPFD_CLOEXEC, fd_floor_));
		if (!kept)
			fail_errno(errno, "cannot keep the dma-buf of the KFD buffer at 0x%llx for the render node",
				   static_cast<unsigned long long>(bo.addr));
		kfd_buffers_[bo.addr] = std::move(kept);
	}
}

// Whether a render-node image of this task names a KFD buffer (through a stream: maybe).
bool RestoreSession::render_images_name_kfd_buffers()
{
	if (image_dir_.streamed())
		return true;
	const uint32_t vpid = static_cast<uint32_t>(getpid());
	for (const uint32_t id : render_image_ids(image_dir_.dirfd())) {
		const CriuRenderNodePtr msg = read_criu_render_node(image_dir_, id);
		if (!msg->has_pid || msg->pid != vpid)
			continue;
		for (const GemEntry &e : gem_entries(*msg, render_image_name(id)))
			if (e.kfd_addr)
				return true;
	}
	return false;
}

unique_fd RestoreSession::restored_kfd_buffer(uint64_t addr)
{
	const auto it = kfd_buffers_.find(addr);
	if (it == kfd_buffers_.end() || !it->second)
		return unique_fd();
	return unique_fd(fcntl(it->second.get(), F_DUPFD_CLOEXEC, 0));
}

// The mappings criu will ask about (UPDATE_VMA_MAP): KFD gave their BOs new offsets.
void RestoreSession::remember_mappings(const GpuMap &map, std::span<const kfd_criu_bo_bucket> bos,
				       std::span<const BoShare> shares)
{
	for (size_t i = 0; i < bos.size(); i++) {
		const kfd_criu_bo_bucket &bo = bos[i];
		if (!(bo.alloc_flags & kRemappedFlags))
			continue;
		uint32_t gpu = 0;
		if (bo.alloc_flags & kfd::kContentMemFlags)
			gpu = map.gpu_ids.at(bo.gpu_id);
		const bool taken = i < shares.size() && shares[i].role == ShareRole::taker;
		vmas_.push_back({ bo.addr, bo.offset, bo.restored_offset, gpu, taken ? shares[i].buffer : 0 });
	}
}

int RestoreSession::restore_render_node(RenderImage image, uint32_t id, bool *retry)
{
	const CriuRenderNode &msg = *image.msg;
	const std::string name = render_image_name(id);
	uint32_t actual = 0;
	if (const GpuMap *map = gpu_map_from_own_image()) {
		const auto it = map->gpu_ids.find(msg.gpu_id);
		if (it == map->gpu_ids.end())
			fail(-EINVAL, "%s names GPU 0x%04x, which this process's %s does not describe", name.c_str(),
			     msg.gpu_id, map_from_render_images_ ? "render-node images" : "kfd image");
		actual = it->second;
	} else if (image_dir_.streamed() && retry) {
		// The task's kfd file may still come: criu opens its other files first, then asks again.
		pr_debug("%s comes before this task's kfd image; criu asks for it again later", name.c_str());
		retried_render_.emplace(id, std::move(image));
		*retry = true;
		return retry_placeholder();
	} else {
		actual = provisional_render_gpu(msg, id);
	}
	const std::vector<GemEntry> objects = gem_entries(msg, name);
	const std::vector<ContextState> contexts = contexts_of(msg, name);
	const bool names_kfd_buffers =
		std::any_of(objects.begin(), objects.end(), [](const GemEntry &e) { return e.kfd_addr.has_value(); });
	if (names_kfd_buffers && !kfd_restored_ && retry) {
		// its handles of KFD buffers need them restored: criu comes back once it opened the rest
		pr_debug("%s names KFD buffers of the task, which are not restored yet; criu asks for it again later",
			 name.c_str());
		retried_render_.emplace(id, std::move(image));
		*retry = true;
		return retry_placeholder();
	}
	const bool has_state = !objects.empty() || !contexts.empty();
	if (!has_state || !gem_filled_.count(actual)) {
		// the file KFD's VM is in (a ROCm runtime's render node): the task's first of this GPU
		const int fd = dup(render_fd(actual));
		if (fd < 0)
			fail_errno(errno, "cannot duplicate the render node fd of GPU 0x%04x", actual);
		unique_fd task_file(fd);
		if (has_state) {
			gem_filled_.insert(actual);
			restore_gem(image, id, actual, objects, contexts, render_fd(actual), -1);
		}
		pr_info("restored %s: GPU 0x%04x -> local 0x%04x%s", name.c_str(), msg.gpu_id, actual,
			has_state
				? strprintf(", %zu GEM objects, %zu contexts", objects.size(), contexts.size()).c_str()
				: "");
		return task_file.release();
	}
	// another file of the same GPU, with a table of handles of its own
	unique_fd file = open_render_node(actual);
	unique_fd task_file(dup(file.get()));
	if (!task_file)
		fail_errno(errno, "cannot duplicate a render node fd of GPU 0x%04x", actual);
	restore_gem(image, id, actual, objects, contexts, file.get(), file.get());
	gem_files_.push_back(std::move(file));
	pr_info("restored %s: GPU 0x%04x -> local 0x%04x, a render-node file of its own with %zu GEM objects, %zu "
		"contexts",
		name.c_str(), msg.gpu_id, actual, objects.size(), contexts.size());
	return task_file.release();
}

// The objects of a render-node image, under their handles, and their memory, checked against the
// dump's sums. `through` is the plugin's fd of the file when it is not render_fd(actual): criu maps
// the objects into the task through that file.
void RestoreSession::restore_gem(const RenderImage &image, uint32_t id, uint32_t actual,
				 std::span<const GemEntry> objects, std::span<const ContextState> contexts, int fd,
				 int through)
{
	const auto start = std::chrono::steady_clock::now();
	const std::string name = render_image_name(id);
	const uint32_t pid = static_cast<uint32_t>(getpid());
	enlist(); // before the task holds anything on the GPU, the guard knows it
	// from files the sums come first, so that a damaged image is refused before anything trusts it
	std::optional<ImageSums> sums;
	if (!image_dir_.streamed())
		sums = read_checked_sums(image_dir_, id, image.payload, name);
	const RestoredGem restored = restore_gem_objects(driver_, fd, objects, name,
							 [&](uint64_t addr) { return restored_kfd_buffer(addr); });
	for (const auto &[dumped, now] : restored.offsets)
		vmas_.push_back({ 0, dumped, now, actual, 0, true, through, -1 });

	std::vector<kfd_criu_bo_bucket> buckets;
	size_t next = 0;
	for (const GemEntry &e : objects)
		if (!e.kfd_addr)
			buckets.push_back(
				gem_bucket(image.msg->gpu_id, e.object, e.mappings, restored.dmabufs.at(next++).get()));
	const std::map<uint32_t, uint32_t> gpu_ids = { { image.msg->gpu_id, actual } };
	const ContentsCopy copy = {
		local_topology(),
		image_dir_,
		id,
		pid,
		gpu_ids,
		buckets,
		{},
		[&](uint32_t gpu) { return open_render_node(gpu); },
		copier_,
		options_.max_buffer_size,
	};
	std::vector<LogLine> lines;
	const char *in_series = copy_in_series_because();
	if (buckets.empty()) {
		// nothing of its own to fill (from files, the sums were checked above)
	} else if (!in_series) {
		// the guard copies and checks it beside criu's restore of the task's memory, as a kfd file's
		std::vector<int> dmabufs;
		for (const unique_fd &d : restored.dmabufs)
			dmabufs.push_back(d.get());
		guard_->hand_copy(image_dir_.dirfd(), id, gpu_ids, dmabufs, options_.max_buffer_size);
		pr_info("pid %u: the restore guard copies the memory of %s (%zu GEM objects) beside criu's restore of "
			"the task's memory",
			pid, name.c_str(), dmabufs.size());
	} else if (image_dir_.streamed()) {
		const std::vector<GpuContents> contents = copy_contents(copy, sums, lines);
		sums = read_checked_sums(image_dir_, id, image.payload, name);
		check_contents(id, pid, sums, contents, lines);
	} else {
		lines = restore_contents_of(copy, sums);
	}
	for (const LogLine &line : lines)
		log(line.level, "%s", line.text.c_str());
	// the contexts' empty submissions need a command buffer mapped where the task maps nothing
	uint64_t busy_below = 0;
	for (const GemEntry &e : objects)
		for (const gem::Mapping &m : e.mappings)
			if (m.addr < gem::kVaHoleStart)
				busy_below = std::max(busy_below, m.addr + m.size);
	const RestoredContexts ctx = restore_contexts(driver_, fd, contexts, busy_below, name);
	pr_info("%s: %zu GEM objects back under their handles (%zu gaps filled for the moment, %zu KFD buffers "
		"imported, %zu KFD buffers' handles left free), %zu contexts under their ids (%zu gaps filled, %llu "
		"empty submissions to bring their rings to their fences) in %.1f ms",
		name.c_str(), objects.size(), restored.fillers, restored.kfd_buffers, restored.without_buffer,
		contexts.size(), ctx.fillers, static_cast<unsigned long long>(ctx.submissions),
		std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
}

uint32_t RestoreSession::provisional_render_gpu(const CriuRenderNode &msg, uint32_t id)
{
	// Without KFD state (or before it, through a stream) only the same GPU id can be trusted.
	if (!local_topology().gpu(msg.gpu_id))
		fail(-ENODEV, "%s names GPU 0x%04x, and no local GPU has that id: %s", render_image_name(id).c_str(),
		     msg.gpu_id,
		     image_dir_.streamed() ? "through the image streamer, a render-node file that comes before "
					     "its process's kfd file can only go back to the same GPU ids with this "
					     "criu (4.3 defers it): restore from files"
					   : "this process has no KFD state to map GPUs with");
	if (image_dir_.streamed())
		provisional_gpus_.emplace(msg.gpu_id, msg.gpu_id);
	return msg.gpu_id;
}

int RestoreSession::retry_placeholder()
{
	// criu sets the file's owner on it and then drops it without closing: the plugin keeps it,
	// above the task's fds, until criu comes back.
	if (!placeholder_) {
		unique_fd null(open("/dev/null", O_RDONLY | O_CLOEXEC));
		if (!null)
			fail_errno(errno, "cannot open /dev/null");
		placeholder_.reset(fcntl(null.get(), F_DUPFD_CLOEXEC, fd_floor(static_cast<uint32_t>(getpid()))));
		if (!placeholder_)
			fail_errno(errno, "cannot move a placeholder fd above the task's fds");
	}
	return placeholder_.get();
}

void RestoreSession::close_unused_render_fds(const GpuMap &map)
{
	std::set<uint32_t> used;
	for (const auto &[user, actual] : map.gpu_ids)
		used.insert(actual);
	for (auto it = render_fds_.begin(); it != render_fds_.end();) {
		if (used.count(it->first)) {
			++it;
			continue;
		}
		pr_debug("GPU 0x%04x: not used by the task; its render fd %d is closed (KFD holds the file)", it->first,
			 it->second.get());
		it = render_fds_.erase(it);
	}
}

void RestoreSession::hand_render_files_to_task()
{
	if (handed_over_)
		return;
	handed_over_ = true;
	kfd_buffers_.clear(); // every render-node file is restored
	// Render-node files of their own (a second file of a GPU with GEM objects): the task's fd
	// takes over, the plugin's goes.
	for (auto it = gem_files_.begin(); it != gem_files_.end();) {
		const std::optional<int> theirs = lowest_fd_sharing_file(it->get(), fd_floor_);
		if (!theirs) {
			++it;
			continue;
		}
		for (VmaUpdate &v : vmas_)
			if (v.through == it->get())
				v.through_task = *theirs;
		it = gem_files_.erase(it);
	}
	if (render_fds_.empty())
		return;
	for (auto it = render_fds_.begin(); it != render_fds_.end();) {
		const uint32_t gpu = it->first;
		const int ours = it->second.get();
		const std::optional<int> theirs = lowest_fd_sharing_file(ours, fd_floor_);
		if (!theirs) {
			const bool mapped = std::any_of(vmas_.begin(), vmas_.end(),
							[&](const VmaUpdate &v) { return v.render_gpu == gpu; });
			if (!mapped) {
				// Nothing to map through it, and KFD holds the file for the VM.
				pr_debug("GPU 0x%04x: no fd of the task and no mapping needs render fd %d; closed", gpu,
					 ours);
				it = render_fds_.erase(it);
				continue;
			}
			pr_info("GPU 0x%04x: the task holds no render-node fd of its own; fd %d stays open for its "
				"mappings",
				gpu, ours);
			++it;
			continue;
		}
		pr_debug("GPU 0x%04x: mappings go through the task's fd %d; the plugin's fd %d is closed", gpu, *theirs,
			 ours);
		task_render_fds_[gpu] = *theirs;
		it = render_fds_.erase(it);
	}
}

int RestoreSession::mapping_fd(uint32_t actual_gpu_id)
{
	if (const auto it = task_render_fds_.find(actual_gpu_id); it != task_render_fds_.end())
		return it->second;
	return render_fd(actual_gpu_id);
}

int RestoreSession::update_vma(GpuFileKind file, uint64_t addr, uint64_t old_offset, uint64_t *new_offset, int *fd)
{
	// criu installs every file of the task before it maps anything: the first call is the moment.
	hand_render_files_to_task();
	const bool is_kfd = file == GpuFileKind::kfd;
	for (const VmaUpdate &v : vmas_) {
		if ((v.addr != addr && !v.any_addr) || v.old_offset != old_offset || (v.any_addr && is_kfd))
			continue;
		if (v.taken)
			fail(-ENOTSUP,
			     "the task maps shared buffer %u into its memory at 0x%llx: the buffer was taken from the "
			     "task that restores it, and KFD does not say where a taken buffer is mapped",
			     v.taken, static_cast<unsigned long long>(addr));
		*new_offset = v.new_offset;
		*fd = -1;
		if (!is_kfd && v.render_gpu) {
			// DRM only lets a BO be mapped through the file that owns it; criu must map this
			// VMA through that file, not by reopening the path. criu 3.17/3.18 duplicate the fd
			// they are given; newer ones take it over and close it.
			const int through = v.through_task >= 0 ? v.through_task
					    : v.through >= 0	? v.through
								: mapping_fd(v.render_gpu);
			*fd = running_criu().closes_vma_fd ? dup(through) : through;
			if (*fd < 0)
				fail_errno(errno, "cannot duplicate a render node fd for the mapping at 0x%llx",
					   static_cast<unsigned long long>(addr));
		}
		pr_debug("mapping at 0x%llx: offset 0x%llx -> 0x%llx", static_cast<unsigned long long>(addr),
			 static_cast<unsigned long long>(old_offset), static_cast<unsigned long long>(v.new_offset));
		return 1;
	}
	return 0;
}

namespace {

// A task that must not run: criu goes on whatever RESUME_DEVICES_LATE returns (every version
// from 3.17 to 4.3 only logs it), and would let it go. Killed, it makes criu's restore fail when
// criu detaches from its tasks, and criu then kills the rest of the tree.
std::string end_task(int pid)
{
	if (kill(pid, SIGKILL))
		return strprintf("and it cannot be killed (%s)", strerror(errno));
	return "the task is killed and the restore fails";
}

} // namespace

void join_gpu_copy(int pid, RestoreGuard &guard)
{
	const auto start = std::chrono::steady_clock::now();
	std::optional<CopyOutcome> outcome;
	try {
		outcome = guard.join_copy(pid);
	} catch (const Error &e) {
		fail(e.err(), "pid %d: %s; %s", pid, e.what(), end_task(pid).c_str());
	}
	if (!outcome)
		return;
	for (const LogLine &line : outcome->log)
		log(line.level, "%s", line.text.c_str());
	if (outcome->err)
		fail(outcome->err, "pid %d: the GPU copy in the restore guard failed: %s; %s", pid,
		     outcome->error.c_str(), end_task(pid).c_str());
	pr_info("%s", describe(strprintf("pid %d: restore", pid).c_str(), outcome->overlap).c_str());
	pr_debug("pid %d: the join took %.3f s", pid,
		 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

int resume_gpu_process(int pid, GpuDriver &driver)
{
	unique_fd fd(driver.open_device(kKfdPath));
	if (!fd) {
		// No KFD on this node: nothing can have been restored onto it.
		if (fd.get() == -ENOENT)
			return -ENOTSUP;
		fail_errno(fd.get(), "cannot open %s to resume pid %d", kKfdPath, pid);
	}
	const int ret =
		with_transient_retries([&] { return driver.criu_resume(fd.get(), static_cast<uint32_t>(pid)); });
	if (ret == -ESRCH)
		return -ENOTSUP; // the task has no KFD state: not a GPU process
	if (ret) {
		// criu goes on whatever this hook returns, and would let the task run with GPU queues that
		// never start: a process that looks alive and never finishes. It is half-restored: end it,
		// and criu's restore fails when it lets its tasks go.
		fail_errno(ret, "KFD RESUME of pid %d failed, so its GPU queues would never run again; %s", pid,
			   end_task(pid).c_str());
	}
	pr_info("pid %d: GPU queues resumed", pid);
	return 0;
}

} // namespace amdgpu
