// SPDX-License-Identifier: GPL-2.0-only
//
// cri_client: the calls kubelet makes to a container runtime through the CRI (Kubernetes' Container
// Runtime Interface, the gRPC service runtime.v1.RuntimeService), one per command, so that a test
// drives containerd exactly as a Kubernetes node does, without kubelet (not in Debian):
//
//   cri_client [-s SOCKET] [-t SECONDS] COMMAND ...
//     version                          the runtime's name and version
//     pull IMAGE                       PullImage (the image service): what kubelet does before it
//                                      creates a container; prints the image's reference
//     pod-run NAME                     RunPodSandbox: a pod on the node's network (no CNI is
//                                      needed), its log directory made as kubelet makes it;
//                                      prints its id
//     pod-remove POD                   StopPodSandbox, then RemovePodSandbox (and its containers)
//     create POD NAME IMAGE [OPTION...] [-- COMMAND...]
//                                      CreateContainer in POD; prints the container's id. IMAGE is
//                                      an image reference, or a checkpoint archive's path, which
//                                      containerd 2 restores from. Options:
//                                        --device HOST[:CONTAINER]  a device, read-write, as the
//                                                                   AMD GPU device plugin gives one
//                                        --mount HOST[:CONTAINER]   a bind mount
//                                        --group GID                a supplementary group
//     start ID                         StartContainer (restores, for a container made from a
//                                      checkpoint)
//     checkpoint ID ARCHIVE            CheckpointContainer to ARCHIVE (what kubelet's checkpoint API
//                                      calls); the container runs on
//     status ID                        "STATE PID EXIT_CODE" (PID 0 unless running)
//
// A failed call prints "cri_client: <call>: <gRPC code>: <the runtime's message>" on stderr and
// exits 1: the message is what kubelet would log and report in the pod's events.
//
// Built in the trixie guest's root on Debian's gRPC for C++ and the CRI's api.proto from Debian's
// golang-k8s-cri-api-dev (test/vm/trixie-root.sh). kubelet's own Go client (k8s.io/cri-client)
// sends the same messages; in Go it would need 245 source packages of sid that trixie's cannot
// satisfy, where this needs trixie's libgrpc++ and one .proto file.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "api.grpc.pb.h"

namespace {

namespace cri = runtime::v1;

struct Options {
	std::string socket = "/run/containerd/containerd.sock";
	int timeout_s = 300;
};

[[noreturn]] void usage(const char *why)
{
	std::fprintf(stderr, "cri_client: %s\n(see the comment at the top of test/e2e/cri/cri_client.cpp)\n", why);
	std::exit(2);
}

class Runtime {
public:
	explicit Runtime(const Options &opts)
	    : channel_(grpc::CreateChannel("unix://" + opts.socket, grpc::InsecureChannelCredentials())),
	      stub_(cri::RuntimeService::NewStub(channel_)), images_(cri::ImageService::NewStub(channel_)),
	      timeout_s_(opts.timeout_s)
	{
	}

	// Calls one RPC of the runtime or the image service with the deadline; on failure says which
	// call and the runtime's message.
	template <typename Service, typename Request, typename Response>
	bool call(const char *name, grpc::Status (Service::*method)(grpc::ClientContext *, const Request &, Response *),
		  const Request &request, Response *response)
	{
		grpc::ClientContext context;
		context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(timeout_s_));
		Service *service = nullptr;
		if constexpr (std::is_same_v<Service, cri::ImageService::Stub>)
			service = images_.get();
		else
			service = stub_.get();
		const grpc::Status status = (service->*method)(&context, request, response);
		if (status.ok())
			return true;
		std::fprintf(stderr, "cri_client: %s: %s: %s\n", name, code_name(status.error_code()),
			     status.error_message().c_str());
		return false;
	}

private:
	static const char *code_name(grpc::StatusCode code)
	{
		switch (code) {
		case grpc::StatusCode::CANCELLED:
			return "Canceled";
		case grpc::StatusCode::INVALID_ARGUMENT:
			return "InvalidArgument";
		case grpc::StatusCode::DEADLINE_EXCEEDED:
			return "DeadlineExceeded";
		case grpc::StatusCode::NOT_FOUND:
			return "NotFound";
		case grpc::StatusCode::ALREADY_EXISTS:
			return "AlreadyExists";
		case grpc::StatusCode::FAILED_PRECONDITION:
			return "FailedPrecondition";
		case grpc::StatusCode::UNIMPLEMENTED:
			return "Unimplemented";
		case grpc::StatusCode::UNAVAILABLE:
			return "Unavailable";
		case grpc::StatusCode::INTERNAL:
			return "Internal";
		default:
			return "Unknown";
		}
	}

	std::shared_ptr<grpc::Channel> channel_;
	std::unique_ptr<cri::RuntimeService::Stub> stub_;
	std::unique_ptr<cri::ImageService::Stub> images_;
	int timeout_s_;
};

using Stub = cri::RuntimeService::Stub;

// The pod's configuration. kubelet sends it again with every CreateContainer; it must be the
// same as RunPodSandbox's, so it is made from the name alone.
cri::PodSandboxConfig pod_config(const std::string &name)
{
	cri::PodSandboxConfig config;
	auto *meta = config.mutable_metadata();
	meta->set_name(name);
	meta->set_namespace_("default");
	meta->set_uid("cri-client-" + name);
	meta->set_attempt(0);
	// no hostname: a pod on the node's network shares its UTS namespace too (runc refuses to set
	// one there), as kubelet's hostNetwork pods do
	config.set_log_directory("/var/log/pods/" + name);
	auto *ns = config.mutable_linux()->mutable_security_context()->mutable_namespace_options();
	ns->set_network(cri::NamespaceMode::NODE);
	ns->set_pid(cri::NamespaceMode::CONTAINER);
	ns->set_ipc(cri::NamespaceMode::POD);
	return config;
}

// The pod's name, from its id (pod_config needs it for CreateContainer).
bool pod_name(Runtime &rt, const std::string &pod_id, std::string *name)
{
	cri::PodSandboxStatusRequest request;
	cri::PodSandboxStatusResponse response;
	request.set_pod_sandbox_id(pod_id);
	if (!rt.call("PodSandboxStatus", &Stub::PodSandboxStatus, request, &response))
		return false;
	*name = response.status().metadata().name();
	return true;
}

// "HOST[:CONTAINER]" -> (HOST, CONTAINER or HOST)
std::pair<std::string, std::string> host_and_container(std::string_view arg)
{
	const auto colon = arg.find(':');
	if (colon == std::string_view::npos)
		return { std::string(arg), std::string(arg) };
	return { std::string(arg.substr(0, colon)), std::string(arg.substr(colon + 1)) };
}

int cmd_version(Runtime &rt)
{
	cri::VersionRequest request;
	cri::VersionResponse response;
	if (!rt.call("Version", &Stub::Version, request, &response))
		return 1;
	std::printf("%s %s (CRI %s)\n", response.runtime_name().c_str(), response.runtime_version().c_str(),
		    response.runtime_api_version().c_str());
	return 0;
}

int cmd_pull(Runtime &rt, const std::string &image)
{
	cri::PullImageRequest request;
	cri::PullImageResponse response;
	request.mutable_image()->set_image(image);
	if (!rt.call("PullImage", &cri::ImageService::Stub::PullImage, request, &response))
		return 1;
	std::printf("%s\n", response.image_ref().c_str());
	return 0;
}

int cmd_pod_run(Runtime &rt, const std::string &name)
{
	cri::RunPodSandboxRequest request;
	cri::RunPodSandboxResponse response;
	*request.mutable_config() = pod_config(name);
	// the pod's log directory is kubelet's to make; the runtime writes the containers' logs there
	std::error_code ec;
	std::filesystem::create_directories(request.config().log_directory(), ec);
	if (ec) {
		std::fprintf(stderr, "cri_client: cannot make %s: %s\n", request.config().log_directory().c_str(),
			     ec.message().c_str());
		return 1;
	}
	if (!rt.call("RunPodSandbox", &Stub::RunPodSandbox, request, &response))
		return 1;
	std::printf("%s\n", response.pod_sandbox_id().c_str());
	return 0;
}

int cmd_pod_remove(Runtime &rt, const std::string &pod_id)
{
	cri::StopPodSandboxRequest stop;
	cri::StopPodSandboxResponse stopped;
	stop.set_pod_sandbox_id(pod_id);
	if (!rt.call("StopPodSandbox", &Stub::StopPodSandbox, stop, &stopped))
		return 1;
	cri::RemovePodSandboxRequest remove;
	cri::RemovePodSandboxResponse removed;
	remove.set_pod_sandbox_id(pod_id);
	return rt.call("RemovePodSandbox", &Stub::RemovePodSandbox, remove, &removed) ? 0 : 1;
}

int cmd_create(Runtime &rt, const std::vector<std::string> &args)
{
	if (args.size() < 3)
		usage("create POD NAME IMAGE [--device HOST[:CONTAINER]] [--mount HOST[:CONTAINER]] [--group GID] "
		      "[-- COMMAND...]");
	cri::CreateContainerRequest request;
	cri::CreateContainerResponse response;
	std::string pod;
	if (!pod_name(rt, args[0], &pod))
		return 1;
	request.set_pod_sandbox_id(args[0]);
	*request.mutable_sandbox_config() = pod_config(pod);
	auto *config = request.mutable_config();
	config->mutable_metadata()->set_name(args[1]);
	config->mutable_image()->set_image(args[2]);
	config->set_log_path(args[1] + ".log");
	auto *security = config->mutable_linux()->mutable_security_context();
	// the pod's namespaces: the node's network; a pid namespace of the container's own, as a
	// checkpointed container needs (criu restores it whole)
	security->mutable_namespace_options()->set_network(cri::NamespaceMode::NODE);
	security->mutable_namespace_options()->set_pid(cri::NamespaceMode::CONTAINER);
	for (size_t i = 3; i < args.size(); ++i) {
		const std::string &opt = args[i];
		if (opt == "--") {
			for (++i; i < args.size(); ++i)
				config->add_command(args[i]);
			break;
		}
		if (i + 1 >= args.size())
			usage(("create: " + opt + " needs a value").c_str());
		const std::string &value = args[++i];
		if (opt == "--device") {
			auto [host, inside] = host_and_container(value);
			auto *device = config->add_devices();
			device->set_host_path(host);
			device->set_container_path(inside);
			device->set_permissions("rw");
		} else if (opt == "--mount") {
			auto [host, inside] = host_and_container(value);
			auto *mount = config->add_mounts();
			mount->set_host_path(host);
			mount->set_container_path(inside);
		} else if (opt == "--group") {
			char *end = nullptr;
			const long gid = std::strtol(value.c_str(), &end, 10);
			if (value.empty() || *end != '\0' || gid < 0)
				usage(("create: --group " + value + " is not a group id").c_str());
			security->add_supplemental_groups(gid);
		} else {
			usage(("create: unknown option " + opt).c_str());
		}
	}
	if (!rt.call("CreateContainer", &Stub::CreateContainer, request, &response))
		return 1;
	std::printf("%s\n", response.container_id().c_str());
	return 0;
}

int cmd_start(Runtime &rt, const std::string &id)
{
	cri::StartContainerRequest request;
	cri::StartContainerResponse response;
	request.set_container_id(id);
	return rt.call("StartContainer", &Stub::StartContainer, request, &response) ? 0 : 1;
}

int cmd_checkpoint(Runtime &rt, const std::string &id, const std::string &archive, int timeout_s)
{
	cri::CheckpointContainerRequest request;
	cri::CheckpointContainerResponse response;
	request.set_container_id(id);
	request.set_location(archive);
	request.set_timeout(timeout_s);
	return rt.call("CheckpointContainer", &Stub::CheckpointContainer, request, &response) ? 0 : 1;
}

const char *state_name(cri::ContainerState state)
{
	switch (state) {
	case cri::CONTAINER_CREATED:
		return "created";
	case cri::CONTAINER_RUNNING:
		return "running";
	case cri::CONTAINER_EXITED:
		return "exited";
	default:
		return "unknown";
	}
}

// The container's pid is not a field of the CRI's status: containerd gives it in the verbose
// info's JSON ("pid": N), as crictl inspect shows it.
long pid_of(const cri::ContainerStatusResponse &response)
{
	const auto info = response.info().find("info");
	if (info == response.info().end())
		return 0;
	const std::string &json = info->second;
	const auto key = json.find("\"pid\":");
	return key == std::string::npos ? 0 : std::strtol(json.c_str() + key + 6, nullptr, 10);
}

int cmd_status(Runtime &rt, const std::string &id)
{
	cri::ContainerStatusRequest request;
	cri::ContainerStatusResponse response;
	request.set_container_id(id);
	request.set_verbose(true);
	if (!rt.call("ContainerStatus", &Stub::ContainerStatus, request, &response))
		return 1;
	const auto &status = response.status();
	const bool running = status.state() == cri::CONTAINER_RUNNING;
	std::printf("%s %ld %d\n", state_name(status.state()), running ? pid_of(response) : 0L, status.exit_code());
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	Options opts;
	int i = 1;
	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (std::strcmp(argv[i], "-s") == 0) {
			opts.socket = argv[i + 1];
		} else if (std::strcmp(argv[i], "-t") == 0) {
			opts.timeout_s = std::atoi(argv[i + 1]);
			if (opts.timeout_s <= 0)
				usage("-t takes a number of seconds");
		} else {
			usage("unknown option");
		}
	}
	if (i >= argc)
		usage("no command");
	const std::string command = argv[i];
	const std::vector<std::string> args(argv + i + 1, argv + argc);
	const auto need = [&](size_t n) {
		if (args.size() != n)
			usage((command + ": wrong number of arguments").c_str());
	};

	Runtime rt(opts);
	if (command == "version")
		return need(0), cmd_version(rt);
	if (command == "pull")
		return need(1), cmd_pull(rt, args[0]);
	if (command == "pod-run")
		return need(1), cmd_pod_run(rt, args[0]);
	if (command == "pod-remove")
		return need(1), cmd_pod_remove(rt, args[0]);
	if (command == "create")
		return cmd_create(rt, args);
	if (command == "start")
		return need(1), cmd_start(rt, args[0]);
	if (command == "checkpoint")
		return need(2), cmd_checkpoint(rt, args[0], args[1], opts.timeout_s);
	if (command == "status")
		return need(1), cmd_status(rt, args[0]);
	usage(("unknown command " + command).c_str());
}
