#pragma once
// FileStore guard: a worker whose own command line or environment names a FileStore
// (init_method="file://PATH", the seed article's single-machine recipe) hangs, or dies of a gloo
// "Connection refused", when a killed earlier run left that file behind. Before the launch, the
// supervisor checks every such path the way `--store file` checks its own: a provably stale file
// is removed (and said so), one in use or undecidable stops the launch with an error naming
// `ddp-launch clean PATH`. A path that is not a FileStore (a data set's URL, a directory, an empty
// file, which torch starts on as on a new one) is left alone.
#include <string>
#include <vector>

#include "launcher/workers/worker_env.hpp"
#include "store/filestore.hpp"

namespace ddp::launcher {

struct NamedFileStore {
  std::string path;   // as written after file:// (absolute, or relative to the working directory)
  std::string where;  // "argument 3" or "$INIT_METHOD", for the messages
};

// Pure: the file:// URLs in the worker's argv template and environment (any variable whose value
// holds one), plus $DDP_FILESTORE_PATH unless the run sets that variable itself (`--store file`).
// Arguments holding a {placeholder} inside the URL are skipped (they are expanded per rank).
// Each path once, in the order found.
// `style`: how torch reads the URLs on the OS the workers run on.
std::vector<NamedFileStore> filestores_named_by(const std::vector<std::string>& argv, const EnvMap& env,
                                                bool run_sets_filestore_var,
                                                store::PathStyle style = store::PathStyle::Posix);

// The I/O shell, called once before the launch (from `run`, through supervisor_config.hpp's
// overload) with the workers' argv template and environment. One node: removes stale files and
// logs what it removed; throws ddp::Error for a FileStore in use, torn with a stuck reader, or not
// removable; warns about a non-empty file that is not a FileStore. Several nodes (`single_node`
// false: the file is on a shared filesystem where other nodes' users are invisible): never
// removes, only warns when the file looks stale.
void guard_user_filestores(const std::vector<std::string>& argv, const EnvMap& env, bool run_sets_filestore_var,
                           bool single_node);

}  // namespace ddp::launcher
