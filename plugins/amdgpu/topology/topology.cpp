// SPDX-License-Identifier: GPL-2.0-only
#include "topology/topology.hpp"

#include "topology/disjoint_sets.hpp"
#include "support/error.hpp"
#include "support/unique_fd.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <tuple>

namespace amdgpu {

namespace fs = std::filesystem;

namespace {

// sysfs attributes are at most a page; anything much bigger is not a KFD file.
constexpr size_t kMaxSysfsFileSize = 64 * 1024;
constexpr size_t kMaxKeyLength = 64;

enum class HeapType : uint64_t {
	fb_public = 1,
	fb_private = 2,
};

// Shows untrusted text in a message: printable ASCII only, bounded length.
std::string quote(std::string_view text)
{
	constexpr size_t kMaxShown = 80;
	std::string out;
	for (char c : text.substr(0, kMaxShown))
		out += (c >= 0x20 && c < 0x7f) ? c : '?';
	if (text.size() > kMaxShown)
		out += "...";
	return "'" + out + "'";
}

bool is_hidden_errno(int err)
{
	// The device cgroup makes KFD refuse the node's attributes with EPERM; a node removed while we
	// look, or a fixture's dangling link, gives ENOENT.
	return err == EPERM || err == EACCES || err == ENOENT;
}

// Reads a whole sysfs attribute. Returns the errno instead of the text when `hideable` and the
// failure means the node is not accessible to us.
struct FileText {
	std::string text;
	int hidden_errno = 0;
};

FileText read_attribute(const fs::path &path, bool hideable)
{
	unique_fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
	if (!fd) {
		const int err = errno;
		if (hideable && is_hidden_errno(err))
			return { {}, err };
		fail_errno(err, "cannot open %s", path.c_str());
	}
	std::string text;
	char buf[4096];
	for (;;) {
		const ssize_t n = read(fd.get(), buf, sizeof(buf));
		if (n < 0) {
			const int err = errno;
			if (err == EINTR)
				continue;
			if (hideable && is_hidden_errno(err))
				return { {}, err };
			fail_errno(err, "cannot read %s", path.c_str());
		}
		if (n == 0)
			break;
		if (text.size() + static_cast<size_t>(n) > kMaxSysfsFileSize)
			fail(-EINVAL, "%s is larger than %zu bytes", path.c_str(), kMaxSysfsFileSize);
		text.append(buf, static_cast<size_t>(n));
	}
	return { std::move(text), 0 };
}

std::string read_attribute(const fs::path &path)
{
	return read_attribute(path, false).text;
}

// Canonical decimal u32 (no sign, no leading zeros): the names KFD gives nodes, banks and links.
std::optional<uint32_t> parse_index(std::string_view name)
{
	if (name.empty() || (name.size() > 1 && name[0] == '0'))
		return std::nullopt;
	uint32_t value = 0;
	const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), value);
	if (ec != std::errc() || end != name.data() + name.size())
		return std::nullopt;
	return value;
}

struct DirCloser {
	void operator()(DIR *dir) const { closedir(dir); }
};

// The numeric entries of `dir`, sorted. Other names are ignored. A missing directory is empty
// when `missing_ok`.
std::vector<uint32_t> numbered_entries(const fs::path &dir, bool missing_ok, size_t max, const char *what)
{
	std::unique_ptr<DIR, DirCloser> d(opendir(dir.c_str()));
	if (!d) {
		if (missing_ok && errno == ENOENT)
			return {};
		fail_errno(errno, "cannot list %s", dir.c_str());
	}
	std::vector<uint32_t> ids;
	for (;;) {
		errno = 0;
		const dirent *entry = readdir(d.get());
		if (!entry) {
			if (errno)
				fail_errno(errno, "cannot list %s", dir.c_str());
			break;
		}
		if (auto id = parse_index(entry->d_name)) {
			if (ids.size() == max)
				fail(-EINVAL, "%s has more than %zu %s", dir.c_str(), max, what);
			ids.push_back(*id);
		}
	}
	std::sort(ids.begin(), ids.end());
	return ids;
}

struct KeyValue {
	std::string_view key;
	uint64_t value;
	unsigned line;
};

bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

// One "<name> <unsigned decimal>" line, trailing blanks removed; throws naming the file and line.
KeyValue parse_key_value(std::string_view line, const fs::path &path, unsigned line_no)
{
	size_t key_end = 0;
	while (key_end < line.size() && !is_blank(line[key_end]))
		key_end++;
	size_t value_start = key_end;
	while (value_start < line.size() && is_blank(line[value_start]))
		value_start++;
	const std::string_view key = line.substr(0, key_end);
	const std::string_view value = line.substr(value_start);

	const bool key_ok = std::all_of(key.begin(), key.end(), [](char c) {
		return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
	});
	const bool value_digits =
		!value.empty() && std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
	if (key.empty() || !key_ok || value_start == key_end || !value_digits)
		fail(-EINVAL, "%s:%u: malformed line %s (expected '<name> <unsigned decimal>')", path.c_str(), line_no,
		     quote(line).c_str());
	if (key.size() > kMaxKeyLength)
		fail(-EINVAL, "%s:%u: name longer than %zu characters: %s", path.c_str(), line_no, kMaxKeyLength,
		     quote(key).c_str());

	uint64_t number = 0;
	const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
	if (ec != std::errc() || end != value.data() + value.size())
		fail(-EINVAL, "%s:%u: value of %.*s does not fit 64 bits: %s", path.c_str(), line_no,
		     static_cast<int>(key.size()), key.data(), quote(value).c_str());
	return { key, number, line_no };
}

// "<name> <unsigned decimal>" lines, KFD's format for every properties file; blank lines are
// skipped, a name given twice is refused.
std::vector<KeyValue> parse_key_values(std::string_view text, const fs::path &path)
{
	std::vector<KeyValue> out;
	std::map<std::string_view, unsigned> seen; // key -> line
	unsigned line_no = 0;
	while (!text.empty()) {
		const size_t eol = text.find('\n');
		std::string_view line = text.substr(0, eol);
		text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
		line_no++;
		while (!line.empty() && is_blank(line.back()))
			line.remove_suffix(1);
		if (line.empty())
			continue;

		const KeyValue kv = parse_key_value(line, path, line_no);
		const auto [first, added] = seen.emplace(kv.key, line_no);
		if (!added)
			fail(-EINVAL, "%s:%u: %.*s repeated (first on line %u)", path.c_str(), line_no,
			     static_cast<int>(kv.key.size()), kv.key.data(), first->second);
		out.push_back(kv);
	}
	return out;
}

const KeyValue *find_key(const std::vector<KeyValue> &kvs, std::string_view key)
{
	for (const KeyValue &kv : kvs)
		if (kv.key == key)
			return &kv;
	return nullptr;
}

uint64_t required_key(const std::vector<KeyValue> &kvs, std::string_view key, const fs::path &path)
{
	const KeyValue *kv = find_key(kvs, key);
	if (!kv)
		fail(-EINVAL, "%s: no %.*s line", path.c_str(), static_cast<int>(key.size()), key.data());
	return kv->value;
}

uint32_t to_u32(const KeyValue &kv, const fs::path &path)
{
	if (kv.value > UINT32_MAX)
		fail(-EINVAL, "%s:%u: %.*s %llu does not fit 32 bits", path.c_str(), kv.line,
		     static_cast<int>(kv.key.size()), kv.key.data(), static_cast<unsigned long long>(kv.value));
	return static_cast<uint32_t>(kv.value);
}

struct PropertyKey {
	const char *name;
	uint32_t NodeProperties::*u32;
	uint64_t NodeProperties::*u64;
};

// The node properties we keep; KFD prints more (location_id, unique_id, clocks...), which are
// ignored like any unknown key.
constexpr PropertyKey kPropertyKeys[] = {
	{ "cpu_cores_count", &NodeProperties::cpu_cores_count, nullptr },
	{ "simd_count", &NodeProperties::simd_count, nullptr },
	{ "mem_banks_count", &NodeProperties::mem_banks_count, nullptr },
	{ "caches_count", &NodeProperties::caches_count, nullptr },
	{ "io_links_count", &NodeProperties::io_links_count, nullptr },
	{ "max_waves_per_simd", &NodeProperties::max_waves_per_simd, nullptr },
	{ "lds_size_in_kb", &NodeProperties::lds_size_in_kb, nullptr },
	{ "gds_size_in_kb", &NodeProperties::gds_size_in_kb, nullptr },
	{ "num_gws", &NodeProperties::num_gws, nullptr },
	{ "wave_front_size", &NodeProperties::wave_front_size, nullptr },
	{ "array_count", &NodeProperties::array_count, nullptr },
	{ "simd_arrays_per_engine", &NodeProperties::simd_arrays_per_engine, nullptr },
	{ "cu_per_simd_array", &NodeProperties::cu_per_simd_array, nullptr },
	{ "simd_per_cu", &NodeProperties::simd_per_cu, nullptr },
	{ "max_slots_scratch_cu", &NodeProperties::max_slots_scratch_cu, nullptr },
	{ "gfx_target_version", &NodeProperties::gfx_target_version, nullptr },
	{ "vendor_id", &NodeProperties::vendor_id, nullptr },
	{ "device_id", &NodeProperties::device_id, nullptr },
	{ "domain", &NodeProperties::domain, nullptr },
	{ "drm_render_minor", &NodeProperties::drm_render_minor, nullptr },
	{ "hive_id", nullptr, &NodeProperties::hive_id },
	{ "num_sdma_engines", &NodeProperties::num_sdma_engines, nullptr },
	{ "num_sdma_xgmi_engines", &NodeProperties::num_sdma_xgmi_engines, nullptr },
	{ "num_sdma_queues_per_engine", &NodeProperties::num_sdma_queues_per_engine, nullptr },
	{ "num_cp_queues", &NodeProperties::num_cp_queues, nullptr },
	{ "fw_version", &NodeProperties::fw_version, nullptr },
	{ "capability", &NodeProperties::capability, nullptr },
	{ "sdma_fw_version", &NodeProperties::sdma_fw_version, nullptr },
	{ "num_xcc", &NodeProperties::num_xcc, nullptr },
	{ "unique_id", nullptr, &NodeProperties::unique_id },
};

NodeProperties parse_properties(const fs::path &path)
{
	const std::string text = read_attribute(path);
	const std::vector<KeyValue> kvs = parse_key_values(text, path);
	NodeProperties props;
	for (const KeyValue &kv : kvs) {
		for (const PropertyKey &key : kPropertyKeys) {
			if (kv.key != key.name)
				continue;
			if (key.u64)
				props.*key.u64 = kv.value;
			else
				props.*key.u32 = to_u32(kv, path);
			break;
		}
	}
	return props;
}

// The GPU's VRAM: the first bank holding frame-buffer memory.
void parse_vram(const fs::path &node_dir, uint32_t node_id, uint32_t gpu_id, NodeProperties &props)
{
	const fs::path banks_dir = node_dir / "mem_banks";
	for (uint32_t bank : numbered_entries(banks_dir, true, kMaxMemBanks, "memory banks")) {
		const fs::path path = banks_dir / std::to_string(bank) / "properties";
		const std::string text = read_attribute(path);
		const std::vector<KeyValue> kvs = parse_key_values(text, path);
		const uint64_t heap = required_key(kvs, "heap_type", path);
		const uint64_t size = required_key(kvs, "size_in_bytes", path);
		if (heap != static_cast<uint64_t>(HeapType::fb_public) &&
		    heap != static_cast<uint64_t>(HeapType::fb_private))
			continue;
		if (size == 0)
			continue;
		props.vram_public = heap == static_cast<uint64_t>(HeapType::fb_public);
		props.vram_size = size;
		return;
	}
	fail(-EINVAL, "node %u (gpu 0x%x) has no VRAM: no bank in %s has heap_type 1 or 2 and a non-zero size_in_bytes",
	     node_id, gpu_id, banks_dir.c_str());
}

std::vector<IoLink> parse_links(const fs::path &node_dir)
{
	const fs::path links_dir = node_dir / "io_links";
	std::vector<IoLink> links;
	for (uint32_t index : numbered_entries(links_dir, true, kMaxNodeLinks, "io links")) {
		const fs::path path = links_dir / std::to_string(index) / "properties";
		const std::string text = read_attribute(path);
		const std::vector<KeyValue> kvs = parse_key_values(text, path);
		const uint64_t type = required_key(kvs, "type", path);
		if (type != static_cast<uint64_t>(IoLinkType::pcie) && type != static_cast<uint64_t>(IoLinkType::xgmi))
			continue;
		const KeyValue *to = find_key(kvs, "node_to");
		if (!to)
			fail(-EINVAL, "%s: no node_to line", path.c_str());
		links.push_back({ static_cast<IoLinkType>(type), to_u32(*to, path) });
	}
	return links;
}

uint32_t parse_gpu_id(std::string_view text, const fs::path &path)
{
	std::string_view value = text;
	while (!value.empty() && (value.back() == '\n' || value.back() == ' '))
		value.remove_suffix(1);
	uint64_t id = 0;
	const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), id);
	if (value.empty() || ec != std::errc() || end != value.data() + value.size())
		fail(-EINVAL, "%s:1: malformed gpu_id %s (expected an unsigned decimal)", path.c_str(),
		     quote(text).c_str());
	if (id > kMaxGpuId)
		fail(-EINVAL, "%s:1: gpu_id %llu is out of range (KFD gpu_ids have 16 bits)", path.c_str(),
		     static_cast<unsigned long long>(id));
	return static_cast<uint32_t>(id);
}

// The partitions of each physical GPU: the GPU nodes that share its unique_id (an MI300 in CPX
// mode shows one node per XCC, all with the device's id). KFD prints 0 where the driver has no id.
void count_partitions(std::vector<Node> &nodes)
{
	std::map<uint64_t, uint32_t> per_device;
	for (const Node &n : nodes)
		if (n.is_gpu() && n.props.unique_id)
			per_device[n.props.unique_id]++;
	for (Node &n : nodes)
		if (n.is_gpu() && n.props.unique_id)
			n.props.device_partitions = per_device[n.props.unique_id];
}

} // namespace

const char *io_link_type_name(IoLinkType type)
{
	switch (type) {
	case IoLinkType::pcie:
		return "PCIe";
	case IoLinkType::xgmi:
		return "xGMI";
	}
	return "unknown";
}

size_t Node::valid_link_count() const
{
	return static_cast<size_t>(std::count_if(links.begin(), links.end(), [](const IoLink &l) { return l.valid; }));
}

Topology::Topology(std::vector<Node> nodes) : nodes_(std::move(nodes))
{
	if (nodes_.size() > kMaxTopologyNodes)
		fail(-EINVAL, "topology has %zu nodes, more than %zu", nodes_.size(), kMaxTopologyNodes);
	std::sort(nodes_.begin(), nodes_.end(), [](const Node &a, const Node &b) { return a.node_id < b.node_id; });
	check_nodes();
	resolve_links();
	find_hives();
}

// Node ids and gpu_ids are unique; no node has more links than a real one could.
void Topology::check_nodes() const
{
	for (size_t i = 0; i < nodes_.size(); i++) {
		if (i && nodes_[i].node_id == nodes_[i - 1].node_id)
			fail(-EINVAL, "topology has node %u twice", nodes_[i].node_id);
		if (nodes_[i].links.size() > kMaxNodeLinks)
			fail(-EINVAL, "node %u has %zu io links, more than %zu", nodes_[i].node_id,
			     nodes_[i].links.size(), kMaxNodeLinks);
		if (!nodes_[i].is_gpu())
			continue;
		for (size_t j = 0; j < i; j++)
			if (nodes_[j].gpu_id == nodes_[i].gpu_id)
				fail(-EINVAL, "nodes %u and %u have the same gpu_id 0x%x", nodes_[j].node_id,
				     nodes_[i].node_id, nodes_[i].gpu_id);
	}
}

// A link is valid when it leads to another node of the topology, bidirectional when that node has
// a link of the same type back.
void Topology::resolve_links()
{
	// Every link as (from, to, type), sorted, to find the links back without a quadratic scan.
	std::vector<std::tuple<uint32_t, uint32_t, IoLinkType>> all_links;
	for (const Node &n : nodes_)
		for (const IoLink &link : n.links)
			all_links.emplace_back(n.node_id, link.node_to, link.type);
	std::sort(all_links.begin(), all_links.end());
	for (Node &n : nodes_) {
		for (IoLink &link : n.links) {
			link.valid = link.node_to != n.node_id && node(link.node_to) != nullptr;
			link.bidirectional =
				link.valid && std::binary_search(all_links.begin(), all_links.end(),
								 std::make_tuple(link.node_to, n.node_id, link.type));
		}
	}
}

// Hives: union-find over the bidirectional xGMI links between GPUs.
void Topology::find_hives()
{
	DisjointSets sets(nodes_.size());
	std::vector<bool> in_hive(nodes_.size(), false);
	for (size_t i = 0; i < nodes_.size(); i++) {
		if (!nodes_[i].is_gpu())
			continue;
		for (const IoLink &link : nodes_[i].links) {
			if (link.type != IoLinkType::xgmi || !link.bidirectional)
				continue;
			const size_t j = static_cast<size_t>(node(link.node_to) - nodes_.data());
			if (!nodes_[j].is_gpu())
				continue;
			in_hive[i] = in_hive[j] = true;
			sets.join(i, j);
		}
	}
	hive_index_.assign(nodes_.size(), std::nullopt);
	std::vector<std::optional<size_t>> hive_of_root(nodes_.size());
	for (size_t i = 0; i < nodes_.size(); i++) {
		if (!in_hive[i])
			continue;
		std::optional<size_t> &h = hive_of_root[sets.root(i)];
		if (!h) {
			h = hives_.size();
			hives_.emplace_back();
		}
		hives_[*h].push_back(nodes_[i].node_id);
		hive_index_[i] = h;
	}
}

const Node *Topology::node(uint32_t node_id) const
{
	auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node_id,
				   [](const Node &n, uint32_t id) { return n.node_id < id; });
	return it != nodes_.end() && it->node_id == node_id ? &*it : nullptr;
}

const Node *Topology::gpu(uint32_t gpu_id) const
{
	if (gpu_id == 0)
		return nullptr;
	for (const Node &n : nodes_)
		if (n.gpu_id == gpu_id)
			return &n;
	return nullptr;
}

std::vector<const Node *> Topology::gpus() const
{
	std::vector<const Node *> out;
	for (const Node &n : nodes_)
		if (n.is_gpu())
			out.push_back(&n);
	return out;
}

std::vector<const Node *> Topology::cpus() const
{
	std::vector<const Node *> out;
	for (const Node &n : nodes_)
		if (!n.is_gpu())
			out.push_back(&n);
	return out;
}

std::optional<size_t> Topology::hive_of(uint32_t node_id) const
{
	const Node *n = node(node_id);
	return n ? hive_index_[static_cast<size_t>(n - nodes_.data())] : std::nullopt;
}

Topology Topology::without_invalid_links() const
{
	std::vector<Node> nodes = nodes_;
	for (Node &n : nodes)
		std::erase_if(n.links, [](const IoLink &l) { return !l.valid; });
	return Topology(std::move(nodes));
}

Topology parse_topology(const fs::path &nodes_dir)
{
	std::vector<Node> nodes;
	for (uint32_t id : numbered_entries(nodes_dir, false, kMaxTopologyNodes, "nodes")) {
		if (id >= kMaxTopologyNodes)
			fail(-EINVAL, "%s/%u: node id out of range (at most %zu nodes)", nodes_dir.c_str(), id,
			     kMaxTopologyNodes);
		const fs::path dir = nodes_dir / std::to_string(id);
		const fs::path gpu_id_path = dir / "gpu_id";
		const FileText gpu_id_text = read_attribute(gpu_id_path, true);
		if (gpu_id_text.hidden_errno)
			continue;

		Node node;
		node.node_id = id;
		node.gpu_id = parse_gpu_id(gpu_id_text.text, gpu_id_path);
		node.props = parse_properties(dir / "properties");
		if (node.is_gpu())
			parse_vram(dir, id, node.gpu_id, node.props);
		node.links = parse_links(dir);
		nodes.push_back(std::move(node));
	}
	count_partitions(nodes);
	return Topology(std::move(nodes));
}

std::string compute_partition_mode(uint32_t num_xcc, uint32_t device_partitions)
{
	if (num_xcc <= 1 && device_partitions <= 1)
		return "";
	if (device_partitions <= 1)
		return "SPX";
	if (num_xcc <= 1)
		return "CPX";
	switch (device_partitions) {
	case 2:
		return "DPX";
	case 3:
		return "TPX";
	case 4:
		return "QPX";
	}
	return strprintf("%u-partition", device_partitions);
}

std::string node_ranges(std::vector<uint32_t> ids)
{
	std::sort(ids.begin(), ids.end());
	std::string out;
	for (size_t i = 0, j; i < ids.size(); i = j + 1) {
		for (j = i; j + 1 < ids.size() && ids[j + 1] == ids[j] + 1;)
			j++;
		out += out.empty() ? "" : ", ";
		if (j == i)
			out += strprintf("%u", ids[i]);
		else
			out += strprintf(j == i + 1 ? "%u, %u" : "%u-%u", ids[i], ids[j]);
	}
	return out;
}

} // namespace amdgpu
