#include "server/self_test.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/ir/from_proto.h"
#include "compiler/ir/ir.h"
#include "google/protobuf/text_format.h"
#include "runtime/exec/launch.h"
#include "runtime/objects/array.h"
#include "warpd/v1/ir.pb.h"

namespace warpd::server {
namespace {

// The kernel, as the Python client would send it for
//
//   @wp.kernel
//   def warpd_self_test(out: wp.array(dtype=float), x: float):
//       i = wp.tid()
//       v = wp.vec3(float(i), 1.0, 2.0)
//       for k in range(2):
//           out[i] = wp.dot(v, wp.vec3(x, x, x)) + float(k)
//
// so out[i] == x * (i + 3) + 1. It touches the embedded headers (vectors,
// builtins, bounds-checked arrays), a loop back-edge poll and the launch ABI.
constexpr char kSelfTestModule[] = R"pb(
  name: "warpd_self_test"
  functions {
    name: "warpd_self_test"
    kind: FUNCTION_KERNEL
    span { file: "<warpd self-test>" line: 1 col: 1 }
    params { name: "out" span { line: 1 } type { array { dtype { scalar: SCALAR_FLOAT32 } ndim: 1 } } }
    params { name: "x" span { line: 1 } type { scalar: SCALAR_FLOAT32 } }
    body {
      span { line: 2 }
      assign {
        target { span { line: 2 } name { id: "i" } }
        value { span { line: 2 } call { callee: "tid" kind: CALLEE_BUILTIN } }
      }
    }
    body {
      span { line: 3 }
      assign {
        target { span { line: 3 } name { id: "v" } }
        value {
          span { line: 3 }
          call {
            callee: "vec3" kind: CALLEE_BUILTIN
            args { span { line: 3 } call { callee: "float32" kind: CALLEE_BUILTIN
                                           args { span { line: 3 } name { id: "i" } } } }
            args { span { line: 3 } constant { float_value: 1.0 } }
            args { span { line: 3 } constant { float_value: 2.0 } }
          }
        }
      }
    }
    body {
      span { line: 4 }
      for_stmt {
        target { span { line: 4 } name { id: "k" } }
        iter { span { line: 4 } call { callee: "range" kind: CALLEE_BUILTIN
                                       args { span { line: 4 } constant { int_value: 2 } } } }
        body {
          span { line: 5 }
          assign {
            target { span { line: 5 } subscript { value { span { line: 5 } name { id: "out" } }
                                                  indices { span { line: 5 } name { id: "i" } } } }
            value {
              span { line: 5 }
              binary {
                op: BINOP_ADD
                left {
                  span { line: 5 }
                  call {
                    callee: "dot" kind: CALLEE_BUILTIN
                    args { span { line: 5 } name { id: "v" } }
                    args {
                      span { line: 5 }
                      call { callee: "vec3" kind: CALLEE_BUILTIN
                             args { span { line: 5 } name { id: "x" } }
                             args { span { line: 5 } name { id: "x" } }
                             args { span { line: 5 } name { id: "x" } } }
                    }
                  }
                }
                right { span { line: 5 } call { callee: "float32" kind: CALLEE_BUILTIN
                                                args { span { line: 5 } name { id: "k" } } } }
              }
            }
          }
        }
      }
    }
  }
)pb";

constexpr int64_t kThreads = 37;  // not a multiple of any chunk size
constexpr float kX = 0.5f;

absl::Status CompileAndRun(compiler::Compiler& compiler, runtime::Device& cpu, runtime::SegmentPool& pool) {
  v1::Module proto;
  if (!google::protobuf::TextFormat::ParseFromString(kSelfTestModule, &proto))
    return absl::InternalError("the self-test module does not parse");
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ModuleFromProto(proto);
  if (!module.ok()) return module.status();
  absl::StatusOr<compiler::CompileResult> compiled = compiler.Compile(**module, compiler::Target::kCpu);
  if (!compiled.ok()) return compiled.status();

  const ir::TypeRef f32 = types::Scalar(types::ScalarKind::kFloat32);
  absl::StatusOr<runtime::ArrayLayout> layout = runtime::MakeArrayLayout(f32, {kThreads});
  if (!layout.ok()) return layout.status();
  auto buffer = cpu.Allocate(layout->size_bytes, "self-test", &pool);
  if (!buffer.ok()) return buffer.status();
  auto out = std::make_shared<const runtime::Array>(cpu.name(), *layout, *buffer);

  std::string x_bytes(sizeof(float), '\0');
  std::memcpy(x_bytes.data(), &kX, sizeof(float));
  std::vector<runtime::LaunchArgValue> args = {out, x_bytes};
  const int64_t dims[] = {kThreads};
  auto launch = runtime::PrepareLaunch(compiled->module, "warpd_self_test", dims, std::move(args),
                                       cpu.name());
  if (!launch.ok()) return launch.status();
  if (absl::Status s = (*launch)->Execute(cpu); !s.ok()) return s;

  const float* got = reinterpret_cast<const float*>(out->data());
  for (int64_t i = 0; i < kThreads; ++i) {
    const float want = kX * static_cast<float>(i + 3) + 1.0f;  // exact in float32
    if (got[i] != want) {
      return absl::InternalError(absl::StrCat("the self-test kernel computed out[", i, "] = ", got[i],
                                              ", expected ", want));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunSelfTest(compiler::Compiler& compiler, runtime::Device& cpu, runtime::SegmentPool& pool) {
  absl::Status s = CompileAndRun(compiler, cpu, pool);
  if (s.ok()) return s;
  const compiler::HostCpu& host = compiler.host_cpu();
  const compiler::CpuTarget& target = compiler.cpu_target();
  return absl::FailedPreconditionError(absl::StrCat(
      "the CPU kernel compiler does not work on this host (CPU '", host.name, "', ", host.triple,
      "; compiling for ", target.Summary(), ": ", target.reason, "): ", s.message()));
}

}  // namespace warpd::server
