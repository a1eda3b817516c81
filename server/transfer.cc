#include "server/transfer.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "grpc/slice.h"
#include "runtime/memory/size_math.h"
#include "runtime/objects/array_members.h"
#include "server/auth/authenticate.h"
#include "server/grpc_status.h"
#include "server/logging.h"
#include "server/raw_messages.h"
#include "server/transfer_wire.h"
#include "common/log_text.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace warpd::server {

namespace {

class UploadReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  UploadReactor(DaemonState* state, grpc::CallbackServerContext* ctx, grpc::ByteBuffer* response)
      : state_(state), ctx_(ctx), response_(response) {
    StartRead(&buffer_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client has sent everything, or the call was cancelled
      if (ctx_->IsCancelled()) {
        Fail(absl::CancelledError(absl::StrCat("upload cancelled by the client after ", written_, " bytes")));
        return;
      }
      if (array_ == nullptr) {
        Fail(absl::InvalidArgumentError(
            "upload sent no chunks; the first chunk names the session and the array"));
        return;
      }
      v1::UploadResponse response;
      response.set_bytes_written(written_);
      array_.reset();  // see Done() in DownloadReactor
      absl::Status s = SerializeMessage(response, response_);
      if (!s.ok()) {
        Fail(s);
        return;
      }
      state_->metrics().Rpc("Upload", absl::StatusCode::kOk).Increment();
      Finish(grpc::Status::OK);
      return;
    }
    if (absl::Status s = ParseChunk(); !s.ok()) {
      Fail(s);
      return;
    }
    if (array_ == nullptr) {
      absl::StatusOr<std::shared_ptr<runtime::Stream>> stream = Begin();
      if (!stream.ok()) {
        Fail(stream.status());
        return;
      }
      if (*stream != nullptr) {
        // Commands queued before the upload may still use the array: write
        // once they have run. Nothing waits meanwhile: this continues on the
        // executor thread that finishes the stream's last command (or here,
        // when the stream is idle).
        (*stream)->WhenIdle([this] { WriteAndReadNext(); });
        return;
      }
    }
    WriteAndReadNext();
  }

  void OnDone() override { delete this; }

 private:
  void WriteAndReadNext() {
    if (absl::Status s = WriteChunk(); !s.ok()) {
      Fail(s);
      return;
    }
    StartRead(&buffer_);
  }

  // Reads the chunk in buffer_ where gRPC received it: chunk_'s data then
  // points into slices_, which hold the received bytes until the next read.
  absl::Status ParseChunk() {
    slices_.clear();
    pieces_.clear();
    // An empty message arrives as no buffer (no slices).
    if (buffer_.Valid() && !buffer_.Dump(&slices_).ok()) {
      return absl::InvalidArgumentError("Upload: the request is not a valid warpd.v1.UploadChunk (unreadable)");
    }
    buffer_.Clear();
    for (const grpc::Slice& s : slices_) pieces_.emplace_back(s.begin(), s.size());
    return ParseUploadChunk(pieces_, &chunk_);
  }

  // Resolves the first chunk's session and array (lookups, nothing that
  // waits); returns the stream to wait for (null when the session has none
  // on the array's device).
  absl::StatusOr<std::shared_ptr<runtime::Stream>> Begin() {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Tenant> tenant, AuthenticateCall(state_->tenants(), *ctx_));
    source_ = tenant->label();
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session,
                           state_->sessions().Get(chunk_.session, *tenant));
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> array,
                           session->arrays().Get(chunk_.handle));
    if (array->dtype()->holds_array()) {
      // Its elements hold descriptors only the daemon writes (array_members.h).
      return absl::FailedPreconditionError(absl::StrCat(
          "array ", chunk_.handle, " holds structs with array members: it cannot be uploaded into; "
          "make it with contents (CreateArray), or write it with a copy, a fill or a kernel"));
    }
    if (chunk_.offset > array->size_bytes()) {
      return absl::InvalidArgumentError(absl::StrCat("upload offset ", chunk_.offset,
                                                     " is past the end of the array (",
                                                     array->size_bytes(), " bytes)"));
    }
    WARPD_ASSIGN_OR_RETURN(device_, state_->devices().Find(array->device()));
    position_ = chunk_.offset;
    array_ = std::move(array);
    return session->FindStream(array_->device());
  }

  // Copies the chunk's data from gRPC's slices straight into the array (the
  // device scatters a strided view's bytes to its elements).
  absl::Status WriteChunk() {
    const uint64_t size = chunk_.data_size;
    auto end = runtime::CheckedAdd(position_, size);
    if (!end || *end > array_->size_bytes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "upload of ", written_ + size, " bytes at offset ", position_ - written_,
          " runs past the end of the array (", array_->size_bytes(), " bytes)"));
    }
    uint64_t at = position_;
    for (absl::Span<const uint8_t> piece : chunk_.data) {
      WARPD_RETURN_IF_ERROR(device_->Upload(
          *array_, at, absl::MakeConstSpan(reinterpret_cast<const std::byte*>(piece.data()), piece.size())));
      at += piece.size();
    }
    chunk_.data.clear();
    slices_.clear();  // gRPC's receive buffers go back before the next read
    position_ = *end;
    written_ += size;
    return absl::OkStatus();
  }

  void Fail(const absl::Status& s) {
    // A client cancels or fails uploads at will: limited per tenant.
    const std::string_view source = source_.empty() ? std::string_view("callers not yet identified") : source_;
    if (absl::IsCancelled(s)) {
      LogLimited(spdlog::level::info, source, "cancelled uploads", "Upload: {}", LogText(s.message()));
    } else {
      LogLimited(spdlog::level::debug, source, "failed calls", "Upload: {}", LogStatus(s));
    }
    array_.reset();
    state_->metrics().Rpc("Upload", s.code()).Increment();
    Finish(ToGrpcStatus(s));
  }

  DaemonState* const state_;
  grpc::CallbackServerContext* const ctx_;
  grpc::ByteBuffer* const response_;
  grpc::ByteBuffer buffer_;
  std::vector<grpc::Slice> slices_;                 // the chunk being written
  std::vector<absl::Span<const uint8_t>> pieces_;  // slices_' bytes
  UploadChunkFields chunk_;                         // points into slices_
  std::shared_ptr<const runtime::Array> array_;
  runtime::Device* device_ = nullptr;  // array_'s
  uint64_t position_ = 0;
  uint64_t written_ = 0;
  std::string source_;  // the caller's tenant label, once known
};

class DownloadReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  DownloadReactor(DaemonState* state, grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request)
      : state_(state) {
    absl::StatusOr<std::shared_ptr<Tenant>> tenant = AuthenticateCall(state->tenants(), *ctx);
    if (!tenant.ok()) {
      Fail(tenant.status());
      return;
    }
    source_ = (*tenant)->label();
    v1::DownloadRequest req;
    if (absl::Status s = ParseMessage(*request, &req, "Download"); !s.ok()) {
      Fail(s);
      return;
    }
    absl::StatusOr<std::shared_ptr<runtime::Stream>> stream = Begin(state, **tenant, req);
    if (!stream.ok()) {
      Fail(stream.status());
      return;
    }
    if (*stream == nullptr) {
      WriteNext();
      return;
    }
    // Without blocking a gRPC thread: continues on the thread that drains the
    // stream (or here, when it is idle).
    (*stream)->SynchronizeAsync([this, stream = *stream](absl::Status s) {
      if (!s.ok()) {
        Fail(s);  // the stream keeps its output for ReadOutput
        return;
      }
      output_ = stream->TakeOutput();
      WriteNext();
    });
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Done(grpc::Status(grpc::StatusCode::CANCELLED, "download cancelled"));
      return;
    }
    WriteNext();
  }

  void OnDone() override { delete this; }

 private:
  // Resolves the request; returns the stream to synchronize first (null when
  // the session has none on the array's device).
  absl::StatusOr<std::shared_ptr<runtime::Stream>> Begin(DaemonState* state, const Tenant& tenant,
                                                         const v1::DownloadRequest& req) {
    WARPD_ASSIGN_OR_RETURN(DownloadRange range, ResolveDownload(state, tenant, req));
    position_ = range.begin;
    end_ = range.end;
    array_ = std::move(range.array);
    device_ = range.device;
    session_ = std::move(range.session);
    return std::move(range.stream);
  }

  void Fail(const absl::Status& s) {
    LogLimited(spdlog::level::debug, source_.empty() ? std::string_view("unauthenticated callers") : source_,
               "failed calls", "Download: {}", LogStatus(s));
    Done(ToGrpcStatus(s));
  }

  // Drops the array before finishing: OnDone (and so the destructor) may run
  // well after the client has its answer, and a client that frees the array
  // next must see its memory released.
  void Done(grpc::Status status) {
    array_.reset();
    session_.reset();
    state_->metrics().Rpc("Download", static_cast<absl::StatusCode>(status.error_code())).Increment();
    Finish(std::move(status));
  }

  void WriteNext() {
    // The first chunk carries the kernel output (alone when there is no data).
    if (position_ >= end_ && output_.empty()) {
      Done(grpc::Status::OK);
      return;
    }
    // One copy, from the array into the slice gRPC sends.
    const size_t n = static_cast<size_t>(std::min<uint64_t>(end_ - position_, kTransferChunkBytes));
    grpc::Slice chunk(grpc_slice_malloc(DownloadChunkSize(n, output_)), grpc::Slice::STEAL_REF);
    uint8_t* data = WriteDownloadChunkFrame(n, output_, const_cast<uint8_t*>(chunk.begin()));
    if (absl::Status s =
            ArrayBytesAt(*device_, *array_, position_, n, reinterpret_cast<std::byte*>(data), &staging_, session_.get());
        !s.ok()) {
      Fail(s);
      return;
    }
    output_.clear();
    position_ += n;
    out_ = grpc::ByteBuffer(&chunk, 1);
    StartWrite(&out_);
  }

  DaemonState* const state_;
  grpc::ByteBuffer out_;
  std::string output_;  // kernel output for the first chunk
  std::vector<std::byte> staging_;  // whole elements holding descriptors
  std::shared_ptr<const runtime::Array> array_;
  runtime::Device* device_ = nullptr;  // array_'s
  std::shared_ptr<Session> session_;  // for an array holding array members
  uint64_t position_ = 0;
  uint64_t end_ = 0;
  std::string source_;  // the caller's tenant label, once known
};

}  // namespace

namespace {

// The arrays `array`'s descriptors may point to (its HeldArrays) that
// `session` has handles for, with those handles.
std::vector<runtime::KnownArray> KnownMemberArrays(const runtime::Array& array, const Session* session) {
  std::vector<runtime::KnownArray> known;
  if (session == nullptr || array.held() == nullptr) return known;
  absl::flat_hash_set<const runtime::Array*> held;
  for (const auto& a : array.held()->Snapshot()) held.insert(a.get());
  session->arrays().ForEach([&](uint64_t handle, const std::shared_ptr<const runtime::Array>& a) {
    if (held.contains(a.get())) known.push_back({a, handle});
  });
  return known;
}

}  // namespace

absl::Status ArrayBytesAt(runtime::Device& device, const runtime::Array& array, uint64_t offset, uint64_t n,
                          std::byte* out, std::vector<std::byte>* staging, const Session* session) {
  if (!array.dtype()->holds_array()) return device.Download(array, offset, absl::MakeSpan(out, n));
  if (n == 0) return absl::OkStatus();
  // Daemon pointers never reach a client: each descriptor goes out as the
  // handle of its array (RevealArrayMembers), which needs whole elements.
  const uint64_t elem = array.dtype()->size();
  const uint64_t first = offset / elem * elem;
  const uint64_t last = std::min<uint64_t>((offset + n + elem - 1) / elem * elem, array.size_bytes());
  staging->resize(last - first);
  WARPD_RETURN_IF_ERROR(device.Download(array, first, absl::MakeSpan(*staging)));
  runtime::RevealArrayMembers(array.dtype(), staging->data(), (last - first) / elem,
                              KnownMemberArrays(array, session));
  std::memcpy(out, staging->data() + (offset - first), n);
  return absl::OkStatus();
}

absl::StatusOr<DownloadRange> ResolveDownload(DaemonState* state, const Tenant& tenant,
                                              const v1::DownloadRequest& req) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, state->sessions().Get(req.session(), tenant));
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> array, session->arrays().Get(req.handle()));
  const uint64_t size = array->size_bytes();
  if (req.offset() > size) {
    return absl::InvalidArgumentError(
        absl::StrCat("download offset ", req.offset(), " is past the end of the array (", size, " bytes)"));
  }
  uint64_t end = size;
  if (req.length() != 0) {
    auto e = runtime::CheckedAdd(req.offset(), req.length());
    if (!e || *e > size) {
      return absl::InvalidArgumentError(absl::StrCat("download of ", req.length(), " bytes at offset ",
                                                     req.offset(), " runs past the end of the array (", size,
                                                     " bytes)"));
    }
    end = *e;
  }
  DownloadRange range;
  WARPD_ASSIGN_OR_RETURN(range.device, state->devices().Find(array->device()));
  range.begin = req.offset();
  range.end = end;
  range.stream = session->FindStream(array->device());
  if (array->dtype()->holds_array()) range.session = session;
  range.array = std::move(array);
  return range;
}

grpc::ServerReadReactor<grpc::ByteBuffer>* StartUpload(DaemonState* state, grpc::CallbackServerContext* ctx,
                                                       grpc::ByteBuffer* response) {
  return new UploadReactor(state, ctx, response);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* StartDownload(DaemonState* state, grpc::CallbackServerContext* ctx,
                                                          const grpc::ByteBuffer* request) {
  return new DownloadReactor(state, ctx, request);
}

}  // namespace warpd::server
