# lit configuration of trainc's IR tests (test/Dialect, test/Transforms, ...).
import os
import sys

import lit.formats

config.name = "trainc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.trainc_obj_root, "test")
# Directories that hold no lit tests.
config.excludes = ["lib", "Unit", "Layering", "Inputs", "CMakeLists.txt"]

# trainc-opt from this build first, then FileCheck/not/split-file from LLVM.
path = os.pathsep.join([config.trainc_tools_dir, config.llvm_tools_dir,
                        config.environment.get("PATH", os.environ["PATH"])])
config.environment["PATH"] = path
# trainc-run keeps its data cache under XDG_CACHE_HOME: the tests keep
# theirs in the build tree, never in the home directory.
config.environment["XDG_CACHE_HOME"] = os.path.join(config.test_exec_root,
                                                    "cache")
config.substitutions.append(("%shared_data", config.shared_data_dir))
# The Python that runs lit also runs the tests' helper scripts.
config.substitutions.append(("%python", sys.executable))

for tool in ("trainc", "trainc-opt", "trainc-run", "FileCheck", "not"):
    if not any(os.path.exists(os.path.join(d, tool))
               for d in (config.trainc_tools_dir, config.llvm_tools_dir)):
        lit_config.fatal(f"{tool} not found in {config.trainc_tools_dir} "
                         f"or {config.llvm_tools_dir}; build trainc-opt first")
