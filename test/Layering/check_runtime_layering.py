#!/usr/bin/env python3
"""Checks that the runtime never includes or links MLIR/LLVM.

1. No file under runtime/ includes an mlir/ or llvm/ header.
2. In the main build, no compile command of a runtime/ source has an LLVM or
   MLIR include path or definition.
3. A runtime-only tree (-DTRAINC_BUILD_COMPILER=OFF, with find_package(MLIR)
   and find_package(LLVM) disabled) configures and builds, and none of its
   compile or link commands mention LLVM or MLIR.

Exit status 0 when all hold; otherwise each violation is printed.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"](mlir|llvm|llvm-c)/', re.M)
# What an LLVM/MLIR dependency looks like on a command line.
FLAG_RE = re.compile(r'(llvm-\d+|/mlir\b|libMLIR|libLLVM|-lMLIR|-lLLVM|MLIR[A-Z]\w*\.a)')
SOURCE_SUFFIXES = ('.h', '.hpp', '.c', '.cc', '.cpp', '.cu', '.cuh', '.inc', '.fbs')


def check_sources(source_dir):
    problems = []
    runtime = os.path.join(source_dir, 'runtime')
    for root, _, files in os.walk(runtime):
        for name in files:
            path = os.path.join(root, name)
            if name.endswith(SOURCE_SUFFIXES):
                with open(path, encoding='utf-8', errors='replace') as f:
                    for m in INCLUDE_RE.finditer(f.read()):
                        problems.append(f'{path}: includes {m.group(0).strip()}')
            if name == 'CMakeLists.txt':
                with open(path, encoding='utf-8') as f:
                    for lineno, line in enumerate(f, 1):
                        code = line.split('#', 1)[0]
                        if re.search(r'\b(MLIR\w*|LLVM\w*)\b', code):
                            problems.append(f'{path}:{lineno}: mentions MLIR/LLVM: {line.strip()}')
    return problems


def check_compile_commands(build_dir, source_dir, only_runtime):
    path = os.path.join(build_dir, 'compile_commands.json')
    if not os.path.exists(path):
        return [f'{path} is missing (configure with CMAKE_EXPORT_COMPILE_COMMANDS)']
    runtime = os.path.realpath(os.path.join(source_dir, 'runtime')) + os.sep
    problems = []
    checked = 0
    for entry in json.load(open(path)):
        src = os.path.realpath(os.path.join(entry['directory'], entry['file']))
        if only_runtime and not src.startswith(runtime):
            continue
        checked += 1
        command = entry.get('command') or ' '.join(entry.get('arguments', []))
        hit = FLAG_RE.search(command)
        if hit:
            problems.append(f'{src}: compile command mentions {hit.group(0)!r}')
    if checked == 0:
        problems.append(f'{path}: no runtime sources found; is the runtime built?')
    return problems


def check_runtime_only_build(source_dir, work_dir):
    if os.path.exists(work_dir):
        shutil.rmtree(work_dir)
    configure = [
        'cmake', '-S', source_dir, '-B', work_dir, '-G', 'Ninja',
        '-DTRAINC_BUILD_COMPILER=OFF', '-DTRAINC_BUILD_TESTS=OFF',
        # And without CUDA: the device is optional (the main build has it).
        '-DTRAINC_ENABLE_CUDA=OFF',
        # Prove the runtime does not even look for them.
        '-DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON', '-DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON',
    ]
    for cmd in (configure, ['cmake', '--build', work_dir]):
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if run.returncode != 0:
            return [f'runtime-only step failed: {" ".join(cmd)}\n{run.stdout[-4000:]}']
    problems = check_compile_commands(work_dir, source_dir, only_runtime=False)
    commands = subprocess.run(['ninja', '-C', work_dir, '-t', 'commands'],
                              stdout=subprocess.PIPE, text=True, check=True).stdout
    for line in commands.splitlines():
        hit = FLAG_RE.search(line)
        if hit:
            problems.append(f'runtime-only build command mentions {hit.group(0)!r}: {line[:200]}')
    cache = open(os.path.join(work_dir, 'CMakeCache.txt')).read()
    if re.search(r'^MLIR_DIR:PATH=/', cache, re.M):
        problems.append('runtime-only configure found MLIR_DIR')
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--source-dir', required=True)
    parser.add_argument('--work-dir', required=True,
                        help='scratch directory for the runtime-only build (wiped)')
    parser.add_argument('--main-build-dir', help='a configured full build to inspect too')
    args = parser.parse_args()

    problems = check_sources(args.source_dir)
    if args.main_build_dir:
        problems += check_compile_commands(args.main_build_dir, args.source_dir, only_runtime=True)
    problems += check_runtime_only_build(args.source_dir, args.work_dir)
    for p in problems:
        print('LAYERING VIOLATION:', p)
    if problems:
        return 1
    print('runtime layering ok: no MLIR/LLVM includes, flags or libraries')
    return 0


if __name__ == '__main__':
    sys.exit(main())
