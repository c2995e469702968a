// SPDX-License-Identifier: GPL-2.0-only
//
// The built amdgpu_plugin.so loaded the way criu loads it (dlopen, look up CR_PLUGIN_DESC), with
// the test binary standing in for the symbols criu exports. Which criu the test binary plays is
// decided by the criu-plugin.h it is compiled against and the symbols it exports.
#pragma once

#include "criu/criu_api.hpp"
#include "criu_host.hpp"
#include "temp_dir.hpp"

#include <dlfcn.h>

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace amdgpu::test {

class LoadedPlugin : public ::testing::Test {
protected:
	static constexpr const char *kPluginPath = "plugins/amdgpu/amdgpu_plugin.so";

	void SetUp() override
	{
		handle_ = dlopen(kPluginPath, RTLD_NOW | RTLD_LOCAL);
		ASSERT_NE(handle_, nullptr) << dlerror();
		desc_ = static_cast<cr_plugin_desc_t *>(dlsym(handle_, "CR_PLUGIN_DESC"));
		ASSERT_NE(desc_, nullptr) << dlerror();
		host::set_log_sink([this](unsigned int level, const std::string &line) {
			log_.push_back({ level, line });
		});
		host::set_image_dir(images_.fd());
	}
	void TearDown() override
	{
		host::set_log_sink(nullptr);
		host::set_image_dir(-1);
		if (handle_)
			dlclose(handle_);
	}

	template <typename Hook> Hook *hook(int id) { return reinterpret_cast<Hook *>(desc_->hooks[id]); }

	bool logged(unsigned int level, const std::string &needle) const
	{
		for (const auto &[l, line] : log_)
			if (l == level && line.rfind("amdgpu_plugin: ", 0) == 0 &&
			    line.find(needle) != std::string::npos)
				return true;
		return false;
	}

	void *handle_ = nullptr;
	cr_plugin_desc_t *desc_ = nullptr;
	TempDir images_;
	std::vector<std::pair<unsigned int, std::string>> log_;
};

} // namespace amdgpu::test
