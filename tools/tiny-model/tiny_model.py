#!/usr/bin/env python3
"""forge-tiny: byte-level BPE tokenizer, llama-architecture model, CPU training and GGUF export.

Subcommands (Debian's /usr/bin/python3 with python3-torch and python3-numpy):
    tokenizer --corpus train.jsonl --out tokenizer.json [--merges N]
    train     --corpus train.jsonl --tokenizer tokenizer.json --dir CKPT_DIR [--steps N] ...
    export    --dir CKPT_DIR --tokenizer tokenizer.json --gguf-py GGUF_PY --output model.gguf
    plot      --dir CKPT_DIR --output loss.png

The corpus is JSON lines with a "text" field: conversations rendered by llama-server's own chat
template. The loss is masked to assistant turns. Training resumes from CKPT_DIR/last.pt.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import re
import sys
import time
from pathlib import Path

# (text, is_control): `<tool_call>` and `</tool_call>` are user-defined (printed when
# detokenized, as in Qwen2.5) so they reach llama-server's tool-call parser; see
# scripts/make-test-gguf.py.
SPECIAL_TOKENS = [
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
]
SPECIAL_RE = re.compile("(" + "|".join(re.escape(text) for text, _ in SPECIAL_TOKENS) + ")")

# llama.cpp's "qwen2" pre-tokenizer regex with \p{L} -> [A-Za-z] and \p{N} -> [0-9] (the
# corpus is ASCII, so both split it identically).
PRETOKENIZE_RE = re.compile(
    r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
    r"|[^\r\nA-Za-z0-9]?[A-Za-z]+"
    r"|[0-9]"
    r"| ?[^\sA-Za-z0-9]+[\r\n]*"
    r"|\s*[\r\n]+"
    r"|\s+(?!\S)"
    r"|\s+"
)

ASSISTANT_HEADER = "<|im_start|>assistant\n"
TURN_END = "<|im_end|>"

# Model shape.
CONFIG = {
    "dim": 256,
    "layers": 5,
    "heads": 4,
    "kv_heads": 4,
    "ffn": 704,
    "context": 2048,
    "rope_base": 10000.0,
    "norm_eps": 1e-6,
}


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character table used by byte-level BPE vocabularies."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("\u00a1"), ord("\u00ac") + 1))
        + list(range(ord("\u00ae"), ord("\u00ff") + 1))
    )
    characters = printable[:]
    offset = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            characters.append(256 + offset)
            offset += 1
    return {byte: chr(character) for byte, character in zip(printable, characters)}


BYTE_ENCODER = bytes_to_unicode()


def read_corpus(path: Path) -> list[str]:
    with path.open() as handle:
        return [json.loads(line)["text"] for line in handle if line.strip()]


def pieces_of(text: str) -> list[str]:
    return PRETOKENIZE_RE.findall(text)


# ---------------------------------------------------------------------------------- tokenizer


def learn_merges(texts: list[str], merge_count: int) -> list[tuple[str, str]]:
    """Byte-level BPE merges, most frequent pair first (ties broken by text), incrementally."""
    counter: collections.Counter[str] = collections.Counter()
    for text in texts:
        for part in SPECIAL_RE.split(text):
            if part and not SPECIAL_RE.fullmatch(part):
                counter.update(pieces_of(part))
    words = [[BYTE_ENCODER[b] for b in piece.encode("utf-8")] for piece in counter]
    counts = list(counter.values())
    pair_counts: collections.Counter[tuple[str, str]] = collections.Counter()
    where: dict[tuple[str, str], set[int]] = collections.defaultdict(set)
    for index, word in enumerate(words):
        for pair in zip(word, word[1:]):
            pair_counts[pair] += counts[index]
            where[pair].add(index)
    merges: list[tuple[str, str]] = []
    while len(merges) < merge_count and pair_counts:
        best, best_count = min(pair_counts.items(), key=lambda item: (-item[1], item[0]))
        if best_count < 2:
            break
        merges.append(best)
        merged = best[0] + best[1]
        for index in list(where.get(best, ())):
            word = words[index]
            for pair in zip(word, word[1:]):
                pair_counts[pair] -= counts[index]
                if pair_counts[pair] <= 0:
                    del pair_counts[pair]
            symbols: list[str] = []
            position = 0
            while position < len(word):
                if position + 1 < len(word) and word[position] == best[0] and word[position + 1] == best[1]:
                    symbols.append(merged)
                    position += 2
                else:
                    symbols.append(word[position])
                    position += 1
            words[index] = symbols
            for pair in zip(symbols, symbols[1:]):
                pair_counts[pair] += counts[index]
                where[pair].add(index)
        pair_counts.pop(best, None)
        where.pop(best, None)
    return merges


class Tokenizer:
    def __init__(self, tokens: list[str], merges: list[tuple[str, str]], special: dict[str, int]):
        self.tokens = tokens
        self.merges = merges
        self.special = special
        self.ids = {token: index for index, token in enumerate(tokens) if token not in special}
        self.ranks = {pair: rank for rank, pair in enumerate(merges)}
        self.cache: dict[str, list[int]] = {}

    @staticmethod
    def load(path: Path) -> "Tokenizer":
        data = json.loads(path.read_text())
        return Tokenizer(data["tokens"], [tuple(m) for m in data["merges"]], data["special"])

    def bpe(self, piece: str) -> list[int]:
        cached = self.cache.get(piece)
        if cached is not None:
            return cached
        word = [BYTE_ENCODER[b] for b in piece.encode("utf-8")]
        while len(word) > 1:
            ranked = [(self.ranks.get(pair, 1 << 30), i) for i, pair in enumerate(zip(word, word[1:]))]
            rank, i = min(ranked)
            if rank == 1 << 30:
                break
            word = word[:i] + [word[i] + word[i + 1]] + word[i + 2 :]
        result = [self.ids[symbol] for symbol in word]
        self.cache[piece] = result
        return result

    def encode(self, text: str) -> list[int]:
        out: list[int] = []
        for part in SPECIAL_RE.split(text):
            if not part:
                continue
            if part in self.special:
                out.append(self.special[part])
            else:
                for piece in pieces_of(part):
                    out.extend(self.bpe(piece))
        return out

    def encode_masked(self, text: str) -> tuple[list[int], list[int]]:
        """Token ids and a 0/1 mask that is 1 on assistant turns (content through <|im_end|>)."""
        ids: list[int] = []
        mask: list[int] = []
        position = 0
        while True:
            start = text.find(ASSISTANT_HEADER, position)
            if start < 0:
                tail = self.encode(text[position:])
                ids += tail
                mask += [0] * len(tail)
                return ids, mask
            head = self.encode(text[position : start + len(ASSISTANT_HEADER)])
            end = text.find(TURN_END, start) + len(TURN_END)
            body = self.encode(text[start + len(ASSISTANT_HEADER) : end])
            ids += head + body
            mask += [0] * len(head) + [1] * len(body)
            position = end


def command_tokenizer(arguments: argparse.Namespace) -> None:
    texts = read_corpus(arguments.corpus)[: arguments.sample]
    started = time.time()
    merges = learn_merges(texts, arguments.merges)
    tokens = [BYTE_ENCODER[b] for b in range(256)]
    known = set(tokens)
    kept: list[tuple[str, str]] = []
    for left, right in merges:
        if left + right not in known:
            known.add(left + right)
            tokens.append(left + right)
        kept.append((left, right))
    special = {}
    for text, _ in SPECIAL_TOKENS:
        special[text] = len(tokens)
        tokens.append(text)
    arguments.out.write_text(json.dumps({"tokens": tokens, "merges": kept, "special": special}))
    tokenizer = Tokenizer(tokens, kept, special)
    sample = texts[0]
    print(
        f"tokenizer: {len(tokens)} tokens, {len(kept)} merges in {time.time() - started:.0f}s; "
        f"{len(sample)} chars -> {len(tokenizer.encode(sample))} tokens",
        flush=True,
    )


# -------------------------------------------------------------------------------------- model


def build_model(torch, vocab: int):
    nn = torch.nn
    F = torch.nn.functional
    c = CONFIG
    head_dim = c["dim"] // c["heads"]

    class RMSNorm(nn.Module):
        def __init__(self, dim: int):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + c["norm_eps"]) * self.weight

    def rope_tables(length: int):
        # llama.cpp's LLAMA rope ("normal"): rotate adjacent pairs (x[2i], x[2i+1]).
        inv = 1.0 / (c["rope_base"] ** (torch.arange(0, head_dim, 2).float() / head_dim))
        angles = torch.outer(torch.arange(length).float(), inv)
        return angles.cos(), angles.sin()

    def apply_rope(x, cos, sin):
        # x: (batch, heads, time, head_dim)
        pairs = x.reshape(*x.shape[:-1], head_dim // 2, 2)
        a, b = pairs[..., 0], pairs[..., 1]
        out = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1)
        return out.reshape(x.shape)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            d = c["dim"]
            self.attn_norm = RMSNorm(d)
            self.q = nn.Linear(d, d, bias=False)
            self.k = nn.Linear(d, head_dim * c["kv_heads"], bias=False)
            self.v = nn.Linear(d, head_dim * c["kv_heads"], bias=False)
            self.o = nn.Linear(d, d, bias=False)
            self.ffn_norm = RMSNorm(d)
            self.gate = nn.Linear(d, c["ffn"], bias=False)
            self.up = nn.Linear(d, c["ffn"], bias=False)
            self.down = nn.Linear(c["ffn"], d, bias=False)

        def forward(self, x, cos, sin, mask):
            B, T, _ = x.shape
            h = self.attn_norm(x)
            q = self.q(h).view(B, T, c["heads"], head_dim).transpose(1, 2)
            k = self.k(h).view(B, T, c["kv_heads"], head_dim).transpose(1, 2)
            v = self.v(h).view(B, T, c["kv_heads"], head_dim).transpose(1, 2)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(head_dim) + mask
            attn = scores.softmax(-1) @ v
            x = x + self.o(attn.transpose(1, 2).reshape(B, T, -1))
            h = self.ffn_norm(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, c["dim"])
            self.blocks = nn.ModuleList([Block() for _ in range(c["layers"])])
            self.norm = RMSNorm(c["dim"])
            nn.init.normal_(self.embed.weight, std=0.02)
            for block in self.blocks:
                for linear in (block.q, block.k, block.v, block.gate, block.up):
                    nn.init.normal_(linear.weight, std=0.02)
                for linear in (block.o, block.down):
                    nn.init.normal_(linear.weight, std=0.02 / math.sqrt(2 * c["layers"]))

        def forward(self, ids):
            T = ids.shape[1]
            cos, sin = rope_tables(T)
            mask = torch.full((T, T), float("-inf")).triu(1)
            x = self.embed(ids)
            for block in self.blocks:
                x = block(x, cos, sin, mask)
            return self.norm(x) @ self.embed.weight.t()  # tied output head

    return Model()


def load_examples(arguments, tokenizer: Tokenizer):
    """Tokenized corpus, cached in the run folder under the corpus file's hash (a new corpus is re-tokenized)."""
    import hashlib

    digest = hashlib.sha256(arguments.corpus.read_bytes()).hexdigest()
    cache = arguments.dir / "examples.json"
    if cache.exists():
        cached = json.loads(cache.read_text())
        if isinstance(cached, dict) and cached.get("corpus") == digest:
            return cached["examples"]
        print("corpus changed since the cached tokenization: tokenizing it again", flush=True)
    examples = []
    for text in read_corpus(arguments.corpus):
        ids, mask = tokenizer.encode_masked(text)
        if len(ids) <= arguments.max_len:
            examples.append([ids, mask])
    cache.write_text(json.dumps({"corpus": digest, "examples": examples}))
    return examples


def command_train(arguments: argparse.Namespace) -> None:
    import torch

    torch.set_num_threads(arguments.threads)
    arguments.dir.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer.load(arguments.tokenizer)
    vocab = len(tokenizer.tokens)
    examples = load_examples(arguments, tokenizer)
    lengths = [len(ids) for ids, _ in examples]
    print(
        f"data: {len(examples)} conversations, mean {sum(lengths) / len(lengths):.0f} tokens, "
        f"max {max(lengths)}; {sum(sum(m) for _, m in examples)} assistant tokens",
        flush=True,
    )

    torch.manual_seed(1234)
    model = build_model(torch, vocab)
    parameters = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=arguments.lr, betas=(0.9, 0.95), weight_decay=0.05)
    state = {"step": 0, "tokens": 0, "seconds": 0.0, "history": []}
    checkpoint = arguments.dir / "last.pt"
    if checkpoint.exists():
        saved = torch.load(checkpoint)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        state = saved["state"]
        print(f"resumed at step {state['step']} ({state['seconds'] / 60:.1f} min trained)", flush=True)
    print(f"model: {parameters / 1e6:.2f}M parameters, {CONFIG}", flush=True)

    def save() -> None:
        temporary = arguments.dir / "last.pt.partial"
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "state": state,
                    "config": CONFIG, "vocab": vocab}, temporary)
        os.replace(temporary, checkpoint)
        (arguments.dir / "history.json").write_text(json.dumps(state["history"]))

    # Batches of similar length (few pad tokens), in an order fixed by the epoch number, so a
    # resumed run sees the same batches it would have seen.
    order = sorted(range(len(examples)), key=lambda i: lengths[i])
    batches = []
    current: list[int] = []
    for index in order:
        if current and (len(current) + 1) * lengths[index] > arguments.batch_tokens:
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)

    def batch_at(step: int) -> list[int]:
        epoch, offset = divmod(step, len(batches))
        generator = torch.Generator().manual_seed(epoch)
        permutation = torch.randperm(len(batches), generator=generator).tolist()
        return batches[permutation[offset]]

    budget = arguments.minutes * 60.0

    def progress() -> float:
        """Fraction of the run done: of the steps, or of the training-time budget when that is shorter."""
        by_steps = state["step"] / arguments.steps
        return min(1.0, max(by_steps, state["seconds"] / budget) if budget > 0 else by_steps)

    def learning_rate(step: int) -> float:
        if step < arguments.warmup:
            return arguments.lr * (step + 1) / arguments.warmup
        return arguments.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress())))

    model.train()
    last_save = time.time()
    window_loss, window_tokens, window_steps, window_start = 0.0, 0, 0, time.time()
    while progress() < 1.0:
        step = state["step"]
        started = time.time()
        chosen = batch_at(step)
        width = max(lengths[i] for i in chosen)
        ids = torch.zeros((len(chosen), width), dtype=torch.long)
        mask = torch.zeros((len(chosen), width), dtype=torch.float32)
        assistant = torch.zeros((len(chosen), width), dtype=torch.float32)
        for row, index in enumerate(chosen):
            tokens, weights = examples[index]
            ids[row, : len(tokens)] = torch.tensor(tokens)
            # Assistant tokens weigh 1; the rest of the conversation (prompts, tool results, which
            # repeat ids and names from earlier turns) weighs --context-weight, so the model also
            # learns to copy from context where the assistant turns alone give too little signal.
            flags = torch.tensor(weights, dtype=torch.float32)
            mask[row, : len(weights)] = flags + (1.0 - flags) * arguments.context_weight
            assistant[row, : len(weights)] = flags
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step)
        logits = model(ids[:, :-1])
        losses = torch.nn.functional.cross_entropy(
            logits.reshape(-1, vocab), ids[:, 1:].reshape(-1), reduction="none"
        ).view(len(chosen), -1)
        target_mask = mask[:, 1:]
        loss = (losses * target_mask).sum() / target_mask.sum().clamp(min=1)
        assistant_mask = assistant[:, 1:]
        assistant_loss = (losses.detach() * assistant_mask).sum() / assistant_mask.sum().clamp(min=1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        state["step"] += 1
        state["tokens"] += int(ids.numel())
        state["seconds"] += time.time() - started
        window_loss += assistant_loss.item()
        window_tokens += int(ids.numel())
        window_steps += 1
        if state["step"] % arguments.log_every == 0:
            elapsed = time.time() - window_start
            average = window_loss / window_steps
            state["history"].append([state["step"], average, state["seconds"]])
            remaining = state["seconds"] * (1 - progress()) / max(progress(), 1e-9)
            print(
                f"step {state['step']} ({100 * progress():.0f}%) loss {average:.4f} lr {learning_rate(step):.2e} "
                f"{window_tokens / elapsed:.0f} tok/s, {state['seconds'] / 60:.1f} min, ~{remaining / 60:.0f} min left",
                flush=True,
            )
            window_loss, window_tokens, window_steps, window_start = 0.0, 0, 0, time.time()
        if time.time() - last_save > arguments.save_every:
            save()
            last_save = time.time()
    save()
    print(f"done: {state['step']} steps, {state['tokens']} tokens, {state['seconds'] / 60:.1f} min", flush=True)


# ------------------------------------------------------------------------------------- export


def command_export(arguments: argparse.Namespace) -> None:
    import numpy
    import torch

    sys.path.insert(0, str(arguments.gguf_py.resolve()))
    import gguf

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    saved = torch.load(arguments.dir / "last.pt")
    config = saved["config"]
    weights = {name: tensor.float().numpy() for name, tensor in saved["model"].items()}
    data = json.loads(arguments.tokenizer.read_text())
    tokens = data["tokens"]
    special = data["special"]
    control = {text for text, is_control in SPECIAL_TOKENS if is_control}
    token_types = [
        (gguf.TokenType.CONTROL if token in control else gguf.TokenType.USER_DEFINED)
        if special.get(token) == index
        else gguf.TokenType.NORMAL
        for index, token in enumerate(tokens)
    ]
    template = (Path(__file__).parent / "chat-template.jinja").read_text()

    output = arguments.output
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = output.with_suffix(".gguf.partial")
    writer = gguf.GGUFWriter(str(temporary), gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.LLAMA])
    writer.add_name("forge-tiny")
    writer.add_vocab_size(len(tokens))
    writer.add_context_length(config["context"])
    writer.add_embedding_length(config["dim"])
    writer.add_feed_forward_length(config["ffn"])
    writer.add_block_count(config["layers"])
    writer.add_head_count(config["heads"])
    writer.add_head_count_kv(config["kv_heads"])
    writer.add_rope_dimension_count(config["dim"] // config["heads"])
    writer.add_rope_freq_base(config["rope_base"])
    writer.add_layer_norm_rms_eps(config["norm_eps"])
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
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

    def f16(array):
        return array.astype(numpy.float16)

    writer.add_tensor("token_embd.weight", f16(weights["embed.weight"]))
    for block in range(config["layers"]):
        source, prefix = f"blocks.{block}", f"blk.{block}"
        writer.add_tensor(f"{prefix}.attn_norm.weight", weights[f"{source}.attn_norm.weight"])
        writer.add_tensor(f"{prefix}.attn_q.weight", f16(weights[f"{source}.q.weight"]))
        writer.add_tensor(f"{prefix}.attn_k.weight", f16(weights[f"{source}.k.weight"]))
        writer.add_tensor(f"{prefix}.attn_v.weight", f16(weights[f"{source}.v.weight"]))
        writer.add_tensor(f"{prefix}.attn_output.weight", f16(weights[f"{source}.o.weight"]))
        writer.add_tensor(f"{prefix}.ffn_norm.weight", weights[f"{source}.ffn_norm.weight"])
        writer.add_tensor(f"{prefix}.ffn_gate.weight", f16(weights[f"{source}.gate.weight"]))
        writer.add_tensor(f"{prefix}.ffn_up.weight", f16(weights[f"{source}.up.weight"]))
        writer.add_tensor(f"{prefix}.ffn_down.weight", f16(weights[f"{source}.down.weight"]))
    writer.add_tensor("output_norm.weight", weights["norm.weight"])
    writer.add_tensor("output.weight", f16(weights["embed.weight"]))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(temporary, output)
    parameters = sum(w.size for name, w in weights.items())
    print(f"wrote {output} ({parameters / 1e6:.2f}M parameters, {output.stat().st_size / 1e6:.1f} MB)", flush=True)


def command_plot(arguments: argparse.Namespace) -> None:
    history = json.loads((arguments.dir / "history.json").read_text())
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [h[0] for h in history]
    losses = [h[1] for h in history]
    figure, axis = plt.subplots(figsize=(7, 4), dpi=100)
    axis.plot(steps, losses)
    axis.set_yscale("log")
    axis.set_xlabel("step")
    axis.set_ylabel("loss on assistant tokens (log scale)")
    axis.set_title("forge-tiny training loss")
    axis.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(arguments.output)
    print(f"wrote {arguments.output}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("tokenizer")
    p.add_argument("--corpus", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--merges", type=int, default=2800)
    p.add_argument("--sample", type=int, default=3000)
    p = sub.add_parser("train")
    p.add_argument("--corpus", type=Path, required=True)
    p.add_argument("--tokenizer", type=Path, required=True)
    p.add_argument("--dir", type=Path, required=True)
    p.add_argument("--steps", type=int, default=3000, help="stop after this many steps ...")
    p.add_argument("--minutes", type=float, default=60.0, help="... or this much training time (0: no limit)")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--batch-tokens", type=int, default=1024)
    p.add_argument("--max-len", type=int, default=1024)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--context-weight", type=float, default=0.3,
                   help="loss weight of non-assistant tokens (assistant tokens weigh 1)")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--save-every", type=float, default=120.0, help="seconds between checkpoints")
    p = sub.add_parser("export")
    p.add_argument("--dir", type=Path, required=True)
    p.add_argument("--tokenizer", type=Path, required=True)
    p.add_argument("--gguf-py", type=Path, required=True)
    p.add_argument("--output", type=Path, required=True)
    p = sub.add_parser("plot")
    p.add_argument("--dir", type=Path, required=True)
    p.add_argument("--output", type=Path, required=True)
    arguments = parser.parse_args()
    {"tokenizer": command_tokenizer, "train": command_train, "export": command_export, "plot": command_plot}[
        arguments.command
    ](arguments)


if __name__ == "__main__":
    main()
