#!/usr/bin/env python3
"""forge-tiny v2: train the model on conversations generated on the fly, probe copying, export GGUF.

Subcommands:
    tokenizer --out tokenizer.json [--conversations N] [--vocab V]
    train     --tokenizer tokenizer.json --dir RUN [--minutes M] [--total-minutes T] [--device cuda|cpu]
              [--size gpu|cpu] [--init weights.pt]
    export    --dir RUN --tokenizer tokenizer.json --gguf-py GGUF_PY --output model.gguf
              [--random --size test]  (random weights, no RUN: a test fixture with the real tokenizer)
    plot      --dir RUN --output loss.png

Training data never touches the disk: worker processes draw conversations from forge_gen.py
(a fresh seed per worker and run), render them with the chat template, tokenize them with
forge_tok.py, and the trainer batches conversations of similar length. The loss weighs assistant
turns 1, injected wrong turns 0, and everything else `--context-weight`.

Every `--probe-every` steps a copy probe runs on held-out generated conversations (seed 999999):
the share of copied values (tool names, ids, places, people, amounts, free text...) whose every
token the model predicts right, teacher-forced. `--min-copy A --min-copy-tokens N` stops a run
whose probe has not reached A after N tokens instead of letting it run for hours.

Checkpoints: RUN/last.pt (weights, optimizer, progress) every `--save-every` seconds and at the
end; RUN/weights.pt (bf16 weights + progress, small enough to move between machines) and
RUN/history.json (loss and probe history, the run's progress, and per invocation its arguments
and why it stopped). A run resumes from last.pt, or from --init weights.pt with a fresh optimizer.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import forge_gen  # noqa: E402
import forge_tok  # noqa: E402

SIZES = {
    # The GPU run: ~19 M parameters, 8,192 tokens of context.
    "gpu": {"dim": 384, "layers": 10, "heads": 6, "kv_heads": 6, "ffn": 1024, "context": 8192},
    # The CPU run: ~5 M parameters, 2,048 tokens.
    "cpu": {"dim": 256, "layers": 6, "heads": 4, "kv_heads": 4, "ffn": 704, "context": 2048},
    # Smoke tests.
    "test": {"dim": 64, "layers": 2, "heads": 2, "kv_heads": 2, "ffn": 128, "context": 2048},
}
ROPE_BASE = 10000.0
NORM_EPS = 1e-6
PROBE_SEED = 999_999
VALUE_KINDS = ["name", "id", "place", "person", "value", "text", "email", "amount", "date", "enum"]


# ------------------------------------------------------------------------------------- data


def _worker(queue, tokenizer_path: str, seed: int, context_weight: float, max_len: int, short: bool,
            value_weight: float = 1.0, echo: float = 0.0) -> None:
    os.nice(5)  # training comes first on a shared CPU
    tokenizer = forge_tok.Tokenizer.load(tokenizer_path)
    rng = random.Random(seed)
    import numpy

    batch = []
    while True:
        if echo > 0 and rng.random() < echo:
            conv = forge_gen.echo_conversation(rng)
        else:
            conv = forge_gen.conversation(rng, short=short)
        ids, weights, values, _ = forge_gen.encode_example(tokenizer, conv, context_weight)
        if len(ids) > max_len:
            continue
        for first, end, _ in values:
            # Copied values (tool names, argument values) weigh more: they are the few tokens
            # that need a copy circuit, drowned out by the call syntax otherwise.
            weights[first:end] = [value_weight] * (end - first)
        batch.append((numpy.asarray(ids, dtype=numpy.int32), numpy.asarray(weights, dtype=numpy.float16)))
        if len(batch) >= 16:
            queue.put(batch)
            batch = []


class Stream:
    """Conversations from worker processes, batched by similar length."""

    def __init__(self, tokenizer_path: str, seed: int, workers: int, context_weight: float, max_len: int,
                 batch_tokens: int, short: bool = False, value_weight: float = 1.0, echo: float = 0.0):
        context = mp.get_context("fork")
        self.queue = context.Queue(maxsize=64)
        self.processes = [
            context.Process(
                target=_worker,
                args=(self.queue, tokenizer_path, seed * 1000 + index, context_weight, max_len, short, value_weight,
                      echo),
                daemon=True,
            )
            for index in range(workers)
        ]
        for process in self.processes:
            process.start()
        self.pool: list = []
        self.batch_tokens = batch_tokens

    def next_batch(self):
        while len(self.pool) < 512:
            self.pool.extend(self.queue.get())
        self.pool.sort(key=lambda example: len(example[0]))
        # Take a run of similar lengths from a random place in the sorted pool.
        start = random.randrange(len(self.pool))
        chosen = []
        width = 0
        index = start
        while index < len(self.pool):
            length = len(self.pool[index][0])
            if chosen and (len(chosen) + 1) * max(width, length) > self.batch_tokens:
                break
            chosen.append(index)
            width = max(width, length)
            index += 1
        if len(chosen) * width < self.batch_tokens // 2 and start > 0:
            # Near the long end: fill backwards instead.
            index = start - 1
            while index >= 0 and (len(chosen) + 1) * width <= self.batch_tokens:
                chosen.append(index)
                index -= 1
        examples = [self.pool[i] for i in chosen]
        for i in sorted(chosen, reverse=True):
            self.pool.pop(i)
        return examples

    def close(self) -> None:
        for process in self.processes:
            process.terminate()


def probe_set(tokenizer, count: int, context_weight: float, max_len: int):
    rng = random.Random(PROBE_SEED)
    examples = []
    while len(examples) < count:
        conv = forge_gen.conversation(rng)
        ids, weights, values, _ = forge_gen.encode_example(tokenizer, conv, context_weight)
        if len(ids) <= max_len:
            examples.append((ids, weights, values))
    return examples


# ------------------------------------------------------------------------------------ model


def build_model(torch, vocab: int, config: dict):
    nn = torch.nn
    F = torch.nn.functional
    dim, heads, kv_heads = config["dim"], config["heads"], config["kv_heads"]
    head_dim = dim // heads

    class RMSNorm(nn.Module):
        def __init__(self, size: int):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(size))

        def forward(self, x):
            y = x.float()
            return (y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + NORM_EPS)).type_as(x) * self.weight

    def attention(q, k, v):
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        T = q.shape[-2]  # PyTorch < 2.0 (Debian 12's 1.13)
        mask = torch.full((T, T), float("-inf"), device=q.device).triu(1)
        return ((q @ k.transpose(-2, -1)) / math.sqrt(head_dim) + mask).softmax(-1) @ v

    def rope_tables(length: int, device):
        # llama.cpp's LLAMA rope ("normal"): rotate adjacent pairs (x[2i], x[2i+1]).
        inv = 1.0 / (ROPE_BASE ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
        angles = torch.outer(torch.arange(length, device=device).float(), inv)
        return angles.cos(), angles.sin()

    def apply_rope(x, cos, sin):
        pairs = x.float().reshape(*x.shape[:-1], head_dim // 2, 2)
        a, b = pairs[..., 0], pairs[..., 1]
        out = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1)
        return out.reshape(x.shape).type_as(x)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn_norm = RMSNorm(dim)
            self.q = nn.Linear(dim, dim, bias=False)
            self.k = nn.Linear(dim, head_dim * kv_heads, bias=False)
            self.v = nn.Linear(dim, head_dim * kv_heads, bias=False)
            self.o = nn.Linear(dim, dim, bias=False)
            self.ffn_norm = RMSNorm(dim)
            self.gate = nn.Linear(dim, config["ffn"], bias=False)
            self.up = nn.Linear(dim, config["ffn"], bias=False)
            self.down = nn.Linear(config["ffn"], dim, bias=False)

        def forward(self, x, cos, sin):
            B, T, _ = x.shape
            h = self.attn_norm(x)
            q = self.q(h).view(B, T, heads, head_dim).transpose(1, 2)
            k = self.k(h).view(B, T, kv_heads, head_dim).transpose(1, 2)
            v = self.v(h).view(B, T, kv_heads, head_dim).transpose(1, 2)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            attn = attention(q, k, v)
            x = x + self.o(attn.transpose(1, 2).reshape(B, T, dim))
            h = self.ffn_norm(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.blocks = nn.ModuleList([Block() for _ in range(config["layers"])])
            self.norm = RMSNorm(dim)
            nn.init.normal_(self.embed.weight, std=0.02)
            for block in self.blocks:
                for linear in (block.q, block.k, block.v, block.gate, block.up):
                    nn.init.normal_(linear.weight, std=0.02)
                for linear in (block.o, block.down):
                    nn.init.normal_(linear.weight, std=0.02 / math.sqrt(2 * config["layers"]))

        def forward(self, ids):
            T = ids.shape[1]
            cos, sin = rope_tables(T, ids.device)
            x = self.embed(ids)
            for block in self.blocks:
                x = block(x, cos, sin)
            return self.norm(x) @ self.embed.weight.t()  # tied output head

    return Model()


# ------------------------------------------------------------------------------------ train


def command_tokenizer(arguments) -> None:
    rng = random.Random(arguments.seed)
    started = time.time()
    texts = [forge_gen.rendered(forge_gen.conversation(rng))[0] for _ in range(arguments.conversations)]
    tokenizer = forge_tok.Tokenizer.train(texts, arguments.vocab)
    tokenizer.save(arguments.out)
    count = sum(len(tokenizer.encode(text)) for text in texts[:200])
    print(
        f"tokenizer: {len(tokenizer.tokens)} tokens, {len(tokenizer.merges)} merges from "
        f"{len(texts)} conversations in {time.time() - started:.0f}s; "
        f"{sum(len(t) for t in texts[:200]) / count:.2f} chars/token",
        flush=True,
    )


def command_train(arguments) -> None:
    import torch

    torch.manual_seed(arguments.seed)
    device = torch.device(arguments.device)
    if device.type == "cpu":
        torch.set_num_threads(arguments.threads)
    else:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    run = Path(arguments.dir)
    run.mkdir(parents=True, exist_ok=True)
    tokenizer = forge_tok.Tokenizer.load(arguments.tokenizer)
    vocab = len(tokenizer.tokens)
    config = dict(SIZES[arguments.size])
    max_len = min(arguments.max_len or config["context"], config["context"])
    resume_step = 0
    if (run / "last.pt").exists() or arguments.init:
        resume_step = int(time.time())  # a different data seed for every resumed invocation
    # Data workers are forked before CUDA is initialised in this process.
    stream = Stream(
        str(arguments.tokenizer), arguments.seed * 7919 + resume_step, arguments.workers,
        arguments.context_weight, max_len, arguments.batch_tokens, arguments.short, arguments.value_weight,
        arguments.echo,
    )
    model = build_model(torch, vocab, config).to(device)
    parameters = sum(p.numel() for p in model.parameters())
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
        lr=arguments.lr,
        betas=(0.9, 0.95),
        **({"fused": True} if device.type == "cuda" else {}),
    )
    state = {"step": 0, "tokens": 0, "seconds": 0.0, "history": [], "probes": [], "runs": []}
    checkpoint = run / "last.pt"
    if checkpoint.exists():
        saved = torch.load(checkpoint, map_location=device, weights_only=False)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        state = saved["state"]
        print(f"resumed from {checkpoint} at step {state['step']}", flush=True)
    elif arguments.init:
        saved = torch.load(arguments.init, map_location=device, weights_only=False)
        model.load_state_dict({k: v.float() for k, v in saved["model"].items()})
        state = saved["state"]
        print(f"initialised from {arguments.init} at step {state['step']} (fresh optimizer)", flush=True)
    warmup_from = state["step"]
    state["runs"].append({"started_step": state["step"], "device": str(device), "argv": sys.argv[1:]})
    print(
        f"model: {parameters / 1e6:.2f}M parameters {config}, vocab {vocab}; device {device}; "
        f"batch ~{arguments.batch_tokens} tokens; {arguments.workers} data workers",
        flush=True,
    )

    probe = probe_set(tokenizer, arguments.probe_count, arguments.context_weight,
                      min(arguments.probe_max_len, config["context"]))
    total = arguments.total_minutes * 60.0
    budget_end = state["seconds"] + arguments.minutes * 60.0

    def learning_rate() -> float:
        since = state["step"] - warmup_from
        warm = min(1.0, (since + 1) / arguments.warmup)
        decay_start = total * (1 - arguments.decay_fraction)
        if state["seconds"] <= decay_start:
            return arguments.lr * warm
        fraction = min(1.0, (state["seconds"] - decay_start) / max(total - decay_start, 1e-9))
        return arguments.lr * warm * (1 - 0.9 * fraction)

    def save() -> None:
        temporary = run / "last.pt.partial"
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "state": state,
                    "config": config, "vocab": vocab}, temporary)
        os.replace(temporary, checkpoint)
        light = run / "weights.pt.partial"
        torch.save({"model": {k: v.to(torch.bfloat16) for k, v in model.state_dict().items()},
                    "state": state, "config": config, "vocab": vocab}, light)
        os.replace(light, run / "weights.pt")
        (run / "history.json").write_text(json.dumps({"history": state["history"], "probes": state["probes"],
                                                      "runs": state["runs"], "config": config,
                                                      "parameters": parameters, "step": state["step"],
                                                      "tokens": state["tokens"], "seconds": state["seconds"]}))

    def run_probe() -> dict:
        model.eval()
        correct = {kind: 0 for kind in VALUE_KINDS}
        seen = {kind: 0 for kind in VALUE_KINDS}
        loss_sum, loss_count = 0.0, 0
        with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            for start in range(0, len(probe), 16):
                group = probe[start : start + 16]
                width = max(len(ids) for ids, _, _ in group)
                ids = torch.zeros((len(group), width), dtype=torch.long)
                weights = torch.zeros((len(group), width))
                for row, (tokens, w, _) in enumerate(group):
                    ids[row, : len(tokens)] = torch.tensor(tokens)
                    weights[row, : len(w)] = torch.tensor(w)
                ids, weights = ids.to(device), weights.to(device)
                logits = model(ids[:, :-1]).float()
                predicted = logits.argmax(-1)
                losses = torch.nn.functional.cross_entropy(
                    logits.reshape(-1, vocab), ids[:, 1:].reshape(-1), reduction="none"
                ).view(len(group), -1)
                assistant = (weights[:, 1:] == 1.0).float()  # the probe's weights are unscaled
                loss_sum += float((losses * assistant).sum())
                loss_count += float(assistant.sum())
                hits = (predicted == ids[:, 1:]).cpu()
                for row, (_, _, values) in enumerate(group):
                    for first, end, kind in values:
                        kind = kind if kind in seen else "value"
                        seen[kind] += 1
                        correct[kind] += int(bool(hits[row, first - 1 : end - 1].all()))
        model.train()
        total_seen = sum(seen.values())
        result = {
            "step": state["step"],
            "tokens": state["tokens"],
            "copy": sum(correct.values()) / max(total_seen, 1),
            "loss": loss_sum / max(loss_count, 1),
            "by_kind": {kind: round(correct[kind] / seen[kind], 4) for kind in VALUE_KINDS if seen[kind]},
        }
        state["probes"].append(result)
        return result

    model.train()
    last_save = time.time()
    window = {"loss": 0.0, "steps": 0, "tokens": 0, "start": time.time()}
    stopped = "time budget"
    try:
        while state["seconds"] < budget_end and state["seconds"] < total:
            started = time.time()
            examples = stream.next_batch()
            width = max(len(ids) for ids, _ in examples)
            ids = torch.zeros((len(examples), width), dtype=torch.long)
            weights = torch.zeros((len(examples), width), dtype=torch.float32)
            for row, (tokens, w) in enumerate(examples):
                ids[row, : len(tokens)] = torch.from_numpy(tokens.astype("int64"))
                weights[row, : len(w)] = torch.from_numpy(w.astype("float32"))
            ids = ids.to(device, non_blocking=True)
            weights = weights.to(device, non_blocking=True)
            for group in optimizer.param_groups:
                group["lr"] = learning_rate()
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                logits = model(ids[:, :-1])
            losses = torch.nn.functional.cross_entropy(
                logits.float().reshape(-1, vocab), ids[:, 1:].reshape(-1), reduction="none"
            ).view(len(examples), -1)
            target = weights[:, 1:]
            loss = (losses * target).sum() / target.sum().clamp(min=1)
            assistant = (target >= 1.0).float()
            assistant_loss = (losses.detach() * assistant).sum() / assistant.sum().clamp(min=1)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            step_tokens = int((weights > 0).sum())
            window["loss"] += float(assistant_loss)
            state["step"] += 1
            state["tokens"] += step_tokens
            state["seconds"] += time.time() - started
            window["steps"] += 1
            window["tokens"] += step_tokens
            if state["step"] % arguments.log_every == 0:
                elapsed = time.time() - window["start"]
                average = window["loss"] / window["steps"]
                state["history"].append([state["step"], average, state["seconds"], state["tokens"]])
                print(
                    f"step {state['step']} loss {average:.4f} lr {learning_rate():.2e} "
                    f"{window['tokens'] / elapsed:,.0f} tok/s, {state['tokens'] / 1e6:.1f}M tokens, "
                    f"{state['seconds'] / 60:.1f}/{total / 60:.0f} min",
                    flush=True,
                )
                window = {"loss": 0.0, "steps": 0, "tokens": 0, "start": time.time()}
            if state["step"] % arguments.probe_every == 0:
                result = run_probe()
                print(f"probe step {result['step']}: copy {result['copy']:.3f} loss {result['loss']:.4f} "
                      f"{json.dumps(result['by_kind'])}", flush=True)
                if (arguments.min_copy > 0 and state["tokens"] >= arguments.min_copy_tokens
                        and result["copy"] < arguments.min_copy):
                    stopped = f"copy probe {result['copy']:.3f} < {arguments.min_copy} after {state['tokens']} tokens"
                    break
            if time.time() - last_save > arguments.save_every:
                save()
                last_save = time.time()
    finally:
        stream.close()
    result = run_probe()
    print(f"probe step {result['step']}: copy {result['copy']:.3f} loss {result['loss']:.4f} "
          f"{json.dumps(result['by_kind'])}", flush=True)
    state["runs"][-1]["stopped"] = stopped
    save()
    print(f"stopped ({stopped}): {state['step']} steps, {state['tokens']:,} tokens, "
          f"{state['seconds'] / 60:.1f} min", flush=True)


# ----------------------------------------------------------------------------------- export


def random_weights(numpy, config: dict, vocab: int, seed: int) -> dict:
    """Weights of `build_model`'s shapes drawn at random (numpy only): a fixture for tests that
    need the real tokenizer and chat template but not a trained model."""
    rng = numpy.random.default_rng(seed)
    dim, ffn, kv = config["dim"], config["ffn"], config["dim"] // config["heads"] * config["kv_heads"]

    def normal(*shape):
        return rng.normal(0.0, 0.02, shape).astype(numpy.float32)

    weights = {"embed.weight": normal(vocab, dim), "norm.weight": numpy.ones(dim, numpy.float32)}
    for block in range(config["layers"]):
        prefix = f"blocks.{block}"
        weights.update({
            f"{prefix}.attn_norm.weight": numpy.ones(dim, numpy.float32),
            f"{prefix}.q.weight": normal(dim, dim),
            f"{prefix}.k.weight": normal(kv, dim),
            f"{prefix}.v.weight": normal(kv, dim),
            f"{prefix}.o.weight": normal(dim, dim),
            f"{prefix}.ffn_norm.weight": numpy.ones(dim, numpy.float32),
            f"{prefix}.gate.weight": normal(ffn, dim),
            f"{prefix}.up.weight": normal(ffn, dim),
            f"{prefix}.down.weight": normal(dim, ffn),
        })
    return weights


def command_export(arguments) -> None:
    import numpy

    sys.path.insert(0, str(Path(arguments.gguf_py).resolve()))
    import gguf

    data = json.loads(Path(arguments.tokenizer).read_text())
    if arguments.random:
        config = SIZES[arguments.size]
        weights = random_weights(numpy, config, len(data["tokens"]), arguments.seed)
        name = "forge-tiny-random"
    else:
        import torch

        if not arguments.dir:
            raise SystemExit("export: --dir RUN is required without --random")
        saved = torch.load(Path(arguments.dir) / "weights.pt", map_location="cpu", weights_only=False)
        config = saved["config"]
        weights = {name: tensor.float().numpy() for name, tensor in saved["model"].items()}
        name = "forge-tiny"
    tokens, special = data["tokens"], data["special"]
    control = {text for text, is_control in forge_tok.SPECIAL_TOKENS if is_control}
    token_types = [
        (gguf.TokenType.CONTROL if token in control else gguf.TokenType.USER_DEFINED)
        if special.get(token) == index
        else gguf.TokenType.NORMAL
        for index, token in enumerate(tokens)
    ]
    template = (HERE / "chat-template.jinja").read_text()
    output = Path(arguments.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = output.with_suffix(".gguf.partial")
    writer = gguf.GGUFWriter(str(temporary), gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.LLAMA])
    writer.add_name(name)
    writer.add_vocab_size(len(tokens))
    writer.add_context_length(config["context"])
    writer.add_embedding_length(config["dim"])
    writer.add_feed_forward_length(config["ffn"])
    writer.add_block_count(config["layers"])
    writer.add_head_count(config["heads"])
    writer.add_head_count_kv(config["kv_heads"])
    writer.add_rope_dimension_count(config["dim"] // config["heads"])
    writer.add_rope_freq_base(ROPE_BASE)
    writer.add_layer_norm_rms_eps(NORM_EPS)
    q8 = getattr(arguments, "quant", "f16") == "q8_0"
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0 if q8 else gguf.LlamaFileType.MOSTLY_F16)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types(token_types)
    writer.add_token_merges([f"{left} {right}" for left, right in data["merges"]])
    writer.add_bos_token_id(special["<|endoftext|>"])
    writer.add_eos_token_id(special["<|im_end|>"])
    writer.add_pad_token_id(special["<|endoftext|>"])
    writer.add_add_bos_token(False)
    writer.add_chat_template(template)

    def add(name, array):
        """Matrices as f16, or as Q8_0 with --quant q8_0 (half the file); norms stay f32."""
        if array.ndim < 2:
            writer.add_tensor(name, array)
        elif q8:
            quantized = gguf.quants.quantize(array.astype(numpy.float32), gguf.GGMLQuantizationType.Q8_0)
            writer.add_tensor(name, quantized, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            writer.add_tensor(name, array.astype(numpy.float16))

    add("token_embd.weight", weights["embed.weight"])
    for block in range(config["layers"]):
        source_name, prefix = f"blocks.{block}", f"blk.{block}"
        writer.add_tensor(f"{prefix}.attn_norm.weight", weights[f"{source_name}.attn_norm.weight"])
        add(f"{prefix}.attn_q.weight", weights[f"{source_name}.q.weight"])
        add(f"{prefix}.attn_k.weight", weights[f"{source_name}.k.weight"])
        add(f"{prefix}.attn_v.weight", weights[f"{source_name}.v.weight"])
        add(f"{prefix}.attn_output.weight", weights[f"{source_name}.o.weight"])
        writer.add_tensor(f"{prefix}.ffn_norm.weight", weights[f"{source_name}.ffn_norm.weight"])
        add(f"{prefix}.ffn_gate.weight", weights[f"{source_name}.gate.weight"])
        add(f"{prefix}.ffn_up.weight", weights[f"{source_name}.up.weight"])
        add(f"{prefix}.ffn_down.weight", weights[f"{source_name}.down.weight"])
    writer.add_tensor("output_norm.weight", weights["norm.weight"])
    add("output.weight", weights["embed.weight"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(temporary, output)
    parameters = sum(w.size for w in weights.values())
    print(f"wrote {output} ({parameters / 1e6:.2f}M parameters, {output.stat().st_size / 1e6:.1f} MB)", flush=True)


def command_plot(arguments) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.loads((Path(arguments.dir) / "history.json").read_text())
    history, probes = data["history"], data["probes"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4), dpi=100)
    left.plot([h[3] / 1e6 for h in history], [h[1] for h in history], label="training batches")
    left.plot([p["tokens"] / 1e6 for p in probes], [p["loss"] for p in probes], "o-", label="held-out probe")
    left.set_yscale("log")
    left.set_xlabel("training tokens (millions)")
    left.set_ylabel("loss on assistant tokens (nats, log scale)")
    left.legend()
    left.grid(True, alpha=0.3)
    kinds = sorted({kind for p in probes for kind in p["by_kind"]})
    right.plot([p["tokens"] / 1e6 for p in probes], [p["copy"] for p in probes], "k-", linewidth=2, label="all values")
    for kind in kinds:
        right.plot([p["tokens"] / 1e6 for p in probes], [p["by_kind"].get(kind, float("nan")) for p in probes],
                   linewidth=1, alpha=0.7, label=kind)
    right.set_xlabel("training tokens (millions)")
    right.set_ylabel("copied values exactly right (teacher-forced)")
    right.set_ylim(0, 1)
    right.legend(fontsize=7, ncol=2)
    right.grid(True, alpha=0.3)
    figure.suptitle("forge-tiny training")
    figure.tight_layout()
    figure.savefig(arguments.output)
    print(f"wrote {arguments.output}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("tokenizer")
    p.add_argument("--out", required=True)
    p.add_argument("--conversations", type=int, default=6000)
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--seed", type=int, default=777)
    p = sub.add_parser("train")
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--size", choices=list(SIZES), default="gpu")
    p.add_argument("--device", default="cuda")
    p.add_argument("--init", help="bf16 weights.pt to start from when RUN/last.pt is absent")
    p.add_argument("--minutes", type=float, default=8.0, help="training time of this invocation")
    p.add_argument("--total-minutes", type=float, default=24.0, help="training time of the whole run (schedule)")
    p.add_argument("--decay-fraction", type=float, default=0.3, help="final share of the run with linear decay")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--batch-tokens", type=int, default=131072)
    p.add_argument("--max-len", type=int, default=0)
    p.add_argument("--short", action="store_true", help="one request per conversation (copy-dense curriculum)")
    p.add_argument("--echo", type=float, default=0.0,
                   help="share of pure-copy conversations (values listed, answered as a JSON list)")
    p.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--context-weight", type=float, default=0.1)
    p.add_argument("--value-weight", type=float, default=1.0,
                   help="loss weight of copied values in assistant turns (the rest of a turn weighs 1)")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--probe-every", type=int, default=100)
    p.add_argument("--probe-count", type=int, default=200)
    p.add_argument("--probe-max-len", type=int, default=1024, help="held-out conversations up to this length")
    p.add_argument("--min-copy", type=float, default=0.0)
    p.add_argument("--min-copy-tokens", type=int, default=3_000_000)
    p.add_argument("--save-every", type=float, default=120.0)
    p = sub.add_parser("export")
    p.add_argument("--dir", help="the run whose weights.pt to export (not with --random)")
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--gguf-py", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--random", action="store_true", help="random weights of --size instead of a run's")
    p.add_argument("--size", choices=list(SIZES), default="test")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--quant", choices=["f16", "q8_0"], default="f16", help="type of the weight matrices")
    p = sub.add_parser("plot")
    p.add_argument("--dir", required=True)
    p.add_argument("--output", required=True)
    arguments = parser.parse_args()
    {"tokenizer": command_tokenizer, "train": command_train, "export": command_export, "plot": command_plot}[
        arguments.command
    ](arguments)


if __name__ == "__main__":
    main()
