"""ONNX Einsum (EinsumOp.cpp) against onnxruntime, its gradients against
central differences of ONNX's reference evaluator in float64, and the
equations trainc refuses.

    einsum.test.py DIR   writes, compiles, runs and checks under DIR;
                         exits 1 on any failure.

Forward: one model (float32, opset 18) with one node per equation below:
matrix and batched products, attention's two products, an outer product,
transposes, sums over one or all labels, a label summed out of one
operand before the product, three operands, the ellipsis, the implicit
output (no '->'), and size-1 dimensions that broadcast. Each output must match onnxruntime's in shape
and within RTOL relative to the output's largest magnitude (float32 sums
of at most 48 terms in another order).

Gradients: loss = sum(c * einsum(w...)) over trainable inputs, every
input's gradient against central differences (step 1e-3, float64; einsum
is multilinear, so they are exact up to rounding), within GRAD_TOL (1e-6)
of the gradient's largest magnitude: float32 sums of at most 30 products
(measured worst 2.6e-7).
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from op_harness import WeightedLoss, compile_and_run, expect_rejections

RTOL = 1e-6
GRAD_TOL = 1e-6
OPSET = 18
F32 = TensorProto.FLOAT
RNG = np.random.default_rng(21)
# equation: operand shapes
CASES = {
    'ij,jk->ik': [(3, 4), (4, 5)],
    'bij,bjk->bik': [(2, 3, 4), (2, 4, 5)],
    'bhqd,bhkd->bhqk': [(2, 3, 4, 6), (2, 3, 5, 6)],
    'bhqk,bhkd->bhqd': [(2, 3, 4, 5), (2, 3, 5, 6)],
    'i,j->ij': [(4,), (5,)],
    'ij->ji': [(3, 4)],
    'ijk->kij': [(2, 3, 4)],
    'ij->i': [(3, 4)],
    'ijk->': [(2, 3, 4)],
    'ij,ij->': [(3, 4), (3, 4)],
    'i,i->i': [(5,)] * 2,
    'ab,b->a': [(3, 4), (4,)],
    'ab,cb->ca': [(3, 4), (5, 4)],
    'abc,cd->abd': [(2, 3, 4), (4, 5)],
    'ab,bc->a': [(3, 4), (4, 5)],
    'bn,anm,bm->ba': [(2, 3), (4, 3, 5), (2, 5)],
    '...ij,...jk->...ik': [(2, 3, 4, 5), (2, 3, 5, 6)],
    '...ij->...ji': [(2, 3, 4)],
    'ij,jk': [(3, 4), (4, 5)],
    'ba,ca': [(3, 4), (5, 4)],
    ' b i j , b j k -> b k i ': [(2, 3, 4), (2, 4, 5)],
    'ij,j->i': [(3, 4), (1,)],
    'bij,bjk->bik ': [(1, 3, 4), (2, 4, 5)],
}


def model_of(cases, inputs_as_params=False):
    nodes, inputs, outputs, params, data = [], [], [], [], {}
    for i, (eq, shapes) in enumerate(cases.items()):
        names = []
        for j, shape in enumerate(shapes):
            name = f'x{i}_{j}'
            value = RNG.normal(0, 1, shape).astype(np.float32)
            if inputs_as_params:
                params.append(numpy_helper.from_array(value, name))
            else:
                inputs.append(helper.make_tensor_value_info(name, F32, list(shape)))
            data[name] = value
            names.append(name)
        nodes.append(helper.make_node('Einsum', names, [f'y{i}'], equation=eq))
        outputs.append(helper.make_tensor_value_info(f'y{i}', F32, None))
    return nodes, inputs, outputs, params, data


def forward(work):
    nodes, inputs, outputs, _, feeds = model_of(CASES)
    model = helper.make_model(helper.make_graph(nodes, 'einsum', inputs, outputs),
                              opset_imports=[helper.make_opsetid('', OPSET)])
    path = os.path.join(work, 'forward.onnx')
    onnx.save(model, path)
    out = compile_and_run(work, path, feeds)
    options = ort.SessionOptions()
    options.log_severity_level = 3  # its shape inference does not broadcast size 1
    sess = ort.InferenceSession(path, options, providers=['CPUExecutionProvider'])
    names = [o.name for o in outputs]
    wants = dict(zip(names, sess.run(names, feeds)))
    ok = True
    for i, eq in enumerate(CASES):
        got = np.load(os.path.join(out, f'y{i}.npy'))
        want = wants[f'y{i}']
        if got.shape != want.shape:
            print(f'{eq!r}: shape {got.shape}, onnxruntime {want.shape} FAIL')
            ok = False
            continue
        err = float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))
        good = err <= RTOL
        print(f'{eq!r}: {list(want.shape)}, relative error {err:.1e} (tolerance {RTOL:g}) '
              f'{"ok" if good else "FAIL"}')
        ok &= good
    return ok


def gradients(work):
    cases = {eq: CASES[eq] for eq in ('bhqd,bhkd->bhqk', 'i,j->ij', 'ab,bc->a',
                                      'bn,anm,bm->ba', '...ij,...jk->...ik', 'ijk->',
                                      'ij,j->i')}
    nodes, _, outputs, params, data = model_of(cases, inputs_as_params=True)
    loss = WeightedLoss()
    for i, eq in enumerate(cases):
        y = f'y{i}'
        ref = ReferenceEvaluator(helper.make_model(
            helper.make_graph([nodes[i]], 'one', [], [helper.make_tensor_value_info(y, F32, None)],
                              [p for p in params if p.name.startswith(f'x{i}_')]),
            opset_imports=[helper.make_opsetid('', OPSET)]))
        shape = ref.run(None, {})[0].shape
        loss.add(y, RNG.uniform(0.5, 2.0, shape).astype(np.float32))
    out = loss.gradients(work, nodes, params, OPSET)
    ok = True
    for i, (eq, shapes) in enumerate(cases.items()):
        operands = [data[f'x{i}_{j}'].astype(np.float64) for j in range(len(shapes))]
        c = loss.feeds[f'c_y{i}'].astype(np.float64)
        ins = [f'w{j}' for j in range(len(shapes))]
        g = helper.make_graph([helper.make_node('Einsum', ins, ['y'], equation=eq)], 'fd',
                              [helper.make_tensor_value_info(n, TensorProto.DOUBLE, list(s))
                               for n, s in zip(ins, shapes)],
                              [helper.make_tensor_value_info('y', TensorProto.DOUBLE, None)])
        ev = ReferenceEvaluator(helper.make_model(g, opset_imports=[helper.make_opsetid('', OPSET)]))
        objective = lambda ops: float(np.sum(c * ev.run(None, dict(zip(ins, ops)))[0]))
        for j in range(len(shapes)):
            want = np.zeros_like(operands[j])
            for idx in np.ndindex(operands[j].shape):
                plus = [o.copy() for o in operands]
                minus = [o.copy() for o in operands]
                plus[j][idx] += 1e-3
                minus[j][idx] -= 1e-3
                want[idx] = (objective(plus) - objective(minus)) / 2e-3
            got = np.load(os.path.join(out, f'x{i}_{j}.grad.npy')).astype(np.float64)
            err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
            good = err <= GRAD_TOL
            print(f'{eq!r} operand {j} gradient: worst {err:.1e} of max|grad| '
                  f'(tolerance {GRAD_TOL:g}) {"ok" if good else "FAIL"}')
            ok &= good
    return ok


def errors(work):
    cases = [
        ('ii->i', [(3, 3)], "repeats the label 'i' (a diagonal"),
        ('ij,jk->ik', [(3, 4)], "has 2 operand terms for 1 inputs"),
        ('ij->ik', [(3, 4)], "the output label 'k' is in no input term"),
        ('ij,jk->ik', [(3, 4), (5, 6)], "label 'j' has size 5 in term 1 but 4 before"),
        ('ijk->i', [(3, 4)], "term 0 'ijk' has 3 labels for a tensor of rank 2"),
        ('...ij,...jk->...ik', [(2, 3, 4), (5, 3, 4, 6)], 'the ellipsis stands for 2 dimensions'),
        ('i1,1j->ij', [(3, 4), (4, 5)], "has the character '1'"),
        ('ij->ji', [(3, 4)], "has element type 'i32'; Einsum takes f64, f32, f16 or bf16"),
        ('...i...->i', [(2, 3)], "has two ellipses"),
        ('', [(2, 3)], "attribute 'equation' is missing or empty"),
    ]
    graphs = []
    for k, (eq, shapes, message) in enumerate(cases):
        ins = [f'x{j}' for j in range(len(shapes))]
        elem = TensorProto.INT32 if 'i32' in message else F32
        graphs.append((f'bad{k}', helper.make_graph(
            [helper.make_node('Einsum', ins, ['y'], equation=eq)], f'bad{k}',
            [helper.make_tensor_value_info(n, elem, list(s)) for n, s in zip(ins, shapes)],
            [helper.make_tensor_value_info('y', F32, None)]), message))
    return expect_rejections(work, graphs, OPSET)


def main():
    work = sys.argv[1]
    ok = forward(work)
    ok &= gradients(work)
    ok &= errors(work)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
