// SPDX-License-Identifier: GPL-2.0-only
#include "topology/topology_image.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <cerrno>
#include <set>

namespace amdgpu {

namespace {

struct U32Field {
	protobuf_c_boolean KfdDeviceEntry::*has;
	uint32_t KfdDeviceEntry::*value;
	uint32_t NodeProperties::*prop;
};

struct U64Field {
	protobuf_c_boolean KfdDeviceEntry::*has;
	uint64_t KfdDeviceEntry::*value;
	uint64_t NodeProperties::*prop;
};

#define FIELD(name)                                                                                                    \
	{                                                                                                              \
		&KfdDeviceEntry::has_##name, &KfdDeviceEntry::name, &NodeProperties::name                              \
	}

constexpr U32Field kU32Fields[] = {
	FIELD(cpu_cores_count),
	FIELD(simd_count),
	FIELD(mem_banks_count),
	FIELD(caches_count),
	FIELD(io_links_count),
	FIELD(max_waves_per_simd),
	FIELD(lds_size_in_kb),
	FIELD(gds_size_in_kb),
	FIELD(num_gws),
	FIELD(wave_front_size),
	FIELD(array_count),
	FIELD(simd_arrays_per_engine),
	FIELD(cu_per_simd_array),
	FIELD(simd_per_cu),
	FIELD(max_slots_scratch_cu),
	FIELD(vendor_id),
	FIELD(device_id),
	FIELD(domain),
	FIELD(drm_render_minor),
	FIELD(num_sdma_engines),
	FIELD(num_sdma_xgmi_engines),
	FIELD(num_sdma_queues_per_engine),
	FIELD(num_cp_queues),
	FIELD(fw_version),
	FIELD(capability),
	FIELD(sdma_fw_version),
};

constexpr U64Field kU64Fields[] = {
	FIELD(hive_id),
	FIELD(vram_size),
};

#undef FIELD

uint32_t entry_gpu_id(const Node &node, const std::map<uint32_t, uint32_t> *actual_to_user)
{
	if (!node.is_gpu() || !actual_to_user)
		return node.gpu_id;
	return actual_to_user->at(node.gpu_id);
}

// The nodes an image describes: every CPU, and the GPUs the process knows (all of them without a
// map). Throws when two GPUs would be saved under one id, or under an id out of range.
std::vector<const Node *> nodes_to_write(const Topology &topology, const std::map<uint32_t, uint32_t> *actual_to_user)
{
	std::vector<const Node *> written;
	std::set<uint32_t> user_ids;
	for (const Node &node : topology.nodes()) {
		if (node.is_gpu() && actual_to_user) {
			const auto it = actual_to_user->find(node.gpu_id);
			if (it == actual_to_user->end())
				continue;
			if (it->second == 0 || it->second > kMaxGpuId)
				fail(-EINVAL, "gpu 0x%x (node %u) would be saved as gpu_id 0x%x, out of range",
				     node.gpu_id, node.node_id, it->second);
			if (!user_ids.insert(it->second).second)
				fail(-EINVAL, "two GPUs would be saved as gpu_id 0x%x (one is node %u)", it->second,
				     node.node_id);
		}
		written.push_back(&node);
	}
	return written;
}

bool link_kept(const IoLink &link, const std::set<uint32_t> &written_ids)
{
	return link.valid && written_ids.count(link.node_to);
}

} // namespace

DeviceEntries::DeviceEntries(const Topology &topology, const std::map<uint32_t, uint32_t> *actual_to_user)
{
	const std::vector<const Node *> written = nodes_to_write(topology, actual_to_user);
	std::set<uint32_t> written_ids;
	size_t total_links = 0;
	for (const Node *node : written)
		written_ids.insert(node->node_id);
	for (const Node *node : written)
		for (const IoLink &l : node->links)
			total_links += link_kept(l, written_ids);

	const KfdDeviceEntry entry_init = KFD_DEVICE_ENTRY__INIT;
	const DevIolink link_init = DEV_IOLINK__INIT;
	entries_.assign(written.size(), entry_init);
	links_.assign(total_links, link_init);
	link_ptrs_.reserve(total_links);
	for (size_t i = 0; i < written.size(); i++) {
		fill(entries_[i], *written[i], actual_to_user, written_ids);
		(written[i]->is_gpu() ? num_gpus_ : num_cpus_)++;
	}
	for (KfdDeviceEntry &e : entries_)
		entry_ptrs_.push_back(&e);
}

// One node's entry: its properties, and its links to written nodes (appended to links_).
void DeviceEntries::fill(KfdDeviceEntry &e, const Node &node, const std::map<uint32_t, uint32_t> *actual_to_user,
			 const std::set<uint32_t> &written_ids)
{
	e.has_node_id = true;
	e.node_id = node.node_id;
	e.has_gpu_id = true;
	e.gpu_id = entry_gpu_id(node, actual_to_user);
	for (const U32Field &f : kU32Fields) {
		e.*f.has = true;
		e.*f.value = node.props.*f.prop;
	}
	for (const U64Field &f : kU64Fields) {
		e.*f.has = true;
		e.*f.value = node.props.*f.prop;
	}
	e.has_vram_public = true;
	e.vram_public = node.props.vram_public ? 1 : 0;
	if (node.is_gpu()) {
		e.has_num_xcc = true;
		e.num_xcc = node.props.num_xcc;
		e.has_device_partitions = true;
		e.device_partitions = node.props.device_partitions;
	}

	// link_ptrs_ was reserved for every link: its data() does not move while it grows.
	e.iolinks = link_ptrs_.data() + link_ptrs_.size();
	for (const IoLink &l : node.links) {
		if (!link_kept(l, written_ids))
			continue;
		DevIolink &link = links_[link_ptrs_.size()];
		link.has_type = true;
		link.type = static_cast<uint32_t>(l.type);
		link.has_node_to_id = true;
		link.node_to_id = l.node_to;
		link_ptrs_.push_back(&link);
		e.n_iolinks++;
	}
	if (e.n_iolinks == 0)
		e.iolinks = nullptr;
}

void DeviceEntries::attach(CriuKfd &msg) const
{
	msg.n_device_entries = entry_ptrs_.size();
	msg.device_entries = const_cast<KfdDeviceEntry **>(entry_ptrs_.data());
	msg.has_num_of_gpus = true;
	msg.num_of_gpus = num_gpus_;
	msg.has_num_of_cpus = true;
	msg.num_of_cpus = num_cpus_;
}

namespace {

// Every entry has a node_id in range, none twice. Returns the node ids.
std::set<uint32_t> checked_node_ids(std::span<const KfdDeviceEntry *const> entries, const char *name)
{
	if (entries.empty() || entries.size() > kMaxTopologyNodes)
		fail(-EINVAL, "%s has %zu device entries (expected 1 to %zu)", name, entries.size(), kMaxTopologyNodes);
	std::set<uint32_t> node_ids;
	for (size_t i = 0; i < entries.size(); i++) {
		const KfdDeviceEntry &e = *entries[i];
		if (!e.has_node_id)
			fail(-EINVAL, "%s: device entry %zu has no node_id", name, i);
		if (e.node_id >= kMaxTopologyNodes)
			fail(-EINVAL, "%s: device entry %zu: node_id %u out of range (at most %zu nodes)", name, i,
			     e.node_id, kMaxTopologyNodes);
		if (!node_ids.insert(e.node_id).second)
			fail(-EINVAL, "%s: node %u is described twice", name, e.node_id);
	}
	return node_ids;
}

// The gpu_id of an entry, 0 for a CPU; a GPU's is in range and not taken yet (added to gpu_ids).
uint32_t checked_gpu_id(const KfdDeviceEntry &e, const NodeProperties &props, std::set<uint32_t> &gpu_ids,
			const char *name)
{
	const uint32_t gpu_id = e.has_gpu_id ? e.gpu_id : 0;
	const bool cpu = props.cpu_cores_count != 0 || (gpu_id == 0 && props.simd_count == 0);
	if (cpu && gpu_id != 0)
		fail(-EINVAL, "%s: node %u has %u CPU cores and gpu_id 0x%x: APUs are not supported", name, e.node_id,
		     props.cpu_cores_count, gpu_id);
	if (cpu)
		return 0;
	if (!e.has_gpu_id)
		fail(-EINVAL, "%s: GPU node %u has no gpu_id", name, e.node_id);
	if (gpu_id == 0 || gpu_id > kMaxGpuId)
		fail(-EINVAL, "%s: GPU node %u has gpu_id 0x%x, out of range (1 to 0x%x)", name, e.node_id, gpu_id,
		     kMaxGpuId);
	if (!gpu_ids.insert(gpu_id).second)
		fail(-EINVAL, "%s: gpu_id 0x%x appears twice (again on node %u)", name, gpu_id, e.node_id);
	return gpu_id;
}

// num_xcc or device_partitions of an entry: 1 when absent (an image of a GPU without them), else
// 1 to kMaxPartitioning.
uint32_t checked_partitioning(bool has, uint32_t value, const char *field, uint32_t node_id, const char *name)
{
	constexpr uint32_t kMaxPartitioning = 64;
	if (!has)
		return 1;
	if (value == 0 || value > kMaxPartitioning)
		fail(-EINVAL, "%s: node %u has %s %u (expected 1 to %u)", name, node_id, field, value,
		     kMaxPartitioning);
	return value;
}

// The links of an entry, each of a known type and to another node the image describes.
std::vector<IoLink> checked_links(const KfdDeviceEntry &e, const std::set<uint32_t> &node_ids, const char *name)
{
	if (e.n_iolinks > kMaxNodeLinks)
		fail(-EINVAL, "%s: node %u has %zu io links (at most %zu)", name, e.node_id, e.n_iolinks,
		     kMaxNodeLinks);
	std::vector<IoLink> links;
	for (size_t j = 0; j < e.n_iolinks; j++) {
		const DevIolink &l = *e.iolinks[j];
		if (!l.has_type || !l.has_node_to_id)
			fail(-EINVAL, "%s: io link %zu of node %u lacks its %s", name, j, e.node_id,
			     l.has_type ? "node_to_id" : "type");
		if (l.type != static_cast<uint32_t>(IoLinkType::pcie) &&
		    l.type != static_cast<uint32_t>(IoLinkType::xgmi))
			fail(-EINVAL, "%s: io link %zu of node %u has type %u (expected 2 for PCIe or 11 for xGMI)",
			     name, j, e.node_id, l.type);
		if (l.node_to_id == e.node_id)
			fail(-EINVAL, "%s: io link %zu of node %u leads to the node itself", name, j, e.node_id);
		if (!node_ids.count(l.node_to_id))
			fail(-EINVAL, "%s: io link %zu of node %u leads to node %u, which the image does not describe",
			     name, j, e.node_id, l.node_to_id);
		links.push_back({ static_cast<IoLinkType>(l.type), l.node_to_id });
	}
	return links;
}

} // namespace

Topology topology_from_device_entries(std::span<const KfdDeviceEntry *const> entries, const std::string &image)
{
	const char *name = image.c_str();
	const std::set<uint32_t> node_ids = checked_node_ids(entries, name);
	std::vector<Node> nodes;
	std::set<uint32_t> gpu_ids;
	for (const KfdDeviceEntry *entry : entries) {
		const KfdDeviceEntry &e = *entry;
		Node node;
		node.node_id = e.node_id;
		for (const U32Field &f : kU32Fields)
			node.props.*f.prop = e.*f.has ? e.*f.value : 0;
		for (const U64Field &f : kU64Fields)
			node.props.*f.prop = e.*f.has ? e.*f.value : 0;
		node.props.vram_public = e.has_vram_public && e.vram_public;
		node.props.num_xcc = checked_partitioning(e.has_num_xcc, e.num_xcc, "num_xcc", e.node_id, name);
		node.props.device_partitions = checked_partitioning(e.has_device_partitions, e.device_partitions,
								    "device_partitions", e.node_id, name);
		node.gpu_id = checked_gpu_id(e, node.props, gpu_ids, name);
		node.links = checked_links(e, node_ids, name);
		nodes.push_back(std::move(node));
	}
	return Topology(std::move(nodes));
}

Topology topology_from_image(const CriuKfd &msg, const std::string &image)
{
	return topology_from_device_entries(
		std::span<const KfdDeviceEntry *const>(msg.device_entries, msg.n_device_entries), image);
}

} // namespace amdgpu
