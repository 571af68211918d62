"""The Hugging Face models of the export suite: tiny configs, one batch each.

Every model is built from `transformers` with a small config (random init,
no hub access) and wrapped so that its forward returns the model's own
training loss, exactly as a user would call it (`model(..., labels=...)`,
`attention_mask` given). Dropout probabilities are 0 so that PyTorch's
reference and trainc compute the same function in training mode.

Needs torch and transformers (tools/hf_models/requirements.txt).
"""
from dataclasses import dataclass
from typing import Callable

import torch
import transformers as tf

SEQ = 12
BATCH = 2
VOCAB = 64


@dataclass
class ModelCase:
    """One model of the suite: how to build it and its batch."""
    name: str
    build: Callable[[], torch.nn.Module]
    # Names of the wrapper's forward arguments, in order; they become the
    # ONNX graph's inputs.
    inputs: tuple
    make_batch: Callable[[torch.Generator], dict]
    # The composite ops trainc's recognizer must find in the imported graph.
    composites: tuple


class LossOf(torch.nn.Module):
    """forward(*inputs) -> model(**inputs).loss: the model's own loss."""

    def __init__(self, model, inputs):
        super().__init__()
        self.model = model
        self.input_names = inputs

    def forward(self, *args):
        return self.model(**dict(zip(self.input_names, args))).loss


def _padded_mask(gen):
    """Ones, except the last three positions of the second sequence."""
    mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    mask[1, SEQ - 3:] = 0
    return mask


def _causal_lm_batch(gen):
    ids = torch.randint(1, VOCAB, (BATCH, SEQ), generator=gen)
    mask = _padded_mask(gen)
    labels = ids.masked_fill(mask == 0, -100)
    return {'input_ids': ids, 'attention_mask': mask, 'labels': labels}


def _gpt_neox():
    """Pythia's architecture: attention and MLP side by side on one residual
    (parallel residual), rotary embeddings on a quarter of each head."""
    return tf.GPTNeoXForCausalLM(tf.GPTNeoXConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=64, rotary_pct=0.25,
        use_parallel_residual=True, hidden_dropout=0.0, attention_dropout=0.0))


def _gptj():
    """GPT-J: rotary on the first 4 dims of each head in interleaved pairs
    (its exports repeat the sin/cos tables with Tile), parallel residual."""
    return tf.GPTJForCausalLM(tf.GPTJConfig(
        vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=4, rotary_dim=4,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))


def _falcon():
    """Falcon (7B's layout): one key/value head for all queries, attention
    and MLP in parallel off one layer norm, no biases."""
    return tf.FalconForCausalLM(tf.FalconConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        multi_query=True, parallel_attn=True, new_decoder_architecture=False, alibi=False,
        bias=False, hidden_dropout=0.0, attention_dropout=0.0))


def _phi3():
    """Phi-3: one fused qkv_proj and one fused gate_up_proj, sliced."""
    return tf.Phi3ForCausalLM(tf.Phi3Config(
        **_decoder(), num_key_value_heads=2, resid_pdrop=0.0, embd_pdrop=0.0, pad_token_id=0))


def _qwen3():
    """Qwen3: RMSNorm on each head's queries and keys before rotary."""
    return tf.Qwen3ForCausalLM(tf.Qwen3Config(**_decoder(), num_key_value_heads=2, head_dim=8))


def _opt():
    """OPT: learned positions (offset by 2), ReLU, queries scaled before the
    product."""
    return tf.OPTForCausalLM(tf.OPTConfig(
        vocab_size=VOCAB, hidden_size=32, ffn_dim=64, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=64, word_embed_proj_dim=32,
        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, layerdrop=0.0))


def _gemma():
    """Gemma: RMSNorm scaled by (1 + weight), tanh-GELU gating, embeddings
    multiplied by sqrt(hidden_size), one key/value head."""
    return tf.GemmaForCausalLM(tf.GemmaConfig(
        **_decoder(), num_key_value_heads=1, head_dim=8))


def _masked_lm_batch(gen, token_types):
    ids = torch.randint(5, VOCAB, (BATCH, SEQ), generator=gen)
    mask = _padded_mask(gen)
    chosen = (torch.rand(BATCH, SEQ, generator=gen) < 0.3) & (mask == 1)
    chosen[0, 1] = True
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    ids = torch.where(chosen, torch.full_like(ids, 4), ids)  # 4 = [MASK]
    batch = {'input_ids': ids, 'attention_mask': mask}
    if token_types:
        types = torch.zeros(BATCH, SEQ, dtype=torch.int64)
        types[:, SEQ // 2:] = 1
        batch['token_type_ids'] = types
    batch['labels'] = labels
    return batch


def _seq2seq_batch(gen):
    ids = torch.randint(2, VOCAB, (BATCH, SEQ), generator=gen)
    mask = _padded_mask(gen)
    labels = torch.randint(2, VOCAB, (BATCH, SEQ // 2), generator=gen)
    labels[1, -2:] = -100
    return {'input_ids': ids, 'attention_mask': mask, 'labels': labels}


def _image_batch(gen):
    return {'pixel_values': torch.randn(BATCH, 3, 16, 16, generator=gen),
            'labels': torch.randint(0, 5, (BATCH,), generator=gen)}


def _speech_batch(gen):
    """Log-mel features [B, mels, 2 * max_source_positions] and labels."""
    labels = torch.randint(2, VOCAB, (BATCH, SEQ // 2), generator=gen)
    labels[1, -2:] = -100
    return {'input_features': torch.randn(BATCH, 8, 16, generator=gen), 'labels': labels}


def _decoder():
    """The decoder configs' shared fields (VOCAB read when a model is built:
    export.py --vocab changes it)."""
    return dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                num_hidden_layers=2, num_attention_heads=4,
                max_position_embeddings=64, attention_dropout=0.0)


def _gpt2():
    return tf.GPT2LMHeadModel(tf.GPT2Config(
        vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=4,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))


def _llama():
    return tf.LlamaForCausalLM(tf.LlamaConfig(**_decoder(), num_key_value_heads=4))


def _mistral():
    return tf.MistralForCausalLM(tf.MistralConfig(**_decoder(), num_key_value_heads=2))


def _qwen2():
    return tf.Qwen2ForCausalLM(tf.Qwen2Config(**_decoder(), num_key_value_heads=2))


def _bloom():
    """BLOOM: ALiBi position biases added to the scores (heads folded into
    the batch, baddbmm), no position embeddings."""
    return tf.BloomForCausalLM(tf.BloomConfig(
        vocab_size=VOCAB, hidden_size=32, n_layer=2, n_head=4,
        hidden_dropout=0.0, attention_dropout=0.0))


def _mpt():
    """MPT: ALiBi biases added to [b, h, q, k] scores, no biases in its
    linear layers."""
    return tf.MptForCausalLM(tf.MptConfig(
        vocab_size=VOCAB, d_model=32, n_layers=2, n_heads=4, max_seq_len=64,
        attn_config={'alibi': True}, resid_pdrop=0.0, emb_pdrop=0.0))


def _gpt_bigcode():
    """GPT-BigCode (StarCoder): multi-query attention, one key/value head in
    a fused projection."""
    return tf.GPTBigCodeForCausalLM(tf.GPTBigCodeConfig(
        vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=4,
        multi_query=True, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))


def _albert():
    """ALBERT: one set of layer weights shared by every layer, and a
    factorized (16-wide) embedding."""
    return tf.AlbertForMaskedLM(tf.AlbertConfig(
        vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        classifier_dropout_prob=0.0))


def _bert():
    return tf.BertForMaskedLM(tf.BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0))


def _t5():
    return tf.T5ForConditionalGeneration(tf.T5Config(
        vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2,
        num_decoder_layers=2, num_heads=4, dropout_rate=0.0,
        relative_attention_num_buckets=8, relative_attention_max_distance=16,
        decoder_start_token_id=0, pad_token_id=0))


def _bart():
    """BART: encoder-decoder with learned positions; the labels shifted into
    decoder inputs (the dynamo export writes that with ScatterND and
    ScatterElements); final_logits_bias is a buffer, not a parameter."""
    return tf.BartForConditionalGeneration(tf.BartConfig(
        vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
        decoder_ffn_dim=64, max_position_embeddings=64, dropout=0.0, attention_dropout=0.0,
        activation_dropout=0.0, pad_token_id=1, decoder_start_token_id=2))


def _roberta():
    """RoBERTa: position ids counted from the padding token's id."""
    return tf.RobertaForMaskedLM(tf.RobertaConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, pad_token_id=1))


def _vit():
    return tf.ViTForImageClassification(tf.ViTConfig(
        image_size=16, patch_size=4, num_channels=3, hidden_size=32,
        num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        num_labels=5, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))


def _whisper():
    """Whisper: a 1-D convolution stem (kernel 3, the second of stride 2)
    with GELU before a transformer encoder, sinusoidal positions frozen,
    an encoder-decoder loss on the shifted labels."""
    return tf.WhisperForConditionalGeneration(tf.WhisperConfig(
        vocab_size=VOCAB, num_mel_bins=8, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, d_model=32,
        encoder_ffn_dim=64, decoder_ffn_dim=64, max_source_positions=8,
        max_target_positions=16, dropout=0.0, attention_dropout=0.0,
        activation_dropout=0.0, decoder_start_token_id=1, pad_token_id=0,
        bos_token_id=1, eos_token_id=1, begin_suppress_tokens=None,
        suppress_tokens=None))


def _convnext():
    """ConvNeXt: a patchify stem (4x4, stride 4), depthwise 7x7
    convolutions (groups = channels, padding 3), layer norms over the
    channels of NHWC activations, 2x2 stride-2 downsampling, spatial mean
    pooling; layer scale on every block."""
    return tf.ConvNextForImageClassification(tf.ConvNextConfig(
        num_channels=3, patch_size=4, num_stages=2, hidden_sizes=[8, 16],
        depths=[1, 1], image_size=16, num_labels=5, drop_path_rate=0.0))


def _resnet():
    """ResNet: a 7x7 stride-2 stem convolution and a 3x3 stride-2 max pool,
    basic blocks of two 3x3 convolutions, a strided 1x1 projection
    shortcut; batch normalization after every convolution, trained on the
    batch's statistics while its running statistics are updated."""
    return tf.ResNetForImageClassification(tf.ResNetConfig(
        num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1],
        layer_type='basic', hidden_act='relu', num_labels=5))


def _mobilenet_v2():
    """MobileNetV2: inverted residuals (1x1 expansion, depthwise 3x3, 1x1
    projection), ReLU6 (a Clip), TensorFlow's "same" padding (tf_padding),
    a batch norm after every convolution."""
    return tf.MobileNetV2ForImageClassification(tf.MobileNetV2Config(
        num_channels=3, image_size=16, depth_multiplier=0.1, min_depth=4,
        first_layer_is_expansion=True, finegrained_output=False, num_labels=5,
        classifier_dropout_prob=0.0, semantic_loss_ignore_index=255))


def _deberta_v2():
    """DeBERTa-v2: disentangled attention over log-bucketed relative
    positions (torch.sign, clamp: ONNX Sign and Clip)."""
    return tf.DebertaV2ForMaskedLM(tf.DebertaV2Config(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        max_position_embeddings=64, relative_attention=True, position_buckets=8,
        pos_att_type=['p2c', 'c2p'], max_relative_positions=16))


def _xlnet():
    """XLNet: two-stream relative attention written with torch.einsum (ONNX
    Einsum) and an identity mask (EyeLike)."""
    return tf.XLNetLMHeadModel(tf.XLNetConfig(
        vocab_size=VOCAB, d_model=32, n_layer=2, n_head=4, d_inner=64, dropout=0.0))


def _codegen():
    """CodeGen: rotary on 4 dims of each head, fused qkv projection."""
    return tf.CodeGenForCausalLM(tf.CodeGenConfig(
        vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=64,
        n_ctx=64, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))


def _gpt_neo():
    """GPT-Neo: global and local (windowed) attention layers, unscaled
    attention scores."""
    return tf.GPTNeoForCausalLM(tf.GPTNeoConfig(
        vocab_size=VOCAB, hidden_size=32, num_layers=2, num_heads=4,
        attention_types=[[['global', 'local'], 1]], window_size=4, max_position_embeddings=64,
        embed_dropout=0.0, attention_dropout=0.0, resid_dropout=0.0))


def _electra():
    """ELECTRA's generator: a 16-wide embedding projected to the hidden
    size."""
    return tf.ElectraForMaskedLM(tf.ElectraConfig(
        vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=64, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, max_position_embeddings=64))


def _distilbert():
    return tf.DistilBertForMaskedLM(tf.DistilBertConfig(
        vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=64, dropout=0.0,
        attention_dropout=0.0, max_position_embeddings=64))


def _mobilebert():
    """MobileBERT: bottleneck layers, NoNorm (an elementwise affine in place
    of layer norm), stacked feed-forward networks."""
    return tf.MobileBertForMaskedLM(tf.MobileBertConfig(
        vocab_size=VOCAB, hidden_size=32, embedding_size=16, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=64, intra_bottleneck_size=16,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        num_feedforward_networks=2, max_position_embeddings=64))


def _gemma2():
    """Gemma2: tanh softcapping of attention logits (50) and of the final
    logits (30), sliding-window (4) and global layers alternating, pre and
    post norms, query_pre_attn_scalar. Eager attention (sdpa has no
    softcap)."""
    return tf.Gemma2ForCausalLM(tf.Gemma2Config(
        **_decoder(), num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8,
        sliding_window=4, layer_types=['sliding_attention', 'full_attention'],
        attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
        attn_implementation='eager'))

def _gemma3_text():
    """Gemma3 text: RMSNorm on queries and keys, local (sliding 4, rope base
    10k) and global layers (rope base 1M)."""
    return tf.Gemma3ForCausalLM(tf.Gemma3TextConfig(
        **_decoder(), num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8,
        sliding_window=4, layer_types=['sliding_attention', 'full_attention']))

def _olmo2():
    """OLMo2: RMSNorm over the whole q and k projections, norms after the
    sublayers (post-norm inside the residual)."""
    return tf.Olmo2ForCausalLM(tf.Olmo2Config(**_decoder(), num_key_value_heads=2))

def _smollm3():
    """SmolLM3: NoPE on one layer of two (no_rope_layers), GQA."""
    return tf.SmolLM3ForCausalLM(tf.SmolLM3Config(
        **_decoder(), num_key_value_heads=2, no_rope_layers=[1, 0],
        pad_token_id=0, bos_token_id=1, eos_token_id=2))

def _cohere():
    """Cohere (Command-R): bias-free LayerNorm, parallel attention and MLP,
    interleaved rotary (repeat_interleave), logit_scale."""
    return tf.CohereForCausalLM(tf.CohereConfig(
        **_decoder(), num_key_value_heads=2, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))

def _phi():
    """Phi (phi-2): parallel attention and MLP off one LayerNorm, gelu_new,
    rotary on half of each head, dense output projection."""
    return tf.PhiForCausalLM(tf.PhiConfig(
        **_decoder(), partial_rotary_factor=0.5, resid_pdrop=0.0, embd_pdrop=0.0,
        bos_token_id=1, eos_token_id=2))

def _granite():
    """Granite: embedding, residual, attention and logits multipliers."""
    return tf.GraniteForCausalLM(tf.GraniteConfig(
        **_decoder(), num_key_value_heads=2, embedding_multiplier=12.0,
        logits_scaling=8.0, residual_multiplier=0.22, attention_multiplier=0.125,
        pad_token_id=0, bos_token_id=1, eos_token_id=2))

def _mixtral_bmm():
    """Mixtral with transformers' batched_mm experts: each token's top-k
    experts' weights gathered per token (static shapes) and bmm'd."""
    return tf.MixtralForCausalLM(tf.MixtralConfig(
        **_decoder(), num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
        router_aux_loss_coef=0.0, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        experts_implementation='batched_mm'))

def _mamba():
    """Mamba: selective scan unrolled over the sequence (the recurrent
    path), depthwise causal Conv1d, softplus."""
    return tf.MambaForCausalLM(tf.MambaConfig(
        vocab_size=VOCAB, hidden_size=32, state_size=8, num_hidden_layers=2, expand=2,
        conv_kernel=4, time_step_rank=4, use_mambapy=False, use_associative_scan=False,
        pad_token_id=0, bos_token_id=1, eos_token_id=2))

def _modernbert():
    """ModernBERT: bias-free LayerNorms, GeGLU, rotary, alternating global
    and local (window 4) attention, unpadded path off (eager/sdpa)."""
    return tf.ModernBertForMaskedLM(tf.ModernBertConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=64, local_attention=4,
        layer_types=['full_attention', 'sliding_attention'],
        pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2,
        embedding_dropout=0.0, mlp_dropout=0.0, attention_dropout=0.0,
        classifier_dropout=0.0))

def _seq2seq_cfg():
    return dict(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
                encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                decoder_ffn_dim=64, max_position_embeddings=64, dropout=0.0,
                attention_dropout=0.0, activation_dropout=0.0)

def _funnel():
    """Funnel Transformer: mean pooling of the sequence between blocks,
    relative-shift attention (not recognized as attention), an upsampling
    decoder; scores masked with -1e6, so its key biases' gradients (zero in
    exact arithmetic) are round-off even in float64."""
    return tf.FunnelForMaskedLM(tf.FunnelConfig(
        vocab_size=VOCAB, block_sizes=[1, 1], num_decoder_layers=1, d_model=32, n_head=4,
        d_head=8, d_inner=64, hidden_dropout=0.0, attention_dropout=0.0,
        activation_dropout=0.0, initializer_range=0.02))


def _marian():
    """MarianMT: sinusoidal positions (frozen), post-norm, swish."""
    return tf.MarianMTModel(tf.MarianConfig(
        **_seq2seq_cfg(), decoder_vocab_size=VOCAB, pad_token_id=1,
        decoder_start_token_id=1, eos_token_id=0, forced_eos_token_id=0))

def _swin():
    """Swin: shifted windows (roll), relative position bias table gathered,
    patch merging (strided slices, concat)."""
    return tf.SwinForImageClassification(tf.SwinConfig(
        image_size=16, patch_size=2, num_channels=3, embed_dim=16, depths=[1, 1],
        num_heads=[2, 4], window_size=2, mlp_ratio=2.0, num_labels=5,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, drop_path_rate=0.0))

def _dinov2():
    """DINOv2: layer scale, CLS and mean-patch-token concatenated head; the
    TorchScript exporter traces the position embeddings' bicubic
    interpolation (ONNX Resize, cubic) and its size from Pow(16, 0.5)."""
    return tf.Dinov2ForImageClassification(tf.Dinov2Config(
        image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, mlp_ratio=2, num_labels=5, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, drop_path_rate=0.0))

class _ReturnLoss(torch.nn.Module):
    """model(..., return_loss=True): CLIP's contrastive loss."""

    def __init__(self, model):
        super().__init__()
        self.inner = model

    def forward(self, **kw):
        return self.inner(**kw, return_loss=True)

def _clip():
    """CLIP (text and vision towers): the symmetric contrastive loss of the
    batch's image-text logits (logit_scale exp'd), text pooled at the EOS
    position (argmax of input_ids == eos)."""
    return _ReturnLoss(tf.CLIPModel(tf.CLIPConfig(
        text_config=dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4,
                         max_position_embeddings=64, eos_token_id=2, bos_token_id=1,
                         pad_token_id=0),
        vision_config=dict(image_size=16, patch_size=4, hidden_size=32, intermediate_size=64,
                           num_hidden_layers=2, num_attention_heads=4),
        projection_dim=16)))

def _clip_batch(gen):
    ids = torch.randint(3, VOCAB, (BATCH, SEQ), generator=gen)
    mask = _padded_mask(gen)
    ids[0, SEQ - 1] = 2
    ids[1, SEQ - 4] = 2
    ids = ids.masked_fill(mask == 0, 0)
    return {'input_ids': ids, 'attention_mask': mask,
            'pixel_values': torch.randn(BATCH, 3, 16, 16, generator=gen)}


_RMS = ('rms_norm', 'attention', 'softmax_cross_entropy')
_LNA = ('layer_norm', 'attention', 'softmax_cross_entropy')
_LNGA = ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')
_IMG = ('pixel_values', 'labels')
_LM = ('input_ids', 'attention_mask', 'labels')
CASES = [
    ModelCase('gpt2', _gpt2, _LM, _causal_lm_batch,
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('llama', _llama, _LM, _causal_lm_batch,
              ('rms_norm', 'attention', 'softmax_cross_entropy')),
    ModelCase('mistral', _mistral, _LM, _causal_lm_batch,
              ('rms_norm', 'attention', 'softmax_cross_entropy')),
    ModelCase('qwen2', _qwen2, _LM, _causal_lm_batch,
              ('rms_norm', 'attention', 'softmax_cross_entropy')),
    ModelCase('gpt_neox', _gpt_neox, _LM, _causal_lm_batch,
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('gptj', _gptj, _LM, _causal_lm_batch,
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('falcon', _falcon, _LM, _causal_lm_batch,
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('phi3', _phi3, _LM, _causal_lm_batch,
              ('rms_norm', 'attention', 'softmax_cross_entropy')),
    ModelCase('qwen3', _qwen3, _LM, _causal_lm_batch,
              ('rms_norm', 'attention', 'softmax_cross_entropy')),
    ModelCase('opt', _opt, _LM, _causal_lm_batch,
              ('layer_norm', 'attention', 'softmax_cross_entropy')),
    ModelCase('gemma', _gemma, _LM, _causal_lm_batch,
              ('rms_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('bloom', _bloom, _LM, _causal_lm_batch,
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('mpt', _mpt, _LM, _causal_lm_batch,
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('gpt_bigcode', _gpt_bigcode, _LM, _causal_lm_batch,
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('albert', _albert, _LM, lambda g: _masked_lm_batch(g, False),
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('bert', _bert, ('input_ids', 'attention_mask', 'token_type_ids', 'labels'),
              lambda g: _masked_lm_batch(g, True),
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('bert_no_token_types', _bert, _LM, lambda g: _masked_lm_batch(g, False),
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('roberta', _roberta, _LM, lambda g: _masked_lm_batch(g, False),
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('bart', _bart, _LM, _seq2seq_batch,
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('t5', _t5, _LM, _seq2seq_batch,
              ('rms_norm', 'attention', 'softmax_cross_entropy')),
    ModelCase('vit', _vit, ('pixel_values', 'labels'), _image_batch,
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    # Added 2026-12-07 (transformers 5.25), each for what it brings:
    # attention softcapping (graph.attention's softcap), norms on queries
    # and keys, layers
    # without rotary, parallel blocks, interleaved rotary, scaling
    # multipliers, batched mixture-of-experts, a selective-scan SSM,
    # alternating local attention, an encoder-decoder starting from its
    # padding token (Embedding padding_idx), pooled sequences with gradients
    # that are round-off even in float64 (Funnel), shifted windows, bicubic
    # position interpolation, a contrastive loss of two towers.
    ModelCase('gemma2', _gemma2, _LM, _causal_lm_batch,
              ('rms_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('gemma3_text', _gemma3_text, _LM, _causal_lm_batch,
              ('rms_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('olmo2', _olmo2, _LM, _causal_lm_batch, _RMS),
    ModelCase('smollm3', _smollm3, _LM, _causal_lm_batch, _RMS),
    ModelCase('cohere', _cohere, _LM, _causal_lm_batch, _LNA),
    ModelCase('phi', _phi, _LM, _causal_lm_batch, _LNGA),
    ModelCase('granite', _granite, _LM, _causal_lm_batch, _RMS),
    ModelCase('mixtral_bmm', _mixtral_bmm, _LM, _causal_lm_batch, _RMS),
    ModelCase('mamba', _mamba, _LM, _causal_lm_batch, ('rms_norm', 'softmax_cross_entropy')),
    ModelCase('modernbert', _modernbert, _LM, lambda g: _masked_lm_batch(g, False), _LNGA),
    ModelCase('funnel', _funnel, _LM, lambda g: _masked_lm_batch(g, False),
              ('layer_norm', 'gelu', 'softmax_cross_entropy')),
    ModelCase('marian', _marian, _LM, _seq2seq_batch, _LNA),
    ModelCase('swin', _swin, _IMG, _image_batch, _LNGA),
    ModelCase('dinov2', _dinov2, _IMG, _image_batch, _LNGA),
    ModelCase('clip', _clip, ('input_ids', 'attention_mask', 'pixel_values'), _clip_batch, _LNA),
]

# Architectures whose exports use ops trainc gained later (Sign, Clip,
# Einsum, EyeLike, Conv, BatchNormalization), exported into
# test/Models/hf_legacy by the PyTorch and transformers that Debian ships
# (export.py --legacy-suite; its summary.json records the versions). Their composites are those trainc's
# recognizer finds in the TorchScript exports: not yet attention in
# DeBERTa-v2's (disentangled, with relative-position terms) or XLNet's
# (two-stream, written with einsum), which train unfused.
LEGACY_CASES = [
    ModelCase('deberta_v2', _deberta_v2, _LM, lambda g: _masked_lm_batch(g, False),
              ('layer_norm', 'gelu', 'softmax_cross_entropy')),
    ModelCase('xlnet', _xlnet, _LM, _causal_lm_batch,
              ('layer_norm', 'gelu', 'softmax_cross_entropy')),
    ModelCase('codegen', _codegen, _LM, _causal_lm_batch,
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('gpt_neo', _gpt_neo, _LM, _causal_lm_batch,
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('electra', _electra, _LM, lambda g: _masked_lm_batch(g, False),
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('distilbert', _distilbert, _LM, lambda g: _masked_lm_batch(g, False),
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('mobilebert', _mobilebert, _LM, lambda g: _masked_lm_batch(g, False),
              ('attention', 'softmax_cross_entropy')),
    ModelCase('whisper', _whisper, ('input_features', 'labels'), _speech_batch,
              ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy')),
    ModelCase('convnext', _convnext, ('pixel_values', 'labels'), _image_batch,
              ('layer_norm', 'gelu', 'softmax_cross_entropy')),
    ModelCase('resnet', _resnet, ('pixel_values', 'labels'), _image_batch,
              ('softmax_cross_entropy',)),
    ModelCase('mobilenet_v2', _mobilenet_v2, ('pixel_values', 'labels'), _image_batch,
              ('softmax_cross_entropy',)),
]
