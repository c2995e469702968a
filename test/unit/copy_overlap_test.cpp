// SPDX-License-Identifier: GPL-2.0-only
#include "copy/copy_overlap.hpp"

#include <gtest/gtest.h>

namespace amdgpu {
namespace {

TEST(CopyOverlap, WhatCriuWaitedForIsNotHidden)
{
	const CopyOverlap o { .copy_seconds = 3.0, .beside_seconds = 2.0, .waited_seconds = 1.25 };
	EXPECT_DOUBLE_EQ(o.hidden_seconds(), 1.75);
	EXPECT_EQ(describe("dump", o), "dump: GPU copy 3.000 s beside criu's own work of 2.000 s: 1.750 s of it "
				       "hidden, criu waited 1.250 s for the rest");
}

TEST(CopyOverlap, HiddenStaysWithinTheCopy)
{
	// clocks read apart can make the wait a hair longer than the copy
	EXPECT_DOUBLE_EQ(
		(CopyOverlap { .copy_seconds = 1.0, .beside_seconds = 0, .waited_seconds = 1.001 }).hidden_seconds(),
		0.0);
	EXPECT_EQ(describe_in_series("pid 7: restore", 0.5, "through criu's image streamer"),
		  "pid 7: restore: GPU copy 0.500 s in series with criu's own work (through criu's image streamer)");
}

} // namespace
} // namespace amdgpu
