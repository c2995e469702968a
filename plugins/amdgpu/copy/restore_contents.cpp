// SPDX-License-Identifier: GPL-2.0-only
#include "copy/restore_contents.hpp"

#include "render/gem_contents.hpp"
#include "render/render_image.hpp"

#include "driver/device_files.hpp"
#include "support/error.hpp"
#include "images/image_chain.hpp"
#include "driver/kfd_buckets.hpp"
#include "driver/kfd_ioctl.hpp"

#include <cerrno>

namespace amdgpu {

// The copies run through render files of their own: their temporary GPU mappings then live in a
// VM of their own and cannot collide with the task's BOs in the VM KFD just restored.
std::vector<GpuContents> copy_contents(const ContentsCopy &c, const std::optional<ImageSums> &sums,
				       std::vector<LogLine> &log)
{
	std::vector<GpuCopyJob> jobs;
	std::vector<unique_fd> copy_fds;
	// criu's `parent` chain, for images that take blocks from it: open only while they are copied
	// (its directory fds must not stay in the task)
	std::optional<ImageChain> chain;
	for (const auto &[user, actual] : c.gpu_ids) {
		GpuCopyJob job = copy_job(c.local, user, actual, c.bos, c.elsewhere);
		if (!job.sizes.empty())
			job.render_fd = copy_fds.emplace_back(c.open_render_node(actual)).get();
		if (const PagesSums *dumped = sums ? sums->pages_of(user) : nullptr;
		    dumped && !dumped->in_chain.empty()) {
			check_bo_sizes(*dumped, job.sizes, pages_image_name(c.kfd_id, user));
			if (!chain) {
				chain.emplace(ImageChain::below(c.image_dir.dirfd()));
				if (!chain->cut_short().empty())
					log.push_back({ LogLevel::warn, chain->cut_short() });
			}
			job.sums = dumped;
			job.chain = &*chain;
		}
		jobs.push_back(std::move(job));
	}
	std::vector<CopyStats> stats =
		c.copier.copy(CopyDirection::from_image, jobs, c.image_dir, c.kfd_id, c.max_buffer_size);
	std::vector<GpuContents> contents;
	for (size_t i = 0; i < jobs.size(); i++) {
		if (stats[i].bytes)
			log.push_back({ LogLevel::info,
					strprintf("pid %u: restored %s", c.pid, describe(stats[i]).c_str()) });
		contents.push_back({ jobs[i].image_gpu_id, std::move(jobs[i].sizes), std::move(jobs[i].addrs),
				     std::move(stats[i].sums.blocks) });
	}
	return contents;
}

// Before the queues can resume: every block read back is the block the dump summed.
void check_contents(uint32_t id, uint32_t pid, const std::optional<ImageSums> &sums,
		    std::span<const GpuContents> contents, std::vector<LogLine> &log)
{
	if (!sums) {
		log.push_back({ LogLevel::warn,
				strprintf("pid %u: the images have no %s (upstream's plugin, or this one before "
					  "checksums, wrote them): GPU contents restored unverified",
					  pid, sums_image_name(id).c_str()) });
		return;
	}
	size_t blocks = 0;
	for (const GpuContents &gpu : contents) {
		const std::string pages = pages_image_name(id, gpu.image_gpu_id);
		const PagesSums *dumped = sums->pages_of(gpu.image_gpu_id);
		if (!dumped)
			fail(-EBADMSG,
			     "image %s has no checksums of GPU 0x%04x, whose BOs %s holds; the restore is refused",
			     sums_image_name(id).c_str(), gpu.image_gpu_id, pages.c_str());
		check_pages_sums(*dumped, gpu.restored, gpu.sizes, gpu.addrs, pages);
		blocks += gpu.restored.size();
	}
	if (sums->pages.size() != contents.size())
		fail(-EBADMSG, "image %s has checksums of %zu GPUs, but %s names %zu; the restore is refused",
		     sums_image_name(id).c_str(), sums->pages.size(), kfd_image_name(id).c_str(), contents.size());
	log.push_back({ LogLevel::info, strprintf("pid %u: %s and %zu blocks of GPU memory match their checksums", pid,
						  kfd_image_name(id).c_str(), blocks) });
}

std::vector<LogLine> restore_contents_of(const ContentsCopy &copy, const std::optional<ImageSums> &sums)
{
	std::vector<LogLine> log;
	const std::vector<GpuContents> contents = copy_contents(copy, sums, log);
	check_contents(copy.kfd_id, copy.pid, sums, contents, log);
	return log;
}

std::optional<ImageSums> read_checked_sums(const ImageDir &dir, uint32_t id, std::span<const uint8_t> kfd_payload,
					   const std::string &image)
{
	std::optional<ImageSums> sums = read_image_sums(dir, id);
	if (sums)
		check_kfd_digest(*sums, kfd_payload, image.empty() ? kfd_image_name(id) : image, sums_image_name(id));
	return sums;
}

namespace {

unique_fd open_render_node_here(const Topology &local, GpuDriver &driver, uint32_t gpu_id)
{
	const Node *gpu = local.gpu(gpu_id);
	if (!gpu)
		fail(-ENODEV, "local GPU 0x%04x is not in the KFD topology of the restore guard", gpu_id);
	const unsigned int minor_nr = gpu->props.drm_render_minor;
	const std::string path = driver.find_render_node(minor_nr, nullptr);
	if (path.empty())
		fail(-ENOENT, "GPU 0x%04x has no render node (device %u:%u) in the restore guard's mount namespace",
		     gpu_id, kDrmMajor, minor_nr);
	unique_fd fd(driver.open_device(path));
	if (!fd)
		fail_errno(fd.get(), "the restore guard cannot open %s for GPU 0x%04x", path.c_str(), gpu_id);
	return fd;
}

// restore_contents_of() in the guard: render nodes opened in its own mount namespace.
std::vector<LogLine> copy_in_guard(const ImageDir &dir, const HandedContents &handed, uint32_t pid,
				   std::span<const kfd_criu_bo_bucket> bos, std::vector<bool> elsewhere,
				   const std::optional<ImageSums> &sums, const CopyResources &resources)
{
	const Topology local = parse_topology(resources.topology_dir);
	GpuDriver &driver = resources.driver ? *resources.driver : system_gpu_driver();
	const ContentsCopy copy = {
		local,
		dir,
		handed.kfd_id,
		pid,
		handed.gpu_ids,
		bos,
		std::move(elsewhere),
		[&](uint32_t gpu) { return open_render_node_here(local, driver, gpu); },
		resources.copier ? *resources.copier : sdma_copier(),
		handed.max_buffer_size,
	};
	return restore_contents_of(copy, sums);
}

// The objects of a render-node image whose memory its pages image holds, into the handed dma-bufs.
std::vector<LogLine> restore_handed_render_node(const ImageDir &dir, const HandedContents &handed,
						const CopyResources &resources)
{
	const std::string image = render_image_name(handed.kfd_id);
	ImageReader reader(dir, image, kMaxMetadataImageSize);
	const std::vector<uint8_t> payload = read_payload(reader);
	const std::optional<ImageSums> sums = read_checked_sums(dir, handed.kfd_id, payload, image);
	const CriuRenderNodePtr msg = unpack_criu_render_node(payload, image);
	std::vector<kfd_criu_bo_bucket> bos;
	size_t next = 0;
	for (const GemEntry &e : gem_entries(*msg, image)) {
		if (e.kfd_addr)
			continue;
		if (next >= handed.dmabufs.size())
			break;
		bos.push_back(gem_bucket(msg->gpu_id, e.object, e.mappings, handed.dmabufs[next++].get()));
	}
	if (bos.size() != handed.dmabufs.size() || next != bos.size())
		fail(-EINVAL, "the restore guard was handed %zu GEM objects of %s, which names %zu with contents",
		     handed.dmabufs.size(), image.c_str(), bos.size());
	return copy_in_guard(dir, handed, msg->has_pid ? msg->pid : 0, bos, {}, sums, resources);
}

} // namespace

std::vector<LogLine> restore_handed_contents(const ImageDir &dir, const HandedContents &handed,
					     const CopyResources &resources)
{
	// file ids are criu's, one per file: a render-node file's id names no kfd image
	if (!ImageReader::open_if_exists(dir, kfd_image_name(handed.kfd_id), kMaxMetadataImageSize) &&
	    ImageReader::open_if_exists(dir, render_image_name(handed.kfd_id), kMaxMetadataImageSize))
		return restore_handed_render_node(dir, handed, resources);
	const std::string image = kfd_image_name(handed.kfd_id);
	ImageReader reader(dir, image, kMaxMetadataImageSize);
	const std::vector<uint8_t> payload = read_payload(reader);
	const std::optional<ImageSums> sums = read_checked_sums(dir, handed.kfd_id, payload);
	const CriuKfdPtr msg = unpack_criu_kfd(payload, image);
	std::vector<kfd_criu_bo_bucket> bos = bo_buckets(*msg, handed.gpu_ids, image);
	if (bos.size() != handed.dmabufs.size())
		fail(-EINVAL, "pid %u handed the restore guard %zu BOs of %s, which names %zu", msg->pid,
		     handed.dmabufs.size(), image.c_str(), bos.size());
	for (size_t i = 0; i < bos.size(); i++)
		bos[i].dmabuf_fd = handed.dmabufs[i] ? static_cast<uint32_t>(handed.dmabufs[i].get()) : KFD_INVALID_FD;
	return copy_in_guard(dir, handed, msg->pid, bos, taken_elsewhere(bo_shares(*msg, image)), sums, resources);
}

} // namespace amdgpu
