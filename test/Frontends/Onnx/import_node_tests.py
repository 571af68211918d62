#!/usr/bin/env python3
"""Import conformance of trainc's ONNX frontend against the ONNX node tests.

The importer claims, through `trainc --list-onnx-ops`, a set of ops and the
opset range it reads each in. Every node-test folder (`model.onnx` plus
`test_data_set_*/`) under the suites `v1.12.0/` and `latest/` of --data-dir,
nested folders such as `_simple/` included, whose model uses only claimed ops
of the default domain at a claimed opset must import:

    trainc model.onnx --compile-to=import -o /dev/null

Folders that use an unclaimed op, domain or opset are skipped and counted as
"unsupported". Graph inputs with symbolic dimensions get `--input-shape` from
the shapes of the test's `test_data_set_0/input_<i>.pb` tensors, matched to the
non-initializer graph inputs by order. A graph input that an op needs as a
compile-time constant (shapes, axes, pads: the import names it) is bound to
the test's value with `--bind NAME=input_<i>.pb`, and the import retried, as
a user with such a model would do.

Each run is classified as
  pass   exit status 0;
  fail   exit status 1..127: a diagnosed rejection;
  crash  killed by a signal, exit status >= 128, or no exit within the timeout.

A failure is expected only when --expected-failures lists its folder and its
stderr contains the listed substring. That file holds one entry a line,

    <suite>/<folder> | <substring expected in stderr> | <reason>

with `#` comments and blank lines ignored. Unexpected, and so failing this
test, are: a crash (never listable), an unlisted failure, a listed failure
whose stderr lacks the substring, a listed folder that passes (stale entry),
and a listed folder that was not run (missing or no longer claimed).

Prints `N passed, M failed, K unsupported (L expected failures)`, where M
counts every run that did not pass (crashes included) and L those of them that
were expected, then the details of each unexpected result. Exits 1 when there
is any unexpected result, 0 otherwise.
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys

import onnx
from onnx import numpy_helper

SUITES = ('v1.12.0', 'latest')
DEFAULT_DOMAINS = ('', 'ai.onnx')
TIMEOUT_S = 60


def claimed_ops(trainc):
    """Returns {op_type: (min_opset, max_opset)} from `trainc --list-onnx-ops`."""
    out = subprocess.run([trainc, '--list-onnx-ops'], capture_output=True,
                         text=True, check=True, timeout=TIMEOUT_S).stdout
    ops = {}
    for line in out.splitlines()[1:]:  # The first line is a header.
        fields = line.split()
        if not fields:
            continue
        m = re.fullmatch(r'(\d+)-(\d+)', fields[1]) if len(fields) > 1 else None
        if not m:
            sys.exit(f'unexpected line in trainc --list-onnx-ops: {line!r}')
        ops[fields[0]] = (int(m.group(1)), int(m.group(2)))
    if not ops:
        sys.exit('trainc --list-onnx-ops listed no ops')
    return ops


def find_tests(data_dir):
    """Yields (name, folder) of every test folder, name = '<suite>/<relpath>'."""
    for suite in SUITES:
        root = os.path.join(data_dir, suite)
        if not os.path.isdir(root):
            sys.exit(f'{root}: no such suite directory')
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            if 'model.onnx' in filenames:
                dirnames.clear()  # test_data_set_* hold no models.
                rel = os.path.relpath(dirpath, root).replace(os.sep, '/')
                yield f'{suite}/{rel}', dirpath


def is_claimed(model, ops):
    """Whether every node is a claimed default-domain op at the model's opset."""
    opset = next((o.version for o in model.opset_import
                  if o.domain in DEFAULT_DOMAINS), None)
    if opset is None:
        return False
    for node in model.graph.node:
        if node.domain not in DEFAULT_DOMAINS or node.op_type not in ops:
            return False
        low, high = ops[node.op_type]
        if not low <= opset <= high:
            return False
    return True


def input_shape_flags(model, folder):
    """--input-shape flags for graph inputs whose shapes are not all static."""
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    flags = []
    for index, value in enumerate(inputs):
        if not value.type.HasField('tensor_type'):
            continue  # Only tensors take --input-shape.
        tensor_type = value.type.tensor_type
        static = tensor_type.HasField('shape') and all(
            d.HasField('dim_value') for d in tensor_type.shape.dim)
        if static:
            continue
        path = os.path.join(folder, 'test_data_set_0', f'input_{index}.pb')
        shape = numpy_helper.to_array(onnx.load_tensor(path)).shape
        flags.append(f'--input-shape={value.name}=' + 'x'.join(map(str, shape)))
    return flags


# The import error of an op input that must be a compile-time constant.
NEEDS_CONSTANT = re.compile(
    r"input \d+ '([^']+)' \([^)]*\) must be a compile-time constant")


def bind_flags(model, data_set, stderr, flags):
    """--bind for the graph input that `stderr` says must be constant, with
    its value from `data_set`; None when it names no graph input (or one
    already bound)."""
    m = NEEDS_CONSTANT.search(stderr)
    if not m:
        return None
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initializers]
    if m.group(1) not in inputs:
        return None
    flag = f'--bind={m.group(1)}=' + os.path.join(
        data_set, f'input_{inputs.index(m.group(1))}.pb')
    return None if flag in flags else flags + [flag]


def run_trainc(trainc, folder, flags, model=None):
    """Returns (kind, stderr) of importing folder/model.onnx, binding (with
    `model`) the inputs that must be constants to test_data_set_0's values."""
    while True:
        kind, stderr = run_trainc_once(trainc, folder, flags)
        more = bind_flags(model, os.path.join(folder, 'test_data_set_0'),
                          stderr, flags) if model is not None and kind == 'fail' else None
        if not more:
            return kind, stderr
        flags = more


def run_trainc_once(trainc, folder, flags):
    """Returns (kind, stderr) of importing folder/model.onnx."""
    command = [trainc, os.path.join(folder, 'model.onnx'), '--compile-to=import',
               '-o', os.devnull] + flags
    try:
        proc = subprocess.run(command, capture_output=True, text=True,
                              errors='replace', timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        stderr = e.stderr.decode(errors='replace') if e.stderr else ''
        return 'crash', f'timed out after {TIMEOUT_S} s\n{stderr}'
    if proc.returncode == 0:
        return 'pass', proc.stderr
    if proc.returncode < 0 or proc.returncode >= 128:
        return 'crash', f'exit status {proc.returncode}\n{proc.stderr}'
    return 'fail', proc.stderr


def load_expected_failures(path):
    """Returns {'<suite>/<folder>': (substring, reason)}."""
    entries = {}
    with open(path, encoding='utf-8') as f:
        for lineno, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            fields = [field.strip() for field in line.split('|')]
            if len(fields) != 3 or not all(fields):
                sys.exit(f'{path}:{lineno}: expected "<suite>/<folder> | '
                         f'<substring> | <reason>"')
            if fields[0] in entries:
                sys.exit(f'{path}:{lineno}: {fields[0]} is listed twice')
            entries[fields[0]] = (fields[1], fields[2])
    return entries


def first_line(text):
    return next((l for l in text.splitlines() if l.strip()), '(no stderr)')


def op_types(model):
    """The default-domain op types of a node test's graph, but Constant."""
    return sorted({n.op_type for n in model.graph.node
                   if n.domain in ('', 'ai.onnx') and n.op_type != 'Constant'})


def report(results, expected, unsupported, check_unrun=True, ops_of=None):
    """Prints the tally of results ({name: (kind, message)}, kind 'pass',
    'fail' or 'crash') against the expected failures ({name: (substring,
    reason)}) and every problem: an unexpected failure or crash, a failure
    whose message lacks the listed substring, a listed folder that passes or
    (with check_unrun) did not run. With ops_of ({name: op types}), also the
    pass rate of every op below 95% (a test counts for each op in its graph)
    and the reasons listed for its failures. Returns the exit status: 1 on
    any problem.
    """
    passed = failed = expected_failed = 0
    problems = []
    for name, (kind, message) in results.items():
        listed = expected.get(name)
        if kind == 'pass':
            passed += 1
            if listed:
                problems.append(f'{name}: passes but is listed as an expected '
                                f'failure (stale entry, remove it)')
            continue
        failed += 1
        if kind == 'crash':
            problems.append(f'{name}: CRASH: {message.rstrip()}')
        elif not listed:
            problems.append(f'{name}: unexpected failure: {first_line(message)}')
        elif listed[0] not in message:
            problems.append(f'{name}: fails, but the message lacks the expected '
                            f'{listed[0]!r}: {first_line(message)}')
        else:
            expected_failed += 1
    if check_unrun:
        for name in sorted(set(expected) - set(results)):
            problems.append(f'{name}: listed as an expected failure but not run '
                            f'(no such folder, or not claimed; remove it)')

    print(f'{passed} passed, {failed} failed, {unsupported} unsupported '
          f'({expected_failed} expected failures)')
    if ops_of:
        per_op = {}
        for name, (kind, _) in results.items():
            for op in ops_of.get(name, ()):
                tally = per_op.setdefault(op, [0, 0, set()])
                tally[0] += kind == 'pass'
                tally[1] += 1
                if kind != 'pass' and name in expected:
                    tally[2].add(expected[name][1])
        for op, (good, total, reasons) in sorted(per_op.items()):
            if good < 0.95 * total:
                print(f'  {op}: {good} of {total} pass ({100 * good / total:.0f}%); '
                      f'listed: {"; ".join(sorted(reasons))}')
    for problem in problems:
        print(problem)
    return 1 if problems else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--trainc', required=True, help='the trainc binary')
    parser.add_argument('--data-dir', required=True,
                        help='onnx-node directory holding the suites')
    parser.add_argument('--expected-failures', required=True,
                        help='list of known failures')
    parser.add_argument('--jobs', type=int, default=2,
                        help='imports run in parallel (default 2)')
    args = parser.parse_args()

    ops = claimed_ops(args.trainc)
    expected = load_expected_failures(args.expected_failures)

    unsupported = 0
    ops_of = {}
    jobs = {}
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for name, folder in find_tests(args.data_dir):
            model = onnx.load(os.path.join(folder, 'model.onnx'),
                              load_external_data=False)
            if not is_claimed(model, ops):
                unsupported += 1
                continue
            ops_of[name] = op_types(model)
            flags = input_shape_flags(model, folder)
            jobs[name] = pool.submit(run_trainc, args.trainc, folder, flags,
                                     model)
        results = {name: job.result() for name, job in sorted(jobs.items())}

    return report(results, expected, unsupported, ops_of=ops_of)


if __name__ == '__main__':
    sys.exit(main())
