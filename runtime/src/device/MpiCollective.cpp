//===- MpiCollective.cpp - The ranks of an MPI-launched run ---------------===//
//
// Collectives over MPI for host-visible memory (the CPU device). Each one is
// a nonblocking MPI call polled to completion, so a collective that does
// not complete is noticed: after WorldOptions::timeoutSeconds the waiting
// rank asks every other rank (point to point, on a communicator of its own)
// which collective it is in, and fails with the step, the instruction and
// the ranks that did not arrive. setMesh also checks, before any
// collective of a program runs, that every rank runs the same program on
// the same mesh (a hash exchange), and names the ranks that differ.
//
// Deterministic sums (WorldOptions::deterministic) gather every rank's
// values and add them in rank order on every rank, the order in which one
// rank adds micro-batches with --grad-accum.
//
//===----------------------------------------------------------------------===//

#include "device/Device.h"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>

namespace trainc {
namespace {

using Clock = std::chrono::steady_clock;

/// Tag of the "which collective are you in?" answers on the control
/// communicator.
constexpr int kArrivalTag = 7001;

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, length);
}

class MpiCollective final : public Collective {
public:
  explicit MpiCollective(const WorldOptions &options) : options_(options) {
    MPI_Comm_dup(MPI_COMM_WORLD, &world_);
    MPI_Comm_dup(MPI_COMM_WORLD, &control_);
    MPI_Comm_rank(world_, &rank_);
    MPI_Comm_size(world_, &size_);
    sizes_ = {size_};
    coords_ = {rank_};
    groups_ = {world_};
  }
  ~MpiCollective() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
      return;
    freeGroups();
    MPI_Comm_free(&control_);
    MPI_Comm_free(&world_);
  }

  int rank() const override { return rank_; }
  int worldSize() const override { return size_; }
  int coordinate(int axis) const override { return coords_[axis]; }

  Status setMesh(const std::vector<int64_t> &axisSizes,
                 uint64_t programHash) override {
    int64_t ranks = 1;
    for (int64_t s : axisSizes)
      ranks *= s;
    // Every rank says what it runs, so a rank with another program or mesh
    // is named before any collective of the program can hang on it.
    std::vector<uint64_t> mine = {programHash, uint64_t(ranks)};
    std::vector<uint64_t> all(2 * size_);
    MPI_Request request;
    MPI_Iallgather(mine.data(), 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T,
                   control_, &request);
    CollectiveSite site;
    site.what = "the start-up check that every rank runs the same program";
    TRAINC_RETURN_IF_ERROR(wait(request, site));
    std::string differ;
    for (int r = 0; r < size_; ++r)
      if (all[2 * r] != all[0] || all[2 * r + 1] != all[1])
        differ += (differ.empty() ? "" : ", ") + std::to_string(r);
    if (!differ.empty())
      return invalidArgument(
          "the ranks do not all run the same executable: rank(s) " + differ +
          " run another program than rank 0 (each rank must load the same "
          ".tcx file, compiled once)");
    if (ranks != size_)
      return invalidArgument(
          "this executable runs on " + std::to_string(ranks) +
          " ranks (its mesh), but the run has " + std::to_string(size_) +
          ": launch it with mpirun -np " + std::to_string(ranks));
    if (axisSizes == sizes_)
      return okStatus();
    freeGroups();
    sizes_ = axisSizes;
    coords_.assign(axisSizes.size(), 0);
    groups_.assign(axisSizes.size(), MPI_COMM_NULL);
    int rest = rank_;
    for (size_t a = axisSizes.size(); a-- > 0;) {
      coords_[a] = int(rest % axisSizes[a]);
      rest /= int(axisSizes[a]);
    }
    for (size_t a = 0; a < axisSizes.size(); ++a) {
      // The group of axis a: the ranks equal to this one on every other
      // axis; the color numbers those other coordinates.
      int color = 0;
      for (size_t b = 0; b < axisSizes.size(); ++b)
        if (b != a)
          color = color * int(axisSizes[b]) + coords_[b];
      MPI_Comm_split(world_, color, coords_[a], &groups_[a]);
    }
    return okStatus();
  }

  // The synchronous collectives: a start, then its finish.
  Status allReduceSum(int axis, void *data, int64_t count, DType dtype,
                      Stream &stream, const CollectiveSite &site) override {
    Handle handle = 0;
    TRAINC_RETURN_IF_ERROR(
        startAllReduceSum(axis, data, count, dtype, stream, site, handle));
    return finish(handle, site);
  }
  Status reduceScatterSum(int axis, const void *in, void *out, int64_t count,
                          DType dtype, Stream &stream,
                          const CollectiveSite &site) override {
    Handle handle = 0;
    TRAINC_RETURN_IF_ERROR(startReduceScatterSum(axis, in, out, count, dtype,
                                                 stream, site, handle));
    return finish(handle, site);
  }
  Status allGather(int axis, const void *in, void *out, int64_t count,
                   DType dtype, Stream &stream,
                   const CollectiveSite &site) override {
    Handle handle = 0;
    TRAINC_RETURN_IF_ERROR(
        startAllGather(axis, in, out, count, dtype, stream, site, handle));
    return finish(handle, site);
  }

  Status startAllReduceSum(int axis, void *data, int64_t count, DType dtype,
                           Stream &, const CollectiveSite &site,
                           Handle &handle) override {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    TRAINC_RETURN_IF_ERROR(mpiType(dtype, site, type));
    TRAINC_RETURN_IF_ERROR(checkCount(count, site));
    MPI_Comm group = groups_[axis];
    int n = groupSize(axis);
    Pending &p = post(handle);
    int rc;
    if (!options_.deterministic) {
      rc = MPI_Iallreduce(MPI_IN_PLACE, data, int(count), type, MPI_SUM, group,
                          &p.request);
    } else {
      // Rank order: every member's values, then one sum, left to right.
      orderedSum(p, data, count, dtype, n);
      rc = MPI_Iallgather(data, int(count), type, p.gathered.data(), int(count),
                          type, group, &p.request);
    }
    return posted(handle, rc, site);
  }

  Status startReduceScatterSum(int axis, const void *in, void *out,
                               int64_t count, DType dtype, Stream &,
                               const CollectiveSite &site,
                               Handle &handle) override {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    TRAINC_RETURN_IF_ERROR(mpiType(dtype, site, type));
    int n = groupSize(axis);
    TRAINC_RETURN_IF_ERROR(checkCount(count * n, site));
    MPI_Comm group = groups_[axis];
    Pending &p = post(handle);
    int rc;
    if (!options_.deterministic) {
      rc = MPI_Ireduce_scatter_block(in, out, int(count), type, MPI_SUM, group,
                                     &p.request);
    } else {
      // Rank order: every member's part for this rank (an all-to-all), then
      // one sum, left to right, as allReduceSum's.
      orderedSum(p, out, count, dtype, n);
      rc = MPI_Ialltoall(in, int(count), type, p.gathered.data(), int(count),
                         type, group, &p.request);
    }
    return posted(handle, rc, site);
  }

  Status startAllGather(int axis, const void *in, void *out, int64_t count,
                        DType dtype, Stream &, const CollectiveSite &site,
                        Handle &handle) override {
    TRAINC_RETURN_IF_ERROR(checkCount(count * int64_t(dtypeSize(dtype)), site));
    int bytes = int(count * int64_t(dtypeSize(dtype)));
    Pending &p = post(handle);
    int rc = MPI_Iallgather(in, bytes, MPI_BYTE, out, bytes, MPI_BYTE,
                            axis < 0 ? world_ : groups_[axis], &p.request);
    return posted(handle, rc, site);
  }

  Status finish(Handle handle, const CollectiveSite &site) override {
    auto it = pending_.find(handle);
    if (it == pending_.end())
      return internalError("collective " + std::to_string(handle) +
                           " is not in flight");
    Pending &p = it->second;
    Status s = p.done ? okStatus() : wait(p.request, site, p.sequence);
    if (!p.done)
      completed(p);
    if (s.ok() && p.out) {
      if (p.dtype == DType::F32)
        sumInOrder<float>(p, p.out);
      else
        sumInOrder<double>(p, p.out);
    }
    pending_.erase(it);
    return s;
  }

  void progress() override {
    for (auto &[handle, p] : pending_)
      if (!p.done) {
        int flag = 0;
        if (MPI_Test(&p.request, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
            flag)
          completed(p);
      }
  }

  double timeoutSeconds() const override { return options_.timeoutSeconds; }
  double secondsWaiting() const override { return waited_; }
  double secondsInFlight() const override { return inFlight_; }
  void abort(int code) override { MPI_Abort(MPI_COMM_WORLD, code); }

private:
  int groupSize(int axis) const { return int(sizes_[axis]); }

  void freeGroups() {
    for (MPI_Comm &c : groups_)
      if (c != MPI_COMM_NULL && c != world_)
        MPI_Comm_free(&c);
    groups_.clear();
  }

  /// A collective in flight. Deterministic sums gather every member's
  /// values into `gathered` and sum them into `out` at the finish.
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    int64_t sequence = 0;
    bool done = false;
    void *out = nullptr;
    int64_t count = 0;
    DType dtype = DType::F32;
    int parts = 0;
    std::vector<char> gathered;
  };

  /// Wall time with at least one collective in flight: from the first
  /// start while none was, to the completion that leaves none.
  void completed(Pending &p) {
    p.done = true;
    if (--active_ == 0)
      inFlight_ +=
          std::chrono::duration<double>(Clock::now() - activeSince_).count();
  }

  /// A new collective in flight (its number: sequence_).
  Pending &post(Handle &handle) {
    handle = nextHandle_++;
    Pending &p = pending_[handle];
    p.sequence = ++sequence_;
    if (active_++ == 0)
      activeSince_ = Clock::now();
    return p;
  }

  /// After the MPI call that started `handle` (return code `rc`).
  Status posted(Handle handle, int rc, const CollectiveSite &site) {
    if (rc == MPI_SUCCESS)
      return okStatus();
    pending_.erase(handle);
    --active_;
    return failed(site, mpiError(rc));
  }

  /// Makes `p` an ordered sum of `parts` x `count` gathered values into
  /// `out`.
  void orderedSum(Pending &p, void *out, int64_t count, DType dtype,
                  int parts) {
    p.out = out;
    p.count = count;
    p.dtype = dtype;
    p.parts = parts;
    p.gathered.resize(size_t(count) * dtypeSize(dtype) * size_t(parts));
  }

  /// out = gathered[member 0] + gathered[member 1] + ..., left to right.
  template <typename T> void sumInOrder(const Pending &p, void *out) {
    const T *parts = reinterpret_cast<const T *>(p.gathered.data());
    T *sum = static_cast<T *>(out);
    for (int64_t i = 0; i < p.count; ++i) {
      T s = parts[i];
      for (int r = 1; r < p.parts; ++r)
        s += parts[int64_t(r) * p.count + i];
      sum[i] = s;
    }
  }

  Status mpiType(DType dtype, const CollectiveSite &site, MPI_Datatype &out) {
    if (dtype == DType::F32)
      out = MPI_FLOAT;
    else if (dtype == DType::F64)
      out = MPI_DOUBLE;
    else
      return failed(site, std::string("sums of ") + dtypeName(dtype) +
                              " are not supported over MPI (f32 and f64 "
                              "are)");
    return okStatus();
  }

  Status checkCount(int64_t count, const CollectiveSite &site) {
    if (count > INT_MAX)
      return failed(site, std::to_string(count) +
                              " elements are more than one MPI call moves "
                              "(2^31 - 1)");
    return okStatus();
  }

  std::string where(const CollectiveSite &site) const {
    // (The session names the instruction around this message.)
    std::string text = site.what;
    if (site.step >= 0)
      text += " of step " + std::to_string(site.step + 1);
    return text + " on rank " + std::to_string(rank_) + " of " +
           std::to_string(size_);
  }

  Status failed(const CollectiveSite &site, const std::string &why) {
    return Status(StatusCode::kInternal, where(site) + ": " + why);
  }

  /// Polls `request` until it completes, or fails after the timeout naming
  /// the ranks that did not arrive.
  Status wait(MPI_Request &request, const CollectiveSite &site,
              int64_t sequence = -1) {
    Clock::time_point start = Clock::now();
    struct Count {
      double &total;
      Clock::time_point start;
      ~Count() {
        total += std::chrono::duration<double>(Clock::now() - start).count();
      }
    } count{waited_, start};
    std::chrono::microseconds nap(0);
    for (int polls = 0;; ++polls) {
      int done = 0;
      int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS)
        return failed(site, mpiError(rc));
      if (done)
        return okStatus();
      double waited =
          std::chrono::duration<double>(Clock::now() - start).count();
      if (options_.timeoutSeconds > 0 && waited > options_.timeoutSeconds)
        return timedOut(site, waited, sequence < 0 ? sequence_ : sequence);
      // Spin briefly (a collective between busy ranks completes in
      // microseconds), then sleep a little longer each time, so a rank
      // that waits for a slow one leaves it the core.
      if (polls > 1000)
        nap = std::min(std::chrono::microseconds(1000),
                       nap + std::chrono::microseconds(10));
      if (nap.count() > 0)
        std::this_thread::sleep_for(nap);
    }
  }

  Status timedOut(const CollectiveSite &site, double waited, int64_t sequence) {
    // Tell every rank which collective this one waits in, then listen for
    // the others' answers for a while: a rank that waits in the same one
    // answers the same; one that died, hangs or computes does not.
    long long mine = sequence;
    std::vector<MPI_Request> sends(size_, MPI_REQUEST_NULL);
    for (int r = 0; r < size_; ++r)
      if (r != rank_)
        MPI_Isend(&mine, 1, MPI_LONG_LONG, r, kArrivalTag, control_, &sends[r]);
    std::vector<bool> arrived(size_, false);
    arrived[rank_] = true;
    double grace = std::min(5.0, std::max(1.0, options_.timeoutSeconds));
    Clock::time_point start = Clock::now();
    while (std::chrono::duration<double>(Clock::now() - start).count() <
           grace) {
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, kArrivalTag, control_, &flag, &status);
      if (!flag) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      long long theirs = -1;
      MPI_Recv(&theirs, 1, MPI_LONG_LONG, status.MPI_SOURCE, kArrivalTag,
               control_, MPI_STATUS_IGNORE);
      if (theirs == mine)
        arrived[status.MPI_SOURCE] = true;
    }
    std::string missing;
    for (int r = 0; r < size_; ++r)
      if (!arrived[r])
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.0f", waited);
    return Status(
        StatusCode::kUnavailable,
        where(site) + ": did not complete within " + seconds +
            " s (--collective-timeout); rank(s) " +
            (missing.empty() ? std::string("(none found)") : missing) +
            " did not arrive: they died, hang, or are elsewhere in "
            "the program. Aborting the job");
  }

  WorldOptions options_;
  MPI_Comm world_ = MPI_COMM_NULL, control_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::vector<int64_t> sizes_;
  std::vector<int> coords_;
  std::vector<MPI_Comm> groups_;
  /// Collectives issued so far: the same number on every rank that is in
  /// the same one.
  int64_t sequence_ = 0;
  std::map<Handle, Pending> pending_;
  Handle nextHandle_ = 1;
  double waited_ = 0, inFlight_ = 0;
  int active_ = 0;
  Clock::time_point activeSince_;
};

/// Finalizes MPI at exit, after the last collective is gone.
struct MpiRuntime {
  ~MpiRuntime() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Finalize();
  }
};

} // namespace

Status createMpiCollective(const WorldOptions &options,
                           std::shared_ptr<Collective> &out) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS)
      return Status(StatusCode::kUnavailable,
                    "MPI_Init failed: " + mpiError(rc));
    static MpiRuntime finalizer;
    (void)finalizer;
  }
  // Errors come back as codes, to be reported with the site.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  out = std::make_shared<MpiCollective>(options);
  return okStatus();
}

} // namespace trainc
