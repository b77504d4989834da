"""The transcript check: what refusing an invalid conversation costs on every request.

`check_transcript` runs on each request before its body is built; its cost is
per message. Measured on valid conversations (the case every request pays)
of 10, 100 and 1,000 messages, a quarter of them tool-using turns, for each
wire, beside encoding the same conversation (what the request pays anyway).

Usage::

    python benchmarks/transcripts.py          # full run; writes its section of RESULTS.md
    python benchmarks/transcripts.py --quick  # small run; prints the section only
"""

from time import perf_counter

from _common import load_average, machine, publish, section_parser

from agentgraph.llm import Message, ToolCall, check_transcript
from agentgraph.llm._anthropic_wire import anthropic_messages
from agentgraph.llm._gigachat_wire import gigachat_messages
from agentgraph.llm._ollama import ollama_messages
from agentgraph.llm._openai_wire import openai_messages
from agentgraph.llm._responses_request import responses_input

HEADING = "## Transcript check"
TARGET_US = 2.0
ENCODERS = {
    "openai": lambda m: openai_messages(m, provider="p"),
    "responses": lambda m: responses_input(m, provider="p"),
    "anthropic": lambda m: anthropic_messages(m, provider="p"),
    "ollama": lambda m: ollama_messages(m, provider="p"),
    "gigachat": lambda m: gigachat_messages(m, provider="p"),
}


def conversation(size: int) -> list[Message]:
    """`size` messages: a system prompt, then user turns and tool-using turns."""
    out = [Message.system("You help.")]
    turn = 0
    while len(out) < size:
        turn += 1
        out.append(Message.user(f"question {turn}"))
        if turn % 2:
            call = ToolCall(f"c{turn}", "lookup", {"q": turn})
            out.append(Message.assistant(tool_calls=(call,)))
            out.append(Message.tool(call.id, f"result {turn}", name="lookup"))
        out.append(Message.assistant(f"answer {turn}"))
    return out[:size]


def valid(size: int) -> list[Message]:
    """`conversation(size)` without a trailing call left open by the cut."""
    messages = conversation(size)
    while messages[-1].role == "assistant" and messages[-1].tool_calls:
        messages.pop()
    return messages


def per_message_us(fn, messages: list[Message], seconds: float) -> float:
    """Best-of-5 µs per message of `fn(messages)`."""
    runs = 1
    while True:
        start = perf_counter()
        for _ in range(runs):
            fn(messages)
        if perf_counter() - start > seconds / 5:
            break
        runs *= 2
    best = float("inf")
    for _ in range(5):
        start = perf_counter()
        for _ in range(runs):
            fn(messages)
        best = min(best, (perf_counter() - start) / runs)
    return best * 1e6 / len(messages)


def main() -> None:
    parser = section_parser(__doc__ or "", "a short run; prints the section only")
    args = parser.parse_args()
    load = load_average()
    seconds = 0.05 if args.quick else 0.5
    rows = []
    worst = 0.0
    for wire, encode in ENCODERS.items():
        for size in (10, 100, 1000):
            messages = valid(size)

            def check(m: list[Message], wire: str = wire) -> None:
                check_transcript(m, wire=wire, think=False)  # type: ignore[arg-type]

            checked = per_message_us(check, messages, seconds)
            encoded = per_message_us(encode, messages, seconds)
            worst = max(worst, checked)
            rows.append(
                f"| {wire} | {len(messages)} | {checked:.3f} | {encoded:.3f} | "
                f"{checked / encoded:.0%} |"
            )
    verdict = "met" if worst <= TARGET_US else "**missed**"
    section = "\n".join(
        [
            HEADING,
            "",
            "What `check_transcript` costs per message on a valid conversation (every request "
            "pays it, on by default), beside encoding the same messages for the wire. "
            "Produced by `python benchmarks/transcripts.py`; best of 5, lower is better.",
            "",
            "| Wire | Messages | Check µs/message | Encode µs/message | Check / encode |",
            "|---|--:|--:|--:|--:|",
            *rows,
            "",
            f"Target: ≤ {TARGET_US} µs per message. Worst measured: {worst:.3f} µs ({verdict}).",
            "",
            machine(load, "orjson"),
        ]
    )
    publish(section, output=args.output, quick=args.quick)


if __name__ == "__main__":
    main()
