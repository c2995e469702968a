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

// Counts first: the image cannot need more GPUs or hives than the node has.
void refuse_smaller_node(const Topology &src, const Topology &dest)
{
	if (src.gpus().size() > dest.gpus().size())
		fail(-EINVAL, "the image uses %zu GPUs, this node has only %zu", src.gpus().size(), dest.gpus().size());
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
