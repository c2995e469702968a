// SPDX-License-Identifier: GPL-2.0-only
//
// The protobuf metadata images (criu_kfd, criu_render_node): pack/unpack with the framing of
// image_store and the structural checks every reader needs before it trusts a field.
#pragma once

#include "criu-amdgpu.pb-c.h"
#include "images/image_store.hpp"
#include "driver/kfd_ioctl.hpp"
#include "topology/topology_image.hpp"

#include <linux/kfd_ioctl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace amdgpu {

// Largest metadata image we accept: far above any real process (a BO costs ~100 bytes, a queue's
// saved state a few hundred KiB), far below what would hurt to allocate.
inline constexpr uint64_t kMaxMetadataImageSize = 256ull << 20;

struct CriuKfdFree {
	void operator()(CriuKfd *msg) const { criu_kfd__free_unpacked(msg, nullptr); }
};
struct CriuRenderNodeFree {
	void operator()(CriuRenderNode *msg) const { criu_render_node__free_unpacked(msg, nullptr); }
};
using CriuKfdPtr = std::unique_ptr<CriuKfd, CriuKfdFree>;
using CriuRenderNodePtr = std::unique_ptr<CriuRenderNode, CriuRenderNodeFree>;

std::vector<uint8_t> pack(const CriuKfd &msg);
std::vector<uint8_t> pack(const CriuRenderNode &msg);

// Unpack and validate; `name` is used in error messages.
CriuKfdPtr unpack_criu_kfd(std::span<const uint8_t> bytes, const std::string &name);
CriuRenderNodePtr unpack_criu_render_node(std::span<const uint8_t> bytes, const std::string &name);

// How a BO is shared with other processes of the dump: the kfd_bo_entry `shared` field, and its
// `handle`, a number of the buffer that is the same in each process's image.
enum class ShareRole : uint32_t {
	none = 0,
	restorer = 1, // restores the buffer, and its pages image holds the contents
	taker = 2,    // takes the buffer the restorer restored; its pages image has no place for it
};
struct BoShare {
	uint32_t buffer = 0;
	ShareRole role = ShareRole::none;
};

// Per bucket, whether its bytes are in another process's images (a buffer it takes from the
// holder that restores it): its own pages image has no place for it.
std::vector<bool> taken_elsewhere(std::span<const BoShare> shares);

// What a dump knows of one process, as its kfd image holds it: KFD CHECKPOINT's BOs (under the
// gpu_ids the process knows), queue/event count and driver state, the GPUs it can use, and
// libhsakmt's shared memory.
struct KfdImageParts {
	uint32_t pid = 0;
	uint32_t num_objects = 0;
	std::span<const kfd_criu_bo_bucket> bos;
	std::span<const BoShare> shares; // one per BO, or none when nothing is shared
	std::span<const uint8_t> priv_data;
	const DeviceEntries *devices = nullptr;
	uint64_t shared_mem_size = 0;
	uint32_t shared_mem_magic = 0;
	std::optional<kfd::RuntimeInfo> runtime; // unknown: no record
};

// The criu_kfd message of `parts`, packed: upstream's fields, every BO with no GEM handle (KFD's
// BOs are not render-node GEM objects) unless it is shared, and then the buffer's number.
std::vector<uint8_t> pack_kfd_image(const KfdImageParts &parts);

void write_criu_kfd(const ImageDir &dir, uint32_t id, const CriuKfd &msg);
CriuKfdPtr read_criu_kfd(const ImageDir &dir, uint32_t id);
CriuKfdPtr read_criu_kfd(ImageReader &image);
// The runtime registration the image records (none: it does not say). Throws Error(-EINVAL),
// naming `image`, for a state a dump can never have saved.
std::optional<kfd::RuntimeInfo> kfd_runtime(const CriuKfd &msg, const std::string &image);
// The BO entries' sharing (none for an image that says nothing of it). Throws Error(-EINVAL),
// naming `image`, for a role it does not know.
std::vector<BoShare> bo_shares(const CriuKfd &msg, const std::string &image);
void write_criu_render_node(const ImageDir &dir, uint32_t id, const CriuRenderNode &msg);
CriuRenderNodePtr read_criu_render_node(const ImageDir &dir, uint32_t id);
CriuRenderNodePtr read_criu_render_node(ImageReader &image);
// A dma-buf fd a task held: upstream's criu_dmabuf_node, whose gem_handle here is the number of the
// shared buffer it is of (the `handle` of that buffer's kfd_bo_entry).
void write_dmabuf_image(const ImageDir &dir, uint32_t id, uint32_t buffer);
uint32_t read_dmabuf_image(ImageReader &image);

} // namespace amdgpu
