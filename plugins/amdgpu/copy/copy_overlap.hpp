// SPDX-License-Identifier: GPL-2.0-only
//
// How much of the GPU copy criu's own work hid. The copy of GPU memory (bo_transfer.hpp) and
// criu's own work (its dump or restore of host memory, through its parasite and its restorer) can
// run side by side: the copy starts as soon as the GPU state is fixed, criu goes on, and the copy
// is joined at the last hook that can still fail the dump or the restore. What the log says of it
// (one line per dump, one per restored task):
//   "dump: GPU copy 3.104 s beside criu's own work of 6.702 s: 3.104 s of it hidden, criu waited
//    0.000 s for the rest"
//   "dump: GPU copy 3.104 s in series with criu's own work (criu 4.2 has no hook after its memory
//    dump that can still fail the dump)"
#pragma once

#include <string>

namespace amdgpu {

struct CopyOverlap {
	double copy_seconds = 0;   // the copy, from its start to its end
	double beside_seconds = 0; // criu's own work from the copy's start to the join
	double waited_seconds = 0; // at the join, for the copy to end
	double hidden_seconds() const;
};

// `what` is "dump" or "pid 1234: restore".
std::string describe(const char *what, const CopyOverlap &overlap);
std::string describe_in_series(const char *what, double copy_seconds, const std::string &why);

} // namespace amdgpu
