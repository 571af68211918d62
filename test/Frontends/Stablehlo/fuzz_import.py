#!/usr/bin/env python3
"""Malformed StableHLO never crashes trainc.

Mutates valid StableHLO files (the JAX-generated op tests of
../shared/data/stablehlo/testdata_selected and a GPT exported by
tools/jax_export.py, made here) in the places a corrupt or hand-edited file
goes wrong: numbers inside dimension lists, shapes and attributes replaced
by others (negative, zero, out of range, huge), random bytes flipped, the
text truncated. Each mutant is compiled through recognition
(`trainc X --compile-to=recognize`); trainc must exit 0 (the mutant is
still valid) or 1 with an error message, never die of a signal, exit with
another code or hang. Deterministic (--seed). Prints the counts and each
crash with its command; exits 1 on any crash.
"""
import argparse
import glob
import os
import random
import re
import subprocess
import sys
import tempfile

TIMEOUT_S = 60
NUMBER_RE = re.compile(r'(?<=[\[ :,<])-?\d+(?=[\],>:x ])')
REPLACEMENTS = [-1, 0, 1, 2, 3, 7, 100, 2 ** 31, 2 ** 62]


def mutate(text, rng):
    kind = rng.random()
    if kind < 0.6:
        for _ in range(rng.randint(1, 3)):
            numbers = list(NUMBER_RE.finditer(text))
            if not numbers:
                break
            m = rng.choice(numbers)
            text = text[:m.start()] + str(rng.choice(REPLACEMENTS)) + text[m.end():]
        return text
    if kind < 0.85:
        data = bytearray(text.encode())
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.choice(b'%0123456789[](){}<>:,=x"-. #@')
        return data.decode(errors='replace')
    return text[:rng.randrange(len(text))]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--trainc', required=True, help='the trainc binary')
    parser.add_argument('--data-dir', required=True, help='../shared/data/stablehlo')
    parser.add_argument('--cases', type=int, default=400, help='mutants to try (default 400)')
    parser.add_argument('--seed', type=int, default=1, help='random seed (default 1)')
    args = parser.parse_args()

    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                        os.pardir, os.pardir)
    sys.path.insert(0, os.path.join(repo, 'tools'))
    sys.path.insert(0, os.path.join(repo, 'test', 'Models'))
    import jax
    import jax_export
    import jax_models

    rng = random.Random(args.seed)
    crashes = ok = refused = 0
    with tempfile.TemporaryDirectory(prefix='stablehlo-fuzz-') as tmp:
        model = jax_models.GPT()
        params = model.init_params(jax.random.key(0))
        batch = model.example_batch(jax.random.key(1))
        prefix = os.path.join(tmp, 'gpt')
        jax_export.export(model.loss_fn, params, batch, prefix)
        sources = [(prefix + '.mlir', prefix + '.safetensors')]
        sources += [(f, None) for f in sorted(glob.glob(
            os.path.join(args.data_dir, 'testdata_selected', '*.mlir')))]
        texts = {path: open(path).read() for path, _ in sources}
        for i in range(args.cases):
            path, params_file = rng.choice(sources)
            mutant = os.path.join(tmp, f'case{i}.mlir')
            with open(mutant, 'w') as f:
                f.write(mutate(texts[path], rng))
            command = [args.trainc, mutant, '--compile-to=recognize']
            if params_file:
                command += ['--params', params_file]
            try:
                proc = subprocess.run(command, capture_output=True, text=True,
                                      timeout=TIMEOUT_S)
                code = proc.returncode
            except subprocess.TimeoutExpired:
                code, proc = 'timeout', None
            if code == 0:
                ok += 1
            elif code == 1 and proc.stderr.strip():
                refused += 1
            else:
                crashes += 1
                tail = proc.stderr.strip().splitlines()[:2] if proc else []
                print(f'CRASH ({code}) on a mutant of {os.path.basename(path)}: '
                      f'{" | ".join(tail)}')
                os.replace(mutant, f'stablehlo-fuzz-crash-{i}.mlir')
                print(f'  kept as stablehlo-fuzz-crash-{i}.mlir')
    print(f'{args.cases} mutants: {ok} still valid, {refused} refused with an '
          f'error, {crashes} crashes')
    return 1 if crashes else 0


if __name__ == '__main__':
    sys.exit(main())
