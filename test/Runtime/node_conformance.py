#!/usr/bin/env python3
"""Numerical conformance of trainc + trainc-run against the ONNX node tests.

Every node-test folder that import_node_tests.py would import (same suites,
same claim rule: only ops of the default domain that `trainc --list-onnx-ops`
claims at the model's opset) is compiled to an executable and run on the CPU:

    trainc model.onnx -o model.tcx [--input-shape ...]
    trainc-run model.tcx --input NAME=FILE ... --output-dir DIR

once per `test_data_set_*/`. Its `input_<i>.pb` tensors feed the i-th
non-initializer graph input, matched by name to the executable's inputs
(listed by `trainc-run --inspect`; by position for an unnamed one); they are
written as .npy, except bfloat16, which trainc-run reads as raw little-endian
bytes. Each `output_<i>.pb` is compared with DIR/<name>.npy, where name is the
i-th graph.output's name with '/', '\\' and ':' replaced by '_' (bfloat16
outputs come back as '<u2' bit patterns). The outputs must have the expected
dtype and shape, and elements must agree:

  integers, bools     exactly;
  floats              |got - expected| <= atol + rtol * |expected|, with
                      (rtol, atol) from TOLERANCES by dtype unless
                      OP_TOLERANCES widens it for an op of the model; NaN
                      must meet NaN and an infinity the same infinity.

Each folder is classified as
  pass   compiled, ran and matched for every data set;
  fail   trainc or trainc-run exited with 1..127 (a diagnosed failure), or
         an output is missing or differs;
  crash  trainc or trainc-run was killed by a signal, exited with >= 128, or
         did not exit within TIMEOUT_S.

Expected failures are listed in --expected-failures in the format of
import_node_tests.py (`<suite>/<folder> | <substring> | <reason>`), where the
substring must occur in the failure message (trainc's or trainc-run's stderr,
or this script's description of a mismatch). Unexpected, and so failing this
test, are: a crash (never listable), an unlisted failure, a listed failure
whose message lacks the substring, a listed folder that passes (stale entry)
and a listed folder that was not run.

Prints `N passed, M failed, K unsupported (L expected failures)`, every op
whose tests pass below 95% with the reasons listed for them, then each
unexpected result: its folder and the first differing element (index, got,
expected) or the first line of the tool's stderr. Exits 1 when there is any
unexpected result, 0 otherwise.
"""
import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

# The claim rule, the test walk, --input-shape flags and the expected-failure
# file format are those of the import conformance test.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, 'Frontends', 'Onnx'))
import import_node_tests as node_tests  # noqa: E402

TIMEOUT_S = 120

# Default (rtol, atol) per float dtype. float32/float16/bfloat16: the
# issue's bound; float64 is computed in float64 throughout.
TOLERANCES = {
    'float64': (1e-7, 1e-10),
    'float32': (1e-5, 1e-6),
    'float16': (1e-5, 1e-6),
    'bfloat16': (1e-5, 1e-6),
}

# Wider (rtol, atol) for (op_type, output dtype), applied when the model has
# a node of that op: an entry needs a comment saying why the op cannot meet
# TOLERANCES (e.g. a float16/bfloat16 result computed in float32 and rounded
# once may sit 1 ulp of the format from a reference rounded differently:
# rtol 2**-10 for float16, 2**-7 for bfloat16). None is needed today: every
# float output that passes uses at most ~12% of its TOLERANCES bound (the
# worst are LayerNormalization float32 outputs), and float16/bfloat16 ones
# are bit-exact.
OP_TOLERANCES = {
}


# Storage-only types (numpy_helper gives ml_dtypes arrays): trainc-run reads
# them as raw bytes, one per element (8- and 4-bit floats as bit patterns, 4- and
# 2-bit integers as their values), and writes them as uint8/int8 .npy.
FLOAT8 = ('float8_e4m3fn', 'float8_e4m3fnuz', 'float8_e5m2', 'float8_e5m2fnuz',
          'float4_e2m1fn', 'float8_e8m0fnu')
SUB_BYTE = {'int4': np.int8, 'uint4': np.uint8, 'int2': np.int8, 'uint2': np.uint8}


def bf16_bits_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def load_tensor(path, declared_type):
    """The tensor at path as (numpy array, dtype name); bfloat16 as uint16
    bits. declared_type is the graph's element type for it: the v1.12.0 suite
    stores bfloat16 test data as UINT16 tensors of the bit patterns."""
    tensor = onnx.load_tensor(path)
    array = numpy_helper.to_array(tensor)
    if tensor.data_type == onnx.TensorProto.BFLOAT16:
        return array.view(np.uint16), 'bfloat16'
    if (declared_type == onnx.TensorProto.BFLOAT16 and
            tensor.data_type == onnx.TensorProto.UINT16):
        return array, 'bfloat16'
    return array, array.dtype.name


def write_input(array, dtype, base):
    """Writes an input for trainc-run; returns the file name."""
    if dtype == 'bfloat16':
        path = base + '.bin'
        with open(path, 'wb') as f:
            f.write(array.astype('<u2').tobytes())
    elif dtype in FLOAT8 or dtype in SUB_BYTE:
        path = base + '.bin'
        with open(path, 'wb') as f:
            f.write(array.view(np.uint8).tobytes() if dtype in FLOAT8
                    else array.astype(SUB_BYTE[dtype]).tobytes())
    else:
        path = base + '.npy'
        np.save(path, array)
    return path


def output_file_name(name):
    return re.sub(r'[/\\:]', '_', name) if name else 'output'


def tolerance(ops, dtype):
    rtol, atol = TOLERANCES[dtype]
    for op in ops:
        wide = OP_TOLERANCES.get((op, dtype))
        if wide:
            rtol, atol = max(rtol, wide[0]), max(atol, wide[1])
    return rtol, atol


def format_value(value, dtype):
    if dtype == 'float64':
        return f'{float(value):.17g}'
    if dtype in TOLERANCES:
        return f'{float(value):.9g}'
    return str(value.item())


def format_index(index, shape):
    return str(tuple(int(i) for i in np.unravel_index(index, shape))) \
        if shape else '()'


def compare(name, got, expected, dtype, ops):
    """None when got matches expected, else a description of the mismatch."""
    if dtype == 'bfloat16':
        if got.dtype != np.uint16:
            return (f"output '{name}': dtype {got.dtype.name}, expected "
                    f"bfloat16 bit patterns (uint16)")
        got, expected = bf16_bits_to_f32(got), bf16_bits_to_f32(expected)
    elif dtype in FLOAT8:
        if got.dtype != np.uint8:
            return (f"output '{name}': dtype {got.dtype.name}, expected "
                    f"{dtype} bit patterns (uint8)")
        # Values, not bit patterns: NaN has several encodings.
        got = got.view(expected.dtype).astype(np.float32)
        expected = expected.astype(np.float32)
        dtype = 'float32'
    elif dtype in SUB_BYTE:
        expected = expected.astype(SUB_BYTE[dtype])
        if got.dtype != expected.dtype:
            return (f"output '{name}': dtype {got.dtype.name}, expected "
                    f"{dtype} values in {expected.dtype.name}")
    elif got.dtype != expected.dtype:
        return f"output '{name}': dtype {got.dtype.name}, expected {dtype}"
    if got.shape != expected.shape:
        return (f"output '{name}': shape {list(got.shape)}, expected "
                f"{list(expected.shape)}")
    g, e = got.reshape(-1), expected.reshape(-1)
    if dtype in TOLERANCES:
        rtol, atol = tolerance(ops, dtype)
        with np.errstate(invalid='ignore', over='ignore'):
            g64, e64 = g.astype(np.float64), e.astype(np.float64)
            finite = np.isfinite(e64)
            ok = finite & (np.abs(g64 - e64) <= atol + rtol * np.abs(e64))
        # An infinity must be met by the same infinity, NaN by NaN.
        ok |= ~finite & ((g64 == e64) | (np.isnan(g64) & np.isnan(e64)))
        bound = f' (rtol {rtol:g}, atol {atol:g})'
    else:
        ok = g == e
        bound = ' (exact)'
    bad = np.flatnonzero(~ok)
    if not bad.size:
        return None
    i = bad[0]
    return (f"output '{name}' ({dtype} {list(expected.shape)}): {bad.size} of "
            f"{g.size} elements differ{bound}; first at "
            f"{format_index(i, expected.shape)}: got {format_value(g[i], dtype)}, "
            f"expected {format_value(e[i], dtype)}")


def describe_crash(tool, returncode, stderr):
    """One line for a crash: the tool, the signal or status, and the first
    line of stderr (with the first trainc frame of a stack dump, if any)."""
    if returncode < 0:
        try:
            how = f'killed by {signal.Signals(-returncode).name}'
        except ValueError:
            how = f'killed by signal {-returncode}'
    else:
        how = f'exit status {returncode}'
    # From an LLVM stack dump, the innermost trainc frame says more than
    # the first line ("PLEASE submit a bug report ...").
    frame = next((l for l in stderr.splitlines()
                  if re.match(r'\s*#\d+ ', l) and 'trainc::' in l), None)
    if frame:  # The function's name, without address and parameters.
        frame = re.sub(r'^\s*#\d+ 0x[0-9a-f]+ ', '', frame)
        frame = frame.replace('(anonymous namespace)', '{anonymous}')
        frame = frame.split('(', 1)[0].replace('{anonymous}',
                                               '(anonymous namespace)')
    return f'{tool} {how}: ' + (f'in {frame}' if frame else
                                node_tests.first_line(stderr))


def run_tool(command):
    """Returns (kind, message, stdout): kind is 'ok', 'fail' or 'crash';
    message is stderr, or a one-line description of a crash."""
    tool = os.path.basename(command[0])
    try:
        proc = subprocess.run(command, capture_output=True, text=True,
                              errors='replace', timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return 'crash', f'{tool} timed out after {TIMEOUT_S} s', ''
    if proc.returncode == 0:
        return 'ok', proc.stderr, proc.stdout
    if proc.returncode < 0 or proc.returncode >= 128:
        return ('crash', describe_crash(tool, proc.returncode, proc.stderr),
                proc.stdout)
    return 'fail', proc.stderr, proc.stdout


INSPECT_TENSOR = re.compile(
    r'^\s*%\d+\s+(\w+)\s+(\w+)\s+\[[^\]]*\]\s+\S+\s+(.*)$')


def executable_inputs(trainc_run, exe):
    """Returns (kind, stderr, [input names]) from `trainc-run --inspect`."""
    kind, stderr, stdout = run_tool([trainc_run, exe, '--inspect'])
    names = []
    for line in stdout.splitlines():
        m = INSPECT_TENSOR.match(line)
        if m and m.group(1) == 'input':
            names.append(m.group(3).strip())
    return kind, stderr, names


def compile_folder(trainc, folder, model, exe, data_set):
    """Compiles folder/model.onnx to `exe`, binding the inputs that must be
    compile-time constants to `data_set`'s values (as import_node_tests.py
    does). Returns (kind, message, bound): bound is whether any was."""
    flags = node_tests.input_shape_flags(model, folder)
    while True:
        kind, stderr, _ = run_tool(
            [trainc, os.path.join(folder, 'model.onnx'), '-o', exe] + flags)
        more = (node_tests.bind_flags(model, data_set, stderr, flags)
                if kind == 'fail' else None)
        if not more:
            return kind, stderr, any(f.startswith('--bind=') for f in flags)
        flags = more


def check_folder(trainc, trainc_run, folder, model, work):
    """Returns (kind, message): 'pass', 'fail' or 'crash'."""
    os.makedirs(work, exist_ok=True)
    exe = os.path.join(work, 'model.tcx')
    first_set = os.path.join(folder, 'test_data_set_0')
    kind, stderr, bound = compile_folder(trainc, folder, model, exe, first_set)
    if kind != 'ok':
        return kind, stderr
    kind, stderr, exe_inputs = executable_inputs(trainc_run, exe)
    if kind != 'ok':
        return kind, stderr

    initializers = {t.name for t in model.graph.initializer}
    graph_inputs = [(i.name, i.type.tensor_type.elem_type)
                    for i in model.graph.input if i.name not in initializers]
    outputs = [(o.name, o.type.tensor_type.elem_type)
               for o in model.graph.output]
    ops = {node.op_type for node in model.graph.node}
    data_sets = sorted(glob.glob(os.path.join(folder, 'test_data_set_*')))
    if not data_sets:
        return 'fail', 'no test_data_set_* folder'
    for data_set in data_sets:
        set_name = os.path.basename(data_set)
        set_dir = os.path.join(work, set_name)
        out_dir = os.path.join(set_dir, 'out')
        os.makedirs(out_dir, exist_ok=True)
        if bound and data_set != first_set:
            # The bound constants are this data set's.
            kind, stderr, _ = compile_folder(trainc, folder, model, exe,
                                             data_set)
            if kind != 'ok':
                return kind, f'{set_name}: {stderr}'
            kind, stderr, exe_inputs = executable_inputs(trainc_run, exe)
            if kind != 'ok':
                return kind, stderr
        files = {}
        for index, (input_name, elem_type) in enumerate(graph_inputs):
            path = os.path.join(data_set, f'input_{index}.pb')
            if not os.path.exists(path):
                return 'fail', f'{set_name}: no input_{index}.pb for {input_name!r}'
            array, dtype = load_tensor(path, elem_type)
            files[input_name] = write_input(
                array, dtype, os.path.join(set_dir, f'input_{index}'))
        command = [trainc_run, exe, '--output-dir', out_dir]
        for position, input_name in enumerate(exe_inputs):
            if input_name in files:
                path = files[input_name]
            elif position < len(graph_inputs):  # An unnamed input: by order.
                path = files[graph_inputs[position][0]]
            else:
                return 'fail', (f"executable input '{input_name}' matches no "
                                f"graph input")
            command += ['--input', f'{input_name}={path}']
        kind, stderr, _ = run_tool(command)
        if kind != 'ok':
            return kind, f'{set_name}: {stderr}'
        for index, (output_name, elem_type) in enumerate(outputs):
            expected, dtype = load_tensor(
                os.path.join(data_set, f'output_{index}.pb'), elem_type)
            got_path = os.path.join(out_dir, output_file_name(output_name) + '.npy')
            if not os.path.exists(got_path):
                return 'fail', (f"{set_name}: output '{output_name}' was not "
                                f"written ({got_path})")
            mismatch = compare(output_name, np.load(got_path), expected,
                               dtype, ops)
            if mismatch:
                return 'fail', f'{set_name}: {mismatch}'
    return 'pass', ''


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--trainc', required=True, help='the trainc binary')
    parser.add_argument('--trainc-run', required=True,
                        help='the trainc-run binary')
    parser.add_argument('--data-dir', required=True,
                        help='onnx-node directory holding the suites')
    parser.add_argument('--expected-failures', required=True,
                        help='list of known failures')
    parser.add_argument('--jobs', type=int, default=2,
                        help='folders run in parallel (default 2)')
    parser.add_argument('--work-dir',
                        help='keep executables, inputs and outputs here '
                             '(default: a temporary directory, removed)')
    parser.add_argument('--filter', default='',
                        help='only folders whose <suite>/<folder> name '
                             'matches this regular expression')
    args = parser.parse_args()

    ops = node_tests.claimed_ops(args.trainc)
    expected = node_tests.load_expected_failures(args.expected_failures)
    work_root = args.work_dir or tempfile.mkdtemp(prefix='node_conformance.')
    name_filter = re.compile(args.filter)

    unsupported = 0
    jobs, ops_of = {}, {}
    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            for name, folder in node_tests.find_tests(args.data_dir):
                if not name_filter.search(name):
                    continue
                model = onnx.load(os.path.join(folder, 'model.onnx'),
                                  load_external_data=False)
                if not node_tests.is_claimed(model, ops):
                    unsupported += 1
                    continue
                ops_of[name] = node_tests.op_types(model)
                work = os.path.join(work_root, name.replace('/', '__'))
                jobs[name] = pool.submit(check_folder, args.trainc,
                                         args.trainc_run, folder, model, work)
            results = {name: job.result() for name, job in sorted(jobs.items())}
    finally:
        if not args.work_dir:
            shutil.rmtree(work_root, ignore_errors=True)

    return node_tests.report(results, expected, unsupported,
                             check_unrun=not args.filter, ops_of=ops_of)


if __name__ == '__main__':
    sys.exit(main())
