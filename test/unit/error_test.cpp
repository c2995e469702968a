// SPDX-License-Identifier: GPL-2.0-only
#include "support/error.hpp"

#include <gtest/gtest.h>

#include <cerrno>

namespace amdgpu {
namespace {

// A hook returns Error::err() to criu; 0 there would turn the failure into a success.
TEST(Error, NeverCarriesZeroSoNoFailureReachesCriuAsSuccess)
{
	EXPECT_EQ(Error(0, "nothing set errno").err(), -EIO);
	EXPECT_THROW(
		{
			try {
				fail(0, "failed with errno %d", 0);
			} catch (const Error &e) {
				EXPECT_EQ(e.err(), -EIO);
				throw;
			}
		},
		Error);
}

TEST(Error, TakesErrnoOfEitherSignAsNegative)
{
	EXPECT_EQ(Error(ENOENT, "x").err(), -ENOENT);
	EXPECT_EQ(Error(-ENOENT, "x").err(), -ENOENT);
	EXPECT_EQ(std::string(Error(-EINVAL, "the message").what()), "the message");
}

} // namespace
} // namespace amdgpu
