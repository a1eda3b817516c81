// The kernel output path: the device-side record buffer (print.h, compiled
// here for the host exactly as the CPU JIT compiles it) and the server-side
// formatter (kernel_output.h).
#include "runtime/exec/kernel_output.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/device/cpu_device.h"
#include "runtime/device/thread_pool.h"
#include "runtime/exec/graph.h"
#include "runtime/exec/launch.h"
#include "runtime/exec/stream.h"
#include "runtime/memory/memory_account.h"
#include "warpd/native/mat.h"
#include "warpd/native/print.h"
#include "warpd/native/transform.h"

namespace warpd::runtime {
namespace {

using abi::PrintConversion;
using abi::PrintSegment;
using abi::PrintSite;
using abi::PrintTable;
using types::ScalarKind;
using types::TypeRef;

TypeRef S(ScalarKind k) { return types::Scalar(k); }

PrintSegment Text(std::string t) {
  PrintSegment s;
  s.text = std::move(t);
  return s;
}

PrintSegment Value(TypeRef t, uint32_t offset, PrintConversion c = {}) {
  PrintSegment s;
  s.type = t;
  s.offset = offset;
  s.conversion = std::move(c);
  return s;
}

// A buffer with guard bytes after its capacity, to catch writes past it.
struct Buffer {
  explicit Buffer(uint64_t capacity) : bytes(capacity + kGuard, 0xAB) {
    std::memset(&ctx, 0, sizeof ctx);
    ctx.output.data = bytes.data();
    ctx.output.capacity = capacity;
  }
  bool GuardIntact() const {
    return std::all_of(bytes.end() - kGuard, bytes.end(), [](uint8_t b) { return b == 0xAB; });
  }
  std::string Format(const PrintTable& t) const {
    return FormatKernelOutput(t, bytes.data(), std::min(ctx.output.committed, ctx.output.capacity),
                              ctx.output.dropped, "k");
  }
  static constexpr size_t kGuard = 256;
  std::vector<uint8_t> bytes;
  wp::launch_ctx ctx;
};

// Site 0: "t=<int64> v=<int32>\n".
PrintTable ThreadTable() {
  PrintTable t;
  PrintSite site;
  site.segments = {Text("t="), Value(S(ScalarKind::kInt64), 0), Text(" v="), Value(S(ScalarKind::kInt32), 8),
                   Text("\n")};
  site.payload = 12;
  t.sites.push_back(site);
  return t;
}

TEST(PrintBufferTest, RecordsAreBoundedByTheCapacity) {
  // A 12-byte payload makes a 32-byte record: 3 fit in 100 bytes, whatever
  // is attempted, and nothing is written past the capacity.
  Buffer b(100);
  for (int i = 0; i < 10; ++i) wp::print_record<0, 12>(&b.ctx, 0, wp::int64(i), wp::int32(i * 10));
  EXPECT_EQ(b.ctx.output.committed, 96u);
  EXPECT_EQ(b.ctx.output.dropped, 7u);
  EXPECT_TRUE(b.GuardIntact());
  EXPECT_EQ(b.Format(ThreadTable()),
            "t=0 v=0\nt=1 v=10\nt=2 v=20\n"
            "[warpd: kernel 'k' printed too much in one launch: 7 print calls dropped (limit: 65536 bytes of "
            "text, 262144 bytes of records)]\n");
}

TEST(PrintBufferTest, NoBufferDropsEverything) {
  Buffer b(0);
  b.ctx.output.data = nullptr;
  wp::print_record<0, 12>(&b.ctx, 0, wp::int64(1), wp::int32(2));
  EXPECT_EQ(b.ctx.output.used, 0u);
  EXPECT_EQ(b.ctx.output.dropped, 1u);
  EXPECT_TRUE(b.GuardIntact());
}

TEST(PrintBufferTest, ConcurrentWritersLoseNothingAndKeepTheirOrder) {
  // 8 threads x 500 records race for one buffer large enough for all: every
  // record arrives once, sorted by thread id, each thread's in its order.
  constexpr int kThreads = 8, kEach = 500;
  Buffer b(kThreads * kEach * 32);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&b, t] {
      for (int i = 0; i < kEach; ++i) wp::print_record<0, 12>(&b.ctx, kThreads - 1 - t, wp::int64(t), wp::int32(i));
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(b.ctx.output.dropped, 0u);
  EXPECT_EQ(b.ctx.output.committed, uint64_t{kThreads} * kEach * 32);
  std::string expect;
  for (int t = kThreads - 1; t >= 0; --t)
    for (int i = 0; i < kEach; ++i) expect += "t=" + std::to_string(t) + " v=" + std::to_string(i) + "\n";
  EXPECT_EQ(b.Format(ThreadTable()), expect);
  EXPECT_TRUE(b.GuardIntact());
}

TEST(PrintBufferTest, ConcurrentWritersOverflowSafely) {
  // Far more records than fit: the written ones are a prefix of the buffer,
  // all well-formed; the rest are counted; nothing lands past the end.
  constexpr int kThreads = 8, kEach = 2000;
  Buffer b(4000);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&b, t] {
      for (int i = 0; i < kEach; ++i) wp::print_record<0, 12>(&b.ctx, t, wp::int64(t), wp::int32(i));
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_TRUE(b.GuardIntact());
  EXPECT_EQ(b.ctx.output.committed, 4000u / 32 * 32);
  EXPECT_EQ(b.ctx.output.committed / 32 + b.ctx.output.dropped, uint64_t{kThreads} * kEach);
  const std::string text = b.Format(ThreadTable());
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4000 / 32 + 1);
  EXPECT_NE(text.find("[warpd: kernel 'k' printed too much in one launch: " +
                      std::to_string(kThreads * kEach - 4000 / 32) + " print calls dropped"),
            std::string::npos)
      << text;
}

TEST(PrintBufferTest, TextBeyondTheLaunchLimitIsDroppedWithANote) {
  // 1000 records of 100 bytes of text each: 655 fit in 64 KiB of text.
  PrintTable t;
  PrintSite site;
  site.segments = {Text(std::string(99, 'x') + "\n")};
  t.sites.push_back(site);
  Buffer b(1000 * 16);
  for (int i = 0; i < 1000; ++i) wp::print_record<0, 0>(&b.ctx, i);
  const std::string text = b.Format(t);
  const std::string note =
      "[warpd: kernel 'k' printed too much in one launch: 345 print calls dropped (limit: 65536 bytes of text, "
      "262144 bytes of records)]\n";
  ASSERT_EQ(text.size(), 65500 + note.size());
  EXPECT_EQ(text.substr(65500), note);
}

TEST(PrintBufferTest, MalformedRecordsAreNeverFollowed) {
  PrintTable t = ThreadTable();
  struct Case {
    const char* what;
    uint32_t site, size;
    uint64_t committed;
  };
  for (const Case& c : {Case{"unknown site", 7, 32, 64}, Case{"wrong size", 0, 40, 64},
                        Case{"size past committed", 0, 32, 48}, Case{"zero size", 0, 0, 64},
                        Case{"truncated header", 0, 32, 40}}) {
    Buffer b(128);
    wp::print_record<0, 12>(&b.ctx, 0, wp::int64(1), wp::int32(2));
    wp::print_record_header h{c.site, c.size, 0};
    std::memcpy(b.bytes.data() + 32, &h, sizeof h);
    const std::string text =
        FormatKernelOutput(t, b.bytes.data(), c.committed, 0, "k");
    EXPECT_EQ(text, "t=1 v=2\n[warpd: kernel 'k' wrote a malformed output record; the rest of this launch's "
                    "output is lost]\n")
        << c.what;
  }
}

std::string Show(TypeRef t, const void* value, PrintConversion c = {}) {
  return FormatPrintValue(t, static_cast<const uint8_t*>(value), c);
}

PrintConversion Conv(char conv, std::string flags = "", int width = -1, int precision = -1, int bits = 0) {
  PrintConversion c;
  c.conv = conv;
  c.flags = std::move(flags);
  c.width = width;
  c.precision = precision;
  c.int_bits = bits;
  return c;
}

TEST(FormatPrintValueTest, PrintsValuesTheWayWarpDoes) {
  // Expected texts are what Warp 1.19's print() writes on the CPU.
  const float f = 1.5f, third = 1.0f / 3.0f, big = 1e20f;
  const double d = 2.0 / 3.0;
  const int32_t i = -7;
  const uint64_t u = UINT64_MAX;
  const bool yes = true;
  const wp::half h = wp::float_to_half(1.5f);
  EXPECT_EQ(Show(S(ScalarKind::kFloat32), &f), "1.5");
  EXPECT_EQ(Show(S(ScalarKind::kFloat32), &third), "0.333333");
  EXPECT_EQ(Show(S(ScalarKind::kFloat32), &big), "1e+20");
  EXPECT_EQ(Show(S(ScalarKind::kFloat64), &d), "0.666667");
  EXPECT_EQ(Show(S(ScalarKind::kInt32), &i), "-7");
  EXPECT_EQ(Show(S(ScalarKind::kUInt64), &u), "18446744073709551615");
  EXPECT_EQ(Show(S(ScalarKind::kBool), &yes), "True");
  EXPECT_EQ(Show(S(ScalarKind::kFloat16), &h), "1.5");
  const wp::vec3f v{{1, 2, 3}};
  EXPECT_EQ(Show(types::Vector(3, ScalarKind::kFloat32), &v), "1 2 3 ");
  const wp::vec_t<2, int32_t> vi{{1, 2}};
  EXPECT_EQ(Show(types::Vector(2, ScalarKind::kInt32), &vi), "1 2 ");
  const wp::mat_t<2, 2, float> m{{{1, 2}, {3, 4}}};
  EXPECT_EQ(Show(types::Matrix(2, 2, ScalarKind::kFloat32), &m), "1 2 \n3 4 ");
  const wp::mat_t<2, 3, double> m23{{{1, 2, 3}, {4, 5, 6}}};
  EXPECT_EQ(Show(types::Matrix(2, 3, ScalarKind::kFloat64), &m23), "1 2 3 \n4 5 6 ");
  const wp::quat_t<float> q{{0, 0, 0, 1}};
  EXPECT_EQ(Show(types::Quat(ScalarKind::kFloat32), &q), "0 0 0 1");
  const wp::transform_t<float> tf{{{1, 2, 3}}, {{0, 0, 0, 1}}};
  EXPECT_EQ(Show(types::Transform(ScalarKind::kFloat32), &tf), "(1 2 3) (0 0 0 1)");
}

TEST(FormatPrintValueTest, AdjointsAsWarpsAdjPrintShowsThem) {
  // What Warp 1.19's adj_print() writes after its "adj:" (CPU).
  PrintConversion adj;
  adj.adjoint = true;
  const float f = 2.5f;
  const int64_t i = -42;
  const bool no = false;
  EXPECT_EQ(Show(S(ScalarKind::kFloat32), &f, adj), " 2.5");
  EXPECT_EQ(Show(S(ScalarKind::kInt64), &i, adj), " -42");
  EXPECT_EQ(Show(S(ScalarKind::kBool), &no, adj), " False");
  const wp::vec3f v{{3, 2, 1}};
  EXPECT_EQ(Show(types::Vector(3, ScalarKind::kFloat32), &v, adj), " 3 2 1");
  const wp::mat_t<2, 3, double> m23{{{1, 2, 3}, {4, 5, 6}}};
  EXPECT_EQ(Show(types::Matrix(2, 3, ScalarKind::kFloat64), &m23, adj), " 1 2 3\n     4 5 6");
  const wp::quat_t<float> q{{5, 6, 7, 8}};
  EXPECT_EQ(Show(types::Quat(ScalarKind::kFloat32), &q, adj), " 5 6 7 8");
  const wp::transform_t<float> tf{{{4, 5, 6}}, {{1, 1, 1, 1}}};
  EXPECT_EQ(Show(types::Transform(ScalarKind::kFloat32), &tf, adj), " (4 5 6) (1 1 1 1)");
}

TEST(FormatPrintValueTest, PrintfConversionsBehaveLikeC) {
  // Expected texts are what C's printf (and so Warp's wp.printf) writes,
  // except that a 64-bit value with %d keeps all its bits.
  const int32_t i = 42, neg = -3, i300 = 300;
  const int8_t i8 = -3;
  const int64_t big = 3000000000LL;
  const uint64_t umax = UINT64_MAX;
  const float f = 3.14159f;
  const double e = 12345.678;
  const bool yes = true;
  const TypeRef I32 = S(ScalarKind::kInt32), F32 = S(ScalarKind::kFloat32);
  EXPECT_EQ(Show(I32, &i, Conv('d')), "42");
  EXPECT_EQ(Show(I32, &i, Conv('d', "", 5)), "   42");
  EXPECT_EQ(Show(I32, &i, Conv('d', "-", 5)), "42   ");
  EXPECT_EQ(Show(I32, &i, Conv('d', "+")), "+42");
  EXPECT_EQ(Show(I32, &i, Conv('x', "#")), "0x2a");
  EXPECT_EQ(Show(I32, &i, Conv('o')), "52");
  EXPECT_EQ(Show(I32, &i, Conv('c')), "*");
  EXPECT_EQ(Show(I32, &neg, Conv('u')), "4294967293");
  EXPECT_EQ(Show(S(ScalarKind::kInt8), &i8, Conv('x')), "fffffffd");
  EXPECT_EQ(Show(I32, &i300, Conv('d', "", -1, -1, 8)), "44");
  EXPECT_EQ(Show(I32, &neg, Conv('d', "", -1, -1, 16)), "-3");
  EXPECT_EQ(Show(S(ScalarKind::kInt64), &big, Conv('d')), "3000000000");
  EXPECT_EQ(Show(S(ScalarKind::kUInt64), &umax, Conv('u', "", -1, -1, 64)), "18446744073709551615");
  EXPECT_EQ(Show(S(ScalarKind::kBool), &yes, Conv('d')), "1");
  EXPECT_EQ(Show(F32, &f, Conv('f')), "3.141590");
  EXPECT_EQ(Show(F32, &f, Conv('f', "0", 5, 2)), "03.14");
  EXPECT_EQ(Show(S(ScalarKind::kFloat64), &e, Conv('e')), "1.234568e+04");
  EXPECT_EQ(Show(S(ScalarKind::kFloat64), &e, Conv('g')), "12345.7");
  const wp::half h = wp::float_to_half(1.5f);
  EXPECT_EQ(Show(S(ScalarKind::kFloat16), &h, Conv('f')), "1.500000");
  // A conversion that does not fit the value (impossible after the compile
  // check) prints "?" rather than reinterpreting bytes.
  EXPECT_EQ(Show(F32, &f, Conv('d')), "?");
  EXPECT_EQ(Show(I32, &i, Conv('f')), "?");
  EXPECT_EQ(Show(I32, &i, Conv('n')), "?");
}

// --- A launch and the stream it runs on ------------------------------------

// talk(n: int32): thread t prints "t=<t> v=<n>" then "t=<t> v=<n + 1>";
// thread 5 (of launches with n < 0) then faults.
struct TalkArgs {
  int32_t n;
};
void TalkKernel(wp::launch_ctx* ctx, const void* args, int64_t begin, int64_t end) {
  const int32_t n = static_cast<const TalkArgs*>(args)->n;
  for (int64_t t = begin; t < end; ++t) {
    wp::print_record<0, 12>(ctx, t, wp::int64(t), wp::int32(n));
    wp::print_record<0, 12>(ctx, t, wp::int64(t), wp::int32(n + 1));
    if (n < 0 && t == 5) (void)wp::record_index_fault(ctx, 3, 0, 9, 4);
  }
}

class TalkModule : public abi::CompiledModule {
 public:
  explicit TalkModule(bool may_print) {
    abi::CompiledKernel k;
    k.layout.name = k.layout.display_name = "talk";
    k.layout.params = {abi::ParamLayout{"n", S(ScalarKind::kInt32), 0, 4}};
    k.layout.args_size = 4;
    k.layout.args_align = 4;
    k.cpu_entry = &TalkKernel;
    k.may_print = may_print;
    kernels_.push_back(k);
    print_table_ = std::make_shared<const PrintTable>(ThreadTable());
  }
};

std::string Int32Bytes(int32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

class KernelOutputStreamTest : public ::testing::Test {
 protected:
  std::unique_ptr<Command> Talk(int64_t threads, int32_t n, bool may_print = true) {
    auto c = PrepareLaunch(std::make_shared<TalkModule>(may_print), "talk", {threads}, {Int32Bytes(n)}, "cpu");
    EXPECT_TRUE(c.ok()) << c.status();
    return *std::move(c);
  }
  static std::string Expect(int64_t threads, int32_t n) {
    std::string out;
    for (int64_t t = 0; t < threads; ++t)
      out += "t=" + std::to_string(t) + " v=" + std::to_string(n) + "\nt=" + std::to_string(t) + " v=" +
             std::to_string(n + 1) + "\n";
    return out;
  }
  CpuDevice cpu_{4};
  StreamScheduler scheduler_{{.threads = 2}};
  std::shared_ptr<StreamGroup> group_ = scheduler_.CreateGroup("test");
};

TEST_F(KernelOutputStreamTest, LaunchesPrintInSubmissionAndThreadOrder) {
  auto stream = Stream::Create(&cpu_, group_);
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(Talk(1000, 10));  // chunks on 4 workers
  batch.push_back(Talk(1000, 20));
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  const std::string out = stream->TakeOutput();
  EXPECT_TRUE(out == Expect(1000, 10) + Expect(1000, 20)) << out.substr(0, 2000);
  EXPECT_EQ(stream->TakeOutput(), "");  // handed out once
}

TEST_F(KernelOutputStreamTest, OutputBeforeAFaultIsKept) {
  auto stream = Stream::Create(&cpu_, group_);
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(Talk(1, 7));
  batch.push_back(Talk(6, -1));   // thread 5 faults after printing
  batch.push_back(Talk(1, 30));   // skipped: the error is sticky
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  EXPECT_EQ(stream->Synchronize().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(stream->TakeOutput(), Expect(1, 7) + Expect(6, -1));
}

TEST_F(KernelOutputStreamTest, KernelsThatCannotPrintGetNoBuffer) {
  // A kernel the compiler says never prints runs without a buffer: its
  // records (impossible in real code) are dropped, and only counted.
  auto stream = Stream::Create(&cpu_, group_);
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(Talk(2, 1, /*may_print=*/false));
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(stream->TakeOutput(), "");
}

TEST_F(KernelOutputStreamTest, PendingOutputIsBoundedWithANote) {
  // 40 launches of ~48 KiB of text each wait unread: 1 MiB is kept, the
  // rest dropped until the next TakeOutput, whose text ends with a note.
  auto stream = Stream::Create(&cpu_, group_);
  const std::string one = Expect(1500, 1);
  std::vector<std::unique_ptr<Command>> batch;
  for (int i = 0; i < 40; ++i) batch.push_back(Talk(1500, 1));
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  const size_t kept = Stream::kMaxPendingOutput / one.size();
  std::string expect;
  for (size_t i = 0; i < kept; ++i) expect += one;
  expect += "[warpd: " + std::to_string((40 - kept) * one.size()) +
            " bytes of kernel output dropped: more than 1048576 bytes were waiting to be read]\n";
  EXPECT_EQ(stream->TakeOutput(), expect);
  // Reading it makes room again.
  batch.clear();
  batch.push_back(Talk(2, 3));
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(stream->TakeOutput(), Expect(2, 3));
}

TEST_F(KernelOutputStreamTest, PendingOutputIsChargedToTheStreamsAccount) {
  // The session's account pays for the text waiting to be read; past its
  // limit the text is dropped, and the note names the limit.
  const std::string one = Expect(100, 1);
  auto account = MemoryAccount::Create("tenant 't'", 3 * one.size() + one.size() / 2);
  auto stream = Stream::Create(&cpu_, group_, Stream::kDefaultMaxQueued, nullptr, account);
  std::vector<std::unique_ptr<Command>> batch;
  for (int i = 0; i < 5; ++i) batch.push_back(Talk(100, 1));
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(account->used(), 3 * one.size());
  const std::string out = stream->TakeOutput();
  EXPECT_EQ(out.substr(0, 3 * one.size()), one + one + one);
  EXPECT_NE(out.find("[warpd: " + std::to_string(2 * one.size()) +
                     " bytes of kernel output dropped: tenant 't' memory limit"),
            std::string::npos)
      << out.substr(3 * one.size());
  EXPECT_EQ(account->used(), 0u);  // read: released
}

TEST_F(KernelOutputStreamTest, AGraphReplayKeepsAtMostOneMiBOfItsCommandsOutput) {
  // Each captured launch keeps its own output bounded; a replay of many of
  // them keeps 1 MiB in all, then notes the rest.
  const std::string one = Expect(1500, 1);
  std::vector<std::unique_ptr<Command>> captured;
  for (int i = 0; i < 40; ++i) captured.push_back(Talk(1500, 1));
  auto graph = Graph::Create("cpu", std::move(captured));
  ASSERT_TRUE(graph.ok());
  std::unique_ptr<Command> replay = (*graph)->MakeReplay();
  ASSERT_TRUE(replay->Execute(cpu_).ok());
  const std::string out = replay->TakeOutput();
  const size_t kept = (size_t{1} << 20) / one.size();
  EXPECT_EQ(out.substr(0, kept * one.size()).size(), kept * one.size());
  EXPECT_EQ(out.substr(kept * one.size()),
            "[warpd: " + std::to_string((40 - kept) * one.size()) +
                " bytes of kernel output of a graph replay dropped: its commands printed more than 1048576 bytes]\n");
}

TEST_F(KernelOutputStreamTest, ALaunchHoldsItsArgumentBlockAndItself) {
  std::unique_ptr<Command> c = Talk(1, 1);
  EXPECT_GE(c->HeldBytes(), Command::kBaseBytes + 16);  // args_size 4, blocks are at least 16 bytes
  EXPECT_LT(c->HeldBytes(), Command::kBaseBytes + 4096);
  auto account = MemoryAccount::Create("session", 0);
  c->AttachCharge(*MemoryCharge::Take(account, c->HeldBytes()));
  EXPECT_EQ(account->used(), c->HeldBytes());
  c.reset();
  EXPECT_EQ(account->used(), 0u);
}

}  // namespace
}  // namespace warpd::runtime
