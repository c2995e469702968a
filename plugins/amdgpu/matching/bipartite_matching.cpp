// SPDX-License-Identifier: GPL-2.0-only
#include "matching/bipartite_matching.hpp"

#include <algorithm>
#include <climits>

namespace amdgpu::matching {

size_t Bipartite::solve()
{
	size_t size = greedy();
	while (layer())
		for (size_t l = 0; l < adj_.size(); l++)
			if (match_left_[l] == kNone && augment(static_cast<int>(l)))
				size++;
	return size;
}

bool Bipartite::complete() const
{
	return std::none_of(match_left_.begin(), match_left_.end(), [](int r) { return r == kNone; });
}

// Each left vertex takes its first free edge, in the order the edges were added.
size_t Bipartite::greedy()
{
	size_t size = 0;
	for (size_t l = 0; l < adj_.size(); l++) {
		for (int r : adj_[l]) {
			if (match_right_[r] == kNone) {
				match_left_[l] = r;
				match_right_[r] = static_cast<int>(l);
				size++;
				break;
			}
		}
	}
	return size;
}

// Breadth-first layering from the free left vertices; true if a free right vertex is reachable.
bool Bipartite::layer()
{
	dist_.assign(adj_.size(), INT_MAX);
	std::vector<int> queue;
	for (size_t l = 0; l < adj_.size(); l++) {
		if (match_left_[l] == kNone) {
			dist_[l] = 0;
			queue.push_back(static_cast<int>(l));
		}
	}
	bool found = false;
	for (size_t head = 0; head < queue.size(); head++) {
		const int l = queue[head];
		for (int r : adj_[l]) {
			const int m = match_right_[r];
			if (m == kNone)
				found = true;
			else if (dist_[m] == INT_MAX) {
				dist_[m] = dist_[l] + 1;
				queue.push_back(m);
			}
		}
	}
	return found;
}

// Depth-first along the layers: an augmenting path from `l`, applied if found.
bool Bipartite::augment(int l)
{
	for (int r : adj_[l]) {
		const int m = match_right_[r];
		if (m == kNone || (dist_[m] == dist_[l] + 1 && augment(m))) {
			match_left_[l] = r;
			match_right_[r] = l;
			return true;
		}
	}
	dist_[l] = INT_MAX;
	return false;
}

// The right vertices reachable from `left` by alternating paths.
std::vector<bool> Bipartite::reachable_rights(size_t left) const
{
	std::vector<bool> seen_left(adj_.size(), false), seen_right(match_right_.size(), false);
	std::vector<size_t> queue { left };
	seen_left[left] = true;
	for (size_t head = 0; head < queue.size(); head++) {
		for (int r : adj_[queue[head]]) {
			if (seen_right[r])
				continue;
			seen_right[r] = true;
			const int m = match_right_[r];
			if (m != kNone && !seen_left[m]) {
				seen_left[m] = true;
				queue.push_back(static_cast<size_t>(m));
			}
		}
	}
	return seen_right;
}

void Bipartite::competition(size_t left, std::vector<size_t> &lefts, std::vector<size_t> &rights) const
{
	const std::vector<bool> seen = reachable_rights(left);
	lefts.clear();
	rights.clear();
	for (size_t l = 0; l < adj_.size(); l++) {
		const std::vector<int> &e = adj_[l];
		if (l == left || (!e.empty() && std::all_of(e.begin(), e.end(), [&](int r) { return seen[r]; })))
			lefts.push_back(l);
	}
	for (size_t r = 0; r < seen.size(); r++)
		if (seen[r])
			rights.push_back(r);
}

} // namespace amdgpu::matching
