#!/usr/bin/env python3
"""StableHLO's own tests through trainc's importer and the CPU runtime.

Two suites of ../shared/data/stablehlo (see its README):
  interpret/           hand-written op tests: files split at `// -----` into
                       cases, each a function of constants whose results
                       are checked by `check.expect_*` ops;
  testdata_selected/   JAX-generated tests: @main calls @inputs() and
                       @expected() and checks with
                       `stablehlo.custom_call @check.expect_*`.

Each case is written to its own file and run as a user would:

    trainc case.mlir -o case.tcx
    trainc-run case.tcx --output-dir OUT

The importer turns check i into the outputs check<i>_<kind>_actual and
check<i>_<kind>_expected (kind: eq, almost_eq, close); they are compared
here:

  eq         exactly (NaN equals NaN; -0 equals +0 as in IEEE ==);
  almost_eq  |actual - expected| <= 1e-4 + 1e-4 * |expected|: the
             interpreter's check.expect_almost_eq tolerance (1e-4), made
             relative as well for large magnitudes; a check's own
             `tolerance` replaces it (absolute);
  close      |actual - expected| <= atol + rtol * |expected|, with (rtol,
             atol) = (1e-5, 1e-6) for f32/f64 (trainc's ONNX conformance
             bound) and 2 units in the last place for f16 (2^-10) and
             bf16 (2^-7): JAX computed these in the 16-bit type, trainc
             computes in f32 and rounds once, so they may differ by the
             16-bit type's rounding; a check's own `max_ulp_difference`
             replaces it.

A case is *claimed* when every stablehlo/chlo op it uses is listed by
`trainc --list-stablehlo-ops`, every tensor element type is one trainc
lists, and it has no check trainc does not run (expect_serialized_eq
probes). Unclaimed cases are counted, not run. Claimed cases are

  pass   compiled, ran and every check matched;
  fail   trainc or trainc-run exited with 1..127, or a check differed;
  crash  a tool was killed by a signal, exited >= 128 or timed out.

Prints `N passed, M failed, K unsupported`, every failure with its reason
(the tool's first error line, or the first differing element), and the pass
rate of claimed cases. Exits 1 on any crash, on a failure not listed in
--expected-failures (lines `<suite>/<file>:<case> | <substring> | <why>`,
the substring must occur in the reason; a listed case that passes is
stale and fails too), or when fewer than 95% of claimed cases pass.
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import numpy as np

TIMEOUT_S = 120
MIN_PASS_RATE = 0.95
CLOSE_TOLERANCES = {
    'float64': (1e-5, 1e-6),
    'float32': (1e-5, 1e-6),
    'float16': (2.0 ** -10 * 2, 1e-6),
    'bfloat16': (2.0 ** -7 * 2, 1e-6),
}
ALMOST_EQ = (1e-4, 1e-4)
# Op names, not dialect attributes or types (#stablehlo.gather<...>).
OP_RE = re.compile(r'(?<![#!\w.])((?:stablehlo|chlo|interpreter)\.[a-z_0-9]+)\b')
CHECK_RE = re.compile(r'\bcheck\.([a-z_]+)')
TYPE_RE = re.compile(r'tensor<(?:[0-9?]+x)*([a-z][a-zA-Z0-9]*)')
FLOAT_TYPES = {'f64', 'f32', 'f16', 'bf16'}
RUN_CHECKS = {'expect_eq', 'expect_eq_const', 'expect_almost_eq',
              'expect_almost_eq_const', 'expect_close'}


def split_cases(path):
    """Yields (case name, text) for each case of a test file."""
    with open(path) as f:
        text = f.read()
    parts = text.split('\n// -----\n')
    base = os.path.basename(path)
    for i, part in enumerate(parts):
        # A part holding several public test functions and no @main (a
        # separator commented out, as `// // -----` in triangular_solve.mlir)
        # is one case per function, as the interpreter runs each.
        starts = [m for m in re.finditer(r'^func\.func\s+(?:public\s+)?@([\w.$-]+)', part, re.M)]
        if len(starts) > 1 and 'main' not in [m.group(1) for m in starts]:
            for m, end in zip(starts, [n.start() for n in starts[1:]] + [len(part)]):
                yield f'{base}:{m.group(1)}', part[m.start():end]
            continue
        match = re.search(r'func\.func\s+(?:public\s+)?@([\w.$-]+)', part)
        name = match.group(1) if match and len(parts) > 1 else str(i)
        yield f'{base}:{name}', part


def claim(text, claimed_ops, claimed_types):
    """Returns None if trainc claims the case, else why not."""
    ops = set(OP_RE.findall(text))
    unclaimed = sorted(op for op in ops if op not in claimed_ops)
    if unclaimed:
        return 'ops ' + ', '.join(unclaimed)
    # Ops lowered for numbers, floats, i1 or integers only: the types on the
    # op's line.
    for line in text.splitlines():
        for op in set(OP_RE.findall(line)):
            allowed = claimed_ops[op]
            if allowed == 'any':
                continue
            for element in TYPE_RE.findall(line):
                if element == 'i1' and op != 'stablehlo.and' and \
                        allowed == 'floats':
                    continue  # a comparison's result
                if (allowed == 'floats' and element not in FLOAT_TYPES) or \
                        (allowed == 'numbers' and element == 'i1') or \
                        (allowed == 'integers' and
                         (element == 'i1' or element in FLOAT_TYPES)) or \
                        (allowed == 'i1' and element != 'i1'):
                    return f'{op} on {element}'
    if not CHECK_RE.search(text) and 'custom_call @check.' not in text:
        return 'nothing is checked'
    entry = re.search(r'func\.func\s+(?:public\s+)?@(\w+)\s*\(([^)]*)\)', text)
    if entry and entry.group(2).strip():
        return 'the test function takes inputs'
    for check in set(CHECK_RE.findall(text)):
        if check not in RUN_CHECKS:
            return f'check.{check}'
    for call in re.findall(r'custom_call\s*@([\w.]+)', text):
        if not call.startswith('check.'):
            return f'custom_call @{call}'
    types = sorted(set(TYPE_RE.findall(text)) - claimed_types)
    if types:
        return 'element types ' + ', '.join(types)
    if '!stablehlo.' in text or 'tuple<' in text or '!quant' in text:
        return 'tokens, tuples or quantized types'
    return None


def listing(trainc):
    """The ops (with the element types each is lowered for: any, numbers,
    floats, i1 or integers) and the element types `trainc --list-stablehlo-ops`
    claims."""
    out = subprocess.run([trainc, '--list-stablehlo-ops'], check=True,
                         capture_output=True, text=True).stdout
    ops, types = {}, set()
    for line in out.splitlines():
        if line.startswith('element types:'):
            types = {t.strip() for t in line.split(':', 1)[1].split(',')}
        elif line and not line.startswith('StableHLO op') and \
                not line.startswith('func.'):
            name, allowed = line.split()[:2]
            ops[name] = allowed
    if not ops or not types:
        raise RuntimeError('trainc --list-stablehlo-ops printed no ops or '
                           'no element types')
    return ops, types


def run_tool(command):
    """Returns (status, first error line): status ok, fail or crash."""
    try:
        proc = subprocess.run(command, capture_output=True, text=True,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return 'crash', f'{os.path.basename(command[0])} timed out'
    if proc.returncode == 0:
        return 'ok', ''
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    first = next((l for l in lines if 'error' in l), lines[0] if lines else '')
    tool = os.path.basename(command[0])
    if proc.returncode < 0 or proc.returncode >= 128:
        sig = -proc.returncode if proc.returncode < 0 else proc.returncode - 128
        name = signal.Signals(sig).name if sig in signal.valid_signals() \
            else str(sig)
        return 'crash', f'{tool} died ({name}): {first}'
    return 'fail', first


def dtype_name(array):
    if array.dtype == np.dtype('<u2') or array.dtype.name == 'bfloat16':
        return 'bfloat16'
    return array.dtype.name


def compare(kind, got, expected):
    """None if they match, else a description of the first difference.
    `kind` is eq, almost_eq[_tol<T>] or close[_ulp<N>]: a check's own
    bound replaces the default."""
    if got.shape != expected.shape:
        return f'shape {got.shape}, expected {expected.shape}'
    if got.dtype != expected.dtype:
        return f'dtype {got.dtype}, expected {expected.dtype}'
    if got.size == 0:
        return None
    if got.dtype.kind in 'biu':
        bad = got != expected
    else:
        g = got.astype(np.float64)
        e = expected.astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(e)
        if kind == 'eq':
            bad = ~((g == e) | both_nan)
        else:
            bound = re.fullmatch(r'(almost_eq|close)(?:_tol(.+)|_ulp(\d+))?',
                                 kind)
            if bound.group(2):
                rtol, atol = 0.0, float(bound.group(2))
            elif bound.group(3):
                # N units in the last place of the expected value.
                spacing = np.abs(np.spacing(expected)).astype(np.float64)
                rtol, atol = 0.0, int(bound.group(3)) * spacing
            elif bound.group(1) == 'almost_eq':
                rtol, atol = ALMOST_EQ
            else:
                rtol, atol = CLOSE_TOLERANCES[got.dtype.name]
            same_inf = np.isinf(e) & (g == e)
            with np.errstate(invalid='ignore'):
                near = np.abs(g - e) <= atol + rtol * np.abs(e)
            bad = ~(near | both_nan | same_inf)
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f'{kind} mismatch at {list(index)}: got {got[index]!r}, '
            f'expected {expected[index]!r} ({int(bad.sum())} of {bad.size})')


def load(path):
    array = np.load(path)
    return array


def run_case(trainc, trainc_run, text, work):
    """Returns (status, reason): pass, fail or crash."""
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, 'case.mlir')
    exe = os.path.join(work, 'case.tcx')
    out = os.path.join(work, 'out')
    with open(model, 'w') as f:
        f.write(text)
    status, reason = run_tool([trainc, model, '-o', exe])
    if status != 'ok':
        return status, 'trainc: ' + reason
    status, reason = run_tool([trainc_run, exe, '--output-dir', out])
    if status != 'ok':
        return status, 'trainc-run: ' + reason
    checks = sorted(f[:-len('_actual.npy')] for f in os.listdir(out)
                    if re.fullmatch(r'check\d+_.+_actual\.npy', f))
    if not checks:
        return 'fail', 'no check outputs'
    for check in checks:
        kind = re.fullmatch(r'check\d+_(.+)', check).group(1)
        got = load(os.path.join(out, check + '_actual.npy'))
        expected = load(os.path.join(out, check + '_expected.npy'))
        problem = compare(kind, got, expected)
        if problem:
            return 'fail', f'{check}: {problem}'
    return 'pass', ''


def read_expected_failures(path):
    expected = {}
    if not path:
        return expected
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            parts = [p.strip() for p in line.split('|')]
            if len(parts) != 3:
                raise ValueError(f'{path}: bad line: {line}')
            expected[parts[0]] = parts[1]
    return expected


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--trainc', required=True, help='the trainc binary')
    parser.add_argument('--trainc-run', required=True,
                        help='the trainc-run binary')
    parser.add_argument('--data-dir', required=True,
                        help='../shared/data/stablehlo')
    parser.add_argument('--expected-failures',
                        help='known failures of claimed cases (see above)')
    parser.add_argument('--suites', nargs='*',
                        default=['interpret', 'testdata_selected'],
                        help='which directories of --data-dir to run')
    parser.add_argument('--filter', default='',
                        help='only cases whose name contains this')
    parser.add_argument('--jobs', type=int, default=os.cpu_count() or 2,
                        help='cases run in parallel (default: CPU count)')
    parser.add_argument('--verbose', action='store_true',
                        help='also list unsupported cases with the reason')
    args = parser.parse_args()

    claimed_ops, claimed_types = listing(args.trainc)
    expected_failures = read_expected_failures(args.expected_failures)
    cases, unsupported = [], []
    for suite in args.suites:
        directory = os.path.join(args.data_dir, suite)
        if not os.path.isdir(directory):
            print(f'missing suite directory {directory}', file=sys.stderr)
            return 1
        for root, _, files in sorted(os.walk(directory)):
            for name in sorted(files):
                if not name.endswith('.mlir'):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, directory)
                for case, text in split_cases(path):
                    case = f'{suite}/{os.path.dirname(rel)}/{case}'.replace(
                        '//', '/') if os.path.dirname(rel) else f'{suite}/{case}'
                    if args.filter not in case:
                        continue
                    why = claim(text, claimed_ops, claimed_types)
                    if why:
                        unsupported.append((case, why))
                    else:
                        cases.append((case, text))

    results = {}
    with tempfile.TemporaryDirectory(prefix='stablehlo-interpret-') as tmp:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = {
                pool.submit(run_case, args.trainc, args.trainc_run, text,
                            os.path.join(tmp, str(i))): case
                for i, (case, text) in enumerate(cases)}
            for future in concurrent.futures.as_completed(futures):
                results[futures[future]] = future.result()
        shutil.rmtree(tmp, ignore_errors=True)

    passed = [c for c, (s, _) in results.items() if s == 'pass']
    failed = sorted((c, s, r) for c, (s, r) in results.items() if s != 'pass')
    print(f'{len(passed)} passed, {len(failed)} failed, '
          f'{len(unsupported)} unsupported')
    unexpected = []
    for case, status, reason in failed:
        listed = expected_failures.get(case)
        mark = 'expected' if listed is not None and listed in reason and \
            status != 'crash' else 'UNEXPECTED'
        print(f'  {status.upper()} {case}: {reason} [{mark}]')
        if mark == 'UNEXPECTED':
            unexpected.append(case)
    for case in sorted(expected_failures):
        if results.get(case, ('', ''))[0] == 'pass':
            print(f'  STALE expected failure (passes now): {case}')
            unexpected.append(case)
        elif case not in results and not args.filter:
            print(f'  STALE expected failure (not run): {case}')
            unexpected.append(case)
    if args.verbose:
        for case, why in sorted(unsupported):
            print(f'  unsupported {case}: {why}')
    rate = len(passed) / len(results) if results else 0.0
    print(f'claimed cases passing: {len(passed)}/{len(results)} '
          f'({100 * rate:.1f}%, at least {100 * MIN_PASS_RATE:.0f}% needed)')
    if unexpected or rate < MIN_PASS_RATE:
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
