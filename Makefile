# SPDX-License-Identifier: GPL-2.0-only
#
# criu-amdgpu-plugin. `make` builds the plugin, its tools and the unit tests; `make check` installs
# what is missing, then runs the unit tests and the QEMU test bed; `make demo` runs the product on
# the emulated test bed. See README.md.

BUILD      ?= build
PREFIX     ?= /usr
PLUGINDIR  ?= $(PREFIX)/lib/criu
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
DESTDIR    ?=

CC         ?= gcc
CXX        ?= g++
PKG_CONFIG ?= pkg-config
PROTOC_C   ?= protoc-c

PKGS       := libprotobuf-c libdrm libdrm_amdgpu numa
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)

WARN       := -Wall -Wextra -Werror
# <linux/kfd_ioctl.h> includes <drm/drm.h>, which Debian ships under libdrm's include directory.
DRM_SHIM   := $(BUILD)/include/drm
CPPFLAGS   += -Iplugins/amdgpu -I$(BUILD)/images -I$(BUILD)/include $(PKG_CFLAGS) -D_GNU_SOURCE
CXXFLAGS   ?= -O2 -g
CXXFLAGS   += -std=c++20 $(WARN) -fPIC -fvisibility=hidden -fvisibility-inlines-hidden
CFLAGS     ?= -O2 -g
CFLAGS     += -fPIC -fvisibility=hidden
LDLIBS     := $(PKG_LIBS) -lpthread -ldl

PLUGIN     := plugins/amdgpu/amdgpu_plugin.so
PROTO      := images/criu-amdgpu.proto
PROTO_C    := $(BUILD)/images/criu-amdgpu.pb-c.c
PROTO_H    := $(BUILD)/images/criu-amdgpu.pb-c.h
PROTO_O    := $(BUILD)/images/criu-amdgpu.pb-c.o

# The plugin core: everything but the hook entry and the descriptor, so tests and tools link it too.
ENTRY_SRCS := plugins/amdgpu/hooks/plugin_entry.cpp plugins/amdgpu/hooks/plugin_descriptor.cpp
CORE_SRCS  := $(filter-out $(ENTRY_SRCS),$(wildcard plugins/amdgpu/*/*.cpp))
CORE_OBJS  := $(patsubst %.cpp,$(BUILD)/%.o,$(CORE_SRCS)) $(PROTO_O)
CORE_LIB   := $(BUILD)/libamdgpu_core.a
ENTRY_OBJ  := $(patsubst %.cpp,$(BUILD)/%.o,$(ENTRY_SRCS))

TOOL_SRCS  := $(wildcard tools/*.cpp)
TOOLS      := $(patsubst tools/%.cpp,$(BUILD)/bin/%,$(TOOL_SRCS))

BENCH_SRCS := $(wildcard test/bench/*.cpp)
BENCHES    := $(patsubst test/bench/%.cpp,$(BUILD)/bench/%,$(BENCH_SRCS))

# Copy engines whose VRAM is host memory (test/engines): the unit tests and the benchmarks drive
# the plugin's own transfer with them.
ENGINE_SRCS := $(wildcard test/engines/*.cpp)
ENGINE_OBJS := $(patsubst %.cpp,$(BUILD)/%.o,$(ENGINE_SRCS))

UNIT_SRCS  := $(wildcard test/unit/*.cpp)
CPPFLAGS   += -Itools/support -Itest
UNIT_OBJS  := $(patsubst %.cpp,$(BUILD)/%.o,$(UNIT_SRCS) $(ENGINE_SRCS))
UNIT_BIN   := $(BUILD)/test/unit/unit-tests

# The same plugin seen from criu 4.3: tests compiled against 4.3's criu-plugin.h (downloaded once by
# test/criu/build.sh, never committed) in a host binary of their own. Built by `make check`, not by
# `make`, so that building the plugin never needs the network.
HEADER_43  := $(BUILD)/criu/4.3-header/criu/criu-plugin.h
UNIT43_SRCS := $(wildcard test/unit/criu-4.3/*.cpp)
UNIT43_OBJS := $(patsubst %.cpp,$(BUILD)/%.o,$(UNIT43_SRCS))
UNIT43_BIN := $(BUILD)/test/unit/criu-4.3-tests

.PHONY: all deps deps-full plugin tools install deb check check-full check-unit check-vm check-containers bench demo emu clean format fuzz fuzz-build fuzz-seeds sanitizers
.DEFAULT_GOAL := all

# Test-bed programs built on the host (the guest sees this tree): the image streamer stand-in and
# the fault sweep's host-call seam (test/host-faults/README.md).
STREAMER   := $(BUILD)/test/image-streamer
HOST_FAULTS := $(BUILD)/test/libhost-faults.so

# The emulated GPU's pure parts, tested on the host: the shader core and the context save area
# codec (test/emu/shader-tests, test/emu/cwsr-tests), built from the module's own sources.
EMU_HOST_TESTS := $(BUILD)/test/emu/shader_test $(BUILD)/test/emu/cwsr_test

all: plugin tools $(UNIT_BIN) $(BENCHES) $(STREAMER) $(HOST_FAULTS) $(EMU_HOST_TESTS)

$(BUILD)/test/emu/shader_test: $(wildcard test/emu/shader-tests/* test/emu/shader-tests/programs/*.s \
			      test/emu/shader-tests/programs/gfx942/*.s test/emu/emu_shader*.[ch])
	@$(MAKE) --no-print-directory -C test/emu/shader-tests O=$(abspath $(BUILD))/test/emu

$(BUILD)/test/emu/cwsr_test: $(wildcard test/emu/cwsr-tests/* test/emu/emu_cwsr.[ch] test/emu/emu_shader.h)
	@$(MAKE) --no-print-directory -C test/emu/cwsr-tests O=$(abspath $(BUILD))/test/emu

$(STREAMER): test/streamer/image_streamer.cpp
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 -O2 -g $(WARN) -pthread -o $@ $<

$(HOST_FAULTS): test/host-faults/host_faults.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g $(WARN) -shared -fPIC -fvisibility=hidden -pthread -o $@ $< -ldl

deps:
	@scripts/install-deps.sh

deps-full:
	@scripts/install-deps.sh --full

plugin: $(PLUGIN)

$(PROTO_C) $(PROTO_H): $(PROTO)
	@mkdir -p $(BUILD)/images
	$(PROTOC_C) --proto_path=images --c_out=$(BUILD)/images $(PROTO)

$(PROTO_O): $(PROTO_C)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

$(DRM_SHIM):
	@mkdir -p $(dir $@)
	ln -sfn $(shell $(PKG_CONFIG) --variable=includedir libdrm)/libdrm $@

$(BUILD)/%.o: %.cpp $(PROTO_H) | $(DRM_SHIM)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -MMD -MP -c $< -o $@

$(CORE_LIB): $(CORE_OBJS)
	@rm -f $@
	ar rcs $@ $^

# Only the plugin descriptor is exported; criu provides print_on_level and criu_get_image_dir.
$(PLUGIN): $(ENTRY_OBJ) $(CORE_LIB) plugins/amdgpu/hooks/amdgpu_plugin.map
	$(CXX) $(LDFLAGS) -shared -o $@ $(ENTRY_OBJ) $(CORE_LIB) -Wl,--as-needed $(LDLIBS) -Wl,--version-script=plugins/amdgpu/hooks/amdgpu_plugin.map

tools: $(TOOLS)

# Tools and tests run outside criu: criu_host stands in for the symbols criu exports.
HOST_OBJ   := $(BUILD)/tools/support/criu_host.o

$(BUILD)/bin/%: $(BUILD)/tools/%.o $(HOST_OBJ) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) -rdynamic -o $@ $^ -Wl,--as-needed $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/test/bench/%.o $(ENGINE_OBJS) $(HOST_OBJ) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CXX) -rdynamic -o $@ $^ $(LDLIBS)

$(UNIT_BIN): $(UNIT_OBJS) $(HOST_OBJ) $(CORE_LIB) | $(PLUGIN) $(TOOLS)
	$(CXX) -rdynamic -o $@ $^ $(LDLIBS) -lgtest -lgtest_main -ldl

# The unit tests again, built with gcc's sanitizers: ASan and UBSan over all of them, TSan over the
# threaded parts (the copy worker, the restore copies, the guards). The plugin's code is compiled
# again for each under $(BUILD)/san/<kind>; the binaries sit beside unit-tests, which finds the
# tools from its own place. make check runs both.
SAN_KINDS  := asan tsan
SAN_asan   := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
SAN_tsan   := -fsanitize=thread
# gcc 12 sees uninitialised members inside libstdc++'s std::function under the sanitizers'
# instrumentation (std::regex builds them), which the plain build does not: that warning is the
# plain build's to give.
SAN_WARN   := -Wno-maybe-uninitialized
SAN_SRCS   := $(CORE_SRCS) $(UNIT_SRCS) $(ENGINE_SRCS) tools/support/criu_host.cpp
SAN_BINS   := $(foreach k,$(SAN_KINDS),$(BUILD)/test/unit/unit-tests-$(k))

define san_rules
$(BUILD)/san/$(1)/%.o: %.cpp $(PROTO_H) | $(DRM_SHIM)
	@mkdir -p $$(dir $$@)
	$(CXX) $(CPPFLAGS) -std=c++20 $(WARN) $(SAN_WARN) -O1 -g $(SAN_$(1)) -MMD -MP -c $$< -o $$@

$(BUILD)/san/$(1)/proto.o: $(PROTO_C) $(PROTO_H)
	@mkdir -p $$(dir $$@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $(SAN_$(1)) -c $$< -o $$@

$(BUILD)/test/unit/unit-tests-$(1): $(patsubst %.cpp,$(BUILD)/san/$(1)/%.o,$(SAN_SRCS)) $(BUILD)/san/$(1)/proto.o | $(PLUGIN) $(TOOLS)
	$(CXX) $(SAN_$(1)) -rdynamic -o $$@ $$^ $(LDLIBS) -lgtest -lgtest_main -ldl
endef
$(foreach k,$(SAN_KINDS),$(eval $(call san_rules,$(k))))

sanitizers: $(SAN_BINS)

$(HEADER_43):
	test/criu/build.sh --header-4.3 >/dev/null

$(BUILD)/test/unit/criu-4.3/%.o: test/unit/criu-4.3/%.cpp $(HEADER_43) $(PROTO_H) | $(DRM_SHIM)
	@mkdir -p $(dir $@)
	$(CXX) -isystem $(BUILD)/criu/4.3-header -Itest/unit $(CPPFLAGS) $(CXXFLAGS) -MMD -MP -c $< -o $@

$(UNIT43_BIN): $(UNIT43_OBJS) $(HOST_OBJ) | $(PLUGIN)
	$(CXX) -rdynamic -o $@ $^ $(LDLIBS) -lgtest -lgtest_main -ldl

install: $(PLUGIN) $(TOOLS)
	install -d $(DESTDIR)$(PLUGINDIR)
	install -m 0755 $(PLUGIN) $(DESTDIR)$(PLUGINDIR)/amdgpu_plugin.so
	$(foreach t,$(TOOLS),install -D -m 0755 $(t) $(DESTDIR)$(BINDIR)/$(notdir $(t));)
	install -D -m 0644 Documentation/criu-amdgpu-plugin.8 $(DESTDIR)$(MANDIR)/man8/criu-amdgpu-plugin.8

# --- fuzzing: every decoder of outside data under libFuzzer, ASan and UBSan (test/fuzz/README.md).
# The plugin's sources are built again with clang for it, under $(BUILD)/fuzz.
FUZZ_CXX     ?= clang++-14
FUZZ_CC      ?= clang-14
FUZZ_FLAGS   := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_SECONDS ?= 60
FUZZ_OBJS    := $(patsubst %.cpp,$(BUILD)/fuzz/%.o,$(CORE_SRCS) tools/support/criu_host.cpp) $(BUILD)/fuzz/proto.o
FUZZERS      := $(patsubst test/fuzz/fuzz_%.cpp,$(BUILD)/fuzz/fuzz_%,$(wildcard test/fuzz/fuzz_*.cpp))

$(BUILD)/fuzz/%.o: %.cpp $(PROTO_H) | $(DRM_SHIM)
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(CPPFLAGS) -std=c++20 $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(BUILD)/fuzz/proto.o: $(PROTO_C) $(PROTO_H)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/fuzz_%: test/fuzz/fuzz_%.cpp test/fuzz/fuzz_support.hpp $(FUZZ_OBJS)
	$(FUZZ_CXX) $(CPPFLAGS) -Itest/fuzz -std=c++20 $(FUZZ_FLAGS) -fsanitize=fuzzer $< $(FUZZ_OBJS) -o $@ $(LDLIBS)

fuzz-build: $(FUZZERS)

# Each harness for FUZZ_SECONDS from its checked-in seeds; findings land in $(BUILD)/fuzz/findings.
fuzz: deps
	@$(MAKE) --no-print-directory fuzz-build
	@test/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZERS)

# The seeds, written again by the plugin's own writers.
fuzz-seeds: $(BUILD)/bin/make-seeds
	$(BUILD)/bin/make-seeds test/fuzz/corpus

$(BUILD)/bin/make-seeds: $(BUILD)/test/fuzz/make_seeds.o $(HOST_OBJ) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CXX) -rdynamic -o $@ $^ $(LDLIBS)

.SECONDARY: $(FUZZ_OBJS)
-include $(FUZZ_OBJS:.o=.d)

# The test command: installs what is missing, builds with one job per core, runs make check's
# suites and prints one total line (test/run-all.sh; test/README.md has what runs where).
JOBS       ?= $(shell nproc)
check: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all $(UNIT43_BIN) fuzz-build sanitizers
	@test/run-all.sh check

# make check-full: make check, then every part of check-full; PART=name: that part alone (the
# names: test/run-all.sh --list). Only the bookworm part needs bookworm's hipcc (deps-full).
PART       ?=
check-full: $(if $(filter-out bookworm,$(or $(PART),bookworm)),deps,deps-full)
	@$(MAKE) --no-print-directory -j$(JOBS) all $(UNIT43_BIN) fuzz-build sanitizers
	@test/run-all.sh $(or $(PART),full)

check-unit: $(UNIT_BIN) $(UNIT43_BIN)
	@test/unit/run.sh $(UNIT_BIN)
	@test/unit/run.sh $(UNIT43_BIN)

check-vm: all
	@test/vm/run-suite.sh

# Only the Podman scenarios (e2e/8*), in the 4 GiB guest make check also gives them.
check-containers: all deb
	VM_MEM=4096 VM_SCENARIOS='e2e/8*' $(MAKE) --no-print-directory check-vm

# The benchmarks in the guest need the emulator and the workloads (the trixie guest's are built in
# its root by test/bench/run.sh).
bench: all emu
	@$(MAKE) --no-print-directory -C test/e2e
	@test/bench/run.sh

demo: deps
	@$(MAKE) --no-print-directory all
	@test/vm/demo.sh

# The Debian package, built from a copy of the sources under $(BUILD)/deb (dpkg-buildpackage writes
# next to its source tree) and checked by lintian. Its version is debian/changelog's, the only one.
VERSION    := $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)
DEB        := $(BUILD)/deb/criu-amdgpu-plugin_$(VERSION)_amd64.deb
DEB_SRCS   := Makefile LICENSE README.md Documentation debian images plugins tools

deb:
	rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb/src
	tar -c --exclude='*.so' --exclude='*.o' $(DEB_SRCS) | tar -x -C $(BUILD)/deb/src
	cd $(BUILD)/deb/src && dpkg-buildpackage -us -uc -b -j$(JOBS)
	lintian --fail-on error,warning --info $(DEB)
	@echo "deb: $(DEB)"

emu:
	@$(MAKE) --no-print-directory -C test/emu

format:
	clang-format -i $(wildcard plugins/amdgpu/*/*.[ch]pp tools/*.cpp test/unit/*.cpp test/unit/*/*.cpp test/unit/*/*.hpp)

clean:
	rm -rf $(BUILD) $(PLUGIN)
	-@$(MAKE) --no-print-directory -C test/emu clean 2>/dev/null

-include $(shell find $(BUILD) -path $(BUILD)/vm -prune -o -name '*.d' -type f -print 2>/dev/null)
