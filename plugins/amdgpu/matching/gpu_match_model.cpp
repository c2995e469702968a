// SPDX-License-Identifier: GPL-2.0-only
#include "matching/gpu_match_model.hpp"

namespace amdgpu::matching {

std::vector<GpuFacts> gpu_facts(const Topology &t)
{
	std::vector<GpuFacts> out;
	for (const Node *n : t.gpus()) {
		const auto h = t.hive_of(n->node_id);
		GpuFacts &g =
			out.emplace_back(GpuFacts { n, h ? static_cast<int>(*h) : kNone, {}, n->valid_link_count() });
		for (const IoLink &link : n->links)
			if (link.valid && !t.node(link.node_to)->is_gpu())
				g.cpu_links.push_back(&link);
	}
	return out;
}

void Placement::assign(const Element &e, uint32_t local)
{
	if (e.is_hive) {
		hive[e.id] = static_cast<int>(local);
		dest_hive_used[local] = true;
	} else {
		cpu[e.id] = local;
		dest_cpu_used.insert(local);
	}
}

Placement Placement::with(const Element &e, uint32_t local) const
{
	Placement trial = *this;
	trial.assign(e, local);
	return trial;
}

} // namespace amdgpu::matching
