"""BFCL's own code, driven from the eval harness in a separate Python process.

The project never imports bfcl-eval into its own (Node) process: `npm run eval -- bfcl` runs this
file in the venv `npm run setup:bfcl` made under `.cache/bfcl/venv`, with the unpacked wheel on
`sys.path`. Everything that decides what a case asks and whether an answer passes is BFCL's own
function, called as BFCL's `bfcl generate` / `bfcl evaluate` call it for an OpenAI-style
function-calling model:

- prepare: `load_dataset_entry` and `load_ground_truth_entry` (BFCL's data loaders, with its
  language hints), then `convert_to_tool(…, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)`,
  exactly the tools BFCL's OpenAI FC handler sends;
- score: `eval_runner._evaluate_single_ast_entry` / `_evaluate_single_relevance_entry` with the FC
  handler's `decode_ast` (below, the same lines as `OpenAICompletionsHandler.decode_ast`), and for
  multi-turn rows `eval_runner._evaluate_single_multi_turn_entry` (which runs `multi_turn_checker`
  on BFCL's simulated APIs) with the FC handler's `decode_execute`, as `bfcl evaluate` calls it;
- serve: the simulated APIs of a multi-turn case while a target answers it, one JSON request per
  line on stdin and one reply per line on stdout. Each step's answer is decoded and executed as
  `BaseHandler.inference_multi_turn_FC` does it: `decode_execute`, `is_empty_execute_response`,
  then `execute_multi_turn_func_call` on the instances the case's `initial_config` made.

BFCL keeps a case's API instances in `multi_turn_utils`' module globals, named by model and case
id, for the life of the process. `bfcl generate` and `bfcl evaluate` meet each case once per
process; here one process answers or scores the same case for several targets, so the instances
a case made are dropped when it ends (`_forget_instances`), and the next target starts from the
case's `initial_config` as BFCL's own run would.

The one thing replaced is `bfcl_eval.constants.model_config`, which imports every vendor SDK BFCL
supports: a stand-in registers the harness's model name with `underscore_to_dot = True`, the
setting of every OpenAI-style FC model (tool names cannot hold a dot, so `math.hypot` is sent as
`math_hypot` and the checker compares it so).

Usage: python bridge.py --bfcl-root DIR prepare --categories a,b --out cases.jsonl
       python bridge.py --bfcl-root DIR score --in outputs.jsonl --out scores.jsonl
       python bridge.py --bfcl-root DIR serve   (requests on stdin, replies on stdout)
"""

import argparse
import json
import sys
import types
from dataclasses import dataclass

MODEL_NAME = "forge-bfcl"
# `BaseHandler.model_name_underline_replaced`: the name the FC handler's multi-turn loop uses.
MODEL_NAME_UNDERLINE_REPLACED = MODEL_NAME.replace("/", "_").replace("-", "_").replace(".", "_")


@dataclass
class _ModelConfig:
    underscore_to_dot: bool = True
    is_fc_model: bool = True


def _load_bfcl(root: str):
    sys.path.insert(0, root)
    stand_in = types.ModuleType("bfcl_eval.constants.model_config")
    stand_in.MODEL_CONFIG_MAPPING = {MODEL_NAME: _ModelConfig()}
    sys.modules["bfcl_eval.constants.model_config"] = stand_in


class _FcHandler:
    """The part of BFCL's OpenAI FC handler the checkers call."""

    is_fc_model = True

    def decode_ast(self, result, language, has_tool_call_tag):
        # OpenAICompletionsHandler.decode_ast, FC branch.
        decoded_output = []
        for invoked_function in result:
            name = list(invoked_function.keys())[0]
            params = json.loads(invoked_function[name])
            decoded_output.append({name: params})
        return decoded_output

    def decode_execute(self, result, has_tool_call_tag):
        from bfcl_eval.model_handler.utils import convert_to_function_call

        return convert_to_function_call(result)


def prepare(categories: list[str], out: str) -> None:
    from bfcl_eval.constants.enums import ModelStyle
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    from bfcl_eval.model_handler.utils import convert_to_tool
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

    with open(out, "w", encoding="utf-8") as file:
        for category in categories:
            entries = load_dataset_entry(category)
            relevance = "irrelevance" in category or "relevance" in category
            answers = {} if relevance else {entry["id"]: entry["ground_truth"] for entry in load_ground_truth_entry(category)}
            for entry in entries:
                tools = convert_to_tool(entry["function"], GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)
                record = {
                    "id": entry["id"],
                    "category": category,
                    "turns": entry["question"],
                    # Already `{"type": "function", "function": {…}}` for the OpenAI completions style.
                    "tools": tools,
                    "function": entry["function"],
                    "possible_answer": answers.get(entry["id"]),
                }
                if "multi_turn" in category:
                    if entry.get("missed_function"):
                        raise ValueError(f"{entry['id']}: held-out functions (miss_func) are not supported")
                    # What `execute_multi_turn_func_call` builds the simulated APIs from.
                    record["initial_config"] = entry.get("initial_config", {})
                    record["involved_classes"] = entry["involved_classes"]
                file.write(json.dumps(record) + "\n")


def score(source: str, out: str) -> None:
    from bfcl_eval.constants.enums import Language, ReturnFormat
    from bfcl_eval.eval_checker import eval_runner

    handler = _FcHandler()
    baseline = frozenset(_module_globals())
    with open(source, encoding="utf-8") as rows, open(out, "w", encoding="utf-8") as file:
        for line in rows:
            if not line.strip():
                continue
            row = json.loads(line)
            category = row["category"]
            if "multi_turn" in category:
                file.write(json.dumps(_score_multi_turn(handler, row, baseline), default=str) + "\n")
                continue
            # The FC handler's result: a list of {name: arguments-json} when the model called, else its text.
            result = row["calls"] if row["calls"] else row.get("text", "")
            prompt = {"id": row["id"], "function": row["function"]}
            if "relevance" in category:
                verdict = eval_runner._evaluate_single_relevance_entry(
                    handler, row["id"], result, prompt, MODEL_NAME, category
                )
            else:
                verdict = eval_runner._evaluate_single_ast_entry(
                    handler,
                    row["id"],
                    result,
                    row["possible_answer"],
                    prompt,
                    MODEL_NAME,
                    category,
                    Language.PYTHON,
                    ReturnFormat.PYTHON,
                )
            file.write(
                json.dumps(
                    {
                        "key": row["key"],
                        "valid": bool(verdict["valid"]),
                        "error_type": verdict.get("error_type"),
                        "error": verdict.get("error"),
                    },
                    default=str,
                )
                + "\n"
            )


def _score_multi_turn(handler: _FcHandler, row: dict, baseline: frozenset[str]) -> dict:
    from bfcl_eval.eval_checker import eval_runner

    # `result`: per turn, per step, what the FC handler records (`model_responses`): the calls as
    # `{name: arguments-json}` when the model called, else its text.
    prompt = {"id": row["id"], "initial_config": row["initial_config"], "involved_classes": row["involved_classes"]}
    try:
        verdict = eval_runner._evaluate_single_multi_turn_entry(
            handler, row["id"], row["result"], row["possible_answer"], prompt, MODEL_NAME, row["category"]
        )
    finally:
        _forget_instances(baseline)
    # A failed multi-turn verdict carries the checker's answer under `error` (its error type
    # inside); its execution details are left out, they repeat the row.
    error = verdict.get("error") or {}
    return {
        "key": row["key"],
        "valid": bool(verdict["valid"]),
        "error_type": error.get("error_type"),
        "error": error.get("error_message"),
    }


def _module_globals() -> dict:
    """The globals `execute_multi_turn_func_call` keeps a case's API instances in."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    return vars(multi_turn_utils)


def _forget_instances(baseline: frozenset[str]) -> None:
    """Drop the simulated API instances made since `baseline` (the module's names before any case)."""
    names = _module_globals()
    for name in [name for name in names if name not in baseline]:
        del names[name]


def serve() -> None:
    """Answer requests, one JSON object per line, until stdin closes.

    `{"op": "begin", "id", "initial_config", "involved_classes"}` makes the case's API instances;
    `{"op": "step", "id", "responses"}` decodes and executes one step's answer (`responses`: the
    calls as `[{name: arguments-json}]`, or the text) and replies `status` `executed` with the
    `results` the FC handler feeds back, `empty` (no call: the turn ends) or `undecodable` (the
    turn ends); `{"op": "end", "id"}` drops the instances. A failed request replies
    `{"ok": false, "error"}`.
    """
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
        execute_multi_turn_func_call,
        is_empty_execute_response,
    )

    # BFCL's code may print; only replies go to the real stdout.
    replies = sys.stdout
    sys.stdout = sys.stderr
    baseline = frozenset(_module_globals())
    handler = _FcHandler()
    cases: dict[str, dict] = {}

    def execute(case: dict, calls: list[str]) -> list[str]:
        category = case["id"].rsplit("_", 1)[0]
        results, _ = execute_multi_turn_func_call(
            calls,
            case["initial_config"],
            case["involved_classes"],
            MODEL_NAME_UNDERLINE_REPLACED,
            case["id"],
            long_context=("long_context" in category or "composite" in category),
            is_evaL_run=False,
        )
        return results

    def answer(request: dict) -> dict:
        op = request["op"]
        if op == "begin":
            _forget_instances(baseline)
            case = {key: request[key] for key in ("id", "initial_config", "involved_classes")}
            cases[case["id"]] = case
            # As the FC handler: no call, only the instances.
            execute(case, [])
            return {"ok": True}
        case = cases.get(request["id"])
        if case is None:
            return {"ok": False, "error": f"case {request['id']} was not begun: send begin first"}
        if op == "end":
            del cases[case["id"]]
            _forget_instances(baseline)
            return {"ok": True}
        if op != "step":
            return {"ok": False, "error": f"unknown op {op}: use begin, step or end"}
        try:
            decoded = handler.decode_execute(request["responses"], has_tool_call_tag=False)
        except Exception as error:
            return {"ok": True, "status": "undecodable", "error": str(error)}
        if is_empty_execute_response(decoded):
            return {"ok": True, "status": "empty", "decoded": decoded}
        return {"ok": True, "status": "executed", "decoded": decoded, "results": execute(case, decoded)}

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = answer(json.loads(line))
        except Exception as error:
            reply = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        replies.write(json.dumps(reply, default=str) + "\n")
        replies.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bfcl-root", required=True)
    commands = parser.add_subparsers(dest="command", required=True)
    prepare_command = commands.add_parser("prepare")
    prepare_command.add_argument("--categories", required=True)
    prepare_command.add_argument("--out", required=True)
    score_command = commands.add_parser("score")
    score_command.add_argument("--in", dest="source", required=True)
    score_command.add_argument("--out", required=True)
    commands.add_parser("serve")
    args = parser.parse_args()
    _load_bfcl(args.bfcl_root)
    if args.command == "prepare":
        prepare([category for category in args.categories.split(",") if category], args.out)
    elif args.command == "serve":
        serve()
    else:
        score(args.source, args.out)


if __name__ == "__main__":
    main()
