#include "llmbench/dist/nccl_window.h"

#include "llmbench/base/error.h"

#ifdef LLMBENCH_HAVE_NCCL
#include <nccl.h>
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
#define LLMBENCH_NCCL_WINDOWS 1
#endif
#endif

#ifdef LLMBENCH_NCCL_WINDOWS
#include <dlfcn.h>

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace llmbench::dist {

#ifdef LLMBENCH_NCCL_WINDOWS
namespace {

// NCCL's entry points, looked up in the libnccl that libtorch_cuda already loaded (one library, one
// version: the process group's communicator is used directly).
struct Api {
  decltype(&ncclMemAlloc) mem_alloc = nullptr;
  decltype(&ncclMemFree) mem_free = nullptr;
  decltype(&ncclCommWindowRegister) window_register = nullptr;
  decltype(&ncclCommWindowDeregister) window_deregister = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclGetVersion) get_version = nullptr;
  std::string missing;
};

const Api& api() {
  static const Api a = [] {
    Api r;
    void* lib = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    auto find = [&](const char* name) {
      void* p = lib ? ::dlsym(lib, name) : nullptr;
      if (!p) p = ::dlsym(RTLD_DEFAULT, name);
      if (!p) r.missing += (r.missing.empty() ? "" : ", ") + std::string(name);
      return p;
    };
    r.mem_alloc = reinterpret_cast<decltype(r.mem_alloc)>(find("ncclMemAlloc"));
    r.mem_free = reinterpret_cast<decltype(r.mem_free)>(find("ncclMemFree"));
    r.window_register = reinterpret_cast<decltype(r.window_register)>(find("ncclCommWindowRegister"));
    r.window_deregister = reinterpret_cast<decltype(r.window_deregister)>(find("ncclCommWindowDeregister"));
    r.all_reduce = reinterpret_cast<decltype(r.all_reduce)>(find("ncclAllReduce"));
    r.error_string = reinterpret_cast<decltype(r.error_string)>(find("ncclGetErrorString"));
    r.get_version = reinterpret_cast<decltype(r.get_version)>(find("ncclGetVersion"));
    return r;
  }();
  return a;
}

std::string nccl_error(ncclResult_t r) { return api().error_string ? api().error_string(r) : cat("NCCL error ", int(r)); }

ncclDataType_t nccl_type(torch::ScalarType t) {
  switch (t) {
    case torch::kBFloat16: return ncclBfloat16;
    case torch::kHalf: return ncclFloat16;
    case torch::kFloat32: return ncclFloat32;
    default: throw Error(cat("NCCL window all-reduce: unsupported dtype ", c10::toString(t)));
  }
}

}  // namespace

std::unique_ptr<NcclWindow> NcclWindow::allocate(std::int64_t bytes, int device, std::string* why) {
  const Api& a = api();
  if (!a.missing.empty()) {
    if (why) *why = cat("libnccl lacks ", a.missing);
    return nullptr;
  }
  int version = 0;
  if (a.get_version(&version) != ncclSuccess || version < NCCL_VERSION(2, 27, 0)) {
    if (why) *why = cat("NCCL ", version, " predates symmetric windows (2.27)");
    return nullptr;
  }
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  std::unique_ptr<NcclWindow> w(new NcclWindow());
  if (const ncclResult_t r = a.mem_alloc(&w->buffer_, static_cast<std::size_t>(bytes)); r != ncclSuccess) {
    w->buffer_ = nullptr;
    if (why) *why = cat("ncclMemAlloc(", bytes, " bytes): ", nccl_error(r));
    return nullptr;
  }
  w->bytes_ = bytes;
  w->device_ = device;
  return w;
}

bool NcclWindow::register_with(std::int64_t comm, std::string* why) {
  ncclWindow_t win = nullptr;
  const ncclResult_t r = api().window_register(reinterpret_cast<ncclComm_t>(comm), buffer_,
                                               static_cast<std::size_t>(bytes_), &win, NCCL_WIN_COLL_SYMMETRIC);
  if (r != ncclSuccess) {
    if (why) *why = cat("ncclCommWindowRegister: ", nccl_error(r));
    return false;
  }
  window_ = win;
  comm_ = comm;
  return true;
}

void NcclWindow::release_on_failure() {
  window_ = nullptr;
  buffer_ = nullptr;
}

NcclWindow::~NcclWindow() {
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
  if (window_) (void)api().window_deregister(reinterpret_cast<ncclComm_t>(comm_), static_cast<ncclWindow_t>(window_));
  if (buffer_) (void)api().mem_free(buffer_);
}

void NcclWindow::all_reduce_sum_(torch::Tensor& t) {
  const auto bytes = static_cast<std::size_t>(t.nbytes());
  if (!window_ || static_cast<std::int64_t>(bytes) > bytes_ || !t.is_contiguous())
    throw Error(cat("NCCL window all-reduce: ", bytes, " bytes do not fit the ", bytes_, "-byte window"));
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_)).stream();
  if (cudaMemcpyAsync(buffer_, t.data_ptr(), bytes, cudaMemcpyDeviceToDevice, stream) != cudaSuccess)
    throw Error("NCCL window all-reduce: copy into the window failed");
  const ncclResult_t r = api().all_reduce(buffer_, buffer_, static_cast<std::size_t>(t.numel()), nccl_type(t.scalar_type()),
                                          ncclSum, reinterpret_cast<ncclComm_t>(comm_), stream);
  if (r != ncclSuccess) throw Error(cat("NCCL window all-reduce: ", nccl_error(r)));
  if (cudaMemcpyAsync(t.data_ptr(), buffer_, bytes, cudaMemcpyDeviceToDevice, stream) != cudaSuccess)
    throw Error("NCCL window all-reduce: copy out of the window failed");
}

#else  // no NCCL, or one without symmetric windows

std::unique_ptr<NcclWindow> NcclWindow::allocate(std::int64_t, int, std::string* why) {
  if (why) *why = "this build's NCCL has no symmetric windows (needs NCCL ≥ 2.27)";
  return nullptr;
}
NcclWindow::~NcclWindow() = default;
bool NcclWindow::register_with(std::int64_t, std::string* why) {
  if (why) *why = "no NCCL";
  return false;
}
void NcclWindow::release_on_failure() {}
void NcclWindow::all_reduce_sum_(torch::Tensor&) { throw Error("NCCL window all-reduce: not in this build"); }

#endif

}  // namespace llmbench::dist
