"""Helpers shared by the ONNX op tests (activations, reductions, einsum,
eyelike): compile a model with trainc, run it with trainc-run on numpy
inputs, and check that bad models are refused with a message naming
them. trainc and trainc-run are found on PATH (lit puts the build's bin
directory there)."""
import os
import subprocess
import sys

import numpy as np
import onnx


def run(cmd):
    """Runs `cmd`; exits the test with its stderr if it fails."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return r


def compile_and_run(work, model_path, feeds, trainc_args=(), out=None):
    """trainc model_path [trainc_args] -o model.tcx; trainc-run on `feeds`
    (name -> array, saved as .npy under `work`). Returns the output
    directory (model_path + '.out' unless `out` names one)."""
    tcx = model_path + '.tcx'
    run(['trainc', model_path, '-o', tcx, *trainc_args])
    args = []
    for name, value in feeds.items():
        path = os.path.join(work, f'{name}.npy')
        np.save(path, value)
        args += ['--input', f'{name}={path}']
    out = out or model_path + '.out'
    run(['trainc-run', tcx, *args, '--output-dir', out])
    return out


def expect_rejections(work, cases, opset):
    """Each (name, graph, message) case, saved as `name`.onnx at `opset`,
    must make trainc exit 1 with `message` and the file's name in its
    stderr. Prints one line per case; returns whether all were refused."""
    ok = True
    for name, graph, message in cases:
        path = os.path.join(work, name + '.onnx')
        onnx.save(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid('', opset)]),
                  path)
        r = subprocess.run(['trainc', path, '-o', path + '.tcx'], capture_output=True, text=True)
        good = r.returncode == 1 and message in r.stderr and name + '.onnx' in r.stderr
        print(f'{name}: exit {r.returncode}, '
              f'{"names the problem" if good else repr(r.stderr.strip())} {"ok" if good else "FAIL"}')
        ok &= good
    return ok


class WeightedLoss:
    """loss = sum over terms of sum(y * c), c a graph input per term (fed,
    so it is data, not a parameter): the gradient of each parameter w
    feeding y is c * dy/dw. Collects the nodes, inputs and feeds."""

    def __init__(self):
        self.nodes, self.inputs, self.feeds, self.terms = [], [], {}, []

    def add(self, y, c):
        """Adds sum(y * c) for the output `y` and the float32 array `c` of
        y's shape."""
        tag = f'c_{y}'
        self.inputs.append(onnx.helper.make_tensor_value_info(
            tag, onnx.TensorProto.FLOAT, list(c.shape)))
        self.feeds[tag] = c
        self.nodes.append(onnx.helper.make_node('Mul', [y, tag], [f'p_{y}']))
        self.nodes.append(onnx.helper.make_node('ReduceSum', [f'p_{y}'], [f's_{y}'], keepdims=0))
        self.terms.append(f's_{y}')

    def gradients(self, work, nodes, params, opset, name='grads'):
        """Saves `nodes` (which compute the terms' ys from `params`, the
        trainable initializers) with the loss as name.onnx, compiles it with
        --train --optimizer none and runs it: the output directory, holding
        <param>.grad.npy."""
        graph = onnx.helper.make_graph(
            [*nodes, *self.nodes, onnx.helper.make_node('Sum', self.terms, ['loss'])], name,
            self.inputs, [onnx.helper.make_tensor_value_info('loss', onnx.TensorProto.FLOAT, [])],
            params)
        path = os.path.join(work, name + '.onnx')
        onnx.save(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid('', opset)]),
                  path)
        return compile_and_run(work, path, self.feeds, ['--train', '--optimizer', 'none'])


def run_checks(*checks):
    """A test's main: runs every check(work) on the directory sys.argv[1]
    (all of them, also after a failure, so the output shows each) and
    exits 1 if any failed."""
    work = sys.argv[1]
    results = [check(work) for check in checks]
    sys.exit(0 if all(results) else 1)
