#!/usr/bin/env python3
"""Export Hugging Face decoders trained without an attention mask to ONNX.

    /tmp/oracle/bin/python tools/hf_models/export_causal.py test/Models/hf_causal

Packed-sequence training calls a causal LM with no attention_mask: its
attention is causal alone, and each exporter writes that mask its own way.
The TorchScript exporter: an additive term select(iota_j <= iota_i, 0,
finfo.min) of iotas broadcast to [S, S] ("eager" attention), or a constant
additive term of 0 and -inf ("sdpa": scaled_dot_product_attention's
is_causal); the dynamo exporter: its own. trainc's recognizer must make
each a causal graph.attention with no mask tensor
(test/Frontends/Onnx/hf_causal.test). The sequence, 40, is past the 1,024
elements up to which a broadcast folds to a constant.

Writes OUT/<model>_<attention>_<exporter>.onnx for models.py's GPT-2 and
Llama, OUT/input_ids.npy (the batch; the labels are the inputs), and
OUT/reference.json: PyTorch's loss and gradient norm of each model in
float64 on that batch (the loss float32: Hugging Face's causal-LM loss
takes the logits to float32), against which the test checks trainc's
first step.

Needs torch, transformers, onnx, onnxscript and onnxruntime
(tools/hf_models/requirements.txt); CI never runs it, the tests read the
committed files.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402
import models  # noqa: E402

SEQ = 40
INPUTS = ('input_ids', 'labels')


def _batch(gen):
    ids = torch.randint(1, models.VOCAB, (models.BATCH, SEQ), generator=gen)
    return {'input_ids': ids, 'labels': ids}


def _with(build, attention):
    def made():
        model = build()
        model.set_attn_implementation(attention)
        return model
    return made


# (case, exporters): the cases whose masks differ between the exporters.
CASES = [
    (models.ModelCase('gpt2_eager', _with(models._gpt2, 'eager'), INPUTS, _batch, ()),
     ('ts17', 'dynamo')),
    (models.ModelCase('gpt2_sdpa', _with(models._gpt2, 'sdpa'), INPUTS, _batch, ()),
     ('ts17',)),
    (models.ModelCase('llama_eager', _with(models._llama, 'eager'), INPUTS, _batch, ()),
     ('dynamo',)),
]


def main():
    out = export.output_directory(__doc__, 'test/Models/hf_causal')
    os.makedirs(out, exist_ok=True)
    batch = _batch(torch.Generator().manual_seed(1))
    np.save(os.path.join(out, 'input_ids.npy'), batch['input_ids'].numpy())
    export.write_first_step_references(out, CASES, batch)


if __name__ == '__main__':
    main()
