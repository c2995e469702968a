// SPDX-License-Identifier: GPL-2.0-only
//
// match_gpus: the four steps of gpu_matcher.hpp, each in its own room.
#include "matching/gpu_matcher.hpp"

#include "support/error.hpp"
#include "matching/gpu_placement_search.hpp"

#include <cerrno>

namespace amdgpu {

namespace {

using namespace matching;

// "0x1a2b, 0x3c4d": the gpu_ids of a topology's GPUs, for a refusal
std::string gpu_ids_of(const Topology &t)
{
	std::string out;
	for (const Node *gpu : t.gpus())
		out += strprintf("%s0x%04x", out.empty() ? "" : ", ", gpu->gpu_id);
	return out.empty() ? "none" : out;
}

// Counts first: the image cannot need more GPUs or hives than the node has. The node's GPUs are
// those KFD shows the task, which are the ones its device cgroup allows: a container given fewer
// GPUs than the image used is refused here too.
void refuse_smaller_node(const Topology &src, const Topology &dest)
{
	if (src.gpus().size() > dest.gpus().size())
		fail(-EINVAL, "the image uses %zu GPUs (%s), this node has only %zu that this task may use (%s)",
		     src.gpus().size(), gpu_ids_of(src).c_str(), dest.gpus().size(), gpu_ids_of(dest).c_str());
	if (src.hives().size() > dest.hives().size())
		fail(-EINVAL, "the image has %zu xGMI hive(s), this node only %zu", src.hives().size(),
		     dest.hives().size());
}

// Step 1, each GPU on its own: most failures are a property mismatch, best told per GPU.
void refuse_misfit_devices(const PairRules &rules, const RefusalReport &report)
{
	if (!rules.match(rules.all(), nullptr).complete())
		fail(-EINVAL, "%s", report.gpus(rules.all(), nullptr).c_str());
}

// Step 4: every GPU within the placement, by one last matching.
GpuMap assign_gpus(const PairRules &rules, const RefusalReport &report, const Placement &p, bool numa)
{
	const Bipartite b = rules.match(rules.all(), &p);
	if (!b.complete())
		fail(-EINVAL, "%s", report.gpus(rules.all(), &p).c_str());
	GpuMap map;
	for (size_t s = 0; s < rules.image().size(); s++)
		map.gpu_ids[rules.image()[s].node->gpu_id] =
			rules.local()[static_cast<size_t>(b.left_match(s))].node->gpu_id;
	if (numa)
		map.cpu_nodes = p.cpu;
	return map;
}

} // namespace

GpuMap match_gpus(const Topology &src, const Topology &dest, const MatchPolicy &policy)
{
	if (src.gpus().empty())
		return {};
	refuse_smaller_node(src, dest);
	const PairRules rules(src, dest, policy);
	const ImageElements elements(rules.image(), src.hives().size(), policy.numa);
	const Units units = build_units(elements);
	const PlacementChecks checks(src, dest, rules, elements, units);
	const RefusalReport report(checks);
	refuse_misfit_devices(rules, report);
	const Placement p = PlacementSearch(checks, report, units).run();
	return assign_gpus(rules, report, p, policy.numa);
}

} // namespace amdgpu
