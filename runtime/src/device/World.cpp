//===- World.cpp - The ranks this process runs with -----------------------===//
//
// See worldCollective in Device.h. A process belongs to a run of several
// ranks exactly when an MPI launcher started it: mpirun (Open MPI sets
// OMPI_COMM_WORLD_SIZE), an MPICH-style launcher (PMI_SIZE) or a PMIx one
// such as srun --mpi=pmix (PMIX_RANK). Otherwise it is a world of one and
// MPI is never initialized, so a single process needs no MPI at all.
//
//===----------------------------------------------------------------------===//

#include "device/Device.h"

#include <cstdlib>
#include <mutex>

namespace trainc {

#ifdef TRAINC_HAVE_MPI
Status createMpiCollective(const WorldOptions &options,
                           std::shared_ptr<Collective> &out);
bool haveMpi() { return true; }
#else
bool haveMpi() { return false; }
#endif

namespace {

/// The launcher's variable that says this process is one of several ranks,
/// or null.
const char *launcherVariable() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name))
      return name;
  return nullptr;
}

} // namespace

Status worldCollective(const WorldOptions &options,
                       std::shared_ptr<Collective> &out) {
  static std::mutex mutex;
  static std::shared_ptr<Collective> world;
  std::lock_guard<std::mutex> lock(mutex);
  if (!world) {
    const char *launcher = launcherVariable();
    if (!launcher) {
      world = createLocalCollective();
    } else {
#ifdef TRAINC_HAVE_MPI
      TRAINC_RETURN_IF_ERROR(createMpiCollective(options, world));
#else
      return Status(StatusCode::kUnavailable,
                    std::string("an MPI launcher started this process (") +
                        launcher +
                        " is set), but this runtime was built without MPI "
                        "(TRAINC_ENABLE_MPI=OFF or no MPI found)");
#endif
    }
  }
  out = world;
  return okStatus();
}

} // namespace trainc
