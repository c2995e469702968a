// SPDX-License-Identifier: GPL-2.0-only
//
// The topology as the kfd image stores it: one kfd_device_entry per node (CPU and GPU) with its
// valid PCIe/xGMI links, in upstream's layout so that either plugin reads the other's images.
#pragma once

#include "criu-amdgpu.pb-c.h"
#include "topology/topology.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace amdgpu {

// The device entries for one topology, owning every allocation the entries point to. Every
// field upstream declares required is set, on CPU entries too.
class DeviceEntries {
public:
	// With `actual_to_user`, GPUs are written under the gpu_id the process knows them by, and a
	// GPU missing from the map is left out: the process cannot use it (a container that sees a
	// subset of the node's GPUs, criu#2248). Links are written only when their peer is written.
	explicit DeviceEntries(const Topology &topology, const std::map<uint32_t, uint32_t> *actual_to_user = nullptr);
	DeviceEntries(const DeviceEntries &) = delete;
	DeviceEntries &operator=(const DeviceEntries &) = delete;

	std::span<KfdDeviceEntry *const> entries() const { return entry_ptrs_; }
	uint32_t num_gpus() const { return num_gpus_; }
	uint32_t num_cpus() const { return num_cpus_; }

	// Points `msg` at these entries and sets num_of_gpus/num_of_cpus. The entries must outlive
	// every use of `msg` (packing it).
	void attach(CriuKfd &msg) const;

private:
	void fill(KfdDeviceEntry &entry, const Node &node, const std::map<uint32_t, uint32_t> *actual_to_user,
		  const std::set<uint32_t> &written_ids);

	std::vector<KfdDeviceEntry> entries_; // sized once: the pointers below point into it
	std::vector<KfdDeviceEntry *> entry_ptrs_;
	std::vector<DevIolink> links_;
	std::vector<DevIolink *> link_ptrs_;
	uint32_t num_gpus_ = 0;
	uint32_t num_cpus_ = 0;
};

// Rebuilds the topology an image describes. An entry is a CPU when cpu_cores_count != 0 (as
// upstream reads it) or, lacking cores, when it has neither a gpu_id nor SIMDs; every other entry
// is a GPU and needs a gpu_id. Missing optional fields read as 0. Throws Error(-EINVAL) naming
// `image` and the entry for counts out of bounds, duplicate node ids or gpu_ids, gpu_ids out of
// range and links to nodes the image does not describe.
Topology topology_from_device_entries(std::span<const KfdDeviceEntry *const> entries,
				      const std::string &image = "kfd image");
Topology topology_from_image(const CriuKfd &msg, const std::string &image = "kfd image");

} // namespace amdgpu
