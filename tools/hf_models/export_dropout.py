#!/usr/bin/env python3
"""Export Hugging Face models with dropout, in training mode, to ONNX.

    /tmp/oracle/bin/python tools/hf_models/export_dropout.py test/Models/hf_dropout

The suite of export.py has every dropout probability 0, so that PyTorch's
references compute trainc's function. These are GPT-2, Llama (grouped
query heads: 4 query heads on 2 key/value heads) and T5 (dropout also
between the MLP's activation and its down projection) from models.py's
tiny configs with every dropout probability 0.1 and eager attention (the
"sdpa" attention's dropout is lost by both exporters: frontends/README.md),
for
the tests that compare trainc with itself where the masks matter: one
device against tensor-parallel ranks (test/Runtime/tensor_parallel.py).
gpt2_sdpa is GPT-2 with Hugging Face's default "sdpa" attention, whose
dropout both exporters write without training_mode
(test/Frontends/Onnx/sdpa_dropout.test). No PyTorch reference is
written; PyTorch's masks come from its own generator.

Writes OUT/<model>/ts17.onnx (the TorchScript exporter, opset 17,
training mode), dynamo.onnx (the dynamo exporter; node metadata dropped)
and <input>.npy, the batch of models.py's case.

Needs torch, transformers and onnx (tools/hf_models/requirements.txt); CI
never runs it, the tests read the committed files.
"""
import os
import sys

import numpy as np
import torch
import transformers as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402
import models  # noqa: E402

RATIO = 0.1


def _gpt2(attention='eager'):
    return tf.GPT2LMHeadModel(tf.GPT2Config(
        vocab_size=models.VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=4,
        resid_pdrop=RATIO, embd_pdrop=RATIO, attn_pdrop=RATIO,
        attn_implementation=attention))


def _llama():
    config = dict(models._decoder(), attention_dropout=RATIO)
    return tf.LlamaForCausalLM(tf.LlamaConfig(
        **config, num_key_value_heads=2, attn_implementation='eager'))


def _t5():
    """models.py's T5, dropout_rate 0.1."""
    return tf.T5ForConditionalGeneration(tf.T5Config(
        vocab_size=models.VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2,
        num_decoder_layers=2, num_heads=4, dropout_rate=RATIO,
        relative_attention_num_buckets=8, relative_attention_max_distance=16,
        decoder_start_token_id=0, pad_token_id=0, attn_implementation='eager'))


CASES = [
    models.ModelCase('gpt2', _gpt2, models._LM, models._causal_lm_batch, ()),
    models.ModelCase('llama', _llama, models._LM, models._causal_lm_batch, ()),
    models.ModelCase('t5', _t5, models._LM, models._seq2seq_batch, ()),
    # Hugging Face's default attention: both exporters write its dropout_p
    # as Dropout nodes without training_mode (trainc --train-modeless-dropout).
    models.ModelCase('gpt2_sdpa', lambda: _gpt2('sdpa'), models._LM,
                     models._causal_lm_batch, ()),
]


def main():
    root = export.output_directory(__doc__, 'test/Models/hf_dropout')
    for case in CASES:
        out = os.path.join(root, case.name)
        os.makedirs(out, exist_ok=True)
        batch = case.make_batch(torch.Generator().manual_seed(1))
        for name in case.inputs:
            np.save(os.path.join(out, f'{name}.npy'), batch[name].numpy())
        for exporter in ('ts17', 'dynamo'):
            info = export.export(case, batch, exporter,
                                 os.path.join(out, f'{exporter}.onnx'))
            print(case.name, exporter, info)


if __name__ == '__main__':
    main()
